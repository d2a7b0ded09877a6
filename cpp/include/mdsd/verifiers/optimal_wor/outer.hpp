// The outer system of the full-vocabulary route (docs/theory/wor_route.md §15.1): every set with a draft
// outside H* outputs one of those drafts, with loads a(y) <= p(y).
//
// Rounds of safe moves: every outer token with rho = p / w >= 1 is laid whole at the top (its load
// w stays <= p, and laying it only raises the others' rho), until none is left. The remaining core
// (every rho < 1) then runs the exact sweep at the bottom on the law of S ∩ core among the sets
// that hold no token laid above -- exact whenever the core has at most m_max tokens. A larger core
// runs the "chain", the exact outer sweep's own shape: its largest proper tight set Z (the frozen
// tokens) grows one token at a time; the core is visited neediest first, and a visited token y is
// laid until exhausted or until Z + y turns tight, i.e. pi_y = (1 - u_y) E_y with
// E_y = E[1{y in S} prod_{S \ y} h 1{visited}]; then it joins Z. The frozen tokens are then exhausted
// in reverse order of their visits. A visit that finds Z + y already violated means a larger set
// turned tight earlier: the unvisited tokens of its segment of the order move to the segment's
// front (while the budget lasts), and the plan with the least excess load is kept; any excess
// left is cut by the coins.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "mdsd/verifiers/optimal_wor/context.hpp"

