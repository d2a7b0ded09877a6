// The plan-free route for one tuple of the i.i.d. optimal verifier (optimal_iid/planless.hpp): given each
// tuple, its exact output law equals the plan route's (OptimalIid, every window cut) to 1e-12.
//
// Small cases enumerate every tuple; the law is also checked lossless on its own (sum over tuples
// of Pr[tuple] * law = p), which does not lean on the plan. Odd cases and every LLM-like tuple
// also run the bucketed levels. Cases 0-1 mod 4 and every LLM-like tuple take each system's
// drafts from one envelope pass (remaining_at), the others one pass per draft. LLM-like rows (V = 3000) check sampled
// tuples. The samplers, given the same seed, must give the same output on almost every draw (the
// same uniforms; only the ~1e-16 moves of piece ends can split them). Negative control: windows
// cut from the untouched levels (ignoring the tokens cut before) must change the law on a fair
// share of cases, so the comparison can fail. The engine case's sampler (the residual built on
// rejection only, a row's buffers reused) must give the plain sampler's output on every draw.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "mdsd/core/rng.hpp"
#include "mdsd/verifiers/optimal_iid/plan.hpp"
#include "mdsd/verifiers/optimal_iid/planless.hpp"

using cases::Gen;
using cases::Vec;
namespace vf = mdsd::verif;
namespace sw = mdsd::verif::shadow;

struct Laws {
    Vec plan, shadow;
};

static Laws laws(const vf::OptimalIid::Plan& pl, const sw::TupleRow& row, const vf::Categorical& pcat, sw::TupleRace& w,
                 const std::vector<int32_t>& t) {
    Laws L{Vec(pl.V, 0.0), Vec(pl.V, 0.0)};
    vf::LawVisitor a{L.plan.data(), pl.samplers()};
    vf::OptimalIid::walk(pl, t.data(), a);
    vf::LawVisitor b{L.shadow.data(), pcat};
    sw::walk(row, t.data(), w, b);
    return L;
}

static double maxdiff(const Vec& a, const Vec& b) {
    double d = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
    return d;
}

// How far the plan's own window can sit from the exact one, in law: its loads are differences of
// two rounded levels, b^n - a^n with b - a (a piece's width w) known only to ~1e-16, a relative
// error ~1e-16 / w (the envelope computes a window's load from its width: optimal_iid/remaining_levels.hpp).
static double plan_rounding(double w) { return 1e-12 + 1e-15 / w; }

// The narrowest piece the plan cut (tiny windows aside): the worst case of plan_rounding.
static double narrowest(const vf::OptimalIid::Plan& pl) {
    double w = 1.0;
    for (std::size_t e = 0; e < pl.plo.size(); ++e)
        if (pl.phi[e] - pl.plo[e] >= mdsd::verif::level::kTinyWindow) w = std::min(w, pl.phi[e] - pl.plo[e]);
    return w;
}

// Largest difference between two residuals' weights (unnormalised: the plan's ~1-ulp leftovers).
static double residual_distance(const vf::Categorical& a, const vf::Categorical& b, int64_t V) {
    Vec u(V, 0.0), v(V, 0.0);
    for (std::size_t j = 0; j < a.tok.size(); ++j) u[a.tok[j]] = a.weight(j);
    for (std::size_t j = 0; j < b.tok.size(); ++j) v[b.tok[j]] = b.weight(j);
    return maxdiff(u, v);
}

// The same between the residuals as sampled (normalised): where the residual mass is itself
// ~1e-13, the leftovers move the law given a rejecting tuple by this much.
static double norm_res_distance(const vf::Categorical& a, const vf::Categorical& b, int64_t V) {
    Vec u(V, 0.0), v(V, 0.0);
    if (!a.empty()) a.add_law(1.0, u.data());
    if (!b.empty()) b.add_law(1.0, v.data());
    return maxdiff(u, v);
}

