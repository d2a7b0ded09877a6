// The samplers every verifier shares (docs/theory/verifiers.md §8): fixed distributions (inverse CDF, alias
// tables), the draw excluding earlier drafts, and the draft sampler of each scheme (Drafter), with
// the check that a user's tuple could come from it.
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

#include "mdsd/bound/dual.hpp"
#include "mdsd/core/order.hpp"
#include "mdsd/core/rng.hpp"

namespace mdsd::verif {

inline double clamp01(double x) { return x > 0.0 ? (x < 1.0 ? x : 1.0) : 0.0; }

// A fixed distribution over its positive entries, sampled by inverse CDF (binary search).
// total() may be 0: the distribution is then empty and sample() returns -1.
struct Categorical {
    std::vector<int32_t> tok;
    std::vector<double> cdf;  // inclusive running sums of the weights of tok
    void build(const double* w, int64_t V) {
        tok.clear();
        cdf.clear();
        double s = 0.0;
        for (int64_t i = 0; i < V; ++i)
            if (w[i] > 0.0) {
                s += w[i];
                tok.push_back(static_cast<int32_t>(i));
                cdf.push_back(s);
            }
    }
    double total() const { return cdf.empty() ? 0.0 : cdf.back(); }
    bool empty() const { return !(total() > 0.0); }
    int32_t pick(double u) const {
        const double t = u * cdf.back();
        auto it = std::upper_bound(cdf.begin(), cdf.end(), t);
        if (it == cdf.end()) --it;  // u * total rounded up to total
        return tok[it - cdf.begin()];
    }
    int32_t sample(Rng& r) const { return empty() ? -1 : pick(r.uniform()); }
    double weight(std::size_t j) const { return j == 0 ? cdf[0] : cdf[j] - cdf[j - 1]; }
    void add_law(double mass, double* out) const {
        const double tot = total();
        const double inv = mass / tot;
        if (inv <= std::numeric_limits<double>::max()) {
            for (std::size_t j = 0; j < tok.size(); ++j) out[tok[j]] += weight(j) * inv;
        } else {  // subnormal total: 1/total overflows (inf * 0 = NaN); weight/total <= 1 does not
            for (std::size_t j = 0; j < tok.size(); ++j) out[tok[j]] += (weight(j) / tot) * mass;
        }
    }
};

// Walker/Vose alias table: O(1) draws from q, for the draft samplers.
struct Alias {
    std::vector<double> prob;
    std::vector<int32_t> alias;
    std::vector<double> cdf;  // inclusive prefix sums of w: the exact route of draw_excluding
    int64_t V = 0;
    void build(const double* w, int64_t n) {
        V = n;
        cdf.resize(n);
        double c = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            c += w[i] > 0.0 ? w[i] : 0.0;
            cdf[i] = c;
        }
        prob.assign(n, 0.0);
        alias.assign(n, 0);
        double s = 0.0;
        int32_t some_positive = 0;
        for (int64_t i = 0; i < n; ++i)
            if (w[i] > 0.0) {
                s += w[i];
                some_positive = static_cast<int32_t>(i);
            }
        std::vector<double> sc(n);
        std::vector<int32_t> small, large;
        for (int64_t i = 0; i < n; ++i) {
            sc[i] = w[i] * static_cast<double>(n) / s;
            (sc[i] < 1.0 ? small : large).push_back(static_cast<int32_t>(i));
        }
        while (!small.empty() && !large.empty()) {
            const int32_t l = small.back(), g = large.back();
            small.pop_back();
            prob[l] = sc[l];
            alias[l] = g;
            sc[g] = (sc[g] + sc[l]) - 1.0;
            if (sc[g] < 1.0) {
                large.pop_back();
                small.push_back(g);
            }
        }
        // Leftovers hold scaled mass 1 up to rounding; a zero-weight token must never come out.
        for (int32_t i : large) {
            prob[i] = 1.0;
            alias[i] = i;
        }
        for (int32_t i : small) {
            prob[i] = w[i] > 0.0 ? 1.0 : 0.0;
            alias[i] = w[i] > 0.0 ? i : some_positive;
        }
    }
    int32_t sample(Rng& r) const {
        const int64_t i = static_cast<int64_t>(r.below(static_cast<uint64_t>(V)));
        return r.uniform() < prob[i] ? static_cast<int32_t>(i) : alias[i];
    }
};

inline bool contains(const int32_t* t, int m, int32_t x) {
    for (int j = 0; j < m; ++j)
        if (t[j] == x) return true;
    return false;
}

