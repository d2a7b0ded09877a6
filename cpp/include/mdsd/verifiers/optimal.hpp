// "optimal": an exact optimal verifier at full vocabulary for i.i.d. drafts (THEORY §2.3, §3, §4,
// §8.10), built from the certificate H* and a "level race"; for without-replacement drafts on
// enumerable supports, the tight-set sweep of sweep.hpp.
//
// Complementary slackness with H* (A = V \ H*, restricted to supp q) splits every optimal plan in
// two independent systems (THEORY §8.10):
//   outer: every tuple with a draft in A outputs one of its A-drafts, with a(y) <= p(y) on A;
//   inner: tuples inside H* output one of their drafts or reject, with a(y) = p(y) on H*.
// Any plan with these properties accepts 1 - q(H*)^n + p(H*) = alpha*, and the residual
// r ∝ p - a (THEORY §2.3) completes it losslessly.
//
// Level race (i.i.d. drafts). Give every draft an independent random "level" in [0, 1]; output the
// draft with the highest level. Let token y own a set of level pieces of total length q(y), the
// pieces of all tokens tiling [0, 1] (inner: H*-tokens tile [0, L], L = q(H*); outer: A-tokens
// tile [L, 1], and H*-drafts sit below every A-level). A draft of y takes a uniform level in its
// pieces, so the levels of the n drafts are i.i.d. uniform on [0, 1] and a draft at level rho wins
// iff the other n - 1 are below rho: probability rho^(n-1). Token y therefore wins with mass
//     load(y) = n * integral over y's pieces of rho^(n-1) d rho = sum over pieces [hi^n - lo^n],
// a function of where y's pieces lie and of nothing else. Choosing the pieces is a one-dimensional
// transport problem (a martingale-type coupling of q with the level line):
//   outer: tokens by ascending p/q; each takes the window of the remaining levels, contiguous in
//     the remaining measure, with load = p(y) that lies highest (the top window if even its load
//     is below p(y));
//   inner: tokens by descending p/q; each takes the lowest contiguous window with load = p(y)
//     (the bottom window if its load exceeds p(y)), and accepts a won draft w.p. p(y)/load(y).
// Proof of exactness (exact arithmetic). Outer system: let R be the remaining levels and
// F_R(x) the load of the lowest x of R (its bottom quantile part). Invariant C(R): for every set Z
// of unplaced tokens, F_R(q(Z)) <= p(Z). Initially F(x) = (L + x)^n - L^n and C is Hall's
// condition for the outer system, (L + q(Z))^n - L^n <= p(Z) for all Z in A, which is the
// minimality of H* against H* ∪ Z. Placing token y: the lowest window has load F_R(q(y)) <= p(y)
// by C with Z = {y}, and the load of a window grows continuously as it moves up, so either some
// window (contiguous in R's quantiles, [s, s + q(y)]) has load exactly p(y) or the top window's
// load is below p(y). In the first case the new remaining set R' has F_R'(x) = F_R(x) for x <= s
// and F_R'(x) = F_R(x + q(y)) - p(y) for x >= s, so C(R) for Z and for Z ∪ {y} gives C(R'); in
// the second case every remaining Z has q(Z) <= s and F_R' = F_R there. The last token takes all
// of R, with load F_R(q(y)) <= p(y). So every load is <= p(y) and every outer tuple is accepted.
// Inner system, mirrored: G_R(x) = load of the top x of R, invariant G_R(q(Y)) >= p(Y) (initially
// L^n - (L - q(Y))^n >= p(Y), the minimality of H* against H* \ Y); each token takes a window
// with load exactly p(y) or the bottom window if even that is above p(y), then a won draft is
// accepted w.p. p(y)/load(y): a(y) = p(y) on H*. The argument holds in any processing order
// (ratio order is used); contiguity of the windows is what it needs (taking the two ends of the
// remaining levels instead fails on about 3% of small random cases).
// Hall's condition depends on q(Z) only, and says that p/q under token weights q is dominated in
// (increasing / decreasing) convex order by n rho^(n-1) with rho uniform on the level range; the
// construction is a shadow-type coupling in the spirit of Beiglböck & Juillet's left curtain.
// In floating point, prepare() computes a(y) from the pieces it actually stored, every shortfall
// goes to the residual, so the verifier is lossless in every case, and its reported acceptance
// is sum_y a(y), never alpha* itself. Measured: |sum_y a(y) - alpha*| <= 5e-14 on thousands of
// small random cases (V <= 13, n <= 6) and <= 2.4e-11 on every row of the shipped dataset
// (n = 2, 4, 8).
//
// Numerics: loads are b^n - a^n by a cancellation-free Horner sum; the window position is a
// safeguarded Newton root landed on the target side; windows shorter than kTinyWindow (1e-13,
// near the resolution of the level line) are placed by their level alone and cut from the far
// end of a segment instead of splitting it (at most n * w of load moved per such token). Stored
// piece lengths differ from q(y) by rounding (an ulp per cut); a(y) is computed from the stored
// pieces, and the remaining inexactness -- the level measure below rho is rho up to
// sum_y |length(y) - q(y)| -- bounds the L1 distance of the output law from p by about
// n * sum_y |length(y) - q(y)| (~1e-12 at V = 49,152).
//
// Cost: prepare O(V log V) for the ratio sort plus one pass over the tokens; each window search
// walks the remaining segments from the end it starts at (a few on LLM-like rows; not bounded in
// general -- a balanced index over the segments would bound it by O(log V)). Measured at
// V = 49,152, n = 4, one core: ~13 ms (LLM-like rows), median 3.5 ms / max ~24 ms over the
// shipped dataset, ~15 ms on very peaked rows. Sampling a verification: O(n log pieces) (every draft draws a level
// piece, the highest piece wins, then the winner's coin). The exact law given a tuple (tests) runs
// the same race as a chain of tests over the pieces of its tokens.
//
// Without-replacement drafts: under the Plackett-Luce law the win probability of a piece depends
// on how the other tokens' pieces are arranged, not only on the level (the Hall condition itself
// depends on the individual q's), so the level race does not transfer. prepare_wor() uses the
// tight-set sweep of sweep.hpp instead (exact; enumerable supports only, see
// docs/research/OPTIMAL_WOR.md for the full-vocabulary route).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <stdexcept>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "mdsd/dual.hpp"
#include "mdsd/sets.hpp"
#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/sweep.hpp"

namespace mdsd::verif {

namespace optimal_detail {

// b^n - a^n for 0 <= a <= b, without cancellation: (b - a) * sum_k a^k b^(n-1-k) (Horner in a).
inline double diffpow(double a, double b, int n) {
    if (!(b > a)) return 0.0;
    double s = 1.0, bp = 1.0;
    for (int k = n - 2; k >= 0; --k) {
        bp *= b;
        s = s * a + bp;
    }
    return (b - a) * s;
}

inline double dpow(double x, int n) { return n * ipow(x, n - 1); }  // d/dx x^n

// Windows shorter than this are taken from the far end of a segment (see take_window).
constexpr double kTinyWindow = 1e-13;

struct Seg {
    double lo, hi;
};

// Remaining levels: disjoint segments; `iv.back()` is the segment at the end the search starts
// from (the bottom for the inner system, the top for the outer one). Distances d are measured in
// remaining measure from that end.
struct Levels {
    std::vector<Seg> iv;
    bool from_bottom = true;
    int n = 1;
    double total = 0.0;

