// The dual kernels (dual.hpp, wor.hpp): alpha* = 1 + min_H [p(H) - Pr(all n drafts in H)].
//   * iid: dual_prefix / dual_alpha against the minimum over ALL subsets H (V <= 10, n = 1..5);
//   * wor: the same, Pr(all n drafts in H) from enumerated ordered without-replacement tuples,
//     for every evaluator (auto, exact n <= 3, the race integral), and each evaluator's Q on every
//     prefix of the ratio order against the enumeration;
//   * wor on LLM-like rows (V = 200 .. 2000): the exact evaluators (n = 2, 3) and the race integral
//     agree within 1e-12, on alpha* and on Q of every prefix;
//   * wor extremes: one token holding all of q but a subnormal (or 1e-200) rest -- the exact
//     n = 2 evaluator's overflow path, the n = 3 refusal, the race's scaled time unit;
//   * the scan's pruning: dual_prefix equals the minimum over every prefix (LLM-like rows, n <= 6),
//     and the chord scan the scan of every prefix the i.i.d. bound leaves (n = 3, 4, 8);
//   * greedy: against the minimum over all H (small V) and an independent closed form (large V);
//   * every certificate H attains alpha*.
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "mdsd/bound/dual.hpp"

using cases::Gen;
using cases::Vec;
using mdsd::Scheme;
using mdsd::WorMethod;

constexpr double kTol = 1e-12;

static const char* method_name(WorMethod m) {
    return m == WorMethod::Auto ? "auto" : m == WorMethod::Exact ? "exact" : "integral";
}

// p(H) over every mask H of V tokens.
static std::vector<long double> mask_sums(const Vec& x) {
    const int V = static_cast<int>(x.size());
    std::vector<long double> s(std::size_t(1) << V, 0.0L);
    for (uint32_t m = 1; m < s.size(); ++m) s[m] = s[m & (m - 1)] + x[__builtin_ctz(m)];
    return s;
}

// Q_wor(H) = Pr(all n without-replacement drafts in H) for every mask H: the law of the drawn set
// from the enumerated ordered tuples, then summed over subsets (zeta transform).
static std::vector<long double> wor_Q(const Vec& q, int n) {
    const int V = static_cast<int>(q.size());
    std::vector<long double> Q(std::size_t(1) << V, 0.0L);
    cases::wor_tuples(q, n, [&](const std::vector<int>& t, double pr) {
        uint32_t m = 0;
        for (int y : t) m |= 1u << y;
        Q[m] += pr;
    });
    for (int b = 0; b < V; ++b)
        for (uint32_t m = 0; m < Q.size(); ++m)
            if (m & (1u << b)) Q[m] += Q[m ^ (1u << b)];
    return Q;
}

static uint32_t mask_of(const std::vector<int64_t>& H) {
    uint32_t m = 0;
    for (int64_t y : H) m |= 1u << y;
    return m;
}

static void test_iid_bruteforce(Gen& g) {
    int cases_run = 0;
    for (int it = 0; it < 400; ++it) {
        const int V = static_cast<int>(g.integer(1, 10));
        Vec p, q;
        if (V < 3) {
            p = g.dirichlet(V, 1.0);
            q = g.dirichlet(V, 1.0);
        } else cases::random_case(g, V, p, q);
        const int n = static_cast<int>(g.integer(1, 5));
        check::context("iid case %d: V = %d, n = %d", it, V, n);
        const auto P = mask_sums(p), S = mask_sums(q);
        long double best = 0.0L;
        for (uint32_t m = 0; m < P.size(); ++m)
            best = std::min(best, P[m] - std::pow(S[m], static_cast<long double>(n)));
        const double want = static_cast<double>(1.0L + best);
        mdsd::DualWorkspace ws;
        std::vector<int64_t> cert;
        const double got = mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Iid, WorMethod::Auto, ws, &cert);
        CHECK_NEAR(got, want, kTol);
        // the certificate attains the value
        const uint32_t h = mask_of(cert);
        CHECK_NEAR(static_cast<double>(1.0L + P[h] - std::pow(S[h], static_cast<long double>(n))), got, kTol);
        CHECK(std::is_sorted(cert.begin(), cert.end()));
        for (int64_t y : cert) CHECK_MSG(q[y] > 0.0, "certificate token %lld has q = 0", static_cast<long long>(y));
        ++cases_run;
    }
    CHECK(cases_run == 400);
}

