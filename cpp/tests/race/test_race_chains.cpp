// The doubling chains and the w integral of the race oracle (docs/theory/race_oracle.md §14.3-§14.4), in C++:
//   * factor_chain (one chain per residue class) bit for bit against node-by-node doubling;
//   * Grid::betas (beta = e^{x t} - 1, the factors of race::pass_div) against libm's expm1;
//   * w_raw (summed in node blocks) bit for bit against a node-at-a-time sum, and pass_div's fused
//     sweep (div_w_unit) against the division and w_raw it replaces.
#include "mdsd/race/grid.hpp"
#include "mdsd/race/moments.hpp"
#include "mdsd/race/pair.hpp"
namespace R = mdsd::race;

#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "race_grid.hpp"

using cases::Gen;
using cases::Vec;

// The w integral one node at a time, each node's sums in coefficient order (w_raw_wt's reference).
static double node_by_node_w(int n, int64_t G, const std::vector<double>& wt, const std::vector<double>& aP,
                             const std::vector<double>& aD, const std::vector<double>& bP,
                             const std::vector<double>& bD, const std::vector<double>& e, const std::vector<double>& b,
                             double qy) {
    double acc = 0.0;
    for (int64_t gg = 0; gg < G; ++gg) {
        double pi = 0.0, d = 0.0;
        for (int i = 0; i < n; ++i) {
            pi += aP[i * G + gg] * bP[(n - 1 - i) * G + gg];
            if (i <= n - 2) d += aD[i * G + gg] * bP[(n - 2 - i) * G + gg] + aP[i * G + gg] * bD[(n - 2 - i) * G + gg];
        }
        acc += wt[gg] * (qy * e[gg] * pi + b[gg] * d);
    }
    return acc;
}

