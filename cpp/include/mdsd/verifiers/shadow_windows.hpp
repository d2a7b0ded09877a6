// The levels left by the level race's windows, in one pass (docs/theory.md §12.6). After a set G of
// a system's tokens is cut with take_window, in any order, the remaining levels R_G follow from G
// alone. Measure R from the end opposite to where the system starts cutting (outer: from the
// bottom; inner: from the top) and let F_R(x) be the load of the first x of R in R's own measure:
//   F_{R_G}(x) = max_j [F_mu(x + c_j) - d_j]  (outer)   or   min_j [...]  (inner),  0 <= x <= |mu| - q(G),
// an envelope of shifted copies of the untouched system's F_mu, with (c_j, d_j), j = 0..K, the
// prefix sums of (q, p) over G in the system's cutting order of ratios (outer ascending p/q, inner
// descending). Each copy j on the envelope contributes one segment of R_G (the untouched levels at
// distance c_j + x from that end). Windows that stop at the far end are covered. In potential form
// this is the shadow measure's convex hull (Beiglböck, Hobson & Norgilas 2022).
//
// The pass keeps the copies on the envelope in a stack (as a convex-hull pass does): a copy that
// leads before the top one would start pops it after one evaluation; a surviving copy costs one
// window search in a single untouched interval, against one search in the segmented levels per
// token for take_window. O(K) after the ratio sort.
//
// Numerics: the width and load between two copies are differences of double-double prefix sums,
// and a window's load is computed from its width (w * sum_k a^k (a + w)^(n-1-k)) rather than from
// two rounded end levels, so a tiny window is placed by its mean density to ~1e-16 relative.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mdsd/verifiers/level_windows.hpp"

namespace mdsd::verif::shadow {

using level::Seg;

// sum_{k<m} a^k b^(m-1-k) with b = a + w (so b^m - a^m = w * spread(a, w, m)); 1 for m = 1.
template <class T>
T spread(T a, T w, int m) {
    const T b = a + w;
    T s = 1, bp = 1;
    for (int k = m - 2; k >= 0; --k) {
        bp *= b;
        s = s * a + bp;
    }
    return s;
}

// Double-double running sum (Knuth's TwoSum): differences of two prefix sums keep ~1e-32.
template <class T>
struct DD {
    T hi = 0, lo = 0;
    void add(T x) {
        const T s = hi + x, bb = s - hi;
        lo += (hi - (s - bb)) + (x - bb);
        hi = s;
    }
    T value() const { return hi + lo; }
};
template <class T>
T dd_diff(const DD<T>& u, const DD<T>& v) {
    return (u.hi - v.hi) + (u.lo - v.lo);
}

// One system before any cut: the levels [lo, lo + H], n drafts (load density n rho^(n-1)), cut
// from the top (outer) or from the bottom (inner). Its envelope is measured from the other end.
struct System {
    double lo = 0.0, H = 0.0;
    int n = 2;
    bool inner = false;
};

// Copies i < j of the envelope, at offset x from the far end, cover the window of the untouched
// levels at distance [base + x, base + x + w] from that end (outer: from the bottom; inner: from
// the top). Copy j takes over where the window's load reaches D (outer: >= D, the load grows with
// x; inner: <= D, it shrinks). Cross is that test as an increasing function of x, in mean-density
// form (spread(a, w, n) - D / w, a = the window's low level).
template <class T>
struct Cross {
    const System& s;
    T base, w, target, sg, top;
    Cross(const System& s_, T base_, T w_, T D) : s(s_), base(base_), w(w_), target(D / w_) {
        sg = s.inner ? T(-1) : T(1);
        top = T(s.lo) + T(s.H);
    }
    T low(T x) const { return s.inner ? top - base - x - w : T(s.lo) + base + x; }
    T operator()(T x) const { return sg * (spread(low(x), w, s.n) - target); }

