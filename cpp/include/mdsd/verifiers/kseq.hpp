// "kseq": K-SEQ of SpecTr (Sun et al., NeurIPS 2023) with the optimal rho, i.i.d. drafts, docs/theory/verifiers.md §8.4.
//   beta(rho) = sum_x min(q(x), p(x)/rho)
//   rho* = the smallest rho in [1, n] with 1 - (1 - beta(rho))^n <= rho beta(rho)
//   for i = 1..n: accept X_i w.p. min(1, p(X_i) / (rho* q(X_i)))
//   else Y ~ p_res, p_res(y) ∝ p(y) - min(q(y), p(y)/rho*) (1 - (1 - beta)^n) / beta
//   alpha = 1 - (1 - beta(rho*))^n
// h(rho) = 1 - (1 - beta)^n - rho beta is non-increasing with h(1) >= 0 >= h(n), so bisection
// finds rho*; the defining inequality is what keeps p_res non-negative.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/verifiers/common.hpp"

namespace mdsd::verif {

struct Kseq {
    struct Plan : PlanBase {
        double rho = 1.0, beta = 0.0, alpha = 0.0;
        Categorical res;
    };

    // rho* and beta(rho*) from the ratio table (beta(rho) costs one binary search).
    static void solve_rho(const RatioTable& tab, int n, double& rho, double& beta) {
        auto h = [&](double r, double& b) {
            b = tab.min_q_p_over(r);
            return 1.0 - ipow(1.0 - b, n) - r * b;
        };
        double b1;
        if (n == 1 || h(1.0, b1) <= 0.0) {
            rho = 1.0;
            beta = tab.min_q_p_over(1.0);
            return;
        }
        double lo = 1.0, hi = static_cast<double>(n), bhi;
        h(hi, bhi);
        for (int it = 0; it < 200 && hi - lo > 4e-16 * hi; ++it) {
            const double mid = 0.5 * (lo + hi);
            double bm;
            if (h(mid, bm) <= 0.0) hi = mid;
            else lo = mid;
        }
        rho = hi;
        beta = tab.min_q_p_over(hi);
    }

    static Plan prepare(const double* p, const double* q, int64_t V, int n) {
        Plan pl;
        pl.init(p, q, V, n, Drafter::Iid);
        RatioTable tab;
        tab.build(pl.p.data(), pl.q.data(), V);
        solve_rho(tab, n, pl.rho, pl.beta);
        pl.alpha = 1.0 - ipow(1.0 - pl.beta, n);
        const double s = pl.beta > 0.0 ? pl.alpha / pl.beta : 0.0;
        std::vector<double> r(V);
        for (int64_t i = 0; i < V; ++i) r[i] = std::max(0.0, p[i] - std::min(q[i], p[i] / pl.rho) * s);
        pl.res.build(r.data(), V);
        return pl;
    }

    template <class Vis>
    static void walk(const Plan& pl, const int32_t* t, Vis& vis) {
        for (int i = 0; i < pl.n; ++i) {
            const int32_t x = t[i];
            if (vis.test(x, std::min(1.0, pl.p[x] / (pl.rho * pl.q[x])))) return;
        }
        vis.residual(pl.res);
    }

    static double exact(const Plan& pl, double /*budget*/) { return pl.alpha; }
};

}  // namespace mdsd::verif
