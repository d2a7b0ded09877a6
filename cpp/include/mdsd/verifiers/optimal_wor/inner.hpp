// Inner orders of the full-vocabulary route (docs/theory/wor_route.md §15.2): the sets inside H* output one of
// their drafts or reject, and every inner token must win exactly p(y). Each order lays the same
// race in its own way and returns its deficit sum_y (p(y) - won(y))_+; route.hpp tries them in turn.
//   top:    the exact_head neediest run the exact sweep on top, the tail below them by descending
//           rho, each until done (the greedy pass) -- exact when the tail meets no event;
//   bottom: the tail by ascending rho on top (least needy first, as the sweep lays tokens while no
//           set is tight), the m_max neediest run the exact sweep at the bottom -- exact when the
//           only tight sets form among those last tokens;
//   events: the prefix-event sweep on the event_head neediest, above the greedy tail;
//   pair sweep (n = 2): the prefix-event sweep on the whole system in closed form.
// The chain orders are in chain.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/verifiers/optimal_wor/context.hpp"

namespace mdsd::verif::wor {

// Work of one closed-form pair-sweep step per active token (a few w and slack updates).
constexpr double kPairStepOps = 30.0;

// The greedy pass: each token of `tl` (below everything in env) laid until it has won exactly p,
// or whole with a deficit; hfin (optional) receives the final weights. By division (no
// checkpoints) unless the tail holds too many big tokens.
inline void Route::greedy_pass(const std::vector<int32_t>& tl, const race::Pair& env, std::vector<Chunk>& ch,
                               std::vector<double>& wn, std::vector<double>* hfin, const race::Pair* small) {
    std::vector<double> pt(tl.size());  // p in pass order, gathered at once (a random read per token stalls)
    for (std::size_t i = 0; i < tl.size(); ++i) pt[i] = p[tl[i]];
    ch.reserve(ch.size() + tl.size());  // at most a chunk per token
    auto lay = [&](int64_t i, double wi) {
        const int32_t y = tl[i];
        double h = 1.0;  // wi = 0: never laid, every draw lands below reject
        if (wi > 0.0) {
            const double d = pt[i] / wi;
            if (d >= 1.0) {
                wn[y] = wi;
                ch.push_back({y, 1.0});
                h = 0.0;
            } else {
                wn[y] = pt[i];
                ch.push_back({y, d});
                h = 1.0 - d;
            }
        }
        if (hfin) (*hfin)[i] = h;
        return h;
    };
    if (!race::pass_div(gr, q, tl, env, lay, w, small)) race::pass(gr, q, tl, env, lay, w);
    charge(3.0 * static_cast<double>(tl.size()));
}

inline double Route::order_top(std::vector<Chunk>& ch, std::vector<double>& wn) {
    ch.clear();
    for (int32_t y : Hp) wn[y] = 0.0;
    const int64_t K = static_cast<int64_t>(ord.size());
    const int64_t m = std::min<int64_t>(K, std::min<int64_t>(opt.exact_head, m_max));
    const std::vector<int32_t> head(ord.begin(), ord.begin() + m);
    const std::vector<int32_t> tail(ord.begin() + m, ord.end());
    race::Pair env = base;
    // the tail at weight 1 (tail_all, tail_small): its whole product for the head's environment,
    // its small tokens' for the greedy pass
    if (m > 0) {  // the tail below the head: weight 1 while the head is laid
        const auto chh = sweep_head(head, race::mul(base, tail_all), ch, wn);
        std::vector<double> h_head(m, 1.0);
        for (const auto& c : chh)
            for (int64_t i = 0; i < m; ++i)
                if (head[i] == c.tok) h_head[i] -= c.mass;
        env = times(base, head, [&](std::size_t i) { return std::max(0.0, h_head[i]); });
    }
    greedy_pass(tail, env, ch, wn, nullptr, &tail_small);
    return deficit_of(wn);
}

inline double Route::order_bottom(std::vector<Chunk>& ch, std::vector<double>& wn) {
    ch.clear();
    for (int32_t y : Hp) wn[y] = 0.0;
    const int64_t K = static_cast<int64_t>(ord.size());
    const int64_t m = std::min<int64_t>(K, m_max);
    const std::vector<int32_t> head(ord.begin(), ord.begin() + m);
    std::vector<int32_t> tail(ord.begin() + m, ord.end());
    std::reverse(tail.begin(), tail.end());
    // the tail above the head, which sits at weight 1 while the tail is laid
    std::vector<double> h_tail(tail.size(), 1.0);
    greedy_pass(tail, times(base, head, one), ch, wn, &h_tail);
    if (m > 0) sweep_head(head, times(base, tail, [&](std::size_t i) { return h_tail[i]; }), ch, wn);
    return deficit_of(wn);
}

// The prefix-event sweep on `head` over env; returns the final weights.
inline std::vector<double> Route::event_sweep(const std::vector<int32_t>& head, const race::Pair& env,
                                              std::vector<Chunk>& ch, std::vector<double>& wn) {
    PrefixEventSweep W;
    W.init(gr, q, p, head, &ch, &wn);
    const int64_t m = static_cast<int64_t>(head.size());
    for (int64_t guard = 0; guard < 8 * m + 64 && !budget.exhausted(); ++guard) {
        charge(6.0 * static_cast<double>(m - W.retired));  // a step's scans over the active head
        if (!W.step(env, true)) break;
    }
    for (double& h : W.h) h = std::max(0.0, h);
    return W.h;
}

// The prefix-event sweep on the event_head neediest, laid above the tail, which then runs the
// greedy pass by descending rho. Exact when the tail meets no event; O(head^2) passes over the head.
inline double Route::order_events(std::vector<Chunk>& ch, std::vector<double>& wn) {
    ch.clear();
    for (int32_t y : Hp) wn[y] = 0.0;
    const int64_t m = std::min<int64_t>(event_head, static_cast<int64_t>(ord.size()));
    const std::vector<int32_t> head(ord.begin(), ord.begin() + m), tail(ord.begin() + m, ord.end());
    // the tail below the head: weight 1 while the head is laid
    const std::vector<double> hh = event_sweep(head, times(base, tail, one), ch, wn);
    greedy_pass(tail, times(base, head, [&](std::size_t i) { return hh[i]; }), ch, wn, nullptr);
    return deficit_of(wn);
}

// n = 2: the prefix-event sweep on the whole inner system, in closed form; O(k^2).
inline double Route::order_pair_sweep(std::vector<Chunk>& ch, std::vector<double>& wn) {
    ch.clear();
    for (int32_t y : Hp) wn[y] = 0.0;
    // s - q_y, summed directly for a token holding most of the mass (no cancellation)
    int32_t big = -1;
    double big_rest = 0.0;
    for (int32_t y : sup)
        if (q[y] > 0.5 * qsum) big = y;
    if (big >= 0)
        for (int32_t y : sup)
            if (y != big) big_rest += q[y];
    auto rest = [&](int32_t y) { return y == big ? big_rest : qsum - q[y]; };
    PairPrefixEventSweep W;
    W.init(p, q, qsum, ord, H0, rest);
    const int64_t K = static_cast<int64_t>(ord.size());
    for (int64_t guard = 0; guard < 8 * K + 64 && !budget.exhausted(); ++guard) {
        budget.used += kPairStepOps * static_cast<double>(K - W.retired);  // closed forms, no grid
        if (!W.step(ch, wn)) break;
    }
    return deficit_of(wn);
}

}  // namespace mdsd::verif::wor
