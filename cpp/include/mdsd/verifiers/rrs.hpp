// Recursive rejection sampling, with and without replacement (docs/theory/verifiers.md §8.2, §8.3).
//
// "rrs": n i.i.d. drafts from q (SpecInfer, Miao et al. 2024; MCSD, Yang et al. 2024).
//   p_1 = p; for i = 1..n: accept X_i w.p. min(1, p_i(X_i)/q(X_i)); p_{i+1} = norm((p_i - q)_+).
//   If all are rejected, output Y ~ p_{n+1}.  alpha = 1 - prod_i (1 - beta_i), beta_i = sum min(p_i, q).
// "rrs-wor": n drafts without replacement (MCSD; RSD, Jeon et al. 2024; Sequoia; EAGLE-1).
//   As above with q_i = q renormalised over the tokens not drafted before step i, and
//   p_{i+1} = norm((p_i - q_i)_+) (q_i taken before X_i is removed).
//
// Both residual sequences collapse to one threshold (why this file is O(log V) per step):
//   p_i = D_{T_i} / M_i,  D_T(x) = (p(x) - T q(x))_+,  M_i = sum_x D_{T_i}(x),
//   T_1 = 0,  T_{i+1} = T_i + M_i c_i,  c_i = 1 / q(tokens not drafted before step i)  (c_i = 1 iid).
// Proof: for a token x not yet drafted, (p_i - q_i)(x) = (p(x) - T_i q(x) - M_i c_i q(x)) / M_i where
// D_{T_i}(x) > 0, and both sides are <= 0 elsewhere. A drafted token was rejected, so
// p_i(x) < q_i(x), i.e. p(x)/q(x) < T_{i+1}: it drops out of every later D_T by itself.
// Then beta_i = 1 - M_{i+1}/M_i, and for i.i.d. drafts alpha_RRS = 1 - M_{n+1}.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "mdsd/core/parallel.hpp"
#include "mdsd/bound/lp/sets.hpp"
#include "mdsd/verifiers/common.hpp"

namespace mdsd::verif {

struct Rrs {
    struct Plan : PlanBase {
        RatioTable tab;
        std::vector<double> T, M;  // T_i, M_i for i = 0..n (0-based steps; index n = final residual)
    };

    static Plan prepare(const double* p, const double* q, int64_t V, int n) {
        Plan pl;
        pl.init(p, q, V, n, Drafter::Iid);
        pl.tab.build(pl.p.data(), pl.q.data(), V);
        pl.T.assign(n + 1, 0.0);
        pl.M.assign(n + 1, 0.0);
        pl.M[0] = pl.tab.mass(0.0);
        for (int i = 0; i < n; ++i) {
            // Once M_i = 0 every later step is unreachable (p_i = q: the draft is accepted).
            pl.T[i + 1] = pl.M[i] > 0.0 ? pl.T[i] + pl.M[i] : pl.T[i];
            pl.M[i + 1] = pl.M[i] > 0.0 ? pl.tab.mass(pl.T[i + 1]) : 0.0;
        }
        return pl;
    }

    template <class Vis>
    static void walk(const Plan& pl, const int32_t* t, Vis& vis) {
        for (int i = 0; i < pl.n; ++i) {
            const int32_t x = t[i];
            const double D = std::max(0.0, pl.p[x] - pl.T[i] * pl.q[x]);
            const double a = pl.M[i] > 0.0 ? std::min(1.0, D / (pl.M[i] * pl.q[x])) : 1.0;
            if (vis.test(x, a)) return;
        }
        vis.residual(ThresholdResidual{pl.tab, pl.p.data(), pl.q.data(), pl.T[pl.n], pl.M[pl.n]});
    }

    static double exact(const Plan& pl, double /*budget*/) {
        return std::min(1.0, std::max(0.0, 1.0 - pl.M[pl.n] / pl.M[0]));
    }
};

struct RrsWor {
    struct Plan : PlanBase {
        RatioTable tab;
        std::vector<int32_t> support;  // tokens with q > 0 (the branches of the exact recursion)
        double qsum = 1.0;
    };

    // Step state: threshold T_i, residual mass M_i, and q-mass not drafted yet (1 / c_i).
    struct State {
        double T = 0.0, M = 1.0, rest = 1.0;
    };

    // The thresholds grow by M / rest, rest = q-mass not drafted yet; a subnormal rest would
    // overflow T to inf (and wreck the residual: the acceptance came out 1 where it is 0.5).
    // The scheme and the verifier depend on q only up to a constant factor (T scales by its
    // inverse), so masses below 2^-900 are handled on q * 2^600: every 1 / rest is finite.
    // The factor is a power of two (exact), and 1 for all other inputs: then q itself is returned.
    static const double* scaled_q(const double* q, int64_t V, std::vector<double>& qs) {
        double qmin = 1.0;
        for (int64_t i = 0; i < V; ++i)
            if (q[i] > 0.0) qmin = std::min(qmin, q[i]);
        if (!(qmin < 0x1p-900)) return q;
        qs.assign(q, q + V);
        for (double& x : qs) x = std::ldexp(x, 600);
        return qs.data();
    }

