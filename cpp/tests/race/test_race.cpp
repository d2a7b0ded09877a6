// The exponential-race quadrature behind every full-vocabulary "wor" plan (docs/theory/race_oracle.md §14), in
// C++: mirrors tests/bound/test_race_quadrature.py (which goes through the _core._testing.race_weights /
// race_greedy test bindings) and adds checks of the grid and the products.
//   * pass: w_y = E[1{y in S} prod_{S \ y} h] against enumeration of the ordered without-
//     replacement draws (V <= 8, n = 1..4, random h in [0, 1] with exact 0s and 1s), relative
//     error < 1e-12;
//   * at h = 1, w_y = Pr[y in S] and sum_y w_y = n on LLM-like rows (n = 2, 4, 8) and at large n;
//   * the greedy pass (tokens laid in turn, lay(i, w) = 1 - p/w) by pass_div and by pass against
//     enumeration, and pass_div against pass on long LLM-like rows (|dw| <= 1e-12);
//   * the outer system's passes (optimal_wor/outer.hpp, by division): every token at 1, then
//     the first half by rho at 0 and the rest at 1, by pass_div and by pass: w within 1e-12
//     relative, the same rho order; negative control: that half at 1e-2 instead of 0 is caught;
//   * product_by_moments against the factor-by-factor product; loo_weights against pass at h = 1;
//   * Grid: its weights integrate Erlang densities to 1; Grid::factors against libm (the chains
//     and w_raw bit for bit against node-by-node forms: test_race_chains.cpp).
//
#include "mdsd/race/grid.hpp"
#include "mdsd/race/loo.hpp"
#include "mdsd/race/moments.hpp"
#include "mdsd/race/pair.hpp"
#include "mdsd/race/pass.hpp"
namespace R = mdsd::race;

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <functional>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "race_grid.hpp"

using cases::Gen;
using cases::Vec;

static std::vector<int32_t> support_tokens(const Vec& q) {
    std::vector<int32_t> t;
    for (int32_t y = 0; y < static_cast<int32_t>(q.size()); ++y)
        if (q[y] > 0.0) t.push_back(y);
    return t;
}

// w_y for every token at weights h (every token at its h), by pass -- as race_weights does.
static Vec race_weights(const Vec& q, const Vec& h, int n) {
    const R::Grid gr = grid_of(q, n);
    const std::vector<int32_t> toks = support_tokens(q);
    std::vector<double> hs;
    for (int32_t y : toks) hs.push_back(h[y]);
    R::Pair base;
    base.unit(n, gr.G);
    std::vector<double> wt;
    R::pass(gr, q.data(), toks, base, [&](int64_t i, double) { return hs[i]; }, wt, hs.data());
    Vec w(q.size(), 0.0);
    for (std::size_t i = 0; i < toks.size(); ++i) w[toks[i]] = wt[i];
    return w;
}

// E[1{y in S} prod_{j in S, j != y} h_j] by enumeration.
static Vec enumerated_w(const Vec& q, const Vec& h, int n) {
    std::vector<long double> w(q.size(), 0.0L);
    cases::wor_tuples(q, n, [&](const std::vector<int>& t, double pr) {
        for (int y : t) {
            long double prod = pr;
            for (int j : t)
                if (j != y) prod *= h[j];
            w[y] += prod;
        }
    });
    return Vec(w.begin(), w.end());
}

static void test_weights_match_enumeration(Gen& g) {
    double worst = 0.0;
    int cases_run = 0;
    for (int it = 0; it < 160; ++it) {
        const int V = static_cast<int>(g.integer(3, 8));
        Vec p, q;
        cases::random_case(g, V, p, q);
        if (it % 5 == 0) {  // a skewed row: one token holding nearly everything, tiny others
            for (auto& v : q) v = std::pow(v, 6.0);
            cases::normalise(q);
        }
        const int64_t K = cases::support(q);
        if (K < 2) continue;
        const int n = static_cast<int>(g.integer(1, std::min<int64_t>(4, K)));
        Vec h(V);
        for (auto& v : h) {
            v = g.uniform();
            const double u = g.uniform();
            if (u < 0.2) v = 0.0;
            else if (u < 0.4) v = 1.0;
        }
        check::context("pass case %d: V = %d, K = %lld, n = %d", it, V, static_cast<long long>(K), n);
        const Vec got = race_weights(q, h, n), want = enumerated_w(q, h, n);
        for (int y = 0; y < V; ++y) {
            CHECK_CLOSE(got[y], want[y], 1e-12, 1e-14);
            if (want[y] > 1e-12) worst = std::max(worst, std::fabs(got[y] - want[y]) / want[y]);
        }
        ++cases_run;
    }
    CHECK(cases_run >= 120);
    CHECK_MSG(worst < 1e-12, "worst relative error %.3g", worst);
    std::printf("  pass vs enumeration: %d cases, worst relative error %.2g\n", cases_run, worst);
}