int main() {
    Gen g(20261202);
    long cases_run = 0, moved = 0, draws = 0, same = 0, tiny_tuples = 0, rounded = 0, plain = 0;
    double worst = 0.0, worst_lossless = 0.0;
    sw::TupleRow reused;  // as the engine case keeps it, row after row (verifiers/planless/batch.hpp)
    for (int rep = 0; rep < 600; ++rep) {
        const int64_t V = 3 + rep % 6;
        const int n = 2 + rep % 3;
        Vec p, q;
        cases::random_case(g, V, p, q);
        const vf::OptimalIid::Plan pl = vf::OptimalIid::prepare(p.data(), q.data(), V, n);
        mdsd::DualWorkspace ws;
        const sw::TupleRow row = sw::make_row(p.data(), q.data(), V, n, ws);
        vf::Categorical pcat;
        pcat.build(p.data(), V);
        sw::TupleRace w, ctl;
        w.buckets = rep % 2 ? 3 : 0;  // odd cases: the bucketed levels (2-3 buckets on these supports)
        w.one_pass = rep % 4 < 2;     // a system's drafts from one pass (remaining_at), or a pass per draft
        ctl.untouched = true;
        check::context("rep %d, V = %lld, n = %d", rep, static_cast<long long>(V), n);
        Vec marg(V, 0.0);
        double case_diff = 0.0, ctl_diff = 0.0, tiny_weighted = 0.0;
        const double qrow = narrowest(pl);
        const double d_res = residual_distance(pl.res, row.res, V), d_norm = norm_res_distance(pl.res, row.res, V);
        cases::iid_tuples(q, n, [&](const std::vector<int>& tt, double pr) {
            ++plain;
            const std::vector<int32_t> t(tt.begin(), tt.end());
            const Laws L = laws(pl, row, pcat, w, t);
            const double d = maxdiff(L.plan, L.shadow);
            double qmin = 1.0;
            for (int32_t y : t) qmin = std::min(qmin, q[y]);
            if (qmin < mdsd::verif::level::kTinyWindow) {
                tiny_weighted += pr * d;
                ++tiny_tuples;
            } else {
                const double beyond = d - d_norm;
                case_diff = std::max(case_diff, beyond);
                if (beyond > 1e-12) {
                    ++rounded;
                    CHECK_MSG(beyond <= plan_rounding(qrow), "law differs by %.3g beyond the residuals' distance", d);
                }
            }
            for (int64_t y = 0; y < V; ++y) marg[y] += pr * L.shadow[y];
            Vec c(V, 0.0);
            vf::LawVisitor cv{c.data(), pcat};
            sw::walk(row, t.data(), ctl, cv);
            ctl_diff = std::max(ctl_diff, maxdiff(L.plan, c));
            for (int s = 0; s < 2; ++s) {  // the samplers on the same uniforms
                const uint64_t key = static_cast<uint64_t>(rep) * 1000003u + static_cast<uint64_t>(draws);
                mdsd::Rng r1(7, key), r2(7, key), r3(7, key);
                vf::Categorical target;  // walk_lazy builds it if the residual is empty
                vf::SampleVisitor v1{r1, pl.samplers()}, v2{r2, pcat}, v3{r3, target};
                vf::OptimalIid::walk(pl, t.data(), v1);
                sw::walk(row, t.data(), w, v2);
                sw::make_row(reused, p.data(), q.data(), V, n, ws, false);  // buffers of earlier rows
                sw::walk_lazy(reused, t.data(), w, v3, target);
                CHECK_MSG(v3.out == v2.out, "the lazy residual changed a draw: %d against %d", v3.out, v2.out);
                ++draws;
                same += v1.out == v2.out;
            }
        });
        CHECK_MSG(d_res <= 1e-14, "residual weights differ by %.3g", d_res);
        CHECK_MSG(tiny_weighted <= 1e-12, "tuples with a tiny window: weighted law difference %.3g", tiny_weighted);
        const double dl = maxdiff(marg, p);
        CHECK_MSG(dl <= 1e-12, "not lossless: the output marginal is off p by %.3g", dl);
        worst = std::max(worst, case_diff);
        worst_lossless = std::max(worst_lossless, dl);
        ++cases_run;
        moved += ctl_diff > 1e-9;
    }
    // LLM-like rows: sampled tuples (drafts by inverse CDF of q)
    double worst_llm = 0.0, worst_local = 0.0, point_coin = 0.0, point_level = 0.0;
    long llm_tuples = 0, shallow_moved = 0, point_draws = 0, point_same = 0, blind_moved = 0;
    for (int rep = 0; rep < 5; ++rep) {
        const int64_t V = rep < 3 ? 3000 : 20000;
        const int n = 4;
        Vec p, q;
        cases::llm_rows(g, V, p, q);
        const vf::OptimalIid::Plan pl = vf::OptimalIid::prepare(p.data(), q.data(), V, n);
        mdsd::DualWorkspace ws;
        const sw::TupleRow row = sw::make_row(p.data(), q.data(), V, n, ws);
        vf::Categorical pcat, qcat;
        pcat.build(p.data(), V);
        qcat.build(q.data(), V);
        sw::TupleRace w;
        const double qrow = narrowest(pl);
        check::context("llm rep %d", rep);
        for (int k = 0; k < 60; ++k) {
            std::vector<int32_t> t(n);
            for (auto& y : t) y = qcat.pick(g.uniform());
            for (int buckets : {0, 256})
                for (bool one_pass : {true, false}) {
                    w.buckets = buckets;
                    w.one_pass = one_pass;
                    const Laws L = laws(pl, row, pcat, w, t);
                    const double d = maxdiff(L.plan, L.shadow);
                    CHECK_MSG(d <= plan_rounding(qrow),
                              "tuple %d, %d buckets, one pass %d: law differs from the plan's by %.3g", k, buckets,
                              one_pass, d);
                    worst_llm = std::max(worst_llm, d);
                }
            // only the bound copies under the windows refined, against every read refined: the
            // same pieces; negative control: no segment refined (bound copies left under windows)
            w.buckets = 256;
            w.one_pass = true;
            sw::TupleRace full, shallow;
            full.buckets = shallow.buckets = 256;
            full.local = false;
            shallow.depth_margin = -(1 << 30);
            sw::race(row, t.data(), w);
            sw::race(row, t.data(), full);
            sw::race(row, t.data(), shallow);
            CHECK_MSG(w.lo.size() == full.lo.size(), "tuple %d: %zu pieces refined locally, %zu fully", k, w.lo.size(),
                      full.lo.size());
            double dp = 0.0;
            for (std::size_t u = 0; u < std::min(w.lo.size(), full.lo.size()); ++u)
                dp = std::max({dp, std::fabs(w.lo[u] - full.lo[u]), std::fabs(w.hi[u] - full.hi[u])});
            // (a run entered as its bound copy carries its sums rounded once: ~1e-16 per run)
            CHECK_MSG(dp <= 1e-13, "tuple %d: pieces refined locally move by %.3g", k, dp);
            worst_local = std::max(worst_local, dp);
            const Laws Ls = laws(pl, row, pcat, shallow, t);
            shallow_moved += maxdiff(Ls.plan, Ls.shadow) > 1e-9;
            // the sampler's race, exact only at the windows' ends and the drawn points, against
            // every read refined, on the same uniforms; control: drawn points left on bound copies
            sw::TupleRace pts, all, blind;
            pts.buckets = all.buckets = blind.buckets = 256;
            all.local = false;
            all.sampler_points = false;
            blind.check_draws = false;
            for (int seed = 0; seed < 10; ++seed) {
                const uint64_t key = static_cast<uint64_t>(rep) * 1000003u + static_cast<uint64_t>(k * 64 + seed);
                mdsd::Rng r1(13, key), r2(13, key), r3(13, key);
                const int32_t a = sw::race_winner(row, t.data(), pts, r1);
                const int32_t b = sw::race_winner(row, t.data(), all, r2);
                const int32_t c = sw::race_winner(row, t.data(), blind, r3);
                ++point_draws;
                point_same += a == b;
                if (a == b && a >= 0) point_level = std::max(point_level, std::fabs(pts.win_level - all.win_level));
                blind_moved += c != b || (c >= 0 && std::fabs(blind.win_level - all.win_level) > 1e-12);
                if (a == b && a >= 0) point_coin = std::max(point_coin, std::fabs(pts.coin[a] - all.coin[a]));
            }
            ++llm_tuples;
        }
    }
    check::context("totals");
    CHECK_MSG(moved * 4 >= cases_run, "negative control: untouched windows moved the law in only %ld of %ld cases",
              moved, cases_run);
    CHECK_MSG(shallow_moved * 4 >= llm_tuples,
              "negative control: windows cut among bound copies moved the law on only %ld of %ld tuples", shallow_moved,
              llm_tuples);
    CHECK_MSG(point_same == point_draws, "the point-exact sampler race gave another winner on %ld of %ld draws",
              point_draws - point_same, point_draws);
    CHECK_MSG(point_coin <= 1e-12, "the point-exact race moved a coin by %.3g", point_coin);
    CHECK_MSG(point_level <= 1e-13, "the point-exact race moved a drawn level by %.3g", point_level);
    CHECK_MSG(blind_moved * 100 >= point_draws,
              "negative control: draws left on bound copies moved the winner's level on only %ld of %ld draws",
              blind_moved, point_draws);
    CHECK_MSG(same * 1000 >= draws * 999, "samplers agree on only %ld of %ld draws", same, draws);
    std::printf(
        "test_planless_optimal_iid: %ld cases, %ld tuples: max law diff %.3g beyond the residuals' (%ld beyond 1e-12, "
        "within the plan's rounding), %ld with a tiny window (weighted diff <= 1e-12); lossless to %.3g; llm %ld "
        "tuples max diff %.3g, local refinement's pieces within %.2g of full, control (nothing refined) moved %ld; "
        "control moved %ld; samplers agree %ld/%ld; the point-exact sampler race: the winner of every read "
        "refined on %ld of %ld draws (coins within %.2g, drawn levels within %.2g), control (draws unchecked) moved "
        "%ld\n",
        cases_run, plain, worst, rounded, tiny_tuples, worst_lossless, llm_tuples, worst_llm, worst_local,
        shallow_moved, moved, same, draws, point_same, point_draws, point_coin, point_level, blind_moved);
    return check::summary("test_planless_optimal_iid");
}
