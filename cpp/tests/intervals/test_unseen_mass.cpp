// The race pieces of mdsd/intervals/unseen_mass.hpp against the race they stand for (race::WorRace with
// explicit tokens), mirroring tests/intervals/test_intervals_wor.py at the kernel level:
//   * the Poisson start (race_start_with_bucket) against J explicit tokens of mass u / J: Q never
//     below theirs, never above by more than C(k, 2) / J, the gap shrinking with J;
//   * the lump correction (Fbar - b_lump P[k-1] in race_integral) against adding the lump as one
//     more token and calling value(): equal to 1e-15;
//   * wor_bucket_alpha against the minimum over every prefix of the same scan with the J tokens;
//   * the forced mass at the cap (mdsd/intervals/forced_pieces.hpp): the pieces' tail table against adding the
//     pieces as tokens and calling value() (1e-13, 1 to 90 pieces, with and without a remainder),
//     2,000 pieces as tokens, 10^5 against their Poisson limit (the bucket), and forced_pieces' split
//     (whole pieces, the remainder, equal lumps beyond the cap);
//   * the boxes of §3.2's family (mdsd/intervals/family_descent.hpp): the family split into boxes has wor_cut_min's
//     minimum, so does the best set as a box of one and the box with its corner there, the descent
//     with no limit covers the family and equals it, with a small budget it is
//     never below it and spends at most the budget, and with none it tries nothing.
#include "mdsd/intervals/family_descent.hpp"
#include "mdsd/intervals/unseen_mass.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cases.hpp"
#include "check.hpp"

using cases::Gen;

namespace {

// Q(H) of weights w in H plus the bucket u (or J tokens of u / J), outside mass lam.
double q_bucket(const std::vector<double>& w, double u, double lam, int k, int64_t J) {
    mdsd::race::WorRace r;
    r.defer = false;
    r.reset(k, lam);
    if (J == 0) mdsd::race_start_with_bucket(r, u);
    for (int64_t j = 0; j < J; ++j) r.add(u / static_cast<double>(J));
    for (double x : w) r.add(x);
    return r.value(0.0, lam);
}

// Q(H) of the race r (H's tokens added) with the forced pieces fp, by the pieces' tail table.
double pieces_table(const mdsd::race::WorRace& r, const mdsd::ForcedPieces& fp, int k, double lam) {
    const int64_t G = r.G;
    std::vector<double> R(static_cast<std::size_t>(k) * G), e, b, e2, b2, pmf, fb(G, 0.0), ee(G), bb(G);
    mdsd::pieces_tail_table(r, fp, k, R.data(), e, b, e2, b2, pmf);
    for (int c = 0; c < k; ++c)
        for (int64_t gi = 0; gi < r.g_sat; ++gi)
            fb[gi] += r.P[static_cast<std::size_t>(c) * G + gi] * R[static_cast<std::size_t>(c) * G + gi];
    return mdsd::race_integral(r, fb.data(), lam, ee.data(), bb.data());
}

}  // namespace