static void test_weights_sum_to_n(Gen& g) {
    // At weight 1, w_y = Pr[y in S], and the n drafts are distinct: sum_y w_y = n.
    for (int64_t V : {3000, 30000}) {
        for (int n : {2, 4, 8}) {
            check::context("sum = n: V = %lld, n = %d", static_cast<long long>(V), n);
            Vec p, q;
            cases::llm_rows(g, V, p, q);
            const Vec w = race_weights(q, Vec(V, 1.0), n);
            long double s = 0.0L;
            bool pos = true, le1 = true;
            for (int64_t y = 0; y < V; ++y) {
                s += w[y];
                pos &= w[y] > 0.0;
                le1 &= w[y] <= 1.0 + 1e-12;
            }
            CHECK_NEAR(static_cast<double>(s), n, 1e-11);
            CHECK(pos);
            CHECK(le1);
        }
    }
    // the n-th arrival sharpens in ln t as n grows; the grid's step shrinks with it
    Vec q = g.dirichlet(200, 1.0);
    for (int n : {16, 40, 64}) {
        check::context("sum = n: large n = %d", n);
        const Vec w = race_weights(q, Vec(200, 1.0), n);
        CHECK_NEAR(cases::sum(w), n, 1e-10);
    }
    // h = 0 everywhere: w_y = Pr[S = {y}] = 0 for n >= 2, and q_y for n = 1
    Vec p2, q2;
    cases::llm_rows(g, 500, p2, q2);
    for (int n : {1, 3}) {
        check::context("h = 0, n = %d", n);
        const Vec w = race_weights(q2, Vec(500, 0.0), n);
        double d = 0.0;
        for (int y = 0; y < 500; ++y) d = std::max(d, std::fabs(w[y] - (n == 1 ? q2[y] : 0.0)));
        CHECK_MSG(d <= 1e-14, "max |w - w_exact| = %.3g", d);
    }
}

// The greedy pass of the full-vocabulary plans: tokens of `order` laid in turn (lay = 1 - p/w,
// 0 once w <= p), those before at their final weights, the others at weight 1.
struct Greedy {
    Vec w, h;
};
static Greedy race_greedy(const Vec& p, const Vec& q, int n, const std::vector<int32_t>& order, bool division,
                          bool* used_div = nullptr) {
    const R::Grid gr = grid_of(q, n);
    const int64_t V = static_cast<int64_t>(q.size());
    std::vector<char> in(V, 0);
    for (int32_t y : order) in[y] = 1;
    std::vector<double> e(gr.G), b(gr.G), w, h(order.size(), 1.0);
    R::Pair env;
    env.unit(n, gr.G);
    for (int64_t y = 0; y < V; ++y)
        if (q[y] > 0.0 && !in[y]) {
            gr.factors(q[y], e.data(), b.data());
            env.add(e.data(), b.data(), 1.0, q[y]);
        }
    auto lay = [&](int64_t i, double wi) {
        const double d = wi > 0.0 ? p[order[i]] / wi : 0.0;
        return h[i] = d >= 1.0 ? 0.0 : 1.0 - d;
    };
    bool div = division && R::pass_div(gr, q.data(), order, env, lay, w);
    if (!div) R::pass(gr, q.data(), order, env, lay, w);
    if (used_div) *used_div = div;
    return Greedy{w, h};
}

