// The order-independent iid routes (exact_sum.hpp, iid_exact.hpp, dual.hpp):
//   * ExactSum against a deliberately simple big-integer reference (bit-by-bit rounding), on
//     random non-negative doubles over the whole range (subnormals, ties to even, carries), and
//     the same bits under every permutation of the terms;
//   * DdSum: whenever rounded() decides, it is the reference's bits (token by token and from
//     lanes' pairs); it refuses on midpoints (a negative control: fl(hi + lo) is wrong there);
//   * every route -- dual_alpha's selection and sorted routes, iid_select_fast, iid_scan_order,
//     their forced ExactSum paths -- equals iid_exact_sorted (ExactSum at every prefix; alpha* bits,
//     certificate set) on >= 10,000 random rows with zeros and ties (n = 1..8), LLM-like rows up to
//     V = 20,000 with zeros and tied ratios, crowded ratios; the overflow fallback;
//   * all within a few ulps of alpha* with sums in ratio order (the plain definition), and
//     different from it in the bits on some rows (so equal bits are evidence).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "mdsd/bound/dual.hpp"
#include "mdsd/bound/iid_exact.hpp"

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

static double dd_sum(const Vec& x, bool& decided) {
    mdsd::DdSum s;
    for (double v : x) s.add(v);
    double r;
    decided = s.rounded(r);
    return r;
}

// The same terms as pairs spread over `buckets` lanes (PairSum, sel_base's arithmetic), then
// combined (sel_base's add_pair with the a priori bound).
static double dd_pairs(const Vec& x, int buckets, bool& decided) {
    std::vector<mdsd::PairSum<double>> h(buckets, mdsd::PairSum<double>{0.0, 0.0});
    std::vector<int64_t> c(buckets, 0);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const std::size_t b = (i * 7919) % static_cast<std::size_t>(buckets);
        h[b].add(x[i]);
        ++c[b];
    }
    mdsd::DdSum d;
    for (int b = 0; b < buckets; ++b)
        if (c[b]) d.add_pair(h[b].hi, h[b].lo, mdsd::pair_error(h[b].hi, c[b]));
    double r;
    decided = d.rounded(r);
    return r;
}

static void test_dd_sum(Gen& g) {
    check::context("dd sum: midpoints");
    bool dec;
    // 1 + 2^-53 + 2^-106 rounds up; lo ends on the midpoint 2^-53, so DdSum must refuse, and the
    // plain fl(hi + lo) = 1 would be wrong (the control)
    const Vec mid = {1.0, 0x1p-53, 0x1p-106};
    dd_sum(mid, dec);
    CHECK(!dec);
    CHECK(same_bits(exact_sum(mid), 1.0 + 0x1p-52) && 1.0 + 0x1p-53 == 1.0);
    // an exact tie with nothing lost (err = 0): decided, to even
    CHECK(same_bits(dd_sum({1.0, 0x1p-53}, dec), 1.0) && dec);
    CHECK(same_bits(dd_sum({1.0 + 0x1p-52, 0x1p-53}, dec), 1.0 + 0x1p-51) && dec);
    CHECK(same_bits(dd_sum({0.0, 0.0}, dec), 0.0) && dec);
    CHECK(same_bits(dd_sum({5e-324, 5e-324}, dec), 1e-323) && dec);
    int64_t undecided = 0, runs = 0;
    for (int it = 0; it < 3000; ++it) {
        const int64_t len = g.integer(1, it < 2500 ? 60 : 5000);
        Vec x(len);
        const int lo = static_cast<int>(g.integer(-900, 0)), hi = static_cast<int>(g.integer(lo, 10));
        for (double& v : x) {
            const int kind = static_cast<int>(g.integer(0, 9));
            if (kind == 0) v = 0.0;
            else if (kind == 1) v = std::ldexp(1.0, static_cast<int>(g.integer(lo, hi)));
            else v = std::ldexp(g.uniform(0.5, 1.0), static_cast<int>(g.integer(lo, hi)));
        }
        check::context("dd sum case %d, len %lld", it, static_cast<long long>(len));
        const double r = ref_sum(x);
        for (int route = 0; route < 2; ++route) {
            const double d = route == 0 ? dd_sum(x, dec) : dd_pairs(x, 1 + it % 37, dec);
            ++runs;
            if (!dec) {
                ++undecided;
                continue;
            }
            CHECK_MSG(same_bits(d, r), "dd %.17g, reference %.17g (route %d)", d, r, route);
        }
    }
    // Powers of two make exact ties now and then; generic sums are decided.
    check::context("dd sum: undecided %lld of %lld", static_cast<long long>(undecided), static_cast<long long>(runs));
    CHECK(undecided < runs / 20);
}

