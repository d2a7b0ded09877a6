// Level windows of the level race (docs/theory/level_race.md §12): the remaining levels of one system as
// disjoint segments, and the window of a token cut out of them.
//
// Numerics: loads are b^n - a^n by a cancellation-free Horner sum; the window position is a
// safeguarded Newton root landed on the target side; windows shorter than kTinyWindow (near the
// resolution of the level line) are placed by their level alone and cut from the far end of a
// segment instead of splitting it. Each window search walks the remaining segments from the end it
// starts at (a few on LLM-like rows; not bounded in general).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/bound/dual.hpp"

namespace mdsd::verif::level {

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
    while (j + 1 < m && rem > len(j)) {
        rem -= len(j);
        ++j;
    }
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
            if (hd >= 0.0) {
                step = d;
                h1 = hd;
                break;
            }
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
            if (std::fabs(xn - x) <= tol || hi - lo <= tol) {
                x = xn;
                break;
            }
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
    if (L.from_bottom) {
        near_.hi = L.lev(si, oi);
        far_.lo = L.lev(sj, oj);
    } else {
        near_.lo = L.lev(si, oi);
        far_.hi = L.lev(sj, oj);
    }
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

// The race over level pieces, shared by every route that holds a token's pieces (by descending
// level, psuf = the length from each piece to the token's last): the piece a draft lands in,
// given u ~ U[0, 1), by binary search on the suffix sums.
inline int64_t draw_piece(const double* psuf, int64_t b, int64_t e, double u) {
    const double v = u * psuf[b];
    const double* it = std::partition_point(psuf + b + 1, psuf + e, [v](double x) { return x > v; });
    return (it - psuf) - 1;
}

// Win probabilities of m distinct drafted tokens (token k: pieces [b[k], e[k]), cnt[k] drafts):
// the highest level wins. sel[k] receives Pr[token k wins].
inline void race_win_probs(const int64_t* b, const int64_t* e, const double* plo, const double* phi, const double* psuf,
                           const int* cnt, int m, double* sel) {
    struct Ref {
        double lo;
        int k;
        int64_t e;
    };
    Ref small[256];
    std::vector<Ref> big;
    int64_t tot = 0;
    for (int k = 0; k < m; ++k) tot += e[k] - b[k];
    Ref* refs = small;
    if (tot > 256) {
        big.resize(tot);
        refs = big.data();
    }
    int64_t c = 0;
    for (int k = 0; k < m; ++k) {
        sel[k] = 0.0;
        for (int64_t u = b[k]; u < e[k]; ++u) refs[c++] = {plo[u], k, u};
    }
    std::sort(refs, refs + tot, [](const Ref& u, const Ref& v) { return u.lo > v.lo; });
    double left = 1.0;  // Pr[no draft in any piece above]
    for (int64_t t = 0; t < tot && left > 0.0; ++t) {
        const Ref& rf = refs[t];
        const double len = phi[rf.e] - plo[rf.e];
        const double R = psuf[rf.e];
        const double stay = (R > 0.0) ? std::max(0.0, 1.0 - len / R) : 0.0;
        const double hit = 1.0 - ipow(stay, cnt[rf.k]);
        sel[rf.k] += left * hit;
        left *= 1.0 - hit;
    }
}

}  // namespace mdsd::verif::level
