// Draft sets: the LP depends on a draft tuple only through its set of distinct tokens, so ordered
// tuples are aggregated into sets with weight w_A = Pr[S(omega) = A] (docs/theory/lp.md §7.1). Tokens with
// q = 0 never appear; tokens with p = 0 are removed from every set (an edge into a zero-capacity
// token carries nothing) and sets that become equal are merged; sets that become empty are pure
// rejection mass. Weights are built from sums of positive terms only (no inclusion-exclusion).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "mdsd/core/limits.hpp"
#include "mdsd/core/parallel.hpp"
#include "mdsd/core/scheme.hpp"
#include "mdsd/bound/wor_law.hpp"

namespace mdsd {

struct DraftSets {
    std::vector<int64_t> ptr{0};    // set s holds tok[ptr[s] .. ptr[s+1]), ascending token ids
    std::vector<int32_t> tok;
    std::vector<double> w;          // Pr[S = A]
    double rejected_mass = 0.0;     // weight of sets made only of p = 0 tokens
    int64_t num_sets() const { return static_cast<int64_t>(w.size()); }
    void push(const int32_t* t, int m, double weight) {
        tok.insert(tok.end(), t, t + m);
        ptr.push_back(static_cast<int64_t>(tok.size()));
        w.push_back(weight);
    }
};

// Thrown before enumerating when the work or the output would exceed the caller's budget.
struct TooLarge : std::length_error {
    using std::length_error::length_error;
};

//: Largest n whose n! is a finite double (sets_iid).
constexpr int kIidMaxN = limits::kIidFlowMaxN;

inline double binom(int64_t k, int64_t m) {
    if (m < 0 || m > k) return 0.0;
    double r = 1.0;
    for (int64_t j = 1; j <= m; ++j) r = r * static_cast<double>(k - m + j) / static_cast<double>(j);
    return std::round(r);
}

inline void guard(double needed, double max_sets, const char* what) {
    if (needed > max_sets) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "%s: the enumeration needs %.0f draft sets, above max_sets=%.0f", what, needed,
                      max_sets);
        throw TooLarge(buf);
    }
}

// Merges sets that are equal after removing p = 0 tokens.
class SetAccumulator {
  public:
    explicit SetAccumulator(const double* p) : p_(p) {}
    void add(const int32_t* t, int m, double weight) {
        buf_.clear();
        for (int j = 0; j < m; ++j)
            if (p_[t[j]] > 0.0) buf_.push_back(t[j]);
        if (buf_.empty()) {
            out.rejected_mass += weight;
            return;
        }
        std::sort(buf_.begin(), buf_.end());
        buf_.erase(std::unique(buf_.begin(), buf_.end()), buf_.end());
        std::string key(reinterpret_cast<const char*>(buf_.data()), buf_.size() * sizeof(int32_t));
        auto it = index_.find(key);
        if (it == index_.end()) {
            index_.emplace(std::move(key), out.num_sets());
            out.push(buf_.data(), static_cast<int>(buf_.size()), weight);
        } else {
            out.w[it->second] += weight;
        }
    }
    DraftSets out;

  private:
    const double* p_;
    std::vector<int32_t> buf_;
    std::unordered_map<std::string, int64_t> index_;
};

