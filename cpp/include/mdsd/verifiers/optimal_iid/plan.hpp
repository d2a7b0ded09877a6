// "optimal" for i.i.d. drafts at full vocabulary: the level race (docs/theory/level_race.md §12).
//
// The certificate H* splits the plan (certificate_split.hpp). Every draft gets an independent
// uniform "level" in [0, 1] and the draft with the highest level wins: each token owns level pieces
// of total length q(y), so a draft at level rho wins iff the other n - 1 lie below it, and token y
// wins with mass sum over its pieces of [hi^n - lo^n]. Choosing the pieces is a one-dimensional
// transport problem solved token by token:
//   outer (levels [q(H*), 1], tokens by ascending p/q): the highest window, contiguous in the
//     remaining levels, with load p(y) (the top window if even its load is below p(y));
//   inner (levels [0, q(H*)], tokens by descending p/q): the lowest window with load p(y) (the
//     bottom window if its load exceeds p(y)), and a won draft is accepted w.p. p(y)/load(y).
// Hall's condition (the minimality of H*) is an invariant of both cuts, so every outer load is at
// most p(y) and every inner token ends at exactly p(y): acceptance alpha*_iid (the proof, and why
// the windows must be contiguous: docs/theory/level_race.md §12). In floating point the loads are computed
// from the pieces as stored, so the residual absorbs every rounding (lossless in every case) and
// the reported acceptance is sum_y a(y), never alpha* itself.
// Cost: prepare O(V log V) (the ratio sort, one pass over the tokens); verify O(n log pieces).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/verifiers/certificate_split.hpp"
#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/optimal_iid/level_windows.hpp"

namespace mdsd::verif {

struct OptimalIid {
    struct Plan : PlanBase {
        std::vector<Side> side;         // which system each token belongs to
        std::vector<int64_t> pptr;      // pieces of token y: [pptr[y], pptr[y+1]), by descending level
        std::vector<double> plo, phi;   // piece endpoints
        std::vector<double> psuf;       // length of the token's pieces from this one to its last
        std::vector<double> coin;       // acceptance probability of a won draft
        std::vector<double> a;          // accepted mass per token
        double alpha_star = 0.0, alpha_plan = 0.0, qH = 0.0;
        int64_t num_inner = 0, num_outer = 0;
        Categorical res;
    };

    static Plan prepare(const double* p, const double* q, int64_t V, int n) {
        using namespace level;
        Plan pl;
        pl.init(p, q, V, n, Drafter::Iid);
        DualWorkspace ws;
        const DualResult dr = dual_prefix(p, q, V, n, Scheme::Iid, WorMethod::Auto, ws);
        pl.alpha_star = dr.alpha;
        const std::vector<int32_t>& ord = ws.order;  // supp q by ascending p/q
        const int64_t K = static_cast<int64_t>(ord.size()), ks = dr.k_star;
        pl.side.assign(V, Side::Never);
        double qH = 0.0;
        for (int64_t k = 0; k < ks; ++k) {
            pl.side[ord[k]] = Side::Inner;
            qH += q[ord[k]];
        }
        double qA = 0.0;
        for (int64_t k = ks; k < K; ++k) {
            pl.side[ord[k]] = Side::Outer;
            qA += q[ord[k]];
        }
        pl.qH = qH;
        pl.num_inner = ks;
        pl.num_outer = K - ks;
        std::vector<Seg> segs;           // pieces in the order they are cut
        std::vector<int32_t> owner;      // token of each piece
        segs.reserve(2 * static_cast<std::size_t>(K) + 8);
        owner.reserve(2 * static_cast<std::size_t>(K) + 8);
        auto cut = [&](Levels& L, int32_t y, int sigma, bool last) {
            take_window(L, q[y], p[y], sigma, last, segs);
            owner.resize(segs.size(), y);
        };
        // Outer: levels [qH, qH + qA] from the top, tokens by ascending ratio.
        if (K > ks) {
            Levels L;
            L.n = n;
            L.from_bottom = false;
            L.iv.push_back({qH, qH + qA});
            L.total = qA;
            for (int64_t k = ks; k < K; ++k) cut(L, ord[k], -1, k + 1 == K);
        }
        // Inner: levels [0, qH] from the bottom, tokens by descending ratio.
        if (ks > 0) {
            Levels L;
            L.n = n;
            L.from_bottom = true;
            L.iv.push_back({0.0, qH});
            L.total = qH;
            for (int64_t k = ks - 1; k >= 0; --k) cut(L, ord[k], +1, k == 0);
        }
        // Group the pieces by token (counting sort), each token's pieces by descending level.
        const int64_t P = static_cast<int64_t>(segs.size());
        pl.pptr.assign(V + 1, 0);
        for (int64_t e = 0; e < P; ++e) ++pl.pptr[owner[e] + 1];
        for (int64_t y = 0; y < V; ++y) pl.pptr[y + 1] += pl.pptr[y];
        pl.plo.resize(P);
        pl.phi.resize(P);
        pl.psuf.resize(P);
        {
            std::vector<int64_t> fill(pl.pptr.begin(), pl.pptr.end() - 1);
            for (int64_t e = 0; e < P; ++e) {
                const int64_t d = fill[owner[e]]++;
                pl.plo[d] = segs[e].lo;
                pl.phi[d] = segs[e].hi;
            }
        }
        pl.coin.assign(V, 0.0);
        pl.a.assign(V, 0.0);
        for (int64_t y = 0; y < V; ++y) {
            const int64_t b = pl.pptr[y], e = pl.pptr[y + 1];
            if (e - b > 1) {  // by descending level (pieces are disjoint: sort by lo)
                std::vector<Seg> tmp(static_cast<std::size_t>(e - b));
                for (int64_t u = b; u < e; ++u) tmp[u - b] = {pl.plo[u], pl.phi[u]};
                std::sort(tmp.begin(), tmp.end(), [](const Seg& u, const Seg& v) { return u.lo > v.lo; });
                for (int64_t u = b; u < e; ++u) {
                    pl.plo[u] = tmp[u - b].lo;
                    pl.phi[u] = tmp[u - b].hi;
                }
            }
            double s = 0.0, ld = 0.0;
            for (int64_t u = e - 1; u >= b; --u) {
                s += pl.phi[u] - pl.plo[u];
                pl.psuf[u] = s;
                ld += diffpow(pl.plo[u], pl.phi[u], n);  // the load of the pieces as stored
            }
            if (ld > 0.0) pl.coin[y] = std::min(1.0, p[y] / ld);
            pl.a[y] = ld * pl.coin[y];
        }
        std::vector<double> r(V);
        double acc = 0.0;
        for (int64_t y = 0; y < V; ++y) {
            r[y] = std::max(0.0, p[y] - pl.a[y]);
            acc += pl.a[y];
        }
        pl.alpha_plan = std::min(1.0, acc);
        pl.res.build(r.data(), V);
        return pl;
    }