namespace mdsd::verif::wor {

// Its first pass (every token at weight 1, for the ranks) and each round's pass (the safe tokens at
// 0, the rest at 1) have the suffix at weight 1 and no `ex`: race::pass_div's case, one division and
// one w per small token instead of three products and one w (w within ~1e-14 of race::pass).
// race::pass where pass_div declines (too many big tokens) or `by_division` is false (Options).
template <class Lay>
inline void outer_pass(const race::Grid& gr, const double* q, const std::vector<int32_t>& toks, const race::Pair& env,
                       Lay&& lay, std::vector<double>& w, bool by_division) {
    if (!by_division || !race::pass_div(gr, q, toks, env, lay, w)) race::pass(gr, q, toks, env, lay, w);
}

inline void Route::outer_system() {
    if (As.empty()) return;
    // H* tokens never block (weight 1)
    race::Pair env = race::mul(base0, tail_all);
    for (int64_t i = 0; i < m_top; ++i) {
        gr.factors(q[ord[i]], e.data(), b.data());
        env.add(e.data(), b.data(), 1.0, q[ord[i]]);
    }
    std::vector<int32_t> rest = As;
    outer_pass(gr, q, rest, env, [](int64_t, double) { return 1.0; }, w, opt.outer_by_division);
    charge(3.0 * static_cast<double>(rest.size()));
    std::vector<double> rho(rest.size());
    while (!rest.empty() && !budget.exhausted()) {  // each round lays at least one token
        for (std::size_t i = 0; i < rest.size(); ++i) rho[i] = rho_of(rest[i], w[i]);
        std::vector<int32_t> byrho = sorted_by_rho(rest, rho);
        std::sort(rho.begin(), rho.end(), std::greater<double>());
        std::size_t nd = 0;
        while (nd < byrho.size() && rho[nd] >= 1.0) ++nd;
        if (nd == 0) break;
        // one pass: the safe tokens laid whole (their loads), then the rest at weight 1 (their
        // w for the next round)
        outer_pass(
            gr, q, byrho, env, [nd](int64_t i, double) { return static_cast<std::size_t>(i) < nd ? 0.0 : 1.0; }, w,
            opt.outer_by_division);
        charge(3.0 * static_cast<double>(byrho.size()));
        for (std::size_t i = 0; i < nd; ++i) {
            chA.push_back({byrho[i], 1.0});
            won[byrho[i]] = w[i];
            gr.factors(q[byrho[i]], e.data(), b.data());
            env.add(e.data(), b.data(), 0.0, q[byrho[i]]);
        }
        rest.assign(byrho.begin() + nd, byrho.end());
        w.erase(w.begin(), w.begin() + nd);
        rho.resize(rest.size());
    }
    if (!rest.empty() && static_cast<int64_t>(rest.size()) <= m_max) {
        exact_core(rest, env, exact_outer, chA, won);
    } else if (!rest.empty()) {
        // Core too large for the subset sweep: the chain (see the top of this file). A segment whose
        // violation opens it merges with the one before first.
        for (std::size_t i = 0; i < rest.size(); ++i) rho[i] = rho_of(rest[i], w[i]);
        rest = sorted_by_rho(rest, rho);
        const int64_t kc = static_cast<int64_t>(rest.size());
        std::vector<std::pair<int64_t, int64_t>> segs{{0, kc}};
        std::vector<Chunk> best_ch;
        std::vector<double> best_won;
        double best_ex = std::numeric_limits<double>::infinity();
        for (;;) {  // each move splits a segment: at most kc moves
            std::vector<Chunk> chc;
            chc.reserve(kc);  // the down pass: at most a chunk per token
            std::vector<double> wc(kc, 0.0), hd(kc, 0.0);
            std::vector<char> frozen(kc, 0);
            int64_t iv = -1;  // the first visit that finds Z + y violated
            race::pass(
                gr, q, rest, env,
                [&](int64_t i, double wi, double E) {
                    const int32_t y = rest[i];
                    double d = 1.0;
                    if (p[y] < wi && wi > E) {
                        d = std::max(0.0, (p[y] - E) / (wi - E));
                        frozen[i] = 1;
                    }
                    if (iv < 0 && p[y] < E - opt.violation_tol * E) iv = i;
                    if (d > 0.0) chc.push_back({y, d});
                    wc[i] = wi * d;
                    return hd[i] = 1.0 - d;
                },
                w, nullptr, &env);
            charge(4.0 * static_cast<double>(kc));
            std::vector<int32_t> stack;
            std::vector<double> h0;
            std::vector<int64_t> spos;
            race::Pair eu = env;
            for (int64_t i = kc; i-- > 0;) {
                if (frozen[i]) {
                    stack.push_back(rest[i]);
                    h0.push_back(hd[i]);
                    spos.push_back(i);
                    continue;
                }
                gr.factors(q[rest[i]], e.data(), b.data());
                eu.add(e.data(), b.data(), hd[i], q[rest[i]]);
            }
            race::pass(
                gr, q, stack, eu,
                [&](int64_t i, double wi) {
                    if (h0[i] > 0.0) chc.push_back({stack[i], h0[i]});
                    wc[spos[i]] += wi * h0[i];
                    return 0.0;
                },
                w, h0.data());
            charge(3.0 * static_cast<double>(stack.size()));
            double ex = 0.0;
            for (int64_t i = 0; i < kc; ++i) ex += std::max(0.0, wc[i] - p[rest[i]]);
            if (ex < best_ex) {
                best_ex = ex;
                best_ch.swap(chc);
                best_won.resize(V);
                for (int64_t i = 0; i < kc; ++i) best_won[rest[i]] = wc[i];
            }
            if (iv <= 0 || budget.exhausted() || best_ex <= opt.certify_tol / 2) break;
            std::size_t k = 0;
            while (!(segs[k].first <= iv && iv < segs[k].second)) ++k;
            if (iv == segs[k].first && k > 0) {  // nothing to move within it: go before the previous one
                segs[k - 1].second = segs[k].second;
                segs.erase(segs.begin() + static_cast<std::ptrdiff_t>(k));
                --k;
            }
            const int64_t a0 = segs[k].first, b0 = segs[k].second;
            if (iv == a0) break;
            std::rotate(rest.begin() + a0, rest.begin() + iv, rest.begin() + b0);
            segs[k] = {a0, a0 + (b0 - iv)};
            segs.insert(segs.begin() + static_cast<std::ptrdiff_t>(k) + 1, {a0 + (b0 - iv), b0});
        }
        chA.insert(chA.end(), best_ch.begin(), best_ch.end());
        for (int32_t y : rest) won[y] = best_won[y];
    }
}

}  // namespace mdsd::verif::wor