struct Counts {
    int64_t rows = 0, exact_select = 0, exact_sorted = 0, order_bits_differ = 0, llm_rows = 0, llm_exact = 0;
    int64_t base_tokens = 0, llm_tokens = 0, wide_rows = 0, wide_fallback = 0;
};
static Counts counts;

// Every route on one row against iid_exact_sorted; returns the overflow-fallback flag.
static bool check_row(const Vec& p, const Vec& q, int n) {
    const int64_t V = static_cast<int64_t>(p.size());
    mdsd::OrderWorkspace ows;
    mdsd::IidSelectWorkspace sw;
    std::vector<int32_t> o1, o2;
    const mdsd::IidSelectResult ref = mdsd::iid_exact_sorted(p.data(), q.data(), V, n, ows, o1);
    const double a_ref = std::min(1.0, 1.0 + ref.best);
    std::vector<int64_t> h_ref(o1.begin(), o1.begin() + ref.k_star);
    std::sort(h_ref.begin(), h_ref.end());
    ++counts.rows;
    // The plain definition, sums in ratio order: K roundings in sequence and the power, ~(K + n)
    // eps apart at most; counted where the bits differ.
    {
        double P = 0.0, S = 0.0, best = 0.0;
        for (int64_t k = 0; k < ref.support; ++k) {
            P += p[o1[k]];
            S += q[o1[k]];
            best = std::min(best, P - mdsd::ipow(S, n));
        }
        const double a_old = std::min(1.0, 1.0 + best);
        const double tol = 4.0 * static_cast<double>(V + 8 * n) * 0x1p-52;
        CHECK_MSG(std::fabs(a_ref - a_old) <= tol, "exact-sum alpha %.17g, ordered sums %.17g (n = %d)", a_ref, a_old,
                  n);
        counts.order_bits_differ += !same_bits(a_ref, a_old);
    }
    // The sorted route's scan, fast and forced exact.
    for (bool force : {false, true}) {
        bool ex;
        const mdsd::IidBest s = mdsd::iid_scan_order(p.data(), q.data(), o1.data(), ref.support, n, ex, force);
        CHECK_MSG(same_bits(s.best, ref.best) && s.kbest == ref.k_star, "sorted scan (forced %d): %.17g vs %.17g",
                  force, s.best, ref.best);
        if (!force) counts.exact_sorted += ex;
    }
    // dual_alpha, both routes (the shipped entry point).
    for (mdsd::IidRoute route : {mdsd::IidRoute::Select, mdsd::IidRoute::Sorted}) {
        mdsd::DualWorkspace dw;
        std::vector<int64_t> cert;
        const double a =
            mdsd::dual_alpha(p.data(), q.data(), V, n, mdsd::Scheme::Iid, mdsd::WorMethod::Auto, dw, &cert, route);
        CHECK_MSG(same_bits(a, a_ref), "dual_alpha %.17g, reference %.17g (n = %d)", a, a_ref, n);
        CHECK_MSG(cert == h_ref, "dual_alpha's certificate differs (n = %d, |H| = %lld)", n,
                  static_cast<long long>(ref.k_star));
    }
    bool fell_back = false;
    // force 0: the lanes' base first; 1: the token sums first (forced); 2: ExactSum (forced).
    for (int force : {0, 1, 2}) {
        const mdsd::IidSelectResult r =
            mdsd::iid_select_fast(p.data(), q.data(), V, n, sw, o2, true, force == 2, force == 1);
        if (r.fallback) {
            fell_back = true;
            continue;
        }
        CHECK(force == 0 || r.base_tokens == (force == 1));  // a forced route is taken
        CHECK(force < 2 || r.exact_sums);
        if (force == 0) {
            counts.exact_select += r.exact_sums;
            counts.base_tokens += r.base_tokens;
        }
        if (force == 0 && V >= 4096) {
            ++counts.llm_rows;
            counts.llm_exact += r.exact_sums;
            counts.llm_tokens += r.base_tokens;
        }
        CHECK_MSG(same_bits(r.best, ref.best), "best: selection %.17g, sorted %.17g (n = %d, forced %d)", r.best,
                  ref.best, n, force);
        CHECK(r.k_star == ref.k_star && r.kept >= r.k_star && r.support == ref.support && r.window <= r.kept);
        std::vector<int64_t> h(o2.begin(), o2.begin() + r.k_star);
        std::sort(h.begin(), h.end());
        CHECK_MSG(h == h_ref, "certificates differ (n = %d, |H| = %lld)", n, static_cast<long long>(ref.k_star));
    }
    return fell_back;
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
            if (rep >= 2) cases::add_zeros_and_ties(g, p, q);
            check::context("llm rows V = %lld rep %d", static_cast<long long>(V), rep);
            for (int n : {1, 2, 4, 8}) CHECK(!check_row(p, q, n));
        }
    }
}

