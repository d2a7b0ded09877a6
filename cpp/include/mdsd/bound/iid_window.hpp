// The second pass of the bucket selection behind alpha*_iid (iid_select.hpp, docs/theory/index.md
// §4.2.1-§4.2.3): the window [bfirst, bcut] that the first pass's bounds leave is gathered and
// sorted, in one read of the buckets, p and q that also sums the mass below the window
// (double-double lanes, branch-free); iid_exact.hpp scans it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "mdsd/bound/iid_select.hpp"
#include "mdsd/core/bits.hpp"
#include "mdsd/core/exact_sum.hpp"
#include "mdsd/core/order.hpp"

namespace mdsd {

// The number of set bits of x & 0x5555 (a movemask of 16-bit lanes: two equal bits a lane).
inline int sel_lanes_set(unsigned x) {
    x &= 0x5555u;
    x = (x & 0x3333u) + ((x >> 2) & 0x3333u);
    x = (x & 0x0f0fu) + ((x >> 4) & 0x0f0fu);
    return static_cast<int>((x & 0xffu) + (x >> 8));
}

// The second pass, one read of bkt, p and q: the window's tokens (bucket in [bfirst, bcut]) to
// ws.win in token order (returns how many) and the count m0 of tokens below it; with `lanes`,
// also the p and q mass below the window into ws.P0, ws.S0 (docs/theory/sorted_prefix.md §4.2.3): masked terms
// (zero above the window), so the adds have no branch and run on two lanes with SSE2, each lane a
// PairSum with its a priori bound. With `base`, the tokens below the window to base[0, m0).
inline int64_t sel_base(const double* p, const double* q, int64_t V, IidSelectWorkspace& ws, int64_t bfirst,
                        int64_t bcut, bool lanes, int32_t* base, int64_t& m0) {
    const uint16_t* bkt = ws.bkt.data();
    ws.win.resize(V);
    int32_t* win = ws.win.data();
    // Window buckets are contiguous: one unsigned compare (kNoBucket lands above).
    const uint32_t lo = static_cast<uint32_t>(bfirst), w = static_cast<uint32_t>(bcut - bfirst);
    int64_t m = 0, below = 0, i = 0;
    ws.P0 = DdSum{};
    ws.S0 = DdSum{};
#ifdef MDSD_SSE2
    if (lanes) {
        // Masked terms (zero outside the lower part) into pair sums, two per array so that the
        // loop-carried adds are not the limit: with AVX2 tokens 0-3 and 4-7 of each step of eight
        // (four lanes each), else tokens 0-1 and 4-5, 2-3 and 6-7 (two lanes each).
#ifdef MDSD_AVX2
        constexpr int kLanes = 4;
        const PairSum<D4> zero{{_mm256_setzero_pd()}, {_mm256_setzero_pd()}};
        PairSum<D4> sp[2] = {zero, zero}, sq[2] = {zero, zero};
        auto accumulate = [&](__m128i lt) {  // the 16-bit masks widened to the tokens' 64-bit lanes
            const __m256d k[2] = {_mm256_castsi256_pd(_mm256_cvtepi16_epi64(lt)),
                                  _mm256_castsi256_pd(_mm256_cvtepi16_epi64(_mm_srli_si128(lt, 8)))};
            for (int j = 0; j < 2; ++j) {
                sp[j].add({_mm256_and_pd(k[j], _mm256_loadu_pd(p + i + 4 * j))});
                sq[j].add({_mm256_and_pd(k[j], _mm256_loadu_pd(q + i + 4 * j))});
            }
        };
#else
        constexpr int kLanes = 2;
        const PairSum<D2> zero{{_mm_setzero_pd()}, {_mm_setzero_pd()}};
        PairSum<D2> sp[2] = {zero, zero}, sq[2] = {zero, zero};
        auto accumulate = [&](__m128i lt) {  // the 16-bit masks widened to the tokens' 64-bit lanes
            const __m128i l4 = _mm_unpacklo_epi16(lt, lt), h4 = _mm_unpackhi_epi16(lt, lt);
            const __m128d k[4] = {
                _mm_castsi128_pd(_mm_unpacklo_epi32(l4, l4)), _mm_castsi128_pd(_mm_unpackhi_epi32(l4, l4)),
                _mm_castsi128_pd(_mm_unpacklo_epi32(h4, h4)), _mm_castsi128_pd(_mm_unpackhi_epi32(h4, h4))};
            for (int j = 0; j < 4; ++j) {
                sp[j & 1].add({_mm_and_pd(k[j], _mm_loadu_pd(p + i + 2 * j))});
                sq[j & 1].add({_mm_and_pd(k[j], _mm_loadu_pd(q + i + 2 * j))});
            }
        };
#endif
        // Unsigned 16-bit compares as signed ones on x ^ 0x8000 (SSE2 has only the signed).
        const __m128i bias = _mm_set1_epi16(static_cast<short>(0x8000));
        const __m128i vlo = _mm_set1_epi16(static_cast<short>(lo ^ 0x8000u));
        const __m128i vhi = _mm_set1_epi16(static_cast<short>((lo + w) ^ 0x8000u));
        for (; i + 8 <= V; i += 8) {
            const __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bkt + i)), bias);
            const __m128i lt = _mm_cmplt_epi16(b, vlo);
            below += sel_lanes_set(static_cast<unsigned>(_mm_movemask_epi8(lt)));
            const int out = _mm_movemask_epi8(_mm_or_si128(lt, _mm_cmpgt_epi16(b, vhi)));
            if (out != 0xffff)  // a window token among these eight (rare: the window is small)
                for (int j = 0; j < 8; ++j) {
                    win[m] = static_cast<int32_t>(i + j);
                    m += ((out >> (2 * j)) & 1) == 0;
                }
            accumulate(lt);
        }
        // a lane's adds of non-zero terms, at most: one per step (AVX2) or two, and all of `below`
        const int64_t c = std::min(i / (2 * kLanes), below);
        for (int a = 0; a < 2; ++a) {
            double hp[kLanes], lp[kLanes], hq[kLanes], lq[kLanes];
            lane_store(hp, sp[a].hi);
            lane_store(lp, sp[a].lo);
            lane_store(hq, sq[a].hi);
            lane_store(lq, sq[a].lo);
            for (int j = 0; j < kLanes; ++j) {
                ws.P0.add_pair(hp[j], lp[j], pair_error(hp[j], c));
                ws.S0.add_pair(hq[j], lq[j], pair_error(hq[j], c));
            }
        }
    }
