// The levels left by the level race's windows, in one pass (docs/theory/level_race.md §12.6). After a set G of
// a system's tokens is cut with take_window, in any order, the remaining levels R_G follow from G
// alone. Measure R from the end opposite to where the system starts cutting (outer: from the
// bottom; inner: from the top) and let F_R(x) be the load of the first x of R in R's own measure:
//   F_{R_G}(x) = max_j [F_mu(x + c_j) - d_j]  (outer)   or   min_j [...]  (inner),  0 <= x <= |mu| - q(G),
// an envelope of shifted copies of the untouched system's F_mu, with (c_j, d_j), j = 0..K, the
// prefix sums of (q, p) over G in the system's cutting order of ratios (outer ascending p/q, inner
// descending). Each copy j on the envelope contributes one segment of R_G (the untouched levels
// at distance c_j + x from that end). Windows that stop at the bottom or top are covered. In
// potential form this is the shadow measure's convex hull (Beiglböck, Hobson & Norgilas 2022).
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

#include "mdsd/core/order.hpp"
#include "mdsd/verifiers/optimal_iid/level_windows.hpp"

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

// Copies i < j of the envelope, at offset x from the end they are measured from, cover the window
// of the untouched levels at distance [base + x, base + x + w] from that end (outer: from the
// bottom; inner: from the top). Copy j takes over where the window's load reaches D (outer: >= D,
// the load grows with x; inner: <= D, it shrinks). Cross is that test as an increasing function of
// x, in mean-density form (spread(a, w, n) - D / w, a = the window's low level).
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
// bottom or top included. Returns the segments by ascending level. T: the arithmetic (double; long
// double for references). on_top (optional) receives the copies j (0..K) that own a segment. exact
// (optional, for G in the cutting order): the number k of leading tokens whose windows land
// exactly; copy j is on the envelope at the end of its own prefix's domain iff window j is exact,
// and from the first that is not, none is (the capped suffix, docs/theory/level_race.md §12.6).
// The envelope pass over copies 0..K (the prefix sums c, d of the tokens entered so far): a stack
// of the copies on the envelope, each with the x from which it leads. After copy j is pushed, the
// stack is the envelope of the first j tokens (later copies only pop from its top), so one pass
// over a longest prefix gives every shorter prefix's levels too (remaining_at).
template <class T>
struct EnvelopePass {
    struct Act {
        int64_t j;
        T start;
    };
    const System& s;
    std::vector<DD<T>> c, d;
    std::vector<Act> st;
    explicit EnvelopePass(const System& s_) : s(s_), c(1), d(1) {
        st.reserve(64);
        st.push_back({0, T(0)});
    }
    T left(int64_t j) const { return std::max(T(0), T(s.H) - c[j].value()); }  // measure left after j
    // Where the next token's copy would lead from (the measure left if never), and how many copies
    // of the stack it leaves; nothing changes until commit(), so the levels before the token stay
    // readable (remaining's stop at the first inexact window).
    struct Lead {
        DD<T> c, d;
        T xmax, th;
        std::size_t keep;
    };
    Lead lead(double qk, double pk) const {
        Lead l{c.back(), d.back(), T(0), T(0), st.size()};
        l.c.add(T(qk));
        l.d.add(T(pk));
        l.xmax = std::max(T(0), T(s.H) - l.c.value());
        while (l.keep > 0) {
            const Act& t = st[l.keep - 1];
            const Cross<T> h(s, c[t.j].value(), dd_diff(l.c, c[t.j]), dd_diff(l.d, d[t.j]));
            const T ht = (t.start < l.xmax) ? h(t.start) : T(1);
            if (ht >= 0) {  // the new copy already leads where copy t.j would start: t.j never leads
                --l.keep;
                continue;
            }
            l.th = h.root(t.start, ht, l.xmax);
            break;
        }
        return l;
    }
    void commit(const Lead& l) {
        c.push_back(l.c);
        d.push_back(l.d);
        st.resize(l.keep);
        st.push_back({static_cast<int64_t>(c.size()) - 1, l.th});
    }
    // Enters the next token; returns the x from which its copy leads (the measure left if never).
    T push(double qk, double pk) {
        const Lead l = lead(qk, pk);
        commit(l);
        return l.th;
    }
    // The levels left by the tokens entered so far, by ascending level; on_top (optional) receives
    // the copies that own a segment.
    std::vector<Seg> segments(std::vector<int64_t>* on_top = nullptr) const {
        const T X = left(static_cast<int64_t>(c.size()) - 1);
        std::vector<Seg> out;
        out.reserve(st.size());
        const T top = T(s.lo) + T(s.H);
        for (std::size_t u = 0; u < st.size(); ++u) {
            const T a = st[u].start, b = (u + 1 < st.size()) ? std::min(st[u + 1].start, X) : X;
            if (!(b > a)) continue;
            const T cj = c[st[u].j].value();
            const T l = s.inner ? top - cj - b : T(s.lo) + cj + a, h = s.inner ? top - cj - a : T(s.lo) + cj + b;
            if (h > l) {
                out.push_back({static_cast<double>(l), static_cast<double>(h)});
                if (on_top) on_top->push_back(st[u].j);
            }
        }
        std::sort(out.begin(), out.end(), [](const Seg& u, const Seg& v) { return u.lo < v.lo; });
        return out;
    }
};