// iid: n drafts from q. Live tokens (p > 0, q > 0) are enumerated; dead tokens (p = 0 < q) merge
// into one symbol of mass qd. For a live set A of size m,
//   w_A = sum_{j=m..n} C(n,j) qd^{n-j} j! [x^j] prod_{a in A} (e^{q_a x} - 1),
// the product built incrementally along the combination recursion.
inline DraftSets sets_iid(const double* p, const double* q, int64_t V, int n, double max_sets) {
    // The weights use j! for j <= n; 171! overflows a double (inf / inf gave NaN weights and a
    // silently wrong alpha = 0 before this check).
    if (n > kIidMaxN)
        throw std::invalid_argument(
            "n: the iid flow-LP enumeration supports n <= 170 (its set weights use n!, "
            "which overflows float64 beyond); got n = " +
            std::to_string(n) + ". optimal_acceptance(..., method='dual') handles any n");
    std::vector<int32_t> live;
    double qd = 0.0;
    for (int64_t i = 0; i < V; ++i) {
        if (q[i] <= 0.0) continue;
        if (p[i] > 0.0) live.push_back(static_cast<int32_t>(i));
        else qd += q[i];
    }
    const int64_t L = static_cast<int64_t>(live.size());
    double count = 0.0, edges = 0.0;
    for (int m = 1; m <= n; ++m) {
        count += binom(L, m);
        edges += m * binom(L, m);
    }
    guard(count, max_sets, "scheme='iid'");
    DraftSets out;
    out.rejected_mass = std::pow(qd, n);
    out.ptr.reserve(static_cast<std::size_t>(count) + 1);
    out.w.reserve(static_cast<std::size_t>(count));
    out.tok.reserve(static_cast<std::size_t>(edges));
    const int W = n + 1;
    std::vector<double> fact(W, 1.0), coef(W, 0.0);
    for (int j = 1; j <= n; ++j) fact[j] = fact[j - 1] * j;
    // coef[j] = C(n, j) qd^{n-j} j!  so that  w_A = sum_j coef[j] [x^j] poly
    for (int j = 0; j <= n; ++j) coef[j] = fact[n] / fact[n - j] * std::pow(qd, n - j);
    // term[s][r] = q_s^r / r! (r >= 1): the series of e^{q_s x} - 1, once per token
    std::vector<double> term(static_cast<std::size_t>(L) * W, 0.0);
    for (int64_t s = 0; s < L; ++s) {
        double t = 1.0;
        for (int r = 1; r <= n; ++r) {
            t *= q[live[s]] / r;
            term[s * W + r] = t;
        }
    }
    // poly[level] = prod of the series of the first `level` chosen tokens, truncated at degree n
    std::vector<double> poly(static_cast<std::size_t>(W) * W, 0.0);
    poly[0] = 1.0;
    std::vector<int32_t> chosen(n);
    std::vector<int64_t> pos(n);
    // Iterative enumeration of combinations of live tokens (ascending, so each set is sorted).
    int level = 0;
    pos[0] = 0;
    while (level >= 0) {
        poll_interrupt();  // KeyboardInterrupt (see parallel.hpp)
        if (pos[level] >= L) {
            --level;
            if (level >= 0) ++pos[level];
            continue;
        }
        const int64_t s = pos[level];
        const double* src = &poly[static_cast<std::size_t>(level) * W];
        double* dst = &poly[static_cast<std::size_t>(level + 1) * W];
        const double* ts = &term[s * W];
        for (int i = 0; i <= n; ++i) dst[i] = 0.0;
        for (int i = level; i < n; ++i) {
            const double a = src[i];
            if (a == 0.0) continue;
            for (int r = 1; i + r <= n; ++r) dst[i + r] += a * ts[r];
        }
        chosen[level] = live[s];
        const int m = level + 1;
        double wa = 0.0;
        for (int j = m; j <= n; ++j) wa += coef[j] * dst[j];
        if (wa > 0.0) out.push(chosen.data(), m, wa);
        if (m < n && s + 1 < L) {
            ++level;
            pos[level] = s + 1;
        } else {
            ++pos[level];
        }
    }
    return out;
}

// Without replacement: every n-subset A of supp q with its weight Pr[S = A] (wor_law.hpp), then
// projected onto supp p.
inline DraftSets sets_wor(const double* p, const double* q, int64_t V, int n, double max_sets) {
    std::vector<int32_t> sup;
    for (int64_t i = 0; i < V; ++i)
        if (q[i] > 0.0) sup.push_back(static_cast<int32_t>(i));
    const int64_t K = static_cast<int64_t>(sup.size());
    if (K < n) throw std::invalid_argument("n: without-replacement drafts need at least n tokens with q > 0");
    if (n > limits::kWorFlowMaxN)
        throw std::invalid_argument("n: the without-replacement LP enumeration supports n <= " +
                                    std::to_string(limits::kWorFlowMaxN));
    guard(binom(K, n), max_sets, "scheme='wor'");
    bool any_dead = false;  // without p = 0 tokens every n-subset is its own set: no merging
    for (int32_t t : sup) any_dead |= !(p[t] > 0.0);
    SetAccumulator acc(p);
    acc.out.ptr.reserve(any_dead ? 1 : static_cast<std::size_t>(binom(K, n)) + 1);
    std::vector<int32_t> toks(n);
    for_each_wor_set(q, sup, n, [&](const int32_t* comb, double w) {
        for (int j = 0; j < n; ++j) toks[j] = sup[comb[j]];
        if (any_dead) acc.add(toks.data(), n, w);
        else acc.out.push(toks.data(), n, w);  // comb is ascending, so toks is sorted
    });
    return std::move(acc.out);
}

// Greedy: T = top n-1 of q (ties: lower id), last draft x ~ q on V \ T: sets T u {x}, weight q(x)/q(V\T).
inline DraftSets sets_greedy(const double* p, const double* q, int64_t V, int n, const std::vector<int32_t>& T,
                             double max_sets) {
    std::vector<char> inT(V, 0);
    for (int32_t t : T) inT[t] = 1;
    double rest = 0.0;
    int64_t K = 0;
    for (int64_t i = 0; i < V; ++i)
        if (!inT[i] && q[i] > 0.0) {
            rest += q[i];
            ++K;
        }
    guard(static_cast<double>(K), max_sets, "scheme='greedy'");
    SetAccumulator acc(p);
    std::vector<int32_t> toks(T.begin(), T.end());
    toks.push_back(0);
    for (int64_t i = 0; i < V; ++i) {
        if (inT[i] || q[i] <= 0.0) continue;
        toks.back() = static_cast<int32_t>(i);
        acc.add(toks.data(), n, q[i] / rest);
    }
    return std::move(acc.out);
}

