// The deterministic-set rule for "topk" drafts (docs/theory/greedy.md §5.2): the drafts are T = the top n
// tokens of q, so the output is drawn from p itself and accepted when it lands in T. Written as
// tests in the tuple's order, "output t_k w.p. p(t_k) / (mass of p not yet ruled out)", then the
// residual p restricted to V \ T: the law is p exactly and the acceptance is p(T) = alpha*_topk.
// SGLang's tree sampler with threshold_single = threshold_acc = 1 is this rule with one coin.
#pragma once

#include <vector>

#include "mdsd/verifiers/common.hpp"

namespace mdsd::verif {

struct Topk {
    struct Plan : PlanBase {
        Categorical res;  // p on V \ T
        double pT = 0.0;
    };

    static Plan prepare(const double* p, const double* q, int64_t V, int n) {
        Plan pl;
        pl.init(p, q, V, n, Drafter::Topk);
        std::vector<double> r(p, p + V);
        for (int32_t t : pl.drafter.top) {
            pl.pT += p[t];
            r[t] = 0.0;
        }
        pl.res.build(r.data(), V);
        return pl;
    }

    template <class Vis>
    static void walk(const Plan& pl, const int32_t* t, Vis& vis) {
        // Mass not yet ruled out before test k: p of the tuple's tokens k.. plus p(V \ T), summed
        // from its parts rather than as 1 - (tested mass), which cancels when p(T) is near 1.
        double left = pl.res.total();
        for (int k = 0; k < pl.n; ++k) left += pl.p[t[k]];
        for (int k = 0; k < pl.n; ++k) {
            const double pk = pl.p[t[k]];
            if (pk > 0.0 && vis.test(t[k], pk / left)) return;
            left = pl.res.total();
            for (int j = k + 1; j < pl.n; ++j) left += pl.p[t[j]];
        }
        vis.residual(pl.res);
    }

    static double exact(const Plan& pl, double /*budget*/) { return std::min(pl.pT, 1.0); }
};

}  // namespace mdsd::verif
