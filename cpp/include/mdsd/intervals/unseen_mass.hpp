// Both ends of acceptance_bounds for without-replacement drafts on truncated logs
// (docs/guide/intervals.md §2, §3.2), on one row's logged tokens, by the exponential race of
// race::WorRace (race/prefix_mass.hpp), called, not changed:
//   * wor_bucket_alpha (the low end): q's unseen mass u as a Poisson stream of rate u that is in
//     every H. In the race, J phantoms of weight u / J add (e^{-ut/J} + (1 - e^{-ut/J}) z)^J to the
//     count's generating function, which tends to e^{ut(z - 1)}: the count starts as Poisson(ut)
//     instead of 0, and no phantom column is needed.
//   * wor_cut_min (the high end): the smallest cut bound 1 + p_max(H) - Q_min(H) over every H, from
//     a few structured candidates (cheapest B, heaviest C, none or all of D, prefixes of A in ratio
//     order). Q_min(H) holds the q mass forced into H at the cap (mdsd/intervals/forced_pieces.hpp, §3.5), or as
//     one "lump" token with pieces = 1 (§3); either changes the count's tail in closed form (one
//     token: Fbar' = Fbar - b_lump P[k-1]; equal pieces: a binomial count), so every lump shares one
//     race state. The family is one box of cut_family_box, which mdsd/intervals/family_descent.hpp's search calls
//     on parts of it (rows too large for the whole).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mdsd/core/order.hpp"
#include "mdsd/race/grid.hpp"
#include "mdsd/race/prefix_mass.hpp"
#include "mdsd/intervals/forced_pieces.hpp"

namespace mdsd {

// The race's counts start as a Poisson(u t) count (truncated below k = race.n) on every node:
// a bucket of rate u that supplies any number of arrivals. Right after race.reset().
inline void race_start_with_bucket(race::WorRace& r, double u) {
    const int n = r.n;
    for (int64_t g = 0; g < r.G; ++g) {
        const double x = u * r.scale * r.t[g];
        double term = std::exp(-x);
        for (int c = 0; c < n; ++c) {
            r.P[static_cast<std::size_t>(c) * r.G + g] = term;
            term *= x / (c + 1);
        }
    }
    r.saturate();
}

// The integral of race::WorRace::value with the count's tail fbar (one value per node, 0 from
// g_sat on) in place of the race's own: Q = 1 - Ltail(lam) - h lam sum_g t_g e^{-lam t_g} fbar_g.
// `e` and `b` are scratch of the grid's length.
inline double race_integral(const race::WorRace& r, const double* fbar, double lam, double* e, double* b) {
    const double x = lam * r.scale;
    const int64_t g_max = static_cast<int64_t>(std::floor((std::log(race::WorRace::kCut / x) - r.log_t_lo) / r.h)) + 1;
    const int64_t gn = std::clamp<int64_t>(g_max, 0, r.g_sat);
    race::factor_chain(r.t.data(), gn, r.M, r.M, x, e, b);
    double acc = 0.0;
    for (int64_t g = 0; g < gn; ++g) acc += r.t[g] * e[g] * fbar[g];
    return 1.0 - r.ltail(x) - r.h * x * acc;
}

// One row's logs on its union layout (docs/guide/intervals.md §5): p and q on L columns (logged values,
// 0 elsewhere; a column with both 0 is padding), D = `hidden` tokens logged in neither, the
// unseen masses and caps (up, tp) and (uq, tq). For "top<m>+wor" the columns of T (q's top m,
// in every H) are zeroed and T enters through p_T = p(T) and n_tc = |T ∩ U_p| (its p-unseen
// tokens); Q is then the random part's, on q off T (the race is invariant to the weights' scale).
struct TruncatedRow {
    const double *p, *q;
    int64_t L, hidden;
    double up, tp, uq, tq;
    double p_T = 0.0;
    int64_t n_tc = 0;
};

// One row's §3.2 family, sorted and summed, for boxes of it (cut_family_box): A = logged in both
// (in ratio order), B = in p only (cheapest first), C = in q only (heaviest first), D = `hidden`.
// A lump is a forced q mass for an end of D and a run of h_B with the same (forced, outside) pair:
// a larger h_B in the run only adds p, so the run's first stands for it.
struct CutLump {
    double pB, lump, off;
    int64_t hb, hb_end, d;  // h_B's run [hb, hb_end], h_D
    ForcedPieces fp;
    int64_t tab;  // offset of its tail table in WorBoundsWorkspace::lump_b, -1 until a box needs it
};

// A box of the family: h_B in [b0, b1], h_C in [c0, c1], A prefixes [a0, a1], both ends of D.
struct CutBox {
    int64_t b0, b1, c0, c1, a0, a1;
};

struct CutFamily {
    const TruncatedRow* row = nullptr;
    int k = 0;
    int64_t nA = 0, nB = 0, nC = 0, nD = 0;
    std::vector<double> bs, cs;
    std::vector<CutLump> lumps;
    std::vector<double> empty;  // the race's counts right after reset
    int64_t gs_empty = 0;
    double best = 1.0;
    CutBox arg{};        // the best set so far, as a box of one (b0 = its h_B run's first)
    int64_t arg_d = 0;   // and its h_D
    int64_t work = 0;    // race steps and sets tried since prepare: the budget's unit
};

struct WorBoundsWorkspace {
    OrderWorkspace ow;
    std::vector<int32_t> order;
    std::vector<double> pa, qa, lam, fbar, last, lump_b, corr, e, b, sav, e2, b2, pmf;
    std::vector<double> cum_b, cum_c, suf_c, PA, SA, suf_a;
    race::WorRace race;
    CutFamily fam;
};

// 1 + min over H of [p(H) - Q(H + bucket)] (clipped to [0, 1]) for k draws without replacement
// from the weights q (L logged tokens, not normalised: q's total is sum q + u) plus a bucket of
// mass u > 0; p is never drafted outside the logged tokens. The minimum over H is over the prefixes
// of the ratio order (docs/theory/sorted_prefix.md §4.2; the bucket, p = 0, is in every prefix), and the
// i.i.d. bound Q <= (q share of H)^k skips prefixes that cannot beat the best.
inline double wor_bucket_alpha(const double* p, const double* q, int64_t L, double u, int k, WorBoundsWorkspace& ws) {
    const int64_t K = ratio_order(p, q, L, ws.ow, ws.order);
    ws.lam.assign(static_cast<std::size_t>(K) + 1, 0.0);
    for (int64_t i = K - 1; i >= 0; --i) ws.lam[i] = ws.lam[i + 1] + q[ws.order[i]];  // outside mass, small first
    const double total = ws.lam[0] + u;
    double lam_min = std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < K; ++i) lam_min = std::min(lam_min, ws.lam[i]);
    if (!(lam_min > 0.0)) lam_min = total;  // no logged draft mass: only the bucket-only prefix has lam = 0
    race::WorRace& r = ws.race;
    r.defer = false;  // a few logged tokens: no batch to wait for
    r.reset(k, lam_min);
    race_start_with_bucket(r, u);
    double best = 0.0, P = 0.0, S = u;
    for (int64_t i = 0; i <= K; ++i) {
        if (i > 0) {
            const int32_t y = ws.order[i - 1];
            r.add(q[y]);
            P += p[y];
            S += q[y];
        }
        const double lam = ws.lam[i];
        if (!(lam > 0.0)) {  // every logged draft token in H: the bucket supplies the rest
            best = std::min(best, P - 1.0);
            continue;
        }
        if (P - std::pow(S / total, k) >= best) continue;
        best = std::min(best, P - r.value(S, lam));
    }
    return std::clamp(1.0 + best, 0.0, 1.0);
}

