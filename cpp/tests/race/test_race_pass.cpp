// The checkpointed pass without e (docs/theory/race_oracle.md §14.4, "Without e"), in C++:
//   * mul_unit (generic and the fixed-n sweeps) bit for bit against mul_factor with e = 1,
//     node by node, at every n, weights 0 / 1 / in between, in place and not;
//   * race::pass against the form with every token's e (pass_with_e.hpp, the reference): the same
//     w, E and laid weights to rounding, on LLM-like rows with zeros and tied ratios, with and
//     without h0 and `ex`.
#include "mdsd/race/grid.hpp"
#include "mdsd/race/moments.hpp"
#include "mdsd/race/pair.hpp"
#include "mdsd/race/pass.hpp"
namespace R = mdsd::race;

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "pass_with_e.hpp"
#include "race_grid.hpp"

using cases::Gen;
using cases::Vec;

// mul_factor's formula node at a time, for the check below (its sweep runs two nodes a step).
static void ref_mul_factor(int n, int64_t G, std::vector<double>& P, std::vector<double>& D,
                           const std::vector<double>& e, const std::vector<double>& b, double h, double q) {
    for (int64_t g = 0; g < G; ++g)
        for (int c = n - 1; c >= 0; --c) {
            const std::size_t o = static_cast<std::size_t>(c) * G + g;
            double dn = D[o] * e[g] + h * q * e[g] * P[o];
            double pn = P[o] * e[g];
            if (c && h != 0.0) {
                dn += D[o - G] * h * b[g];
                pn += P[o - G] * h * b[g];
            }
            D[o] = dn;
            P[o] = pn;
        }
}

static void test_mul_factor(Gen& g) {
    for (int n = 1; n <= 9; ++n)
        for (const int64_t G :
             {4 * g.integer(5, 20), 4 * g.integer(5, 20) + 1, 4 * g.integer(5, 20) + 2, 4 * g.integer(5, 20) + 3})
            for (double h : {0.0, 1.0, g.uniform(), 1e-300}) {
                check::context("mul_factor: n = %d, G = %lld, h = %.3g", n, static_cast<long long>(G), h);
                std::vector<double> sP(n * G), sD(n * G), e(G), b(G);
                for (auto* v : {&sP, &sD, &e, &b})
                    for (double& x : *v) x = g.uniform();
                const double q = g.uniform() * 1e-3;
                std::vector<double> rP(sP), rD(sD), aP(sP), aD(sD), cP(n * G), cD(n * G);
                ref_mul_factor(n, G, rP, rD, e, b, h, q);
                R::mul_factor(n, G, aP.data(), aD.data(), aP.data(), aD.data(), e.data(), b.data(), h, q);  // in place
                CHECK(aP == rP && aD == rD);
                R::mul_factor(n, G, sP.data(), sD.data(), cP.data(), cD.data(), e.data(), b.data(), h, q);
                CHECK(cP == rP && cD == rD);
            }
}

// pass_div's fixed-n update (unlay_unit_n, two nodes a step) against unlay_update_t<true>, bit for bit.
static void test_unlay_unit(Gen& g) {
    for (int n : {2, 3, 4, 8})
        for (const int64_t G :
             {4 * g.integer(5, 20), 4 * g.integer(5, 20) + 1, 4 * g.integer(5, 20) + 2, 4 * g.integer(5, 20) + 3}) {
            check::context("unlay_unit_n: n = %d, G = %lld", n, static_cast<long long>(G));
            std::vector<double> P(n * G), D(n * G), QP(n * G), QD(n * G), b(G);
            for (auto* v : {&P, &D, &QP, &QD, &b})
                for (double& x : *v) x = g.uniform();
            const double q = g.uniform() * 1e-3, u = g.uniform();
            std::vector<double> P1(P), D1(D), P2(P), D2(D);
            R::unlay_update_t<true>(n, G, P1.data(), D1.data(), QP.data(), QD.data(), nullptr, b.data(), q, u);
            auto fixed = n == 2   ? R::unlay_unit_n<2>
                         : n == 3 ? R::unlay_unit_n<3>
                         : n == 4 ? R::unlay_unit_n<4>
                                  : R::unlay_unit_n<8>;
            fixed(G, P2.data(), D2.data(), QP.data(), QD.data(), b.data(), q, u);
            CHECK(P1 == P2 && D1 == D2);
        }
}

static void test_mul_unit(Gen& g) {
    for (int n = 1; n <= 9; ++n)
        for (const int64_t G : {4 * g.integer(5, 20), 4 * g.integer(5, 20) + 1, 4 * g.integer(5, 20) + 2,
                                4 * g.integer(5, 20) + 3}) {  // every residue mod 4: the AVX2 and SSE2 steps' tails
            std::vector<double> sP(n * G), sD(n * G), beta(G), one(G, 1.0);
            for (double& x : sP) x = g.uniform();
            for (double& x : sD) x = g.uniform();
            for (double& x : beta) x = g.uniform();
            for (double h : {0.0, 1.0, g.uniform(), 1e-300}) {
                const double q = g.uniform() * 1e-3;
                check::context("mul_unit: n = %d, G = %lld, h = %.3g", n, static_cast<long long>(G), h);
                std::vector<double> aP(n * G), aD(n * G), bP(sP), bD(sD);
                R::mul_factor(n, G, sP.data(), sD.data(), aP.data(), aD.data(), one.data(), beta.data(), h, q);
                R::mul_unit(n, G, bP.data(), bD.data(), bP.data(), bD.data(), beta.data(), h, q);  // in place
                CHECK(aP == bP && aD == bD);
                std::vector<double> cP(n * G), cD(n * G);
                R::mul_unit(n, G, sP.data(), sD.data(), cP.data(), cD.data(), beta.data(), h, q);
                CHECK(aP == cP && aD == cD);
            }
        }
}

