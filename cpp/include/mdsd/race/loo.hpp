// Leave-one-out weights of a whole token set at weight 1, for ordering (docs/theory/race_oracle.md §14.6).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/race/grid.hpp"
#include "mdsd/race/moments.hpp"
#include "mdsd/race/pair.hpp"
#include "mdsd/race/pass.hpp"

namespace mdsd::race {

// w_y of every token of `toks` over `base`, all of `toks` at weight 1 -- for ordering tokens only
// (the loads of a plan always come from `pass`). At weight 1, w_y depends on y only through q_y.
// For q t <= ln 2 on the grid ("small" tokens), w(q) = w of a token of mass q divided out of the
// total product (the recurrence amplifies rounding by at most 2^n) is analytic in q t and is
// interpolated from kLooNodes Chebyshev nodes; the small tokens' product comes from power sums
// (product_by_moments) where that is well conditioned; the other tokens run a pass over themselves.
constexpr int kLooNodes = 24;
inline void loo_weights(const Grid& gr, const double* q, const std::vector<int32_t>& toks, const Pair& base,
                        std::vector<double>& w_out) {
    const int64_t k = static_cast<int64_t>(toks.size()), G = gr.G;
    const int n = gr.n;
    const double qcut = small_cut(gr);
    std::vector<double> e(G), b(G);
    std::vector<int32_t> big, small;
    std::vector<int64_t> big_at;
    double qsmall = 0.0;
    for (int64_t i = 0; i < k; ++i) {
        const double qy = q[toks[i]];
        if (qy > qcut) {
            big.push_back(toks[i]);
            big_at.push_back(i);
            continue;
        }
        small.push_back(toks[i]);
        qsmall = std::max(qsmall, qy);
    }
    Pair ps;  // the small tokens
    if (!product_by_moments(gr, q, small, qsmall, ps)) {
        ps.unit(n, G);
        for (int32_t y : small) {
            gr.factors(q[y], e.data(), b.data());
            ps.add(e.data(), b.data(), 1.0, q[y]);
        }
    }
    w_out.assign(k, 0.0);
    Pair env = mul(base, ps), pb;
    pb.unit(n, G);
    if (!big.empty()) {
        std::vector<double> wb;
        pass(gr, q, big, env, [](int64_t, double) { return 1.0; }, wb);
        for (std::size_t j = 0; j < big.size(); ++j) {
            w_out[big_at[j]] = wb[j];
            gr.factors(q[big[j]], e.data(), b.data());
            pb.add(e.data(), b.data(), 1.0, q[big[j]]);
        }
    }
    if (!(qsmall > 0.0)) return;
    const Pair tot = mul(env, pb);
    // w(x) / x at the nodes x_j = qsmall (1 + cos(pi (j + 1/2) / N)) / 2, by division:
    // Pi_{-y}[c] = (Pi[c] - b Pi_{-y}[c-1]) / e, D_{-y}[c] = (D[c] - q e Pi_{-y}[c] - b D_{-y}[c-1]) / e
    constexpr int N = kLooNodes;
    const double pi_ = 3.141592653589793;
    double fx[N], cf[N];
    std::vector<double> pi(G), d(G), pi1(G), d1(G);
    for (int j = 0; j < N; ++j) {
        const double x = 0.5 * qsmall * (1.0 + std::cos(pi_ * (j + 0.5) / N));
        gr.factors(x, e.data(), b.data());
        std::fill(pi.begin(), pi.end(), 0.0);
        std::fill(d.begin(), d.end(), 0.0);
        for (int c = 0; c < n; ++c) {
            const double* P = &tot.Pi[static_cast<std::size_t>(c) * G];
            const double* D = &tot.D[static_cast<std::size_t>(c) * G];
            for (int64_t g = 0; g < G; ++g) {
                pi1[g] = (P[g] - b[g] * pi[g]) / e[g];
                d1[g] = (D[g] - x * e[g] * pi1[g] - b[g] * d[g]) / e[g];
            }
            if (c == n - 1) break;  // pi1 = Pi_{-y}[n-1], d = D_{-y}[n-2]
            pi.swap(pi1);
            d.swap(d1);
        }
        double acc = 0.0;
        for (int64_t g = 0; g < G; ++g) acc += gr.wt[g] * (x * e[g] * pi1[g] + b[g] * d[g]);
        fx[j] = acc / x;
    }
    for (int m = 0; m < N; ++m) {  // Chebyshev coefficients
        double c = 0.0;
        for (int j = 0; j < N; ++j) c += fx[j] * std::cos(pi_ * m * (j + 0.5) / N);
        cf[m] = (m ? 2.0 : 1.0) * c / N;
    }
    for (int64_t i = 0; i < k; ++i) {
        const double qy = q[toks[i]];
        if (qy > qcut) continue;
        const double u = 2.0 * qy / qsmall - 1.0;  // Clenshaw on [-1, 1]
        double b1 = 0.0, b2 = 0.0;
        for (int m = N - 1; m >= 1; --m) {
            const double t = 2.0 * u * b1 - b2 + cf[m];
            b2 = b1;
            b1 = t;
        }
        w_out[i] = qy * (u * b1 - b2 + cf[0]);
    }
}

}  // namespace mdsd::race