static void test_crowded_and_fallback(Gen& g) {
    Vec p, q;
    cases::crowded_ratios(g, 5000, p, q);
    check::context("crowded ratios");
    for (int n : {1, 2, 6}) CHECK(!check_row(p, q, n));
    cases::llm_rows(g, 1000, p, q);
    for (int i = 0; i < 5; ++i) q[i] = 5e-324;
    cases::normalise(q);
    check::context("fallback");
    CHECK(check_row(p, q, 3));  // the selection refuses; dual_alpha's routes still equal the reference
}

// Rows over the whole double range: masses 2^-e, e up to 1,070 (subnormals), ties (repeated
// values, equal and doubled ratios), zeros; V up to 300, so the lanes' SSE2 steps and the tail both
// run. A subnormal q can make p / q overflow: those rows go to the sorted route (counted).
static void test_wide_rows(Gen& g) {
    for (int it = 0; it < 2000; ++it) {  // x 5 values of n = 10,000 rows
        const int64_t V = g.integer(8, 300);
        const int span = static_cast<int>(g.integer(1, 1070));
        Vec p(V), q(V);
        for (Vec* x : {&p, &q})
            for (int64_t i = 0; i < V; ++i) {
                const int kind = static_cast<int>(g.integer(0, 9));
                double& v = (*x)[i];
                if (kind == 0) v = 0.0;
                else if (kind == 1) v = std::ldexp(1.0, -static_cast<int>(g.integer(0, span)));
                else if (kind == 2 && i > 0) v = (*x)[g.integer(0, i - 1)];
                else v = std::ldexp(g.uniform(0.5, 1.0), -static_cast<int>(g.integer(0, span)));
            }
        for (int64_t i : g.choose(V, V / 4)) q[i] = it % 3 ? p[i] : 2.0 * p[i];
        if (*std::max_element(p.begin(), p.end()) == 0.0) p[0] = 1.0;
        if (*std::max_element(q.begin(), q.end()) == 0.0) q[0] = 1.0;
        cases::normalise(p);
        cases::normalise(q);
        check::context("wide row %d, V = %lld, span 2^-%d", it, static_cast<long long>(V), span);
        for (int n : {1, 2, 3, 5, 8}) {
            ++counts.wide_rows;
            counts.wide_fallback += check_row(p, q, n);
        }
    }
}

