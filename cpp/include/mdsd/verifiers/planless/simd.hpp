// The hot passes of the direct routes (planless/rrs.hpp, planless/kseq.hpp, planless/batch.hpp) in SSE2, which
// every x86-64 target has: two doubles per register and two registers of partial sums, so a pass
// runs at the speed of the cache rather than of a branch or an add chain. The compilers do not
// vectorise these loops themselves (a select between three values, reductions kept in order under
// IEEE semantics). Elsewhere a scalar loop computes the same sums in the same four lanes. The lane
// order only changes roundings (each sum is accurate to a few ulps either way).
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define MDSD_DIRECT_SSE2 1
#endif

namespace mdsd::verif::direct::simd {

// D_T(x) = (p(x) - T q(x))_+; a token with q = 0 keeps p (also at T = inf).
inline double d_at(double p, double q, double T) { return q > 0.0 ? std::max(0.0, p - T * q) : p; }

// p - min(q, p * inv_rho) * s, clipped at 0: the K-SEQ residual's weight (verifiers/kseq.hpp).
inline double kseq_w(double p, double q, double inv_rho, double s) {
    return std::max(0.0, p - std::min(q, p * inv_rho) * s);
}

#ifdef MDSD_DIRECT_SSE2
inline double hsum(__m128d a, __m128d b) {
    const __m128d s = _mm_add_pd(a, b);
    return _mm_cvtsd_f64(s) + _mm_cvtsd_f64(_mm_unpackhi_pd(s, s));
}
inline __m128d load2(const double* x) { return _mm_loadu_pd(x); }
inline __m128d load2(const float* x) {
    return _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x))));
}
inline __m128d d_at2(__m128d p, __m128d q, __m128d T) {
    const __m128d m = _mm_max_pd(_mm_sub_pd(p, _mm_mul_pd(T, q)), _mm_setzero_pd());  // NaN (inf * 0) -> 0
    const __m128d pos = _mm_cmpgt_pd(q, _mm_setzero_pd());
    return _mm_or_pd(_mm_and_pd(pos, m), _mm_andnot_pd(pos, p));
}
#endif

// The two-entry form of sum4's term (ignored without SSE2).
#ifdef MDSD_DIRECT_SSE2
#define MDSD_DIRECT_LAMBDA2(i, expr) [&](int64_t i) { return expr; }
#else
#define MDSD_DIRECT_LAMBDA2(i, expr) 0
#endif

// Sum over i of f2 (two entries at a time, SSE2) or f1 (one entry), in four lanes.
template <class F1, class F2>
double sum4(int64_t V, F1 f1, [[maybe_unused]] F2 f2) {
    int64_t i = 0;
    double tail = 0.0;
#ifdef MDSD_DIRECT_SSE2
    __m128d a = _mm_setzero_pd(), b = _mm_setzero_pd();
    for (; i + 4 <= V; i += 4) {
        a = _mm_add_pd(a, f2(i));
        b = _mm_add_pd(b, f2(i + 2));
    }
    const double head = hsum(a, b);
#else
    double m[4] = {0.0, 0.0, 0.0, 0.0};
    for (; i + 4 <= V; i += 4)
        for (int j = 0; j < 4; ++j) m[j] += f1(i + j);
    const double head = (m[0] + m[2]) + (m[1] + m[3]);
#endif
    for (; i < V; ++i) tail += f1(i);
    return head + tail;
}

inline double sum(const double* x, int64_t V) {
#ifdef MDSD_DIRECT_SSE2
    return sum4(V, [&](int64_t i) { return x[i]; }, [&](int64_t i) { return _mm_loadu_pd(x + i); });
#else
    return sum4(V, [&](int64_t i) { return x[i]; }, 0);
#endif
}

inline double mass(const double* p, const double* q, int64_t V, double T) {
#ifdef MDSD_DIRECT_SSE2
    const __m128d t2 = _mm_set1_pd(T);
    return sum4(
        V, [&](int64_t i) { return d_at(p[i], q[i], T); },
        [&](int64_t i) { return d_at2(_mm_loadu_pd(p + i), _mm_loadu_pd(q + i), t2); });
#else
    return sum4(V, [&](int64_t i) { return d_at(p[i], q[i], T); }, 0);
#endif
}

inline double kseq_mass(const double* p, const double* q, int64_t V, double inv_rho, double s) {
#ifdef MDSD_DIRECT_SSE2
    const __m128d ir = _mm_set1_pd(inv_rho), s2 = _mm_set1_pd(s);
    return sum4(
        V, [&](int64_t i) { return kseq_w(p[i], q[i], inv_rho, s); },
        [&](int64_t i) {
            const __m128d p2 = _mm_loadu_pd(p + i), q2 = _mm_loadu_pd(q + i);
            const __m128d m = _mm_mul_pd(_mm_min_pd(q2, _mm_mul_pd(p2, ir)), s2);
            return _mm_max_pd(_mm_sub_pd(p2, m), _mm_setzero_pd());
        });
#else
    return sum4(V, [&](int64_t i) { return kseq_w(p[i], q[i], inv_rho, s); }, 0);
#endif
}

// po = p * ip, qo = q * iq (T = float or double input); sums = the sums of po, of qo and of
// min(po, qo) (K-SEQ's beta(1)).
template <class T>
void scale_pair(const T* p, const T* q, int64_t V, double ip, double iq, double* po, double* qo, double sums[3]) {
    int64_t i = 0;
    double sp = 0.0, sq = 0.0, sm = 0.0;
#ifdef MDSD_DIRECT_SSE2
    const __m128d a = _mm_set1_pd(ip), b = _mm_set1_pd(iq);
    __m128d s1 = _mm_setzero_pd(), s2 = _mm_setzero_pd(), s3 = _mm_setzero_pd();
    for (; i + 2 <= V; i += 2) {
        const __m128d x = _mm_mul_pd(load2(p + i), a), y = _mm_mul_pd(load2(q + i), b);
        _mm_storeu_pd(po + i, x);
        _mm_storeu_pd(qo + i, y);
        s1 = _mm_add_pd(s1, x);
        s2 = _mm_add_pd(s2, y);
        s3 = _mm_add_pd(s3, _mm_min_pd(x, y));
    }
    sp = hsum(s1, _mm_setzero_pd());
    sq = hsum(s2, _mm_setzero_pd());
    sm = hsum(s3, _mm_setzero_pd());
#endif
    for (; i < V; ++i) {
        po[i] = static_cast<double>(p[i]) * ip;
        qo[i] = static_cast<double>(q[i]) * iq;
        sp += po[i];
        sq += qo[i];
        sm += std::min(po[i], qo[i]);
    }
    sums[0] = sp;
    sums[1] = sq;
    sums[2] = sm;
}

}  // namespace mdsd::verif::direct::simd
