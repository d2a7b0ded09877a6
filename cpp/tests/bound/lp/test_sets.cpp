// Draft-set enumeration (sets.hpp): every scheme's DraftSets against the law of the projected
// set S ∩ supp p computed by brute force over ordered draft tuples -- the same sets (sorted token
// ids, no duplicates), weights equal to Pr[S = A], the rejected mass, total mass 1 -- and the
// guards: TooLarge is thrown before any enumeration above max_sets, invalid n is refused.
#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "mdsd/bound/dual.hpp"
#include "mdsd/bound/lp/sets.hpp"

using cases::Gen;
using cases::Vec;
using Law = std::map<std::vector<int32_t>, long double>;

// Projects a tuple onto supp p (sorted, distinct); empty -> rejected.
static std::vector<int32_t> project(const std::vector<int>& t, const Vec& p) {
    std::vector<int32_t> s;
    for (int y : t)
        if (p[y] > 0.0) s.push_back(y);
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    return s;
}

static void compare(const mdsd::DraftSets& got, const Law& want, long double want_rej, const char* what) {
    CHECK_EQ(got.ptr.size(), got.w.size() + 1);
    CHECK_EQ(got.ptr.back(), static_cast<int64_t>(got.tok.size()));
    long double total = got.rejected_mass;
    std::map<std::vector<int32_t>, double> g;
    bool sorted = true, dup = false;
    for (int64_t s = 0; s < got.num_sets(); ++s) {
        std::vector<int32_t> a(got.tok.begin() + got.ptr[s], got.tok.begin() + got.ptr[s + 1]);
        for (std::size_t j = 1; j < a.size(); ++j) sorted &= a[j - 1] < a[j];
        dup |= g.count(a) > 0;
        g[a] += got.w[s];
        total += got.w[s];
    }
    CHECK_MSG(sorted, "%s: a set's tokens are not strictly ascending", what);
    CHECK_MSG(!dup, "%s: a set occurs twice", what);
    CHECK_NEAR(static_cast<double>(total), 1.0, 1e-13);
    CHECK_NEAR(got.rejected_mass, static_cast<double>(want_rej), 1e-14);
    // every set with positive brute-force weight is there with that weight, and nothing else
    std::size_t missing = 0, extra = 0;
    double worst = 0.0;
    for (const auto& [a, w] : want) {
        auto it = g.find(a);
        if (it == g.end()) {
            if (w > 0.0L) ++missing;
            continue;
        }
        const double err = std::fabs(it->second - static_cast<double>(w)) / static_cast<double>(w);
        worst = std::max(worst, err);
    }
    for (const auto& [a, w] : g)
        if (!want.count(a)) ++extra;
    CHECK_MSG(missing == 0 && extra == 0, "%s: %zu sets missing, %zu unexpected", what, missing, extra);
    CHECK_MSG(worst <= 1e-12, "%s: worst relative weight error %.3g", what, worst);
}

static void test_wor(Gen& g) {
    for (int it = 0; it < 200; ++it) {
        const int V = static_cast<int>(g.integer(2, 9));
        Vec p, q;
        cases::random_case(g, V, p, q);
        if (it % 6 == 0) {  // nearly all of q on one token: the rest masses 1 - q(comb) cancel
            for (auto& v : q) v = std::pow(v, 8.0);
            cases::normalise(q);
        }
        const int64_t K = cases::support(q);
        const int n = static_cast<int>(g.integer(1, std::min<int64_t>(5, K)));
        check::context("wor case %d: V = %d, K = %lld, n = %d", it, V, static_cast<long long>(K), n);
        Law want;
        long double rej = 0.0L;
        cases::wor_tuples(q, n, [&](const std::vector<int>& t, double pr) {
            const auto a = project(t, p);
            if (a.empty()) rej += pr;
            else want[a] += pr;
        });
        compare(mdsd::sets_wor(p.data(), q.data(), V, n, 1e9), want, rej, "sets_wor");
    }
}