    // What the recursion reads besides p and q: the ratio table, the support and its q-mass.
    // Pl: a Plan, or any type with the same members (planless/rrs_wor.hpp: the row read in place).
    template <class Pl>
    static void index(Pl& pl, const double* p, const double* q, int64_t V, OrderWorkspace& ows,
                      std::vector<int32_t>& asc) {
        pl.tab.build(p, q, V, ows, asc);
        pl.support.clear();
        pl.qsum = 0.0;
        for (int64_t i = 0; i < V; ++i)
            if (q[i] > 0.0) {
                pl.support.push_back(static_cast<int32_t>(i));
                pl.qsum += q[i];
            }
    }

    static Plan prepare(const double* p, const double* q, int64_t V, int n) {
        std::vector<double> qs;
        q = scaled_q(q, V, qs);
        Plan pl;
        pl.init(p, q, V, n, Drafter::Wor);
        OrderWorkspace ows;
        std::vector<int32_t> asc;
        index(pl, pl.p.data(), pl.q.data(), V, ows, asc);
        return pl;
    }

    template <class Pl>
    static State start(const Pl& pl) {
        return State{0.0, pl.tab.mass(0.0), pl.qsum};
    }

    // min(1, p_i(x) / q_i(x)) with p_i = D_T / M and q_i = q / rest.
    template <class Pl>
    static double accept_prob(const Pl& pl, const State& s, int32_t x) {
        if (!(s.M > 0.0)) return 1.0;
        const double D = std::max(0.0, pl.p[x] - s.T * pl.q[x]);
        return std::min(1.0, D * s.rest / (s.M * pl.q[x]));
    }

    // The state after rejecting x; `drafted` holds the m tokens drafted so far, x included.
    template <class Pl>
    static State next(const Pl& pl, const State& s, int32_t x, const int32_t* drafted, int m) {
        const double T = s.T + s.M / s.rest;
        return next(pl, s, T, pl.tab.mass(T), x, drafted, m);
    }
    // As above, given the next threshold T = s.T + s.M / s.rest and M = mass(T), which do not depend on x.
    template <class Pl>
    static State next(const Pl& pl, const State& s, double T, double M, int32_t x, const int32_t* drafted, int m) {
        State r;
        r.T = T;
        r.M = M;
        r.rest = s.rest - pl.q[x];
        if (r.rest < 1e-9 * pl.qsum) {  // cancellation: sum what is left directly
            r.rest = 0.0;
            for (int32_t y : pl.support)
                if (!contains(drafted, m, y)) r.rest += pl.q[y];
        }
        return r;
    }

    template <class Vis>
    static void walk(const Plan& pl, const int32_t* t, Vis& vis) {
        State s = start(pl);
        for (int i = 0; i < pl.n; ++i) {
            const int32_t x = t[i];
            if (vis.test(x, accept_prob(pl, s, x))) return;
            s = next(pl, s, x, t, i + 1);
        }
        vis.residual(ThresholdResidual{pl.tab, pl.p.data(), pl.q.data(), s.T, s.M});
    }

    // Work of the exact recursion: internal nodes scan the support (K), leaves cost a search.
    template <class Pl>
    static double cost(const Pl& pl) {
        const double K = static_cast<double>(pl.support.size());
        const double leaf = std::log2(static_cast<double>(pl.V) + 2.0);
        double nodes = 1.0, work = 0.0;  // nodes at depth d: K (K-1) ... (K-d+1)
        for (int d = 0; d < pl.n; ++d) {
            work += nodes * (d + 1 < pl.n ? K : leaf);
            nodes *= std::max(0.0, K - d);
        }
        return work;
    }

    // alpha_n = beta + sum_x (q_i(x) - p_i(x))_+ alpha_{n-1}(after x)   (docs/theory/verifiers.md §8.3)
    template <class Pl>
    static double rec(const Pl& pl, const State& s, int left, std::vector<int32_t>& drafted) {
        if (!(s.M > 0.0)) return 1.0;  // unreachable: the previous draft was accepted surely
        const double Tn = s.T + s.M / s.rest;
        const double Mn = pl.tab.mass(Tn);
        const double beta = 1.0 - Mn / s.M;
        if (left == 1 || !(Mn > 0.0)) return beta;
        const int m = static_cast<int>(drafted.size());
        if (static_cast<int64_t>(pl.support.size()) <= m + 1) return beta;  // q_{-x} empty: no next draft
        double sum = 0.0;
        for (int32_t x : pl.support) {
            poll_interrupt();  // KeyboardInterrupt (see parallel.hpp)
            if (contains(drafted.data(), m, x)) continue;
            const double w = pl.q[x] / s.rest - std::max(0.0, pl.p[x] - s.T * pl.q[x]) / s.M;
            if (!(w > 0.0)) continue;
            drafted.push_back(x);
            sum += w * rec(pl, next(pl, s, Tn, Mn, x, drafted.data(), m + 1), left - 1, drafted);
            drafted.pop_back();
        }
        return beta + sum;
    }

    template <class Pl>
    static double exact(const Pl& pl, double budget) {
        const double c = cost(pl);
        if (c > budget) {
            char buf[320];
            std::snprintf(buf, sizeof buf,
                          "rrs-wor: the exact recursion branches on every drafted token (cost exponential in n); "
                          "for %lld tokens with q > 0 and n = %d it needs about %.3g steps, above the budget of "
                          "%.3g. Use exact=False to estimate by simulation.",
                          static_cast<long long>(pl.support.size()), pl.n, c, budget);
            throw TooLarge(buf);
        }
        std::vector<int32_t> drafted;
        drafted.reserve(pl.n);
        return std::min(1.0, std::max(0.0, rec(pl, start(pl), pl.n, drafted)));
    }
};

}  // namespace mdsd::verif
