// One row's full-vocabulary without-replacement construction (docs/theory/wor_route.md §15): the race grid,
// the split at the certificate, the inner ratio order, the environments every order shares, and
// the work state. The outer system is built in outer.hpp, the inner orders in inner.hpp and
// chain.hpp; route.hpp runs them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/race/grid.hpp"
#include "mdsd/race/loo.hpp"
#include "mdsd/race/moments.hpp"
#include "mdsd/race/pair.hpp"
#include "mdsd/race/pass.hpp"
#include "mdsd/core/limits.hpp"
#include "mdsd/bound/lp/sets.hpp"
#include "mdsd/verifiers/optimal_wor/core.hpp"
#include "mdsd/verifiers/optimal_wor/events.hpp"
#include "mdsd/verifiers/optimal_wor/pair_events.hpp"
#include "mdsd/verifiers/optimal_wor/exact_sweep.hpp"
#include "mdsd/verifiers/optimal_wor/budget.hpp"

namespace mdsd::verif::wor {

// The inner orders, in the order they are tried (inner.hpp, chain.hpp).
enum class InnerOrder {
    Top,              // exact head on top, greedy tail
    ChainBelowGroup,  // the chain below its nearly tight group of needy tokens
    ChainPlain,       // the chain without a group (only if that group is not empty)
    ChainSplit,       // the chain, splitting at violated visits
    Bottom,           // greedy tail on top, exact head at the bottom
    Events,           // prefix-event head above the greedy tail
    PairSweep,        // n = 2: the prefix-event sweep on the whole system, closed form
};
struct Route {
    // the row: sup = supp q by ascending p/q; its first ks tokens are inner (H*), the rest outer
    const double* p;
    const double* q;
    int64_t V;
    int n;
    const std::vector<int32_t>& sup;
    int64_t ks;
    const Options& opt;
    Budget& budget;      // shared by every run of the row
    int64_t event_head;  // tokens of the prefix-event heads of this run
    bool last_resort;    // only the first inner order and the first chain order run
    bool retry;          // a second run for the row: skips the n = 2 pair sweep (O(k^2))

    race::Grid gr;
    int64_t G = 0;
    int64_t m_max = 0;  // largest core for the exact sweep (its marked law tables fit opt.law_bytes)
    double qA = 0.0, qsum = 0.0;
    std::vector<int32_t> Hs, As;  // inner (H*) and outer tokens
    std::vector<int32_t> Hp, H0;  // H* tokens with p > 0 (swept) and p = 0 (never laid)
    std::vector<int32_t> ord;     // Hp, neediest first (inner ratio order at weight 1)
    race::Pair base0;             // H0 at weight 1
    race::Pair base;              // base0 with the outer tokens at weight 0: every inner pass's base
    int64_t m_top = 0;            // the head of the top order
    race::Pair tail_small, tail_all;  // ord after that head at weight 1: its small tokens, all of it

    std::vector<double> e, b;  // a token's factors
    std::vector<double> won;   // won mass by token id
    std::vector<double> w;     // the weights of the last pass
    std::vector<Chunk> chA, chH;
    int64_t sweep_steps = 0;
    int best_order = -1;  // the InnerOrder of the kept inner plan
    int orders_run = 0;