#endif
    // The rest (all of it without SSE2): the same, one token at a time.
    PairSum<double> tp{0.0, 0.0}, tq{0.0, 0.0};
    const int64_t i0 = i;
    for (; i < V; ++i) {
        const uint32_t b = bkt[i];
        const bool lt = b < lo;
        win[m] = static_cast<int32_t>(i);
        m += b - lo <= w;
        below += lt;
        if (lanes) {
            tp.add(lt ? p[i] : 0.0);
            tq.add(lt ? q[i] : 0.0);
        }
    }
    if (lanes) {
        ws.P0.add_pair(tp.hi, tp.lo, pair_error(tp.hi, std::min(V - i0, below)));
        ws.S0.add_pair(tq.hi, tq.lo, pair_error(tq.hi, std::min(V - i0, below)));
    }
    m0 = below;
    int64_t k0 = 0;
    if (base)  // branch-free: the write at k0 <= m0 < K stays inside base (the window is not empty)
        for (int64_t t = 0; t < V; ++t) {
            base[k0] = static_cast<int32_t>(t);
            k0 += bkt[t] < lo;
        }
    return m;
}

// The window's tokens ws.win[0, m) into ws.items, grouped by bucket and each bucket sorted (by key,
// ties in token order); ws.cnt[j] becomes the end of bucket bfirst + j in items.
inline void sel_gather(const double* p, const double* q, IidSelectWorkspace& ws, int64_t bfirst, int64_t bcut,
                       int64_t m) {
    using Item = IidSelectWorkspace::Item;
    const int64_t nb = bcut - bfirst + 1;
    ws.cnt.assign(nb + 1, 0);
    uint32_t* cnt = ws.cnt.data();
    const uint16_t* bkt = ws.bkt.data();
    const int32_t* win = ws.win.data();
    for (int64_t j = 0; j < m; ++j) ++cnt[bkt[win[j]] - bfirst + 1];
    for (int64_t b = 0; b < nb; ++b) cnt[b + 1] += cnt[b];  // cnt[b]: bucket b's start
    ws.items.resize(m);
    Item* it = ws.items.data();
    for (int64_t j = 0; j < m; ++j) {
        const int32_t i = win[j];  // the same division as the first pass: the same key
        it[cnt[bkt[i] - bfirst]++] = {key_bits(p[i] / q[i]), p[i], q[i], i};
    }
    for (int64_t b = 0, a = 0; b < nb; a = cnt[b], ++b)
        sort_bucket(it + a, cnt[b] - a, bfirst + b == 0 || bfirst + b + 1 == kSelBuckets, ws);
}

}  // namespace mdsd
