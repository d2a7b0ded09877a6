// Many tiny tokens joining a Poisson-binomial count at once, from power sums (docs/theory/sorted_prefix.md §4.4):
// the deferred tokens of race::WorRace (race/prefix_mass.hpp).
//
// A token is tiny when y = q t <= kTiny on every node still in use. For a batch B of tiny tokens,
// per node,
//     prod_{j in B} (e_j + x b_j) = e^{-q(B) t} prod_j (1 + x beta_j),   beta_j = e^{y_j} - 1,
// and prod_j (1 + x beta_j) mod x^n has the elementary symmetric functions of beta as coefficients,
// from the power sums p_k = sum_j beta_j^k (Newton's identities). beta^k = sum_m c[k][m] y^m with
// c[k][m] the coefficient of u^m in (e^u - 1)^k, so p_k at node t_g is a polynomial in t_g / t_ref
// whose coefficients are the moments mu_m = sum_j (q_j t_ref)^m (the series of
// race::product_by_moments, here for P alone and on the dual's grid). Per batch this costs O(|B| m) for
// the moments and O(G n m) for the nodes, against O(|B| n G) for the factors one by one.
//
// Error: (e^u - 1)^k = u^k phi(u)^k with phi(u) = (e^u - 1) / u <= e^u coefficient by coefficient,
// so dropping a token's moments from m = k + E on leaves at most (k y)^E / E! of its share of p_k:
// below 1e-19 relative with E = extra_moments(y) (5, 8 or 16 for y up to 2^-16, 2^-10, kTiny) and
// k < n <= 8. Newton's identities alternate in sign, but p_k <= beta_max^{k-1} p_1 with
// beta_max = e^kTiny - 1 < 0.065, so every term is at most the matching coefficient of
// (1 - beta_max x)^{-p_1 / beta_max}, prod_{i<c} (p_1 + i beta_max) / c!, p_1 <= q(B) t (1 + beta_max);
// times e^{-q(B) t} those stay below ~0.3 for c < 8: the absolute error on each count is a few ulps
// of 1, as for the factors one by one (measured against them in tests/bound/test_wor_tiny_batch.py).
// kTiny = 2^-4 defers nearly every token of an LLM row between two integrations of
// the chord scan (race/chord_scan.hpp), which integrates at tens of prefixes only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/race/grid.hpp"
#include "mdsd/race/moments.hpp"

namespace mdsd::race {

struct TinyBatch {
    static constexpr double kTiny = 0x1p-4;  // y = q t_ref at most this
    static constexpr int kExtra = 16;        // moments beyond the n - 1 the counts need
    static constexpr int kMaxN = 8;          // larger n: every token goes one by one
    // Fewer deferred tokens than this are laid one by one: a batch costs about as much as that
    // many single tokens (one factor chain and ~n m multiply-adds per node).
    static constexpr int kMinBatch = 16;
    int n = 0, mmax = 0;
    std::vector<double> qs;  // the deferred tokens' masses (in the caller's time unit)
    std::vector<double> c;   // c[k * (mmax + 1) + m], k < n

    void reset(int n_) {
        n = n_;
        mmax = n - 1 + kExtra;
        qs.clear();
        c.resize(static_cast<std::size_t>(n) * (mmax + 1));
        expm1_power_coefficients(n, mmax, c.data());
    }

    // Moments beyond the n - 1 a token of y = q t_ref needs: dropping y^m for m >= k + E leaves at most
    // (k y)^E / E! (k < n <= 8) of its share of each power sum (the series of (e^y - 1)^k), below
    // ~1e-19 relative at every y <= kTiny; most tokens of a row have y far below kTiny.
    static int extra_moments(double y) { return y <= 0x1p-16 ? 5 : y <= 0x1p-10 ? 8 : kExtra; }

    // mu[m] += sum_j (q_j t_ref)^m over the deferred tokens, m = 1 .. n - 1 + extra_moments(y_j). Four
    // tokens at a time (four independent product chains: a chain's latency is the cost), each group
    // up to the largest need among its four.
    void add_moments(double t_ref, double* mu) const {
        double acc[4][kMaxN + kExtra + 1] = {};
        const std::size_t cnt = qs.size();
        std::size_t j = 0;
        for (; j + 4 <= cnt; j += 4) {
            double y[4], w[4];
            int top = 0;
            for (int l = 0; l < 4; ++l) {
                y[l] = qs[j + l] * t_ref;
                w[l] = y[l];
                top = std::max(top, n - 1 + extra_moments(y[l]));
            }
            for (int m = 1; m <= top; ++m)
                for (int l = 0; l < 4; ++l) {
                    acc[l][m] += w[l];
                    w[l] *= y[l];
                }
        }
        for (; j < cnt; ++j) {
            const double y = qs[j] * t_ref;
            double w = y;
            for (int m = 1, top = n - 1 + extra_moments(y); m <= top; ++m) {
                acc[0][m] += w;
                w *= y;
            }
        }
        for (int m = 1; m <= mmax; ++m) mu[m] += (acc[0][m] + acc[1][m]) + (acc[2][m] + acc[3][m]);
    }

    // P ([c][g], row stride G, counts c < n) times the deferred tokens' factors on the nodes g < gn,
    // whose largest is t[gn - 1] (every deferred q has q t[gn - 1] <= kTiny); e, b: scratch of >= gn.
    // The batch is empty afterwards.
    void apply(double* P, int64_t G, int64_t gn, const double* t, int M, double* e, double* b) {
        if (qs.empty() || gn <= 0) {
            qs.clear();
            return;
        }
        const double t_ref = t[gn - 1];
        const int W = mmax + 1;
        double mu[kMaxN + kExtra + 1] = {0.0};
        double Q = 0.0, comp = 0.0;  // q(B), compensated: it enters as e^{-q(B) t} with q(B) t up to ~45
        for (double q : qs) {
            const double s = Q + q;
            comp += std::fabs(Q) >= q ? (Q - s) + q : (q - s) + Q;
            Q = s;
        }
        Q += comp;
        add_moments(t_ref, mu);
        qs.clear();
        factor_chain(t, gn, M, M, Q, e, b);  // e[g] = e^{-q(B) t_g}
        double pk[kMaxN] = {0.0}, E[kMaxN] = {0.0}, tau_m[kMaxN + kExtra + 1];
        for (int64_t g = 0; g < gn; ++g) {
            const double tau = t[g] / t_ref;
            tau_m[0] = 1.0;
            for (int m = 1; m <= mmax; ++m) tau_m[m] = tau_m[m - 1] * tau;
            for (int k = 1; k < n; ++k) {
                double s = 0.0;
                for (int m = mmax; m >= k; --m) s += c[k * W + m] * tau_m[m] * mu[m];  // small terms first
                pk[k] = s;
            }
            E[0] = e[g];
            for (int cc = 1; cc < n; ++cc) {
                double acc = 0.0;
                for (int i = 1; i <= cc; ++i) acc += ((i & 1) ? 1.0 : -1.0) * E[cc - i] * pk[i];
                E[cc] = acc / cc;
            }
            for (int cc = n - 1; cc >= 0; --cc) {  // rows go down: row cc reads rows <= cc
                double acc = 0.0;
                for (int i = 0; i <= cc; ++i) acc += P[static_cast<std::size_t>(i) * G + g] * E[cc - i];
                P[static_cast<std::size_t>(cc) * G + g] = acc;
            }
        }
    }
};

}  // namespace mdsd::race
