// The optimal verifiers for greedy drafts, docs/theory/greedy.md §5, §8.5, §8.6.
//
// "greedy" (Hu et al., ICLR 2025): drafts are T = the top n-1 tokens of q (lowest id on ties) plus
//   X ~ q~ = q renormalised over V \ T.
//   accept X w.p. min(1, p(X)/q~(X)); else Y ~ r, r ∝ p on T and (p - q~)_+ off T.
//   Every output in T is a draft, so alpha = p(T) + sum_{x not in T} min(p(x), q~(x)) = alpha*_greedy.
//
// "spechub" (Sun et al., EMNLP 2024), n = 2: hub a = argmax q (lowest id on ties); ordered pairs
//   Q(i, a) = q(i) and Q(a, i) = q(a) q(i) / (1 - q(a)), i != a. With
//   p'(i) = (p(i) - q(i))_+, Q'(i,a) = (q(i) - p(i))_+, p''(i) = (p'(i) - Q(a,i))_+, Q'(a,i) = (Q(a,i) - p'(i))_+,
//   S_A = sum_i Q'(a,i), S_B = sum_i Q'(i,a), p'(a) = (p(a) - S_A)_+, p''(a) = (p'(a) - S_B)_+:
//   pair (i, a): accept i w.p. min(1, p(i)/q(i)); else a w.p. min(1, p'(a)/S_B); else Y ~ norm(p'')
//   pair (a, i): accept i w.p. min(1, p'(i)/Q(a,i)); else a w.p. min(1, p(a)/S_A); else Y ~ norm(p'')
//   Its set law equals the greedy one for n = 2, and alpha = alpha*_greedy(n = 2).
#pragma once

#include <algorithm>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/verifiers/common.hpp"

namespace mdsd::verif {

struct Greedy {
    struct Plan : PlanBase {
        std::vector<char> inT;
        double rest = 1.0;  // q(V \ T)
        Categorical res;
    };

    static Plan prepare(const double* p, const double* q, int64_t V, int n) {
        Plan pl;
        pl.init(p, q, V, n, Drafter::Greedy);
        pl.inT.assign(V, 0);
        for (int32_t t : pl.drafter.top) pl.inT[t] = 1;
        pl.rest = 0.0;
        for (int64_t i = 0; i < V; ++i)
            if (!pl.inT[i]) pl.rest += q[i];
        std::vector<double> r(V);
        for (int64_t i = 0; i < V; ++i) r[i] = pl.inT[i] ? p[i] : std::max(0.0, p[i] - q[i] / pl.rest);
        pl.res.build(r.data(), V);
        return pl;
    }

    static double accept_prob(const Plan& pl, int32_t x) {
        const double qt = pl.q[x] / pl.rest;
        return pl.p[x] >= qt ? 1.0 : pl.p[x] / qt;
    }

    template <class Vis>
    static void walk(const Plan& pl, const int32_t* t, Vis& vis) {
        int32_t x = t[pl.n - 1];
        for (int k = 0; k < pl.n; ++k)
            if (!pl.inT[t[k]]) x = t[k];
        if (vis.test(x, accept_prob(pl, x))) return;
        vis.residual(pl.res);
    }

    // The verifier's own accounting: accepted tests, plus rejections whose residual lands in T.
    static double exact(const Plan& pl, double /*budget*/) {
        double acc = 0.0, rej = 0.0;
        for (int64_t i = 0; i < pl.V; ++i) {
            if (pl.inT[i] || !(pl.q[i] > 0.0)) continue;
            const double qt = pl.q[i] / pl.rest, a = accept_prob(pl, static_cast<int32_t>(i));
            acc += qt * a;
            rej += qt * (1.0 - a);
        }
        double rT = 0.0;
        for (std::size_t j = 0; j < pl.res.tok.size(); ++j)
            if (pl.inT[pl.res.tok[j]]) rT += pl.res.weight(j);
        if (rej > 0.0 && !pl.res.empty()) acc += rej * rT / pl.res.total();
        return std::min(acc, 1.0);
    }
};

struct SpecHub {
    struct Plan : PlanBase {
        int32_t hub = 0;
        double qa_rest = 1.0;        // 1 - q(a), summed over the other tokens
        std::vector<double> pp;      // p'(i) for i != a
        double SA = 0.0, SB = 0.0, ppa = 0.0;  // S_A, S_B, p'(a)
        Categorical res;             // p''
    };

    static double Qai(const Plan& pl, int32_t i) { return pl.q[pl.hub] * pl.q[i] / pl.qa_rest; }

    static Plan prepare(const double* p, const double* q, int64_t V, int n) {
        Plan pl;
        pl.init(p, q, V, n, Drafter::Hub);
        const int32_t a = pl.drafter.top[0];
        pl.hub = a;
        pl.qa_rest = 0.0;
        for (int64_t i = 0; i < V; ++i)
            if (i != a) pl.qa_rest += q[i];
        pl.pp.assign(V, 0.0);
        std::vector<double> pdd(V, 0.0);
        for (int64_t i = 0; i < V; ++i) {
            if (i == a) continue;
            const double qai = Qai(pl, static_cast<int32_t>(i));
            pl.pp[i] = std::max(0.0, p[i] - q[i]);
            pdd[i] = std::max(0.0, pl.pp[i] - qai);
            pl.SA += std::max(0.0, qai - pl.pp[i]);
            pl.SB += std::max(0.0, q[i] - p[i]);
        }
        pl.ppa = std::max(0.0, p[a] - pl.SA);
        pdd[a] = std::max(0.0, pl.ppa - pl.SB);
        pl.res.build(pdd.data(), V);
        return pl;
    }

    static double ratio(double num, double den) { return den > 0.0 ? std::min(1.0, num / den) : 1.0; }

    template <class Vis>
    static void walk(const Plan& pl, const int32_t* t, Vis& vis) {
        const int32_t a = pl.hub;
        if (t[1] == a) {  // pair (i, a): the first draft was not the hub
            const int32_t i = t[0];
            if (vis.test(i, ratio(pl.p[i], pl.q[i]))) return;
            if (vis.test(a, ratio(pl.ppa, pl.SB))) return;
        } else {          // pair (a, i)
            const int32_t i = t[1];
            if (vis.test(i, ratio(pl.pp[i], Qai(pl, i)))) return;
            if (vis.test(a, ratio(pl.p[a], pl.SA))) return;
        }
        vis.residual(pl.res);
    }

    // The verifier's own accounting over both pair types (the residual never lands on the pair).
    static double exact(const Plan& pl, double /*budget*/) {
        const int32_t a = pl.hub;
        double acc = 0.0, rejB = 0.0, rejA = 0.0;
        for (int64_t j = 0; j < pl.V; ++j) {
            const int32_t i = static_cast<int32_t>(j);
            if (i == a || !(pl.q[i] > 0.0)) continue;
            const double ai = ratio(pl.p[i], pl.q[i]), bi = ratio(pl.pp[i], Qai(pl, i));
            acc += pl.q[i] * ai + Qai(pl, i) * bi;
            rejB += pl.q[i] * (1.0 - ai);
            rejA += Qai(pl, i) * (1.0 - bi);
        }
        acc += rejB * ratio(pl.ppa, pl.SB) + rejA * ratio(pl.p[a], pl.SA);
        return std::min(acc, 1.0);
    }
};

}  // namespace mdsd::verif