    // level at distance `off` into segment s (off in [0, len])
    double lev(const Seg& s, double off) const {
        if (off >= s.hi - s.lo) return from_bottom ? s.hi : s.lo;  // exact far end: no crumbs
        if (!(off > 0.0)) return from_bottom ? s.lo : s.hi;
        return from_bottom ? s.lo + off : s.hi - off;
    }
    double len(const Seg& s) const { return s.hi - s.lo; }
    // load of the part of segment s between distances o1 <= o2 (offsets inside s)
    double part(const Seg& s, double o1, double o2) const {
        const double a = lev(s, o1), b = lev(s, o2);
        return from_bottom ? diffpow(a, b, n) : diffpow(b, a, n);
    }
};

// Picks the window of length w and cuts it out of the remaining levels. sigma = +1: the smallest
// distance with load >= target (inner, from the bottom); sigma = -1: the smallest distance with
// load <= target (outer, from the top). `last`: take everything that is left (exact tiling).
// Appends the window's segments to `out`.
inline void take_window(Levels& L, double w, double target, int sigma, bool last, std::vector<Seg>& out) {
    auto& iv = L.iv;
    const int64_t m = static_cast<int64_t>(iv.size());
    if (m == 0 || !(w > 0.0)) return;
    if (last || w >= L.total) {
        for (int64_t k = m - 1; k >= 0; --k)
            if (iv[k].hi > iv[k].lo) out.push_back(iv[k]);
        iv.clear();
        L.total = 0.0;
        return;
    }
    auto seg = [&](int64_t k) -> const Seg& { return iv[m - 1 - k]; };
    auto len = [&](int64_t k) { return seg(k).hi - seg(k).lo; };
    if (w < kTinyWindow) {
        // Below the resolution of the level line the window's load is w * n rho^(n-1) at its
        // level (endpoint differences would be quantised to ulps). Take it from the far end of
        // the first segment whose far end reaches the target side, so no segment is split.
        int64_t k = 0;
        for (; k + 1 < m; ++k) {
            const double far = L.from_bottom ? seg(k).hi : seg(k).lo;
            if (sigma * (w * dpow(far, L.n) - target) >= 0.0) break;
        }
        if (len(k) >= w) {
            Seg& g = iv[m - 1 - k];
            if (L.from_bottom) {
                const double lo = std::max(g.lo, g.hi - w);
                if (g.hi > lo) out.push_back({lo, g.hi});
                g.hi = lo;
            } else {
                const double hi = std::min(g.hi, g.lo + w);
                if (hi > g.lo) out.push_back({g.lo, hi});
                g.lo = hi;
            }
            if (!(g.hi > g.lo)) iv.erase(iv.begin() + (m - 1 - k));
            L.total -= w;
            if (L.total < 0.0) L.total = 0.0;
            return;
        }
    }
    auto full = [&](int64_t k) { return diffpow(seg(k).lo, seg(k).hi, L.n); };
    // Window [start, end]: start in seg(i) at offset oi, end in seg(j) at offset oj; mid = full
    // loads of the segments strictly between.
    int64_t i = 0, j = 0;
    double oi = 0.0, rem = w;
    while (j + 1 < m && rem > len(j)) { rem -= len(j); ++j; }
    double oj = std::min(rem, len(j));
    double mid = 0.0;
    for (int64_t k = 1; k < j; ++k) mid += full(k);
    auto load_at = [&](double a, double b) {
        if (i == j) return L.part(seg(i), a, b);
        return L.part(seg(i), a, len(i)) + mid + L.part(seg(j), 0.0, b);
    };
    auto h = [&](double x) { return sigma * (load_at(oi + x, oj + x) - target); };
    double step = 0.0;  // the root lies in [0, step] from (oi, oj); 0: take the current window
    double h0 = h(0.0), h1 = 0.0;
    if (h0 < 0.0) {
        for (;;) {
            // move pointers over finished segments
            if (oj >= len(j) && j + 1 < m) {
                if (j > i) mid += full(j);
                ++j;
                oj = 0.0;
                continue;
            }
            if (oi >= len(i) && i < j) {
                ++i;
                oi = 0.0;
                if (i < j) mid -= full(i);
                continue;
            }
            const double d = std::min(len(i) - oi, len(j) - oj);
            if (!(d > 0.0)) break;  // the window reached the far end: take it
            const double hd = h(d);
            if (hd >= 0.0) { step = d; h1 = hd; break; }
            oi += d;
            oj += d;
            h0 = hd;
        }
    }
    double x = 0.0;
    if (step > 0.0) {  // h increasing on [0, step], h(0) < 0 <= h(step): safeguarded Newton
        double lo = 0.0, hi = step;
        x = (h1 > h0) ? step * (-h0 / (h1 - h0)) : 0.5 * step;  // secant start
        if (!(x > lo && x < hi)) x = 0.5 * step;
        for (int it = 0; it < 60; ++it) {
            const double hx = h(x);
            if (hx >= 0.0) hi = x;
            else lo = x;
            const double ls = L.lev(seg(i), oi + x), le = L.lev(seg(j), oj + x);
            const double dh = sigma * (dpow(le, L.n) - dpow(ls, L.n));
            double xn = dh > 0.0 ? x - hx / dh : 0.5 * (lo + hi);
            if (!(xn >= lo && xn <= hi)) xn = 0.5 * (lo + hi);
            const double tol = 2.3e-16 * std::max(std::fabs(ls), std::fabs(le));
            if (std::fabs(xn - x) <= tol || hi - lo <= tol) { x = xn; break; }
            x = xn;
        }
        // Land on the target side (inner: load >= target, so the coin p/load gives a = p exactly;
        // outer: load <= target) when a few ulps can reach it; otherwise the coin and the
        // residual absorb the rounding, since prepare() uses the load of the stored pieces.
        if (x > hi) x = hi;
        for (int it = 0; it < 4 && x < hi && h(x) < 0.0; ++it) {
            const double ls = L.lev(seg(i), oi + x), le = L.lev(seg(j), oj + x);
            x = std::min(hi, x + 2.3e-16 * std::max(std::fabs(ls), std::fabs(le)) * (1 << it) + 1e-300);
        }
    }
    oi += x;
    oj += x;
    if (i == j && oj > len(i)) oj = len(i);
    auto piece = [&](const Seg& s, double o1, double o2) {
        if (!(o2 > o1)) return;
        double a = L.lev(s, o1), b = L.lev(s, o2);
        if (a > b) std::swap(a, b);
        if (b > a) out.push_back({a, b});
    };
    const Seg si = seg(i), sj = seg(j);
    if (i == j) piece(si, oi, oj);
    else {
        piece(si, oi, len(i));
        for (int64_t k = i + 1; k < j; ++k) out.push_back(seg(k));
        piece(sj, 0.0, oj);
    }
    Seg near_ = si, far_ = sj;  // kept parts: seg(i) before the window, seg(j) after it
    if (L.from_bottom) { near_.hi = L.lev(si, oi); far_.lo = L.lev(sj, oj); }
    else { near_.lo = L.lev(si, oi); far_.hi = L.lev(sj, oj); }
    const int64_t a0 = m - 1 - j, a1 = m - 1 - i;
    Seg tail[2];
    int nt = 0;
    if (far_.hi > far_.lo) tail[nt++] = far_;
    if (near_.hi > near_.lo) tail[nt++] = near_;
    // replace iv[a0 .. a1] by tail[0 .. nt)
    const int64_t removed = a1 - a0 + 1;
    if (nt <= removed) {
        std::copy(tail, tail + nt, iv.begin() + a0);
        iv.erase(iv.begin() + a0 + nt, iv.begin() + a1 + 1);
    } else {  // nt == 2, removed == 1
        iv[a0] = tail[0];
        iv.insert(iv.begin() + a0 + 1, tail[1]);
    }
    L.total -= w;
    if (L.total < 0.0) L.total = 0.0;
}

}  // namespace optimal_detail

struct Optimal {
    struct Plan : PlanBase {
        Drafter::Kind scheme = Drafter::Iid;
        std::vector<uint8_t> side;      // 0: q = 0 (never drafted), 1: inner (H*), 2: outer (A)
        std::vector<int64_t> pptr;      // pieces of token y: [pptr[y], pptr[y+1]), by descending level
        std::vector<double> plo, phi;   // piece endpoints
        std::vector<double> psuf;       // length of the token's pieces from this one to its last
        std::vector<double> coin;       // acceptance probability of a won draft
        std::vector<double> a;          // accepted mass per token
        double alpha_star = 0.0, alpha_plan = 0.0, qH = 0.0;
        int64_t num_inner = 0, num_outer = 0;
        Categorical res;
        // "wor" (sweep.hpp): chunks of token y are [cptr[y], cptr[y+1]) in sweep order, with their
        // place in the sweep of the token's system (cidx) and the token's cumulative mass (ccum).
        bool sweep = false;
        int64_t sweep_steps = 0;
        std::vector<int64_t> cptr, cidx;
        std::vector<double> ccum;
    };

