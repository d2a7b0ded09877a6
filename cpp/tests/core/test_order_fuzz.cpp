// ratio_order's sort (order.hpp) against std::stable_sort by the same keys on 10,000+ random rows:
// LLM-like rows, heavy ties, zeros in p and q, subnormal q (the rescaled keys), all-equal ratios,
// ratios over the whole exponent range, keys differing only in their low bits, and sizes around
// every threshold of the sort (insertion-sort buckets, the old K < 256 path) up to K = 200,000.
// The keys come from ratio_keys (test_order.cpp checks them against exact ratios); this checks the
// permutation: ascending key, ties in token order.
//
// Negative controls: two deliberately unstable sorts of the same keys (std::sort; ties by
// descending token) must be caught by the same comparison on the rows that have ties.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "mdsd/core/order.hpp"

using cases::Gen;
using cases::Vec;

enum Family { Llm, Ties, Zeros, Subnormal, AllEqual, WideExp, LowBits, Copies, Clusters, kFamilies };

static void make_row(Gen& g, int64_t V, int fam, Vec& p, Vec& q) {
    p.assign(V, 0.0);
    q.assign(V, 0.0);
    const double s = g.uniform(0.2, 2.0);
    for (int64_t i = 0; i < V; ++i) {  // LLM-like: log-normal logits, a draft with its own noise
        const double a = 3.0 * g.normal();
        p[i] = std::exp(a);
        q[i] = std::exp(a + s * g.normal());
    }
    switch (fam) {
        case Ties:  // a few values of p and of q: ratios from at most 64 combinations
            for (int64_t i = 0; i < V; ++i) {
                p[i] = static_cast<double>(g.integer(0, 7)) / 8.0;
                q[i] = static_cast<double>(g.integer(1, 8)) / 8.0;
            }
            break;
        case Zeros: {
            const double zp = g.uniform(), zq = g.uniform(0.0, 0.5);
            for (int64_t i = 0; i < V; ++i) {
                const double u = g.uniform();
                if (u < zp) p[i] = 0.0;
                else if (u < zp + zq * (1.0 - zp)) q[i] = 0.0;
            }
            break;
        }
        case Subnormal:  // p / q overflows for some tokens: every key is rescaled
            for (int64_t i = 0; i < V; ++i)
                if (g.uniform() < 0.1) q[i] = std::ldexp(g.uniform(0.5, 1.0), -static_cast<int>(g.integer(1023, 1074)));
            break;
        case AllEqual: {
            const int e = static_cast<int>(g.integer(-5, 5));
            for (int64_t i = 0; i < V; ++i) p[i] = std::ldexp(q[i], e);  // exact: one ratio 2^e
            break;
        }
        case WideExp:
            for (int64_t i = 0; i < V; ++i) {
                p[i] = std::ldexp(g.uniform(0.5, 1.0), static_cast<int>(g.integer(-1000, 1000)));
                q[i] = g.uniform(0.5, 1.0);
            }
            break;
        case LowBits:  // keys differ in their last 6 bits only, with ties
            for (int64_t i = 0; i < V; ++i) {
                p[i] = 1.0 + static_cast<double>(g.integer(0, 63)) * DBL_EPSILON;
                q[i] = 1.0;
            }
            break;
        case Copies:  // exact ties among LLM-like ratios: copies and power-of-two scalings
            for (int64_t r = 0, m = g.integer(0, V / 2); r < m; ++r) {
                const int64_t a = g.integer(0, V - 1), b = g.integer(0, V - 1);
                const int e = static_cast<int>(g.integer(-2, 2));
                p[b] = std::ldexp(p[a], e);
                q[b] = std::ldexp(q[a], e);
            }
            break;
        case Clusters: {  // p = 0 (key 0) beside groups of ratios that share their top 40+ bits:
            // runs of the sort's truncated keys, short and long, unsorted, with exact ties inside
            for (int64_t i = 0; i < V;) {
                const int64_t m = std::min(V - i, g.uniform() < 0.1 ? g.integer(33, 400) : g.integer(1, 32));
                const double c = std::ldexp(g.uniform(1.0, 2.0), static_cast<int>(g.integer(-30, 30)));
                const int64_t spread = g.integer(1, 1 << 12);
                for (int64_t t = i; t < i + m; ++t) {
                    q[t] = g.uniform(0.5, 1.0);
                    p[t] =
                        g.uniform() < 0.02 ? 0.0 : c * (1.0 + static_cast<double>(g.integer(0, spread)) * DBL_EPSILON);
                    if (g.uniform() < 0.5) q[t] = 1.0;  // then p / q = p exactly: ties at equal p
                }
                i += m;
            }
            break;
        }
        default: break;
    }
}