    Route(const double* p_, const double* q_, int64_t V_, int n_, const std::vector<int32_t>& sup_, int64_t ks_,
          const Options& opt_, Budget& budget_, int64_t last_resort_head, bool retry_)
        : p(p_),
          q(q_),
          V(V_),
          n(n_),
          sup(sup_),
          ks(ks_),
          opt(opt_),
          budget(budget_),
          event_head(last_resort_head > 0 ? last_resort_head : opt_.event_head),
          last_resort(last_resort_head > 0),
          retry(retry_) {
        if (n > limits::kWorRouteMaxN)
            throw TooLarge("n: 'optimal' for 'wor' drafts on large supports handles n <= " +
                           std::to_string(limits::kWorRouteMaxN) + ", got " + std::to_string(n));
        double qmin = 1.0;
        for (int32_t y : sup) {
            qmin = std::min(qmin, q[y]);
            qsum += q[y];
        }
        double q_np1 = 0.0;  // the (n+1)-th largest mass: where the grid may stop (race::Grid)
        if (static_cast<int64_t>(sup.size()) > n) {
            std::vector<double> top(n + 1, 0.0);
            for (int32_t y : sup)
                if (q[y] > top[n]) {
                    int i = n;
                    while (i > 0 && top[i - 1] < q[y]) {
                        top[i] = top[i - 1];
                        --i;
                    }
                    top[i] = q[y];
                }
            q_np1 = top[n];
        }
        Hs.assign(sup.begin(), sup.begin() + ks);
        As.assign(sup.begin() + ks, sup.end());
        for (int32_t y : As) qA += q[y];
        gr.build(n, qsum, q_np1, qmin);
        G = gr.G;
        // Marked law tables hold 2^m pairs of n x G doubles: keep them under opt.law_bytes.
        while (m_max < kMaxSystem &&
               (int64_t{2} << m_max) * n * G * 2 * static_cast<int64_t>(sizeof(double)) <= opt.law_bytes)
            ++m_max;
        e.resize(G);
        b.resize(G);
        won.assign(V, 0.0);
        // H* once at weight 1: its tokens with p = 0 (never laid: folded into every inner pass's
        // base instead of being swept; up to half of an LLM row's support), and the others (Hp) in
        // the inner ratio order (their w at weight 1), whose product after the top order's head
        // (tail_small, tail_all) serves that order. Together they are the outer environment.
        base0.unit(n, G);
        Hp.reserve(Hs.size());
        for (int32_t y : Hs) {
            if (p[y] > 0.0) {
                Hp.push_back(y);
                continue;
            }
            H0.push_back(y);
            gr.factors(q[y], e.data(), b.data());
            base0.add(e.data(), b.data(), 1.0, q[y]);
        }
        std::vector<double> sc(G);  // A-tokens end the inner system (weight 0: the factor e^{-q(A) t})
        for (int64_t g = 0; g < G; ++g) sc[g] = std::exp(-qA * gr.t[g]);
        base = base0;
        base.scale(sc.data());
        std::vector<double> w_hp;
        race::loo_weights(gr, q, Hp, base, w_hp);
        charge(static_cast<double>(H0.size() + Hp.size()));
        {
            std::vector<double> rho(Hp.size());
            for (std::size_t i = 0; i < Hp.size(); ++i) rho[i] = rho_of(Hp[i], w_hp[i]);
            ord = sorted_by_rho(Hp, rho);
        }
        m_top = std::min<int64_t>(static_cast<int64_t>(ord.size()), std::min<int64_t>(opt.exact_head, m_max));
        const std::vector<int32_t> tail_top(ord.begin() + m_top, ord.end());
        tail_small = race::small_product(gr, q, tail_top);
        tail_all = tail_small;
        const double qcut = race::small_cut(gr);
        for (int32_t y : tail_top)
            if (q[y] > qcut) {
                gr.factors(q[y], e.data(), b.data());
                tail_all.add(e.data(), b.data(), 1.0, q[y]);
            }
    }

    // Work spent on `tokens` token factors (budget.hpp).
    void charge(double tokens) { budget.used += tokens * n * static_cast<double>(G); }
    // An exact core of m tokens: its marked law (m 2^m token factors), then `steps` sweep steps,
    // each aggregating the core's sets twice.
    void charge_core(std::size_t m, std::size_t sets, int64_t steps) {
        charge(static_cast<double>(m) * static_cast<double>(int64_t{1} << m));
        budget.used += 2.0 * static_cast<double>(steps) * static_cast<double>(sets) * static_cast<double>(m);
    }

    double rho_of(int32_t y, double wy) const { return wy > 0.0 ? p[y] / wy : (p[y] > 0.0 ? 1e300 : 0.0); }