static void test_wor_bruteforce(Gen& g) {
    int cases_run = 0;
    for (int it = 0; it < 300; ++it) {
        const int V = static_cast<int>(g.integer(2, 9));
        Vec p, q;
        cases::random_case(g, V, p, q);
        if (it % 7 == 0) {  // skewed: one token holding nearly all of q
            for (auto& v : q) v = std::pow(v, 6.0);
            cases::normalise(q);
        }
        const int64_t K = cases::support(q);
        const int n = static_cast<int>(g.integer(1, std::min<int64_t>(5, std::max<int64_t>(1, K))));
        check::context("wor case %d: V = %d, K = %lld, n = %d", it, V, static_cast<long long>(K), n);
        const auto P = mask_sums(p);
        const auto Q = wor_Q(q, n);
        long double best = 0.0L;
        for (uint32_t m = 0; m < P.size(); ++m) best = std::min(best, P[m] - Q[m]);
        const double want = static_cast<double>(1.0L + best);
        for (WorMethod wm : {WorMethod::Auto, WorMethod::Exact, WorMethod::Integral}) {
            check::context("wor case %d: V = %d, K = %lld, n = %d, %s", it, V, static_cast<long long>(K), n,
                           method_name(wm));
            mdsd::DualWorkspace ws;
            std::vector<int64_t> cert;
            if (wm == WorMethod::Exact && n > 3) {
                CHECK_THROWS(mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Wor, wm, ws, &cert),
                             std::invalid_argument);
                continue;
            }
            const double got = mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Wor, wm, ws, &cert);
            CHECK_NEAR(got, want, kTol);
            const uint32_t h = mask_of(cert);
            CHECK_NEAR(static_cast<double>(1.0L + P[h] - Q[h]), got, kTol);
        }
        ++cases_run;
    }
    CHECK(cases_run == 300);
    // fewer than n tokens with q > 0
    Vec p = {0.5, 0.5, 0.0}, q = {0.6, 0.4, 0.0};
    mdsd::DualWorkspace ws;
    CHECK_THROWS(mdsd::dual_alpha(p.data(), q.data(), 3, 3, Scheme::Wor, WorMethod::Auto, ws, nullptr),
                 std::invalid_argument);
    CHECK_THROWS(mdsd::dual_alpha(p.data(), q.data(), 3, 0, Scheme::Iid, WorMethod::Auto, ws, nullptr),
                 std::invalid_argument);
}

// Q on every prefix of the ratio order, by each evaluator, as dual_prefix drives them.
struct PrefixQ {
    std::vector<int32_t> order;
    std::vector<double> lam, rest;
    std::vector<double> e2, e3, race;  // Q of prefix k+1 (size K); NaN where not evaluated
};
static PrefixQ prefix_q(const Vec& p, const Vec& q, int n) {
    PrefixQ r;
    mdsd::OrderWorkspace ows;
    const int64_t K = mdsd::ratio_order(p.data(), q.data(), static_cast<int64_t>(q.size()), ows, r.order);
    const int32_t* ord = r.order.data();
    r.lam.assign(K + 1, 0.0);
    for (int64_t k = K - 1; k >= 0; --k) r.lam[k] = r.lam[k + 1] + q[ord[k]];
    mdsd::rest_masses(q.data(), ord, K, r.rest);
    const double nan = std::nan("");
    r.e2.assign(K, nan);
    r.e3.assign(K, nan);
    r.race.assign(K, nan);
    mdsd::WorExact2 ex2;
    mdsd::WorExact3 ex3;
    ex3.reset(K);
    ex3.find_close(q.data(), ord, K);
    mdsd::WorRace race;
    race.reset(n, r.lam[std::max<int64_t>(1, K - 1)]);
    double S = 0.0;
    for (int64_t k = 0; k < K; ++k) {
        const double qi = q[ord[k]];
        S += qi;
        if (n == 2) ex2.add(qi, r.rest[k]);
        if (n == 3) ex3.add(qi, r.rest[k], k);
        race.add(qi);
        const int64_t kk = k + 1;
        if (kk < n || kk == K) continue;
        if (n == 2) r.e2[k] = ex2.value(S, r.lam[kk]);
        if (n == 3) r.e3[k] = ex3.value(S, r.lam[kk]);
        r.race[k] = race.value(S, r.lam[kk]);
    }
    return r;
}

