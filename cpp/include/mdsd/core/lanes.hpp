// Two doubles in one SSE2 register (D2), four in one AVX2 register (D4) and the scalar double
// behind one interface, so a kernel's per-element formula is written once as a template over the
// lane type and each lane rounds as a double would: the vector loop and its scalar tail (or a build
// without SSE2) give the same bits.
//
// MDSD_SSE2: the kernels' vector steps (x86-64 always has SSE2). MDSD_NO_SSE2 builds the portable
// code on x86 too (the *_scalar.cpp tests: the same bits). MDSD_AVX2: the build compiled for AVX2
// (-mavx2: mdsd_fast._core_avx2, loaded at import on CPUs that have it; python/mdsd_fast/_isa.py).
// No FMA in either: -ffp-contract=off, and -mavx2 does not enable it.
#pragma once

#include <algorithm>
#include <cstdint>

#if (defined(__SSE2__) || defined(_M_X64)) && !defined(MDSD_NO_SSE2)
#include <emmintrin.h>
#define MDSD_SSE2 1
#if defined(__AVX2__)
#include <immintrin.h>
#define MDSD_AVX2 1
#endif
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
#ifdef MDSD_AVX2
struct D4 {
    __m256d v;
};
inline D4 operator+(D4 a, D4 b) { return {_mm256_add_pd(a.v, b.v)}; }
inline D4 operator-(D4 a, D4 b) { return {_mm256_sub_pd(a.v, b.v)}; }
inline D4 operator*(D4 a, D4 b) { return {_mm256_mul_pd(a.v, b.v)}; }
inline D4 lane_max(D4 a, D4 b) { return {_mm256_max_pd(a.v, b.v)}; }
inline D4 lane_min(D4 a, D4 b) { return {_mm256_min_pd(a.v, b.v)}; }
template <>
inline D4 lane_load<D4>(const double* x) {
    return {_mm256_loadu_pd(x)};
}
inline void lane_store(double* x, D4 v) { _mm256_storeu_pd(x, v.v); }
inline D4 lane_if_gt(D4 y, double thr, D4 a, D4 b) {
    const __m256d m = _mm256_cmp_pd(y.v, _mm256_set1_pd(thr), _CMP_GT_OQ);
    return {_mm256_blendv_pd(b.v, a.v, m)};
}
inline double lane_hmax(D4 a) {
    const __m128d m = _mm_max_pd(_mm256_castpd256_pd128(a.v), _mm256_extractf128_pd(a.v, 1));
    return std::max(_mm_cvtsd_f64(m), _mm_cvtsd_f64(_mm_unpackhi_pd(m, m)));
}
template <>
inline D4 lane_splat<D4>(double a) {
    return {_mm256_set1_pd(a)};
}
inline void add_in_order(double& acc, D4 a) {  // lane 0 first, as D2's
    add_in_order(acc, D2{_mm256_castpd256_pd128(a.v)});
    add_in_order(acc, D2{_mm256_extractf128_pd(a.v, 1)});
}
#endif
inline void add_in_order(double& acc, double a) { acc += a; }

// f(T{}, g) on every node g < G, four at a time (T = D4) with AVX2, two (T = D2) with SSE2, one
// (T = double) for the rest: the same bits per node either way.
template <class F>
inline void lane_sweep(int64_t G, F&& f) {
    int64_t g = 0;
#ifdef MDSD_AVX2
    for (; g + 4 <= G; g += 4) f(D4{}, g);
#endif
#ifdef MDSD_SSE2
    for (; g + 2 <= G; g += 2) f(D2{}, g);
#endif
    for (; g < G; ++g) f(0.0, g);
}

}  // namespace mdsd
