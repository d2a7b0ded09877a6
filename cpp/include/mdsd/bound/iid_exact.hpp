// alpha*_iid with order-independent sums (docs/theory/sorted_prefix.md §4.2.2, §4.2.3): F(k) = [P_k] - [S_k]^n,
// [x] the exact prefix mass rounded once (exact_sum.hpp). F(k) then depends on the prefix's token
// SET, not on the order it was summed in, so the selection need not sort the prefix: only the
// window of buckets that can hold the minimiser (sel_window) is sorted and scanned; every token
// before it is summed unsorted.
//
// The routes, bit-identical to each other (alpha* and certificate):
//   * iid_scan_order: every prefix of a given ratio order (dual_prefix, the sorted route);
//   * iid_select_fast: the selection (dual_alpha's default route);
//   * iid_exact_sorted, iid_select_exact: the same with ExactSum at every step (the references,
//     and the fallbacks' arithmetic).
// The fast routes get [.] from DdSum and hand a row to ExactSum when a rounding is undecided.
#pragma once

#include <cstdint>
#include <vector>

#include "mdsd/core/bits.hpp"
#include "mdsd/core/exact_sum.hpp"
#include "mdsd/bound/iid_window.hpp"
#include "mdsd/core/order.hpp"

namespace mdsd {

// Tracks min(0, min_k F(k)) and its first minimiser k (prefix sizes counted from `k`'s start).
struct IidBest {
    double best = 0.0;
    int64_t k = 0, kbest = 0;
    void take(double F) {
        ++k;
        if (F < best) {
            best = F;
            kbest = k;
        }
    }
};

// The exact-sum prefix scan: ExactSum rounded at every prefix (~70 ns a token).
struct IidExactScan : IidBest {
    ExactSum P, S;
    void add(double pi, double qi, int n) {
        P.add(pi);
        S.add(qi);
        take(P.value() - ipow(S.value(), n));
    }
};

// The same values from double-double sums: add() returns false when a rounding is undecided (the
// scan is then void and the caller redoes it with IidExactScan). A prefix whose approximate F
// clears the best value found by more than its error bound cannot be a new minimum and is not
// rounded exactly (docs/theory/sorted_prefix.md §4.2.3): most of the sorted route's prefixes.
struct IidFastScan : IidBest {
    DdSum P, S;
    bool add(double pi, double qi, int n) {
        P.add(pi);
        S.add(qi);
        const double ap = P.approx(), as = S.approx();
        if (P.err <= 0x1p-56 * ap && S.err <= 0x1p-56 * as) {
            // |[P] - ap| <= 2 eps ap, |[S] - as| <= 2 eps as; ipow's products within (n - 1) u each:
            // F within (3 + 4n) eps (ap + as^n) of its exact-sum value, here bounded 8x over.
            const double an = ipow(as, n);
            const double bound = 32.0 * (n + 1) * 0x1p-52 * (ap + an) + 0x1p-1000;
            if ((ap - an) - bound > best) {
                ++k;
                return true;
            }
        }
        double rp, rs;
        if (!P.rounded(rp) || !S.rounded(rs)) return false;
        take(rp - ipow(rs, n));
        return true;
    }
};

// The sorted route's scan over order[0, K): min(0, min_k F(k)) and the first minimiser.
// `exact_sums` reports a fallback to ExactSum; `force_exact` takes it (tests).
inline IidBest iid_scan_order(const double* p, const double* q, const int32_t* ord, int64_t K, int n, bool& exact_sums,
                              bool force_exact = false) {
    exact_sums = false;
    if (!force_exact) {
        IidFastScan fast;
        int64_t k = 0;
        while (k < K && fast.add(p[ord[k]], q[ord[k]], n)) ++k;
        if (k == K) return fast;
    }
    exact_sums = true;
    IidExactScan scan;
    for (int64_t k = 0; k < K; ++k) scan.add(p[ord[k]], q[ord[k]], n);
    return scan;
}

// The reference: ExactSum at every prefix of the full ratio order. order = the whole order.
inline IidSelectResult iid_exact_sorted(const double* p, const double* q, int64_t V, int n, OrderWorkspace& ows,
                                        std::vector<int32_t>& order) {
    IidSelectResult res;
    const int64_t K = ratio_order(p, q, V, ows, order);
    IidExactScan scan;
    for (int64_t k = 0; k < K; ++k) scan.add(p[order[k]], q[order[k]], n);
    res.best = scan.best;
    res.k_star = scan.kbest;
    res.kept = res.window = res.support = K;
    res.exact_sums = true;
    return res;
}

// Adds every token below the window (bucket < bfirst) to P and S, in token order (Acc: DdSum or
// ExactSum, whose add() tracks its own error).
template <class Acc>
inline void add_below(const double* p, const double* q, int64_t V, const IidSelectWorkspace& ws, int64_t bfirst, Acc& P,
                      Acc& S) {
    const uint16_t* bkt = ws.bkt.data();
    for (int64_t i = 0; i < V; ++i) {
        if (bkt[i] < bfirst) {
            P.add(p[i]);
            S.add(q[i]);
        }
    }
}

// The window's scan after sel_gather, with ExactSum: the tokens below the window, then the
// window's m sorted tokens.
inline IidBest select_scan_exact(const double* p, const double* q, int64_t V, int n, const IidSelectWorkspace& ws,
                                 int64_t bfirst, int64_t m0, int64_t m) {
    IidExactScan scan;
    add_below(p, q, V, ws, bfirst, scan.P, scan.S);
    scan.k = m0;
    for (int64_t j = 0; j < m; ++j) scan.add(ws.items[j].p, ws.items[j].q, n);
    return scan;
}

// The same with DdSum from the base (P0, S0: the mass below the window, sel_base's lanes or
// add_below's token sums). Returns false if a rounding is undecided.
inline bool select_scan_fast(int n, const IidSelectWorkspace& ws, const DdSum& P0, const DdSum& S0, int64_t m0,
                             int64_t m, IidBest& out) {
    IidFastScan scan;
    scan.P = P0;
    scan.S = S0;
    scan.k = m0;
    for (int64_t j = 0; j < m; ++j)
        if (!scan.add(ws.items[j].p, ws.items[j].q, n)) return false;
    out = scan;
    return true;
}

// The selection. With `want_order`, order[0, kept) = the tokens below the window (token order),
// then the window in ratio order, and the certificate is order[0, k_star), the same SET as the
// sorted route's; without, only k_star is meaningful (no certificate asked for).
// `fallback`: p / q overflowed (subnormal q); use the sorted route. The base comes from sel_base's
// lanes; if a rounding is then undecided, from token sums whose error is tracked exactly (exact
// ties stay decided: short rows); if still undecided, ExactSum throughout. `force_tokens`,
// `force_exact` start at the second and third (tests).
inline IidSelectResult iid_select_fast(const double* p, const double* q, int64_t V, int n, IidSelectWorkspace& ws,
                                       std::vector<int32_t>& order, bool want_order = true, bool force_exact = false,
                                       bool force_tokens = false) {
    IidSelectResult res;
    order.clear();
    int64_t bfirst, bcut;
    sel_window(p, q, V, n, ws, res, bfirst, bcut);
    if (res.fallback || bcut < 0) return res;  // bcut < 0: no prefix beats the empty one
    if (want_order) order.resize(res.support);
    const bool lanes = !force_exact && !force_tokens;
    int64_t m0 = 0;
    const int64_t m = sel_base(p, q, V, ws, bfirst, bcut, lanes, want_order ? order.data() : nullptr, m0);
    sel_gather(p, q, ws, bfirst, bcut, m);
    IidBest best;
    bool done = lanes && select_scan_fast(n, ws, ws.P0, ws.S0, m0, m, best);
    if (!done && !force_exact) {
        res.base_tokens = true;
        DdSum P, S;
        add_below(p, q, V, ws, bfirst, P, S);
        done = select_scan_fast(n, ws, P, S, m0, m, best);
    }
    if (!done) {
        res.exact_sums = true;
        best = select_scan_exact(p, q, V, n, ws, bfirst, m0, m);
    }
    if (want_order) {
        for (int64_t j = 0; j < m; ++j) order[m0 + j] = ws.items[j].idx;
        order.resize(m0 + m);
    }
    res.best = best.best;
    res.k_star = best.kbest;
    res.kept = m0 + m;
    res.window = m;
    return res;
}

// The exact-sum selection (ExactSum throughout): iid_select_fast's arithmetic fallback, as a route.
inline IidSelectResult iid_select_exact(const double* p, const double* q, int64_t V, int n, IidSelectWorkspace& ws,
                                        std::vector<int32_t>& order) {
    return iid_select_fast(p, q, V, n, ws, order, true, true);
}

}  // namespace mdsd