// One draw from q restricted to V \ ex (m distinct excluded tokens, any m) and renormalised:
// rejection from the alias table, and after kTries misses an inverse-CDF draw on the prefix sums
// that skips the excluded tokens (O(m log m + log V); a linear scan only if rounding lands on an
// excluded token). The mixture of the routes is exactly the restricted law, since every accepted
// rejection draw already follows it. Both routes test against all m exclusions: the sorted copy
// lives on the stack up to kStackEx tokens and on the heap beyond (no limit on m).
inline int32_t draw_excluding(const Alias& a, const double* q, int64_t V, const int32_t* ex, int m, Rng& r) {
    constexpr int kTries = 4;
    for (int k = 0; k < kTries; ++k) {
        const int32_t x = a.sample(r);
        if (!contains(ex, m, x)) return x;
    }
    constexpr int kStackEx = 64;
    int32_t stack_ex[kStackEx];
    std::vector<int32_t> heap_ex;
    int32_t* sorted_ex = stack_ex;
    if (m > kStackEx) {
        heap_ex.resize(static_cast<std::size_t>(m));
        sorted_ex = heap_ex.data();
    }
    std::copy(ex, ex + m, sorted_ex);
    std::sort(sorted_ex, sorted_ex + m);
    const int mm = static_cast<int>(std::unique(sorted_ex, sorted_ex + m) - sorted_ex);  // a repeat counts once
    auto excluded_tok = [&](int32_t x) { return std::binary_search(sorted_ex, sorted_ex + mm, x); };
    double excluded = 0.0;
    for (int j = 0; j < mm; ++j) excluded += q[sorted_ex[j]];
    // The remaining mass as a difference of prefix sums: its relative rounding error is about
    // 1e-16 / rest, far below anything a sample can resolve.
    const double rest = a.cdf[V - 1] - excluded;
    const double u = r.uniform() * rest;
    // Shift u to the unrestricted scale: add the mass of every excluded token before the crossing.
    double t = u, skipped = 0.0;
    for (int j = 0; j < mm; ++j) {
        const int32_t e = sorted_ex[j];
        const double before = a.cdf[e] - q[e] - skipped;  // restricted CDF just before e
        if (u < before) break;
        t += q[e];
        skipped += q[e];
    }
    const int64_t i = std::upper_bound(a.cdf.begin(), a.cdf.end(), t) - a.cdf.begin();
    if (i < V && q[i] > 0.0 && !excluded_tok(static_cast<int32_t>(i))) return static_cast<int32_t>(i);
    double s = 0.0;  // rounding at a boundary: the exact linear scan
    int32_t last = -1;
    for (int64_t k = 0; k < V; ++k) {
        if (q[k] <= 0.0 || excluded_tok(static_cast<int32_t>(k))) continue;
        s += q[k];
        last = static_cast<int32_t>(k);
        if (s > u) return last;
    }
    return last;
}

// The draft sampler of a scheme (docs/theory/notation.md §1), and the check that a user's tuple could come from it.
struct Drafter {
    enum Kind { Iid, Wor, Greedy, Hub, Topk, Mixed };
    // A scheme: its kind and, for Mixed, the law of the random part (Iid or Wor) and the number m of
    // deterministic top tokens (scheme.hpp).
    struct Spec {
        Kind kind = Iid;
        Kind rest = Iid;
        int m = 0;
        Spec(Kind k = Iid) : kind(k) {}  // NOLINT: a Kind is a Spec
        Spec(Kind k, Kind r, int top) : kind(k), rest(r), m(top) {}
    };
    Kind kind = Iid;
    Kind rest = Iid;  // Mixed: the law of drafts m .. n-1
    int m = 0;        // Mixed: the number of deterministic drafts
    int n = 1;
    int64_t V = 0;
    mutable Alias alias;       // built once by PlanBase::samplers()
    std::vector<int32_t> top;  // greedy: the top n-1 of q; topk: top n; mixed: top m (sorted ids); hub: {argmax q}

    static std::string scheme_name(const Spec& s) {
        switch (s.kind) {
            case Iid: return "iid";
            case Wor: return "wor";
            case Greedy: return "greedy";
            case Topk: return "topk";
            case Mixed: return "top" + std::to_string(s.m) + (s.rest == Wor ? "+wor" : "+iid");
            default: return "spechub";
        }
    }

