// An order-independent sum of non-negative doubles: the exact sum, rounded once to nearest-even.
//
// Why: alpha*_iid = 1 + min_k [P_k - S_k^n] over prefixes of the ratio order. With P_k and S_k
// summed in the sorted order, a route that finds the minimiser without sorting the prefix cannot
// reproduce those bits; with P_k and S_k the correctly rounded exact sums, any route that finds
// the same token set gets the same float (docs/theory.md §4.2.2).
//
// The accumulator is a fixed-point integer over the whole double range (bit 0 = 2^-1074), kept as
// 32-bit chunks in int64 words with lazy carries (the "small superaccumulator" of R. M. Neal,
// 2015, "Fast exact summation using small and large superaccumulators"): an add touches two
// words; the carries are propagated every kCarryEvery adds, before any word can overflow.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

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

}  // namespace mdsd
