// A small core of a full-vocabulary system as an enumerable one (docs/theory/wor_route.md §15.1): the law of
// S ∩ core over the 2^|core| masks, every other token entering through an environment pair, so the
// exact sweep (exact_sweep.hpp) can run on the core; and the loads of a chunk list over such a law.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/race/grid.hpp"
#include "mdsd/race/pair.hpp"
#include "mdsd/verifiers/optimal_wor/exact_sweep.hpp"
#include "mdsd/verifiers/optimal_wor/plan.hpp"

namespace mdsd::verif::wor {

// Law of S ∩ core over the masks of `core` (nonempty masks only), the other tokens entering
// through `base` with their weights: marked race pairs over 2^|core| masks.
inline SystemSets core_law(const race::Grid& gr, const double* q, const std::vector<int32_t>& core,
                           const race::Pair& base) {
    namespace R = race;
    const int64_t G = gr.G, m = static_cast<int64_t>(core.size());
    const int n = gr.n;
    std::vector<double> e(G), b(G);
    const uint32_t NM = 1u << m;
    std::vector<R::Pair> mk(NM);
    for (auto& x : mk) {
        x.unit(n, G);
        std::fill(x.Pi.begin(), x.Pi.end(), 0.0);
    }
    mk[0] = base;
    for (int64_t i = 0; i < m; ++i) {
        const uint32_t bit = 1u << i;
        gr.factors(q[core[i]], e.data(), b.data());
        const double qi = q[core[i]];
        for (uint32_t M = 0; M < NM; ++M) {
            if (M & bit) continue;
            R::Pair& src = mk[M];
            R::Pair& dst = mk[M | bit];  // zero so far: core[i] not yet added
            for (int c = 0; c < n; ++c)
                for (int64_t g = 0; g < G; ++g) {
                    const std::size_t at = static_cast<std::size_t>(c) * G + g;
                    double dd = qi * e[g] * src.Pi[at];  // core[i] is the n-th draft
                    double pp = 0.0;
                    if (c) {
                        const std::size_t bm = static_cast<std::size_t>(c - 1) * G + g;
                        dd += b[g] * src.D[bm];
                        pp += b[g] * src.Pi[bm];
                    }
                    dst.D[at] = dd;
                    dst.Pi[at] = pp;
                }
            for (int c = 0; c < n; ++c) {  // row by row: no index modulo G per node
                double* sp = src.Pi.data() + static_cast<std::size_t>(c) * G;
                double* sd = src.D.data() + static_cast<std::size_t>(c) * G;
                for (int64_t g = 0; g < G; ++g) {
                    sp[g] *= e[g];
                    sd[g] *= e[g];
                }
            }
        }
    }
    SystemSets out;
    out.sys_tok = core;
    for (uint32_t M = 1; M < NM; ++M) {
        double pr = 0.0;
        const double* Dn = mk[M].D.data() + static_cast<std::size_t>(n - 1) * G;
        for (int64_t g = 0; g < G; ++g) pr += gr.wt[g] * Dn[g];
        if (pr > 0.0) {
            out.mask.push_back(M);
            out.prob.push_back(pr);
        }
    }
    return out;
}

// Loads of a chunk list over a mask law (sets of one system, local token indices).
inline void core_loads(const SystemSets& S, const std::vector<Chunk>& ch, std::vector<double>& won) {
    const int64_t m = static_cast<int64_t>(S.sys_tok.size());
    std::vector<int> local(ch.size());
    for (std::size_t c = 0; c < ch.size(); ++c) {
        int i = 0;
        while (S.sys_tok[i] != ch[c].tok) ++i;
        local[c] = i;
    }
    std::vector<RaceChunk> refs;
    std::vector<double> sel(m);
    std::vector<int> pos(m);
    for (std::size_t s = 0; s < S.mask.size(); ++s) {
        const uint32_t M = S.mask[s];
        int md = 0;
        for (int64_t i = 0; i < m; ++i) pos[i] = (M >> i & 1u) ? md++ : -1;
        refs.clear();
        for (std::size_t c = 0; c < ch.size(); ++c)
            if (pos[local[c]] >= 0) refs.push_back({static_cast<int64_t>(c), pos[local[c]], ch[c].mass});
        race_sel(refs, md, sel.data());
        for (int64_t i = 0; i < m; ++i)
            if (pos[i] >= 0) won[S.sys_tok[i]] += S.prob[s] * sel[pos[i]];
    }
}

}  // namespace mdsd::verif::wor