    // The checks and the deterministic tokens; the alias table is built by build_sampler().
    void build(const Spec& sp, const double* q, int64_t v, int nd) {
        kind = sp.kind;
        rest = sp.rest;
        m = sp.m;
        n = nd;
        V = v;
        const Kind k = kind;
        int64_t support = 0;
        for (int64_t i = 0; i < V; ++i) support += q[i] > 0.0;
        const bool distinct = k == Wor || k == Greedy || k == Topk || (k == Mixed && rest == Wor);
        if (distinct && support < n)
            throw std::invalid_argument("n: scheme '" + scheme_name(sp) + "' draws " + std::to_string(n) +
                                        " distinct tokens but q has only " + std::to_string(support) +
                                        " tokens with positive probability");
        if (k == Greedy) greedy_top(q, V, n, top);
        if (k == Topk) top_tokens(q, V, n, top, "topk drafts");
        if (k == Mixed) {
            if (m < 1 || m >= n)
                throw std::invalid_argument("scheme: a mixed scheme top<m>+... needs 1 <= m < n, got m = " +
                                            std::to_string(m) + ", n = " + std::to_string(n));
            if (support <= m)
                throw std::invalid_argument("n: scheme '" + scheme_name(sp) + "' needs more than " + std::to_string(m) +
                                            " tokens with q > 0");
            top_tokens(q, V, m, top, "mixed drafts");
        }
        if (k == Hub) {
            if (n != 2) throw std::invalid_argument("n: SpecHub drafts exactly 2 tokens, got n = " + std::to_string(n));
            if (support < 2) throw std::invalid_argument("n: SpecHub needs at least 2 tokens with q > 0");
            greedy_top(q, V, 2, top);  // the hub: argmax q, lowest id on ties
        }
    }

    void draw(const double* q, Rng& r, int32_t* out) const {
        switch (kind) {
            case Iid:
                for (int k = 0; k < n; ++k) out[k] = alias.sample(r);
                return;
            case Wor:
                for (int k = 0; k < n; ++k) out[k] = draw_excluding(alias, q, V, out, k, r);
                return;
            case Greedy:
                for (int k = 0; k < n - 1; ++k) out[k] = top[k];
                out[n - 1] = draw_excluding(alias, q, V, top.data(), n - 1, r);
                return;
            case Topk:
                for (int k = 0; k < n; ++k) out[k] = top[k];
                return;
            case Mixed:
                for (int k = 0; k < m; ++k) out[k] = top[k];
                for (int k = m; k < n; ++k) out[k] = draw_excluding(alias, q, V, out, rest == Wor ? k : m, r);
                return;
            case Hub: {
                const int32_t a = top[0];
                const int32_t x = alias.sample(r);
                if (x != a) {
                    out[0] = x;
                    out[1] = a;
                } else {
                    out[0] = a;
                    out[1] = draw_excluding(alias, q, V, &a, 1, r);
                }
                return;
            }
        }
    }

    // Throws std::invalid_argument unless the tuple has positive probability under the scheme.
    void check(const double* q, const int32_t* t) const {
        auto show = [&]() {
            std::string s = "(";
            for (int k = 0; k < n; ++k) s += (k ? ", " : "") + std::to_string(t[k]);
            return s + ")";
        };
        auto show_top = [&]() {
            std::string T = "{";
            for (std::size_t j = 0; j < top.size(); ++j) T += (j ? ", " : "") + std::to_string(top[j]);
            return T + "}";
        };
        for (int k = 0; k < n; ++k) {
            if (t[k] < 0 || t[k] >= V)
                throw std::invalid_argument("drafts: token id " + std::to_string(t[k]) + " outside [0, " +
                                            std::to_string(V) + ")");
            if (!(q[t[k]] > 0.0))
                throw std::invalid_argument("drafts: token " + std::to_string(t[k]) +
                                            " has q = 0, so it cannot have been drafted from q");
        }
        if (kind == Wor || kind == Topk || (kind == Mixed && rest == Wor))
            for (int k = 1; k < n; ++k)
                if (contains(t, k, t[k]))
                    throw std::invalid_argument(
                        "drafts: token " + std::to_string(t[k]) + " appears twice in " + show() + "; " +
                        (kind == Wor ? "without-replacement" : scheme_name(Spec(kind, rest, m))) +
                        " drafts are distinct");
        if (kind == Greedy || kind == Topk || kind == Mixed) {
            const int nt = static_cast<int>(top.size());
            int outside = 0, in_top = 0;
            for (int k = 0; k < n; ++k) {
                const bool in = contains(top.data(), nt, t[k]);
                outside += !in;
                in_top += in && !contains(t, k, t[k]);  // each top token once
            }
            if (outside != n - nt || in_top != nt)
                throw std::invalid_argument(
                    "drafts: " + scheme_name(Spec(kind, rest, m)) + " drafts are the top " +
                    (kind == Greedy ? std::string("n-1")
                     : kind == Topk ? std::string("n")
                                    : std::to_string(m)) +
                    " tokens of q " + show_top() +
                    (nt == n ? std::string() : " plus " + std::to_string(n - nt) + " other token(s)") + ", got " +
                    show());
        }
        if (kind == Hub) {
            const int32_t a = top[0];
            if ((t[0] == a) == (t[1] == a))
                throw std::invalid_argument("drafts: a SpecHub pair holds the hub token " + std::to_string(a) +
                                            " (argmax q) and one other token, got " + show());
        }
    }
};

}  // namespace mdsd::verif