static void test_wor_prefix_values_bruteforce(Gen& g) {
    for (int it = 0; it < 150; ++it) {
        const int V = static_cast<int>(g.integer(3, 9));
        Vec p, q;
        cases::random_case(g, V, p, q);
        const int64_t K = cases::support(q);
        if (K < 3) continue;
        const int n = static_cast<int>(g.integer(2, std::min<int64_t>(5, K - 1)));
        check::context("wor prefix case %d: V = %d, K = %lld, n = %d", it, V, static_cast<long long>(K), n);
        const auto Q = wor_Q(q, n);
        const PrefixQ r = prefix_q(p, q, n);
        uint32_t m = 0;
        for (int64_t k = 0; k + 1 < K; ++k) {
            m |= 1u << r.order[k];
            if (k + 1 < n) continue;
            const double want = static_cast<double>(Q[m]);
            if (n == 2) CHECK_NEAR(r.e2[k], want, kTol);
            if (n == 3) CHECK_NEAR(r.e3[k], want, kTol);
            CHECK_NEAR(r.race[k], want, kTol);
        }
    }
}

static void test_wor_evaluators_agree_llm(Gen& g) {
    double worst_alpha = 0.0, worst_q = 0.0;
    for (int64_t V : {200, 500, 1000, 2000}) {
        for (int rep = 0; rep < 3; ++rep) {
            Vec p, q;
            cases::llm_rows(g, V, p, q, rep == 2 ? 0.6 : 1.1);
            for (int n : {2, 3}) {
                check::context("llm V = %lld rep %d n = %d", static_cast<long long>(V), rep, n);
                mdsd::DualWorkspace ws;
                const double a_ex =
                    mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Wor, WorMethod::Exact, ws, nullptr);
                const double a_in =
                    mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Wor, WorMethod::Integral, ws, nullptr);
                const double a_au =
                    mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Wor, WorMethod::Auto, ws, nullptr);
                CHECK_NEAR(a_in, a_ex, kTol);
                CHECK_NEAR(a_au, a_ex, kTol);
                worst_alpha = std::max(worst_alpha, std::fabs(a_in - a_ex));
                // every prefix, not only the minimiser
                const PrefixQ r = prefix_q(p, q, n);
                double d = 0.0;
                for (std::size_t k = 0; k < r.race.size(); ++k) {
                    const double ex = n == 2 ? r.e2[k] : r.e3[k];
                    if (std::isnan(ex)) continue;
                    d = std::max(d, std::fabs(r.race[k] - ex));
                }
                CHECK_MSG(d <= kTol, "max |Q_race - Q_exact| over prefixes = %.3g", d);
                worst_q = std::max(worst_q, d);
            }
        }
    }
    std::printf("  wor evaluators on LLM-like rows: max |dalpha| = %.2g, max |dQ| over prefixes = %.2g\n", worst_alpha,
                worst_q);
}

// Greedy: T = top n-1 of q (ties: lower id), S = T + {x}, x ~ q on V \ T.
static std::vector<int> greedy_T(const Vec& q, int n) {
    std::vector<int> idx;
    for (int i = 0; i < static_cast<int>(q.size()); ++i)
        if (q[i] > 0.0) idx.push_back(i);
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return q[a] > q[b] || (q[a] == q[b] && a < b); });
    idx.resize(std::max(0, n - 1));
    return idx;
}

