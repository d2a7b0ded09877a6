// alpha*_iid without the full sort (docs/theory.md §4.2.1).
//
// alpha* = 1 + min_k F(k), F(k) = P_k - S_k^n over the prefixes of the ratio order (P_k, S_k: the
// prefix's p and q mass). The sorted route sorts the whole support. Here one pass puts every
// token in a coarse bucket of the ratio (1/32 of a binade) and sums each bucket's p and q; a
// lower bound on F over the prefixes ending inside each bucket proves which buckets cannot hold
// the minimum (every bucket is bounded, so F need not be unimodal), and only the buckets up to
// the last one that can are sorted (a counting sort on finer bits, then one insertion pass) and
// scanned. The scan over that prefix is the sorted route's scan on the same tokens in the same
// order, so alpha* and the certificate are the same bits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "mdsd/bits.hpp"
#include "mdsd/order.hpp"

namespace mdsd {

// The iid prefix scan, shared by the sorted route (dual_prefix) and this one: tokens in ratio
// order go through add(); best = min(0, min_k F(k)) and kbest its first minimiser.
struct IidScan {
    double P = 0.0, S = 0.0, best = 0.0;
    int64_t k = 0, kbest = 0;
    void add(double pi, double qi, int n) {
        P += pi;
        S += qi;
        ++k;
        const double F = P - ipow(S, n);
        if (F < best) {
            best = F;
            kbest = k;
        }
    }
};

// Coarse buckets: 1/32 of a binade of the ratio (the top 16 bits of its key) between 2^-64 and
// 2^64, one bucket below (p = 0 included) and one above.
constexpr int kSelShift = 52 - 5;
constexpr uint64_t kSelLo = uint64_t{1023 - 64} << 5;  // the digit of 2^-64
constexpr uint64_t kSelHi = uint64_t{1023 + 64} << 5;  // the digit of 2^64
constexpr int64_t kSelBuckets = static_cast<int64_t>(kSelHi - kSelLo) + 2;

inline int64_t sel_bucket(uint64_t key) {
    const uint64_t d = key >> kSelShift;
    return d < kSelLo ? 0 : d >= kSelHi ? kSelBuckets - 1 : static_cast<int64_t>(d - kSelLo) + 1;
}

// The smallest ratio bucket b can hold.
inline double sel_bucket_floor(int64_t b) {
    if (b == 0) return 0.0;
    const uint64_t k = (static_cast<uint64_t>(b - 1) + kSelLo) << kSelShift;
    double r;
    std::memcpy(&r, &k, sizeof r);
    return r;
}

struct IidSelectWorkspace {
    struct Item {  // p and q ride along, so the scan reads the kept tokens in order (no gathers)
        uint64_t key;
        double p, q;
        int32_t idx;
    };
    std::vector<uint64_t> keys;  // per token; kNoKey off the support
    std::vector<uint32_t> cnt;   // tokens per coarse bucket, then each one's end in `items`
    std::vector<double> bp, bq;  // p and q mass per coarse bucket (for the bounds only)
    std::vector<Item> items, tmp;
    std::vector<uint32_t> fine;  // one bucket's counting sort
};

constexpr uint64_t kNoKey = ~uint64_t{0};  // above every finite ratio's key

struct IidSelectResult {
    double best = 0.0;      // min(0, min_k F(k)), the sorted route's value bit for bit
    int64_t k_star = 0;     // the certificate is order[0, k_star)
    int64_t kept = 0;       // tokens sorted and scanned: order[0, kept)
    int64_t support = 0;    // K = |supp q|
    bool fallback = false;  // some p / q overflowed (subnormal q): use the sorted route
};

inline bool item_less(const IidSelectWorkspace::Item& x, const IidSelectWorkspace::Item& y) {
    return x.key < y.key || (x.key == y.key && x.idx < y.idx);
}

// Sorts a[0, s), one coarse bucket's tokens in token order, by key with ties in token order
// (the stable sort's order). A counting sort on the next bits (about one fine bucket per token)
// leaves inversions only inside fine buckets, which one insertion pass removes; fine buckets
// wider than 32 (crowded ratios) and the end buckets, which span many binades, are sorted by
// (key, token) instead, so the cost stays O(s log s) at worst.
inline void sort_bucket(IidSelectWorkspace::Item* a, int64_t s, bool end_bucket, IidSelectWorkspace& ws) {
    using Item = IidSelectWorkspace::Item;
    if (s > 8) {
        int lg = 0;
        if (!end_bucket)
            while (lg < 16 && (int64_t{1} << lg) < s) ++lg;
        bool wide = lg == 0;
        if (lg > 0) {
            const int sh = kSelShift - lg;
            const uint32_t nf = uint32_t{1} << lg;
            ws.fine.assign(nf + 1, 0);
            uint32_t* c = ws.fine.data();
            for (int64_t j = 0; j < s; ++j) ++c[((a[j].key >> sh) & (nf - 1)) + 1];
            for (uint32_t f = 0; f < nf; ++f) {
                wide |= c[f + 1] > 32;
                c[f + 1] += c[f];
            }
            ws.tmp.resize(s);
            Item* t = ws.tmp.data();
            for (int64_t j = 0; j < s; ++j) t[c[(a[j].key >> sh) & (nf - 1)]++] = a[j];
            std::memcpy(a, t, s * sizeof(Item));
        }
        if (wide) {
            if (!std::is_sorted(a, a + s, item_less)) std::sort(a, a + s, item_less);
            return;
        }
    }
    for (int64_t x = 1; x < s; ++x) {
        if (!(a[x - 1].key > a[x].key)) continue;
        const Item v = a[x];
        int64_t y = x;
        do {
            a[y] = a[y - 1];
            --y;
        } while (y > 0 && a[y - 1].key > v.key);
        a[y] = v;
    }
}

// The first pass and the bounds, shared by both selection routes: fills ws (keys, bucket counts
// and masses), res.support and res.fallback, and [bfirst, bcut], the buckets that can hold the
// minimiser (bcut < 0: none, alpha* = 1 and H empty). Every bucket outside is proven not to.
inline void sel_window(const double* p, const double* q, int64_t V, int n, IidSelectWorkspace& ws, IidSelectResult& res,
                       int64_t& bfirst, int64_t& bcut) {
    bfirst = -1;
    bcut = -1;
    ws.keys.resize(V);
    ws.cnt.assign(kSelBuckets, 0);
    ws.bp.assign(kSelBuckets, 0.0);
    ws.bq.assign(kSelBuckets, 0.0);
    uint64_t* keys = ws.keys.data();
    uint32_t* cnt = ws.cnt.data();
    double* bp = ws.bp.data();
    double* bq = ws.bq.data();
    bool overflow = false;
    int64_t K = 0;
    for (int64_t i = 0; i < V; ++i) {
        if (!(q[i] > 0.0)) {
            keys[i] = kNoKey;
            continue;
        }
        const double r = p[i] / q[i];
        overflow |= r > std::numeric_limits<double>::max();
        keys[i] = key_bits(r);
        const int64_t b = sel_bucket(keys[i]);
        ++cnt[b];
        bp[b] += p[i];
        bq[b] += q[i];
        ++K;
    }
    res.support = K;
    if (overflow) {  // ratio_order's rescaled keys: leave those rows to it
        res.fallback = true;
        return;
    }
    if (K == 0) return;
    // The smallest F at a bucket boundary (k = 0 included) is an upper bound on the minimum.
    double ub = 0.0, Ptot = 0.0, Stot = 0.0;
    for (int64_t b = 0; b < kSelBuckets; ++b) {
        if (cnt[b] == 0) continue;
        Ptot += bp[b];
        Stot += bq[b];
        ub = std::min(ub, Ptot - ipow(Stot, n));
    }
    // Every F here -- the scan's, the boundaries' and the bounds' -- is a sum of at most K
    // positive terms and a power, each within (K + #buckets + 4n) eps (P + n S^n) of the exact
    // value; a bucket is dropped only when its bound clears ub by twice a generous multiple of that.
    const double eps = std::numeric_limits<double>::epsilon();
    const double smax = std::max(1.0, Stot);
    const double slack =
        2.0 * (8.0 * static_cast<double>(K + kSelBuckets) + 16.0 * n + 64.0) * eps * (Ptot + n * ipow(smax, n) + 1.0);
    // A prefix ending inside bucket b (q mass S in [S0, S1]) has P >= P0 + lo (S - S0), lo the
    // bucket's smallest ratio; P0 + lo (S - S0) - S^n is concave in S, so its minimum over
    // [S0, S1] is at an end. Every bucket is bounded: a later dip of F is never missed.
    double P0 = 0.0, S0 = 0.0;
    for (int64_t b = 0; b < kSelBuckets; ++b) {
        if (cnt[b] == 0) continue;
        const double lo = sel_bucket_floor(b) * (1.0 - 4.0 * eps);  // p / q rounded up at most
        const double S1 = S0 + bq[b];
        const double lb = std::min(P0 - ipow(S0, n), P0 + lo * bq[b] - ipow(S1, n));
        if (lb <= ub + slack) {
            if (bfirst < 0) bfirst = b;
            bcut = b;
        }
        P0 += bp[b];
        S0 = S1;
    }
}

// Fills order[0, kept) with the first `kept` tokens of the ratio order (kept >= k_star) and
// returns the scan's minimum over all prefixes, equal bit for bit to dual_prefix's, unless
// `fallback` is set (then nothing else is).
inline IidSelectResult iid_select(const double* p, const double* q, int64_t V, int n, IidSelectWorkspace& ws,
                                  std::vector<int32_t>& order) {
    using Item = IidSelectWorkspace::Item;
    IidSelectResult res;
    order.clear();
    int64_t bfirst, bcut;
    sel_window(p, q, V, n, ws, res, bfirst, bcut);
    if (res.fallback || bcut < 0) return res;  // bcut < 0: no prefix beats the empty one
    const uint64_t* keys = ws.keys.data();
    uint32_t* cnt = ws.cnt.data();
    // Scatter the kept buckets' tokens (key < kend), bucket by bucket, in token order: about 4,000
    // write streams, which stay in cache, unlike one per token.
    const uint64_t kend = bcut + 1 == kSelBuckets ? kNoKey : key_bits(sel_bucket_floor(bcut + 1));
    int64_t m = 0;
    for (int64_t b = 0; b <= bcut; ++b) {
        const uint32_t c = cnt[b];
        cnt[b] = static_cast<uint32_t>(m);
        m += c;
    }
    ws.items.resize(m);
    Item* it = ws.items.data();
    for (int64_t i = 0; i < V; ++i) {
        const uint64_t key = keys[i];
        if (key < kend) it[cnt[sel_bucket(key)]++] = {key, p[i], q[i], static_cast<int32_t>(i)};
    }
    // Sort each bucket in cache and scan it: cnt[b] is now bucket b's end.
    order.resize(m);
    IidScan scan;
    for (int64_t b = 0, lo = 0; b <= bcut; lo = cnt[b], ++b) {
        const int64_t s = cnt[b] - lo;
        Item* a = it + lo;
        sort_bucket(a, s, b == 0 || b + 1 == kSelBuckets, ws);
        for (int64_t j = 0; j < s; ++j) {
            order[lo + j] = a[j].idx;
            scan.add(a[j].p, a[j].q, n);
        }
    }
    res.best = scan.best;
    res.k_star = scan.kbest;
    res.kept = m;
    return res;
}

}  // namespace mdsd
