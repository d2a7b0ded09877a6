// Linked into the AVX2 variants of the C++ tests (cpp/tests/CMakeLists.txt) and compiled without
// -mavx2: on a CPU (or OS) that cannot run AVX2 code, exit with 77 (ctest: skipped) before main().
#include <cstdio>
#include <cstdlib>

namespace {

struct Avx2Guard {
    Avx2Guard() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
        __builtin_cpu_init();
        if (!__builtin_cpu_supports("avx2")) {
            std::fputs("this CPU does not run AVX2 code: skipped\n", stderr);
            std::exit(77);
        }
#endif
    }
};
// init_priority: before the test's own static objects (101 is the earliest a program may use).
__attribute__((init_priority(101))) const Avx2Guard kGuard;

}  // namespace
