// Rows in lockstep for the closed forms (planless/exact.hpp): one vector lane per row, so that the
// sequential sums of G rows (a formula's add chain in token order, ~4 cycles a token) run side by
// side instead of one after the other. Each lane computes exactly what the scalar code computes for
// its row: the same IEEE operations (+ - * / and the compare-selects below, which mirror std::min,
// std::max and ?: operand for operand, signed zeros and NaN included) in the same order. So a row's
// bits do not depend on the lane type (double: one row; D2: two rows with SSE2; D4: four with
// AVX2), on its neighbours or on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "mdsd/core/lanes.hpp"

namespace mdsd::verif::direct::rows {

// Operations per lane. smin(a, b) is std::min(a, b) = b < a ? b : a, smax(a, b) std::max(a, b) =
// a < b ? b : a: minpd / maxpd return their second operand on ties and NaN, hence the swap.
inline double ldiv(double a, double b) { return a / b; }
inline double smin(double a, double b) { return std::min(a, b); }
inline double smax(double a, double b) { return std::max(a, b); }
inline bool gt(double a, double b) { return a > b; }
inline bool ge(double a, double b) { return a >= b; }
inline bool eq(double a, double b) { return a == b; }
inline bool mand(bool a, bool b) { return a && b; }
inline bool mnot(bool a) { return !a; }
inline double sel(bool m, double a, double b) { return m ? a : b; }
inline int bits(bool m) { return m ? 1 : 0; }
inline void put(double* x, double v) { *x = v; }

#ifdef MDSD_SSE2
inline D2 ldiv(D2 a, D2 b) { return {_mm_div_pd(a.v, b.v)}; }
inline D2 smin(D2 a, D2 b) { return {_mm_min_pd(b.v, a.v)}; }
inline D2 smax(D2 a, D2 b) { return {_mm_max_pd(b.v, a.v)}; }
inline D2 gt(D2 a, D2 b) { return {_mm_cmpgt_pd(a.v, b.v)}; }
inline D2 ge(D2 a, D2 b) { return {_mm_cmpge_pd(a.v, b.v)}; }
inline D2 eq(D2 a, D2 b) { return {_mm_cmpeq_pd(a.v, b.v)}; }
inline D2 mand(D2 a, D2 b) { return {_mm_and_pd(a.v, b.v)}; }
inline D2 mnot(D2 a) { return {_mm_xor_pd(a.v, _mm_castsi128_pd(_mm_set1_epi64x(-1)))}; }
inline D2 sel(D2 m, D2 a, D2 b) { return {_mm_or_pd(_mm_and_pd(m.v, a.v), _mm_andnot_pd(m.v, b.v))}; }
inline int bits(D2 m) { return _mm_movemask_pd(m.v); }
inline void put(double* x, D2 v) { _mm_storeu_pd(x, v.v); }
#endif
#ifdef MDSD_AVX2
inline D4 ldiv(D4 a, D4 b) { return {_mm256_div_pd(a.v, b.v)}; }
inline D4 smin(D4 a, D4 b) { return {_mm256_min_pd(b.v, a.v)}; }
inline D4 smax(D4 a, D4 b) { return {_mm256_max_pd(b.v, a.v)}; }
inline D4 gt(D4 a, D4 b) { return {_mm256_cmp_pd(a.v, b.v, _CMP_GT_OQ)}; }
inline D4 ge(D4 a, D4 b) { return {_mm256_cmp_pd(a.v, b.v, _CMP_GE_OQ)}; }
inline D4 eq(D4 a, D4 b) { return {_mm256_cmp_pd(a.v, b.v, _CMP_EQ_OQ)}; }
inline D4 mand(D4 a, D4 b) { return {_mm256_and_pd(a.v, b.v)}; }
inline D4 mnot(D4 a) { return {_mm256_xor_pd(a.v, _mm256_castsi256_pd(_mm256_set1_epi64x(-1)))}; }
inline D4 sel(D4 m, D4 a, D4 b) { return {_mm256_blendv_pd(b.v, a.v, m.v)}; }
inline int bits(D4 m) { return _mm256_movemask_pd(m.v); }
inline void put(double* x, D4 v) { _mm256_storeu_pd(x, v.v); }
#endif

template <class L>
constexpr int kLanes = sizeof(L) / sizeof(double);
template <class L>
L splat(double a) {
    return lane_splat<L>(a);
}
template <class L>
L load(const double* x) {
    return lane_load<L>(x);
}

// G rows of V tokens (float or double) and the divisors that normalise them (Div: x / s, as
// as_pair's rows; without Div the rows are already normalised and read as they are).
template <class T, int G>
struct Group {
    const T* p[G];
    const T* q[G];
    double sp[G], sq[G];
};

namespace detail {
// Row-major block x[r][0, G) of G rows -> column-major c[k] = (x[0][k], ..., x[G-1][k]).
inline void transpose(double* x, double* c) { *c = *x; }
#ifdef MDSD_SSE2
inline void transpose(D2* x, D2* c) {
    c[0].v = _mm_unpacklo_pd(x[0].v, x[1].v);
    c[1].v = _mm_unpackhi_pd(x[0].v, x[1].v);
}
inline D2 widen(const double* x, D2) { return {_mm_loadu_pd(x)}; }
inline D2 widen(const float* x, D2) {
    return {_mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x))))};
}
#endif
#ifdef MDSD_AVX2
inline void transpose(D4* x, D4* c) {
    const __m256d t0 = _mm256_unpacklo_pd(x[0].v, x[1].v), t1 = _mm256_unpackhi_pd(x[0].v, x[1].v);
    const __m256d t2 = _mm256_unpacklo_pd(x[2].v, x[3].v), t3 = _mm256_unpackhi_pd(x[2].v, x[3].v);
    c[0].v = _mm256_permute2f128_pd(t0, t2, 0x20);
    c[1].v = _mm256_permute2f128_pd(t1, t3, 0x20);
    c[2].v = _mm256_permute2f128_pd(t0, t2, 0x31);
    c[3].v = _mm256_permute2f128_pd(t1, t3, 0x31);
}
inline D4 widen(const double* x, D4) { return {_mm256_loadu_pd(x)}; }
inline D4 widen(const float* x, D4) { return {_mm256_cvtps_pd(_mm_loadu_ps(x))}; }
#endif
template <class T>
double widen(const T* x, double) {
    return static_cast<double>(*x);
}
}  // namespace detail

