// Input validation of a probability row (python/mdsd_fast/inputs/rules.py states the rules): finite,
// non-negative, and the row sum: the exact sum of the entries, rounded once (exact_sum.hpp). A
// rounded exact sum does not depend on the order or grouping of its terms, so dense rows (summed
// in vector lanes), sparse rows (their positive entries only) and the fused engine kernel
// (verifiers/planless/batch.hpp) all normalise alike, bit for bit, and the dense pass is not held
// to one add chain (docs/theory/lp.md §7.4).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "mdsd/core/exact_sum.hpp"
#include "mdsd/core/lanes.hpp"

namespace mdsd::validate {

enum Status { kOk = 0, kNonFinite = 1, kNegative = 2, kOffSum = 3 };

namespace detail {

constexpr double kBig = std::numeric_limits<double>::max();

// Lanes of PairSum over a row, kWidth entries a step (eight in two AVX2 registers, four in two SSE2
// registers, or four doubles), and whether every entry seen lies in [0, DBL_MAX] (NaN fails). Only
// then are the lanes a valid pair sum. Two registers: two chains of dependent adds in flight.
struct Lanes {
#ifdef MDSD_AVX2
    static constexpr int kWidth = 8;
    PairSum<D4> s[2] = {{{_mm256_setzero_pd()}, {_mm256_setzero_pd()}}, {{_mm256_setzero_pd()}, {_mm256_setzero_pd()}}};
    __m256d ok = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    static __m256d load4(const double* x) { return _mm256_loadu_pd(x); }
    static __m256d load4(const float* x) { return _mm256_cvtps_pd(_mm_loadu_ps(x)); }
    template <class T>
    void add(const T* x) {
        const __m256d zero = _mm256_setzero_pd(), big = _mm256_set1_pd(kBig);
        const __m256d a = load4(x), b = load4(x + 4);
        const __m256d in_a = _mm256_and_pd(_mm256_cmp_pd(a, zero, _CMP_GE_OQ), _mm256_cmp_pd(a, big, _CMP_LE_OQ));
        const __m256d in_b = _mm256_and_pd(_mm256_cmp_pd(b, zero, _CMP_GE_OQ), _mm256_cmp_pd(b, big, _CMP_LE_OQ));
        ok = _mm256_and_pd(ok, _mm256_and_pd(in_a, in_b));
        s[0].add({a});
        s[1].add({b});
    }
    bool in_range() const { return _mm256_movemask_pd(ok) == 15; }
#elif defined(MDSD_SSE2)
    static constexpr int kWidth = 4;
    PairSum<D2> s[2] = {{{_mm_setzero_pd()}, {_mm_setzero_pd()}}, {{_mm_setzero_pd()}, {_mm_setzero_pd()}}};
    __m128d ok = _mm_castsi128_pd(_mm_set1_epi64x(-1));
    static __m128d load2(const double* x) { return _mm_loadu_pd(x); }
    static __m128d load2(const float* x) {
        return _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x))));
    }
    template <class T>
    void add(const T* x) {
        const __m128d zero = _mm_setzero_pd(), big = _mm_set1_pd(kBig);
        const __m128d a = load2(x), b = load2(x + 2);
        ok = _mm_and_pd(ok, _mm_and_pd(_mm_and_pd(_mm_cmpge_pd(a, zero), _mm_cmple_pd(a, big)),
                                       _mm_and_pd(_mm_cmpge_pd(b, zero), _mm_cmple_pd(b, big))));
        s[0].add({a});
        s[1].add({b});
    }
    bool in_range() const { return _mm_movemask_pd(ok) == 3; }
#else
    static constexpr int kWidth = 4;
    PairSum<double> s[4] = {{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}};
    bool ok = true;
    template <class T>
    void add(const T* x) {
        for (int j = 0; j < 4; ++j) {
            const double v = x[j];
            ok &= v >= 0.0 && v <= kBig;
            s[j].add(v);
        }
    }
    bool in_range() const { return ok; }
