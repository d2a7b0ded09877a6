// The high end of acceptance_bounds for "wor" on rows whose §3.2 family is too large to take whole
// (docs/design/intervals.md §3.2, "Beyond the limit"): a descent inside the family from a start set (the
// candidate search's best, projected onto the family's coordinates h_B, h_C and the A prefix), by
// boxes of mdsd/intervals/unseen_mass.hpp's cut_family_box. Every set of the family is a valid bound, so the
// result is the smallest over the sets tried: never below the family's minimum, and equal to it
// once a box covers the family.
//   * Lines: each coordinate over its whole range through the start, then through the fullest set
//     (h_B = |B|, h_C = |C|, all of A: the sets near it need every coordinate large at once, which
//     lines from a small start miss), then through the best set (both ends of D in every box),
//     until a round of the three lowers nothing.
//   * Then boxes of radius w = 2, 4, 8, ... in h_C and the A prefix (w / 8, at least 1, in h_B)
//     around the best set: the coordinates move together, which lines miss (h_C and the prefix both
//     add q mass to H, h_B only p and forced mass); a box that lowers the best goes back to the lines.
// `budget` caps the work per row (race steps plus sets tried, CutFamily::work): a box that would
// exceed what is left is not run, and the search stops.
#pragma once

#include <algorithm>
#include <cstdint>

#include "mdsd/intervals/unseen_mass.hpp"

namespace mdsd {

// What a box costs before it runs: the race steps to its corner and through it, and its sets.
inline int64_t cut_box_work(const CutBox& b, const CutFamily& fm) {
    int64_t lumps = 0;
    for (const CutLump& lp : fm.lumps) lumps += (lp.hb <= b.b1 && lp.hb_end >= b.b0);
    const int64_t nc = b.c1 - b.c0 + 1, na = b.a1 - b.a0 + 1;
    return b.c0 + b.a0 + (nc - 1) + nc * (na - 1) + nc * na * lumps;
}

struct BoxSearch {
    double high = 1.0;
    int64_t work = 0, boxes = 0;
    bool whole = false;  // a box covered the family: high is its minimum
    int64_t arg[4] = {0, 0, 0, 0};  // the best set: h_B, h_C, A prefix, h_D
};

// `hold_a`: the A prefix stays at the start's (the tests' negative control: the family's minimum
// needs the A coordinate).
inline BoxSearch wor_cut_descent(const TruncatedRow& row, int k, int64_t hb, int64_t hc, int64_t j, int64_t budget,
                                 WorBoundsWorkspace& ws, int pieces = kMaxCapPieces, bool hold_a = false) {
    cut_family_prepare(row, k, pieces, ws);
    CutFamily& fm = ws.fam;
    BoxSearch out;
    hb = std::clamp<int64_t>(hb, 0, fm.nB);
    hc = std::clamp<int64_t>(hc, 0, fm.nC);
    j = std::clamp<int64_t>(j, 0, fm.nA);
    fm.arg = CutBox{hb, hb, hc, hc, j, j};
    const CutBox all{0, fm.nB, 0, fm.nC, 0, hold_a ? j : fm.nA};
    const int64_t a_lo = hold_a ? j : 0;
    // runs the box if the budget allows; false when it does not (the search ends)
    auto run = [&](const CutBox& b) {
        if (fm.work + cut_box_work(b, fm) > budget) return false;
        cut_family_box(b, ws);
        ++out.boxes;
        if (b.b0 == 0 && b.b1 == fm.nB && b.c0 == 0 && b.c1 == fm.nC && b.a0 == a_lo && b.a1 == all.a1)
            out.whole = true;
        return true;
    };
    // one line per coordinate through the best set
    auto lines = [&]() {
        return (hold_a || run(CutBox{fm.arg.b0, fm.arg.b0, fm.arg.c0, fm.arg.c0, 0, fm.nA})) &&
               run(CutBox{fm.arg.b0, fm.arg.b0, 0, fm.nC, fm.arg.a0, fm.arg.a0}) &&
               run(CutBox{0, fm.nB, fm.arg.c0, fm.arg.c0, fm.arg.a0, fm.arg.a0});
    };
    bool go = lines();
    if (go && !hold_a) {  // and through the fullest set: sets near it need every coordinate large at once
        const CutBox kept = fm.arg;
        const double level = fm.best;
        fm.arg = CutBox{fm.nB, fm.nB, fm.nC, fm.nC, fm.nA, fm.nA};
        go = lines();
        if (!(fm.best < level)) fm.arg = kept;
    }
    while (go && !out.whole) {
        for (;;) {  // lines through the best set until a round lowers nothing
            const double before = fm.best;
            go = lines();
            if (!go || !(fm.best < before)) break;
        }
        const double level = fm.best;
        for (int64_t w = 2; go && fm.best == level && !out.whole; w *= 2) {
            const CutBox a = fm.arg;
            const int64_t wb = std::max<int64_t>(1, w / 8);  // B moves p and the forced mass, not the race
            go = run(CutBox{std::max<int64_t>(0, a.b0 - wb), std::min(fm.nB, a.b0 + wb), std::max<int64_t>(0, a.c0 - w),
                            std::min(fm.nC, a.c0 + w), hold_a ? a.a0 : std::max<int64_t>(0, a.a0 - w),
                            hold_a ? a.a0 : std::min(fm.nA, a.a0 + w)});
        }
        if (fm.best == level) break;  // no box lowered it: the whole family was taken, or the budget is spent
    }
    out.high = fm.best;
    const int64_t arg[4] = {fm.arg.b0, fm.arg.c0, fm.arg.a0, fm.arg_d};
    std::copy_n(arg, 4, out.arg);
    out.work = fm.work;
    return out;
}

}  // namespace mdsd
