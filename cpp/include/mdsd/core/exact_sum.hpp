// An order-independent sum of non-negative doubles: the exact sum, rounded once to nearest-even.
//
// Why: alpha*_iid = 1 + min_k [P_k - S_k^n] over prefixes of the ratio order. With P_k and S_k
// summed in the sorted order, a route that finds the minimiser without sorting the prefix cannot
// reproduce those bits; with P_k and S_k the correctly rounded exact sums, any route that finds
// the same token set gets the same float (docs/theory/sorted_prefix.md §4.2.2).
//
// The accumulator is a fixed-point integer over the whole double range (bit 0 = 2^-1074), kept as
// 32-bit chunks in int64 words with lazy carries (the "small superaccumulator" of R. M. Neal,
// 2015, "Fast exact summation using small and large superaccumulators"): an add touches two
// words; the carries are propagated every kCarryEvery adds, before any word can overflow.
//
// DdSum is the fast path to the same bits: a double-double sum with a rigorous error bound. Its
// rounding is the exact sum's whenever the bound keeps the true sum off a rounding midpoint;
// when it does not, rounded() says so and the caller uses ExactSum (docs/theory/sorted_prefix.md §4.2.3).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "mdsd/core/lanes.hpp"

namespace mdsd {

class ExactSum {
  public:
    static constexpr int kChunks = 68;         // 68 x 32 bits > 1074 + 1024 + headroom
    static constexpr int kCarryEvery = 1024;   // 1024 (2^52 + 2^32) < 2^63

    // x >= 0 and finite (the callers' p and q).
    void add(double x) {
        uint64_t b;
        std::memcpy(&b, &x, sizeof b);
        int e = static_cast<int>(b >> 52);
        uint64_t m = b & ((uint64_t{1} << 52) - 1);
        if (e != 0) m |= uint64_t{1} << 52;
        else e = 1;  // subnormal: the same scale as the smallest normal binade
        const int pos = e - 1, j = pos >> 5, s = pos & 31;
        c_[j] += static_cast<int64_t>((m << s) & 0xffffffffu);
        c_[j + 1] += static_cast<int64_t>(m >> (32 - s));
        lo_ = std::min(lo_, j);
        hi_ = std::max(hi_, j + 1);
        if (++adds_ == kCarryEvery) carry();
    }

    // The exact sum rounded to nearest, ties to even (carries first: the value is unchanged).
    double value() {
        carry();
        int t = hi_;
        while (t >= lo_ && c_[t] == 0) --t;
        if (t < lo_) return 0.0;
        const uint64_t top = static_cast<uint64_t>(c_[t]);
        const int h = 32 * t + std::ilogb(static_cast<double>(top));  // the leading bit (top < 2^32: exact)
        if (h < 53) {  // fits in 53 bits: exact (normal or subnormal)
            const uint64_t x = static_cast<uint64_t>(c_[0]) | (t >= 1 ? static_cast<uint64_t>(c_[1]) << 32 : 0);
            return std::ldexp(static_cast<double>(x), -1074);
        }
        // w = the 64 bits [h - 63, h] (from at most three chunks), sticky = any bit below them.
        uint64_t w;
        bool sticky = false;
        if (h < 64) {
            const uint64_t x = static_cast<uint64_t>(c_[0]) | (t >= 1 ? static_cast<uint64_t>(c_[1]) << 32 : 0);
            w = x << (63 - h);
        } else {
            const int base = h - 63, jb = base >> 5, shift = base - 32 * jb;
            w = static_cast<uint64_t>(c_[jb]) >> shift;
            for (int j = jb + 1; j <= t; ++j) w |= static_cast<uint64_t>(c_[j]) << (32 * j - base);
            sticky = (static_cast<uint64_t>(c_[jb]) & ((uint64_t{1} << shift) - 1)) != 0;
            for (int j = lo_; j < jb && !sticky; ++j) sticky = c_[j] != 0;
        }
        uint64_t mant = w >> 11;  // the leading 53 bits; bit 10 of w is the round bit
        const uint64_t rest = w & 0x7ff;
        if (rest > 0x400 || (rest == 0x400 && (sticky || (mant & 1)))) ++mant;
        return std::ldexp(static_cast<double>(mant), h - 52 - 1074);
    }