// sel_base's masked sums alone: m0 and the window's tokens as a plain loop gives them; the lanes'
// base, whenever rounded() decides, the exact sum of the masked terms; and a negative control:
// terms whose pair ends on a rounding midpoint (1, 2^-53, 2^-106 in one lane), where fl(hi + lo) is
// wrong and the bound must refuse.
static void test_lanes(Gen& g) {
    int64_t decided = 0, runs = 0;
    for (int it = 0; it < 2000; ++it) {
        const int64_t V = g.integer(1, it < 1800 ? 64 : 5000);
        mdsd::IidSelectWorkspace ws;
        ws.bkt.resize(V);
        Vec p(V), q(V), ep, eq;
        const int lo = static_cast<int>(g.integer(-1074, 0)), hi = static_cast<int>(g.integer(lo, 2));
        for (int64_t i = 0; i < V; ++i) {
            ws.bkt[i] = g.integer(0, 9) == 0 ? mdsd::kNoBucket : static_cast<uint16_t>(g.integer(0, 20));
            p[i] = g.integer(0, 5) == 0 ? 0.0 : std::ldexp(g.uniform(0.5, 1.0), static_cast<int>(g.integer(lo, hi)));
            q[i] = g.integer(0, 5) == 0 ? p[i] : std::ldexp(1.0, static_cast<int>(g.integer(lo, hi)));
        }
        const int64_t bfirst = g.integer(0, 20), bcut = g.integer(bfirst, 20);
        std::vector<int32_t> win_ref, base(V + 1);
        for (int64_t i = 0; i < V; ++i) {
            if (ws.bkt[i] < bfirst) {
                ep.push_back(p[i]);
                eq.push_back(q[i]);
            } else if (ws.bkt[i] <= bcut) {
                win_ref.push_back(static_cast<int32_t>(i));
            }
        }
        int64_t m0 = -1;
        const int64_t m = mdsd::sel_base(p.data(), q.data(), V, ws, bfirst, bcut, true, base.data(), m0);
        check::context("lanes case %d, V = %lld", it, static_cast<long long>(V));
        CHECK(m0 == static_cast<int64_t>(ep.size()) && m == static_cast<int64_t>(win_ref.size()));
        CHECK(std::equal(win_ref.begin(), win_ref.end(), ws.win.begin()));
        for (int64_t k = 0; k < m0; ++k) CHECK(ws.bkt[base[k]] < bfirst && (k == 0 || base[k] > base[k - 1]));
        for (int s = 0; s < 2; ++s) {
            double r;
            ++runs;
            if (!(s ? ws.S0 : ws.P0).rounded(r)) continue;
            ++decided;
            const double e = exact_sum(s ? eq : ep);
            CHECK_MSG(same_bits(r, e), "lanes %.17g, exact %.17g (%s)", r, e, s ? "q" : "p");
        }
    }
    check::context("lanes: decided %lld of %lld", static_cast<long long>(decided), static_cast<long long>(runs));
    CHECK(decided > runs / 2);
    for (int64_t V : {3, 24}) {  // the tail's pair, and the SSE2 lanes' (tokens 0, 8, 16: lane 0)
        mdsd::IidSelectWorkspace ws;
        ws.bkt.assign(V, 0);
        Vec p(V, 0.0), q(V, 1.0);
        p[0] = 1.0;
        p[V == 3 ? 1 : 8] = 0x1p-53;
        p[V == 3 ? 2 : 16] = 0x1p-106;
        int64_t m0;
        mdsd::sel_base(p.data(), q.data(), V, ws, 1, 1, true, nullptr, m0);
        double r;
        check::context("lanes: midpoint control, V = %lld", static_cast<long long>(V));
        CHECK(!ws.P0.rounded(r) && ws.P0.hi + ws.P0.lo == 1.0 && same_bits(exact_sum(p), 1.0 + 0x1p-52));
    }
}

int main() {
    Gen g(20261202);
    test_exact_sum(g);
    test_dd_sum(g);
    test_random_rows(g);
    test_llm_rows(g);
    test_crowded_and_fallback(g);
    const Counts first = counts;  // the rates below are the first suites'; the wide rows' are printed
    test_wide_rows(g);
    test_lanes(g);
    // Fallbacks: the lanes' base is undecided on a few short rows (its a priori bound cannot decide
    // an exact midpoint; the token sums can), on none of V >= 4,096; ExactSum is rare (exact ties
    // are decided while nothing was lost) and never needed on rows of V >= 4,096. And the bits
    // differ from the ordered sums' on some rows (the control that equal bits mean something).
    std::printf(
        "test_iid_exact: %lld rows (%lld wide-range, %lld of them left to the sorted route); the lanes' base "
        "undecided on %lld rows (%lld of %lld with V >= 4,096); ExactSum fallbacks: selection %lld (%lld with V >= "
        "4,096), sorted scan %lld; alpha* bits differ from the ordered sums' on %lld rows\n",
        static_cast<long long>(counts.rows), static_cast<long long>(counts.wide_rows),
        static_cast<long long>(counts.wide_fallback), static_cast<long long>(counts.base_tokens),
        static_cast<long long>(counts.llm_tokens), static_cast<long long>(counts.llm_rows),
        static_cast<long long>(counts.exact_select), static_cast<long long>(counts.llm_exact),
        static_cast<long long>(counts.exact_sorted), static_cast<long long>(counts.order_bits_differ));
    std::printf("test_iid_exact: on the wide rows, lanes undecided %lld, ExactSum selection %lld, sorted scan %lld\n",
                static_cast<long long>(counts.base_tokens - first.base_tokens),
                static_cast<long long>(counts.exact_select - first.exact_select),
                static_cast<long long>(counts.exact_sorted - first.exact_sorted));
    check::context("counts");
    CHECK(counts.rows >= 22500 && counts.wide_rows >= 10000 && counts.wide_fallback < counts.wide_rows / 10);
    CHECK(first.exact_select <= first.rows / 100 && first.exact_sorted <= first.rows / 100);
    CHECK(counts.llm_rows >= 32 && counts.llm_exact == 0 && counts.llm_tokens == 0);
    CHECK(first.base_tokens <= first.rows / 20);
    CHECK(counts.order_bits_differ >= 10);
    return check::summary("test_iid_exact");
}