// Sorts the row's classes, their sums and the forced masses, and resets the race for the smallest
// outside total of any set of the family (so every box's integrals run on one grid).
inline void cut_family_prepare(const TruncatedRow& row, int k, int pieces, WorBoundsWorkspace& ws) {
    CutFamily& fm = ws.fam;
    const double *p = row.p, *q = row.q;
    fm.row = &row;
    fm.k = k;
    fm.bs.clear();
    fm.cs.clear();
    ws.pa.clear();
    ws.qa.clear();
    for (int64_t j = 0; j < row.L; ++j) {
        if (p[j] > 0.0 && q[j] > 0.0) {
            ws.pa.push_back(p[j]);
            ws.qa.push_back(q[j]);
        } else if (p[j] > 0.0) fm.bs.push_back(p[j]);
        else if (q[j] > 0.0) fm.cs.push_back(q[j]);
    }
    const int64_t nA = static_cast<int64_t>(ws.pa.size()), nB = static_cast<int64_t>(fm.bs.size());
    const int64_t nC = static_cast<int64_t>(fm.cs.size()), nD = row.hidden;
    fm.nA = nA;
    fm.nB = nB;
    fm.nC = nC;
    fm.nD = nD;
    std::sort(fm.bs.begin(), fm.bs.end());
    std::sort(fm.cs.begin(), fm.cs.end(), std::greater<double>());
    ratio_order(ws.pa.data(), ws.qa.data(), nA, ws.ow, ws.order);
    auto prefix = [](std::vector<double>& cum, int64_t n, auto val) {
        cum.assign(static_cast<std::size_t>(n) + 1, 0.0);
        for (int64_t i = 0; i < n; ++i) cum[i + 1] = cum[i] + val(i);
    };
    auto suffix = [](std::vector<double>& suf, int64_t n, auto val) {  // accurate when small
        suf.assign(static_cast<std::size_t>(n) + 1, 0.0);
        for (int64_t i = n - 1; i >= 0; --i) suf[i] = suf[i + 1] + val(i);
    };
    const std::vector<double>&bs = fm.bs, &cs = fm.cs;
    prefix(ws.cum_b, nB, [&](int64_t i) { return bs[i]; });
    prefix(ws.cum_c, nC, [&](int64_t i) { return cs[i]; });
    suffix(ws.suf_c, nC, [&](int64_t i) { return cs[i]; });
    prefix(ws.PA, nA, [&](int64_t i) { return ws.pa[ws.order[i]]; });
    prefix(ws.SA, nA, [&](int64_t i) { return ws.qa[ws.order[i]]; });
    suffix(ws.suf_a, nA, [&](int64_t i) { return ws.qa[ws.order[i]]; });

    fm.lumps.clear();
    for (int64_t d : {int64_t{0}, nD}) {
        if (d == nD && d == 0 && !fm.lumps.empty()) break;
        double prev_lump = -1.0, prev_off = -1.0;
        for (int64_t hb = 0; hb <= nB; ++hb) {
            const double room = row.tq * static_cast<double>((nB - hb) + (nD - d));
            const double lump = std::max(0.0, row.uq - room), off = std::min(row.uq, room);
            if (lump == prev_lump && off == prev_off) {
                fm.lumps.back().hb_end = hb;
                continue;
            }
            prev_lump = lump;
            prev_off = off;
            fm.lumps.push_back(CutLump{ws.cum_b[hb], lump, off, hb, hb, d, forced_pieces(lump, row.tq, pieces), -1});
        }
    }
    const double total = ws.suf_c[0] + ws.suf_a[0] + row.uq;
    double lam_min = std::numeric_limits<double>::infinity();
    for (const CutLump& lp : fm.lumps)
        for (double base : {ws.suf_c[nC] + ws.suf_a[nA], nC ? cs[nC - 1] : 0.0, nA ? ws.suf_a[nA - 1] : 0.0}) {
            const double lam = base + lp.off;
            if (lam > 0.0) lam_min = std::min(lam_min, lam);
        }
    if (!(lam_min < std::numeric_limits<double>::infinity())) lam_min = total;

    race::WorRace& r = ws.race;
    r.defer = false;
    r.reset(k, lam_min);
    const int64_t G = r.G;
    ws.fbar.resize(G);
    ws.last.resize(G);
    ws.corr.assign(G, 0.0);
    ws.e.resize(G);
    ws.b.resize(G);
    ws.lump_b.clear();
    r.save_counts(fm.empty, fm.gs_empty);
    fm.best = 1.0;
    fm.arg = CutBox{};
    fm.arg_d = 0;
    fm.work = 0;
}