static void test_greedy_pass_matches_enumeration(Gen& g) {
    for (bool division : {true, false}) {
        for (int it = 0; it < 60; ++it) {
            // a few tokens holding most of q and a few tiny ones (q t <= ln 2 on the whole grid: the
            // ones the division pass divides out of its running product)
            const int V = static_cast<int>(g.integer(5, 8));
            const int big = static_cast<int>(g.integer(3, V - 1));
            Vec q = g.dirichlet(big, 1.0);
            for (int i = big; i < V; ++i) q.push_back(std::pow(10.0, g.uniform(-7.0, -4.0)));
            cases::normalise(q);
            Vec p = g.dirichlet(V, 0.5);
            if (g.uniform() < 0.5) p[V - 1] = 0.0;
            cases::normalise(p);
            const int n = static_cast<int>(g.integer(2, std::min(4, V - 1)));
            std::vector<int32_t> live;
            for (int y = 0; y < V; ++y)
                if (p[y] > 0.0) live.push_back(y);
            for (std::size_t i = 0; i < live.size(); ++i) std::swap(live[i], live[g.integer(i, live.size() - 1)]);
            live.resize(std::min<std::size_t>(live.size(), g.integer(2, V)));
            check::context("greedy pass (%s) case %d: V = %d, n = %d", division ? "div" : "pass", it, V, n);
            bool used_div = false;
            const Greedy r = race_greedy(p, q, n, live, division, &used_div);
            if (division) CHECK(used_div);
            Vec hw(V, 1.0);
            for (std::size_t i = 0; i < live.size(); ++i) {
                const int32_t y = live[i];
                const double want = enumerated_w(q, hw, n)[y];
                CHECK_CLOSE(r.w[i], want, 1e-12, 1e-14);
                const double hwant = p[y] >= r.w[i] ? 0.0 : 1.0 - p[y] / r.w[i];
                CHECK_NEAR(r.h[i], hwant, 1e-15);
                hw[y] = r.h[i];
            }
        }
    }
}

static void test_division_equals_checkpointed_pass(Gen& g) {
    // On long rows (most tokens small) the division pass and the checkpointed pass give the same
    // weights: the division's rounding does not drift over the pass.
    double worst = 0.0;
    for (int64_t V : {20000, 45000}) {
        for (int n : {2, 4}) {
            check::context("pass_div vs pass: V = %lld, n = %d", static_cast<long long>(V), n);
            Vec p, q;
            cases::llm_rows(g, V, p, q);
            std::vector<int32_t> order;
            for (int32_t y = 0; y < V; ++y)
                if (p[y] > 0.0 && q[y] > 0.0) order.push_back(y);
            std::stable_sort(order.begin(), order.end(),
                             [&](int32_t a, int32_t b) { return p[a] / q[a] > p[b] / q[b]; });
            bool used_div = false;
            const Greedy d = race_greedy(p, q, n, order, true, &used_div), c = race_greedy(p, q, n, order, false);
            CHECK(used_div);
            double mx = 0.0, sm = 0.0, mh = 0.0;
            for (std::size_t i = 0; i < order.size(); ++i) {
                const double dw = std::fabs(d.w[i] - c.w[i]);
                mx = std::max(mx, dw);
                sm += dw;
                mh = std::max(mh, std::fabs(d.h[i] - c.h[i]));
            }
            CHECK_MSG(mx <= 1e-12, "max |dw| = %.3g", mx);
            CHECK_MSG(sm <= 1e-11, "sum |dw| = %.3g", sm);
            CHECK_MSG(mh <= 1e-9, "max |dh| = %.3g", mh);
            worst = std::max(worst, mx);
        }
    }
    std::printf("  pass_div vs pass on long rows: max |dw| = %.2g\n", worst);
}

static double rel(double a, double b) { return std::fabs(a - b) / std::max({std::fabs(a), std::fabs(b), 1e-300}); }

