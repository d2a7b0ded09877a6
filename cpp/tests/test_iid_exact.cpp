// The order-independent iid route (exact_sum.hpp, iid_exact.hpp):
//   * ExactSum against a deliberately simple big-integer reference (bit-by-bit rounding), on
//     random non-negative doubles over the whole range (subnormals, ties to even, carries), and
//     the same bits under every permutation of the terms;
//   * iid_select_exact equals iid_exact_sorted (alpha* bits, certificate set) on >= 10,000 random
//     rows with zeros and ties (n = 1..8), LLM-like rows up to V = 20,000 with zeros and tied
//     ratios injected, and crowded ratios; the fallback on overflowing ratios;
//   * both stay within a few ulps of today's alpha* (dual_prefix), which sums in ratio order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "mdsd/dual.hpp"
#include "mdsd/iid_exact.hpp"

using cases::Gen;
using cases::Vec;

static bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The reference: an integer in units of 2^-1074, one bit per entry, rounded bit by bit.
static double ref_sum(const Vec& x) {
    std::vector<int> bits(2200, 0);
    for (double v : x) {
        int e;
        const double f = std::frexp(v, &e);  // v = f 2^e, f in [0.5, 1)
        if (v == 0.0) continue;
        // v = M 2^(e - 53) with M < 2^53 an integer (exact: v has <= 53 significant bits).
        uint64_t M = static_cast<uint64_t>(std::ldexp(f, 53));
        int pos = e - 53 + 1074;
        while (pos < 0) {  // subnormals: the low bits of M are zero
            M >>= 1;
            ++pos;
        }
        int carry = 0;
        for (int b = 0; b < 64 || carry; ++b) {
            const int add = b < 64 ? static_cast<int>((M >> b) & 1) : 0;
            const int s = bits[pos + b] + add + carry;
            bits[pos + b] = s & 1;
            carry = s >> 1;
        }
    }
    int h = 2199;
    while (h >= 0 && bits[h] == 0) --h;
    if (h < 0) return 0.0;
    const int low = std::max(0, h - 52);  // the kept bits: [low, h]
    uint64_t mant = 0;
    for (int b = h; b >= low; --b) mant = 2 * mant + bits[b];
    if (low > 0) {
        bool sticky = false;
        for (int b = 0; b < low - 1; ++b) sticky = sticky || bits[b];
        if (bits[low - 1] && (sticky || (mant & 1))) ++mant;
    }
    return std::ldexp(static_cast<double>(mant), low - 1074);
}

static double exact_sum(const Vec& x) {
    mdsd::ExactSum s;
    for (double v : x) s.add(v);
    return s.value();
}

static void test_exact_sum(Gen& g) {
    check::context("exact sum: fixed cases");
    CHECK(same_bits(exact_sum({1.0, 0x1p-53}), 1.0));                               // tie: to even
    CHECK(same_bits(exact_sum({1.0, 0x1p-53, 0x1p-200}), 1.0 + 0x1p-52));           // the sticky bit
    CHECK(same_bits(exact_sum({1.0 + 0x1p-52, 0x1p-53}), 1.0 + 0x1p-51));           // tie: to even (up)
    CHECK(same_bits(exact_sum({5e-324, 5e-324, 5e-324}), 1.5e-323));                // subnormals, exact
    CHECK(same_bits(exact_sum({}), 0.0));
    for (int it = 0; it < 3000; ++it) {
        const int64_t len = g.integer(1, it < 2500 ? 40 : 3000);  // the long ones cross the carry period
        Vec x(len);
        const int lo = static_cast<int>(g.integer(-1074, 0)), hi = static_cast<int>(g.integer(lo, 10));
        for (double& v : x) {
            const int kind = static_cast<int>(g.integer(0, 9));
            if (kind == 0) v = 0.0;
            else if (kind == 1) v = std::ldexp(1.0, static_cast<int>(g.integer(lo, hi)));  // powers of two: ties
            else v = std::ldexp(g.uniform(0.5, 1.0), static_cast<int>(g.integer(lo, hi)));
        }
        check::context("exact sum case %d, len %lld, exponents [%d, %d]", it, static_cast<long long>(len), lo, hi);
        const double a = exact_sum(x), r = ref_sum(x);
        CHECK_MSG(same_bits(a, r), "exact %.17g, reference %.17g", a, r);
        for (int64_t i = len - 1; i > 0; --i) std::swap(x[i], x[g.integer(0, i)]);
        CHECK(same_bits(exact_sum(x), a));
    }
}

