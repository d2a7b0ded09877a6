// The iid selection (iid_select.hpp, iid_exact.hpp): alpha*_iid and the certificate by bucket
// selection equal the full ratio sort's (dual_prefix) bit for bit, and order[0, k_star) is the
// certificate (test_iid_exact.cpp checks both against ExactSum at every prefix):
//   * random small cases (zeros, ties, tied values), n = 1..8;
//   * LLM-like rows up to V = 20,000, with zeros and tied ratios injected;
//   * crowded ratios: many tokens within a few ulps (the wide fine buckets' comparison sort);
//   * the fallback: a subnormal q makes p / q overflow, and the row is refused to the sorted route;
//   * dual_prefix_ordered (k* by selection, the full ratio order) against dual_prefix on every row.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "mdsd/bound/dual.hpp"

using cases::Gen;
using cases::Vec;
using mdsd::IidRoute;
using mdsd::Scheme;
using mdsd::WorMethod;

static bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Both routes on one row; returns whether the selection fell back.
static bool check_row(const Vec& p, const Vec& q, int n) {
    const int64_t V = static_cast<int64_t>(p.size());
    mdsd::DualWorkspace ws1, ws2;
    std::vector<int64_t> c1, c2;
    const double a1 = mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Iid, WorMethod::Auto, ws1, &c1);
    const double a2 =
        mdsd::dual_alpha(p.data(), q.data(), V, n, Scheme::Iid, WorMethod::Auto, ws2, &c2, IidRoute::Sorted);
    CHECK_MSG(same_bits(a1, a2), "alpha: selection %.17g, sorted %.17g (n = %d)", a1, a2, n);
    CHECK_MSG(c1 == c2, "certificates differ: %zu vs %zu tokens (n = %d)", c1.size(), c2.size(), n);
    // dual_prefix_ordered (the ordered split of optimal_iid/planless_row.hpp): dual_prefix's alpha*, k* and order
    {
        mdsd::DualWorkspace w1, w2;
        const mdsd::DualResult d1 = mdsd::dual_prefix_ordered(p.data(), q.data(), V, n, w1);
        const mdsd::DualResult d2 = mdsd::dual_prefix(p.data(), q.data(), V, n, Scheme::Iid, WorMethod::Auto, w2);
        CHECK_MSG(same_bits(d1.alpha, d2.alpha) && d1.k_star == d2.k_star,
                  "dual_prefix_ordered: alpha %.17g, k* %lld; dual_prefix %.17g, %lld (n = %d)", d1.alpha,
                  static_cast<long long>(d1.k_star), d2.alpha, static_cast<long long>(d2.k_star), n);
        CHECK_MSG(w1.order == w2.order, "dual_prefix_ordered's order differs from dual_prefix's (n = %d)", n);
    }
    mdsd::IidSelectWorkspace sw;
    std::vector<int32_t> order;
    const mdsd::IidSelectResult r = mdsd::iid_select_fast(p.data(), q.data(), V, n, sw, order);
    if (r.fallback) return true;
    CHECK(r.kept >= r.k_star && r.kept <= r.support && r.window <= r.kept);
    // the window's tokens come last in ratio order, and order[0, k_star) is the certificate's set
    std::vector<int64_t> h(order.begin(), order.begin() + r.k_star);
    std::sort(h.begin(), h.end());
    CHECK_MSG(h == c2, "the selection's order does not start with the certificate (n = %d)", n);
    return false;
}

static void test_random_cases(Gen& g) {
    for (int it = 0; it < 3000; ++it) {
        const int64_t V = g.integer(2, 40);
        Vec p, q;
        cases::random_case(g, V, p, q);
        check::context("random case %d, V = %lld", it, static_cast<long long>(V));
        for (int n : {1, 2, 3, 5, 8}) CHECK(!check_row(p, q, n));
    }
}

static void test_llm_rows(Gen& g) {
    for (int64_t V : {300, 4096, 20000}) {
        for (int rep = 0; rep < 4; ++rep) {
            Vec p, q;
            cases::llm_rows(g, V, p, q);
            if (rep >= 2) cases::add_zeros_and_ties(g, p, q);
            check::context("llm rows V = %lld rep %d", static_cast<long long>(V), rep);
            for (int n : {1, 2, 4, 8}) CHECK(!check_row(p, q, n));
        }
    }
}

static void test_crowded_ratios(Gen& g) {
    Vec p, q;
    cases::crowded_ratios(g, 5000, p, q);
    check::context("crowded ratios");
    for (int n : {1, 2, 6}) CHECK(!check_row(p, q, n));
}

static void test_fallback(Gen& g) {
    Vec p, q;
    cases::llm_rows(g, 1000, p, q);
    for (int i = 0; i < 5; ++i) q[i] = 5e-324;  // the smallest subnormal: p / q overflows
    cases::normalise(q);
    check::context("fallback");
    CHECK(check_row(p, q, 3));
}

int main() {
    Gen g(20261201);
    test_random_cases(g);
    test_llm_rows(g);
    test_crowded_ratios(g);
    test_fallback(g);
    return check::summary("test_iid_select");
}
