// Two doubles in one SSE2 register (D2) and the scalar double behind one interface, so a kernel's
// per-element formula is written once as a template over the lane type and each lane rounds as a
// double would: the vector loop and its scalar tail (or a build without SSE2) give the same bits.
//
// MDSD_SSE2: the kernels' vector steps (x86-64 always has SSE2). MDSD_NO_SSE2 builds the portable
// code on x86 too (the *_scalar.cpp tests: the same bits).
#pragma once

#include <algorithm>
#include <cstdint>

#if (defined(__SSE2__) || defined(_M_X64)) && !defined(MDSD_NO_SSE2)
#include <emmintrin.h>
#define MDSD_SSE2 1
#endif

namespace mdsd {

inline double lane_max(double a, double b) { return std::max(a, b); }
inline double lane_min(double a, double b) { return std::min(a, b); }
template <class T>
T lane_load(const double* x);
template <>
inline double lane_load<double>(const double* x) {
    return *x;
}
inline void lane_store(double* x, double v) { *x = v; }
inline double lane_if_gt(double y, double thr, double a, double b) { return y > thr ? a : b; }  // per lane
inline double lane_hmax(double a) { return a; }
template <class T>
T lane_splat(double a);
template <>
inline double lane_splat<double>(double a) {
    return a;
}

#ifdef MDSD_SSE2
struct D2 {
    __m128d v;
};
inline D2 operator+(D2 a, D2 b) { return {_mm_add_pd(a.v, b.v)}; }
inline D2 operator-(D2 a, D2 b) { return {_mm_sub_pd(a.v, b.v)}; }
inline D2 operator*(D2 a, D2 b) { return {_mm_mul_pd(a.v, b.v)}; }
inline D2 lane_max(D2 a, D2 b) { return {_mm_max_pd(a.v, b.v)}; }
inline D2 lane_min(D2 a, D2 b) { return {_mm_min_pd(a.v, b.v)}; }
template <>
inline D2 lane_load<D2>(const double* x) {
    return {_mm_loadu_pd(x)};
}
inline void lane_store(double* x, D2 v) { _mm_storeu_pd(x, v.v); }
inline D2 lane_if_gt(D2 y, double thr, D2 a, D2 b) {
    const __m128d m = _mm_cmpgt_pd(y.v, _mm_set1_pd(thr));
    return {_mm_or_pd(_mm_and_pd(m, a.v), _mm_andnot_pd(m, b.v))};
}
inline double lane_hmax(D2 a) { return std::max(_mm_cvtsd_f64(a.v), _mm_cvtsd_f64(_mm_unpackhi_pd(a.v, a.v))); }
template <>
inline D2 lane_splat<D2>(double a) {
    return {_mm_set1_pd(a)};
}
// acc += each lane, lane 0 first: a sum in node order, whichever lane type carried the nodes.
inline void add_in_order(double& acc, D2 a) {
    acc += _mm_cvtsd_f64(a.v);
    acc += _mm_cvtsd_f64(_mm_unpackhi_pd(a.v, a.v));
}
#endif
inline void add_in_order(double& acc, double a) { acc += a; }

// f(T{}, g) on every node g < G, two at a time (T = D2) with SSE2, one (T = double) for the rest:
// the same bits per node either way.
template <class F>
inline void lane_sweep(int64_t G, F&& f) {
    int64_t g = 0;
#ifdef MDSD_SSE2
    for (; g + 2 <= G; g += 2) f(D2{}, g);
#endif
    for (; g < G; ++g) f(0.0, g);
}

}  // namespace mdsd
