// Test inputs and brute-force references shared by the C++ tests. Everything here is written
// independently of the kernels (no mdsd header is included): a fixed-seed generator, random
// (p, q) pairs like tests/_support/reference.py's random_case, LLM-like rows, and enumeration of ordered
// draft tuples.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

namespace cases {

using Vec = std::vector<double>;

// Fixed-seed generator (mt19937_64; the draws below use only its raw output and libstdc++'s
// gamma/normal distributions, so a given seed always gives the same cases on one toolchain).
struct Gen {
    std::mt19937_64 eng;
    explicit Gen(uint64_t seed) : eng(seed) {}
    double uniform() { return static_cast<double>(eng() >> 11) * 0x1.0p-53; }  // [0, 1)
    double uniform(double a, double b) { return a + (b - a) * uniform(); }
    int64_t integer(int64_t lo, int64_t hi) {  // [lo, hi]
        return lo + static_cast<int64_t>(eng() % static_cast<uint64_t>(hi - lo + 1));
    }
    double normal() { return std::normal_distribution<double>(0.0, 1.0)(eng); }
    double gamma(double a) { return std::gamma_distribution<double>(a, 1.0)(eng); }
    Vec dirichlet(int64_t V, double conc) {
        Vec x(V);
        double s = 0.0;
        for (auto& v : x) {
            v = gamma(conc);
            s += v;
        }
        if (!(s > 0.0)) {
            x.assign(V, 0.0);
            x[integer(0, V - 1)] = 1.0;
            return x;
        }
        for (auto& v : x) v /= s;
        return x;
    }
    // k distinct indices of [0, V)
    std::vector<int64_t> choose(int64_t V, int64_t k) {
        std::vector<int64_t> idx(V);
        std::iota(idx.begin(), idx.end(), 0);
        for (int64_t i = 0; i < k; ++i) std::swap(idx[i], idx[integer(i, V - 1)]);
        idx.resize(k);
        return idx;
    }
};

inline double sum(const Vec& x) {
    long double s = 0.0L;
    for (double v : x) s += v;
    return static_cast<double>(s);
}
inline void normalise(Vec& x) {
    const double s = sum(x);
    for (auto& v : x) v /= s;
}

// A random pair like tests/_support/reference.py random_case: Dirichlet p, q with concentrations in
// [0.1, 3], and (kind 1-4) zeros in p, zeros in q, tied ratios, tied values.
inline void random_case(Gen& g, int64_t V, Vec& p, Vec& q) {
    p = g.dirichlet(V, g.uniform(0.1, 3.0));
    q = g.dirichlet(V, g.uniform(0.1, 3.0));
    const int64_t kind = g.integer(0, 4);
    if (kind == 1 && V > 2) {
        for (int64_t i : g.choose(V, g.integer(1, V - 2))) p[i] = 0.0;
    } else if (kind == 2 && V > 2) {
        for (int64_t i : g.choose(V, g.integer(1, V - 2))) q[i] = 0.0;
    } else if (kind == 3 && V > 2) {
        const double f = g.uniform(0.5, 2.0);
        for (int64_t i : g.choose(V, g.integer(2, V - 1))) q[i] = p[i] * f;
    } else if (kind == 4) {
        for (auto& v : q) v = std::round(v * 4) + 1.0;
        for (auto& v : p) v = std::round(v * 4);
        if (sum(p) == 0.0) p[0] = 1.0;
    }
    if (sum(p) == 0.0) p[0] = 1.0;
    if (sum(q) == 0.0) q[0] = 1.0;
    normalise(p);
    normalise(q);
}

// An LLM-like pair of rows: Zipf-like logits with noise, q a perturbed, warmer copy of p; a heavy
// head and a long tail of tiny masses (down to ~1e-12 .. 1e-20 at V ~ 1e4).
inline void llm_rows(Gen& g, int64_t V, Vec& p, Vec& q, double zipf = 1.1) {
    Vec z(V);
    std::vector<int64_t> rank = g.choose(V, V);  // a random permutation: the rank of each token
    for (int64_t i = 0; i < V; ++i) z[i] = -zipf * 2.0 * std::log(1.0 + rank[i]) + 0.7 * g.normal();
    const double tp = g.uniform(0.7, 1.3), tq = g.uniform(0.8, 1.5);
    p.resize(V);
    q.resize(V);
    for (int64_t i = 0; i < V; ++i) {
        p[i] = std::exp(z[i] / tp);
        q[i] = std::exp((z[i] + 0.8 * g.normal()) / tq);
    }
    normalise(p);
    normalise(q);
}

// Zeros in both rows and a block of tied ratios (q = p / 2 on a quarter of the tokens), for the
// scans' tie and zero handling; renormalised.
inline void add_zeros_and_ties(Gen& g, Vec& p, Vec& q) {
    const int64_t V = static_cast<int64_t>(p.size());
    for (int64_t i : g.choose(V, V / 5)) p[i] = 0.0;
    for (int64_t i : g.choose(V, V / 10)) q[i] = 0.0;
    for (int64_t i : g.choose(V, V / 4)) q[i] = p[i] * 0.5;
    normalise(p);
    normalise(q);
}

// A row whose ratios p / q all lie within a few ulps of each other (crowded into one bucket).
inline void crowded_ratios(Gen& g, int64_t V, Vec& p, Vec& q) {
    p.resize(V);
    q.resize(V);
    for (int64_t i = 0; i < V; ++i) {
        q[i] = g.uniform(0.5, 1.5);
        p[i] = q[i] * (1.0 + 1e-15 * static_cast<double>(g.integer(0, 50)));
    }
    normalise(p);
    normalise(q);
}

// Every ordered tuple of n draws without replacement from q (tokens with q = 0 never drawn), with
// its probability prod_t q(a_t) / q(not yet drawn); the remaining mass is summed directly.
inline void wor_tuples(const Vec& q, int n, const std::function<void(const std::vector<int>&, double)>& f) {
    const int V = static_cast<int>(q.size());
    std::vector<int> t;
    std::vector<char> used(V, 0);
    std::function<void(double)> rec = [&](double pr) {
        if (static_cast<int>(t.size()) == n) {
            f(t, pr);
            return;
        }
        long double rest = 0.0L;
        for (int j = 0; j < V; ++j)
            if (!used[j]) rest += q[j];
        for (int j = 0; j < V; ++j) {
            if (used[j] || !(q[j] > 0.0)) continue;
            used[j] = 1;
            t.push_back(j);
            rec(pr * q[j] / static_cast<double>(rest));
            t.pop_back();
            used[j] = 0;
        }
    };
    rec(1.0);
}

// Every ordered tuple of n iid draws from q with positive probability.
inline void iid_tuples(const Vec& q, int n, const std::function<void(const std::vector<int>&, double)>& f) {
    const int V = static_cast<int>(q.size());
    std::vector<int> t(n, 0);
    for (;;) {
        double pr = 1.0;
        for (int k = 0; k < n; ++k) pr *= q[t[k]];
        if (pr > 0.0) f(t, pr);
        int k = n - 1;
        while (k >= 0 && ++t[k] == V) {
            t[k] = 0;
            --k;
        }
        if (k < 0) break;
    }
}

inline int64_t support(const Vec& q) {
    int64_t k = 0;
    for (double v : q) k += v > 0.0;
    return k;
}

}  // namespace cases
