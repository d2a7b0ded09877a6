// The row's beta cache (race/beta_cache.hpp, session 18), in C++: the passes the wor route runs
// (pass_div, race::pass with and without h0 and `ex`, suffix_checks), in turn on LLM-like rows, give
// the same bits with the cache (first filled, then read, and with a budget of a few rows) as
// without it. Negative controls: a cache bound on another grid is refused; a stale cache (another
// row's masses under the same token ids, same grid) and one cached row off by 1e-12 are caught by the
// same comparison.
#include "mdsd/race/beta_cache.hpp"
#include "mdsd/race/grid.hpp"
#include "mdsd/race/pair.hpp"
#include "mdsd/race/pass.hpp"
namespace R = mdsd::race;

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "race_grid.hpp"

using cases::Gen;
using cases::Vec;

struct Row {
    Vec p, q;
    R::Grid gr;
    std::vector<int32_t> toks;  // the small tail and a few big tokens, in random order
    R::Pair env;                // the largest masses at weight 1
};

static Row make_row(Gen& g, int64_t V, int n, bool ties) {
    Row r;
    cases::llm_rows(g, V, r.p, r.q);
    if (ties) cases::add_zeros_and_ties(g, r.p, r.q);
    r.gr = grid_of(r.q, n);
    std::vector<int64_t> ord(V);
    for (int64_t i = 0; i < V; ++i) ord[i] = i;
    std::sort(ord.begin(), ord.end(), [&](int64_t a, int64_t b) { return r.q[a] > r.q[b]; });
    std::vector<int32_t> rest;
    for (int64_t k = 0; k < V; ++k) {
        if (!(r.q[ord[k]] > 0.0)) continue;
        (k < n + 2 && k % 2 == 0 ? rest : r.toks).push_back(static_cast<int32_t>(ord[k]));
    }
    const std::vector<int32_t> sorted = r.toks;
    const std::vector<int64_t> perm =
        g.choose(static_cast<int64_t>(sorted.size()), static_cast<int64_t>(sorted.size()));
    for (std::size_t i = 0; i < sorted.size(); ++i) r.toks[i] = sorted[perm[i]];
    r.env.unit(n, r.gr.G);
    std::vector<double> e(r.gr.G), b(r.gr.G);
    for (int32_t y : rest) {
        r.gr.factors(r.q[y], e.data(), b.data());
        r.env.add(e.data(), b.data(), 1.0, r.q[y]);
    }
    return r;
}

// Every output of the passes, in the order the route would run them on one row.
static std::vector<double> run_passes(const Row& r, const R::Grid& gr) {
    const int n = gr.n;
    const int64_t k = static_cast<int64_t>(r.toks.size());
    std::vector<double> out, w, h(k, 1.0);
    auto greedy = [&](int64_t i, double wi) {  // laid until p is won
        const double d = wi > 0.0 ? r.p[r.toks[i]] / wi : 0.0;
        return h[i] = d >= 1.0 ? 0.0 : 1.0 - d;
    };
    if (R::pass_div(gr, r.q.data(), r.toks, r.env, greedy, w)) out.insert(out.end(), w.begin(), w.end());
    out.insert(out.end(), h.begin(), h.end());
    R::pass(gr, r.q.data(), r.toks, r.env, greedy, w);
    out.insert(out.end(), w.begin(), w.end());
    std::vector<double> h0(k);
    for (int64_t i = 0; i < k; ++i) h0[i] = i % 5 == 0 ? 0.0 : 0.5 + 0.5 * h[i];
    R::pass(gr, r.q.data(), r.toks, r.env, [](int64_t, double) { return 0.0; }, w, h0.data());
    out.insert(out.end(), w.begin(), w.end());
    if (n >= 2) {
        R::Pair ex = r.env;
        ex.scale(std::vector<double>(gr.G, 0.5).data());
        R::pass(
            gr, r.q.data(), r.toks, r.env,
            [&](int64_t i, double wi, double E) {
                out.push_back(E);
                return greedy(i, wi);
            },
            w, nullptr, &ex);
        out.insert(out.end(), w.begin(), w.end());
    }
    const R::Checks ck = R::suffix_checks(gr, r.q.data(), r.toks, h0.data());
    out.insert(out.end(), ck.v.begin(), ck.v.end());
    return out;
}

static bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
    return true;
}

static void test_same_bits(Gen& g) {
    int cases_run = 0, stale_caught = 0, ulp_caught = 0;
    for (int it = 0; it < 10; ++it) {
        const int n = it < 8 ? std::vector<int>{2, 3, 4, 8}[it % 4] : static_cast<int>(g.integer(5, 9));
        const int64_t V = g.integer(600, 3000);
        const Row r = make_row(g, V, n, it % 2 == 1);
        check::context("beta cache case %d: V = %lld, n = %d, k = %zu", it, static_cast<long long>(V), n,
                       r.toks.size());
        const std::vector<double> ref = run_passes(r, r.gr);
        R::BetaCache bc;
        R::Grid gc = r.gr;
        bc.bind(gc, V);
        gc.beta_cache = &bc;
        CHECK(same_bits(run_passes(r, gc), ref));  // fills the rows
        CHECK_MSG(bc.used > 0, "no row cached");
        CHECK(same_bits(run_passes(r, gc), ref));  // reads them
        R::BetaCache small_bc;                      // a budget of 5 rows: the rest recomputed
        R::Grid gs = r.gr;
        small_bc.bind(gs, V, 5 * sizeof(double) * static_cast<std::size_t>(gs.G));
        gs.beta_cache = &small_bc;
        CHECK(same_bits(run_passes(r, gs), ref));
        CHECK(same_bits(run_passes(r, gs), ref));
        CHECK_EQ(small_bc.used, 5);
        // Negative control 1: a cache bound on another grid is refused (q with its largest mass halved:
        // another q(supp), so other nodes; n alone does not move them, and betas do not depend on n).
        Vec q_other = r.q;
        *std::max_element(q_other.begin(), q_other.end()) *= 0.5;
        R::BetaCache other;
        other.bind(grid_of(q_other, n), V);
        CHECK(!other.matches(r.gr));
        R::Grid go = r.gr;
        go.beta_cache = &other;
        CHECK_THROWS(run_passes(r, go), std::logic_error);
        // Negative control 2: another row's masses under the same ids (two small tokens swapped:
        // the same grid) in a cache not bound afresh -- what prepare's reset() prevents.
        Row r2 = r;
        int32_t a = -1, b = -1;
        for (int32_t y : r.toks)
            if (r.q[y] <= R::small_cut(r.gr) && r.q[y] > 0.0) {
                if (a < 0) a = y;
                else if (r.q[y] != r.q[a]) {
                    b = y;
                    break;
                }
            }
        if (b >= 0) {
            std::swap(r2.q[a], r2.q[b]);
            std::swap(r2.p[a], r2.p[b]);
            const std::vector<double> ref2 = run_passes(r2, r2.gr);
            R::Grid g2 = r2.gr;
            CHECK(bc.matches(g2));
            g2.beta_cache = &bc;  // still holding row r's rows
            const bool caught = !same_bits(run_passes(r2, g2), ref2);
            CHECK_MSG(caught, "a stale cache went unnoticed");
            stale_caught += caught;
        }
        // Negative control 3: one cached row off by 1e-12 relative (a single ulp at one node can round
        // away in every output).
        {
            double* x = &bc.rows[static_cast<std::size_t>(bc.used / 2) * bc.G];
            for (int64_t gi = 0; gi < bc.G; ++gi) x[gi] *= 1.0 + 1e-12;
            const bool caught = !same_bits(run_passes(r, gc), ref);
            CHECK_MSG(caught, "a 1e-12 change of a cached row went unnoticed");
            ulp_caught += caught;
        }
        ++cases_run;
    }
    std::printf(
        "  %d rows: same bits cached (filled, read, 5-row budget) and uncached; negative controls caught: "
        "other grid refused on all, stale rows %d, 1e-12 row %d\n",
        cases_run, stale_caught, ulp_caught);
}

int main() {
    Gen g(20261218);
    test_same_bits(g);
    return check::summary("test_race_beta_cache");
}