    // The first x in [xlo, xmax] with h(x) >= 0, given h(xlo) = h0 < 0 (xmax if none): a
    // safeguarded Newton iteration from a secant start.
    T root(T xlo, T h0, T xmax) const {
        T lo = xlo, hi = xmax;
        const T h1 = (*this)(hi);
        if (h1 < 0) return xmax;
        T x = lo + (hi - lo) * (-h0 / (h1 - h0));
        if (!(x > lo && x < hi)) x = (lo + hi) / 2;
        const T eps = std::numeric_limits<T>::epsilon();
        for (int it = 0; it < 100; ++it) {
            const T hx = (*this)(x);
            if (hx >= 0) hi = x;
            else lo = x;
            // d/da spread(a, w, n) = n (b^(n-1) - a^(n-1)) / w = n spread(a, w, n - 1) > 0; da/dx = sg
            const T a = low(x);
            const T dh = (s.n >= 2) ? s.n * spread(a, w, s.n - 1) : T(0);
            T xn = (dh > 0) ? x - hx / dh : (lo + hi) / 2;
            if (!(xn > lo && xn < hi)) xn = (lo + hi) / 2;
            const T tol = 2 * eps * (a + w);
            if (hi - lo <= tol) return hi;
            if (std::fabs(xn - x) <= tol) return std::min(hi, std::max(lo, xn));
            x = xn;
        }
        return hi;
    }
};

// The remaining levels after cutting the K tokens (q[k], p[k]) from the system, in the system's
// cutting order of ratios (outer: ascending p/q; inner: descending; ties in any order, the envelope
// does not depend on it). Any subset of the system, in any cutting order, windows that stop at the
// far end included. Returns the segments by ascending level. T: the arithmetic (double; long double
// for references).
template <class T = double>
std::vector<Seg> remaining(const System& s, const double* q, const double* p, int64_t K) {
    std::vector<DD<T>> c(static_cast<std::size_t>(K) + 1), d(static_cast<std::size_t>(K) + 1);
    for (int64_t k = 0; k < K; ++k) {
        c[k + 1] = c[k];
        c[k + 1].add(T(q[k]));
        d[k + 1] = d[k];
        d[k + 1].add(T(p[k]));
    }
    const T X = std::max(T(0), T(s.H) - c[K].value());  // measure left
    struct Act {
        int64_t j;
        T start;  // x from which copy j is the envelope
    };
    std::vector<Act> st;
    st.reserve(64);
    st.push_back({0, T(0)});
    for (int64_t j = 1; j <= K; ++j) {
        const T xmax = std::max(T(0), T(s.H) - c[j].value());
        T th = 0;
        while (!st.empty()) {
            const Act& t = st.back();
            const Cross<T> h(s, c[t.j].value(), dd_diff(c[j], c[t.j]), dd_diff(d[j], d[t.j]));
            const T ht = (t.start < xmax) ? h(t.start) : T(1);
            if (ht >= 0) {  // copy j already leads where copy t.j would start: t.j never leads
                st.pop_back();
                continue;
            }
            th = h.root(t.start, ht, xmax);
            break;
        }
        st.push_back({j, th});
    }
    std::vector<Seg> out;
    out.reserve(st.size());
    const T top = T(s.lo) + T(s.H);
    for (std::size_t u = 0; u < st.size(); ++u) {
        const T a = st[u].start, b = (u + 1 < st.size()) ? std::min(st[u + 1].start, X) : X;
        if (!(b > a)) continue;
        const T cj = c[st[u].j].value();
        const T l = s.inner ? top - cj - b : T(s.lo) + cj + a, h = s.inner ? top - cj - a : T(s.lo) + cj + b;
        if (h > l) out.push_back({static_cast<double>(l), static_cast<double>(h)});
    }
    std::sort(out.begin(), out.end(), [](const Seg& u, const Seg& v) { return u.lo < v.lo; });
    return out;
}

}  // namespace mdsd::verif::shadow
