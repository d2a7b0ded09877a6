// The bucket selection behind alpha*_iid (docs/theory/sorted_prefix.md §4.2.1-§4.2.3).
//
// alpha* = 1 + min_k F(k), F(k) = [P_k] - [S_k]^n over the prefixes of the ratio order, [.] the
// exact prefix mass rounded once (exact_sum.hpp), so F depends on the prefix's token set only.
// One pass puts every token in a coarse bucket of the ratio (1/32 of a binade) and sums each
// bucket's p and q (plain sums: the bounds allow for their rounding); a lower bound on F over the prefixes ending inside each
// bucket proves which buckets cannot hold the minimiser (every bucket is bounded, so F need not be
// unimodal). What is left, the window [bfirst, bcut], is gathered and sorted by iid_window.hpp's
// second pass, which also sums the mass below the window; iid_exact.hpp scans it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "mdsd/core/bits.hpp"
#include "mdsd/core/exact_sum.hpp"
#include "mdsd/core/order.hpp"

namespace mdsd {

// Coarse buckets: 1/32 of a binade of the ratio (the top 16 bits of its key) between 2^-64 and
// 2^64, one bucket below (p = 0 included) and one above.
constexpr int kSelShift = 52 - 5;
constexpr uint64_t kSelLo = uint64_t{1023 - 64} << 5;  // the digit of 2^-64
constexpr uint64_t kSelHi = uint64_t{1023 + 64} << 5;  // the digit of 2^64
constexpr int64_t kSelBuckets = static_cast<int64_t>(kSelHi - kSelLo) + 2;

inline int64_t sel_bucket(uint64_t key) {
    const uint64_t d = key >> kSelShift;
    return d < kSelLo ? 0 : d >= kSelHi ? kSelBuckets - 1 : static_cast<int64_t>(d - kSelLo) + 1;
}

// The smallest ratio bucket b can hold.
inline double sel_bucket_floor(int64_t b) {
    if (b == 0) return 0.0;
    const uint64_t k = (static_cast<uint64_t>(b - 1) + kSelLo) << kSelShift;
    double r;
    std::memcpy(&r, &k, sizeof r);
    return r;
}

constexpr uint16_t kNoBucket = 0xffff;  // off the support (q = 0)

struct IidSelectWorkspace {
    struct Item {  // p and q ride along, so the scan reads the window in order (no gathers)
        uint64_t key;
        double p, q;
        int32_t idx;
    };
    struct Mass {  // a bucket's p and q, plain sums in token order (the bounds' only input)
        double p, q;
    };
    std::vector<uint16_t> bkt;  // per token: its coarse bucket, kNoBucket off the support
    std::vector<Mass> mass;  // per coarse bucket, and one slot after them for q = 0
    std::vector<uint32_t> cnt;  // tokens per window bucket, then each one's end in `items`
    std::vector<int32_t> win;  // the window's tokens, in token order
    std::vector<Item> items, tmp;
    std::vector<uint32_t> fine;  // one bucket's counting sort
    DdSum P0, S0;  // the p and q mass below the window, from sel_base's lanes
};

struct IidSelectResult {
    double best = 0.0;  // min(0, min_k F(k)), the sorted route's value bit for bit
    int64_t k_star = 0;  // the certificate is order[0, k_star)
    int64_t kept = 0;  // order[0, kept): the tokens below the window, then the window sorted
    int64_t window = 0;  // tokens in the window (sorted and scanned)
    int64_t support = 0;  // K = |supp q|
    bool fallback = false;  // some p / q overflowed (subnormal q): use the sorted route
    bool base_tokens = false;  // the lanes' base left a rounding undecided: summed again by token
    bool exact_sums = false;  // a rounding the fast sums could not decide: ExactSum gave the bits
};

inline bool item_less(const IidSelectWorkspace::Item& x, const IidSelectWorkspace::Item& y) {
    return x.key < y.key || (x.key == y.key && x.idx < y.idx);
}

// Sorts a[0, s), one coarse bucket's tokens in token order, by key with ties in token order
// (the stable sort's order). A counting sort on the next bits (about one fine bucket per token)
// leaves inversions only inside fine buckets, which one insertion pass removes; fine buckets
// wider than 32 (crowded ratios) and the end buckets, which span many binades, are sorted by
// (key, token) instead, so the cost stays O(s log s) at worst.
inline void sort_bucket(IidSelectWorkspace::Item* a, int64_t s, bool end_bucket, IidSelectWorkspace& ws) {
    using Item = IidSelectWorkspace::Item;
    if (s > 8) {
        int lg = 0;
        if (!end_bucket)
            while (lg < 16 && (int64_t{1} << lg) < s) ++lg;
        bool wide = lg == 0;
        if (lg > 0) {
            const int sh = kSelShift - lg;
            const uint32_t nf = uint32_t{1} << lg;
            ws.fine.assign(nf + 1, 0);
            uint32_t* c = ws.fine.data();
            for (int64_t j = 0; j < s; ++j) ++c[((a[j].key >> sh) & (nf - 1)) + 1];
            for (uint32_t f = 0; f < nf; ++f) {
                wide |= c[f + 1] > 32;
                c[f + 1] += c[f];
            }
            ws.tmp.resize(s);
            Item* t = ws.tmp.data();
            for (int64_t j = 0; j < s; ++j) t[c[(a[j].key >> sh) & (nf - 1)]++] = a[j];
            std::memcpy(a, t, s * sizeof(Item));
        }
        if (wide) {
            if (!std::is_sorted(a, a + s, item_less)) std::sort(a, a + s, item_less);
            return;
        }
    }
    for (int64_t x = 1; x < s; ++x) {
        if (!(a[x - 1].key > a[x].key)) continue;
        const Item v = a[x];
        int64_t y = x;
        do {
            a[y] = a[y - 1];
            --y;
        } while (y > 0 && a[y - 1].key > v.key);
        a[y] = v;
    }
}

// The first pass and the bounds: fills ws (buckets and their plain masses), res.support and
// res.fallback, and [bfirst, bcut], the buckets that can hold the first minimiser (bcut < 0: none,
// alpha* = 1 and H empty). Every prefix ending outside is proven to have F above the minimum.
// One pass per token: the division, the bucket, two plain adds (docs/theory/sorted_prefix.md §4.2.1, §4.2.3).
inline void sel_window(const double* p, const double* q, int64_t V, int n, IidSelectWorkspace& ws, IidSelectResult& res,
                       int64_t& bfirst, int64_t& bcut) {
    using Mass = IidSelectWorkspace::Mass;
    bfirst = -1;
    bcut = -1;
    ws.bkt.resize(V);
    ws.mass.assign(kSelBuckets + 1, Mass{0.0, 0.0});
    uint16_t* bkt = ws.bkt.data();
    Mass* ms = ws.mass.data();
    // The clamps put ratios below 2^-64 (and p = 0) in bucket 0 and those from 2^64 on in the last
    // one, as sel_bucket does; `off` is a key whose digit gives kNoBucket (q = 0: r is inf or NaN).
    const double rlo = std::nextafter(0x1p-64, 0.0), rhi = 0x1p64;
    const uint64_t off = (uint64_t{kNoBucket} + kSelLo - 1) << kSelShift;
    bool overflow = false;
    int64_t K = 0, i = 0;
    // Blocks that stay in L1: first the division and the bucket of every token (no stores but
    // bkt, so it vectorises), then the masses from the block's p, q and bkt, still in cache.
    constexpr int64_t kBlock = 1024;
#ifdef MDSD_SSE2
    // The same blocks as below, four tokens a step: the buckets of two pairs packed into one 64-bit
    // store, then each token's (p, q) added to its bucket's pair in one vector add (the stores, not
    // the adds, are the limit).
    const int64_t V4 = V & ~int64_t{3};
    {
        const __m128d zero = _mm_setzero_pd();
        __m128d vmax = zero;
#ifdef MDSD_AVX2
        // Four tokens' digits (key >> kSelShift) - (kSelLo - 1), the same operations per token as
        // the SSE2 form below, packed into one 64-bit store.
        const __m256d zero4 = _mm256_setzero_pd(), vrlo = _mm256_set1_pd(rlo), vrhi = _mm256_set1_pd(rhi);
        const __m256i voff = _mm256_set1_epi64x(static_cast<int64_t>(off));
        const __m256i vdig = _mm256_set1_epi64x(static_cast<int64_t>(kSelLo - 1));
        const __m256i low32 = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);  // each 64-bit lane's low half
        __m256d vmax4 = zero4;
        auto store_digits = [&](int64_t j) {
            const __m256d vp = _mm256_loadu_pd(p + j), vq = _mm256_loadu_pd(q + j);
            const __m256d r = _mm256_div_pd(vp, vq), on = _mm256_cmp_pd(vq, zero4, _CMP_GT_OQ);
            K += __builtin_popcount(static_cast<unsigned>(_mm256_movemask_pd(on)));
            vmax4 = _mm256_max_pd(vmax4, _mm256_and_pd(on, r));
            const __m256i key = _mm256_castpd_si256(_mm256_min_pd(_mm256_max_pd(r, vrlo), vrhi));
            const __m256i sel = _mm256_blendv_epi8(voff, key, _mm256_castpd_si256(on));
            const __m256i d = _mm256_sub_epi64(_mm256_srli_epi64(sel, kSelShift), vdig);  // < 2^16
            const __m128i d32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(d, low32));
            _mm_storel_epi64(reinterpret_cast<__m128i*>(bkt + j), _mm_packus_epi32(d32, d32));
        };
#else
        const __m128d vrlo = _mm_set1_pd(rlo), vrhi = _mm_set1_pd(rhi);
        const __m128i voff = _mm_set1_epi64x(static_cast<int64_t>(off));
        const __m128i vdig = _mm_set1_epi64x(static_cast<int64_t>(kSelLo - 1));
        // Two tokens' digits (key >> kSelShift) - (kSelLo - 1) in the low 16 bits of each 64-bit lane.
        auto digits = [&](int64_t j) {
            const __m128d vp = _mm_loadu_pd(p + j), vq = _mm_loadu_pd(q + j);
            const __m128d r = _mm_div_pd(vp, vq), on = _mm_cmpgt_pd(vq, zero);
            const int mk = _mm_movemask_pd(on);
            K += (mk & 1) + (mk >> 1);
            vmax = _mm_max_pd(vmax, _mm_and_pd(on, r));
            const __m128i key = _mm_castpd_si128(_mm_min_pd(_mm_max_pd(r, vrlo), vrhi)), ion = _mm_castpd_si128(on);
            const __m128i sel = _mm_or_si128(_mm_and_si128(ion, key), _mm_andnot_si128(ion, voff));
            return _mm_shuffle_epi32(_mm_sub_epi64(_mm_srli_epi64(sel, kSelShift), vdig), _MM_SHUFFLE(3, 1, 2, 0));
        };
        auto store_digits = [&](int64_t j) {
            __m128i t = _mm_unpacklo_epi64(digits(j), digits(j + 2));  // 32-bit lanes: 4 digits
            t = _mm_shufflehi_epi16(_mm_shufflelo_epi16(t, _MM_SHUFFLE(3, 1, 2, 0)), _MM_SHUFFLE(3, 1, 2, 0));
            _mm_storel_epi64(reinterpret_cast<__m128i*>(bkt + j), _mm_shuffle_epi32(t, _MM_SHUFFLE(3, 1, 2, 0)));
        };
#endif
        auto add = [&](uint32_t b, __m128d pq) {
            double* m = &ms[b != kNoBucket ? b : kSelBuckets].p;
            _mm_storeu_pd(m, _mm_add_pd(_mm_loadu_pd(m), pq));
        };
        for (int64_t i0 = 0; i0 < V4; i0 += kBlock) {
            const int64_t i1 = std::min(V4, i0 + kBlock);
            for (i = i0; i < i1; i += 4) store_digits(i);
            for (i = i0; i < i1; i += 4) {
                uint64_t w;
                std::memcpy(&w, bkt + i, sizeof w);
                const __m128d p0 = _mm_loadu_pd(p + i), q0 = _mm_loadu_pd(q + i);
                const __m128d p1 = _mm_loadu_pd(p + i + 2), q1 = _mm_loadu_pd(q + i + 2);
                add(w & 0xffff, _mm_unpacklo_pd(p0, q0));
                add((w >> 16) & 0xffff, _mm_unpackhi_pd(p0, q0));
                add((w >> 32) & 0xffff, _mm_unpacklo_pd(p1, q1));
                add(w >> 48, _mm_unpackhi_pd(p1, q1));
            }
        }
#ifdef MDSD_AVX2
        vmax = _mm_max_pd(_mm256_castpd256_pd128(vmax4), _mm256_extractf128_pd(vmax4, 1));
#endif
        double mx[2];
        _mm_storeu_pd(mx, vmax);
        overflow = std::max(mx[0], mx[1]) > std::numeric_limits<double>::max();
        i = V4;
    }