// factor_chain ran node by node before it carried one chain per residue class, and w_raw summed
// node at a time before it summed in blocks: the same bits either way.
static void test_chains_and_w(Gen& g) {
    double worst_beta = 0.0;
    for (int it = 0; it < 12; ++it) {
        const int64_t V = g.integer(20, 3000);
        const int n = static_cast<int>(g.integer(1, 9));
        Vec p, q;
        cases::llm_rows(g, V, p, q);
        const R::Grid gr = grid_of(q, n);
        const int64_t G = gr.G;
        check::context("chains case %d: V = %lld, n = %d, G = %lld", it, static_cast<long long>(V), n,
                       static_cast<long long>(G));
        std::vector<double> qs(q);
        std::sort(qs.begin(), qs.end(), std::greater<double>());
        const double qcut = R::small_cut(gr);
        std::vector<double> e(G), b(G), er(G), br(G), beta(G);
        for (double x : {qs[0], qs[V / 10], qs[V - 1], 1e-9, 0.3, qcut, qcut / 3, 1e-300}) {
            gr.factors(x, e.data(), b.data());
            gr.factors(x, er.data(), br.data());  // the direct nodes (as factor_chain counts them);
            int64_t nd = 0;                        // the rest again node by node
            while (nd < G && x * gr.t[nd] < R::kChainStart) ++nd;
            nd = std::min<int64_t>(std::max<int64_t>(gr.g0 + gr.M, nd + gr.M), G);
            for (int64_t gg = nd; gg < G; ++gg) {
                const double bb = br[gg - gr.M], ee = er[gg - gr.M];
                const double b2 = bb * (2.0 - bb), e2 = ee * ee;
                br[gg] = bb <= 0.5 ? b2 : 1.0 - e2;
                er[gg] = bb <= 0.5 ? 1.0 - b2 : e2;
            }
            CHECK_MSG(e == er && b == br, "x = %.3g: factor_chain differs from node-by-node doubling", x);
            gr.betas(x, beta.data());
            bool doubled = true;  // the doubled nodes node by node (beta_chain starts where factor_chain does)
            for (int64_t gg = nd; gg < G; ++gg)
                doubled = doubled && beta[gg] == beta[gg - gr.M] * (beta[gg - gr.M] + 2.0);
            CHECK_MSG(doubled, "x = %.3g: beta_chain differs from node-by-node doubling", x);
            for (int64_t gg = 0; gg < G; ++gg) {
                const double y = x * gr.t[gg];
                if (y > 700.0) continue;  // e^y overflows further up; pass_div uses beta <= 1 only
                const double want = std::expm1(y);
                // relative, and beyond y = 1 over y (as e: each doubling squares beta's error too)
                const double err =
                    (want > 0.0 ? std::fabs(beta[gg] - want) / want : std::fabs(beta[gg])) / std::max(1.0, y);
                if (x <= qcut) worst_beta = std::max(worst_beta, err);
                CHECK_MSG(err <= 1e-13, "x = %.3g, t = %.3g: beta relative error / max(1, y) %.3g", x, gr.t[gg], err);
            }
        }
        // w_raw against the node-at-a-time sum, on random pairs
        std::vector<double> aP(n * G), aD(n * G), bP(n * G), bD(n * G);
        for (auto* v : {&aP, &aD, &bP, &bD})
            for (double& x : *v) x = g.uniform();
        gr.factors(qs[V / 10], e.data(), b.data());
        const double acc = node_by_node_w(n, G, gr.wt, aP, aD, bP, bD, e, b, qs[V / 10]);
        const double got = R::w_raw(gr, aP.data(), aD.data(), bP.data(), bD.data(), e.data(), b.data(), qs[V / 10]);
        CHECK_MSG(got == acc, "w_raw %.17g, node by node %.17g", got, acc);
        // pass_div's fused sweep (div_w_unit) against the two calls it replaces, on G nodes and on
        // G - 1 (rows G - 1 apart): an odd count leaves a node after the two-node steps.
        if (n == 2 || n == 3 || n == 4 || n == 8) {
            const double x = qcut / 2;
            gr.betas(x, beta.data());
            for (const int64_t Gs : {G, G - 1}) {
                std::vector<double> one(G, 1.0), Q1P(n * G), Q1D(n * G), Q2P(n * G), Q2D(n * G);
                R::div_factor_t<true>(n, Gs, aP.data(), aD.data(), Q1P.data(), Q1D.data(), nullptr, beta.data(),
                                      nullptr, x);
                const double w1 = R::w_raw_wt(n, Gs, gr.wt.data(), Q1P.data(), Q1D.data(), bP.data(), bD.data(),
                                              one.data(), beta.data(), x);
                auto fused = n == 2   ? R::div_w_unit<2>
                             : n == 3 ? R::div_w_unit<3>
                             : n == 4 ? R::div_w_unit<4>
                                      : R::div_w_unit<8>;
                const double w2 = fused(Gs, aP.data(), aD.data(), Q2P.data(), Q2D.data(), bP.data(), bD.data(),
                                        beta.data(), gr.wt.data(), x);
                CHECK_MSG(w1 == w2, "G = %lld: div_w_unit %.17g, div_factor_t + w_raw %.17g",
                          static_cast<long long>(Gs), w2, w1);
                CHECK(Q1P == Q2P);
                bool same_d = true;  // D's top row is not kept by either
                for (int64_t j = 0; j < static_cast<int64_t>(n - 1) * Gs; ++j) same_d = same_d && Q1D[j] == Q2D[j];
                CHECK(same_d);
            }
        }
    }
    std::printf("  beta chain vs expm1 at small masses: max relative error %.2g\n", worst_beta);
}

// The grid's series as they were written before exp_series (one call, its own number of terms).
static double ref_series(double y, int sign) {
    constexpr double inv[12] = {0.0,     1.0,     1.0 / 2, 1.0 / 3, 1.0 / 4,  1.0 / 5,
                                1.0 / 6, 1.0 / 7, 1.0 / 8, 1.0 / 9, 1.0 / 10, 1.0 / 11};
    const int top = y <= 0x1p-22 ? 3 : y <= 0x1p-11 ? 5 : y <= 0x1p-6 ? 8 : sign < 0 ? 10 : 11;
    double s = 1.0;
    for (int m = top; m >= 2; --m) s = sign < 0 ? 1.0 - s * y * inv[m] : 1.0 + s * y * inv[m];
    return y * s;
}

