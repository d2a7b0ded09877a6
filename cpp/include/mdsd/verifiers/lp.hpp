// "optimal-lp": the OT-optimal verifier read off the flow LP (docs/theory/transport.md §2.3, §8.8).
// Given the optimal accepted flow x(A, y) of every draft set A (p = 0 tokens removed) from
// solve_lp, with a(y) = sum_A x(A, y) and alpha = sum_y a(y):
//   map the tuple to A = S(omega) ∩ supp p; output y in A w.p. x(A, y) / w_A; otherwise Y ~ r,
//   r = (p - a) / (1 - alpha).  The output law is a + (1 - alpha) r = p.
// The LP solution is clipped to its bounds first (x >= 0, a <= p, sum_y x(A, y) <= w_A), so
// the law is p up to rounding even when HiGHS returns a slightly infeasible point.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "mdsd/verifiers/common.hpp"

namespace mdsd::verif {

struct LpFlow {  // the part of an LPResult the verifier needs
    const int64_t* set_ptr;
    const int32_t* set_tokens;
    const double* flows;
    const double* set_weights;
    int64_t num_sets;
};

struct OptimalLp {
    struct Plan : PlanBase {
        std::vector<int64_t> ptr;
        std::vector<int32_t> tok;
        std::vector<double> frac;  // conditional output probability of each (set, token) edge
        std::vector<double> w, xsum;  // w_A and sum_y x(A, y) after clipping
        std::unordered_map<uint64_t, int64_t> head;  // hash of the token list -> first set
        std::vector<int64_t> chain;                  // next set with the same hash, or -1
        Categorical res;
    };

    static uint64_t key(const int32_t* t, int m) {
        uint64_t h = 0x243F6A8885A308D3ull;
        for (int j = 0; j < m; ++j)
            h = mix64(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(t[j])) + 0x9E3779B97F4A7C15ull));
        return h;
    }

    static Plan prepare(const double* p, const double* q, int64_t V, int n, const Drafter::Spec& scheme,
                        const LpFlow& f) {
        Plan pl;
        pl.init(p, q, V, n, scheme);
        const int64_t S = f.num_sets;
        pl.ptr.assign(f.set_ptr, f.set_ptr + S + 1);
        const int64_t E = pl.ptr[S];
        if (pl.ptr[0] != 0 || E < 0) throw std::invalid_argument("lp: set_ptr must start at 0");
        for (int64_t s = 0; s < S; ++s)
            if (pl.ptr[s + 1] < pl.ptr[s]) throw std::invalid_argument("lp: set_ptr must be non-decreasing");
        pl.tok.assign(f.set_tokens, f.set_tokens + E);
        for (int32_t y : pl.tok)
            if (y < 0 || y >= V) throw std::invalid_argument("lp: set token id out of range");
        std::vector<double> x(f.flows, f.flows + E);
        for (double& v : x) v = std::max(v, 0.0);
        // Clip to the token capacities a(y) <= p(y), then to the set capacities.
        std::vector<double> a(V, 0.0);
        for (int64_t e = 0; e < E; ++e) a[pl.tok[e]] += x[e];
        for (int64_t e = 0; e < E; ++e)
            if (a[pl.tok[e]] > p[pl.tok[e]]) x[e] *= p[pl.tok[e]] / a[pl.tok[e]];
        pl.w.assign(f.set_weights, f.set_weights + S);
        pl.xsum.assign(S, 0.0);
        pl.frac.assign(E, 0.0);
        pl.chain.assign(S, -1);
        std::fill(a.begin(), a.end(), 0.0);
        for (int64_t s = 0; s < S; ++s) {
            double sum = 0.0;
            for (int64_t e = pl.ptr[s]; e < pl.ptr[s + 1]; ++e) sum += x[e];
            const double scale = sum > pl.w[s] ? pl.w[s] / sum : 1.0;
            double xs = 0.0;
            for (int64_t e = pl.ptr[s]; e < pl.ptr[s + 1]; ++e) {
                x[e] *= scale;
                xs += x[e];
                a[pl.tok[e]] += x[e];
                pl.frac[e] = pl.w[s] > 0.0 ? x[e] / pl.w[s] : 0.0;
            }
            pl.xsum[s] = xs;
            const int m = static_cast<int>(pl.ptr[s + 1] - pl.ptr[s]);
            const uint64_t h = key(pl.tok.data() + pl.ptr[s], m);
            auto it = pl.head.find(h);
            if (it != pl.head.end()) pl.chain[s] = it->second;
            pl.head[h] = s;
        }
        std::vector<double> r(V);
        for (int64_t i = 0; i < V; ++i) r[i] = std::max(0.0, p[i] - a[i]);
        pl.res.build(r.data(), V);
        return pl;
    }

    // The set A = S(tuple) ∩ supp p, or -1 when the LP holds no such set.
    static int64_t find(const Plan& pl, const int32_t* t, int32_t* buf) {
        int m = 0;
        for (int k = 0; k < pl.n; ++k) {
            const int32_t y = t[k];
            if (!(pl.p[y] > 0.0) || contains(buf, m, y)) continue;
            int j = m++;
            while (j > 0 && buf[j - 1] > y) {
                buf[j] = buf[j - 1];
                --j;
            }
            buf[j] = y;
        }
        if (m == 0) return -1;
        auto it = pl.head.find(key(buf, m));
        for (int64_t s = it == pl.head.end() ? -1 : it->second; s >= 0; s = pl.chain[s]) {
            if (pl.ptr[s + 1] - pl.ptr[s] != m) continue;
            if (std::equal(buf, buf + m, pl.tok.data() + pl.ptr[s])) return s;
        }
        return -1;
    }

    template <class Vis>
    static void walk(const Plan& pl, const int32_t* t, Vis& vis) {
        int32_t small[64];
        std::vector<int32_t> big;
        int32_t* buf = small;
        if (pl.n > 64) {
            big.resize(pl.n);
            buf = big.data();
        }
        const int64_t s = find(pl, t, buf);
        if (s >= 0) {
            // A categorical choice among the set's tokens, as a chain of conditional tests.
            double left = 1.0;
            for (int64_t e = pl.ptr[s]; e < pl.ptr[s + 1]; ++e) {
                const double f = pl.frac[e];
                if (f > 0.0 && vis.test(pl.tok[e], left > f ? f / left : 1.0)) return;
                left -= f;
            }
        }
        vis.residual(pl.res);
    }

    // The verifier's own accounting: accepted flow, plus rejections whose residual lands in the set.
    static double exact(const Plan& pl, double /*budget*/) {
        double acc = 0.0;
        const double rtot = pl.res.total();
        std::vector<double> r(pl.V, 0.0);
        if (rtot > 0.0) pl.res.add_law(1.0, r.data());
        for (int64_t s = 0; s < static_cast<int64_t>(pl.w.size()); ++s) {
            double rA = 0.0;
            for (int64_t e = pl.ptr[s]; e < pl.ptr[s + 1]; ++e) rA += r[pl.tok[e]];
            acc += pl.xsum[s] + std::max(0.0, pl.w[s] - pl.xsum[s]) * rA;
        }
        return std::min(acc, 1.0);
    }
};

}  // namespace mdsd::verif
