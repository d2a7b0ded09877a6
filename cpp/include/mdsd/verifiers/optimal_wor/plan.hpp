// The plan of the without-replacement optimal verifier (docs/theory/tight_set_sweep.md §13): a chunk race split at
// the certificate H*. Every token's level mass is laid in chunks, in one order per system; a
// drafted token draws one of its chunks (or, inner, a level below all of them: it cannot win), the
// earliest chunk wins, then the winner's coin min(1, p / won). Built by the exact sweep
// (exact_sweep.hpp) on enumerable supports and by the full-vocabulary route (route.hpp) otherwise;
// either way the loads are recomputed from the stored chunks, so the plan is lossless and its
// exact acceptance is the accepted mass it really has.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "mdsd/verifiers/certificate_split.hpp"
#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/optimal_wor/budget.hpp"
#include "mdsd/verifiers/optimal_wor/exact_sweep.hpp"

namespace mdsd::verif::wor {

// What a verifier does with a full-vocabulary row whose plan falls short of alpha*_wor:
// Strict ("optimal") refuses it; Keep ("sweep") keeps the lossless plan and its exact acceptance.
enum class Policy { Strict, Keep };

struct Plan : PlanBase {
    std::vector<Side> side;
    std::vector<double> coin;  // acceptance probability of a won draft
    std::vector<double> a;     // accepted mass per token
    double alpha_star = 0.0, alpha_plan = 0.0;
    int64_t num_inner = 0, num_outer = 0;
    Categorical res;
    int64_t sweep_steps = 0;
    // chunks of token y are [cptr[y], cptr[y+1]) in sweep order, with their place in the sweep of
    // the token's system (cidx) and the token's cumulative mass (ccum)
    std::vector<int64_t> cptr, cidx;
    std::vector<double> ccum;
    Report route;  // what the full-vocabulary route did (budget.hpp); empty for exact sweeps
};

// The chunk race itself: chunks of m drafted tokens in sweep order; a chunk wins with its mass
// times the probability that every other drafted token lies below it (1 - its mass laid so far).
struct RaceChunk {
    int64_t idx;
    int k;
    double mass;
};
inline void race_sel(const std::vector<RaceChunk>& refs, int m, double* sel) {
    double laid[64] = {0.0};
    std::vector<double> big;
    double* L = laid;
    if (m > 64) {
        big.assign(m, 0.0);
        L = big.data();
    }
    std::fill(sel, sel + m, 0.0);
    for (const RaceChunk& rf : refs) {
        double x = rf.mass;
        for (int j = 0; j < m; ++j)
            if (j != rf.k) x *= std::max(0.0, 1.0 - L[j]);
        sel[rf.k] += x;
        L[rf.k] += rf.mass;
    }
}

// Win probabilities of m distinct drafted tokens of one system under the plan's chunk race.
inline void win_probs(const Plan& pl, const int32_t* toks, int m, double* sel) {
    std::vector<RaceChunk> refs;
    for (int k = 0; k < m; ++k) {
        double prev = 0.0;
        for (int64_t e = pl.cptr[toks[k]]; e < pl.cptr[toks[k] + 1]; ++e) {
            refs.push_back({pl.cidx[e], k, pl.ccum[e] - prev});
            prev = pl.ccum[e];
        }
    }
    std::sort(refs.begin(), refs.end(), [](const RaceChunk& u, const RaceChunk& v) { return u.idx < v.idx; });
    race_sel(refs, m, sel);
}

// CSR by token, chunks in sweep order within each system.
inline void store_chunks(Plan& pl, const std::vector<Chunk>& chA, const std::vector<Chunk>& chH) {
    const int64_t V = pl.V;
    pl.cptr.assign(V + 1, 0);
    for (const auto& c : chA) ++pl.cptr[c.tok + 1];
    for (const auto& c : chH) ++pl.cptr[c.tok + 1];
    for (int64_t y = 0; y < V; ++y) pl.cptr[y + 1] += pl.cptr[y];
    pl.cidx.resize(pl.cptr[V]);
    pl.ccum.resize(pl.cptr[V]);
    std::vector<int64_t> fill(pl.cptr.begin(), pl.cptr.end() - 1);
    std::vector<double> run(V, 0.0);
    auto put = [&](const std::vector<Chunk>& ch) {
        for (std::size_t i = 0; i < ch.size(); ++i) {
            const int32_t y = ch[i].tok;
            run[y] += ch[i].mass;
            pl.cidx[fill[y]] = static_cast<int64_t>(i);
            pl.ccum[fill[y]++] = run[y];
        }
    };
    put(chA);
    put(chH);
}

// Coins min(1, p / won), accepted mass a = won * coin, residual p - a (docs/theory/transport.md §2.3).
inline void finish(Plan& pl, const double* p, const std::vector<double>& won) {
    const int64_t V = pl.V;
    pl.coin.assign(V, 0.0);
    pl.a.assign(V, 0.0);
    std::vector<double> r(V);
    double acc = 0.0;
    for (int64_t y = 0; y < V; ++y) {
        if (won[y] > 0.0) pl.coin[y] = std::min(1.0, p[y] / won[y]);
        pl.a[y] = won[y] * pl.coin[y];
        r[y] = std::max(0.0, p[y] - pl.a[y]);
        acc += pl.a[y];
    }
    pl.alpha_plan = std::min(1.0, acc);
    pl.res.build(r.data(), V);
}

// Sampler for "wor": every drafted token of the system draws a chunk (or, inner, a level below
// all of its chunks), the earliest chunk in the sweep wins, then the winner's coin.
inline void walk(const Plan& pl, const int32_t* t, SampleVisitor& vis) {
    const Side want = system_of(pl.side, t, pl.n);
    const bool outer = want == Side::Outer;
    int64_t best = std::numeric_limits<int64_t>::max();
    int32_t win = -1;
    for (int k = 0; k < pl.n; ++k) {
        const int32_t y = t[k];
        if (pl.side[y] != want) continue;
        const int64_t b = pl.cptr[y], e = pl.cptr[y + 1];
        if (b == e) continue;
        const double v = vis.rng.uniform();
        const double* it = std::upper_bound(pl.ccum.data() + b, pl.ccum.data() + e, v);
        int64_t c = it - pl.ccum.data();
        if (c == e) {
            if (!outer) continue;  // below every chunk: this draft cannot win
            c = e - 1;             // outer masses sum to 1 up to rounding
        }
        if (pl.cidx[c] < best) {
            best = pl.cidx[c];
            win = y;
        }
    }
    if (win >= 0 && vis.test(win, pl.coin[win])) return;
    vis.residual(pl.res);
}

inline void walk(const Plan& pl, const int32_t* t, LawVisitor& vis) {
    const Side want = system_of(pl.side, t, pl.n);
    std::vector<int32_t> toks;
    for (int k = 0; k < pl.n; ++k)
        if (pl.side[t[k]] == want) toks.push_back(t[k]);
    const int m = static_cast<int>(toks.size());
    std::vector<double> sel(m);
    if (m > 0) win_probs(pl, toks.data(), m, sel.data());
    law_chain(toks.data(), sel.data(), m, pl.coin, pl.res, vis);
}

}  // namespace mdsd::verif::wor