static double rel(double a, double b) { return std::fabs(a - b) / std::max({std::fabs(a), std::fabs(b), 1e-300}); }

// race::pass and the reference pass_e on the same row and rule; returns the largest relative difference of w (and E).
static double compare_pass(const R::Grid& gr, const Vec& p, const Vec& q, const std::vector<int32_t>& toks,
                           const R::Pair& env, const std::vector<double>& h0, bool with_ex) {
    const int n = gr.n;
    const int64_t k = static_cast<int64_t>(toks.size());
    std::vector<double> w[2], E[2], hs[2];
    R::Pair ex = env;
    ex.scale(std::vector<double>(gr.G, 0.5).data());
    for (int form = 0; form < 2; ++form) {
        hs[form].assign(k, 1.0);
        E[form].assign(k, 0.0);
        // lay: until p is won, a zero weight for every 7th token (ties and zeros enter via the row)
        auto rule = [&](int64_t i, double wi) {
            if (i % 7 == 3) return hs[form][i] = 0.0;
            const double d = wi > 0.0 ? p[toks[i]] / wi : 0.0;
            return hs[form][i] = d >= 1.0 ? 0.0 : 1.0 - d;
        };
        auto with_e = [&](int64_t i, double wi, double e) {
            E[form][i] = e;
            return rule(i, wi);
        };
        const double* h0p = h0.empty() ? nullptr : h0.data();
        if (form == 0 && with_ex) R::pass(gr, q.data(), toks, env, with_e, w[form], h0p, &ex);
        else if (form == 0) R::pass(gr, q.data(), toks, env, rule, w[form], h0p);
        else if (with_ex) pass_with_e::pass_e(gr, q.data(), toks, env, with_e, w[form], h0p, &ex);
        else pass_with_e::pass_e(gr, q.data(), toks, env, rule, w[form], h0p);
    }
    double worst = 0.0;
    for (int64_t i = 0; i < k; ++i) {
        worst = std::max({worst, rel(w[0][i], w[1][i]), rel(E[0][i], E[1][i])});
        CHECK_MSG(std::fabs(hs[0][i] - hs[1][i]) <= 1e-11, "n = %d, token %lld: laid weight %.17g vs %.17g", n,
                  static_cast<long long>(i), hs[0][i], hs[1][i]);
    }
    return worst;
}

static void test_pass_forms(Gen& g) {
    double worst = 0.0;
    for (int it = 0; it < 16; ++it) {
        const int64_t V = g.integer(200, 1500);
        const int n = static_cast<int>(g.integer(1, 9));
        Vec p, q;
        cases::llm_rows(g, V, p, q);
        if (it % 2) cases::add_zeros_and_ties(g, p, q);
        const R::Grid gr = grid_of(q, n);
        std::vector<int32_t> toks, rest;  // toks: the tail of q (mostly small tokens) and a few big ones
        std::vector<int64_t> ord(V);
        for (int64_t i = 0; i < V; ++i) ord[i] = i;
        std::sort(ord.begin(), ord.end(), [&](int64_t a, int64_t b) { return q[a] > q[b]; });
        for (int64_t r = 0; r < V; ++r) {
            if (!(q[ord[r]] > 0.0)) continue;
            (r < n + 2 && r % 2 == 0 ? rest : toks).push_back(static_cast<int32_t>(ord[r]));
        }
        const std::vector<int32_t> sorted = toks;  // a random order of them
        const std::vector<int64_t> perm =
            g.choose(static_cast<int64_t>(toks.size()), static_cast<int64_t>(toks.size()));
        for (std::size_t i = 0; i < toks.size(); ++i) toks[i] = sorted[perm[i]];
        R::Pair env;
        env.unit(n, gr.G);
        std::vector<double> e(gr.G), b(gr.G);
        for (int32_t y : rest) {
            gr.factors(q[y], e.data(), b.data());
            env.add(e.data(), b.data(), 1.0, q[y]);
        }
        std::vector<double> h0;
        if (it % 3 == 1)
            for (std::size_t i = 0; i < toks.size(); ++i) h0.push_back(i % 5 == 0 ? 0.0 : g.uniform());
        check::context("pass forms case %d: V = %lld, n = %d, k = %zu", it, static_cast<long long>(V), n, toks.size());
        for (bool with_ex : {false, true}) {
            if (with_ex && n < 2) continue;
            const double d = compare_pass(gr, p, q, toks, env, h0, with_ex);
            CHECK_MSG(d <= 1e-12, "pass vs pass_e: relative difference %.3g", d);
            worst = std::max(worst, d);
        }
    }
    std::printf("  pass without e vs pass_e: max relative difference of w and E %.2g\n", worst);
}

int main() {
    Gen g(20261214);
    test_mul_factor(g);
    test_mul_unit(g);
    test_unlay_unit(g);
    test_pass_forms(g);
    return check::summary("test_race_pass");
}
