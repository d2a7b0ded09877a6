// Micro-bench of the remaining levels in one pass (shadow::remaining, after the ratio sort) and
// without a sort (shadow::remaining_bucketed; optimal_iid/remaining_levels.hpp, docs/theory/level_race.md §12.6) against the
// token-by-token cut of the level race (optimal_iid/level_windows.hpp, as OptimalIid::prepare runs it), on
// LLM-like rows (bench_dual.py's llm_like: logits N(0, 3^2), q's logits + N(0, 1)), n = 4, one
// thread (CPU time, best of 5); the full sort (dual_prefix) and the whole plan
// (OptimalIid::prepare) timed in the same loop. Then one drafted tuple per row (optimal_iid/planless.hpp,
// row setup + walk, sorted and bucketed levels) against alpha* and the plan route (prepare + walk),
// the same rows and seed, and the race alone: each system's drafts from one envelope pass
// (remaining_at, the default) against one pass per draft. Standalone:
//   g++ -std=c++17 -O3 -Icpp/include bench/verifiers/planless_levels.cpp -o /tmp/bsh && /tmp/bsh
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/verifiers/optimal_iid/level_windows.hpp"
#include "mdsd/verifiers/optimal_iid/plan.hpp"
#include "mdsd/verifiers/optimal_iid/planless.hpp"
#include "mdsd/verifiers/optimal_iid/remaining_levels.hpp"

namespace lv = mdsd::verif::level;
namespace sw = mdsd::verif::shadow;

// Thread CPU time in ms (the VM is shared: wall time would count other work).
static double cpu_ms() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}
template <class F>
static double best_ms(F f, int reps) {
    double b = 1e300;
    for (int r = 0; r < reps; ++r) {
        const double a = cpu_ms();
        f();
        b = std::min(b, cpu_ms() - a);
    }
    return b;
}