    // strict = false ("sweep"): a full-vocabulary wor plan that falls short of alpha*_wor is kept
    // (lossless, with its exact acceptance) instead of refused.
    static Plan prepare(const double* p, const double* q, int64_t V, int n, Drafter::Kind scheme, bool strict = true) {
        using namespace optimal_detail;
        if (scheme == Drafter::Wor) return prepare_wor(p, q, V, n, strict);
        if (scheme != Drafter::Iid)
            throw std::invalid_argument("scheme: 'optimal' serves 'iid' and 'wor' drafts");
        Plan pl;
        pl.init(p, q, V, n, scheme);
        pl.scheme = scheme;
        DualWorkspace ws;
        const DualResult dr = dual_prefix(p, q, V, n, Scheme::Iid, WorMethod::Auto, ws);
        pl.alpha_star = dr.alpha;
        const std::vector<int32_t>& ord = ws.order;  // supp q by ascending p/q
        const int64_t K = static_cast<int64_t>(ord.size()), ks = dr.k_star;
        pl.side.assign(V, 0);
        double qH = 0.0;
        for (int64_t k = 0; k < ks; ++k) { pl.side[ord[k]] = 1; qH += q[ord[k]]; }
        double qA = 0.0;
        for (int64_t k = ks; k < K; ++k) { pl.side[ord[k]] = 2; qA += q[ord[k]]; }
        pl.qH = qH;
        pl.num_inner = ks;
        pl.num_outer = K - ks;
        std::vector<Seg> segs;           // pieces in the order they are cut
        std::vector<int32_t> owner;      // token of each piece
        segs.reserve(2 * static_cast<std::size_t>(K) + 8);
        owner.reserve(2 * static_cast<std::size_t>(K) + 8);
        auto cut = [&](Levels& L, int32_t y, int sigma, bool last) {
            take_window(L, q[y], p[y], sigma, last, segs);
            owner.resize(segs.size(), y);
        };
        // Outer: levels [qH, qH + qA] from the top, tokens by ascending ratio.
        if (K > ks) {
            Levels L;
            L.n = n;
            L.from_bottom = false;
            L.iv.push_back({qH, qH + qA});
            L.total = qA;
            for (int64_t k = ks; k < K; ++k) cut(L, ord[k], -1, k + 1 == K);
        }
        // Inner: levels [0, qH] from the bottom, tokens by descending ratio.
        if (ks > 0) {
            Levels L;
            L.n = n;
            L.from_bottom = true;
            L.iv.push_back({0.0, qH});
            L.total = qH;
            for (int64_t k = ks - 1; k >= 0; --k) cut(L, ord[k], +1, k == 0);
        }
        // Group the pieces by token (counting sort), each token's pieces by descending level.
        const int64_t P = static_cast<int64_t>(segs.size());
        pl.pptr.assign(V + 1, 0);
        for (int64_t e = 0; e < P; ++e) ++pl.pptr[owner[e] + 1];
        for (int64_t y = 0; y < V; ++y) pl.pptr[y + 1] += pl.pptr[y];
        pl.plo.resize(P);
        pl.phi.resize(P);
        pl.psuf.resize(P);
        {
            std::vector<int64_t> fill(pl.pptr.begin(), pl.pptr.end() - 1);
            for (int64_t e = 0; e < P; ++e) {
                const int64_t d = fill[owner[e]]++;
                pl.plo[d] = segs[e].lo;
                pl.phi[d] = segs[e].hi;
            }
        }
        pl.coin.assign(V, 0.0);
        pl.a.assign(V, 0.0);
        for (int64_t y = 0; y < V; ++y) {
            const int64_t b = pl.pptr[y], e = pl.pptr[y + 1];
            if (e - b > 1) {  // by descending level (pieces are disjoint: sort by lo)
                std::vector<Seg> tmp(static_cast<std::size_t>(e - b));
                for (int64_t u = b; u < e; ++u) tmp[u - b] = {pl.plo[u], pl.phi[u]};
                std::sort(tmp.begin(), tmp.end(), [](const Seg& u, const Seg& v) { return u.lo > v.lo; });
                for (int64_t u = b; u < e; ++u) { pl.plo[u] = tmp[u - b].lo; pl.phi[u] = tmp[u - b].hi; }
            }
            double s = 0.0, ld = 0.0;
            for (int64_t u = e - 1; u >= b; --u) {
                s += pl.phi[u] - pl.plo[u];
                pl.psuf[u] = s;
                ld += diffpow(pl.plo[u], pl.phi[u], n);  // the load of the pieces as stored
            }
            if (ld > 0.0) pl.coin[y] = std::min(1.0, p[y] / ld);
            pl.a[y] = ld * pl.coin[y];
        }
        std::vector<double> r(V);
        double acc = 0.0;
        for (int64_t y = 0; y < V; ++y) {
            r[y] = std::max(0.0, p[y] - pl.a[y]);
            acc += pl.a[y];
        }
        pl.alpha_plan = std::min(1.0, acc);
        pl.res.build(r.data(), V);
        return pl;
    }

    // "wor": the tight-set sweep (sweep.hpp). Enumerable supports: exact, on the enumerated draft
    // sets of each system. Otherwise the exponential-race route (sweep::race): see prepare_wor_race.
    static Plan prepare_wor(const double* p, const double* q, int64_t V, int n, bool strict = true) {
        Plan pl;
        pl.init(p, q, V, n, Drafter::Wor);
        pl.scheme = Drafter::Wor;
        pl.sweep = true;
        DualWorkspace ws;
        const DualResult dr = dual_prefix(p, q, V, n, Scheme::Wor, WorMethod::Auto, ws);
        pl.alpha_star = dr.alpha;
        const std::vector<int32_t> sup = ws.order;  // supp q by ascending p/q; H* = its first k_star
        const int64_t K = static_cast<int64_t>(sup.size()), ks = dr.k_star;
        auto split_at = [&](Plan& P, int64_t k_in) {  // systems: the first k_in of sup inner, the rest outer
            P.side.assign(V, 0);
            for (int64_t k = 0; k < K; ++k) P.side[sup[k]] = k < k_in ? 1 : 2;
            P.num_inner = k_in;
            P.num_outer = K - k_in;
        };
        split_at(pl, ks);
        const int64_t tuples = sweep::ordered_tuples(K, n, sweep::kMaxOrdered);
        if (ks > sweep::kMaxSystem || K - ks > sweep::kMaxSystem || tuples > sweep::kMaxOrdered) {
            prepare_wor_race(pl, p, q, V, n, sup, ks);
            // A second race for the row (k_in tokens inner, prefix-event heads of `head` tokens, 0:
            // the default), kept if it accepts more.
            auto race_again = [&](int64_t k_in, int64_t head) {
                Plan alt;
                alt.init(p, q, V, n, Drafter::Wor);
                alt.scheme = Drafter::Wor;
                alt.sweep = true;
                alt.alpha_star = pl.alpha_star;
                split_at(alt, k_in);
                prepare_wor_race(alt, p, q, V, n, sup, k_in, head, true);
                if (alt.alpha_plan > pl.alpha_plan) pl = std::move(alt);
            };
            // Not certified: the same race with no split (the whole support one inner system, the
            // outer empty). Any plan of the race is lossless and its acceptance is computed, so this
            // is safe even where supp q is not a minimiser of the dual; measured, it reaches alpha* on
            // most rows whose outer core the chain misses (18 of 65 refused rows at n = 4,
            // docs/research/OPTIMAL_WOR.md).
            if (pl.alpha_star - pl.alpha_plan > kCertifyTol && ks < K) race_again(K, 0);
            // Last resort, for rows short by a little: the first chain order again, its prefix-event
            // head kLastResortHead tokens long (shipped row 159 at n = 8: 2.4e-6 -> certified in
            // ~20 s).
            const double short_by = pl.alpha_star - pl.alpha_plan;
            if (short_by > kCertifyTol && short_by <= kLastResortGap) race_again(ks, kLastResortHead);
            // The full-vocabulary route is exact only when its greedy parts meet no event (see
            // prepare_wor_race); "optimal" means optimal, so a row it does not certify is refused.
            if (strict && pl.alpha_star - pl.alpha_plan > kCertifyTol)
                throw std::domain_error(
                    "scheme: 'optimal' for 'wor' drafts at this support size (" + std::to_string(ks) +
                    " tokens in H*, " + std::to_string(K - ks) + " outside) reaches acceptance " +
                    std::to_string(pl.alpha_plan) + ", below alpha*_wor = " + std::to_string(pl.alpha_star) +
                    " by " + fmt_g(pl.alpha_star - pl.alpha_plan) +
                    ": its greedy parts met a tight-set event they do not handle (exact-matching rows); "
                    "refused rather than called optimal (docs/research/OPTIMAL_WOR.md)");
            return pl;
        }
        const auto law = sweep::wor_set_law(q, sup, n);
        sweep::SystemSets outer, inner;
        for (int64_t k = ks; k < K; ++k) outer.sys_tok.push_back(sup[k]);
        for (int64_t k = 0; k < ks; ++k) inner.sys_tok.push_back(sup[k]);
        const uint64_t hmask = ks >= 64 ? ~uint64_t{0} : ((uint64_t{1} << ks) - 1);
        for (const auto& [m, pr] : law) {
            if (m & ~hmask) { outer.mask.push_back(static_cast<uint32_t>(m >> ks)); outer.prob.push_back(pr); }
            else { inner.mask.push_back(static_cast<uint32_t>(m)); inner.prob.push_back(pr); }
        }
        int64_t s1 = 0, s2 = 0;
        const auto chA = sweep::outer(outer, p, static_cast<int>(K - ks), s1);
        const auto chH = sweep::inner(inner, p, static_cast<int>(ks), s2);
        pl.sweep_steps = s1 + s2;
        store_chunks(pl, chA, chH);
        // Loads from the stored chunks, by enumeration of the draft sets (exact given the chunks).
        std::vector<double> won(V, 0.0);
        {
            std::vector<int32_t> toks;
            std::vector<double> sel;
            for (const auto& [m, pr] : law) {
                toks.clear();
                const bool out = (m & ~hmask) != 0;
                for (int64_t k = 0; k < K; ++k)
                    if ((m >> k & 1u) && (k >= ks) == out) toks.push_back(sup[k]);
                sel.assign(toks.size(), 0.0);
                sweep_win_probs(pl, toks.data(), static_cast<int>(toks.size()), sel.data());
                for (std::size_t j = 0; j < toks.size(); ++j) won[toks[j]] += pr * sel[j];
            }
        }
        finish_wor(pl, p, won);
        return pl;
    }

