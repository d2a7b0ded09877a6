// "sd": single-draft speculative sampling (Leviathan et al. 2023; Chen et al. 2023), docs/theory/verifiers.md §8.1.
//   X ~ q; accept with probability min(1, p(X)/q(X)); else output Y ~ norm((p - q)_+).
//   alpha = sum_x min(p(x), q(x)), optimal for n = 1.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/verifiers/common.hpp"

namespace mdsd::verif {

struct Sd {
    struct Plan : PlanBase {
        Categorical res;  // (p - q)_+
    };

    static Plan prepare(const double* p, const double* q, int64_t V, int n) {
        if (n != 1) throw std::invalid_argument("n: 'sd' verifies a single draft, got n = " + std::to_string(n));
        Plan pl;
        pl.init(p, q, V, 1, Drafter::Iid);
        std::vector<double> r(V);
        for (int64_t i = 0; i < V; ++i) r[i] = std::max(0.0, p[i] - q[i]);
        pl.res.build(r.data(), V);
        return pl;
    }

    static double accept_prob(const Plan& pl, int32_t x) { return pl.p[x] >= pl.q[x] ? 1.0 : pl.p[x] / pl.q[x]; }

    template <class Vis>
    static void walk(const Plan& pl, const int32_t* t, Vis& vis) {
        if (vis.test(t[0], accept_prob(pl, t[0]))) return;
        vis.residual(pl.res);
    }

    // Accepted mass of the test itself: sum_x q(x) min(1, p(x)/q(x)).
    static double exact(const Plan& pl, double /*budget*/) {
        double a = 0.0;
        for (int64_t i = 0; i < pl.V; ++i) a += std::min(pl.p[i], pl.q[i]);
        return std::min(a, 1.0);
    }
};

}  // namespace mdsd::verif
