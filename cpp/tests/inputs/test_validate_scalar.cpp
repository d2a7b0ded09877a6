// test_validate without SSE2 (the four scalar PairSum lanes): the portable code non-x86 builds run
// must give the same bits, and x86 CI would not run it otherwise.
#define MDSD_NO_SSE2 1
#include "test_validate.cpp"