// The outer system's rank pass (every token at weight 1) and a round pass (the first tokens by
// rho = p / w at 0, the rest at 1) by division and checkpointed; returns the largest relative
// difference of w.
static double outer_passes_differ(const R::Grid& gr, const Vec& p, const Vec& q, const std::vector<int32_t>& toks,
                                  const R::Pair& env, double safe_h, bool* same_order) {
    std::vector<double> w[2], r[2];
    std::vector<int32_t> byrho[2];
    std::size_t nd[2] = {0, 0};
    for (int form = 0; form < 2; ++form) {
        auto one = [](int64_t, double) { return 1.0; };
        if (form == 0) CHECK(R::pass_div(gr, q.data(), toks, env, one, w[form]));
        else R::pass(gr, q.data(), toks, env, one, w[form]);
        std::vector<int64_t> idx(toks.size());
        for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
        const std::vector<double>& wf = w[form];
        auto rho = [&](int64_t i) { return wf[i] > 0.0 ? p[toks[i]] / wf[i] : 1e300; };
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return rho(a) > rho(b); });
        for (int64_t i : idx) byrho[form].push_back(toks[i]);
        // the route lays rho >= 1; these systems have all or none there, so the top half stands in
        nd[form] = toks.size() / 2;
        const std::size_t k = nd[form];
        // safe_h: the safe tokens' weight in the form by division (0 in the route; else the control)
        const double hs = form == 0 ? safe_h : 0.0;
        auto round = [k, hs](int64_t i, double) { return static_cast<std::size_t>(i) < k ? hs : 1.0; };
        if (form == 0) CHECK(R::pass_div(gr, q.data(), byrho[form], env, round, r[form]));
        else R::pass(gr, q.data(), byrho[form], env, round, r[form]);
    }
    *same_order = byrho[0] == byrho[1];
    double worst = 0.0;
    for (std::size_t i = 0; i < toks.size(); ++i) worst = std::max(worst, rel(w[0][i], w[1][i]));
    if (*same_order)
        for (std::size_t i = 0; i < toks.size(); ++i) worst = std::max(worst, rel(r[0][i], r[1][i]));
    return worst;
}

static void test_outer_passes_by_division(Gen& g) {
    // Outer-like systems: the tokens of high p / q (the last ones of the ratio order), most of them
    // small, in an environment of the others at weight 1.
    double worst = 0.0, control = 1e300;
    for (int64_t V : {20000, 45000}) {
        for (int n : {2, 4, 8}) {
            check::context("outer passes by division: V = %lld, n = %d", static_cast<long long>(V), n);
            Vec p, q;
            cases::llm_rows(g, V, p, q);
            std::vector<int32_t> sup;
            for (int32_t y = 0; y < V; ++y)
                if (q[y] > 0.0) sup.push_back(y);
            std::stable_sort(sup.begin(), sup.end(), [&](int32_t a, int32_t b) { return p[a] / q[a] < p[b] / q[b]; });
            const R::Grid gr = grid_of(q, n);
            const std::size_t ks = sup.size() * 3 / 4;
            std::vector<int32_t> toks(sup.begin() + static_cast<std::ptrdiff_t>(ks), sup.end());
            R::Pair env;
            env.unit(n, gr.G);
            std::vector<double> e(gr.G), b(gr.G);
            for (std::size_t i = 0; i < ks; ++i) {
                gr.factors(q[sup[i]], e.data(), b.data());
                env.add(e.data(), b.data(), 1.0, q[sup[i]]);
            }
            bool same = false;
            const double d = outer_passes_differ(gr, p, q, toks, env, 0.0, &same);
            CHECK_MSG(same, "the rho orders differ");
            CHECK_MSG(d <= 1e-12, "relative difference of w %.3g", d);
            worst = std::max(worst, d);
            // negative control: the same comparison with the laid half left at 1e-2 by division
            const double c = outer_passes_differ(gr, p, q, toks, env, 1e-2, &same);
            CHECK_MSG(c > 1e-10, "the control went unnoticed: %.3g", c);
            control = std::min(control, c);
        }
    }
    std::printf("  outer passes by division vs pass: max relative dw = %.2g (control: >= %.2g)\n", worst, control);
}