// Topk: the one set T = top n of q. Mixed: the split pair's sets (n - m drafts over V \ T, scheme.hpp)
// with T added to each, weights unchanged; the split pair's pure-rejection sets become T.
inline DraftSets sets_topk(const double* p, const double* q, int64_t V, int n) {
    std::vector<int32_t> T;
    top_tokens(q, V, n, T, "topk drafts");
    SetAccumulator acc(p);
    acc.add(T.data(), n, 1.0);
    return std::move(acc.out);
}

inline DraftSets sets_mixed(const double* p, const double* q, int64_t V, int n, DraftScheme ds, double max_sets) {
    if (ds.top >= n)
        throw std::invalid_argument("scheme: a mixed scheme top<m>+... needs m < n, got m = " + std::to_string(ds.top) +
                                    ", n = " + std::to_string(n));
    TopSplit sp;
    sp.build(p, q, V, ds.top, n - ds.top, ds.kind);
    const int r = n - ds.top;
    const DraftSets inner = ds.kind == Scheme::Wor ? sets_wor(sp.p.data(), sp.q.data(), V, r, max_sets)
                                                   : sets_iid(sp.p.data(), sp.q.data(), V, r, max_sets);
    SetAccumulator acc(p);
    std::vector<int32_t> toks;
    for (int64_t s = 0; s < inner.num_sets(); ++s) {
        toks.assign(sp.T.begin(), sp.T.end());
        toks.insert(toks.end(), inner.tok.begin() + inner.ptr[s], inner.tok.begin() + inner.ptr[s + 1]);
        acc.add(toks.data(), static_cast<int>(toks.size()), inner.w[s]);
    }
    if (inner.rejected_mass > 0.0) acc.add(sp.T.data(), ds.top, inner.rejected_mass);
    return std::move(acc.out);
}

// Independent drafters: slot k draws from its own q_k (row k of qs, shape n x V). Ordered tuples are
// enumerated (dead tokens of each slot merged into one symbol) and accumulated by set.
inline DraftSets sets_independent(const double* p, const double* qs, int64_t V, int n, double max_sets) {
    std::vector<std::vector<int32_t>> live(n);
    std::vector<std::vector<double>> mass(n);
    double tuples = 1.0;
    for (int k = 0; k < n; ++k) {
        const double* qk = qs + static_cast<int64_t>(k) * V;
        double dead = 0.0;
        for (int64_t i = 0; i < V; ++i) {
            if (qk[i] <= 0.0) continue;
            if (p[i] > 0.0) {
                live[k].push_back(static_cast<int32_t>(i));
                mass[k].push_back(qk[i]);
            } else dead += qk[i];
        }
        if (dead > 0.0) {
            live[k].push_back(-1);
            mass[k].push_back(dead);
        }
        tuples *= static_cast<double>(live[k].size());
    }
    guard(tuples, max_sets, "scheme='independent' (ordered tuples)");
    SetAccumulator acc(p);
    std::vector<int64_t> pos(n, 0);
    std::vector<int32_t> toks(n);
    for (;;) {
        poll_interrupt();
        double wgt = 1.0;
        int m = 0;
        for (int k = 0; k < n; ++k) {
            wgt *= mass[k][pos[k]];
            int32_t t = live[k][pos[k]];
            if (t >= 0) toks[m++] = t;
        }
        if (m == 0) acc.out.rejected_mass += wgt;
        else acc.add(toks.data(), m, wgt);
        int k = n - 1;
        while (k >= 0 && ++pos[k] == static_cast<int64_t>(live[k].size())) {
            pos[k] = 0;
            --k;
        }
        if (k < 0) break;
    }
    return std::move(acc.out);
}

// Explicit tuple law: rows of `tuples` (m x n token ids) with probabilities `probs`.
inline DraftSets sets_explicit(const double* p, const int64_t* tuples, const double* probs, int64_t m, int n, int64_t V,
                               double max_sets) {
    guard(static_cast<double>(m), max_sets, "scheme='explicit' (tuples)");
    SetAccumulator acc(p);
    std::vector<int32_t> toks(n);
    for (int64_t r = 0; r < m; ++r) {
        poll_interrupt();
        if (probs[r] <= 0.0) continue;
        for (int k = 0; k < n; ++k) {
            const int64_t t = tuples[r * n + k];
            if (t < 0 || t >= V) throw std::invalid_argument("tuples: token id out of range");
            toks[k] = static_cast<int32_t>(t);
        }
        acc.add(toks.data(), n, probs[r]);
    }
    return std::move(acc.out);
}

}  // namespace mdsd
