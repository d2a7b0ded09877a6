// The extension module mdsd_fast._core, and the same sources built for AVX2 as
// mdsd_fast._core_avx2 (CMakeLists.txt: MDSD_MODULE names it). Each area registers its own
// functions.
#include <pybind11/pybind11.h>

#include "mdsd/lanes.hpp"
#include "mdsd/limits.hpp"
#include "mdsd/parallel.hpp"

namespace py = pybind11;

void register_dual(py::module_& m);
void register_lp(py::module_& m);
void register_verifiers(py::module_& m);
void register_testing(py::module_& m);
void register_engines(py::module_& m);
void register_validate(py::module_& m);
void register_trees(py::module_& m);
void register_direct(py::module_& m);
void register_bounds(py::module_& m);

namespace {

// Python's main thread: the only thread in which signal handlers run (PyErr_CheckSignals is a
// no-op elsewhere), hence the only one that polls.
unsigned long g_main_thread = 0;

// The interrupt hook of the C++ loops (mdsd::poll_interrupt): in the main thread, take the GIL,
// run the pending signal handlers, and throw the exception one raised (KeyboardInterrupt).
void check_signals() {
    if (PyThread_get_thread_ident() != g_main_thread) return;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

}  // namespace

#define MDSD_STR_(x) #x
#define MDSD_STR(x) MDSD_STR_(x)

#ifndef MDSD_MODULE
#define MDSD_MODULE _core
#endif

PYBIND11_MODULE(MDSD_MODULE, m) {
    m.doc() = "mdsd_fast C++ core: dual kernels, draft-set enumeration, flow LP assembly.";
#ifdef MDSD_AVX2
    m.attr("ISA") = "avx2";
#else
    m.attr("ISA") = "baseline";
#endif
#ifdef MDSD_VERSION_INFO
    m.attr("__version__") = MDSD_STR(MDSD_VERSION_INFO);
#endif
    g_main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
    mdsd::set_interrupt_hook(&check_signals);
    register_dual(m);
    register_lp(m);
    register_verifiers(m);
    register_testing(m);
    register_engines(m);
    register_validate(m);
    register_trees(m);
    register_direct(m);
    register_bounds(m);
    m.def(
        "limits",
        [] {
            py::dict d;
            for (const auto& e : mdsd::limits::kTable) d[e.name] = py::make_tuple(e.value, e.what);
            return d;
        },
        "The package's limits (cpp/include/mdsd/limits.hpp): name -> (value, what it limits).");
}