static void test_iid(Gen& g) {
    for (int it = 0; it < 200; ++it) {
        const int V = static_cast<int>(g.integer(1, 7));
        Vec p, q;
        if (V < 3) {
            p = g.dirichlet(V, 1.0);
            q = g.dirichlet(V, 1.0);
        } else cases::random_case(g, V, p, q);
        const int n = static_cast<int>(g.integer(1, 5));
        check::context("iid case %d: V = %d, n = %d", it, V, n);
        Law want;
        long double rej = 0.0L;
        cases::iid_tuples(q, n, [&](const std::vector<int>& t, double pr) {
            const auto a = project(t, p);
            if (a.empty()) rej += pr;
            else want[a] += pr;
        });
        compare(mdsd::sets_iid(p.data(), q.data(), V, n, 1e9), want, rej, "sets_iid");
    }
}

static void test_greedy(Gen& g) {
    for (int it = 0; it < 100; ++it) {
        const int V = static_cast<int>(g.integer(2, 9));
        Vec p, q;
        cases::random_case(g, V, p, q);
        const int64_t K = cases::support(q);
        const int n = static_cast<int>(g.integer(1, std::min<int64_t>(5, K)));
        check::context("greedy case %d: V = %d, n = %d", it, V, n);
        std::vector<int32_t> T;
        mdsd::greedy_top(q.data(), V, n, T);
        // T: the n - 1 largest q (ties: lower id), by a full sort
        std::vector<int> idx;
        for (int i = 0; i < V; ++i)
            if (q[i] > 0.0) idx.push_back(i);
        std::sort(idx.begin(), idx.end(), [&](int a, int b) { return q[a] > q[b] || (q[a] == q[b] && a < b); });
        std::vector<int32_t> Tw(idx.begin(), idx.begin() + (n - 1));
        std::sort(Tw.begin(), Tw.end());
        CHECK(T == Tw);
        long double rest = 0.0L;
        for (int i = 0; i < V; ++i)
            if (!std::count(Tw.begin(), Tw.end(), i)) rest += q[i];
        Law want;
        long double rej = 0.0L;
        for (int x = 0; x < V; ++x) {
            if (!(q[x] > 0.0) || std::count(Tw.begin(), Tw.end(), x)) continue;
            std::vector<int> t(Tw.begin(), Tw.end());
            t.push_back(x);
            const auto a = project(t, p);
            const long double pr = q[x] / rest;
            if (a.empty()) rej += pr;
            else want[a] += pr;
        }
        compare(mdsd::sets_greedy(p.data(), q.data(), V, n, T, 1e9), want, rej, "sets_greedy");
    }
}

static void test_independent_and_explicit(Gen& g) {
    for (int it = 0; it < 100; ++it) {
        const int V = static_cast<int>(g.integer(2, 7));
        const int n = static_cast<int>(g.integer(1, 4));
        Vec p, q0;
        cases::random_case(g, V, p, q0);
        Vec qs;
        std::vector<Vec> rows;
        for (int k = 0; k < n; ++k) {
            Vec pk, qk;
            cases::random_case(g, V, pk, qk);
            rows.push_back(qk);
            qs.insert(qs.end(), qk.begin(), qk.end());
        }
        check::context("independent case %d: V = %d, n = %d", it, V, n);
        Law want;
        long double rej = 0.0L;
        std::vector<int> t(n, 0);
        std::vector<int64_t> tuples;
        std::vector<double> probs;
        for (;;) {
            long double pr = 1.0L;
            for (int k = 0; k < n; ++k) pr *= rows[k][t[k]];
            if (pr > 0.0L) {
                const auto a = project(t, p);
                if (a.empty()) rej += pr;
                else want[a] += pr;
                tuples.insert(tuples.end(), t.begin(), t.end());
                probs.push_back(static_cast<double>(pr));
            }
            int k = n - 1;
            while (k >= 0 && ++t[k] == V) {
                t[k] = 0;
                --k;
            }
            if (k < 0) break;
        }
        compare(mdsd::sets_independent(p.data(), qs.data(), V, n, 1e9), want, rej, "sets_independent");
        const int64_t m = static_cast<int64_t>(probs.size());
        compare(mdsd::sets_explicit(p.data(), tuples.data(), probs.data(), m, n, V, 1e9), want, rej, "sets_explicit");
        if (m > 0) {
            std::vector<int64_t> bad = tuples;
            bad[0] = V;
            CHECK_THROWS(mdsd::sets_explicit(p.data(), bad.data(), probs.data(), m, n, V, 1e9), std::invalid_argument);
        }
    }
}

