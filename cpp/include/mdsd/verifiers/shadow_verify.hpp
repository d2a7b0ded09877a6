// One drafted tuple of the i.i.d. optimal verifier without its plan (docs/theory.md §12.5-§12.6).
//
// The plan (optimal_iid.hpp) cuts every token's window, O(V) windows per row, to verify one tuple.
// The levels left before a token depend only on the set of tokens cut before it (order-freedom,
// §12.6), so the window of a drafted token y is the window cut from shadow::remaining of the tokens
// earlier than y in its system's cutting order (dual_prefix's ratio order, its ties included):
// only the drafted tokens' windows are cut. The race, the coin and the residual are the plan's:
//   race: every draft lands in a piece of its token's window, the highest piece wins (the same
//     uniform per draft as OptimalIid::walk, so the same draws give the same output up to the
//     ~1e-16 moves of piece ends);
//   coin: p(y) / load(y), capped at 1;
//   residual r = p - a: inner windows and the outer exact prefix end at a = p (r = 0; the plan
//     keeps ~1-ulp leftovers there), q = 0 tokens keep r = p, and the outer capped suffix (§12.6:
//     after the first window that cannot reach p(y), every window is the top one) tiles the levels
//     left by the exact prefix from the top, so its loads come from one walk over those levels.
// Cost per row: the ratio sort (dual_prefix), one bucketed envelope pass per system holding drafts
// (remaining_at, read at each draft; repeated while a bound copy reaches a read) and two passes for
// the residual: O(V log V + K) per round.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/dual.hpp"
#include "mdsd/verifiers/certificate_split.hpp"
#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/level_windows.hpp"
#include "mdsd/verifiers/shadow_prefixes.hpp"
#include "mdsd/verifiers/shadow_windows.hpp"

