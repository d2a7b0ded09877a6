// Ratio order of the draft support: the sort behind every sorted-prefix (dual) kernel.
//
// Tokens with q = 0 are dropped (they have ratio +inf and never help a prefix, docs/theory/sorted_prefix.md §4.2);
// tokens with p = 0 get ratio 0 and come first. The sort is a stable LSD radix sort on the
// IEEE bit pattern of the ratio (non-negative doubles order like their uint64 bits), so ties
// keep token-id order and the order -- hence the certificate -- is deterministic.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "mdsd/core/lanes.hpp"

namespace mdsd {

struct OrderWorkspace {
    std::vector<uint64_t> keys;
    std::vector<int32_t> idx;
    std::vector<uint64_t> packed, packed_tmp;  // ratio_order's (key, position) words
    uint64_t key_lo = 0, key_hi = 0;             // the smallest and largest of keys[0, K)
};

// The sort key of a ratio r >= 0: its IEEE bits, which order like r.
inline uint64_t key_bits(double r) {
    uint64_t k;
    std::memcpy(&k, &r, sizeof k);
    return k;
}

// Fills ws.keys[0, K) and ws.idx[0, K) with the ratio keys of the support of q (q > 0), in token
// order: the IEEE bits of p / q (or of p / (q 2^64), see below: the same order), and their range
// in ws.key_lo, ws.key_hi. Returns K.
//
// The division runs over every token with no branch (four a step with AVX2, two with SSE2), keeping the range as
// doubles (non-negative doubles order like their bits); each key and its token are written at K,
// which moves on only for a token on the support (a write at K <= i lands on a slot already read).
inline int64_t ratio_keys(const double* p, const double* q, int64_t V, OrderWorkspace& ws) {
    ws.keys.resize(V);
    ws.idx.resize(V);
    uint64_t* keys = ws.keys.data();
    int32_t* idx = ws.idx.data();
    const double inf = std::numeric_limits<double>::infinity();
    int64_t K = 0, i = 0;
    double rmin = inf, rmax = 0.0;
#ifdef MDSD_SSE2
    {
        const __m128d zero = _mm_setzero_pd(), vinf = _mm_set1_pd(inf);
        __m128d vmin = vinf, vmax = zero;
#ifdef MDSD_AVX2
        {  // four a step: the same division and keys, the same range (min and max are exact)
            const __m256d zero4 = _mm256_setzero_pd(), vinf4 = _mm256_set1_pd(inf);
            __m256d vmin4 = vinf4, vmax4 = zero4;
            for (; i + 4 <= V; i += 4) {
                const __m256d vq = _mm256_loadu_pd(q + i), r = _mm256_div_pd(_mm256_loadu_pd(p + i), vq);
                const __m256d on = _mm256_cmp_pd(vq, zero4, _CMP_GT_OQ);
                const int mk = _mm256_movemask_pd(on);
                vmin4 = _mm256_min_pd(vmin4, _mm256_blendv_pd(vinf4, r, on));
                vmax4 = _mm256_max_pd(vmax4, _mm256_and_pd(on, r));
                alignas(32) uint64_t rk[4];
                _mm256_store_si256(reinterpret_cast<__m256i*>(rk), _mm256_castpd_si256(r));
                for (int j = 0; j < 4; ++j) {
                    keys[K] = rk[j];
                    idx[K] = static_cast<int32_t>(i + j);
                    K += (mk >> j) & 1;
                }
            }
            vmin = _mm_min_pd(_mm256_castpd256_pd128(vmin4), _mm256_extractf128_pd(vmin4, 1));
            vmax = _mm_max_pd(_mm256_castpd256_pd128(vmax4), _mm256_extractf128_pd(vmax4, 1));
        }
#endif
        for (; i + 2 <= V; i += 2) {
            const __m128d vq = _mm_loadu_pd(q + i), r = _mm_div_pd(_mm_loadu_pd(p + i), vq);
            const __m128d on = _mm_cmpgt_pd(vq, zero);  // off lanes (inf or NaN) take no part in the range
            const int mk = _mm_movemask_pd(on);
            vmin = _mm_min_pd(vmin, _mm_or_pd(_mm_and_pd(on, r), _mm_andnot_pd(on, vinf)));
            vmax = _mm_max_pd(vmax, _mm_and_pd(on, r));
            // the keys' bits through the integer stores (__m128i may alias), not a double store
            // into uint64_t storage
            const __m128i rk = _mm_castpd_si128(r);
            _mm_storel_epi64(reinterpret_cast<__m128i*>(keys + K), rk);
            idx[K] = static_cast<int32_t>(i);
            K += mk & 1;
            _mm_storel_epi64(reinterpret_cast<__m128i*>(keys + K), _mm_unpackhi_epi64(rk, rk));
            idx[K] = static_cast<int32_t>(i + 1);
            K += mk >> 1;
        }
        double a[2], b[2];
        _mm_storeu_pd(a, vmin);
        _mm_storeu_pd(b, vmax);
        rmin = std::min(a[0], a[1]);
        rmax = std::max(b[0], b[1]);
    }
#endif
    for (; i < V; ++i) {  // the rest (all of it without SSE2)
        const double r = p[i] / q[i];
        const bool on = q[i] > 0.0;
        rmin = on && r < rmin ? r : rmin;
        rmax = on && r > rmax ? r : rmax;
        keys[K] = key_bits(r);
        idx[K] = static_cast<int32_t>(i);
        K += on;
    }
    // p / q overflows to +inf for subnormal q, and every such token would tie (a wrong order and
    // a wrong alpha*). Then all ratios are taken as p / (q 2^64): the same order, since the factor
    // is common and exact, and at most 2e323 / 2^64 ~ 1e304. Ratios below ~1e-304 (p < 1e-304)
    // may tie at 0 instead; their p is too small to move alpha*.
    uint64_t lo = key_bits(rmin), hi = key_bits(rmax);
    if (rmax > std::numeric_limits<double>::max()) {
        lo = ~uint64_t{0}, hi = 0;
        for (int64_t j = 0; j < K; ++j) {
            const int32_t t = idx[j];
            const uint64_t k = key_bits(p[t] / std::ldexp(q[t], 64));
            lo = std::min(lo, k);
            hi = std::max(hi, k);
            keys[j] = k;
        }
    }
    if (K == 0) lo = ~uint64_t{0}, hi = 0;
    ws.key_lo = lo;
    ws.key_hi = hi;
    return K;
}

namespace order_detail {

inline int bit_width(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }

// Stable LSD radix sort of u[0, K) by its bits [lo_bit, lo_bit + kPasses x kBits), tmp as scratch,
// given the histograms of its digits. Returns the buffer that holds the result.
constexpr int kBits = 11, kBuckets = 1 << kBits, kPasses = 3, kKeyBits = kPasses * kBits;
static_assert(kKeyBits + 31 <= 64, "a word holds the key bits and a 31-bit position");
using Hist = std::array<std::array<uint32_t, kBuckets>, kPasses>;
inline uint64_t* lsd_sort(uint64_t* u, uint64_t* tmp, int64_t K, int lo_bit, Hist& hist) {
    for (int d = 0; d < kPasses; ++d) {
        auto& h = hist[d];
        const int sh = lo_bit + d * kBits;
        // A digit shared by every key leaves the order unchanged: skip the pass.
        if (h[(u[0] >> sh) & (kBuckets - 1)] == static_cast<uint32_t>(K)) continue;
        uint32_t sum = 0;
        for (int b = 0; b < kBuckets; ++b) {
            const uint32_t c = h[b];
            h[b] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < K; ++i) tmp[h[(u[i] >> sh) & (kBuckets - 1)]++] = u[i];
        std::swap(u, tmp);
    }
    return u;
}

// u[a, b): words of equal truncated key, in token order. Puts them in (full key, token) order.
inline void sort_run(uint64_t* u, int64_t a, int64_t b, const uint64_t* key, uint64_t jmask) {
    auto k = [&](int64_t t) { return key[u[t] & jmask]; };
    int64_t t = a + 1;
    while (t < b && k(t - 1) <= k(t)) ++t;
    if (t == b) return;  // already in order (exact ties: the common case)
    if (b - a <= 32) {
        for (; t < b; ++t) {  // insertion sort, stable: moves only past strictly larger keys
            const uint64_t w = u[t], kw = key[w & jmask];
            int64_t i = t;
            for (; i > a && key[u[i - 1] & jmask] > kw; --i) u[i] = u[i - 1];
            u[i] = w;
        }
        return;
    }
    std::sort(u + a, u + b, [&](uint64_t x, uint64_t y) {
        const uint64_t kx = key[x & jmask], ky = key[y & jmask];
        return kx < ky || (kx == ky && x < y);
    });
}

}  // namespace order_detail

// Fills `order` with the support of q (q > 0) sorted by ascending p/q, ties in token order (a
// stable sort of the keys). Returns its length K.
//
// Each key's top bits above the smallest key, (key - min) >> drop, are packed with its position j
// in the support into one 64-bit word, and the words are radix-sorted on the key part only: 3
// passes on 8-byte items (the full key took 6 on 12-byte items), stable, so ties stay in token
// order. drop is the fewest low key bits that make the varying bits fit in 33. Words whose
// truncated keys tie (ratios equal, or agreeing to ~2^-(33 - log2 of the exponent span)) are then
// put in full-key order within their run, ties kept in token order: exactly the stable order.
inline int64_t ratio_order(const double* p, const double* q, int64_t V, OrderWorkspace& ws,
                           std::vector<int32_t>& order) {
    using namespace order_detail;
    const int64_t K = ratio_keys(p, q, V, ws);
    order.resize(K);
    if (K == 0) return 0;
    const uint64_t* key = ws.keys.data();
    const uint64_t lo = ws.key_lo, hi = ws.key_hi;
    // Small supports: a comparison sort of the words (distinct: any sort is the stable one) beats
    // the radix passes, and can keep every key bit the word has room for.
    const bool radix = K >= 256;
    const int jbits = bit_width(static_cast<uint64_t>(K - 1));  // <= 31
    const int drop = std::max(0, bit_width(hi - lo) - (radix ? kKeyBits : 64 - jbits));
    ws.packed.resize(K);
    ws.packed_tmp.resize(K);
    uint64_t* u = ws.packed.data();
    if (radix) {
        Hist hist{};  // the digits' histograms, taken as the words are made
        for (int64_t j = 0; j < K; ++j) {
            const uint64_t t = (key[j] - lo) >> drop;
            u[j] = t << jbits | static_cast<uint64_t>(j);
            for (int d = 0; d < kPasses; ++d) ++hist[d][(t >> (d * kBits)) & (kBuckets - 1)];
        }
        u = lsd_sort(u, ws.packed_tmp.data(), K, jbits, hist);
    } else {
        for (int64_t j = 0; j < K; ++j) u[j] = ((key[j] - lo) >> drop) << jbits | static_cast<uint64_t>(j);
        std::sort(u, u + K);
    }
    const uint64_t jmask = (uint64_t{1} << jbits) - 1;
    if (drop > 0)
        for (int64_t a = 0, b; a < K; a = b) {
            for (b = a + 1; b < K && (u[b] >> jbits) == (u[a] >> jbits);) ++b;
            if (b - a > 1) sort_run(u, a, b, key, jmask);
        }
    for (int64_t t = 0; t < K; ++t) order[t] = ws.idx[u[t] & jmask];
    return K;
}

}  // namespace mdsd