// f(p, q, i) for every token i in order, p and q the G rows' normalised values at i, one lane each.
// Blocks of G tokens are read row by row, divided (row-major) and transposed; rowp / rowq, when
// given, receive each row's normalised values row-major (rowp[r][i]).
template <class L, bool Div, class T, class F>
void for_tokens(const Group<T, kLanes<L>>& g, int64_t V, F&& f, double* const* rowp = nullptr,
                double* const* rowq = nullptr) {
    constexpr int G = kLanes<L>;
    int64_t i = 0;
    for (; i + G <= V; i += G) {
        L x[G], y[G], cp[G], cq[G];
        for (int r = 0; r < G; ++r) {
            x[r] = detail::widen(g.p[r] + i, L{});
            y[r] = detail::widen(g.q[r] + i, L{});
            if constexpr (Div) {
                x[r] = ldiv(x[r], splat<L>(g.sp[r]));
                y[r] = ldiv(y[r], splat<L>(g.sq[r]));
            }
            if (rowp) {
                put(rowp[r] + i, x[r]);
                put(rowq[r] + i, y[r]);
            }
        }
        detail::transpose(x, cp);
        detail::transpose(y, cq);
        for (int k = 0; k < G; ++k) f(cp[k], cq[k], i + k);
    }
    for (; i < V; ++i) {  // the tail, one token at a time
        double a[G], b[G];
        for (int r = 0; r < G; ++r) {
            a[r] = static_cast<double>(g.p[r][i]);
            b[r] = static_cast<double>(g.q[r][i]);
            if constexpr (Div) {
                a[r] /= g.sp[r];
                b[r] /= g.sq[r];
            }
            if (rowp) {
                rowp[r][i] = a[r];
                rowq[r][i] = b[r];
            }
        }
        f(load<L>(a), load<L>(b), i);
    }
}