    // Full vocabulary (sweep::race); every load is computed (quadrature, ~1e-15 against
    // enumeration), so the plan is lossless and its acceptance is the accepted mass it really has.
    // Outer: rounds of safe moves -- every A-token with rho = p / w >= 1 is laid whole at the top
    // (its load w stays <= p, and laying it only raises the others' rho) -- until none is left; the
    // remaining core (every rho < 1) then runs the exact subset sweep at the bottom, on the law of
    // S ∩ core among the sets that hold no token laid above. Exact whenever the core has at most
    // kMaxSystem tokens; otherwise the core runs the "chain" (the exact sweep's own shape: tokens
    // frozen one at a time, then completed in reverse), re-ordered on violated visits, and any
    // excess load is cut by the coin.
    // Inner: the kHead neediest tokens (largest rho) run the exact sweep on the law of
    // S ∩ head, laid above the tail; each tail token is then laid, by descending rho, until it has
    // won exactly p (or whole, with a deficit, if it cannot); if that falls short, the inner chain
    // (least needy first, frozen one at a time, the kEventHead neediest swept with prefix events at
    // the bottom) below the nearly tight group of needy tokens (itself a chain, recursively), then
    // the plain chain -- both regrouping on violated visits --, then the split chain, then the
    // reverse order (least needy first, the neediest m_max swept exactly
    // at the bottom), then the sweep itself with prefix events on the kEventHead neediest (above
    // the greedy tail), then, at n = 2, that sweep on the whole inner system in closed form
    // (sweep::pairs::Watch2, O(k^2)); the plan with the smallest deficit is kept. A row still short runs
    // again with no split (one inner system over supp q), and then, if short by at most
    // kLastResortGap, the first chain order with a kLastResortHead-token head. The inner ratio
    // order comes from race::loo_weights (division, interpolated in q). Reaching alpha* is therefore
    // certified per row (alpha_plan vs alpha_star), not assumed; docs/research/OPTIMAL_WOR.md.
    static constexpr int kHead = 8;
    static constexpr int64_t kEventHead = 256;  // tokens of the prefix-event heads ("chain", "events")
    static constexpr int64_t kLastResortHead = 1024;  // the same, for the last resort (O(head^2) scans)
    static constexpr double kLastResortGap = 1e-5;    // rows short by at most this get the last resort
    static constexpr int kChainDepth = 8;       // levels of needy groups, each a chain on top of the next
    static constexpr int64_t kJumpScan = 2048;  // prefixes scanned for the end of that group
    static constexpr int kChainRetries = 8;     // regroupings of one chain level on a violated visit
    static constexpr int64_t kChainCalls = 512; // chains per order before retries stop (they nest)
    static constexpr int kOuterMoves = 32;      // re-orderings of the outer chain (2 core passes each)
    static constexpr double kViolationTol = 1e-12;  // relative: a removal slack below it is a violation
    static constexpr int kMaxRounds = 64;
    static constexpr int64_t kLawBytes = int64_t{256} << 20;  // marked law tables (core_law)
    static constexpr double kCertifyTol = 1e-9;  // alpha* - acceptance accepted as "optimal"
    static std::string fmt_g(double x) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3g", x);
        return buf;
    }