#endif
    // Every lane's (hi, lo) into h[0, kWidth), l[0, kWidth): lane j sums entry j of each step.
    void lanes(double* h, double* l) const {
        constexpr int w = sizeof(s[0].hi) / sizeof(double);  // lanes per register
        for (int r = 0; r < kWidth / w; ++r) {
            lane_store(h + r * w, s[r].hi);
            lane_store(l + r * w, s[r].lo);
        }
    }
};

// The rounded exact sum of x[0, V), all in [0, DBL_MAX], from its lanes (c adds each) and the
// tail x[W c, V) (W = Lanes::kWidth): the lanes' double-double sum decides the rounding unless the true sum lies within
// its error bound of a rounding midpoint (about never), and then ExactSum does. inf if it overflows.
template <class T>
double finish(const Lanes& ln, const T* x, int64_t V) {
    constexpr int W = Lanes::kWidth;
    const int64_t c = V / W;
    DdSum d;
    double h[W], l[W];
    ln.lanes(h, l);
    for (int j = 0; j < W; ++j) d.add_pair(h[j], l[j], pair_error(h[j], c));
    for (int64_t i = W * c; i < V; ++i) d.add(static_cast<double>(x[i]));
    if (!(d.hi <= kBig)) return std::numeric_limits<double>::infinity();
    double r;
    if (d.rounded(r)) return r;
    ExactSum e;
    for (int64_t i = 0; i < V; ++i) e.add(static_cast<double>(x[i]));
    return e.value();
}

template <class T>
bool tail_in_range(const T* x, int64_t V) {
    bool ok = true;
    for (int64_t i = V / Lanes::kWidth * Lanes::kWidth; i < V; ++i) {
        const double v = x[i];
        ok &= v >= 0.0 && v <= kBig;
    }
    return ok;
}

}  // namespace detail

// The row sum of x[0, V) (T float or double; a float is widened exactly) and the first broken
// rule: status and, for a negative entry, its value. The sum is NaN unless status is kOk.
template <class T>
inline double row_sum(const T* x, int64_t V, int& status, double& value) {
    detail::Lanes ln;
    for (int64_t i = 0; i + detail::Lanes::kWidth <= V; i += detail::Lanes::kWidth) ln.add(x + i);
    if (ln.in_range() && detail::tail_in_range(x, V)) return detail::finish(ln, x, V);
    for (int64_t i = 0; i < V; ++i) {
        const double v = x[i];
        if (!std::isfinite(v)) {
            status = kNonFinite;
            break;
        }
        if (v < 0.0) {
            status = kNegative;
            value = v;
            break;
        }
    }
    return std::numeric_limits<double>::quiet_NaN();
}

// row_sum of two rows in one pass, then the sum rule (|sum - 1| <= tol). A broken rule sends the
// row to row_sum, which names the first one. Returns false then (status_x / status_y set).
template <class T>
inline bool pair_sums(const T* x, const T* y, int64_t V, double tol, double sums[2], int status[2], double value[2]) {
    detail::Lanes lx, ly;
    for (int64_t i = 0; i + detail::Lanes::kWidth <= V; i += detail::Lanes::kWidth) {
        lx.add(x + i);
        ly.add(y + i);
    }
    status[0] = status[1] = kOk;
    if (lx.in_range() && ly.in_range() && detail::tail_in_range(x, V) && detail::tail_in_range(y, V)) {
        sums[0] = detail::finish(lx, x, V);
        sums[1] = detail::finish(ly, y, V);
    } else {
        sums[0] = row_sum(x, V, status[0], value[0]);
        sums[1] = row_sum(y, V, status[1], value[1]);
    }
    for (int k = 0; k < 2; ++k)
        if (status[k] == kOk && !(std::fabs(sums[k] - 1.0) <= tol)) {
            status[k] = kOffSum;
            value[k] = sums[k];
        }
    return status[0] == kOk && status[1] == kOk;
}

}  // namespace mdsd::validate