  private:
    // Every word to [0, 2^32) but the top one; non-negative terms only, so no borrows.
    void carry() {
        adds_ = 0;
        if (hi_ < 0) return;  // nothing added
        for (int j = lo_; j < hi_; ++j) {
            c_[j + 1] += c_[j] >> 32;
            c_[j] &= 0xffffffff;
        }
        while (hi_ + 1 < kChunks && c_[hi_] >> 32) {
            c_[hi_ + 1] += c_[hi_] >> 32;
            c_[hi_] &= 0xffffffff;
            ++hi_;
        }
    }

    int64_t c_[kChunks] = {};
    int lo_ = kChunks, hi_ = -1, adds_ = 0;
};

// a + b = s + t exactly, s = fl(a + b) (Knuth's TwoSum; exact with subnormals too, no FMA needed).
// T = double, or D2 (lanes.hpp): the same operations on two lanes at once.
template <class T>
inline void two_sum(T a, T b, T& s, T& t) {
    s = a + b;
    const T bb = s - a;
    t = (a - (s - bb)) + (b - bb);
}


// The a priori error of a pair (hi, lo) after `c` adds of x >= 0 by `hi, t = two_sum(hi, x); lo +=
// t` (PairSum, sel_base's lanes): each t is within u hi (u = 2^-53), so |lo| <= j u hi after j adds and
// the j-th rounding of lo is within u |lo|: u^2 hi c (c + 1) / 2 in all, doubled for the rounding of
// this product, plus 2^-1070 for its underflow. The first two adds to lo are exact (to zero).
inline double pair_error(double hi, int64_t c) {
    if (c <= 2 || hi == 0.0) return 0.0;  // hi = 0: every term was zero
    const double cc = static_cast<double>(c);
    return hi * (cc * (cc + 1.0)) * 0x1p-106 + 0x1p-1070;
}

// An unnormalised pair sum of non-negative terms (per lane for D2): hi, t = two_sum(hi, x); lo +=
// t. After c adds (adds of zero included) its exact value is within pair_error(hi, c) of hi + lo.
// t is two_sum's, obtained by Dekker's FastTwoSum on the larger and the smaller term (both >= 0,
// so no magnitudes needed): the same exact error in three adds instead of five.
template <class T>
struct PairSum {
    T hi, lo;
    void add(T x) {
        const T s = hi + x;
        lo = lo + (lane_min(hi, x) - (s - lane_max(hi, x)));
        hi = s;
    }
};

// A double-double sum of non-negative terms: the exact sum is within err of hi + lo. Each add
// rounds only in lo, and that rounding's error is computed exactly (two_sum) and its size added to
// err: err = 0 while nothing was lost. lo is not renormalised (|lo| <= k u hi after k adds), so
// the loop-carried chains are one add each; rounded() does the rest off them.
struct DdSum {
    double hi = 0.0, lo = 0.0, err = 0.0;

    void add(double x) {
        double t, e;
        two_sum(hi, x, hi, t);
        two_sum(lo, t, lo, e);
        err += std::fabs(e);
    }

    // Adds another pair (h, l) whose exact value is within eh of h + l (pair_error).
    void add_pair(double h, double l, double eh) {
        double t, l1, e1, e2;
        two_sum(hi, h, hi, t);
        two_sum(lo, l, l1, e1);
        two_sum(l1, t, lo, e2);
        err += std::fabs(e1) + std::fabs(e2) + eh;
    }

    double approx() const { return hi + lo; }

    // The exact sum rounded to nearest-even, if the bound decides it. r = fl(hi + lo) and hi + lo =
    // r + d exactly; with err = 0 that is the exact sum and r its rounding, ties included. Otherwise
    // the exact sum, within err of r + d, rounds to r when it stays inside the half gaps to r's two
    // neighbours (the lower one is half as far at a power of two). Tiny sums (r < 2^-960) are
    // decided only when err = 0.
    bool rounded(double& r) const {
        double d;
        two_sum(hi, lo, r, d);
        if (err == 0.0) return true;
        if (!(r >= 0x1p-960 && r < 0x1p1000)) return false;
        uint64_t b;
        std::memcpy(&b, &r, sizeof b);
        double below, above;
        --b;
        std::memcpy(&below, &b, sizeof below);
        b += 2;
        std::memcpy(&above, &b, sizeof above);
        // the gaps are exact (Sterbenz); 2 err covers err's own roundings, (1 - 2^-50) this arithmetic
        const double e = 2.0 * err, k = 0.5 * (1.0 - 0x1p-50);
        return d + e < (above - r) * k && -d + e < (r - below) * k;
    }
};

}  // namespace mdsd
