// Portable bit and wide-multiply functions (GCC / Clang builtins, MSVC intrinsics).
#pragma once

#include <cstdint>
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

#if defined(_MSC_VER) && !defined(__clang__)
#define MDSD_RESTRICT __restrict
#else
#define MDSD_RESTRICT __restrict__
#endif

namespace mdsd {

// Number of set bits.
inline int popcount32(uint32_t x) {
#if defined(_MSC_VER) && !defined(__clang__)
    return static_cast<int>(__popcnt(x));
#else
    return __builtin_popcount(x);
#endif
}

// Index of the lowest set bit; x != 0.
inline int ctz32(uint32_t x) {
#if defined(_MSC_VER) && !defined(__clang__)
    unsigned long i;
    _BitScanForward(&i, x);
    return static_cast<int>(i);
#else
    return __builtin_ctz(x);
#endif
}

// The high 64 bits of the 128-bit product a * b.
inline uint64_t mulhi64(uint64_t a, uint64_t b) {
#if defined(_MSC_VER) && !defined(__clang__)
    return __umulh(a, b);
#else
    return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

// x^n by repeated squaring (n >= 0); the one power every dual kernel uses, so that two routes
// over the same prefix give the same bits.
inline double ipow(double x, int n) {
    double r = 1.0;
    while (n > 0) {
        if (n & 1) r *= x;
        x *= x;
        n >>= 1;
    }
    return r;
}

}  // namespace mdsd