    // Law of S ∩ core over the masks of `core` (nonempty masks only), the other tokens entering
    // through `base` with their weights: marked race pairs over 2^|core| masks.
    static sweep::SystemSets core_law(const sweep::race::Grid& gr, const double* q, const std::vector<int32_t>& core,
                                      const sweep::race::Pair& base) {
        namespace R = sweep::race;
        const int64_t G = gr.G, m = static_cast<int64_t>(core.size());
        const int n = gr.n;
        std::vector<double> e(G), b(G);
        const uint32_t NM = 1u << m;
        std::vector<R::Pair> mk(NM);
        for (auto& x : mk) { x.unit(n, G); std::fill(x.Pi.begin(), x.Pi.end(), 0.0); }
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
                for (std::size_t at = 0; at < src.Pi.size(); ++at) {
                    const double eg = e[at % G];
                    src.Pi[at] *= eg;
                    src.D[at] *= eg;
                }
            }
        }
        sweep::SystemSets out;
        out.sys_tok = core;
        for (uint32_t M = 1; M < NM; ++M) {
            double pr = 0.0;
            const double* Dn = mk[M].D.data() + static_cast<std::size_t>(n - 1) * G;
            for (int64_t g = 0; g < G; ++g) pr += gr.wt[g] * Dn[g];
            if (pr > 0.0) { out.mask.push_back(M); out.prob.push_back(pr); }
        }
        return out;
    }

    // Loads of a chunk list over a mask law (sets of one system, local token indices).
    static void core_loads(const sweep::SystemSets& S, const std::vector<sweep::Chunk>& ch, std::vector<double>& won) {
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

    // last_resort_head > 0: only the first inner order and the first chain order run, with prefix-event
    // heads of that many tokens.
    // retry: a second call for the same row (the no-split race, the last resort), which skips the
    // n = 2 pair sweep (sweep::pairs, O(k^2)).
    static void prepare_wor_race(Plan& pl, const double* p, const double* q, int64_t V, int n,
                                 const std::vector<int32_t>& sup, int64_t ks, int64_t last_resort_head = 0,
                                 bool retry = false) {
        const int64_t event_head = last_resort_head > 0 ? last_resort_head : kEventHead;
        namespace R = sweep::race;
        if (n > 64)
            throw TooLarge("n: 'optimal' for 'wor' drafts on large supports handles n <= 64, got " + std::to_string(n));
        double qmin = 1.0, qA = 0.0, qsum = 0.0;
        for (int32_t y : sup) { qmin = std::min(qmin, q[y]); qsum += q[y]; }
        double q_np1 = 0.0;  // the (n+1)-th largest mass: where the grid may stop (race::Grid)
        if (static_cast<int64_t>(sup.size()) > n) {
            std::vector<double> top(n + 1, 0.0);
            for (int32_t y : sup)
                if (q[y] > top[n]) {
                    int i = n;
                    while (i > 0 && top[i - 1] < q[y]) { top[i] = top[i - 1]; --i; }
                    top[i] = q[y];
                }
            q_np1 = top[n];
        }
        const std::vector<int32_t> Hs(sup.begin(), sup.begin() + ks), As(sup.begin() + ks, sup.end());
        for (int32_t y : As) qA += q[y];
        R::Grid gr;
        gr.build(n, qsum, q_np1, qmin);
        const int64_t G = gr.G;
        // Marked law tables hold 2^m pairs of n x G doubles: keep them under kLawBytes.
        int64_t m_max = 0;
        while (m_max < sweep::kMaxSystem &&
               (int64_t{2} << m_max) * n * G * 2 * static_cast<int64_t>(sizeof(double)) <= kLawBytes)
            ++m_max;
        std::vector<double> e(G), b(G);
        std::vector<double> won(V, 0.0), w;
        std::vector<sweep::Chunk> chA, chH;
        auto rho_of = [&](int32_t y, double wy) { return wy > 0.0 ? p[y] / wy : (p[y] > 0.0 ? 1e300 : 0.0); };
        auto sorted_by_rho = [&](std::vector<int32_t> toks, const std::vector<double>& rho) {
            std::vector<int64_t> idx(toks.size());
            for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
            std::stable_sort(idx.begin(), idx.end(), [&](int64_t x, int64_t y) { return rho[x] > rho[y]; });
            std::vector<int32_t> out(toks.size());
            for (std::size_t i = 0; i < idx.size(); ++i) out[i] = toks[idx[i]];
            return out;
        };
        // H* once at weight 1: its tokens with p = 0 (never laid: folded into every inner pass's
        // base instead of being swept; up to half of an LLM row's support), and the others (Hp) in
        // the inner ratio order (their w at weight 1), whose product after the top order's head
        // (tail_small, tail_all below) serves that order. Together they are the outer environment.
        std::vector<int32_t> Hp, H0;
        R::Pair base0;
        base0.unit(n, G);
        Hp.reserve(Hs.size());
        for (int32_t y : Hs) {
            if (p[y] > 0.0) { Hp.push_back(y); continue; }
            H0.push_back(y);
            gr.factors(q[y], e.data(), b.data());
            base0.add(e.data(), b.data(), 1.0, q[y]);
        }
        std::vector<double> sc(G);  // A-tokens end the inner system (weight 0: the factor e^{-q(A) t})
        for (int64_t g = 0; g < G; ++g) sc[g] = std::exp(-qA * gr.t[g]);
        R::Pair base = base0;
        base.scale(sc.data());
        std::vector<double> w_hp;
        R::loo_weights(gr, q, Hp, base, w_hp);
        std::vector<int32_t> ord;  // Hp, neediest first
        {
            std::vector<double> rho(Hp.size());
            for (std::size_t i = 0; i < Hp.size(); ++i) rho[i] = rho_of(Hp[i], w_hp[i]);
            ord = sorted_by_rho(Hp, rho);
        }
        const int64_t m_top = std::min<int64_t>(static_cast<int64_t>(ord.size()), std::min<int64_t>(kHead, m_max));
        // The top order's tail (ord after its head) at weight 1: its small tokens' product (power
        // sums) for that order's greedy pass, and all of it for the outer environment and the head's.
        const std::vector<int32_t> tail_top(ord.begin() + m_top, ord.end());
        const R::Pair tail_small = R::small_product(gr, q, tail_top);
        R::Pair tail_all = tail_small;
        const double qcut = R::small_cut(gr);
        for (int32_t y : tail_top)
            if (q[y] > qcut) {
                gr.factors(q[y], e.data(), b.data());
                tail_all.add(e.data(), b.data(), 1.0, q[y]);
            }
        if (!As.empty()) {  // outer: H* tokens never block (weight 1)
            R::Pair env = R::mul(base0, tail_all);
            for (int64_t i = 0; i < m_top; ++i) {
                gr.factors(q[ord[i]], e.data(), b.data());
                env.add(e.data(), b.data(), 1.0, q[ord[i]]);
            }
            std::vector<int32_t> rest = As;
            R::pass(gr, q, rest, env, [](int64_t, double) { return 1.0; }, w);
            std::vector<double> rho(rest.size());
            for (int round = 0; round < kMaxRounds && !rest.empty(); ++round) {
                for (std::size_t i = 0; i < rest.size(); ++i) rho[i] = rho_of(rest[i], w[i]);
                std::vector<int32_t> ord = sorted_by_rho(rest, rho);
                std::sort(rho.begin(), rho.end(), std::greater<double>());
                std::size_t nd = 0;
                while (nd < ord.size() && rho[nd] >= 1.0) ++nd;
                if (nd == 0) break;
                // one pass: the safe tokens laid whole (their loads), then the rest at weight 1 (their
                // w for the next round)
                R::pass(gr, q, ord, env, [nd](int64_t i, double) { return static_cast<std::size_t>(i) < nd ? 0.0 : 1.0; }, w);
                for (std::size_t i = 0; i < nd; ++i) {
                    chA.push_back({ord[i], 1.0});
                    won[ord[i]] = w[i];
                    gr.factors(q[ord[i]], e.data(), b.data());
                    env.add(e.data(), b.data(), 0.0, q[ord[i]]);
                }
                rest.assign(ord.begin() + nd, ord.end());
                w.erase(w.begin(), w.begin() + nd);
                rho.resize(rest.size());
            }
            if (!rest.empty() && static_cast<int64_t>(rest.size()) <= m_max) {
                const sweep::SystemSets S = core_law(gr, q, rest, env);
                int64_t steps = 0;
                const auto ch = sweep::outer(S, p, static_cast<int>(rest.size()), steps);
                pl.sweep_steps += steps;
                core_loads(S, ch, won);
                chA.insert(chA.end(), ch.begin(), ch.end());
            } else if (!rest.empty()) {
                // Core too large for the subset sweep: the "chain", the shape of the exact outer sweep.
                // Its largest proper tight set Z (the frozen tokens) grows one token at a time: the
                // core is visited neediest first (descending rho), and a visited token y is laid until
                // exhausted or until Z + y turns tight, i.e. pi_y = (1 - u_y) E_y with
                // E_y = E[1{y in S} prod_{S \ y} h 1{visited}] (the unresolved mass it shares with
                // frozen tokens only); then it joins Z. The frozen tokens are then exhausted in reverse
                // order of their visits. Loads above p (if the chain missed an event) are cut by the coins.
                // A visit that finds p_y < E_y already (Z + y violated) means a larger set turned tight
                // earlier; the unvisited tokens of its segment of the order then move to the segment's
                // front (segments split; if the violation opens its segment, the segment first merges
                // with the one before; up to kOuterMoves times), and the plan with the least
                // excess load is kept. Measured: it certifies rows whose first chain left excess
                // 5e-2 (shipped rows 282 and 469 at n = 2, after 8 and 12 moves).
                for (std::size_t i = 0; i < rest.size(); ++i) rho[i] = rho_of(rest[i], w[i]);
                rest = sorted_by_rho(rest, rho);
                const int64_t kc = static_cast<int64_t>(rest.size());
                std::vector<std::pair<int64_t, int64_t>> segs{{0, kc}};
                std::vector<sweep::Chunk> best_ch;
                std::vector<double> best_won;
                double best_ex = std::numeric_limits<double>::infinity();
                for (int retry = 0;; ++retry) {
                    std::vector<sweep::Chunk> chc;
                    std::vector<double> wc(kc, 0.0), hd(kc, 0.0);
                    std::vector<char> frozen(kc, 0);
                    int64_t iv = -1;  // the first visit that finds Z + y violated
                    R::pass(gr, q, rest, env, [&](int64_t i, double wi, double E) {
                        const int32_t y = rest[i];
                        double d = 1.0;
                        if (p[y] < wi && wi > E) { d = std::max(0.0, (p[y] - E) / (wi - E)); frozen[i] = 1; }
                        if (iv < 0 && p[y] < E - kViolationTol * E) iv = i;
                        if (d > 0.0) chc.push_back({y, d});
                        wc[i] = wi * d;
                        return hd[i] = 1.0 - d;
                    }, w, nullptr, &env);
                    std::vector<int32_t> stack;
                    std::vector<double> h0;
                    std::vector<int64_t> spos;
                    R::Pair eu = env;
                    for (int64_t i = kc; i-- > 0;) {
                        if (frozen[i]) { stack.push_back(rest[i]); h0.push_back(hd[i]); spos.push_back(i); continue; }
                        gr.factors(q[rest[i]], e.data(), b.data());
                        eu.add(e.data(), b.data(), hd[i], q[rest[i]]);
                    }
                    R::pass(gr, q, stack, eu, [&](int64_t i, double wi) {
                        if (h0[i] > 0.0) chc.push_back({stack[i], h0[i]});
                        wc[spos[i]] += wi * h0[i];
                        return 0.0;
                    }, w, h0.data());
                    double ex = 0.0;
                    for (int64_t i = 0; i < kc; ++i) ex += std::max(0.0, wc[i] - p[rest[i]]);
                    if (ex < best_ex) {
                        best_ex = ex;
                        best_ch.swap(chc);
                        best_won.resize(V);
                        for (int64_t i = 0; i < kc; ++i) best_won[rest[i]] = wc[i];
                    }
                    if (iv <= 0 || retry == kOuterMoves || best_ex <= kCertifyTol / 2) break;
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
        if (!Hs.empty()) {  // inner: base = A at weight 0 and H*'s p = 0 tokens at weight 1
            // Orders of the same race; each runs only if the ones before fall short (the order of
            // trying them is below).
            //  top:    the kHead neediest run the exact sweep on top, the tail below them by
            //          descending rho (each until done) -- exact when the tail meets no event;
            //  bottom: the tail by ascending rho on top (least needy first, as the sweep lays tokens
            //          while no set is tight), the m_max neediest run the exact sweep at the bottom
            //          -- exact when the only tight sets form among those last tokens.
            // Measured on the shipped rows (n = 4): "bottom" certifies 16 of the 150 rows "top" misses.
            const int64_t K = static_cast<int64_t>(ord.size());
            // The greedy pass: each token of `tl` (below everything in env) laid until it has won
            // exactly p, or whole with a deficit; hfin (optional) receives the final weights.
            auto lay_greedy = [&](const std::vector<int32_t>& tl, const R::Pair& env, std::vector<sweep::Chunk>& ch,
                                  std::vector<double>& wn, std::vector<double>* hfin, const R::Pair* small = nullptr) {
                auto lay = [&](int64_t i, double wi) {
                    const int32_t y = tl[i];
                    double h = 1.0;  // wi = 0: never laid, every draw lands below reject
                    if (wi > 0.0) {
                        const double d = p[y] / wi;
                        if (d >= 1.0) { wn[y] = wi; ch.push_back({y, 1.0}); h = 0.0; }
                        else { wn[y] = p[y]; ch.push_back({y, d}); h = 1.0 - d; }
                    }
                    if (hfin) (*hfin)[i] = h;
                    return h;
                };
                // by division (no checkpoints) unless the tail holds too many big tokens
                if (!R::pass_div(gr, q, tl, env, lay, w, small)) R::pass(gr, q, tl, env, lay, w);
            };
            auto deficit_of = [&](const std::vector<double>& wn) {
                double deficit = 0.0;
                for (int32_t y : Hp) deficit += std::max(0.0, p[y] - wn[y]);
                return deficit;
            };
            // env times the factors of `toks` at weights hw(i)
            auto times = [&](R::Pair P, const std::vector<int32_t>& toks, auto&& hw) {
                for (std::size_t i = 0; i < toks.size(); ++i) {
                    gr.factors(q[toks[i]], e.data(), b.data());
                    P.add(e.data(), b.data(), hw(i), q[toks[i]]);
                }
                return P;
            };
            auto one = [](std::size_t) { return 1.0; };
            auto run = [&](bool bottom, std::vector<sweep::Chunk>& ch, std::vector<double>& wn) {
                ch.clear();
                for (int32_t y : Hp) wn[y] = 0.0;
                const int64_t m = std::min<int64_t>(K, bottom ? m_max : std::min<int64_t>(kHead, m_max));
                const std::vector<int32_t> head(ord.begin(), ord.begin() + m);
                std::vector<int32_t> tail(ord.begin() + m, ord.end());
                if (bottom) std::reverse(tail.begin(), tail.end());
                auto sweep_head = [&](const R::Pair& env) {  // the rest of the system enters through env
                    const sweep::SystemSets S = core_law(gr, q, head, env);
                    int64_t steps = 0;
                    const auto chh = sweep::inner(S, p, static_cast<int>(m), steps);
                    pl.sweep_steps += steps;
                    core_loads(S, chh, wn);
                    ch.insert(ch.end(), chh.begin(), chh.end());
                    return chh;
                };
                if (bottom) {  // the tail above the head, which sits at weight 1 while the tail is laid
                    std::vector<double> hfin(tail.size(), 1.0);
                    lay_greedy(tail, times(base, head, one), ch, wn, &hfin);
                    if (m > 0) sweep_head(times(base, tail, [&](std::size_t i) { return hfin[i]; }));
                } else {
                    R::Pair env = base;
                    // the tail at weight 1 (tail_all, tail_small): its whole product for the head's
                    // environment, its small tokens' for the greedy pass
                    if (m > 0) {  // the tail below the head: weight 1 while the head is laid
                        const auto chh = sweep_head(R::mul(base, tail_all));
                        std::vector<double> hgt(m, 1.0);
                        for (const auto& c : chh)
                            for (int64_t i = 0; i < m; ++i)
                                if (head[i] == c.tok) hgt[i] -= c.mass;
                        env = times(base, head, [&](std::size_t i) { return std::max(0.0, hgt[i]); });
                    }
                    lay_greedy(tail, env, ch, wn, nullptr, &tail_small);
                }
                return deficit_of(wn);
            };
            // The prefix-event sweep (sweep::race::Watch) on `head` over env; returns the final weights.
            auto watch_sweep = [&](const std::vector<int32_t>& head, const R::Pair& env, std::vector<sweep::Chunk>& ch,
                                   std::vector<double>& wn) {
                R::Watch W;
                W.init(gr, q, p, head, &ch, &wn);
                const int64_t m = static_cast<int64_t>(head.size());
                for (int64_t guard = 0; guard < 8 * m + 64 && W.step(env, true); ++guard) {}
                for (double& h : W.h) h = std::max(0.0, h);
                return W.h;
            };
            // "events": the sweep itself on the kEventHead neediest tokens, its tight sets taken to
            // be prefixes of their current rho order (sweep::race::Watch), laid above the tail, which
            // then runs the greedy pass by descending rho. Exact when the tail meets no event; costs
            // O(head^2) passes over the head, so it runs last.
            auto run_events = [&](std::vector<sweep::Chunk>& ch, std::vector<double>& wn) {
                ch.clear();
                for (int32_t y : Hp) wn[y] = 0.0;
                const int64_t m = std::min<int64_t>(event_head, K);
                const std::vector<int32_t> head(ord.begin(), ord.begin() + m), tail(ord.begin() + m, ord.end());
                // the tail below the head: weight 1 while the head is laid
                const std::vector<double> hh = watch_sweep(head, times(base, tail, one), ch, wn);
                lay_greedy(tail, times(base, head, [&](std::size_t i) { return hh[i]; }), ch, wn, nullptr);
                return deficit_of(wn);
            };
            // "chain": the shape the exact sweep takes when the rejection budget is small (seen in
            // exact runs): the smallest tight set is the set Y of tokens not yet visited, and it
            // shrinks one token at a time. Tokens are visited least needy first (ascending rho); a
            // visited token y is laid until it has won p (done) or until Y \ {y} turns tight, i.e.
            //     s(Y) + pi_y = (1 - u_y) E_y,   E_y = E[1{y in S} prod_{S \ y} h 1{visited}]
            // (its remaining need equals the unresolved mass it shares with visited tokens only),
            // whichever comes first; then it freezes. The kEventHead neediest run the prefix-event
            // sweep at the bottom, and the frozen tokens are completed in reverse order of their
            // visits, each until done, below everything else. Exact when the tail's only events are
            // these single-token ones; each frozen token's completion has so far always sufficed.
            auto total_of = [&](const R::Pair& P) {  // E[prod_{j in S} h_j]
                double t = 0.0;
                for (int64_t g = 0; g < G; ++g) t += gr.wt[g] * P.D[static_cast<std::size_t>(n - 1) * G + g];
                return t;
            };
            // The nearly tight group of needy tokens at the head of o (neediest first) over env: it
            // ends before the token that raises the slack of the prefixes of o (all weights 1) the
            // most, s_i = Pr[S inside H*, S meets o_0..o_i] - p(o_0..o_i) (one pass).
            auto needy_group = [&](const std::vector<int32_t>& o, const R::Pair& env) {
                std::vector<double> v;
                R::pass(gr, q, o, env, [](int64_t, double) { return 0.0; }, v);
                int64_t jt = 0;
                for (int64_t i = 1; i < std::min<int64_t>(static_cast<int64_t>(o.size()), kJumpScan); ++i)
                    if (v[i] - p[o[i]] > v[jt] - p[o[jt]]) jt = i;
                return jt;
            };
            // The chain on the tokens o (neediest first) over env; returns their final weights. With
            // mt > 0 the mt neediest first run a chain of their own on top (the others below them at
            // weight 1), below their own needy group, and so on (at most kChainDepth levels).
            // A group that turns tight during the down pass shows as the first visited token whose
            // singleton-removal slack s + pi - E is already negative: the unvisited tokens at that
            // point hold a violated set W. Two answers (two orders of trying, `split`):
            //  - regroup: the chain runs again with W as its group on top (up to kChainRetries
            //    times per level, the group growing each time);
            //  - split: the exact sweep's own order -- the visits before the violating one stay,
            //    W (with the token visited just before, whose laying made it tight) then runs as a
            //    chain of its own, and the frozen tokens of the first part are completed below it.
            struct ChainMode {
                int depth = 0, retry = 0;
                bool split = false;
            };
            std::function<std::vector<double>(const std::vector<int32_t>&, const R::Pair&, int64_t, ChainMode,
                                              std::vector<sweep::Chunk>&, std::vector<double>&)>
                chain_sys;
            // Retries nest (a regrouped level reruns the levels below it), so their number is capped
            // per order: past kChainCalls chains the violations are left as they are. The most a
            // certified shipped row used is 191 over all its orders (row 409 at n = 8; a cap of 128
            // refused it).
            int64_t chain_calls = 0;
            chain_sys = [&](const std::vector<int32_t>& o, const R::Pair& env, int64_t mt, ChainMode md,
                            std::vector<sweep::Chunk>& ch, std::vector<double>& wn) {
                const int64_t ko = static_cast<int64_t>(o.size());
                const bool may_retry = ++chain_calls <= kChainCalls;
                const std::size_t ch0 = ch.size();
                std::vector<double> hout(ko, 1.0);
                const std::vector<int32_t> top(o.begin(), o.begin() + mt), rest(o.begin() + mt, o.end());
                R::Pair base1 = env;
                if (mt > 0) {
                    const R::Pair below = times(env, rest, one);
                    const int64_t mt2 = md.depth + 1 < kChainDepth ? needy_group(top, below) : 0;
                    const std::vector<double> ht = chain_sys(top, below, mt2, {md.depth + 1, 0, md.split}, ch, wn);
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
                for (int32_t y : rest) { qR += q[y]; pR += p[y]; }
                std::vector<double> sc(G);
                for (int64_t g = 0; g < G; ++g) sc[g] = std::exp(-qR * gr.t[g]);
                R::Pair none = base1;  // every token of rest at weight 0
                none.scale(sc.data());
                const double s_rest = total_of(times(base1, rest, one)) - total_of(none) - pR;
                // down: tail over the head at weight 1 (w); E over the head at weight 0 (unvisited).
                // Only the first `cut` tail tokens are visited (the others stay at weight 1).
                std::vector<double> hd(kt, 1.0);
                std::vector<char> frozen(kt, 0);
                const R::Pair bx = times(base1, head, [](std::size_t) { return 0.0; });
                auto down = [&](int64_t cut) {
                    double s = s_rest;
                    int64_t iv = -1;  // the first visit that finds its removal slack negative
                    R::pass(gr, q, tail, times(base1, head, one), [&](int64_t i, double wi, double E) {
                        const int32_t y = tail[i];
                        if (i >= cut || !(wi > 0.0)) return 1.0;  // unvisited, or wins nothing: never laid
                        const double dd = p[y] / wi, df = wi > E ? (s + p[y] - E) / (wi - E) : 1e300;
                        if (iv < 0 && wi > E && s + p[y] - E < -kViolationTol * (p[y] + E)) iv = i;
                        double d;
                        if (df < dd && df < 1.0) { d = std::max(0.0, df); frozen[i] = 1; s = 0.0; }
                        else { d = std::min(dd, 1.0); s += (p[y] - wi * d) - (1.0 - d) * E; }
                        if (d > 0.0) ch.push_back({y, d});
                        wn[y] = wi * d;
                        return hd[i] = 1.0 - d;
                    }, w, nullptr, &bx);
                    return iv;
                };
                const int64_t iv = down(kt);
                if (may_retry && !md.split && iv > 0 && md.retry < kChainRetries && ko - iv > mt) {  // o[0 .. ko - iv) unvisited
                    ch.resize(ch0);
                    for (int32_t y : o) wn[y] = 0.0;
                    return chain_sys(o, env, ko - iv, {md.depth, md.retry + 1, false}, ch, wn);
                }
                // The unvisited part: the head by the prefix-event sweep, or (split) rest[0 .. kw) as a
                // chain of its own. Then the frozen tokens among the c visited, last visited first,
                // each until done, below everything else.
                int64_t c = kt, kw = m;
                std::vector<double> hw;
                if (may_retry && md.split && iv > 1 && md.depth + 1 < kChainDepth) {
                    c = iv - 1;
                    kw = ko - mt - c;
                    ch.resize(ch1);
                    for (int32_t y : rest) wn[y] = 0.0;
                    std::fill(hd.begin(), hd.end(), 1.0);
                    std::fill(frozen.begin(), frozen.end(), 0);
                    down(c);
                    const std::vector<int32_t> W(rest.begin(), rest.begin() + kw), vis(tail.begin(), tail.begin() + c);
                    hw = chain_sys(W, times(base1, vis, [&](std::size_t i) { return hd[i]; }), 0,
                                   {md.depth + 1, 0, true}, ch, wn);
                } else {
                    hw = watch_sweep(head, times(base1, tail, [&](std::size_t i) { return hd[i]; }), ch, wn);
                }
                std::copy(hw.begin(), hw.end(), hout.begin() + mt);
                std::vector<int32_t> stack, fin;  // frozen / finished in the down pass
                std::vector<double> h0, hf;
                std::vector<int64_t> spos;  // position of each stack token in o
                for (int64_t i = c; i-- > 0;) {
                    const int64_t at = ko - 1 - i;  // tail is o reversed
                    if (frozen[i]) { stack.push_back(tail[i]); h0.push_back(hd[i]); spos.push_back(at); }
                    else { fin.push_back(tail[i]); hf.push_back(hd[i]); hout[at] = hd[i]; }
                }
                const std::vector<int32_t> unv(rest.begin(), rest.begin() + kw);
                const R::Pair eu = times(times(base1, unv, [&](std::size_t i) { return hw[i]; }), fin,
                                         [&](std::size_t i) { return hf[i]; });
                R::pass(gr, q, stack, eu, [&](int64_t i, double wi) {
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
                }, w, h0.data());
                return hout;
            };
            auto run_chain = [&](std::vector<sweep::Chunk>& ch, std::vector<double>& wn, int64_t mt, bool split) {
                ch.clear();
                for (int32_t y : Hp) wn[y] = 0.0;
                chain_calls = 0;
                chain_sys(ord, base, mt, {0, 0, split}, ch, wn);
                return deficit_of(wn);
            };
            std::vector<sweep::Chunk> ch2;
            // The orders, each only if the ones before fall short: top, the chain below its needy
            // group, the plain chain, bottom, events. (On every third shipped row at n = 4 this
            // certifies the same rows as top, bottom, chains, events did, in ~20 % less time;
            // bottom then certifies no row on its own there.)
            double def_best = run(false, chH, won);
            auto try_order = [&](auto&& order) {
                if (def_best <= kCertifyTol / 2) return;
                std::vector<double> won2(won);
                const double d = order(ch2, won2);
                if (d < def_best) { chH.swap(ch2); won.swap(won2); def_best = d; }
            };
            // the chain below its nearly tight group of needy tokens (the plain chain if there is none)
            int64_t jt = -1;
            try_order([&](std::vector<sweep::Chunk>& ch, std::vector<double>& wn) {
                jt = needy_group(ord, base);
                return run_chain(ch, wn, jt, false);
            });
            if (last_resort_head == 0) {
                if (jt > 0) try_order([&](std::vector<sweep::Chunk>& ch, std::vector<double>& wn) { return run_chain(ch, wn, 0, false); });
                try_order([&](std::vector<sweep::Chunk>& ch, std::vector<double>& wn) { return run_chain(ch, wn, jt, true); });
                try_order([&](std::vector<sweep::Chunk>& ch, std::vector<double>& wn) { return run(true, ch, wn); });
                try_order(run_events);
                // n = 2: the prefix-event sweep on the whole inner system, in closed form
                // (sweep::pairs); O(k^2), so last. Certifies shipped rows 336 and 351 (8e-4 and
                // 1.5e-4 short after every other order) in ~15-35 s.
                if (n == 2 && !retry) try_order([&](std::vector<sweep::Chunk>& ch, std::vector<double>& wn) {
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
                    sweep::pairs::Watch2 W;
                    W.init(p, q, qsum, ord, H0, rest);
                    for (int64_t guard = 0; guard < 8 * K + 64 && W.step(ch, wn); ++guard) {}
                    return deficit_of(wn);
                });
            }
        }
        store_chunks(pl, chA, chH);
        finish_wor(pl, p, won);
    }

    // CSR by token, chunks in sweep order within each system.
    static void store_chunks(Plan& pl, const std::vector<sweep::Chunk>& chA, const std::vector<sweep::Chunk>& chH) {
        const int64_t V = pl.V;
        pl.cptr.assign(V + 1, 0);
        for (const auto& c : chA) ++pl.cptr[c.tok + 1];
        for (const auto& c : chH) ++pl.cptr[c.tok + 1];
        for (int64_t y = 0; y < V; ++y) pl.cptr[y + 1] += pl.cptr[y];
        pl.cidx.resize(pl.cptr[V]);
        pl.ccum.resize(pl.cptr[V]);
        std::vector<int64_t> fill(pl.cptr.begin(), pl.cptr.end() - 1);
        std::vector<double> run(V, 0.0);
        auto put = [&](const std::vector<sweep::Chunk>& ch) {
            for (std::size_t i = 0; i < ch.size(); ++i) {
                const int32_t y = ch[i].tok;
                run[y] += ch[i].mass;
                pl.cidx[fill[y]] = static_cast<int64_t>(i);
                pl.ccum[fill[y]++] = run[y];
            }
        };
        put(chA);
        put(chH);
    }

    // Coins min(1, p / won), accepted mass a = won * coin, residual p - a (THEORY §2.3).
    static void finish_wor(Plan& pl, const double* p, const std::vector<double>& won) {
        const int64_t V = pl.V;
        pl.coin.assign(V, 0.0);
        pl.a.assign(V, 0.0);
        std::vector<double> r(V);
        double acc = 0.0;
        for (int64_t y = 0; y < V; ++y) {
            if (won[y] > 0.0) pl.coin[y] = std::min(1.0, p[y] / won[y]);
            pl.a[y] = won[y] * pl.coin[y];
            r[y] = std::max(0.0, p[y] - pl.a[y]);
            acc += pl.a[y];
        }
        pl.alpha_plan = std::min(1.0, acc);
        pl.res.build(r.data(), V);
    }

    // Win probabilities of m distinct drafted tokens of one system under the chunk race: walk
    // their chunks in sweep order; a chunk of token k at that point wins with its mass times the
    // probability that every other drafted token lies below it (1 - its mass laid so far).
    static void sweep_win_probs(const Plan& pl, const int32_t* toks, int m, double* sel) {
        std::vector<RaceChunk> refs;
        for (int k = 0; k < m; ++k) {
            double prev = 0.0;
            for (int64_t e = pl.cptr[toks[k]]; e < pl.cptr[toks[k] + 1]; ++e) {
                refs.push_back({pl.cidx[e], k, pl.ccum[e] - prev});
                prev = pl.ccum[e];
            }
        }
        std::sort(refs.begin(), refs.end(), [](const RaceChunk& u, const RaceChunk& v) { return u.idx < v.idx; });
        race_sel(refs, m, sel);
    }

    // The chunk race itself: chunks of m drafted tokens in sweep order; a chunk wins with its mass
    // times the probability that every other drafted token lies below it (1 - its mass laid so far).
    struct RaceChunk { int64_t idx; int k; double mass; };
    static void race_sel(const std::vector<RaceChunk>& refs, int m, double* sel) {
        double laid[64] = {0.0};
        std::vector<double> big;
        double* L = laid;
        if (m > 64) { big.assign(m, 0.0); L = big.data(); }
        std::fill(sel, sel + m, 0.0);
        for (const RaceChunk& rf : refs) {
            double x = rf.mass;
            for (int j = 0; j < m; ++j)
                if (j != rf.k) x *= std::max(0.0, 1.0 - L[j]);
            sel[rf.k] += x;
            L[rf.k] += rf.mass;
        }
    }

    // Sampler for "wor": every drafted token of the system draws a chunk (or, inner, a level below
    // all of its chunks), the earliest chunk in the sweep wins, then the winner's coin.
    static void sweep_walk(const Plan& pl, const int32_t* t, SampleVisitor& vis) {
        const uint8_t want = system_of(pl, t);
        const bool outer = want == 2;
        int64_t best = std::numeric_limits<int64_t>::max();
        int32_t win = -1;
        for (int k = 0; k < pl.n; ++k) {
            const int32_t y = t[k];
            if (pl.side[y] != want) continue;
            const int64_t b = pl.cptr[y], e = pl.cptr[y + 1];
            if (b == e) continue;
            const double v = vis.rng.uniform();
            const double* it = std::upper_bound(pl.ccum.data() + b, pl.ccum.data() + e, v);
            int64_t c = it - pl.ccum.data();
            if (c == e) {
                if (!outer) continue;  // below every chunk: this draft cannot win
                c = e - 1;             // outer masses sum to 1 up to rounding
            }
            if (pl.cidx[c] < best) { best = pl.cidx[c]; win = y; }
        }
        if (win >= 0 && vis.test(win, pl.coin[win])) return;
        vis.residual(pl.res);
    }

    static void sweep_walk(const Plan& pl, const int32_t* t, LawVisitor& vis) {
        const uint8_t want = system_of(pl, t);
        std::vector<int32_t> toks;
        for (int k = 0; k < pl.n; ++k)
            if (pl.side[t[k]] == want) toks.push_back(t[k]);
        const int m = static_cast<int>(toks.size());
        std::vector<double> sel(m);
        if (m > 0) sweep_win_probs(pl, toks.data(), m, sel.data());
        chain(pl, toks.data(), sel.data(), m, vis);
    }

    // Output token k w.p. sel[k] * coin[k] as a chain of tests; with probability
    // sum_k sel[k] (1 - coin[k]) + (1 - sum_k sel[k]) the residual is sampled.
    static void chain(const Plan& pl, const int32_t* toks, const double* sel, int m, LawVisitor& vis) {
        double left = 1.0;
        for (int k = 0; k < m; ++k) {
            const double s = sel[k];
            if (!(s > 0.0)) continue;
            const double win = left > s ? s / left : 1.0;  // Pr[k wins | no earlier token won]
            const double c = pl.coin[toks[k]];
            if (vis.test(toks[k], win * c)) return;
            if (c < 1.0) branch(vis, win * (1.0 - c) / (1.0 - win * c), pl);
            left -= s;
        }
        vis.residual(pl.res);
    }

    // Win probabilities of the distinct drafts of one system (inner or outer): the draft with the
    // highest level wins. toks/cnt: m distinct tokens and their multiplicities. sel[k] receives
    // Pr[token toks[k] wins].
    static void win_probs(const Plan& pl, const int32_t* toks, const int* cnt, int m, double* sel) {
        struct Ref { double lo; int k; int64_t e; };
        Ref small[256];
        std::vector<Ref> big;
        int64_t tot = 0;
        for (int k = 0; k < m; ++k) tot += pl.pptr[toks[k] + 1] - pl.pptr[toks[k]];
        Ref* refs = small;
        if (tot > 256) { big.resize(tot); refs = big.data(); }
        int64_t c = 0;
        for (int k = 0; k < m; ++k) {
            sel[k] = 0.0;
            for (int64_t e = pl.pptr[toks[k]]; e < pl.pptr[toks[k] + 1]; ++e) refs[c++] = {pl.plo[e], k, e};
        }
        std::sort(refs, refs + tot, [](const Ref& u, const Ref& v) { return u.lo > v.lo; });
        double left = 1.0;  // Pr[no draft in any piece above]
        for (int64_t t = 0; t < tot && left > 0.0; ++t) {
            const Ref& rf = refs[t];
            const double len = pl.phi[rf.e] - pl.plo[rf.e];
            const double R = pl.psuf[rf.e];
            const double stay = (R > 0.0) ? std::max(0.0, 1.0 - len / R) : 0.0;
            const double hit = 1.0 - ipow(stay, cnt[rf.k]);
            sel[rf.k] += left * hit;
            left *= 1.0 - hit;
        }
    }

    // Distinct drafts of the tuple in the system that handles it: outer if any draft is in A.
    // The system that handles the tuple: outer (2) if any draft lies outside H*, else inner (1).
    static uint8_t system_of(const Plan& pl, const int32_t* t) {
        for (int k = 0; k < pl.n; ++k)
            if (pl.side[t[k]] == 2) return 2;
        return 1;
    }

    static int group(const Plan& pl, const int32_t* t, int32_t* toks, int* cnt) {
        int m = 0;
        const uint8_t want = system_of(pl, t);
        for (int k = 0; k < pl.n; ++k) {
            const int32_t y = t[k];
            if (pl.side[y] != want) continue;
            int j = 0;
            while (j < m && toks[j] != y) ++j;
            if (j == m) { toks[m] = y; cnt[m] = 0; ++m; }
            ++cnt[j];
        }
        return m;
    }

    // The sampler: every draft of the system draws its level piece (probability length / q(y),
    // a binary search on the suffix sums), the highest piece wins (pieces of different tokens are
    // disjoint, so the piece decides; two drafts of one token in one piece give the same output),
    // then the winner's coin. O(n log pieces).
    static void walk(const Plan& pl, const int32_t* t, SampleVisitor& vis) {
        if (pl.sweep) return sweep_walk(pl, t, vis);
        const uint8_t want = system_of(pl, t);
        double best = -1.0;
        int32_t win = -1;
        for (int k = 0; k < pl.n; ++k) {
            const int32_t y = t[k];
            if (pl.side[y] != want) continue;
            const int64_t b = pl.pptr[y], e = pl.pptr[y + 1];
            if (b == e) continue;
            const double v = vis.rng.uniform() * pl.psuf[b];
            const double* first = pl.psuf.data() + b + 1;
            const double* it = std::partition_point(first, pl.psuf.data() + e, [v](double x) { return x > v; });
            const int64_t piece = (it - pl.psuf.data()) - 1;
            if (pl.plo[piece] > best) { best = pl.plo[piece]; win = y; }
        }
        if (win >= 0 && vis.test(win, pl.coin[win])) return;
        vis.residual(pl.res);
    }

    // The exact law: the same race, every branch followed (win_probs), as a chain of tests (chain).
    static void walk(const Plan& pl, const int32_t* t, LawVisitor& vis) {
        if (pl.sweep) return sweep_walk(pl, t, vis);
        std::vector<int32_t> toks(pl.n);
        std::vector<int> cnt(pl.n);
        std::vector<double> sel(pl.n);
        const int m = group(pl, t, toks.data(), cnt.data());
        if (m > 0) win_probs(pl, toks.data(), cnt.data(), m, sel.data());
        chain(pl, toks.data(), sel.data(), m, vis);
    }

    // With probability pr (given that every earlier test failed) go to the residual: the law
    // calculator adds the residual part now and continues with the rest of the mass.
    static void branch(LawVisitor& vis, double pr, const Plan& pl) {
        pr = clamp01(pr);
        if (pr > 0.0 && vis.mass > 0.0) {
            const double keep = vis.mass;
            vis.mass = keep * pr;
            vis.residual(pl.res);
            vis.mass = keep * (1.0 - pr);
        }
    }

    static double exact(const Plan& pl, double /*budget*/) { return pl.alpha_plan; }
};

}  // namespace mdsd::verif
