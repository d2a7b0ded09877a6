// The product of many small tokens' factors from power sums of q (docs/theory/race_oracle.md §14.5).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/race/grid.hpp"
#include "mdsd/race/pair.hpp"

namespace mdsd::race {

// The product of the factors of `toks` at weight 1 from power sums of q, for tokens with
// q t <= ln 2 on the whole grid -- for ordering only (loo_weights). Per node,
//     prod (e + x b) = e^{-Q t} E(x),   D = e^{-Q t} E(x) sum_j (-x)^j R_j,
// with E's coefficients the elementary symmetric functions of beta = e^{q t} - 1 (Newton's
// identities from S_k = sum beta^k), R_j = sum q beta^j, and S_k, R_j from P_m = sum (q / qs)^m by
// the series of (e^u - 1)^k. O(k M) for k tokens and M = kMoments, against O(k n G) for the
// factors one by one. Returns false where Newton's identities would lose more than ~1e-10 to
// cancellation (few tokens holding the mass) or n > 8; the caller then multiplies the factors.
constexpr int kMoments = 48;

// c[k * (M + 1) + m]: the coefficient of u^m in (e^u - 1)^k, for 1 <= k < n and m <= M (zero elsewhere).
inline void expm1_power_coefficients(int n, int M, double* c) {
    const int W = M + 1;
    std::fill(c, c + static_cast<std::size_t>(n) * W, 0.0);
    if (n < 2) return;
    double f = 1.0;
    for (int m = 1; m <= M; ++m) {
        f /= m;
        c[W + m] = f;
    }
    for (int k = 2; k < n; ++k)
        for (int m = k; m <= M; ++m)
            for (int j = 1; j <= m - k + 1; ++j) c[k * W + m] += c[W + j] * c[(k - 1) * W + m - j];
}

// P[m] += sum over toks of (q / qs)^m, m = 1..kMoments + 1, each token's powers by repeated
// products until one falls to 1e-300. Four tokens a step keep four chains of products in flight;
// each P[m] still adds the tokens in their order (a token already done, or a slot past the last
// token, adds +0, which leaves P[m] as it is): the same bits as one token at a time.
inline void power_sums(const double* q, const std::vector<int32_t>& toks, double qs, double* P) {
    constexpr int M = kMoments;
    const std::size_t nt = toks.size();
    for (std::size_t t = 0; t < nt; t += 4) {
        double r[4], pw[4];
        for (int j = 0; j < 4; ++j) pw[j] = r[j] = t + j < nt ? q[toks[t + j]] / qs : 0.0;
        for (int m = 1; m <= M + 1; ++m) {
            bool any = false;
            for (int j = 0; j < 4; ++j) {
                const bool on = pw[j] > 1e-300;
                any |= on;
                P[m] += on ? pw[j] : 0.0;
                pw[j] = on ? pw[j] * r[j] : 0.0;
            }
            if (!any) break;
        }
    }
}

inline bool product_by_moments(const Grid& gr, const double* q, const std::vector<int32_t>& toks, double qs,
                               Pair& out) {
    const int n = gr.n;
    const int64_t G = gr.G;
    constexpr int M = kMoments;
    if (n > 8) return false;  // (e^u - 1)^k needs more than M terms for k >= 8 at u = ln 2
    out.unit(n, G);
    if (toks.empty() || !(qs > 0.0)) return true;
    double P[M + 2] = {0.0};
    power_sums(q, toks, qs, P);
    double c[8][M + 1];  // c[k][m]: coefficient of u^m in (e^u - 1)^k, k < n
    expm1_power_coefficients(n, M, &c[0][0]);
    // Q = q(toks), compensated (Neumaier): it enters as e^{-Q t}, whose relative error is Q t times
    // Q's, and Q t reaches ~100 where the integrands still count (the plain sum gave 1e-12 there).
    double Q = 0.0;
    {
        double comp = 0.0;
        for (int32_t y : toks) {
            const double x = q[y], sum = Q + x;
            comp += std::fabs(Q) >= std::fabs(x) ? (Q - sum) + x : (x - sum) + Q;
            Q = sum;
        }
        Q += comp;
    }
    double worst = 0.0;  // largest sum of |terms| over |result| (cancellation)
    for (int64_t g = 0; g < G; ++g) {
        const double u = qs * gr.t[g];
        double Sk[8] = {0.0}, Rj[8] = {0.0}, E[8] = {0.0};
        Rj[0] = Q;
        for (int k = 1; k < n; ++k) {
            double us = 1.0, sk = 0.0, rj = 0.0;
            for (int m = 1; m <= M; ++m) {
                us *= u;
                if (m < k) continue;
                sk += c[k][m] * us * P[m];
                rj += c[k][m] * us * P[m + 1];
            }
            Sk[k] = sk;
            Rj[k] = qs * rj;
        }
        E[0] = 1.0;
        for (int cc = 1; cc < n; ++cc) {
            double acc = 0.0, mag = 0.0;
            for (int k = 1; k <= cc; ++k) {
                const double term = ((k & 1) ? 1.0 : -1.0) * E[cc - k] * Sk[k];
                acc += term;
                mag += std::fabs(term);
            }
            E[cc] = acc / cc;
            if (mag > 0.0) worst = std::max(worst, acc != 0.0 ? mag / std::fabs(acc) : 1e300);
        }
        const double eq = std::exp(-Q * gr.t[g]);
        for (int cc = 0; cc < n; ++cc) {
            double acc = 0.0, mag = 0.0;
            for (int j = 0; j <= cc; ++j) {
                const double term = ((j & 1) ? -1.0 : 1.0) * E[cc - j] * Rj[j];
                acc += term;
                mag += std::fabs(term);
            }
            if (mag > 0.0) worst = std::max(worst, acc != 0.0 ? mag / std::fabs(acc) : 1e300);
            out.Pi[static_cast<std::size_t>(cc) * G + g] = eq * E[cc];
            out.D[static_cast<std::size_t>(cc) * G + g] = eq * acc;
        }
    }
    return worst < 1e6;  // rounding ~1e-16 times this
}

// Tokens with q t <= ln 2 on the whole grid are "small": b <= 1/2 <= e at every node, so their
// factor can be divided out stably and their product comes from power sums (product_by_moments).
inline double small_cut(const Grid& gr) { return std::log(2.0) / gr.t[gr.G - 1]; }

// The product of the small tokens of `toks` at weight 1: by power sums where well conditioned, else
// factor by factor (same values to ~1e-13 relative; both are ~2-6e-13 from a long-double product on
// shipped rows at k ~ 45,000).
inline Pair small_product(const Grid& gr, const double* q, const std::vector<int32_t>& toks) {
    const double qcut = small_cut(gr);
    std::vector<int32_t> small;
    double qs = 0.0;
    for (int32_t y : toks)
        if (q[y] <= qcut) {
            small.push_back(y);
            qs = std::max(qs, q[y]);
        }
    Pair out;
    if (product_by_moments(gr, q, small, qs, out)) return out;
    out.unit(gr.n, gr.G);
    std::vector<double> e(gr.G), b(gr.G);
    for (int32_t y : small) {
        gr.factors(q[y], e.data(), b.data());
        out.add(e.data(), b.data(), 1.0, q[y]);
    }
    return out;
}

}  // namespace mdsd::race
