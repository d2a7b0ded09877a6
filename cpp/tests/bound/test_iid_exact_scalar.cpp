// test_iid_exact without the SSE2 steps (the first pass's and the base lanes'): the portable code
// that non-x86 builds run must give the same bits, and x86 CI would not run it otherwise.
#define MDSD_NO_SSE2 1
#include "test_iid_exact.cpp"