#endif
    // The rest (all of it without SSE2).
    for (int64_t i0 = i; i0 < V; i0 += kBlock) {
        const int64_t i1 = std::min(V, i0 + kBlock);
        double rmax = 0.0;
        for (i = i0; i < i1; ++i) {
            const double r = p[i] / q[i];
            const bool on = q[i] > 0.0;
            rmax = on && r > rmax ? r : rmax;
            const uint64_t key = on ? key_bits(std::min(std::max(r, rlo), rhi)) : off;
            bkt[i] = static_cast<uint16_t>((key >> kSelShift) - (kSelLo - 1));
        }
        overflow |= rmax > std::numeric_limits<double>::max();
        for (i = i0; i < i1; ++i) {  // q = 0 goes to the spare slot: no branch
            const uint32_t b = bkt[i];
            const bool on = b != kNoBucket;
            Mass& m = ms[on ? b : kSelBuckets];
            m.p += p[i];
            m.q += q[i];
            K += on;
        }
    }
    res.support = K;
    if (overflow) {  // ratio_order's rescaled keys: leave those rows to it
        res.fallback = true;
        return;
    }
    if (K == 0) return;
    // A bucket holds a token iff its q sum is positive (q > 0 on the support; sums of positive
    // doubles do not vanish). The smallest F at a bucket boundary (k = 0 included) is an upper
    // bound on the minimum.
    double ub = 0.0, Ptot = 0.0, Stot = 0.0;
    for (int64_t b = 0; b < kSelBuckets; ++b) {
        if (ms[b].q == 0.0) continue;
        Ptot += ms[b].p;
        Stot += ms[b].q;
        ub = std::min(ub, Ptot - ipow(Stot, n));
    }
    // Every F here -- the scan's, the boundaries' and the bounds' -- is within (K + #buckets + 4n)
    // eps (P + n S^n) of the exact value (a bucket's plain sum of c terms in any order within
    // (c - 1) eps of its mass; the scan's [.] within eps of it); a bucket is dropped only when its
    // bound clears ub by twice a generous multiple of that.
    const double eps = std::numeric_limits<double>::epsilon();
    const double smax = std::max(1.0, Stot);
    const double slack =
        2.0 * (8.0 * static_cast<double>(K + kSelBuckets) + 16.0 * n + 64.0) * eps * (Ptot + n * ipow(smax, n) + 1.0);
    // A prefix ending inside bucket b (q mass S in [S0, S1]) has P >= P0 + lo (S - S0), lo the
    // bucket's smallest ratio; P0 + lo (S - S0) - S^n is concave in S, so its minimum over
    // [S0, S1] is at an end. Every bucket is bounded: a later dip of F is never missed.
    double P0 = 0.0, S0 = 0.0;
    for (int64_t b = 0; b < kSelBuckets; ++b) {
        if (ms[b].q == 0.0) continue;
        const double lo = sel_bucket_floor(b) * (1.0 - 4.0 * eps);  // p / q rounded up at most
        const double S1 = S0 + ms[b].q;
        const double lb = std::min(P0 - ipow(S0, n), P0 + lo * ms[b].q - ipow(S1, n));
        if (lb <= ub + slack) {
            if (bfirst < 0) bfirst = b;
            bcut = b;
        }
        P0 += ms[b].p;
        S0 = S1;
    }
}

}  // namespace mdsd