// TooLarge before any enumeration: cases whose enumeration would take hours must throw at once.
static void test_guards() {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const int64_t V = 200;
    Vec p(V, 1.0 / V), q(V, 1.0 / V);
    // wor: C(200, 10) ~ 2e16 sets
    CHECK_THROWS(mdsd::sets_wor(p.data(), q.data(), V, 10, 1e6), mdsd::TooLarge);
    // iid: sum_m C(200, m), m <= 8 ~ 5.5e13 sets
    CHECK_THROWS(mdsd::sets_iid(p.data(), q.data(), V, 8, 1e6), mdsd::TooLarge);
    // independent: 200^6 ordered tuples
    Vec qs;
    for (int k = 0; k < 6; ++k) qs.insert(qs.end(), q.begin(), q.end());
    CHECK_THROWS(mdsd::sets_independent(p.data(), qs.data(), V, 6, 1e6), mdsd::TooLarge);
    // greedy: the V - (n - 1) candidate last drafts
    std::vector<int32_t> T;
    mdsd::greedy_top(q.data(), V, 3, T);
    CHECK_THROWS(mdsd::sets_greedy(p.data(), q.data(), V, 3, T, 100), mdsd::TooLarge);
    std::vector<int64_t> tup(2 * 50, 0);
    Vec pr(50, 0.02);
    CHECK_THROWS(mdsd::sets_explicit(p.data(), tup.data(), pr.data(), 50, 2, V, 49), mdsd::TooLarge);
    const double secs = std::chrono::duration<double>(clock::now() - t0).count();
    CHECK_MSG(secs < 1.0, "the guards took %.2f s: the enumeration started before the check", secs);

    // the boundary: needed == max_sets is allowed, one less is refused
    Vec p10(10, 0.1), q10(10, 0.1);
    CHECK_EQ(mdsd::sets_wor(p10.data(), q10.data(), 10, 3, 120).num_sets(), 120);  // C(10, 3)
    CHECK_THROWS(mdsd::sets_wor(p10.data(), q10.data(), 10, 3, 119), mdsd::TooLarge);
    CHECK_EQ(mdsd::sets_iid(p10.data(), q10.data(), 10, 2, 55).num_sets(), 55);  // 10 + 45
    CHECK_THROWS(mdsd::sets_iid(p10.data(), q10.data(), 10, 2, 54), mdsd::TooLarge);
    // TooLarge is a std::length_error (the bindings map it to TooLargeError)
    CHECK_THROWS(mdsd::sets_wor(p10.data(), q10.data(), 10, 3, 1), std::length_error);

    // invalid n
    CHECK_THROWS(mdsd::sets_iid(p10.data(), q10.data(), 10, mdsd::kIidMaxN + 1, 1e300), std::invalid_argument);
    CHECK_THROWS(mdsd::sets_wor(p10.data(), q10.data(), 10, 11, 1e300), std::invalid_argument);
    Vec p30(30, 1.0 / 30), q30(30, 1.0 / 30);
    CHECK_THROWS(mdsd::sets_wor(p30.data(), q30.data(), 30, 21, 1e300), std::invalid_argument);
}

int main() {
    Gen g(777);
    test_wor(g);
    test_iid(g);
    test_greedy(g);
    test_independent_and_explicit(g);
    test_guards();
    return check::summary("test_sets");
}
