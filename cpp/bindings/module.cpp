// The one extension module, mdsd_fast._core. Each area registers its own functions.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void register_dual(py::module_& m);
void register_lp(py::module_& m);
void register_verifiers(py::module_& m);

#define MDSD_STR_(x) #x
#define MDSD_STR(x) MDSD_STR_(x)

PYBIND11_MODULE(_core, m) {
    m.doc() = "mdsd_fast C++ core: dual kernels, draft-set enumeration, flow LP assembly.";
#ifdef MDSD_VERSION_INFO
    m.attr("__version__") = MDSD_STR(MDSD_VERSION_INFO);
#endif
    register_dual(m);
    register_lp(m);
    register_verifiers(m);
}