// Both routes on one row (and today's dual_prefix for the ulp check); returns the fallback flag.
static bool check_row(const Vec& p, const Vec& q, int n) {
    const int64_t V = static_cast<int64_t>(p.size());
    mdsd::OrderWorkspace ows;
    mdsd::IidSelectWorkspace sw;
    std::vector<int32_t> o1, o2;
    const mdsd::IidSelectResult ref = mdsd::iid_exact_sorted(p.data(), q.data(), V, n, ows, o1);
    mdsd::DualWorkspace dw;
    const double today = mdsd::dual_alpha(p.data(), q.data(), V, n, mdsd::Scheme::Iid, mdsd::WorMethod::Auto, dw,
                                          nullptr, mdsd::IidRoute::Sorted);
    const double a_ref = std::min(1.0, 1.0 + ref.best);
    // today's sums round K times in sequence, and the power n times: ~(K + n) eps apart at most
    const double tol = 4.0 * static_cast<double>(V + 8 * n) * 0x1p-52;
    CHECK_MSG(std::fabs(a_ref - today) <= tol, "exact-sum alpha %.17g, today's %.17g (n = %d)", a_ref, today, n);
    const mdsd::IidSelectResult r = mdsd::iid_select_exact(p.data(), q.data(), V, n, sw, o2);
    if (r.fallback) return true;
    CHECK_MSG(same_bits(r.best, ref.best), "best: selection %.17g, sorted %.17g (n = %d)", r.best, ref.best, n);
    CHECK(r.k_star == ref.k_star && r.kept >= r.k_star && r.support == ref.support);
    std::vector<int32_t> h1(o1.begin(), o1.begin() + ref.k_star), h2(o2.begin(), o2.begin() + r.k_star);
    std::sort(h1.begin(), h1.end());
    std::sort(h2.begin(), h2.end());
    CHECK_MSG(h1 == h2, "certificates differ (n = %d, |H| = %lld)", n, static_cast<long long>(ref.k_star));
    return false;
}

static void test_random_rows(Gen& g) {
    for (int it = 0; it < 2500; ++it) {  // x 5 values of n = 12,500 rows
        const int64_t V = g.integer(2, 60);
        Vec p, q;
        cases::random_case(g, V, p, q);
        if (it % 2) {  // ties: a block of equal ratios, and zeros in both
            for (int64_t i : g.choose(V, V / 3)) q[i] = p[i];
            for (int64_t i : g.choose(V, V / 6)) p[i] = 0.0;
            for (int64_t i : g.choose(V, V / 6)) q[i] = 0.0;
            if (*std::max_element(p.begin(), p.end()) == 0.0) p[0] = 1.0;  // keep both distributions
            if (*std::max_element(q.begin(), q.end()) == 0.0) q[0] = 1.0;
            cases::normalise(p);
            cases::normalise(q);
        }
        check::context("random row %d, V = %lld", it, static_cast<long long>(V));
        for (int n : {1, 2, 3, 5, 8}) CHECK(!check_row(p, q, n));
    }
}

static void test_llm_rows(Gen& g) {
    for (int64_t V : {300, 4096, 20000}) {
        for (int rep = 0; rep < 4; ++rep) {
            Vec p, q;
            cases::llm_rows(g, V, p, q);
            if (rep >= 2) {
                for (int64_t i : g.choose(V, V / 5)) p[i] = 0.0;
                for (int64_t i : g.choose(V, V / 10)) q[i] = 0.0;
                for (int64_t i : g.choose(V, V / 4)) q[i] = p[i] * 0.5;
                cases::normalise(p);
                cases::normalise(q);
            }
            check::context("llm rows V = %lld rep %d", static_cast<long long>(V), rep);
            for (int n : {1, 2, 4, 8}) CHECK(!check_row(p, q, n));
        }
    }
}

static void test_crowded_and_fallback(Gen& g) {
    const int64_t V = 5000;
    Vec p(V), q(V);
    for (int64_t i = 0; i < V; ++i) {
        q[i] = g.uniform(0.5, 1.5);
        p[i] = q[i] * (1.0 + 1e-15 * static_cast<double>(g.integer(0, 50)));
    }
    cases::normalise(p);
    cases::normalise(q);
    check::context("crowded ratios");
    for (int n : {1, 2, 6}) CHECK(!check_row(p, q, n));
    cases::llm_rows(g, 1000, p, q);
    for (int i = 0; i < 5; ++i) q[i] = 5e-324;
    cases::normalise(q);
    check::context("fallback");
    mdsd::IidSelectWorkspace sw;
    std::vector<int32_t> o;
    CHECK(mdsd::iid_select_exact(p.data(), q.data(), 1000, 3, sw, o).fallback);
}

int main() {
    Gen g(20261202);
    test_exact_sum(g);
    test_random_rows(g);
    test_llm_rows(g);
    test_crowded_and_fallback(g);
    return check::summary("test_iid_exact");
}
