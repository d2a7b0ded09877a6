// The certificate split shared by both optimal verifiers (docs/theory/verifiers.md §8.10): the certificate
// H* of alpha* splits every optimal plan into an outer system (a tuple with a draft in
// A = supp q \ H* outputs one of its A-drafts, load a(y) <= p(y)) and an inner system (a tuple
// inside H* outputs one of its drafts or rejects, a(y) = p(y) on H*). Any plan with these
// properties accepts alpha*, and the residual r ∝ p - a (§2.3) completes it losslessly.
#pragma once

#include <cstdint>
#include <vector>

#include "mdsd/verifiers/common.hpp"

namespace mdsd::verif {

// Which system a token belongs to.
enum class Side : uint8_t { Never = 0, Inner = 1, Outer = 2 };  // Never: q = 0, never drafted

// The system that handles a tuple: outer if any draft lies outside H*, else inner.
inline Side system_of(const std::vector<Side>& side, const int32_t* t, int n) {
    for (int k = 0; k < n; ++k)
        if (side[t[k]] == Side::Outer) return Side::Outer;
    return Side::Inner;
}

// The distinct drafts of tuple t in the system that handles it, with their multiplicities; returns
// their number m (toks, cnt: room for n).
inline int group_drafts(const std::vector<Side>& side, const int32_t* t, int n, int32_t* toks, int* cnt) {
    int m = 0;
    const Side want = system_of(side, t, n);
    for (int k = 0; k < n; ++k) {
        const int32_t y = t[k];
        if (side[y] != want) continue;
        int j = 0;
        while (j < m && toks[j] != y) ++j;
        if (j == m) {
            toks[m] = y;
            cnt[m] = 0;
            ++m;
        }
        ++cnt[j];
    }
    return m;
}

// With probability pr (given that every earlier test failed) go to the residual: the law
// calculator adds the residual part now and continues with the rest of the mass.
inline void law_branch(LawVisitor& vis, double pr, const Categorical& res) {
    pr = clamp01(pr);
    if (pr > 0.0 && vis.mass > 0.0) {
        const double keep = vis.mass;
        vis.mass = keep * pr;
        vis.residual(res);
        vis.mass = keep * (1.0 - pr);
    }
}

// The exact law of a system's race: token toks[k] wins w.p. sel[k] and is then accepted w.p.
// coin[toks[k]], as a chain of tests; with probability sum_k sel[k] (1 - coin) + (1 - sum_k sel[k])
// the residual is sampled.
inline void law_chain(const int32_t* toks, const double* sel, int m, const std::vector<double>& coin,
                      const Categorical& res, LawVisitor& vis) {
    double left = 1.0;
    for (int k = 0; k < m; ++k) {
        const double s = sel[k];
        if (!(s > 0.0)) continue;
        const double win = left > s ? s / left : 1.0;  // Pr[k wins | no earlier token won]
        const double c = coin[toks[k]];
        if (vis.test(toks[k], win * c)) return;
        if (c < 1.0) law_branch(vis, win * (1.0 - c) / (1.0 - win * c), res);
        left -= s;
    }
    vis.residual(res);
}

}  // namespace mdsd::verif
