// The extension module mdsd_fast._core, and the same sources built for AVX2 as
// mdsd_fast._core_avx2 (CMakeLists.txt: MDSD_MODULE names it). One submodule per concept, the
// same names as the Python subpackages, each registered by its own source (inputs.cpp, bound.cpp,
// ...); limits(), ISA and __version__ stay at the top.
#include <pybind11/pybind11.h>

#include "mdsd/core/lanes.hpp"
#include "mdsd/core/limits.hpp"
#include "mdsd/core/parallel.hpp"

namespace py = pybind11;

void register_inputs(py::module_& m);
void register_bound(py::module_& m);
void register_verifiers(py::module_& m);
void register_engines(py::module_& m);
void register_intervals(py::module_& m);
void register_trees(py::module_& m);
void register_testing(py::module_& m);

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
    m.doc() = "mdsd_fast C++ core: one submodule per concept (inputs, bound, verifiers, engines, intervals, trees).";
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
    py::module_ inputs = m.def_submodule("inputs", "The input rules: validation and the row sums.");
    register_inputs(inputs);
    py::module_ bound = m.def_submodule("bound", "alpha* by the dual kernels, the flow LP and the native max-flow.");
    register_bound(bound);
    py::module_ verifiers = m.def_submodule(
        "verifiers", "The verifier registry, VerifierBatch and the plan-free route (one tuple per row, no plan).");
    register_verifiers(verifiers);
    py::module_ engines = m.def_submodule("engines", "vLLM's and SGLang's contracts (reference kernels).");
    register_engines(engines);
    py::module_ intervals =
        m.def_submodule("intervals", "acceptance_bounds' without-replacement ends on truncated logs.");
    register_intervals(intervals);
    py::module_ trees = m.def_submodule("trees", "Exact values of drafted trees.");
    register_trees(trees);
    py::module_ testing = m.def_submodule("_testing", "Hooks into the C++ kernels for the tests (not a public API).");
    register_testing(testing);
    m.def(
        "limits",
        [] {
            py::dict d;
            for (const auto& e : mdsd::limits::kTable) d[e.name] = py::make_tuple(e.value, e.what);
            return d;
        },
        "The package's limits (cpp/include/mdsd/core/limits.hpp): name -> (value, what it limits).");
}
