// Pieces shared by every verifier (docs/theory/verifiers.md §8): the samplers (samplers.hpp), the ratio
// table behind the recursive-rejection residuals, the two visitors that run a verifier either as a
// sampler or as an exact output-law calculator, and what every plan holds.
//
// Every verifier is written once, as walk(plan, tuple, visitor): a chain of tests "output token x
// with probability a (given that every earlier test failed)", ending in a residual distribution.
// SampleVisitor draws one uniform per test and stops at the first success; LawVisitor follows
// every branch and accumulates the exact conditional output law pi(. | tuple). The exact-law
// tests therefore check the very code that samples.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/core/order.hpp"
#include "mdsd/core/rng.hpp"
#include "mdsd/verifiers/samplers.hpp"

namespace mdsd::verif {

// Tokens with p > 0 ordered by p/q descending (q = 0 first, ratio +inf), with prefix sums.
// The residuals of recursive rejection sampling are all of the form D_T(x) = (p(x) - T q(x))_+
// (docs/theory/verifiers.md §8.2-8.3, see rrs.hpp); D_T is positive exactly on the prefix {p/q > T}, so its mass
// and inverse CDF cost a binary search.
struct RatioTable {
    std::vector<int32_t> order;
    std::vector<double> ratio;  // p/q along order, non-increasing
    std::vector<double> P, Q;   // P[k], Q[k]: p and q mass of the first k tokens of order

    void build(const double* p, const double* q, int64_t V) {
        OrderWorkspace ows;
        std::vector<int32_t> asc;
        build(p, q, V, ows, asc);
    }
    // As above, with the sort's buffers passed in (a thread reuses them across its rows).
    void build(const double* p, const double* q, int64_t V, OrderWorkspace& ows, std::vector<int32_t>& asc) {
        const int64_t K = ratio_order(p, q, V, ows, asc);  // supp q by ascending p/q
        order.clear();
        for (int64_t i = 0; i < V; ++i)
            if (q[i] <= 0.0 && p[i] > 0.0) order.push_back(static_cast<int32_t>(i));
        for (int64_t j = K - 1; j >= 0; --j)
            if (p[asc[j]] > 0.0) order.push_back(asc[j]);
        const std::size_t L = order.size();
        ratio.resize(L);
        P.assign(L + 1, 0.0);
        Q.assign(L + 1, 0.0);
        for (std::size_t j = 0; j < L; ++j) {
            const int32_t x = order[j];
            ratio[j] = q[x] > 0.0 ? p[x] / q[x] : std::numeric_limits<double>::infinity();
            P[j + 1] = P[j] + p[x];
            Q[j + 1] = Q[j] + q[x];
        }
    }
    // Number of tokens with p/q > T. Tokens with q = 0 (ratio +inf) count for every T, also
    // T = +inf: a subnormal rest mass 1/c_i can overflow T_{i+1} (rrs-wor).
    int64_t above(double T) const {
        auto it = std::partition_point(ratio.begin(), ratio.end(),
                                       [T](double r) { return r > T || r == std::numeric_limits<double>::infinity(); });
        return it - ratio.begin();
    }
    // D_T summed over the first k tokens of order: P[k] - T Q[k], with 0 * inf taken as 0.
    double dsum(int64_t k, double T) const { return Q[k] > 0.0 ? P[k] - T * Q[k] : P[k]; }
    // sum_x (p(x) - T q(x))_+
    double mass(double T) const {
        const int64_t k = above(T);
        return std::max(0.0, dsum(k, T));
    }
    // beta(rho) = sum_x min(q(x), p(x)/rho)  (K-SEQ, docs/theory/verifiers.md §8.4)
    double min_q_p_over(double rho) const {
        const int64_t k = above(rho);
        return Q[k] + (P.back() - P[k]) / rho;
    }
    // The token at which the running sum of D_T along order passes u * M.
    int32_t pick(double T, double M, double u) const {
        const int64_t k = above(T);
        const double t = u * M;
        int64_t lo = 1, hi = k;  // smallest j in [1, k] with P[j] - T Q[j] > t
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (dsum(mid, T) > t) hi = mid;
            else lo = mid + 1;
        }
        return order[lo - 1];
    }
};

// The residual norm(D_T) with D_T = (p - T q)_+ and mass M (see RatioTable).
struct ThresholdResidual {
    const RatioTable& tab;
    const double* p;
    const double* q;
    double T, M;
    bool empty() const { return !(M > 0.0) || tab.above(T) == 0; }
    int32_t sample(Rng& r) const { return empty() ? -1 : tab.pick(T, M, r.uniform()); }
    void add_law(double mass, double* out) const {
        const int64_t k = tab.above(T);
        const double inv = mass / M;
        const bool tiny = !(inv <= std::numeric_limits<double>::max());  // subnormal M: divide first
        for (int64_t j = 0; j < k; ++j) {
            const int32_t x = tab.order[j];
            const double d = q[x] > 0.0 ? std::max(0.0, p[x] - T * q[x]) : p[x];
            out[x] += tiny ? (d / M) * mass : d * inv;
        }
    }
};

// Runs a verifier as a sampler. `fallback` (the target p) is used when the chain reaches a
// residual of zero mass, which has probability 0 in exact arithmetic; with `naive` set, every
// rejection resamples from p instead of the residual: the classic bug, kept for power tests.
struct SampleVisitor {
    Rng& rng;
    const Categorical& fallback;
    bool naive = false;
    int32_t out = -1;
    bool test(int32_t tok, double prob) {
        if (rng.uniform() < prob) {
            out = tok;
            return true;
        }
        return false;
    }
    template <class R>
    void residual(const R& res) {
        out = naive ? -1 : res.sample(rng);
        if (out < 0) out = fallback.sample(rng);
    }
};

// Runs a verifier as an exact calculator of its output law given the tuple: law[y] += Pr[y | tuple].
struct LawVisitor {
    double* law;
    const Categorical& fallback;
    bool naive = false;  // as in SampleVisitor: the residual replaced by p
    double mass = 1.0;   // probability that every test so far failed
    bool test(int32_t tok, double prob) {
        prob = clamp01(prob);
        law[tok] += mass * prob;
        mass *= 1.0 - prob;
        return !(mass > 0.0);
    }
    template <class R>
    void residual(const R& res) {
        if (!(mass > 0.0)) return;
        if (naive || res.empty()) fallback.add_law(mass, law);
        else res.add_law(mass, law);
    }
};

// What every verifier plan holds: its own copy of p and q, the target as a fallback sampler,
// and the draft sampler of its scheme. The two samplers cost O(V) each and an exact acceptance
// needs neither, so they are built on first use (once, whichever thread asks first).
struct PlanBase {
    std::vector<double> p, q;
    int64_t V = 0;
    int n = 1;
    Drafter drafter;  // its alias table: after samplers()
    void init(const double* pp, const double* qq, int64_t v, int nd, const Drafter::Spec& kind) {
        V = v;
        n = nd;
        p.assign(pp, pp + V);
        q.assign(qq, qq + V);
        drafter.build(kind, q.data(), V, n);
    }
    // The target as a fallback sampler, with the draft sampler built too.
    const Categorical& samplers() const {
        std::call_once(lazy_->once, [&] {
            lazy_->pcat.build(p.data(), V);
            drafter.alias.build(q.data(), V);
        });
        return lazy_->pcat;
    }

  private:
    struct Lazy {
        std::once_flag once;
        Categorical pcat;
    };
    std::shared_ptr<Lazy> lazy_ = std::make_shared<Lazy>();
};

}  // namespace mdsd::verif