// The m tokens scheme.hpp's top_tokens picks (largest q, lowest id on ties) for each lane's row,
// by one scan keeping the best m so far. A token is looked at only when its q exceeds the lane's
// threshold: 0 while fewer than m are kept (any q > 0 enters), then the m-th best q (a later id
// enters only with a strictly larger q). support: the tokens with q > 0.
template <class L>
struct TopScan {
    static constexpr int G = kLanes<L>;
    int m = 0;
    std::vector<std::pair<double, int32_t>> top[G];  // (q, id), best first
    double thr[G];
    L thrv{}, count{};
    void start(int m_) {
        m = m_;
        for (int r = 0; r < G; ++r) {
            top[r].clear();
            thr[r] = m > 0 ? 0.0 : std::numeric_limits<double>::infinity();
        }
        thrv = load<L>(thr);
        count = splat<L>(0.0);
    }
    void see(L q, int64_t i) {
        count = count + sel(gt(q, splat<L>(0.0)), splat<L>(1.0), splat<L>(0.0));
        const int hit = bits(gt(q, thrv));
        if (hit == 0) return;
        double v[G];
        put(v, q);
        for (int r = 0; r < G; ++r)
            if (hit >> r & 1) add(r, v[r], static_cast<int32_t>(i));
        thrv = load<L>(thr);
    }
    void add(int r, double x, int32_t id) {
        auto& t = top[r];
        auto better = [](const std::pair<double, int32_t>& a, const std::pair<double, int32_t>& b) {
            return a.first > b.first || (a.first == b.first && a.second < b.second);
        };
        const std::pair<double, int32_t> e{x, id};
        if (static_cast<int>(t.size()) == m) t.pop_back();  // x beats the last (q > thr)
        t.insert(std::upper_bound(t.begin(), t.end(), e, better), e);
        thr[r] = static_cast<int>(t.size()) < m ? 0.0 : t.back().first;
    }
    // Lane r's ids in increasing order, and its support.
    int64_t finish(int r, std::vector<int32_t>& ids) const {
        ids.clear();
        for (const auto& e : top[r]) ids.push_back(e.second);
        std::sort(ids.begin(), ids.end());
        double c[G];
        put(c, count);
        return static_cast<int64_t>(c[r]);
    }
};

// Per lane, whether token i is one of the lane's marked ids (sorted): a cursor per lane.
template <class L>
struct Marks {
    static constexpr int G = kLanes<L>;
    const std::vector<int32_t>* ids[G];
    std::size_t at[G];
    double next[G];
    L nextv{};
    void start() {
        for (int r = 0; r < G; ++r) {
            at[r] = 0;
            next[r] = ids[r]->empty() ? -1.0 : (*ids[r])[0];
        }
        nextv = load<L>(next);
    }
    auto at_token(int64_t i) {  // the mask of lanes marking i; moves their cursors on
        const auto m = eq(splat<L>(static_cast<double>(i)), nextv);
        if (bits(m) != 0) {
            for (int r = 0; r < G; ++r)
                if (next[r] == static_cast<double>(i)) {
                    ++at[r];
                    next[r] = at[r] < ids[r]->size() ? (*ids[r])[at[r]] : -1.0;
                }
            nextv = load<L>(next);
        }
        return m;
    }
};

}  // namespace mdsd::verif::direct::rows
