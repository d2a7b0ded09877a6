// alpha*_iid with order-independent sums (docs/theory.md §4.2.2): F(k) = [P_k] - [S_k]^n, [x] the
// exact prefix mass rounded once (exact_sum.hpp). Then F(k) depends on the prefix's token SET,
// not on the order it was summed in, and the selection route need not sort the prefix: only the
// buckets that can hold the minimiser (the window [bfirst, bcut] of sel_window) are sorted and
// scanned; every token before the window is summed unsorted.
//
// Two routes, bit-identical to each other (alpha* and certificate):
//   * iid_exact_sorted: the full ratio sort (ratio_order), F at every prefix -- the reference;
//   * iid_select_exact: the selection.
// Not yet wired into dual_alpha (it changes the shipped alpha* by up to ~1 ulp; see CHANGELOG).
#pragma once

#include <cstdint>
#include <vector>

#include "mdsd/bits.hpp"
#include "mdsd/exact_sum.hpp"
#include "mdsd/iid_select.hpp"
#include "mdsd/order.hpp"

namespace mdsd {

// The exact-sum prefix scan shared by both routes: best = min(0, min_k F(k)), kbest the first
// minimiser (prefix sizes counted from the base the scan starts at).
struct IidExactScan {
    ExactSum P, S;
    double best = 0.0;
    int64_t k = 0, kbest = 0;
    void add(double pi, double qi, int n) {
        P.add(pi);
        S.add(qi);
        ++k;
        const double F = P.value() - ipow(S.value(), n);
        if (F < best) {
            best = F;
            kbest = k;
        }
    }
};

// The reference: every prefix of the full ratio order. order = the whole order (kept = K).
inline IidSelectResult iid_exact_sorted(const double* p, const double* q, int64_t V, int n, OrderWorkspace& ows,
                                        std::vector<int32_t>& order) {
    IidSelectResult res;
    const int64_t K = ratio_order(p, q, V, ows, order);
    IidExactScan scan;
    for (int64_t k = 0; k < K; ++k) scan.add(p[order[k]], q[order[k]], n);
    res.best = scan.best;
    res.k_star = scan.kbest;
    res.kept = res.support = K;
    return res;
}

// The selection: order[0, kept) = the tokens below the window (in token order), then the window's
// tokens in ratio order; the certificate is order[0, k_star), the same SET as iid_exact_sorted's.
// `fallback`: p / q overflowed (subnormal q); use iid_exact_sorted.
inline IidSelectResult iid_select_exact(const double* p, const double* q, int64_t V, int n, IidSelectWorkspace& ws,
                                        std::vector<int32_t>& order) {
    using Item = IidSelectWorkspace::Item;
    IidSelectResult res;
    order.clear();
    int64_t bfirst, bcut;
    sel_window(p, q, V, n, ws, res, bfirst, bcut);
    if (res.fallback || bcut < 0) return res;  // bcut < 0: no prefix beats the empty one
    const uint64_t* keys = ws.keys.data();
    uint32_t* cnt = ws.cnt.data();
    const uint64_t kstart = bfirst == 0 ? 0 : key_bits(sel_bucket_floor(bfirst));
    const uint64_t kend = bcut + 1 == kSelBuckets ? kNoKey : key_bits(sel_bucket_floor(bcut + 1));
    int64_t m = 0;
    for (int64_t b = bfirst; b <= bcut; ++b) {
        const uint32_t c = cnt[b];
        cnt[b] = static_cast<uint32_t>(m);
        m += c;
    }
    ws.items.resize(m);
    order.resize(res.support);
    Item* it = ws.items.data();
    IidExactScan scan;
    int64_t m0 = 0;
    for (int64_t i = 0; i < V; ++i) {
        const uint64_t key = keys[i];
        if (key < kstart) {  // below the window: in every candidate prefix
            scan.P.add(p[i]);
            scan.S.add(q[i]);
            order[m0++] = static_cast<int32_t>(i);
        } else if (key < kend) {
            it[cnt[sel_bucket(key)]++] = {key, p[i], q[i], static_cast<int32_t>(i)};
        }
    }
    scan.k = m0;
    for (int64_t b = bfirst, lo = 0; b <= bcut; lo = cnt[b], ++b) {
        const int64_t s = cnt[b] - lo;
        Item* a = it + lo;
        sort_bucket(a, s, b == 0 || b + 1 == kSelBuckets, ws);
        for (int64_t j = 0; j < s; ++j) {
            order[m0 + lo + j] = a[j].idx;
            scan.add(a[j].p, a[j].q, n);
        }
    }
    order.resize(m0 + m);
    res.best = scan.best;
    res.k_star = scan.kbest;
    res.kept = m0 + m;
    return res;
}

}  // namespace mdsd