static void test_greedy(Gen& g) {
    for (int it = 0; it < 300; ++it) {
        const int V = static_cast<int>(g.integer(2, 10));
        Vec p, q;
        cases::random_case(g, V, p, q);
        const int64_t K = cases::support(q);
        const int n = static_cast<int>(g.integer(1, std::min<int64_t>(5, K)));
        check::context("greedy case %d: V = %d, n = %d", it, V, n);
        const std::vector<int> T = greedy_T(q, n);
        uint32_t tm = 0;
        long double rest = 0.0L;
        for (int t : T) tm |= 1u << t;
        for (int i = 0; i < V; ++i)
            if (!(tm >> i & 1)) rest += q[i];
        const auto P = mask_sums(p), S = mask_sums(q);
        long double best = 0.0L;
        for (uint32_t m = 0; m < P.size(); ++m) {
            const long double Qm = (m & tm) == tm ? (S[m] - S[tm]) / rest : 0.0L;
            best = std::min(best, P[m] - Qm);
        }
        mdsd::DualWorkspace ws;
        std::vector<int64_t> cert;
        const double got = mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Greedy, WorMethod::Auto, ws, &cert);
        CHECK_NEAR(got, static_cast<double>(1.0L + best), kTol);
        const uint32_t h = mask_of(cert);
        const long double Qh = (h & tm) == tm ? (S[h] - S[tm]) / rest : 0.0L;
        CHECK_NEAR(static_cast<double>(1.0L + P[h] - Qh), got, kTol);
    }
    // closed form alpha = p(T) + sum_{x not in T} min(p(x), q(x) / q(V \ T)) on LLM-like rows
    for (int64_t V : {300, 5000}) {
        for (int n : {1, 2, 4, 8}) {
            check::context("greedy llm V = %lld n = %d", static_cast<long long>(V), n);
            Vec p, q;
            cases::llm_rows(g, V, p, q);
            const std::vector<int> T = greedy_T(q, n);
            std::vector<char> in(V, 0);
            for (int t : T) in[t] = 1;
            long double rest = 0.0L, acc = 0.0L;
            for (int64_t i = 0; i < V; ++i)
                if (!in[i]) rest += q[i];
            for (int64_t i = 0; i < V; ++i)
                acc += in[i] ? static_cast<long double>(p[i]) : std::min<long double>(p[i], q[i] / rest);
            mdsd::DualWorkspace ws;
            std::vector<int64_t> cert;
            const double got = mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Greedy, WorMethod::Auto, ws, &cert);
            CHECK_NEAR(got, static_cast<double>(std::min<long double>(acc, 1.0L)), kTol);
            for (int t : T) CHECK(std::binary_search(cert.begin(), cert.end(), static_cast<int64_t>(t)));
        }
    }
    Vec p = {0.5, 0.5, 0.0}, q = {0.6, 0.4, 0.0};
    std::vector<int64_t> cert;
    CHECK_THROWS(mdsd::dual_greedy(p.data(), q.data(), 3, 3, &cert), std::invalid_argument);
}

// The iid and wor kernels on LLM-like rows: alpha* in [0, 1], the certificate attains it (wor: at
// the prefix, by an independent evaluator), and the scan's pruning does not change the result
// compared with a full scan of every prefix.
static void test_wor_pruning_llm(Gen& g) {
    for (int64_t V : {400, 3000}) {
        for (int n : {2, 3, 4, 6}) {
            check::context("wor pruning V = %lld n = %d", static_cast<long long>(V), n);
            Vec p, q;
            cases::llm_rows(g, V, p, q);
            mdsd::DualWorkspace ws;
            const double got =
                mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Wor, WorMethod::Integral, ws, nullptr);
            const PrefixQ r = prefix_q(p, q, n);
            long double P = 0.0L, best = 0.0L;
            const int64_t K = static_cast<int64_t>(r.order.size());
            for (int64_t k = 0; k < K; ++k) {
                P += p[r.order[k]];
                const long double F = k + 1 < n ? P : k + 1 == K ? P - 1.0L : P - r.race[k];
                best = std::min(best, F);
            }
            CHECK_NEAR(got, static_cast<double>(1.0L + best), kTol);
            CHECK(got >= 0.0 && got <= 1.0);
        }
    }
}

