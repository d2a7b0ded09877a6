// The grid of the exponential race (docs/theory/race_oracle.md §14.3), and the token factors on it.
//
// Without-replacement drafts are the n earliest of independent clocks E_j ~ Exp(q_j); every
// expectation the race needs is an integral over time t of products of token factors
// e_j = exp(-q_j t) and b_j = 1 - e_j. Two node rules integrate them:
//   * Grid (here): the w integrals of the verifiers -- a trapezoid in ln t above t_1 and
//     Chebyshev interpolation below it, where every integrand is entire in t;
//   * the prefix-mass integral of alpha*_wor (race/prefix_mass.hpp): a trapezoid in ln t with the
//     part below its first node in closed form, since it integrates a complement.
// Both lay their geometric nodes M per doubling (t_{g+M} = 2 t_g), so the factors of a token
// follow from M directly computed nodes by squaring: factor_chain, shared by both.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/core/lanes.hpp"

namespace mdsd::race {

// 1 - e^{-y} for 0 <= y <= 1/8 by its series up to y^10 (the first dropped term is below 2^-55 y):
// the grids' first nodes, where libm's expm1 and exp would cost more than the rest of a token's
// nodes. Most tokens of an LLM row have y far below 1/8 there, and fewer terms keep the first
// dropped one below 2^-64 y.
constexpr double kSeriesMaxArg = 0.125;

// The series of 1 - e^{-y} (kSign = -1, up to y^10) and of e^y - 1 (kSign = +1, up to y^11) for
// 0 <= y <= 1/8, on one lane type: terms from the top one down, y * (1 -/+ y/2 (1 -/+ y/3 (...))).
// The top term is the fewest that keep the first dropped one small: y^3 for y <= 2^-22, y^5 for
// y <= 2^-11, y^8 for y <= 2^-6. Lanes share the loop from the top of their largest y; a lane whose
// own top is lower keeps s = 1 until it (lane_if_gt), so each lane has the bits of its scalar call.
template <int kSign, class T>
inline T exp_series(T y) {
    constexpr double inv[12] = {0.0,     1.0,     1.0 / 2, 1.0 / 3, 1.0 / 4,  1.0 / 5,
                                1.0 / 6, 1.0 / 7, 1.0 / 8, 1.0 / 9, 1.0 / 10, 1.0 / 11};
    constexpr int kTop = kSign < 0 ? 10 : 11;
    auto top = [](double v) { return v <= 0x1p-22 ? 3 : v <= 0x1p-11 ? 5 : v <= 0x1p-6 ? 8 : kTop; };
    const T one = lane_splat<T>(1.0);
    T s = one;
    for (int m = top(lane_hmax(y)); m >= 2; --m) {
        const T t = s * y * lane_splat<T>(inv[m]);
        const T ns = kSign < 0 ? one - t : one + t;
        s = m >= 9   ? lane_if_gt(y, 0x1p-6, ns, s)
            : m >= 6 ? lane_if_gt(y, 0x1p-11, ns, s)
            : m >= 4 ? lane_if_gt(y, 0x1p-22, ns, s)
                     : ns;
    }
    return y * s;
}

// 1 - e^{-y} for 0 <= y <= 1/8 by its series up to y^10 (the first dropped term is below 2^-55 y):
// the grids' first nodes, where libm's expm1 and exp would cost more than the rest of a token's
// nodes. Most tokens of an LLM row have y far below 1/8 there, and fewer terms keep the first
// dropped one below 2^-64 y.
inline double one_minus_exp_neg(double y) { return exp_series<-1>(y); }

// Nodes where x t is below this are computed directly too: doubling from an underflowed b = 0
// would never let that clock ring (possible only for masses below ~1e-250).
constexpr double kChainStart = 0x1p-900;

// The doubling chains of factor_chain and beta_chain: node g >= nd follows from node g - M, one
// chain per residue class mod M, each carrying its state (u, v; initially nodes nd - M .. nd - 1
// of u0 and v0) in registers and calling step(u, v, g). For the grids' usual M (3 for n <= 4, 6 for
// n <= 16) the M chains advance side by side, so their steps overlap instead of each class waiting
// for the previous one; otherwise one class after another. (A loop over g reading node g - M from
// memory gets vectorised with loads straddling the stores just made: a stalled store-to-load
// forward per node.) The same operations in every form.
template <int kM, class Step>
inline void chains_fixed(int64_t nd, int64_t gn, const double* u0, const double* v0, Step& step) {
    double u[kM], v[kM];
    for (int j = 0; j < kM; ++j) {
        u[j] = u0[nd - kM + j];
        v[j] = v0[nd - kM + j];
    }
    int64_t g = nd;
    for (; g + kM <= gn; g += kM)
        for (int j = 0; j < kM; ++j) step(u[j], v[j], g + j);
    for (int j = 0; g + j < gn; ++j) step(u[j], v[j], g + j);
}
template <class Step>
inline void chains(int M, int64_t nd, int64_t gn, const double* u0, const double* v0, Step&& step) {
    if (nd >= gn) return;  // no node left to double (else nd >= M)
    if (M == 3) return chains_fixed<3>(nd, gn, u0, v0, step);
    if (M == 6) return chains_fixed<6>(nd, gn, u0, v0, step);
    for (int64_t r = nd - M; r < nd; ++r) {
        double u = u0[r], v = v0[r];
        for (int64_t g = r + M; g < gn; g += M) step(u, v, g);
    }
}

// b_g = 1 - e^{-x t_g} and e_g = e^{-x t_g} for g < gn on ascending nodes t whose nodes from
// `direct` - M on are geometric, M per doubling. The first `direct` nodes (and any below
// kChainStart) directly -- by the series while x t <= 1/8, else by libm --, the others by
// doubling: 1 - e^{-2y} = b (2 - b) while b <= 1/2 (no cancellation), e^{-2y} = e^2 after.
inline void factor_chain(const double* t, int64_t gn, int64_t direct, int M, double x, double* e, double* b) {
    int64_t g0 = 0;
    while (g0 < gn && x * t[g0] < kChainStart) ++g0;
    const int64_t nd = std::min<int64_t>(std::max<int64_t>(direct, g0 + M), gn);
    int64_t g = 0;
#ifdef MDSD_SSE2
    for (; g + 2 <= nd && x * t[g + 1] <= kSeriesMaxArg; g += 2) {  // two nodes (t ascends) in the series' range
        const D2 bb = exp_series<-1>(lane_splat<D2>(x) * lane_load<D2>(t + g));
        lane_store(b + g, bb);
        lane_store(e + g, lane_splat<D2>(1.0) - bb);
    }
#endif
    for (; g < nd; ++g) {
        const double y = x * t[g];
        if (y <= kSeriesMaxArg) {
            b[g] = one_minus_exp_neg(y);
            e[g] = 1.0 - b[g];
            continue;
        }
        const double bb = -std::expm1(-y);
        b[g] = bb;
        e[g] = bb <= 0.5 ? 1.0 - bb : std::exp(-y);
    }
    auto step = [&](double& bb, double& ee, int64_t g) {  // branch-free: the same values either way
        const double b2 = bb * (2.0 - bb), e2 = ee * ee;
        const bool lo = bb <= 0.5;
        bb = lo ? b2 : 1.0 - e2;
        ee = lo ? 1.0 - b2 : e2;
        b[g] = bb;
        e[g] = ee;
    };
    chains(M, nd, gn, b, e, step);
}

// e^{y} - 1 for 0 <= y <= 1/8 by its series up to y^11 (the dropped terms sum below 2^-60 y), as
// one_minus_exp_neg: all terms positive, no cancellation.
inline double exp_minus_one(double y) { return exp_series<+1>(y); }

// beta_g = e^{x t_g} - 1 = b_g / e_g on the same nodes as factor_chain (docs/theory/race_oracle.md §14.4): the
// factor e + x b of a small token over e, 1 + x beta. The direct nodes by the series (y <= 1/8) or
// libm, the others by doubling, e^{2y} - 1 = beta (beta + 2): a sum of positive terms (no switch at
// b = 1/2 as factor_chain's). Relative error ~1e-15 while beta <= 1 (pass_div's small tokens);
// beyond, it grows with y as e's does.
inline void beta_chain(const double* t, int64_t gn, int64_t direct, int M, double x, double* beta) {
    int64_t g0 = 0;
    while (g0 < gn && x * t[g0] < kChainStart) ++g0;
    const int64_t nd = std::min<int64_t>(std::max<int64_t>(direct, g0 + M), gn);
    int64_t g = 0;
#ifdef MDSD_SSE2
    for (; g + 2 <= nd && x * t[g + 1] <= kSeriesMaxArg; g += 2)  // as factor_chain
        lane_store(beta + g, exp_series<+1>(lane_splat<D2>(x) * lane_load<D2>(t + g)));
#endif
    for (; g < nd; ++g) {
        const double y = x * t[g];
        beta[g] = y <= kSeriesMaxArg ? exp_minus_one(y) : std::expm1(y);
    }
    double* unused = beta;  // (one state per chain: the second is not read)
    chains(M, nd, gn, beta, unused, [&](double& x2, double&, int64_t g) { beta[g] = x2 = x2 * (x2 + 2.0); });
}

struct Grid {
    int n = 2;
    int M = 3;                  // nodes per doubling of the geometric part (t_{g+M} = 2 t_g)
    int64_t G = 0;
    int64_t g0 = 0;             // the geometric part starts here; nodes [0, g0) interpolate [0, t_1]
    double t1 = 0.0;            // start of the geometric part
    std::vector<double> t, wt;  // nodes (ascending) and weights
    static constexpr int kSmallNodes = 14;   // Chebyshev nodes on [0, t_1]
    static constexpr double kSmallT = 0.5;   // t_1 q(supp): at most ~0.5 expected arrivals by t_1
    // Trapezoid in s = ln t, t_1 2^{k/M}, over the whole line; it converges exponentially because
    // every integrand here is a smooth bell in s. Above t_1 the nodes are kept as they are, up to
    // t_hi. Below t_1 (where half the nodes used to sit, covering the t^{n-1} rise of the n-th
    // arrival down to 1e-18) the integrand f is entire in t with exponential type <~ 2 q(supp),
    // so it is replaced by its interpolant at kSmallNodes Chebyshev points of [0, t_1] (error
    // ~ 2 (q(supp) t_1 / 2)^N / N! <~ 1e-19 of max |f| there), and the trapezoid's infinite tail
    // sum_{k<0} h t_k f(t_k) becomes sum_i L_i f(tau_i), L_i = sum_{k<0} h t_k l_i(t_k) (l_i: the
    // Lagrange basis). Above t_hi, fewer than n arrivals (among the tokens other than any one y)
    // needs one of the n largest other clocks unrung, probability <= n e^{-q_(n+1) t}
    // (q_(n+1): the (n+1)-th largest mass), so the cut-off mass is <= n^2 e^{-q_(n+1) t_hi} /
    // q_(n+1) <= e^{-45}. With n or fewer tokens, t_hi = 60 / qmin.
    void build(int n_, double qsum, double q_np1, double qmin) {
        n = n_;
        // The n-th arrival is peaked in ln t (width ~ 1/sqrt(n)): the step shrinks with it. Checked by
        // sum_y Pr[y in S] = n: error <= 1e-12 for n <= 64 (M = 3 alone gives 1e-7 at n = 16).
        M = 3 * static_cast<int>(std::ceil(std::sqrt(std::max(1.0, n / 4.0))));
        const double h = std::log(2.0) / M;
        t1 = kSmallT / qsum;
        const double t_hi = q_np1 > 0.0 ? (std::log(static_cast<double>(n) * n / q_np1) + 45.0) / q_np1 : 60.0 / qmin;
        const int64_t ng = static_cast<int64_t>(std::ceil(M * std::log2(std::max(2.0, t_hi / t1)))) + 1;
        constexpr int N = kSmallNodes;
        g0 = N;
        G = g0 + ng;
        t.resize(G);
        wt.resize(G);
        const double pi_ = 3.141592653589793;
        double x[N], bw[N];  // Chebyshev points of [0, t_1] (ascending) and barycentric weights
        for (int i = 0; i < N; ++i) {
            const double th = pi_ * (2.0 * (N - 1 - i) + 1.0) / (2.0 * N);
            x[i] = 0.5 * t1 * (1.0 + std::cos(th));
            bw[i] = ((i & 1) ? -1.0 : 1.0) * std::sin(th);
        }
        for (int i = 0; i < N; ++i) {
            t[i] = x[i];
            wt[i] = 0.0;
        }
        // L_i: the tail nodes t_1 2^{-k/M}, k >= 1, until they no longer count (t_k < 1e-40 t_1).
        for (int64_t k = 1; k <= 140 * M; ++k) {
            const double tk = t1 * std::exp2(-static_cast<double>(k) / M);
            double den = 0.0, l[N];
            int hit = -1;
            for (int i = 0; i < N; ++i) {
                if (tk == x[i]) {
                    hit = i;
                    break;
                }
                l[i] = bw[i] / (tk - x[i]);
                den += l[i];
            }
            for (int i = 0; i < N; ++i) wt[i] += h * tk * (hit >= 0 ? (i == hit ? 1.0 : 0.0) : l[i] / den);
        }
        for (int64_t g = 0; g < ng; ++g) {
            t[g0 + g] = t1 * std::exp2(static_cast<double>(g) / M);
            wt[g0 + g] = h * t[g0 + g];
        }
    }
    // e_g = exp(-x t_g), b_g = 1 - e_g on every node: the interpolation nodes and the first M
    // geometric ones directly, the others by doubling (factor_chain).
    void factors(double x, double* e, double* b) const { factor_chain(t.data(), G, g0 + M, M, x, e, b); }
    // beta_g = e^{x t_g} - 1 on every node, directly where factors() is direct (beta_chain).
    void betas(double x, double* beta) const { beta_chain(t.data(), G, g0 + M, M, x, beta); }
};


}  // namespace mdsd::race