static void test_product_by_moments(Gen& g) {
    double worst = 0.0;
    for (int64_t V : {2000, 40000}) {
        for (int n : {2, 3, 5, 8}) {
            check::context("product_by_moments: V = %lld, n = %d", static_cast<long long>(V), n);
            Vec p, q;
            cases::llm_rows(g, V, p, q);
            const R::Grid gr = grid_of(q, n);
            const double qcut = R::small_cut(gr);
            std::vector<int32_t> small;
            double qs = 0.0;
            for (int32_t y = 0; y < V; ++y)
                if (q[y] > 0.0 && q[y] <= qcut) {
                    small.push_back(y);
                    qs = std::max(qs, q[y]);
                }
            CHECK(small.size() > static_cast<std::size_t>(V / 2));
            R::Pair pm;
            const bool ok = R::product_by_moments(gr, q.data(), small, qs, pm);
            CHECK(ok);
            if (!ok) continue;
            R::Pair pf;
            pf.unit(n, gr.G);
            std::vector<double> e(gr.G), b(gr.G);
            for (int32_t y : small) {
                gr.factors(q[y], e.data(), b.data());
                pf.add(e.data(), b.data(), 1.0, q[y]);
            }
            // per node g and coefficient c, relative to the largest |coefficient| of that node
            double err = 0.0;
            for (int64_t gg = 0; gg < gr.G; ++gg) {
                double scale_p = 0.0, scale_d = 0.0;
                for (int c = 0; c < n; ++c) {
                    scale_p = std::max(scale_p, std::fabs(pf.Pi[c * gr.G + gg]));
                    scale_d = std::max(scale_d, std::fabs(pf.D[c * gr.G + gg]));
                }
                for (int c = 0; c < n; ++c) {
                    const std::size_t o = static_cast<std::size_t>(c) * gr.G + gg;
                    if (scale_p > 0.0) err = std::max(err, std::fabs(pm.Pi[o] - pf.Pi[o]) / scale_p);
                    if (scale_d > 0.0) err = std::max(err, std::fabs(pm.D[o] - pf.D[o]) / scale_d);
                }
            }
            CHECK_MSG(err <= 1e-12, "max relative difference %.3g", err);
            worst = std::max(worst, err);
        }
    }
    std::printf("  product_by_moments vs factor product: max relative difference %.2g\n", worst);
    // refused where its series would need more terms
    Vec q(50, 0.02);
    const R::Grid gr = grid_of(q, 9);
    R::Pair out;
    CHECK(!R::product_by_moments(gr, q.data(), support_tokens(q), 0.02, out));
}

// power_sums (four tokens a step) against one token at a time, bit for bit: token counts not
// divisible by 4, a token at the largest q (r = 1: every power), and tiny ratios whose powers
// fall to 1e-300 after one or two products (tokens done at different m within a step).
static void test_power_sums(Gen& g) {
    constexpr int M = R::kMoments;
    for (int it = 0; it < 200; ++it) {
        const int64_t k = g.integer(0, 41);
        check::context("power_sums: %lld tokens, case %d", static_cast<long long>(k), it);
        Vec q(static_cast<std::size_t>(k) + 1);
        std::vector<int32_t> toks;
        for (int64_t i = 0; i < k; ++i) {
            const double u = g.uniform();
            q[i] = u < 0.1   ? 1e-200 * g.uniform(0.5, 1.0)
                   : u < 0.2 ? 1e-120
                             : std::ldexp(g.uniform(0.5, 1.0), -static_cast<int>(g.integer(1, 40)));
            toks.push_back(static_cast<int32_t>(i));
        }
        double qs = 1e-300;
        for (double x : q) qs = std::max(qs, x);
        if (k > 0 && g.uniform() < 0.5) q[toks[g.integer(0, k - 1)]] = qs;  // r = 1
        double want[M + 2] = {0.0}, got[M + 2] = {0.0};
        for (int32_t y : toks) {
            const double r = q[y] / qs;
            double pw = r;
            for (int m = 1; m <= M + 1 && pw > 1e-300; ++m) {
                want[m] += pw;
                pw *= r;
            }
        }
        R::power_sums(q.data(), toks, qs, got);
        bool same = true;
        for (int m = 0; m <= M + 1; ++m) same = same && std::memcmp(&got[m], &want[m], sizeof(double)) == 0;
        CHECK(same);
    }
}