namespace mdsd::verif::shadow {

// One row, ready for the tuples drafted from it. System 0 is the inner one (H*, cut from the
// bottom by descending p/q), 1 the outer one (cut from the top by ascending p/q).
struct TupleRow {
    const double* p = nullptr;
    const double* q = nullptr;
    int64_t V = 0;
    int n = 1;
    double alpha_star = 0.0;
    std::vector<Side> side;
    std::vector<int64_t> at;       // token -> its index in its system's cutting order
    std::vector<int32_t> ct[2];        // each system's tokens in cutting order
    std::vector<double> cq[2], cp[2];  // their q and p
    std::vector<double> total[2];  // measure left before each cut, rounded as the plan's cut does
    System sys[2];
    int64_t exact_outer = 0;  // outer windows that reach p(y); the rest is the capped suffix
    Categorical res;          // the residual r = p - a (once build_residual ran)
    std::vector<double> rw;   // its weights by token (build_residual's scratch)
};

// The loads of the capped suffix: widths w[0..m) tiled from the end R is cut from (outer: the top),
// the last taking what is left. R: segments by ascending level.
inline void tile_loads(const std::vector<Seg>& R, const double* w, int64_t m, int n, double* load) {
    int64_t s = static_cast<int64_t>(R.size()) - 1;
    double hi = s >= 0 ? R[s].hi : 0.0;  // the top of what is left of segment s
    for (int64_t k = 0; k < m; ++k) {
        double need = w[k], ld = 0.0;
        const bool last = k + 1 == m;
        while (s >= 0 && (last || need > 0.0)) {
            const double lo = last ? R[s].lo : std::max(R[s].lo, hi - need);
            ld += level::diffpow(lo, hi, n);
            need -= hi - lo;
            hi = lo;
            if (!(hi > R[s].lo)) {
                if (--s >= 0) hi = R[s].hi;
            } else if (!last) {
                break;
            }
        }
        load[k] = ld;
    }
}

// The residual r = p - a of a row: only a rejected tuple needs it (walk_lazy).
inline void build_residual(TupleRow& r);

// The split, the cutting orders and (residual = true) the residual of one row, into r: a row
// reused from one call to the next keeps its buffers (at V = 49,152 a fresh row's ~2 MB of page
// faults cost more than the split itself). ws: dual_prefix's workspace.
inline void make_row(TupleRow& r, const double* p, const double* q, int64_t V, int n, DualWorkspace& ws,
                     bool residual = true) {
    r.p = p;
    r.q = q;
    r.V = V;
    r.n = n;
    const DualResult dr = dual_prefix(p, q, V, n, Scheme::Iid, WorMethod::Auto, ws);
    r.alpha_star = dr.alpha;
    const std::vector<int32_t>& ord = ws.order;
    const int64_t K = static_cast<int64_t>(ord.size()), ks = dr.k_star;
    r.side.assign(V, Side::Never);
    r.at.assign(V, -1);
    double qH = 0.0, qA = 0.0;  // summed as OptimalIid::prepare sums them
    for (int64_t k = 0; k < ks; ++k) qH += q[ord[k]];
    for (int64_t k = ks; k < K; ++k) qA += q[ord[k]];
    r.sys[0] = System{0.0, qH, n, true};
    r.sys[1] = System{qH, qA, n, false};
    for (int s = 0; s < 2; ++s) {
        const int64_t m = s == 0 ? ks : K - ks;
        r.ct[s].resize(m);
        r.cq[s].resize(m);
        r.cp[s].resize(m);
        r.total[s].resize(m);
        double left = s == 0 ? qH : qA;
        for (int64_t k = 0; k < m; ++k) {
            const int32_t y = s == 0 ? ord[ks - 1 - k] : ord[ks + k];
            r.side[y] = s == 0 ? Side::Inner : Side::Outer;
            r.at[y] = k;
            r.ct[s][k] = y;
            r.cq[s][k] = q[y];
            r.cp[s][k] = p[y];
            r.total[s][k] = left;
            left = std::max(0.0, left - q[y]);
        }
    }
    if (residual) build_residual(r);
}

inline TupleRow make_row(const double* p, const double* q, int64_t V, int n, DualWorkspace& ws, bool residual = true) {
    TupleRow r;
    make_row(r, p, q, V, n, ws, residual);
    return r;
}

inline void build_residual(TupleRow& r) {
    const int64_t V = r.V;
    const int n = r.n;
    std::vector<double>& res = r.rw;
    res.assign(static_cast<std::size_t>(V), 0.0);
    for (int64_t y = 0; y < V; ++y)
        if (r.side[y] == Side::Never) res[y] = r.p[y];
    const int64_t mo = static_cast<int64_t>(r.ct[1].size());
    if (mo > 0) {
        // the last token takes what is left (remaining() does not judge it): it always joins the
        // tiling. R: the levels left by the exact prefix, from the pass that finds where it ends.
        const std::vector<Seg> R =
            remaining(r.sys[1], r.cq[1].data(), r.cp[1].data(), mo - 1, nullptr, &r.exact_outer, true);
        const int64_t e = r.exact_outer, mc = mo - e;
        if (mc > 0) {
            std::vector<double> load(static_cast<std::size_t>(mc));
            tile_loads(R, r.cq[1].data() + e, mc, n, load.data());
            for (int64_t k = 0; k < mc; ++k) res[r.ct[1][e + k]] = std::max(0.0, r.cp[1][e + k] - load[k]);
        }
    }
    r.res.build(res.data(), V);
}

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
    bool local = true;         // one_pass: refine only the bound copies under a draft's window (its depth)
    int depth_margin = 2;      // segments window_depth counts past the farthest the window reads from, plus
                               // one (fewer: the tests' negative control)
    std::vector<std::vector<Seg>> pre[2];  // one_pass: the levels before each draft k of system s
    std::vector<int64_t> at_pos[2];
    std::vector<int> slot;         // draft k -> its read in pre[its system]
    std::vector<int> draft_of[2];  // a read of system s -> its draft
    level::Levels scratch;         // window_depth's trial cut
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

// How many segments of the levels lv, from the end the cut starts from, draft y's window reads
// (remaining_at's depth): up to the farthest one its window takes from, and the next, whose
// boundary ends that one; -1: all (the system's last token, or a window as large as what is left).
inline int64_t window_depth(const TupleRow& r, int s, int32_t y, const std::vector<Seg>& lv, TupleRace& w) {
    const int64_t j = r.at[y], m = static_cast<int64_t>(lv.size());
    if (j + 1 == static_cast<int64_t>(r.cq[s].size())) return -1;
    window_levels(r, s, j, std::vector<Seg>(lv), w.scratch);
    if (!(r.q[y] < w.scratch.total)) return -1;
    w.cut.clear();
    level::take_window(w.scratch, r.q[y], r.p[y], s == 0 ? +1 : -1, false, w.cut);
    if (w.cut.empty()) return -1;
    int64_t idx;
    if (s == 0) {  // from the bottom: the segment holding the highest piece end
        double far = w.cut[0].hi;
        for (const Seg& g : w.cut) far = std::max(far, g.hi);
        idx = std::lower_bound(lv.begin(), lv.end(), far, [](const Seg& g, double v) { return g.hi < v; }) - lv.begin();
    } else {  // from the top: the segment holding the lowest piece end
        double far = w.cut[0].lo;
        for (const Seg& g : w.cut) far = std::min(far, g.lo);
        const int64_t i =
            std::upper_bound(lv.begin(), lv.end(), far, [](double v, const Seg& g) { return v < g.lo; }) - lv.begin();
        idx = m - i;
    }
    return std::max<int64_t>(0, idx + w.depth_margin);
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
            SegmentDepth depth;
            if (w.local && !w.untouched)
                depth = [&](int rd, const std::vector<Seg>& lv) {
                    return window_depth(r, s, w.toks[w.draft_of[s][rd]], lv, w);
                };
            remaining_at(r.sys[s], r.cq[s].data(), r.cp[s].data(), w.at_pos[s].data(),
                         static_cast<int>(w.at_pos[s].size()), w.buckets, w.pre[s], nullptr, true, depth);
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
        if (w.one_pass) window_levels(r, s, kpre, std::move(w.pre[s][w.slot[k]]), L);
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

// The race of the sampler: the winning draft, or -1 (OptimalIid::walk's draws on the tuple's own
// windows).
inline int32_t race_winner(const TupleRow& r, const int32_t* t, TupleRace& w, Rng& rng) {
    race(r, t, w);
    double best = -1.0;
    int32_t win = -1;
    for (int d = 0; d < r.n; ++d) {
        int k = 0;
        while (k < w.m && w.toks[k] != t[d]) ++k;
        if (k == w.m || w.b[k] == w.e[k]) continue;  // another system's draft, or no window
        const int64_t piece = level::draw_piece(w.suf.data(), w.b[k], w.e[k], rng.uniform());
        if (w.lo[piece] > best) {
            best = w.lo[piece];
            win = t[d];
        }
    }
    return win;
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
