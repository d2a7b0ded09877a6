// test_order without ratio_keys' SSE2 step: the portable code that non-x86 builds run must give the
// same keys, order and range, and x86 CI would not run it otherwise.
#define MDSD_NO_SSE2 1
#include "test_order.cpp"
