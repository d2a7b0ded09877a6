// Configure-time probe (CMakeLists.txt, MDSD_ISA=auto): exits 0 when the machine that compiles the
// core runs AVX2 code (CPUID and the OS saving the YMM registers, as mdsd_fast._cpu asks at import).
int main() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 0 : 1;
#else
    return 1;
#endif
}
