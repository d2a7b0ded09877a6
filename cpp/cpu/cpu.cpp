// mdsd_fast._cpu: whether this CPU (and its operating system) can run the AVX2 build of the core,
// mdsd_fast._core_avx2. Asked by python/mdsd_fast/_isa.py before either build is imported: the
// two builds register the same C++ types with pybind11, so only one of them may be loaded.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace {

PyObject* has_avx2(PyObject*, PyObject*) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    // libgcc / compiler-rt check CPUID and that the OS saves the YMM registers (XGETBV).
    __builtin_cpu_init();
    return PyBool_FromLong(__builtin_cpu_supports("avx2") ? 1 : 0);
#else
    Py_RETURN_FALSE;
#endif
}

PyMethodDef kMethods[] = {
    {"has_avx2", has_avx2, METH_NOARGS, "Whether this CPU and OS run AVX2 code."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT,
                       "_cpu",
                       "What the CPU can run (mdsd_fast._isa).",
                       -1,
                       kMethods,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__cpu() { return PyModule_Create(&kModule); }