    // Win probabilities of the distinct drafts of one system (inner or outer): the draft with the
    // highest level wins. toks/cnt: m distinct tokens and their multiplicities. sel[k] receives
    // Pr[token toks[k] wins].
    static void win_probs(const Plan& pl, const int32_t* toks, const int* cnt, int m, double* sel) {
        int64_t b[64], e[64];
        std::vector<int64_t> bb, ee;
        int64_t* pb = b;
        int64_t* pe = e;
        if (m > 64) {
            bb.resize(m);
            ee.resize(m);
            pb = bb.data();
            pe = ee.data();
        }
        for (int k = 0; k < m; ++k) {
            pb[k] = pl.pptr[toks[k]];
            pe[k] = pl.pptr[toks[k] + 1];
        }
        level::race_win_probs(pb, pe, pl.plo.data(), pl.phi.data(), pl.psuf.data(), cnt, m, sel);
    }

    // Distinct drafts of the tuple in the system that handles it, with their multiplicities.
    static int group(const Plan& pl, const int32_t* t, int32_t* toks, int* cnt) {
        return group_drafts(pl.side, t, pl.n, toks, cnt);
    }

    // The sampler: every draft of the system draws its level piece (probability length / q(y),
    // a binary search on the suffix sums), the highest piece wins (pieces of different tokens are
    // disjoint, so the piece decides; two drafts of one token in one piece give the same output),
    // then the winner's coin. O(n log pieces).
    static void walk(const Plan& pl, const int32_t* t, SampleVisitor& vis) {
        const Side want = system_of(pl.side, t, pl.n);
        double best = -1.0;
        int32_t win = -1;
        for (int k = 0; k < pl.n; ++k) {
            const int32_t y = t[k];
            if (pl.side[y] != want) continue;
            const int64_t b = pl.pptr[y], e = pl.pptr[y + 1];
            if (b == e) continue;
            const int64_t piece = level::draw_piece(pl.psuf.data(), b, e, vis.rng.uniform());
            if (pl.plo[piece] > best) {
                best = pl.plo[piece];
                win = y;
            }
        }
        if (win >= 0 && vis.test(win, pl.coin[win])) return;
        vis.residual(pl.res);
    }

    // The exact law: the same race, every branch followed (win_probs), as a chain of tests (chain).
    static void walk(const Plan& pl, const int32_t* t, LawVisitor& vis) {
        std::vector<int32_t> toks(pl.n);
        std::vector<int> cnt(pl.n);
        std::vector<double> sel(pl.n);
        const int m = group(pl, t, toks.data(), cnt.data());
        if (m > 0) win_probs(pl, toks.data(), cnt.data(), m, sel.data());
        law_chain(toks.data(), sel.data(), m, pl.coin, pl.res, vis);
    }

    static double exact(const Plan& pl, double /*budget*/) { return pl.alpha_plan; }
};

}  // namespace mdsd::verif