// The chord scan of the race route (race/chord_scan.hpp) against the scan of every prefix the
// i.i.d. bound leaves: the same alpha* within rounding, no fallback, and far fewer integrations in
// all (not on every row: the chord scan integrates every run's end, even where the i.i.d. bound
// alone leaves only a few prefixes).
static void test_wor_chord_scan_llm(Gen& g) {
    int64_t n_chord = 0, n_every = 0;
    for (int64_t V : {3000, 20000}) {
        for (int n : {3, 4, 8}) {
            check::context("wor chord scan V = %lld n = %d", static_cast<long long>(V), n);
            Vec p, q;
            cases::llm_rows(g, V, p, q);
            mdsd::DualWorkspace chord, every;
            every.chords.enabled = false;
            const double a = mdsd::dual_prefix(p.data(), q.data(), V, n, Scheme::Wor, WorMethod::Integral, chord).alpha;
            const double b = mdsd::dual_prefix(p.data(), q.data(), V, n, Scheme::Wor, WorMethod::Integral, every).alpha;
            CHECK_NEAR(a, b, 1e-12);
            CHECK(!chord.chords.last.fallback);
            n_chord += chord.race.evaluations;
            n_every += every.race.evaluations;
        }
    }
    std::printf("  wor chord scan: %lld prefixes integrated, %lld by the scan of every prefix\n",
                static_cast<long long>(n_chord), static_cast<long long>(n_every));
    CHECK(5 * n_chord < n_every);
}

// Extremes: one token holding all of q but a subnormal rest (1 - q_a underflows: the exact n = 2
// evaluator's overflow path, the n = 3 refusal and the race's scaled time unit), tiny masses.
static void test_wor_extremes(Gen& g) {
    for (int it = 0; it < 60; ++it) {
        const int V = static_cast<int>(g.integer(3, 8));
        Vec q(V), p = g.dirichlet(V, g.uniform(0.2, 2.0));
        const int big = static_cast<int>(g.integer(0, V - 1));
        const int kind = it % 3;
        for (int i = 0; i < V; ++i) {
            if (i == big) {
                q[i] = 1.0;
                continue;
            }
            const double u = g.uniform(0.5, 1.0);
            q[i] = kind == 0 ? u * 1e-310 : kind == 1 ? u * 1e-200 : u * 1e-17;
        }
        const int n = static_cast<int>(g.integer(2, std::min(4, V)));
        check::context("wor extreme case %d: V = %d, n = %d, kind %d", it, V, n, kind);
        const auto P = mask_sums(p);
        const auto Q = wor_Q(q, n);
        long double best = 0.0L;
        for (uint32_t m = 0; m < P.size(); ++m) best = std::min(best, P[m] - Q[m]);
        const double want = static_cast<double>(1.0L + best);
        for (WorMethod wm : {WorMethod::Auto, WorMethod::Exact, WorMethod::Integral}) {
            mdsd::DualWorkspace ws;
            std::vector<int64_t> cert;
            const bool refuse = wm == WorMethod::Exact && (n > 3 || (n == 3 && kind < 2));
            if (refuse) {  // n > 3, or n = 3 with a rest mass below 1e-150
                CHECK_THROWS(mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Wor, wm, ws, &cert),
                             std::invalid_argument);
                continue;
            }
            const double got = mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Wor, wm, ws, &cert);
            CHECK_MSG(check::near(got, want, kTol), "%s: got %.17g, want %.17g", method_name(wm), got, want);
            const uint32_t h = mask_of(cert);
            CHECK_MSG(check::near(static_cast<double>(1.0L + P[h] - Q[h]), got, kTol),
                      "%s: the certificate's value %.17g differs from alpha %.17g", method_name(wm),
                      static_cast<double>(1.0L + P[h] - Q[h]), got);
        }
        // each evaluator's Q on every prefix (n = 2: the exact evaluator's big-token path)
        const PrefixQ r = prefix_q(p, q, n);
        uint32_t m = 0;
        for (std::size_t k = 0; k + 1 < r.order.size(); ++k) {
            m |= 1u << r.order[k];
            if (static_cast<int>(k) + 1 < n) continue;
            const double w = static_cast<double>(Q[m]);
            if (n == 2) CHECK_MSG(check::near(r.e2[k], w, kTol), "exact2 prefix %zu: %.17g vs %.17g", k, r.e2[k], w);
            CHECK_MSG(check::near(r.race[k], w, kTol), "race prefix %zu: %.17g vs %.17g", k, r.race[k], w);
        }
    }
}

int main() {
    Gen g(424242);
    test_iid_bruteforce(g);
    test_wor_bruteforce(g);
    test_wor_prefix_values_bruteforce(g);
    test_wor_evaluators_agree_llm(g);
    test_greedy(g);
    test_wor_pruning_llm(g);
    test_wor_chord_scan_llm(g);
    test_wor_extremes(g);
    return check::summary("test_dual");
}
