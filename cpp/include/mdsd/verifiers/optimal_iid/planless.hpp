// One drafted tuple of the i.i.d. optimal verifier without its plan (docs/theory/level_race.md §12.5-§12.6).
//
// The plan (optimal_iid/plan.hpp) cuts every token's window, O(V) windows per row, to verify one tuple.
// The levels left before a token depend only on the set of tokens cut before it (order-freedom,
// §12.6), so the window of a drafted token y is the window cut from shadow::remaining of the tokens
// earlier than y in its system's cutting order (dual_prefix's ratio order, its ties included):
// only the drafted tokens' windows are cut. The race, the coin and the residual are the plan's:
//   race: every draft lands in a piece of its token's window, the highest piece wins (the same
//     uniform per draft as OptimalIid::walk, so the same draws give the same output up to the
//     ~1e-16 moves of piece ends);
//   coin: p(y) / load(y), capped at 1;
//   residual r = p - a (optimal_iid/planless_row.hpp).
// Cost per row: the ratio sort (dual_prefix), one bucketed envelope pass per system holding drafts
// (remaining_at, read at each draft; repeated while a bound copy owns a segment a window reads)
// and one pass for the residual: O(V log V + K) per round.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/verifiers/certificate_split.hpp"
#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/optimal_iid/level_windows.hpp"
#include "mdsd/verifiers/optimal_iid/draft_levels.hpp"
#include "mdsd/verifiers/optimal_iid/planless_row.hpp"
#include "mdsd/verifiers/optimal_iid/remaining_levels.hpp"