int main() {
    Gen g(20261202);
    for (int rep = 0; rep < 40; ++rep) {
        const int k = 2 + rep % 4;
        std::vector<double> w(1 + rep % 5);
        double s = 0.0;
        for (double& x : w) s += (x = g.uniform(0.01, 1.0));
        const double u = g.uniform(0.05, 0.6), lam = g.uniform(0.02, 0.5);
        const double tot = s + u + lam;
        for (double& x : w) x /= tot;  // the race's rates sum to 1 (its t_lo argument)
        const double ub = u / tot, lb = lam / tot;
        check::context("rep %d, k %d, |w| %zu", rep, k, w.size());
        const double qb = q_bucket(w, ub, lb, k, 0);
        double prev_gap = 1.0;
        for (int64_t J : {16, 256, 4096}) {
            const double qj = q_bucket(w, ub, lb, k, J);
            const double gap = qb - qj, pairs = k * (k - 1) / 2.0;
            CHECK_MSG(gap >= -1e-12 && gap <= pairs / static_cast<double>(J) + 1e-12, "J %lld gap %.3e",
                      static_cast<long long>(J), gap);
            CHECK(gap <= prev_gap + 1e-15);
            prev_gap = gap;
        }
        // the lump correction against the lump as a token
        const double lump = g.uniform(0.0, 0.5) * lb;
        mdsd::race::WorRace r;
        r.defer = false;
        r.reset(k, lb - lump);
        for (double x : w) r.add(x);
        const int64_t G = r.G;
        std::vector<double> fb(G, 0.0), bl(G), e(G), b(G);
        for (int c = 0; c < k; ++c)
            for (int64_t gi = 0; gi < r.g_sat; ++gi) fb[gi] += r.P[static_cast<std::size_t>(c) * G + gi];
        mdsd::race::factor_chain(r.t.data(), G, r.M, r.M, lump * r.scale, e.data(), bl.data());
        for (int64_t gi = 0; gi < r.g_sat; ++gi) fb[gi] -= r.P[static_cast<std::size_t>(k - 1) * G + gi] * bl[gi];
        const double corrected = mdsd::race_integral(r, fb.data(), lb - lump, e.data(), b.data());
        r.add(lump);
        CHECK_NEAR(corrected, r.value(0.0, lb - lump), 1e-15);
    }
    // wor_bucket_alpha: the prefix minimum with the bucket, against the same scan with J tokens
    for (int rep = 0; rep < 20; ++rep) {
        const int k = 2 + rep % 3;
        const int64_t L = 6 + rep % 5;
        std::vector<double> p(L), q(L);
        double sp = 0.0, sq = 0.0;
        for (int64_t i = 0; i < L; ++i) {
            sp += (p[i] = g.uniform() < 0.2 ? 0.0 : g.uniform(0.01, 1.0));
            sq += (q[i] = g.uniform() < 0.2 ? 0.0 : g.uniform(0.01, 1.0));
        }
        const double up = g.uniform(0.05, 0.5), uq = g.uniform(0.05, 0.5);
        for (int64_t i = 0; i < L; ++i) {
            p[i] *= (1.0 - up) / sp;
            q[i] *= (1.0 - uq) / sq;
        }
        check::context("alpha rep %d, k %d", rep, k);
        mdsd::WorBoundsWorkspace ws;
        const double a = mdsd::wor_bucket_alpha(p.data(), q.data(), L, uq, k, ws);
        // J phantoms first (p = 0), then the ratio order: 1 + min over prefixes holding them all
        const int64_t J = 4096;
        std::vector<int32_t> order;
        mdsd::OrderWorkspace ow;
        const int64_t K = mdsd::ratio_order(p.data(), q.data(), L, ow, order);
        double best = 0.0;
        for (int64_t i = 0; i <= K; ++i) {
            std::vector<double> w;
            double P = 0.0, lam = 0.0;
            for (int64_t j = 0; j < K; ++j) {
                if (j < i) {
                    w.push_back(q[order[j]]);
                    P += p[order[j]];
                } else lam += q[order[j]];
            }
            const double Q = lam > 0.0 ? q_bucket(w, uq, lam, k, J) : 1.0;
            best = std::min(best, P - Q);
        }
        const double aj = 1.0 + best, pairs = k * (k - 1) / 2.0;
        CHECK_MSG(a <= aj + 1e-12 && a >= aj - pairs / J - 1e-12, "bucket %.15g, J phantoms %.15g", a, aj);
    }
    // the pieces' binomial tail against the pieces as tokens
    for (int rep = 0; rep < 60; ++rep) {
        const int k = 2 + rep % 6;
        std::vector<double> w(rep % 4);
        for (double& x : w) x = g.uniform(0.01, 0.2);
        const double cap = g.uniform(0.002, 0.05), lam = g.uniform(0.02, 0.4);
        const double f = cap * (rep % 3 == 0 ? 1.0 + rep / 2 : g.uniform(1.0, 90.0));
        mdsd::ForcedPieces fp = mdsd::forced_pieces(f, cap, rep % 5 == 0 ? 8 : 64);
        double tot = lam + f;
        for (double x : w) tot += x;
        std::vector<double> ws_(w);
        for (double& x : ws_) x /= tot;  // rates summing to 1, as on a row
        const double lt = lam / tot;
        fp.size /= tot;
        fp.rem /= tot;
        check::context("pieces rep %d, k %d, m %lld, rem %.3g", rep, k, static_cast<long long>(fp.m), fp.rem);
        CHECK(fp.m >= 1 && fp.clocks() <= (rep % 5 == 0 ? 8 : 64));
        CHECK_NEAR(static_cast<double>(fp.m) * fp.size + fp.rem, f / tot, 1e-12 * f / tot + 1e-17);
        mdsd::race::WorRace r;
        r.defer = false;
        r.reset(k, lt);
        for (double x : ws_) r.add(x);
        const double table = pieces_table(r, fp, k, lt);
        for (int64_t j = 0; j < fp.m; ++j) r.add(fp.size);
        if (fp.rem > 0.0) r.add(fp.rem);
        CHECK_NEAR(table, r.value(0.0, lt), 1e-13);
    }
    // many pieces: 2,000 as tokens (1e-13), and 10^5 against their Poisson limit, the bucket (within
    // the C(k, 2) / m of the coupling, docs/guide/intervals.md §2)
    for (int rep = 0; rep < 8; ++rep) {
        const int k = 2 + rep % 4;
        const double f = g.uniform(0.2, 0.5), lam = g.uniform(0.1, 0.3), w0 = 1.0 - f - lam;
        check::context("many pieces rep %d, k %d", rep, k);
        for (int64_t m : {int64_t{2000}, int64_t{100000}}) {
            const mdsd::ForcedPieces fp = mdsd::forced_pieces(f, f / static_cast<double>(m), mdsd::kMaxCapPieces);
            CHECK(fp.m == m && fp.rem == 0.0);
            mdsd::race::WorRace r;
            r.defer = false;
            r.reset(k, lam);
            r.add(w0);
            const double table = pieces_table(r, fp, k, lam);
            if (m == 2000) {
                for (int64_t j = 0; j < m; ++j) r.add(fp.size);
                CHECK_NEAR(table, r.value(0.0, lam), 1e-13);
            } else {
                const double qb = q_bucket({w0}, f, lam, k, 0), pairs = k * (k - 1) / 2.0;
                CHECK_MSG(table <= qb + 1e-13 && table >= qb - pairs / static_cast<double>(m) - 1e-13,
                          "table %.15g bucket %.15g", table, qb);
            }
        }
    }
    {  // the split: whole pieces and the remainder; beyond the cap, equal lumps of f / most >= cap
        check::context("forced_pieces");
        const mdsd::ForcedPieces a = mdsd::forced_pieces(0.35, 0.1, 64), c = mdsd::forced_pieces(10.0, 0.1, 64);
        CHECK(a.m == 3 && std::abs(a.size - 0.1) < 1e-15 && std::abs(a.rem - 0.05) < 1e-12);
        CHECK(c.m == 64 && c.rem == 0.0 && c.size >= 0.1);
        CHECK(mdsd::forced_pieces(0.0, 0.1, 64).clocks() == 0 && mdsd::forced_pieces(0.35, 0.1, 1).clocks() == 1);
        CHECK(mdsd::forced_pieces(0.05, 0.1, 64).m == 1 && mdsd::forced_pieces(0.05, 0.1, 64).rem == 0.0);
    }
    int corner_checked = 0;
    for (int rep = 0; rep < 40; ++rep) {  // boxes of the family
        check::context(("boxes, rep " + std::to_string(rep)).c_str());
        const int64_t L = g.integer(8, 30);
        const int k = static_cast<int>(g.integer(2, 4));
        std::vector<double> p(L), q(L);
        double sp = 0.0, sq = 0.0;
        for (int64_t j = 0; j < L; ++j) {
            const int64_t cls = g.integer(0, 3);  // A, B, C, or A again
            p[j] = cls == 2 ? 0.0 : g.uniform(0.01, 1.0);
            q[j] = cls == 1 ? 0.0 : g.uniform(0.01, 1.0);
            sp += p[j];
            sq += q[j];
        }
        const double up = g.uniform(0.0, 0.5), uq = g.uniform(0.0, 0.5);
        for (int64_t j = 0; j < L; ++j) {  // normalise to logged mass 1 - u, the caps below every logged value
            p[j] *= (1.0 - up) / sp;
            q[j] *= (1.0 - uq) / sq;
        }
        double tp = 1.0, tq = 1.0;
        for (int64_t j = 0; j < L; ++j) {
            if (p[j] > 0.0) tp = std::min(tp, p[j]);
            if (q[j] > 0.0) tq = std::min(tq, q[j]);
        }
        const mdsd::TruncatedRow row{p.data(), q.data(), L, g.integer(0, 6), up, tp, uq, tq};
        mdsd::WorBoundsWorkspace ws;
        const double full = mdsd::wor_cut_min(row, k, ws);
        const mdsd::CutFamily& fm = ws.fam;
        const int64_t hb = fm.nB / 2, hc = fm.nC / 2, ha = fm.nA / 2;
        double split = 1.0;
        for (const mdsd::CutBox& b :
             {mdsd::CutBox{0, hb, 0, hc, 0, ha}, mdsd::CutBox{hb + 1, fm.nB, 0, hc, 0, ha},
              mdsd::CutBox{0, fm.nB, hc + 1, fm.nC, 0, ha}, mdsd::CutBox{0, fm.nB, 0, fm.nC, ha + 1, fm.nA}}) {
            if (b.b0 > b.b1 || b.c0 > b.c1 || b.a0 > b.a1) continue;
            mdsd::wor_cut_min(row, k, ws);  // a fresh family and race
            ws.fam.best = 1.0;
            mdsd::cut_family_box(b, ws);
            split = std::min(split, ws.fam.best);
        }
        CHECK_NEAR(split, full, 1e-13);
        const mdsd::BoxSearch all = mdsd::wor_cut_descent(row, k, 0, 0, 0, int64_t{1} << 40, ws);
        CHECK(all.whole);
        CHECK_NEAR(all.high, full, 1e-13);
        // the best set alone, and the box with its corner there: the race reaches the corner's counts
        const int64_t b = all.arg[0], c = all.arg[1], a = all.arg[2];
        for (const mdsd::CutBox& one : {mdsd::CutBox{b, b, c, c, a, a}, mdsd::CutBox{b, fm.nB, c, fm.nC, a, fm.nA}}) {
            mdsd::wor_cut_min(row, k, ws);
            ws.fam.best = 1.0;
            mdsd::cut_family_box(one, ws);
            CHECK_NEAR(ws.fam.best, full, 1e-13);
        }
        corner_checked += (c > 0 && a > 0);
        const mdsd::BoxSearch few = mdsd::wor_cut_descent(row, k, 1, 1, 1, 60, ws);
        CHECK(few.high >= full - 1e-13 && few.work <= 60);
        const mdsd::BoxSearch none = mdsd::wor_cut_descent(row, k, 0, 0, 0, 0, ws);
        CHECK(none.high == 1.0 && none.work == 0 && none.boxes == 0);
    }
    CHECK(corner_checked >= 5);  // best sets with C and A prefixes below them: the corner's race is used
    return check::summary("test_unseen_mass");
}