// The remaining levels after cutting the K tokens (q[k], p[k]) from the system, in the system's
// cutting order of ratios (outer: ascending p/q; inner: descending; ties in any order, the envelope
// does not depend on it). Any subset of the system, in any cutting order, windows that stop at the
// bottom or top included. Returns the segments by ascending level. T: the arithmetic (double; long
// double for references). on_top (optional) receives the copies j (0..K) that own a segment. exact
// (optional, for G in the cutting order): the number k of leading tokens whose windows land
// exactly; copy j is on the envelope at the end of its own prefix's domain iff window j is exact,
// and from the first that is not, none is (the capped suffix, docs/theory/level_race.md §12.6).
// stop_at_exact (with exact): the levels left before the first token whose window is not exact,
// i.e. remaining(..., *exact) in the same pass, which stops there.
template <class T = double>
std::vector<Seg> remaining(const System& s, const double* q, const double* p, int64_t K,
                           std::vector<int64_t>* on_top = nullptr, int64_t* exact = nullptr,
                           bool stop_at_exact = false) {
    EnvelopePass<T> pass(s);
    pass.c.reserve(static_cast<std::size_t>(K) + 1);
    pass.d.reserve(static_cast<std::size_t>(K) + 1);
    if (exact) *exact = -1;
    for (int64_t j = 1; j <= K; ++j) {
        const typename EnvelopePass<T>::Lead l = pass.lead(q[j - 1], p[j - 1]);
        // (a token that fills the system, up to rounding of the sums, is not judged)
        if (exact && *exact < 0 && l.xmax > 1e-12 * s.H && !(l.th < l.xmax)) {
            *exact = j - 1;
            if (stop_at_exact) return pass.segments(on_top);
        }
        pass.commit(l);
    }
    if (exact && *exact < 0) *exact = K;
    return pass.segments(on_top);
}

// What remaining_bucketed did: buckets used, tokens sorted (their buckets reached the envelope),
// rounds of the envelope pass.
struct BucketStats {
    int64_t buckets = 0, sorted = 0;
    int rounds = 0;
};

// A bucket key of the ratio p / q (q > 0): its bits, monotone in its value for a double >= 0.
inline uint64_t ratio_key(double p, double q) { return key_bits(p / q); }

// Buckets by the leading bits of the ratio keys of toks[0, K) (K > 0): bucket (key - kmin) >> shift,
// the smallest shift that leaves at most max_buckets of them.
struct KeyBuckets {
    uint64_t kmin = 0;
    int shift = 0;
    int64_t count = 1;  // buckets spanned, (kmax - kmin) >> shift + 1
    uint64_t of(uint64_t key) const { return (key - kmin) >> shift; }
};

// key(k): the ratio key of the k-th token.
template <class Key>
KeyBuckets key_buckets_of(int64_t K, Key key, int max_buckets) {
    uint64_t kmin = ~uint64_t(0), kmax = 0;
    for (int64_t k = 0; k < K; ++k) {
        const uint64_t u = key(k);
        kmin = std::min(kmin, u);
        kmax = std::max(kmax, u);
    }
    KeyBuckets b;
    b.kmin = kmin;
    while (((kmax - kmin) >> b.shift) >= static_cast<uint64_t>(std::max(1, max_buckets))) ++b.shift;
    b.count = static_cast<int64_t>((kmax - kmin) >> b.shift) + 1;
    return b;
}

inline KeyBuckets key_buckets(const int32_t* toks, int64_t K, const double* p, const double* q, int max_buckets) {
    return key_buckets_of(K, [&](int64_t k) { return ratio_key(p[toks[k]], q[toks[k]]); }, max_buckets);
}

// The bound copy of a bucket (sums Q, P; ratios in [rlo, rhi], rlo < rhi), as its first
// pseudo-token (q1, p1); the second is (Q - q1, P - p1). The bound on the inner prefix sums d(c):
// the lines of slope r1 from the bucket's start and r2 into its end, its kink at c - c_start = q1.
// The ratios are widened by a few ulps: the bound must hold for the exact ratios, not the rounded.
inline void bound_copy(const System& s, double Q, double P, double rlo, double rhi, double& q1, double& p1) {
    const double lo_r = rlo * (1.0 - 4.5e-16), hi_r = rhi * (1.0 + 4.5e-16);
    const double r1 = s.inner ? hi_r : lo_r, r2 = s.inner ? lo_r : hi_r;
    q1 = std::min(Q, std::max(0.0, (r2 * Q - P) / (r2 - r1)));
    p1 = std::min(P, r1 * q1);
}

