// "kseq" without a plan (the engine case, see planless/rrs.hpp): K-SEQ's tests and residual (verifiers/kseq.hpp)
// need rho* and beta(rho*) only, and those need no sort. rho* lies in [1, n], and for rho in a
// bracket [lo, hi] beta(rho) = sum_x min(q, p/rho) = G + L/rho + sum_{x in S} min(q(x), p(x)/rho),
// where G sums q over the tokens with p >= hi q, L sums p over those with p < lo q, and S holds the
// tokens with lo <= p/q < hi. One pass over the row finds G, L and S for [1, n]; then, as in a
// quickselect, each round evaluates h at kGrid points inside the bracket over S alone, keeps the
// sub-bracket where h changes sign and moves the tokens that left it into G or L. Once S is small,
// verifiers/kseq.hpp's bisection ends on the exact formula.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/verifiers/planless/rrs.hpp"

namespace mdsd::verif::direct {

constexpr int kGrid = 3;            // interior points per round: the bracket shrinks 4x
constexpr int64_t kFewTokens = 64;  // tokens in the bracket few enough to bisect on
constexpr int kMaxRounds = 60;      // then bisect with whatever is left (ties at one ratio)

inline double kseq_h(double beta, double rho, int n) { return 1.0 - ipow(1.0 - beta, n) - rho * beta; }

// The tokens of S as (p, q) pairs, kept compact so that later rounds stay in cache: the first m
// entries of sp, sq (the vectors only grow, so a thread's rows reuse them).
struct KseqBracket {
    std::vector<double> sp, sq;
    std::size_t m = 0;
    double G = 0.0, L = 0.0;
    // sum over S of min(q, p / rho)
    double s_of(double rho) const {
        double s = 0.0;
        for (std::size_t j = 0; j < m; ++j) s += std::min(sq[j], sp[j] / rho);
        return s;
    }
    double beta(double rho) const { return G + L / rho + s_of(rho); }
    // beta at the kGrid points r, in lanes of partial sums with 1/r (they only steer the bracket):
    // one read of S for all the points, two lanes of two registers each.
    void beta_grid(const double* r, double* out) const {
        double inv[kGrid], tail[kGrid];
        for (int k = 0; k < kGrid; ++k) {
            inv[k] = 1.0 / r[k];
            tail[k] = 0.0;
        }
        const double* p = sp.data();
        const double* q = sq.data();
        const int64_t M = static_cast<int64_t>(m);
        int64_t j = 0;
#ifdef MDSD_DIRECT_SSE2
        __m128d iv[kGrid], a[kGrid], b[kGrid];
        for (int k = 0; k < kGrid; ++k) {
            iv[k] = _mm_set1_pd(inv[k]);
            a[k] = b[k] = _mm_setzero_pd();
        }
        for (; j + 4 <= M; j += 4) {
            const __m128d p0 = _mm_loadu_pd(p + j), q0 = _mm_loadu_pd(q + j);
            const __m128d p1 = _mm_loadu_pd(p + j + 2), q1 = _mm_loadu_pd(q + j + 2);
            for (int k = 0; k < kGrid; ++k) {
                a[k] = _mm_add_pd(a[k], _mm_min_pd(q0, _mm_mul_pd(p0, iv[k])));
                b[k] = _mm_add_pd(b[k], _mm_min_pd(q1, _mm_mul_pd(p1, iv[k])));
            }
        }
        for (int k = 0; k < kGrid; ++k) tail[k] = simd::hsum(a[k], b[k]);
#endif
        for (; j < M; ++j)
            for (int k = 0; k < kGrid; ++k) tail[k] += std::min(q[j], p[j] * inv[k]);
        for (int k = 0; k < kGrid; ++k) out[k] = G + L / r[k] + tail[k];
    }
    // From the tokens (p, q) of a row or of S itself (in place): keep those with a <= p/q < b, the
    // others to G (above) or L (below). Branch-free: about half the tokens move in a round.
    void narrow(const double* p, const double* q, std::size_t count, double a, double b) {
        std::size_t k = 0;
        double g = 0.0, l = 0.0;
        double* op = sp.data();
        double* oq = sq.data();
        std::size_t j = 0;
#ifdef MDSD_DIRECT_SSE2
        const __m128d a2 = _mm_set1_pd(a), b2 = _mm_set1_pd(b);
        __m128d g2 = _mm_setzero_pd(), l2 = _mm_setzero_pd();
        for (; j + 2 <= count; j += 2) {  // the scalar loop's tests, two tokens at a time
            const __m128d p2 = _mm_loadu_pd(p + j), q2 = _mm_loadu_pd(q + j);
            const __m128d above = _mm_cmpge_pd(p2, _mm_mul_pd(b2, q2));
            const __m128d below = _mm_cmplt_pd(p2, _mm_mul_pd(a2, q2));
            g2 = _mm_add_pd(g2, _mm_and_pd(above, q2));
            l2 = _mm_add_pd(l2, _mm_and_pd(below, p2));
            const int in = ~_mm_movemask_pd(_mm_or_pd(above, below)) & 3;
            _mm_store_sd(op + k, p2);
            _mm_store_sd(oq + k, q2);
            k += in & 1;
            _mm_storeh_pd(op + k, p2);
            _mm_storeh_pd(oq + k, q2);
            k += in >> 1;
        }
        g = simd::hsum(g2, _mm_setzero_pd());
        l = simd::hsum(l2, _mm_setzero_pd());
#endif
        for (; j < count; ++j) {
            const double pj = p[j], qj = q[j];
            const bool above = pj >= b * qj, below = pj < a * qj;  // q = 0 is above and adds nothing
            g += above ? qj : 0.0;
            l += below ? pj : 0.0;
            op[k] = pj;
            oq[k] = qj;
            k += !above && !below;
        }
        G += g;
        L += l;
        m = k;
    }
    // G, L and S of the bracket [lo, hi] from a whole row.
    void start(const double* p, const double* q, int64_t V, double lo, double hi) {
        if (sp.size() < static_cast<std::size_t>(V)) {
            sp.resize(static_cast<std::size_t>(V));
            sq.resize(static_cast<std::size_t>(V));
        }
        G = L = 0.0;
        narrow(p, q, static_cast<std::size_t>(V), lo, hi);
    }
};

// rho* and beta(rho*) of verifiers/kseq.hpp's definition for one row, given beta1 = beta(1). With g(b) =
// 1 - (1 - b)^n, g(b)/b falls as b grows and beta1/rho <= beta(rho) <= beta1, so h > 0 below
// g(beta1)/beta1 and h <= 0 from beta1/(1 - (1 - beta1)^(1/n)) on: the first bracket, before any
// pass (widened by 1e-12 against the roundings of beta1).
inline void kseq_rho(const double* p, const double* q, int64_t V, int n, double beta1, KseqBracket& br, double& rho,
                     double& beta) {
    if (n == 1 || kseq_h(beta1, 1.0, n) <= 0.0) {
        rho = 1.0;
        beta = beta1;
        return;
    }
    const double up = beta1 / -std::expm1(std::log1p(-beta1) / n);
    double lo = std::max(1.0, (1.0 - ipow(1.0 - beta1, n)) / beta1 * (1.0 - 1e-12));
    double hi = std::min(static_cast<double>(n), up * (1.0 + 1e-12));
    if (!(lo < hi)) {  // beta1 at an extreme: the whole range
        lo = 1.0;
        hi = static_cast<double>(n);
    }
    br.start(p, q, V, lo, hi);
    for (int round = 0; round<kMaxRounds&& static_cast<int64_t>(br.m)> kFewTokens; ++round) {
        double r[kGrid], bg[kGrid];
        for (int k = 0; k < kGrid; ++k) r[k] = lo + (hi - lo) * (k + 1) / (kGrid + 1);
        br.beta_grid(r, bg);
        double a = lo, b = hi;  // the first grid point with h <= 0 (h(n) <= 0 in exact arithmetic)
        for (int k = 0; k < kGrid; ++k) {
            if (kseq_h(bg[k], r[k], n) <= 0.0) {
                b = r[k];
                break;
            }
            a = r[k];
        }
        if (!(a < b)) break;  // the bracket is down to adjacent doubles
        br.narrow(br.sp.data(), br.sq.data(), br.m, a, b);
        lo = a;
        hi = b;
    }
    for (int it = 0; it < 200 && hi - lo > 4e-16 * hi; ++it) {
        const double mid = 0.5 * (lo + hi);
        if (kseq_h(br.beta(mid), mid, n) <= 0.0) hi = mid;
        else lo = mid;
    }
    rho = hi;
    beta = br.beta(hi);
}

// p_res of verifiers/kseq.hpp as an IdResidual weight: p - min(q, p/rho) alpha/beta, clipped at 0.
struct KseqRes {
    double inv_rho, s;
    double operator()(double p, double q) const { return simd::kseq_w(p, q, inv_rho, s); }
    double sum(const double* p, const double* q, int64_t len) const { return simd::kseq_mass(p, q, len, inv_rho, s); }
};

// The walk of "kseq" on tuple t of n i.i.d. drafts, as Kseq::walk with rho* found here.
template <class Vis>
void walk_kseq(const double* p, const double* q, int64_t V, const int32_t* t, int n, double beta1, KseqBracket& br,
               Vis& vis) {
    double rho = 1.0, beta = 0.0;
    kseq_rho(p, q, V, n, beta1, br, rho, beta);
    for (int i = 0; i < n; ++i) {
        const int32_t x = t[i];
        if (vis.test(x, std::min(1.0, p[x] / (rho * q[x])))) return;
    }
    const double alpha = 1.0 - ipow(1.0 - beta, n);
    const KseqRes w{1.0 / rho, beta > 0.0 ? alpha / beta : 0.0};
    const double M = w.sum(p, q, V);
    vis.residual(IdResidual<KseqRes>{p, q, V, w, M});
}

}  // namespace mdsd::verif::direct