static void test_loo_weights(Gen& g) {
    double worst = 0.0;
    for (int64_t V : {1000, 20000}) {
        for (int n : {2, 4, 8}) {
            check::context("loo_weights: V = %lld, n = %d", static_cast<long long>(V), n);
            Vec p, q;
            cases::llm_rows(g, V, p, q);
            const R::Grid gr = grid_of(q, n);
            const std::vector<int32_t> toks = support_tokens(q);
            R::Pair base;
            base.unit(n, gr.G);
            std::vector<double> wl;
            R::loo_weights(gr, q.data(), toks, base, wl);
            const Vec wp = race_weights(q, Vec(V, 1.0), n);
            double err = 0.0;
            for (std::size_t i = 0; i < toks.size(); ++i)
                err = std::max(err, std::fabs(wl[i] - wp[toks[i]]) / wp[toks[i]]);
            CHECK_MSG(err <= 1e-12, "max relative |w_loo - w_pass| = %.3g", err);
            worst = std::max(worst, err);
        }
    }
    std::printf("  loo_weights vs pass at h = 1: max relative difference %.2g\n", worst);
}

static void test_grid(Gen& g) {
    // sum_g wt_g f(t_g) = int_0^inf f(t) dt for Erlang densities f(t) = lam (lam t)^k e^{-lam t} / k!,
    // k < n, at rates between the (n+1)-th largest mass and the total (where the plans use it)
    for (int it = 0; it < 12; ++it) {
        const int64_t V = g.integer(20, 3000);
        const int n = static_cast<int>(g.integer(1, 12));
        Vec p, q;
        cases::llm_rows(g, V, p, q);
        const R::Grid gr = grid_of(q, n);
        check::context("grid case %d: V = %lld, n = %d, G = %lld", it, static_cast<long long>(V), n,
                       static_cast<long long>(gr.G));
        CHECK(std::is_sorted(gr.t.begin(), gr.t.end()));
        CHECK_EQ(gr.t.size(), static_cast<std::size_t>(gr.G));
        std::vector<double> qs(q);
        std::sort(qs.begin(), qs.end(), std::greater<double>());
        const double lo = qs[std::min<int64_t>(n, V - 1)], hi = 1.0;
        for (int j = 0; j <= 8; ++j) {
            const double lam = lo * std::pow(hi / lo, j / 8.0);
            for (int k = 0; k < n; ++k) {
                long double s = 0.0L;
                for (int64_t gg = 0; gg < gr.G; ++gg) {
                    const double x = lam * gr.t[gg];
                    s += gr.wt[gg] * lam * std::exp(k * std::log(x) - x - std::lgamma(k + 1.0));
                }
                CHECK_MSG(std::fabs(static_cast<double>(s) - 1.0) <= 1e-12, "lam = %.3g, k = %d: integral %.17g", lam,
                          k, static_cast<double>(s));
            }
        }
        // factors: e_g = exp(-x t_g), b_g = 1 - e_g (doubling chain against libm)
        std::vector<double> e(gr.G), b(gr.G);
        for (double x : {qs[0], qs[V / 10], qs[V - 1], 1e-9, 0.3}) {
            gr.factors(x, e.data(), b.data());
            double eb = 0.0, ee = 0.0;
            for (int64_t gg = 0; gg < gr.G; ++gg) {
                const double y = x * gr.t[gg];
                const double bw = -std::expm1(-y), ew = std::exp(-y);
                eb = std::max(eb, std::fabs(b[gg] - bw) / bw);
                ee = std::max(ee, std::fabs(e[gg] - ew) / (ew * std::max(1.0, y)) * (ew > 1e-300));
            }
            CHECK_MSG(eb <= 1e-13, "x = %.3g: max relative error of b = %.3g", x, eb);
            CHECK_MSG(ee <= 1e-13, "x = %.3g: max relative error of e / max(1, x t) = %.3g", x, ee);
        }
    }
}

int main() {
    Gen g(20261130);
    test_weights_match_enumeration(g);
    test_weights_sum_to_n(g);
    test_greedy_pass_matches_enumeration(g);
    test_division_equals_checkpointed_pass(g);
    test_outer_passes_by_division(g);
    test_product_by_moments(g);
    test_power_sums(g);
    test_loo_weights(g);
    test_grid(g);
    return check::summary("test_race");
}