namespace mdsd::verif::shadow {

// The race of one tuple: its handling system's distinct drafts, their windows and coins.
struct TupleRace {
    int m = 0;
    std::vector<int32_t> toks;
    std::vector<int> cnt;
    std::vector<int64_t> b, e;  // pieces of toks[k]: [b[k], e[k]), by descending level
    std::vector<double> lo, hi, suf;
    std::vector<double> coin;  // by token id (law_chain's indexing); only the drafted ones are set
    bool untouched = false;    // negative control for the tests: cut every window from the untouched levels
    int buckets = 0;           // > 0: the levels before a draft by remaining_bucketed (no sort of the set)
    bool one_pass = true;      // all of a system's drafts from one pass (remaining_at); false: a pass per draft
    bool local = true;         // one_pass: refine only the bound copies under a draft's window (window_need)
    int depth_margin = 2;      // segments window_need counts past the farthest the window reads from, plus
                               // one (fewer: the tests' negative control)
    bool sampler_points = true;  // race_winner: refine only at the window's ends and the drawn points
    bool check_draws = true;     // sampler_points: refine at a drawn point a bound copy owns (false: the
                                 // tests' negative control)
    std::vector<std::vector<Seg>> pre[2];  // one_pass: the levels before each draft k of system s
    std::vector<int64_t> at_pos[2];
    std::vector<int> slot;         // draft k -> its read in pre[its system]
    std::vector<int> draft_of[2];  // a read of system s -> its draft
    std::vector<std::vector<char>> bound[2];  // per read, by ascending level: a bound copy owns it
    std::vector<std::vector<double>> extra;   // sampler: levels of draft k that must be exact too
    std::vector<double> us;                   // sampler: the uniforms drawn so far, by handled draft
    bool points = false;                      // this race: the sampler's point-exact levels
    double win_level = -1.0;                  // race_winner: the level the winner drew (tests)
    level::Levels scratch;                    // window_need's trial cut
    std::vector<Seg> cut;
};

// The levels a draft of system s at cutting position kpre is cut from: iv, by ascending level, as
// take_window wants them (iv.back(): the end the cut starts from).
inline void window_levels(const TupleRow& r, int s, int64_t kpre, std::vector<Seg>&& iv, level::Levels& L) {
    L.n = r.n;
    L.from_bottom = s == 0;
    L.iv = std::move(iv);
    if (s == 0) std::reverse(L.iv.begin(), L.iv.end());
    L.total = r.total[s][kpre];
}

// Index, counted from the end system s cuts from, of the segment of lv (ascending) holding level v.
inline int64_t seg_from_cut_end(int s, const std::vector<Seg>& lv, double v) {
    const int64_t m = static_cast<int64_t>(lv.size());
    const int64_t i =
        std::upper_bound(lv.begin(), lv.end(), v, [](double x, const Seg& g) { return x < g.lo; }) - lv.begin() - 1;
    const int64_t a = std::max<int64_t>(0, i);
    return s == 0 ? a : m - 1 - a;
}

// The segments of the levels lv (ascending) that draft k's window reads, counted from the end the
// cut starts from (remaining_at's need); none listed: all (the system's last token, or a window
// as large as what is left).
// - The law (every piece matters): up to the farthest segment its window takes from, and the
//   next, whose boundary ends that one.
// - The sampler (w.points): the segments holding the window's two ends, with a neighbour on each
//   side, and those holding the points drawn in it (w.extra). A window's load grows as it slides
//   away from the cutting end (the levels under it rise pointwise), so its place follows from the
//   load at its two ends alone, and each draw reads one level.
inline void window_need(const TupleRow& r, int s, int k, const std::vector<Seg>& lv, TupleRace& w,
                        std::vector<NeedRange>& need) {
    const int32_t y = w.toks[k];
    if (r.at[y] + 1 == static_cast<int64_t>(r.cq[s].size())) return;
    window_levels(r, s, r.at[y], std::vector<Seg>(lv), w.scratch);
    if (!(r.q[y] < w.scratch.total)) return;
    w.cut.clear();
    level::take_window(w.scratch, r.q[y], r.p[y], s == 0 ? +1 : -1, false, w.cut);
    if (w.cut.empty()) return;
    double lo = w.cut[0].lo, hi = w.cut[0].hi;
    for (const Seg& g : w.cut) {
        lo = std::min(lo, g.lo);
        hi = std::max(hi, g.hi);
    }
    const int64_t e_lo = seg_from_cut_end(s, lv, lo), e_hi = seg_from_cut_end(s, lv, hi);
    const int64_t e_near = std::min(e_lo, e_hi), e_far = std::max(e_lo, e_hi);
    if (!w.points) {
        need.push_back({0, std::max<int64_t>(0, e_far + w.depth_margin)});
        return;
    }
    need.push_back({e_near - 1, e_near + 2});
    need.push_back({e_far - 1, e_far + w.depth_margin});
    if (k < static_cast<int>(w.extra.size()))
        for (const double v : w.extra[k]) {
            const int64_t e = seg_from_cut_end(s, lv, v);
            need.push_back({e - 1, e + 2});
        }
}

// Cuts the windows of tuple t's drafts in the system that handles it.
inline void race(const TupleRow& r, const int32_t* t, TupleRace& w) {
    w.toks.resize(r.n);
    w.cnt.resize(r.n);
    if (w.coin.size() != static_cast<std::size_t>(r.V)) w.coin.assign(r.V, 0.0);
    for (int k = 0; k < w.m; ++k) w.coin[w.toks[k]] = 0.0;  // the previous tuple's
    w.m = group_drafts(r.side, t, r.n, w.toks.data(), w.cnt.data());
    w.b.resize(w.m);
    w.e.resize(w.m);
    w.lo.clear();
    w.hi.clear();
    std::vector<Seg> out;
    if (w.one_pass) {
        w.slot.assign(w.m, -1);
        for (int s = 0; s < 2; ++s) w.at_pos[s].clear();
        for (int k = 0; k < w.m; ++k) {
            const Side sd = r.side[w.toks[k]];
            if (sd == Side::Never) continue;
            const int s = sd == Side::Inner ? 0 : 1;
            w.slot[k] = static_cast<int>(w.at_pos[s].size());
            w.at_pos[s].push_back(w.untouched ? 0 : r.at[w.toks[k]]);
        }
        for (int s = 0; s < 2; ++s) {
            if (w.at_pos[s].empty()) continue;
            w.draft_of[s].assign(w.at_pos[s].size(), -1);
            for (int k = 0; k < w.m; ++k)
                if (w.slot[k] >= 0 && r.side[w.toks[k]] == (s == 0 ? Side::Inner : Side::Outer))
                    w.draft_of[s][w.slot[k]] = k;
            SegmentNeed need;
            if (w.local && !w.untouched)
                need = [&](int rd, const std::vector<Seg>& lv, std::vector<NeedRange>& g) {
                    window_need(r, s, w.draft_of[s][rd], lv, w, g);
                };
            remaining_at(r.sys[s], r.cq[s].data(), r.cp[s].data(), w.at_pos[s].data(),
                         static_cast<int>(w.at_pos[s].size()), w.buckets, w.pre[s], nullptr, true, need,
                         w.points ? &w.bound[s] : nullptr);
        }
    }
    for (int k = 0; k < w.m; ++k) {
        const int32_t y = w.toks[k];
        w.b[k] = static_cast<int64_t>(w.lo.size());
        if (r.side[y] == Side::Never) {  // a tuple with a q = 0 draft (probability 0): no window
            w.e[k] = w.b[k];
            continue;
        }
        const int s = r.side[y] == Side::Inner ? 0 : 1;
        const int64_t j = r.at[y], kpre = w.untouched ? 0 : j;
        level::Levels L;
        if (w.one_pass)  // (a copy: the sampler looks its draws up in the read)
            window_levels(r, s, kpre, w.points ? std::vector<Seg>(w.pre[s][w.slot[k]]) : std::move(w.pre[s][w.slot[k]]),
                          L);
        else
            window_levels(r, s, kpre,
                          w.buckets > 0 ? remaining_bucketed(r.sys[s], r.ct[s].data(), kpre, r.p, r.q, w.buckets)
                                        : remaining(r.sys[s], r.cq[s].data(), r.cp[s].data(), kpre),
                          L);
        out.clear();
        const bool last = j + 1 == static_cast<int64_t>(r.cq[s].size());
        level::take_window(L, r.q[y], r.p[y], s == 0 ? +1 : -1, last, out);
        std::sort(out.begin(), out.end(), [](const Seg& u, const Seg& v) { return u.lo > v.lo; });
        double ld = 0.0;
        for (const Seg& g : out) {
            w.lo.push_back(g.lo);
            w.hi.push_back(g.hi);
            ld += level::diffpow(g.lo, g.hi, r.n);  // the load of the pieces as stored, as the plan
        }
        w.e[k] = static_cast<int64_t>(w.lo.size());
        if (ld > 0.0) w.coin[y] = std::min(1.0, r.p[y] / ld);
    }
    w.suf.resize(w.lo.size());
    for (int k = 0; k < w.m; ++k) {
        double s = 0.0;
        for (int64_t u = w.e[k] - 1; u >= w.b[k]; --u) {
            s += w.hi[u] - w.lo[u];
            w.suf[u] = s;
        }
    }
}

// Whether draft k's piece lies in a segment of its read that a bound copy owns (the sampler's
// point-exact race; its level there is only a bound).
inline bool piece_on_bound(const TupleRow& r, const TupleRace& w, int k, int64_t piece) {
    const int s = r.side[w.toks[k]] == Side::Inner ? 0 : 1;
    if (static_cast<std::size_t>(w.slot[k]) >= w.bound[s].size()) return false;
    const std::vector<Seg>& lv = w.pre[s][w.slot[k]];
    const std::vector<char>& f = w.bound[s][w.slot[k]];
    const double v = 0.5 * (w.lo[piece] + w.hi[piece]);
    const int64_t i =
        std::upper_bound(lv.begin(), lv.end(), v, [](double x, const Seg& g) { return x < g.lo; }) - lv.begin() - 1;
    return i >= 0 && i < static_cast<int64_t>(f.size()) && f[i];
}

// The race of the sampler: the winning draft, or -1 (OptimalIid::walk's draws on the tuple's own
// windows). With w.sampler_points, the levels are exact only at each window's ends and at the
// points drawn in it: a draw that lands where a bound copy owns the level is marked, and the race
// is run again on the same uniforms (after kPointRounds, with the law's refinement).
constexpr int kPointRounds = 4;
inline int32_t race_winner(const TupleRow& r, const int32_t* t, TupleRace& w, Rng& rng) {
    w.us.clear();
    w.extra.clear();
    for (int round = 0;; ++round) {
        w.points = w.sampler_points && w.one_pass && w.local && !w.untouched && round < kPointRounds;
        race(r, t, w);
        if (w.points && w.extra.size() < static_cast<std::size_t>(w.m)) w.extra.resize(w.m);
        double best = -1.0;
        int32_t win = -1;
        std::size_t used = 0;
        bool again = false;
        for (int d = 0; d < r.n; ++d) {
            int k = 0;
            while (k < w.m && w.toks[k] != t[d]) ++k;
            if (k == w.m || w.b[k] == w.e[k]) continue;  // another system's draft, or no window
            if (used == w.us.size()) w.us.push_back(rng.uniform());
            const double u = w.us[used++];
            const int64_t piece = level::draw_piece(w.suf.data(), w.b[k], w.e[k], u);
            // (one distinct token wins whatever its level: only its window's ends matter, for the coin)
            if (w.points && w.check_draws && w.m > 1 && piece_on_bound(r, w, k, piece)) {
                w.extra[k].push_back(0.5 * (w.lo[piece] + w.hi[piece]));
                again = true;
            }
            if (w.lo[piece] > best) {
                best = w.lo[piece];
                win = t[d];
                const double below = piece + 1 < w.e[k] ? w.suf[piece + 1] : 0.0;  // width under the piece
                w.win_level = w.lo[piece] + (u * w.suf[w.b[k]] - below);
            }
        }
        w.points = false;
        if (!again) return win;
    }
}

// The sampler, on a row made with its residual.
inline void walk(const TupleRow& r, const int32_t* t, TupleRace& w, SampleVisitor& vis) {
    const int32_t win = race_winner(r, t, w, vis.rng);
    if (win >= 0 && vis.test(win, w.coin[win])) return;
    vis.residual(r.res);
}

// The sampler on a row made without its residual: built on rejection only, the same draws. An
// empty residual (alpha* = 1 up to rounding) falls back to p, as the plan's does: `target` (the
// visitor's fallback) is then built from p.
inline void walk_lazy(TupleRow& r, const int32_t* t, TupleRace& w, SampleVisitor& vis, Categorical& target) {
    const int32_t win = race_winner(r, t, w, vis.rng);
    if (win >= 0 && vis.test(win, w.coin[win])) return;
    build_residual(r);
    if (r.res.empty()) target.build(r.p, r.V);
    vis.residual(r.res);
}

// The exact output law given the tuple: every branch of the same race (LawVisitor).
inline void walk(const TupleRow& r, const int32_t* t, TupleRace& w, LawVisitor& vis) {
    race(r, t, w);
    std::vector<double> sel(static_cast<std::size_t>(std::max(1, w.m)));
    if (w.m > 0)
        level::race_win_probs(w.b.data(), w.e.data(), w.lo.data(), w.hi.data(), w.suf.data(), w.cnt.data(), w.m,
                              sel.data());
    law_chain(w.toks.data(), sel.data(), w.m, w.coin, r.res, vis);
}

}  // namespace mdsd::verif::shadow