    // toks by descending rho (ties: stable)
    static std::vector<int32_t> sorted_by_rho(const std::vector<int32_t>& toks, const std::vector<double>& rho) {
        std::vector<int64_t> idx(toks.size());
        for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t x, int64_t y) { return rho[x] > rho[y]; });
        std::vector<int32_t> out(toks.size());
        for (std::size_t i = 0; i < idx.size(); ++i) out[i] = toks[idx[i]];
        return out;
    }

    // P times the factors of `toks` at weights hw(i)
    template <class Weight>
    race::Pair times(race::Pair P, const std::vector<int32_t>& toks, Weight&& hw) {
        charge(static_cast<double>(toks.size()));
        for (std::size_t i = 0; i < toks.size(); ++i) {
            gr.factors(q[toks[i]], e.data(), b.data());
            P.add(e.data(), b.data(), hw(i), q[toks[i]]);
        }
        return P;
    }
    static double one(std::size_t) { return 1.0; }

    // E[prod_{j in S} h_j] of a pair
    double total_of(const race::Pair& P) const {
        double t = 0.0;
        for (int64_t g = 0; g < G; ++g) t += gr.wt[g] * P.D[static_cast<std::size_t>(n - 1) * G + g];
        return t;
    }

    double deficit_of(const std::vector<double>& wn) const {
        double deficit = 0.0;
        for (int32_t y : Hp) deficit += std::max(0.0, p[y] - wn[y]);
        return deficit;
    }

    void outer_system();  // outer.hpp
    void inner_system();  // route.hpp

    // inner orders (inner.hpp, chain.hpp): each fills ch and wn and returns the deficit
    void greedy_pass(const std::vector<int32_t>& tl, const race::Pair& env, std::vector<Chunk>& ch,
                     std::vector<double>& wn, std::vector<double>* hfin, const race::Pair* small = nullptr);
    // The exact sweep `exact` (exact_outer or exact_inner) on a core of tokens, the rest of the
    // system entering through env; its chunks go to ch, their loads to wn, and are returned.
    template <class Exact>
    std::vector<Chunk> exact_core(const std::vector<int32_t>& core, const race::Pair& env, Exact&& exact,
                                  std::vector<Chunk>& ch, std::vector<double>& wn) {
        const SystemSets S = core_law(gr, q, core, env);
        int64_t steps = 0;
        const std::vector<Chunk> chunks = exact(S, p, static_cast<int>(core.size()), steps);
        charge_core(core.size(), S.mask.size(), steps);
        sweep_steps += steps;
        core_loads(S, chunks, wn);
        ch.insert(ch.end(), chunks.begin(), chunks.end());
        return chunks;
    }
    std::vector<Chunk> sweep_head(const std::vector<int32_t>& head, const race::Pair& env, std::vector<Chunk>& ch,
                                  std::vector<double>& wn) {
        return exact_core(head, env, exact_inner, ch, wn);
    }
    std::vector<double> event_sweep(const std::vector<int32_t>& head, const race::Pair& env, std::vector<Chunk>& ch,
                                    std::vector<double>& wn);
    double order_top(std::vector<Chunk>& ch, std::vector<double>& wn);
    double order_bottom(std::vector<Chunk>& ch, std::vector<double>& wn);
    double order_events(std::vector<Chunk>& ch, std::vector<double>& wn);
    double order_pair_sweep(std::vector<Chunk>& ch, std::vector<double>& wn);
    struct ChainMode {
        int depth = 0;  // levels of needy groups above this chain
        bool split = false;
    };
    int64_t needy_group(const std::vector<int32_t>& o, const race::Pair& env);
    std::vector<double> chain_system(const std::vector<int32_t>& o, const race::Pair& env, int64_t mt, ChainMode md,
                                     std::vector<Chunk>& ch, std::vector<double>& wn);
    double order_chain(std::vector<Chunk>& ch, std::vector<double>& wn, int64_t mt, bool split);
    bool applies(InnerOrder o, int64_t group) const;  // route.hpp
    double order_floor(InnerOrder o, int64_t group) const;  // route.hpp
    double run_order(InnerOrder o, std::vector<Chunk>& ch, std::vector<double>& wn, int64_t& group);
};

}  // namespace mdsd::verif::wor