// Sizes: around the thresholds, log-uniform up to 20,000, and a few up to 200,000.
static int64_t draw_size(Gen& g, int row) {
    static const int64_t edges[] = {1, 2, 3, 31, 32, 33, 34, 63, 64, 65, 255, 256, 257, 2047, 2048, 2049, 8193};
    const int ne = static_cast<int>(sizeof edges / sizeof edges[0]);
    if (row % 10 == 0) return edges[(row / 10) % ne];
    if (row % 97 == 1) return g.integer(20000, 200000);
    return static_cast<int64_t>(std::exp(g.uniform(0.0, std::log(20000.0))));
}

int main() {
    Gen g(20261203);
    mdsd::OrderWorkspace ws, ref_ws;  // ws reused across every size, as the kernels do
    std::vector<int32_t> order, want, bad1, bad2, pos;
    const int kRows = 10400;
    long mismatches = 0, tie_rows = 0, caught_std = 0, caught_desc = 0, big_rows = 0;
    int64_t max_k = 0;
    for (int row = 0; row < kRows; ++row) {
        const int64_t V = draw_size(g, row);
        const int fam = row % kFamilies;
        Vec p, q;
        make_row(g, V, fam, p, q);
        check::context("row %d, family %d, V = %lld", row, fam, static_cast<long long>(V));
        const int64_t K = mdsd::ratio_order(p.data(), q.data(), V, ws, order);
        // The reference: the same keys, std::stable_sort of their positions.
        const int64_t Kr = mdsd::ratio_keys(p.data(), q.data(), V, ref_ws);
        const std::vector<uint64_t>& key = ref_ws.keys;
        pos.resize(Kr);
        std::iota(pos.begin(), pos.end(), 0);
        auto by_key = [&](int32_t a, int32_t b) { return key[a] < key[b]; };
        std::vector<int32_t> sp = pos;
        std::stable_sort(sp.begin(), sp.end(), by_key);
        want.resize(Kr);
        for (int64_t j = 0; j < Kr; ++j) want[j] = ref_ws.idx[sp[j]];
        CHECK_EQ(K, Kr);
        const bool same = order == want;
        CHECK_MSG(same, "order differs from std::stable_sort");
        mismatches += !same;
        max_k = std::max(max_k, K);
        big_rows += K >= 20000;

        // Negative controls, judged by the same comparison.
        bool ties = false;
        for (int64_t j = 1; j < Kr && !ties; ++j) ties = key[sp[j]] == key[sp[j - 1]];
        std::vector<int32_t> u = pos;
        std::sort(u.begin(), u.end(), by_key);
        bad1.resize(Kr);
        for (int64_t j = 0; j < Kr; ++j) bad1[j] = ref_ws.idx[u[j]];
        std::sort(u.begin(), u.end(),
                  [&](int32_t a, int32_t b) { return key[a] < key[b] || (key[a] == key[b] && a > b); });
        bad2.resize(Kr);
        for (int64_t j = 0; j < Kr; ++j) bad2[j] = ref_ws.idx[u[j]];
        tie_rows += ties;
        caught_std += bad1 != want;
        caught_desc += bad2 != want;
        CHECK_MSG((bad2 != want) == ties, "ties by descending token: caught iff the row has ties");
    }
    std::printf(
        "test_order_fuzz: %d rows, %ld with ties, largest K %lld, %ld rows with K >= 20,000; %ld mismatches; "
        "negative controls caught: std::sort on %ld rows, descending ties on %ld\n",
        kRows, tie_rows, static_cast<long long>(max_k), big_rows, mismatches, caught_std, caught_desc);
    CHECK(max_k >= 150000);
    CHECK(tie_rows >= 3000);
    CHECK(caught_std >= 1000);  // std::sort keeps ties in order only on small or lucky rows
    return check::summary("test_order_fuzz");
}