// exp_series on one node and on two (lanes with different numbers of terms), at and around the
// thresholds of the term count, against ref_series; and factor_chain's / beta_chain's direct nodes.
static void test_series(Gen& g) {
    check::context("exp_series");
    std::vector<double> ys = {0.0, 0x1p-1074, 1e-300, 0x1p-22, 0x1p-11, 0x1p-6, 0.125};
    for (double y : {0x1p-22, 0x1p-11, 0x1p-6, 0.125}) {
        ys.push_back(std::nextafter(y, 0.0));
        ys.push_back(std::nextafter(y, 1.0));
    }
    for (int i = 0; i < 400; ++i) ys.push_back(std::ldexp(g.uniform(0.5, 1.0), -static_cast<int>(g.integer(3, 40))));
    int64_t bad = 0;
    for (double a : ys)
        for (double b : {ys[g.integer(0, static_cast<int64_t>(ys.size()) - 1)], a}) {
            double one[2], two[2];
            one[0] = R::exp_series<-1>(a);
            one[1] = R::exp_series<+1>(b);
            bad += one[0] != ref_series(a, -1) || one[1] != ref_series(b, +1);
#ifdef MDSD_SSE2
            const mdsd::D2 y{_mm_set_pd(b, a)};  // lanes (a, b)
            mdsd::lane_store(two, R::exp_series<-1>(y));
            bad += two[0] != ref_series(a, -1) || two[1] != ref_series(b, -1);
            mdsd::lane_store(two, R::exp_series<+1>(y));
            bad += two[0] != ref_series(a, +1) || two[1] != ref_series(b, +1);
#endif
        }
    CHECK_MSG(bad == 0, "%lld series values differ from the one-call form", static_cast<long long>(bad));
    Vec p, q;
    cases::llm_rows(g, 3000, p, q);
    for (int n : {2, 4, 8}) {
        check::context("direct nodes: n = %d", n);
        const R::Grid gr = grid_of(q, n);
        std::vector<double> e(gr.G), b(gr.G), beta(gr.G);
        int64_t wrong = 0;
        for (double x : {1e-9, 1e-6, 1e-4, 1e-2, 0.3}) {
            gr.factors(x, e.data(), b.data());
            gr.betas(x, beta.data());
            for (int64_t gg = 0; gg < gr.g0 + gr.M && gg < gr.G; ++gg) {
                const double y = x * gr.t[gg];
                if (y > R::kSeriesMaxArg || y < R::kChainStart) continue;
                wrong +=
                    b[gg] != ref_series(y, -1) || e[gg] != 1.0 - ref_series(y, -1) || beta[gg] != ref_series(y, +1);
            }
        }
        CHECK_MSG(wrong == 0, "n = %d: %lld direct nodes differ from the one-call series", n,
                  static_cast<long long>(wrong));
    }
}

// w_raw_wt for every n (the fixed-n sweeps and the blocks) and node counts of every residue mod 4
// (the AVX2 and SSE2 steps' tails), against the node-at-a-time sum, bit for bit.
static void test_w_raw_every_n(Gen& g) {
    for (int n = 1; n <= 9; ++n)
        for (const int64_t G :
             {4 * g.integer(10, 75), 4 * g.integer(10, 75) + 1, 4 * g.integer(10, 75) + 2, 4 * g.integer(10, 75) + 3}) {
            check::context("w_raw_wt: n = %d, G = %lld", n, static_cast<long long>(G));
            std::vector<double> aP(n * G), aD(n * G), bP(n * G), bD(n * G), wt(G), e(G), b(G);
            for (auto* v : {&aP, &aD, &bP, &bD, &wt, &e, &b})
                for (double& x : *v) x = g.uniform();
            const double qy = g.uniform() * 1e-2;
            const double acc = node_by_node_w(n, G, wt, aP, aD, bP, bD, e, b, qy);
            const double got =
                R::w_raw_wt(n, G, wt.data(), aP.data(), aD.data(), bP.data(), bD.data(), e.data(), b.data(), qy);
            CHECK_MSG(got == acc, "w_raw_wt %.17g, node by node %.17g", got, acc);
        }
}

int main() {
    Gen g(20261202);
    test_chains_and_w(g);
    test_w_raw_every_n(g);
    test_series(g);
    return check::summary("test_race_chains");
}
