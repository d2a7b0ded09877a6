// The chain orders of the inner system (docs/theory/wor_route.md §15.2): the shape the exact sweep takes when
// the rejection budget is small. The smallest tight set is the set Y of tokens not yet visited,
// and it shrinks one token at a time: tokens are visited least needy first (ascending rho); a
// visited token y is laid until it has won p (done) or until Y \ {y} turns tight, i.e.
//     s(Y) + pi_y = (1 - u_y) E_y,   E_y = E[1{y in S} prod_{S \ y} h 1{visited}]
// (its remaining need equals the unresolved mass it shares with visited tokens only), whichever
// comes first; then it freezes. The event_head neediest run the prefix-event sweep at the bottom,
// and the frozen tokens are completed in reverse order of their visits, each until done, below
// everything else. Exact when the tail's only events are these single-token ones.
//
// With mt > 0 the mt neediest first run a chain of their own on top (the others below them at
// weight 1), below their own needy group, and so on (at most opt.chain_depth levels). A group that
// turns tight during the down pass shows as the first visited token whose singleton-removal slack
// s + pi - E is already negative: the unvisited tokens at that point hold a violated set W. Two
// answers (two orders of trying, `split`):
//  - regroup: the chain runs again with W as its group on top (the group grows each time);
//  - split: the exact sweep's own order -- the visits before the violating one stay, W (with the
//    token visited just before, whose laying made it tight) then runs as a chain of its own, and
//    the frozen tokens of the first part are completed below it.
// Retries nest (a regrouped level reruns the levels below it); once the budget is spent the
// violations are left as they are (the coins and the residual keep the plan lossless).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/verifiers/optimal_wor/context.hpp"
#include "mdsd/verifiers/optimal_wor/inner.hpp"