// The same remaining levels as remaining(), for a set of tokens given in any order, without
// sorting it (docs/theory/level_race.md §12.6, "Buckets"). The tokens go into at most max_buckets buckets by
// the leading bits of their ratio (monotone in p/q: no logarithm, no sort). A bucket enters the
// envelope as its exact sums (Q, P) split into two pseudo-tokens at the kink of the bound on its
// inner prefix sums (ratios in [r_lo, r_hi]): the copy between them lies above every copy inside the
// bucket (outer; below, inner). A bucket whose bound copy reaches the envelope is sorted and entered
// token by token, and the pass repeats until no bound copy does; then no copy inside any bucket can
// be on the envelope, and the result is the full envelope.
inline std::vector<Seg> remaining_bucketed(const System& s, const int32_t* toks, int64_t K, const double* p,
                                           const double* q, int max_buckets = 1024, BucketStats* stats = nullptr) {
    std::vector<Seg> left;
    if (K == 0) {
        if (s.H > 0.0) left.push_back({s.lo, s.lo + s.H});
        return left;
    }
    auto key = [&](int32_t y) { return ratio_key(p[y], q[y]); };
    const KeyBuckets kb = key_buckets(toks, K, p, q, max_buckets);
    const int64_t B = kb.count;
    auto bucket = [&](int32_t y) {  // in the system's cutting order (inner: descending ratio)
        const int64_t b = static_cast<int64_t>(kb.of(key(y)));
        return s.inner ? B - 1 - b : b;
    };
    std::vector<int64_t> start(static_cast<std::size_t>(B) + 1, 0);
    std::vector<double> Q(B, 0.0), P(B, 0.0), rlo(B, std::numeric_limits<double>::infinity()), rhi(B, 0.0);
    for (int64_t k = 0; k < K; ++k) {
        const int32_t y = toks[k];
        const int64_t b = bucket(y);
        ++start[b + 1];
        Q[b] += q[y];
        P[b] += p[y];
        const double r = p[y] / q[y];
        rlo[b] = std::min(rlo[b], r);
        rhi[b] = std::max(rhi[b], r);
    }
    for (int64_t b = 0; b < B; ++b) start[b + 1] += start[b];
    std::vector<int32_t> tok(static_cast<std::size_t>(K));
    {
        std::vector<int64_t> fill(start.begin(), start.end() - 1);
        for (int64_t k = 0; k < K; ++k) tok[fill[bucket(toks[k])]++] = toks[k];
    }
    std::vector<char> refine(B, 0);
    std::vector<double> qs, ps;
    std::vector<int64_t> bound_of;  // copy index -> the bucket whose bound copy it is, or -1
    std::vector<int64_t> top;
    int rounds = 0;
    for (bool again = true; again;) {
        ++rounds;
        qs.clear();
        ps.clear();
        bound_of.assign(1, -1);
        auto put = [&](double qq, double pp, int64_t b) {
            qs.push_back(qq);
            ps.push_back(pp);
            bound_of.push_back(b);
        };
        for (int64_t b = 0; b < B; ++b) {
            const int64_t m = start[b + 1] - start[b];
            if (m == 0) continue;
            if (refine[b]) {
                int32_t* first = tok.data() + start[b];
                std::sort(first, first + m, [&](int32_t u, int32_t v) {
                    return s.inner ? p[u] * q[v] > p[v] * q[u] : p[u] * q[v] < p[v] * q[u];
                });
                for (int64_t k = 0; k < m; ++k) put(q[first[k]], p[first[k]], -1);
                continue;
            }
            if (m == 1 || !(rhi[b] > rlo[b])) {  // one ratio: every inner copy lies on the chord
                put(Q[b], P[b], -1);
                continue;
            }
            double q1, p1;
            bound_copy(s, Q[b], P[b], rlo[b], rhi[b], q1, p1);
            put(q1, p1, b);
            put(Q[b] - q1, P[b] - p1, -1);
        }
        top.clear();
        left = remaining(s, qs.data(), ps.data(), static_cast<int64_t>(qs.size()), &top);
        again = false;
        for (const int64_t j : top)
            if (bound_of[j] >= 0) {
                refine[bound_of[j]] = 1;
                again = true;
            }
    }
    if (stats) {
        stats->buckets = B;
        stats->rounds = rounds;
        stats->sorted = 0;
        for (int64_t b = 0; b < B; ++b)
            if (refine[b]) stats->sorted += start[b + 1] - start[b];
    }
    return left;
}

}  // namespace mdsd::verif::shadow