// The lump's tail table: 1 - e^{-lump t} on every node (one clock), or the pieces' (k rows of G).
inline const double* cut_lump_table(CutLump& lp, WorBoundsWorkspace& ws) {
    race::WorRace& r = ws.race;
    const std::size_t stride = static_cast<std::size_t>(ws.fam.k) * r.G;
    if (lp.tab < 0) {
        lp.tab = static_cast<int64_t>(ws.lump_b.size());
        ws.lump_b.resize(ws.lump_b.size() + stride, 0.0);
        double* tab = ws.lump_b.data() + lp.tab;
        if (lp.fp.clocks() == 1) race::factor_chain(r.t.data(), r.G, r.M, r.M, lp.lump * r.scale, ws.e.data(), tab);
        else if (lp.fp.clocks() > 1) pieces_tail_table(r, lp.fp, ws.fam.k, tab, ws.e, ws.b, ws.e2, ws.b2, ws.pmf);
    }
    return ws.lump_b.data() + lp.tab;
}

// The smallest cut bound 1 + p_max(H) - Q_min(H) over the box's sets into ws.fam.best (and its
// set into ws.fam.arg): one race for the box, from the empty counts through the C and A prefixes
// below it, then its C tokens (counts saved and restored between h_C) and its A prefixes.
inline void cut_family_box(const CutBox& box, WorBoundsWorkspace& ws) {
    CutFamily& fm = ws.fam;
    const TruncatedRow& row = *fm.row;
    const int k = fm.k;
    race::WorRace& r = ws.race;
    const int64_t G = r.G;
    std::vector<std::size_t> in;  // the box's lumps
    for (std::size_t f = 0; f < fm.lumps.size(); ++f)
        if (fm.lumps[f].hb <= box.b1 && fm.lumps[f].hb_end >= box.b0) in.push_back(f);
    for (std::size_t f : in) cut_lump_table(fm.lumps[f], ws);
    r.restore_counts(fm.empty, fm.gs_empty);
    for (int64_t i = 0; i < box.c0; ++i) r.add(fm.cs[i]);
    for (int64_t i = 0; i < box.a0; ++i) r.add(ws.qa[ws.order[i]]);
    fm.work += box.c0 + box.a0;
    int64_t gs = 0;
    for (int64_t hc = box.c0; hc <= box.c1; ++hc) {
        if (hc > box.c0) {
            r.restore_counts(ws.sav, gs);
            r.add(fm.cs[hc - 1]);
            ++fm.work;
        }
        r.save_counts(ws.sav, gs);
        for (int64_t j = box.a0; j <= box.a1; ++j) {
            if (j > box.a0) {
                r.add(ws.qa[ws.order[j - 1]]);
                ++fm.work;
            }
            fm.work += static_cast<int64_t>(in.size());
            std::fill(ws.fbar.begin(), ws.fbar.end(), 0.0);
            for (int c = 0; c < k; ++c)
                for (int64_t g = 0; g < r.g_sat; ++g) ws.fbar[g] += r.P[static_cast<std::size_t>(c) * G + g];
            std::copy_n(r.P.begin() + static_cast<std::ptrdiff_t>(k - 1) * G, G, ws.last.begin());
            const double w_in = ws.cum_c[hc] + ws.SA[j], out = ws.suf_c[hc] + ws.suf_a[j];
            const int64_t count = hc + j;
            for (std::size_t f : in) {
                const CutLump& lp = fm.lumps[f];
                const double p_in =
                    row.p_T + lp.pB + ws.PA[j] + std::min(row.up, row.tp * static_cast<double>(row.n_tc + hc + lp.d));
                const double lam = out + lp.off, w = w_in + lp.lump;
                const int64_t tokens = count + lp.fp.clocks();
                double Q;
                if (tokens < k) Q = 0.0;
                else if (!(lam > 0.0)) Q = 1.0;
                else {
                    if (1.0 + p_in - std::pow(w / (w + lam), k) >= fm.best) continue;  // Q_wor <= (q share of H)^k
                    const double* tab = ws.lump_b.data() + lp.tab;
                    if (lp.fp.clocks() == 1) {
                        for (int64_t g = 0; g < r.g_sat; ++g) ws.corr[g] = ws.fbar[g] - ws.last[g] * tab[g];
                        Q = race_integral(r, ws.corr.data(), lam, ws.e.data(), ws.b.data());
                    } else if (lp.fp.clocks() > 1) {  // Fbar with the pieces: sum_c P[c] R[c]
                        std::fill_n(ws.corr.begin(), r.g_sat, 0.0);
                        for (int c = 0; c < k; ++c) {
                            const double* Pc = r.P.data() + static_cast<std::size_t>(c) * G;
                            const double* Rc = tab + static_cast<std::size_t>(c) * G;
                            for (int64_t g = 0; g < r.g_sat; ++g) ws.corr[g] += Pc[g] * Rc[g];
                        }
                        Q = race_integral(r, ws.corr.data(), lam, ws.e.data(), ws.b.data());
                    } else Q = race_integral(r, ws.fbar.data(), lam, ws.e.data(), ws.b.data());
                }
                const double v = 1.0 + p_in - Q;
                if (v < fm.best) {
                    fm.best = v;
                    fm.arg = CutBox{lp.hb, lp.hb, hc, hc, j, j};
                    fm.arg_d = lp.d;
                }
            }
        }
    }
}

// min over every token set H of 1 + p_max(H) - Q_min(H) for k draws without replacement
// (docs/design/intervals.md §3.2): A = logged in both, B = in p only, C = in q only. H takes the h_B
// cheapest (p) tokens of B, the h_C heaviest (q) of C, none or all of D and a prefix of A in ratio
// order. Q_min(H) = Q of the weights (q on H, the unseen q mass H must hold in at most `pieces`
// pieces at the cap t_q: forced_pieces) against the outside total (q off H, plus the unseen q mass
// that fits off it). pieces = 1 is §3's single lump. The family is one box.
inline double wor_cut_min(const TruncatedRow& row, int k, WorBoundsWorkspace& ws, int pieces = kMaxCapPieces) {
    cut_family_prepare(row, k, pieces, ws);
    const CutFamily& fm = ws.fam;
    cut_family_box(CutBox{0, fm.nB, 0, fm.nC, 0, fm.nA}, ws);
    return fm.best;
}

}  // namespace mdsd