int main() {
    std::mt19937_64 eng(11);
    std::normal_distribution<double> N(0.0, 1.0);
    const int64_t V = 49152;
    const int n = 4, rows = 8, reps = 5;
    double t_sort = 0, t_plan = 0, t_cut = 0, t_env = 0, segs = 0, dmax = 0, capped[2] = {0, 0}, sys_size[2] = {0, 0};
    const int Bs[4] = {256, 1024, 4096, 16384};
    double share[4] = {0, 0, 0, 0}, t_bucket[4] = {0, 0, 0, 0}, bdiff = 0;
    int max_rounds[4] = {0, 0, 0, 0};
    // one drafted tuple per row (optimal_iid/planless.hpp) against alpha* and the plan route, same rows
    double t_alpha = 0, t_row = 0, t_tuple = 0, t_tuple_b = 0, t_tuple_l = 0, t_plan_tuple = 0;
    long agree = 0, agree_b = 0, agree_l = 0;
    double t_race[4] = {0, 0, 0, 0}, race_diff = 0, t_row_nores = 0, t_residual = 0;
    const int Brace[3] = {64, 256, 1024};
    sw::TupleRow tr_reused;  // as a thread's scratch keeps it from row to row
    for (int row = 0; row < rows; ++row) {
        std::vector<double> p(V), q(V);
        double sp = 0, sq = 0;
        for (int64_t i = 0; i < V; ++i) {
            const double z = 3.0 * N(eng);
            p[i] = std::exp(z);
            q[i] = std::exp(z + N(eng));
            sp += p[i];
            sq += q[i];
        }
        for (int64_t i = 0; i < V; ++i) {
            p[i] /= sp;
            q[i] /= sq;
        }
        mdsd::DualWorkspace ws;
        mdsd::DualResult dr;
        t_sort += best_ms(
            [&] { dr = mdsd::dual_prefix(p.data(), q.data(), V, n, mdsd::Scheme::Iid, mdsd::WorMethod::Auto, ws); },
            reps);
        t_plan += best_ms([&] { (void)mdsd::verif::OptimalIid::prepare(p.data(), q.data(), V, n); }, reps);
        const std::vector<int32_t> ord = ws.order;
        const int64_t K = static_cast<int64_t>(ord.size()), ks = dr.k_star;
        double qH = 0, qA = 0;
        for (int64_t k = 0; k < ks; ++k) qH += q[ord[k]];
        for (int64_t k = ks; k < K; ++k) qA += q[ord[k]];
        // each system in its cutting order, the last token left out (it takes what is left)
        std::vector<int32_t> outer(ord.begin() + ks, ord.end()), inner(ord.rbegin() + (K - ks), ord.rend());
        if (!outer.empty()) outer.pop_back();
        if (!inner.empty()) inner.pop_back();
        const sw::System so{qH, qA, n, false}, si{0.0, qH, n, true};
        std::vector<lv::Seg> cut_o, cut_i, env_o, env_i;
        t_cut += best_ms(
            [&] {
                std::vector<lv::Seg> out;
                out.reserve(2 * static_cast<std::size_t>(K));
                for (int sys = 0; sys < 2; ++sys) {
                    const bool in = sys == 1;
                    lv::Levels L;
                    L.n = n;
                    L.from_bottom = in;
                    L.iv.push_back(in ? lv::Seg{0.0, qH} : lv::Seg{qH, qH + qA});
                    L.total = in ? qH : qA;
                    for (int32_t y : in ? inner : outer) lv::take_window(L, q[y], p[y], in ? +1 : -1, false, out);
                    (in ? cut_i : cut_o) = L.iv;
                }
            },
            reps);
        t_env += best_ms(
            [&] {
                std::vector<double> qs, ps;
                for (int sys = 0; sys < 2; ++sys) {
                    const auto& seq = sys ? inner : outer;
                    qs.resize(seq.size());
                    ps.resize(seq.size());
                    for (std::size_t k = 0; k < seq.size(); ++k) {
                        qs[k] = q[seq[k]];
                        ps[k] = p[seq[k]];
                    }
                    (sys ? env_i : env_o) =
                        sw::remaining(sys ? si : so, qs.data(), ps.data(), static_cast<int64_t>(seq.size()));
                }
            },
            reps);
        segs += static_cast<double>(env_o.size() + env_i.size());
        {
            // the capped suffix (docs/theory/level_race.md §12.6): the windows after the exact prefix
            for (int sys = 0; sys < 2; ++sys) {
                const auto& seq = sys ? inner : outer;
                std::vector<double> qs(seq.size()), ps(seq.size());
                for (std::size_t k = 0; k < seq.size(); ++k) {
                    qs[k] = q[seq[k]];
                    ps[k] = p[seq[k]];
                }
                int64_t k_exact = 0;
                (void)sw::remaining(sys ? si : so, qs.data(), ps.data(), static_cast<int64_t>(seq.size()), nullptr,
                                    &k_exact);
                capped[sys] += static_cast<double>(static_cast<int64_t>(seq.size()) - k_exact);
                sys_size[sys] += static_cast<double>(seq.size());
            }
        }
        for (int bi = 0; bi < 4; ++bi) {
            sw::BucketStats ro, ri;
            std::vector<lv::Seg> bo, bi_;
            // the systems' tokens in id order: the bucketed pass needs no order
            std::vector<int32_t> o_id = outer, i_id = inner;
            std::sort(o_id.begin(), o_id.end());
            std::sort(i_id.begin(), i_id.end());
            t_bucket[bi] += best_ms(
                [&] {
                    bo = sw::remaining_bucketed(so, o_id.data(), static_cast<int64_t>(o_id.size()), p.data(), q.data(),
                                                Bs[bi], &ro);
                    bi_ = sw::remaining_bucketed(si, i_id.data(), static_cast<int64_t>(i_id.size()), p.data(), q.data(),
                                                 Bs[bi], &ri);
                },
                reps);
            share[bi] += static_cast<double>(ro.sorted + ri.sorted) / static_cast<double>(outer.size() + inner.size());
            max_rounds[bi] = std::max({max_rounds[bi], ro.rounds, ri.rounds});
            for (const auto* pr : {&bo, &bi_}) {
                const auto& ref = (pr == &bo) ? env_o : env_i;
                double d = 0;  // largest endpoint difference, when the segment counts agree
                if (pr->size() != ref.size()) d = 1.0;
                else
                    for (std::size_t u = 0; u < ref.size(); ++u)
                        d = std::max({d, std::fabs((*pr)[u].lo - ref[u].lo), std::fabs((*pr)[u].hi - ref[u].hi)});
                bdiff = std::max(bdiff, d);
            }
        }
        {
            std::vector<int32_t> t(n);
            std::vector<double> cdf(V);
            double c = 0;
            for (int64_t i = 0; i < V; ++i) cdf[i] = (c += q[i]);
            std::uniform_real_distribution<double> U(0.0, c);
            for (auto& y : t)
                y = static_cast<int32_t>(
                    std::min<int64_t>(V - 1, std::upper_bound(cdf.begin(), cdf.end(), U(eng)) - cdf.begin()));
            mdsd::DualWorkspace wa;
            t_alpha += best_ms(
                [&] {
                    (void)mdsd::dual_alpha(p.data(), q.data(), V, n, mdsd::Scheme::Iid, mdsd::WorMethod::Auto, wa,
                                           nullptr);
                },
                reps);
            mdsd::DualWorkspace wr;
            t_row += best_ms([&] { (void)sw::make_row(p.data(), q.data(), V, n, wr); }, reps);
            mdsd::verif::Categorical pcat;
            pcat.build(p.data(), V);
            int32_t out_shadow = -1, out_plan = -1;
            t_tuple += best_ms(
                [&] {
                    const sw::TupleRow tr = sw::make_row(p.data(), q.data(), V, n, wr);
                    sw::TupleRace w;
                    mdsd::Rng rng(5, static_cast<uint64_t>(row));
                    mdsd::verif::SampleVisitor vis{rng, pcat};
                    sw::walk(tr, t.data(), w, vis);
                    out_shadow = vis.out;
                },
                reps);
            int32_t out_b = -1;
            t_tuple_b += best_ms(
                [&] {
                    const sw::TupleRow tr = sw::make_row(p.data(), q.data(), V, n, wr);
                    sw::TupleRace w;
                    w.buckets = 256;
                    mdsd::Rng rng(5, static_cast<uint64_t>(row));
                    mdsd::verif::SampleVisitor vis{rng, pcat};
                    sw::walk(tr, t.data(), w, vis);
                    out_b = vis.out;
                },
                reps);
            agree_b += out_b == out_shadow;
            int32_t out_l = -1;  // mf.verify's route: bucketed, the residual on rejection only, a reused row
            t_tuple_l += best_ms(
                [&] {
                    sw::make_row(tr_reused, p.data(), q.data(), V, n, wr, false);
                    sw::TupleRow& tr = tr_reused;
                    sw::TupleRace w;
                    w.buckets = 256;
                    mdsd::verif::Categorical target;
                    mdsd::Rng rng(5, static_cast<uint64_t>(row));
                    mdsd::verif::SampleVisitor vis{rng, target};
                    sw::walk_lazy(tr, t.data(), w, vis, target);
                    out_l = vis.out;
                },
                reps);
            agree_l += out_l == out_shadow;
            // the race alone (the row made once): all of a system's drafts in one pass (remaining_at,
            // the default) against one bucketed pass per draft (the route the bucket count replaced), per bucket count
            {
                sw::TupleRow tr = sw::make_row(p.data(), q.data(), V, n, wr, false);
                t_row_nores += best_ms([&] { sw::make_row(tr, p.data(), q.data(), V, n, wr, false); }, reps);
                t_residual += best_ms([&] { sw::build_residual(tr); }, reps);
                for (int v = 0; v < 4; ++v) {
                    sw::TupleRace w;
                    w.one_pass = v > 0;
                    w.buckets = v == 0 ? 256 : Brace[v - 1];
                    t_race[v] += best_ms([&] { sw::race(tr, t.data(), w); }, reps);
                }
                sw::TupleRace w0, w1;
                w0.buckets = w1.buckets = 256;
                w0.one_pass = false;
                sw::race(tr, t.data(), w0);
                sw::race(tr, t.data(), w1);
                for (std::size_t u = 0; u < w0.lo.size() && u < w1.lo.size(); ++u)
                    race_diff = std::max({race_diff, std::fabs(w0.lo[u] - w1.lo[u]), std::fabs(w0.hi[u] - w1.hi[u])});
                if (w0.lo.size() != w1.lo.size()) race_diff = 1e300;
            }
            t_plan_tuple += best_ms(
                [&] {
                    const auto pl = mdsd::verif::OptimalIid::prepare(p.data(), q.data(), V, n);
                    mdsd::Rng rng(5, static_cast<uint64_t>(row));
                    mdsd::verif::SampleVisitor vis{rng, pcat};
                    mdsd::verif::OptimalIid::walk(pl, t.data(), vis);
                    out_plan = vis.out;
                },
                reps);
            agree += out_shadow == out_plan;
        }
        // sanity: the same remaining measure (both are sets of segments)
        auto meas = [](const std::vector<lv::Seg>& R) {
            double s = 0;
            for (const auto& g : R) s += g.hi - g.lo;
            return s;
        };
        dmax = std::max({dmax, std::fabs(meas(cut_o) - meas(env_o)), std::fabs(meas(cut_i) - meas(env_i))});
    }
    std::printf("V = %lld, n = %d, %d LLM-like rows, ms per row (best of %d):\n", static_cast<long long>(V), n, rows,
                reps);
    std::printf("  full sort (dual_prefix)      %.3f\n", t_sort / rows);
    std::printf("  whole plan (prepare)         %.3f\n", t_plan / rows);
    std::printf("  cut, token by token          %.3f\n", t_cut / rows);
    std::printf("  envelope, one pass           %.3f  (%.0f segments left per row; |measure diff| <= %.1e)\n",
                t_env / rows, segs / rows, dmax);
    for (int bi = 0; bi < 4; ++bi)
        std::printf("  bucketed envelope, B = %5d  %.3f  (tokens sorted: %.1f %%; rounds <= %d)\n", Bs[bi],
                    t_bucket[bi] / rows, 100.0 * share[bi] / rows, max_rounds[bi]);
    std::printf("  capped suffix: %.1f %% of the outer system (%.0f tokens per row), %.1f %% of the inner one (%.0f)\n",
                100.0 * capped[0] / sys_size[0], sys_size[0] / rows, 100.0 * capped[1] / sys_size[1],
                sys_size[1] / rows);
    std::printf("  bucketed vs full envelope: largest endpoint difference %.1e\n", bdiff);
    std::printf(
        "one drafted tuple per row (optimal_iid/planless.hpp; the same seed gave the plan's output on %ld of %d):\n",
        agree, rows);
    std::printf("  alpha* (dual_alpha, iid select)  %.3f\n", t_alpha / rows);
    std::printf("  row setup (make_row)             %.3f\n", t_row / rows);
    std::printf("  make_row + one tuple             %.3f  (%.1fx alpha*)\n", t_tuple / rows, t_tuple / t_alpha);
    std::printf("  make_row + one tuple, bucketed   %.3f  (%.1fx alpha*; B = 256; output as unbucketed on %ld)\n",
                t_tuple_b / rows, t_tuple_b / t_alpha, agree_b);
    std::printf("  + residual on rejection, reused  %.3f  (%.1fx alpha*; mf.verify's route; output as above on %ld)\n",
                t_tuple_l / rows, t_tuple_l / t_alpha, agree_l);
    std::printf("  make_row without the residual, reused row %.3f\n", t_row_nores / rows);
    std::printf("  the residual alone (build_residual)      %.3f\n", t_residual / rows);
    std::printf("  race alone, a pass per draft (B = 256)   %.3f\n", t_race[0] / rows);
    for (int v = 1; v < 4; ++v)
        std::printf("  race alone, one pass (B = %4d)          %.3f\n", Brace[v - 1], t_race[v] / rows);
    std::printf("  one pass vs a pass per draft (B = 256): largest piece-end difference %.1e\n", race_diff);
    std::printf("  plan + one tuple (prepare+walk)  %.3f  (%.1fx alpha*)\n", t_plan_tuple / rows,
                t_plan_tuple / t_alpha);
    return 0;
}