namespace mdsd::verif::wor {

// The nearly tight group of needy tokens at the head of o (neediest first) over env: it ends before
// the token that raises the slack of the prefixes of o (all weights 1) the most,
// s_i = Pr[S inside H*, S meets o_0..o_i] - p(o_0..o_i) (one pass).
inline int64_t Route::needy_group(const std::vector<int32_t>& o, const race::Pair& env) {
    std::vector<double> v;
    race::pass(gr, q, o, env, [](int64_t, double) { return 0.0; }, v);
    charge(3.0 * static_cast<double>(o.size()));
    int64_t jt = 0;
    for (int64_t i = 1; i < std::min<int64_t>(static_cast<int64_t>(o.size()), opt.jump_scan); ++i)
        if (v[i] - p[o[i]] > v[jt] - p[o[jt]]) jt = i;
    return jt;
}

// The chain on the tokens o (neediest first) over env; returns their final weights.
inline std::vector<double> Route::chain_system(const std::vector<int32_t>& o, const race::Pair& env, int64_t mt,
                                               ChainMode md, std::vector<Chunk>& ch, std::vector<double>& wn) {
    const int64_t ko = static_cast<int64_t>(o.size());
    // Out of budget: lay nothing (the tokens keep their whole mass, below every chunk): a
    // consistent, lossless part of a plan, which the ladder keeps only if its deficit is smaller.
    if (budget.exhausted()) return std::vector<double>(ko, 1.0);
    const std::size_t ch0 = ch.size();
    std::vector<double> hout(ko, 1.0);
    const std::vector<int32_t> top(o.begin(), o.begin() + mt), rest(o.begin() + mt, o.end());
    race::Pair base1 = env;
    if (mt > 0) {
        const race::Pair below = times(env, rest, one);
        const int64_t mt2 = md.depth + 1 < opt.chain_depth ? needy_group(top, below) : 0;
        const std::vector<double> ht = chain_system(top, below, mt2, {md.depth + 1, md.split}, ch, wn);
        std::copy(ht.begin(), ht.end(), hout.begin());
        base1 = times(env, top, [&](std::size_t i) { return ht[i]; });
    }
    const std::size_t ch1 = ch.size();
    const int64_t m = std::min<int64_t>(event_head, ko - mt);
    const std::vector<int32_t> head(rest.begin(), rest.begin() + m);
    const std::vector<int32_t> tail(rest.rbegin(), rest.rend() - m);  // least needy first
    const int64_t kt = static_cast<int64_t>(tail.size());
    // slack of the chain's whole set, Pr[S inside H*, S meets rest] (unresolved) - p(rest)
    double qR = 0.0, pR = 0.0;
    for (int32_t y : rest) {
        qR += q[y];
        pR += p[y];
    }
    std::vector<double> sc(G);
    for (int64_t g = 0; g < G; ++g) sc[g] = std::exp(-qR * gr.t[g]);
    race::Pair none = base1;  // every token of rest at weight 0
    none.scale(sc.data());
    const double s_rest = total_of(times(base1, rest, one)) - total_of(none) - pR;
    // down: tail over the head at weight 1 (w); E over the head at weight 0 (unvisited).
    // Only the first `cut` tail tokens are visited (the others stay at weight 1).
    std::vector<double> hd(kt, 1.0);
    std::vector<char> frozen(kt, 0);
    const race::Pair bx = times(base1, head, [](std::size_t) { return 0.0; });
    auto down = [&](int64_t cut) {
        double s = s_rest;
        int64_t iv = -1;  // the first visit that finds its removal slack negative
        race::pass(
            gr, q, tail, times(base1, head, one),
            [&](int64_t i, double wi, double E) {
                const int32_t y = tail[i];
                if (i >= cut || !(wi > 0.0)) return 1.0;  // unvisited, or wins nothing: never laid
                const double dd = p[y] / wi, df = wi > E ? (s + p[y] - E) / (wi - E) : 1e300;
                if (iv < 0 && wi > E && s + p[y] - E < -opt.violation_tol * (p[y] + E)) iv = i;
                double d;
                if (df < dd && df < 1.0) {
                    d = std::max(0.0, df);
                    frozen[i] = 1;
                    s = 0.0;
                } else {
                    d = std::min(dd, 1.0);
                    s += (p[y] - wi * d) - (1.0 - d) * E;
                }
                if (d > 0.0) ch.push_back({y, d});
                wn[y] = wi * d;
                return hd[i] = 1.0 - d;
            },
            w, nullptr, &bx);
        charge(4.0 * static_cast<double>(kt));
        return iv;
    };
    const int64_t iv = down(kt);
    if (!md.split && iv > 0 && ko - iv > mt) {  // o[0 .. ko - iv) unvisited
        ch.resize(ch0);
        for (int32_t y : o) wn[y] = 0.0;
        return chain_system(o, env, ko - iv, {md.depth, false}, ch, wn);
    }
    // The unvisited part: the head by the prefix-event sweep, or (split) rest[0 .. kw) as a
    // chain of its own. Then the frozen tokens among the c visited, last visited first,
    // each until done, below everything else.
    int64_t c = kt, kw = m;
    std::vector<double> hw;
    if (md.split && iv > 1 && md.depth + 1 < opt.chain_depth) {
        c = iv - 1;
        kw = ko - mt - c;
        ch.resize(ch1);
        for (int32_t y : rest) wn[y] = 0.0;
        std::fill(hd.begin(), hd.end(), 1.0);
        std::fill(frozen.begin(), frozen.end(), 0);
        down(c);
        const std::vector<int32_t> W(rest.begin(), rest.begin() + kw), vis(tail.begin(), tail.begin() + c);
        hw = chain_system(W, times(base1, vis, [&](std::size_t i) { return hd[i]; }), 0, {md.depth + 1, true}, ch, wn);
    } else {
        hw = event_sweep(head, times(base1, tail, [&](std::size_t i) { return hd[i]; }), ch, wn);
    }
    std::copy(hw.begin(), hw.end(), hout.begin() + mt);
    std::vector<int32_t> stack, fin;  // frozen / finished in the down pass
    std::vector<double> h0, hf;
    std::vector<int64_t> spos;  // position of each stack token in o
    for (int64_t i = c; i-- > 0;) {
        const int64_t at = ko - 1 - i;  // tail is o reversed
        if (frozen[i]) {
            stack.push_back(tail[i]);
            h0.push_back(hd[i]);
            spos.push_back(at);
        } else {
            fin.push_back(tail[i]);
            hf.push_back(hd[i]);
            hout[at] = hd[i];
        }
    }
    const std::vector<int32_t> unv(rest.begin(), rest.begin() + kw);
    const race::Pair eu =
        times(times(base1, unv, [&](std::size_t i) { return hw[i]; }), fin, [&](std::size_t i) { return hf[i]; });
    race::pass(
        gr, q, stack, eu,
        [&](int64_t i, double wi) {
            const int32_t y = stack[i];
            const double pi = p[y] - wn[y];
            double hn = h0[i];
            if (wi > 0.0 && pi > 0.0) {
                const double d = std::min(pi / wi, h0[i]);
                ch.push_back({y, d});
                wn[y] += wi * d;
                hn = h0[i] - d;
            }
            return hout[spos[i]] = hn;
        },
        w, h0.data());
    charge(3.0 * static_cast<double>(stack.size()));
    return hout;
}

inline double Route::order_chain(std::vector<Chunk>& ch, std::vector<double>& wn, int64_t mt, bool split) {
    ch.clear();
    for (int32_t y : Hp) wn[y] = 0.0;
    chain_system(ord, base, mt, {0, split}, ch, wn);
    return deficit_of(wn);
}

}  // namespace mdsd::verif::wor
