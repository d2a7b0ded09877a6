// "optimal" / "sweep" for without-replacement drafts (docs/theory/tight_set_sweep.md §13, §15): the plan of
// plan.hpp, built exactly on enumerable supports and by the full-vocabulary route otherwise.
//
// The route builds the outer system (outer.hpp), then climbs a ladder of inner orders (kLadder),
// each only while the best plan so far is short of alpha*_wor and the row's work budget lasts
// (budget.hpp), keeping the plan with the smallest deficit. An order (or run) that cannot end
// within what is left of the budget is not started (order_floor). A row still short runs again with no
// split (one inner system over supp q: lossless whatever the split, since every load is computed),
// and then the first chain order with a longer prefix-event head, both within the same budget.
// Reaching alpha*_wor is certified per row (the plan's exact acceptance against alpha*), not
// assumed; the policy says what a short row becomes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/verifiers/optimal_wor/chain.hpp"
#include "mdsd/verifiers/optimal_wor/context.hpp"
#include "mdsd/verifiers/optimal_wor/exact_sweep.hpp"
#include "mdsd/verifiers/optimal_wor/inner.hpp"
#include "mdsd/verifiers/optimal_wor/budget.hpp"
#include "mdsd/verifiers/optimal_wor/outer.hpp"
#include "mdsd/verifiers/optimal_wor/plan.hpp"

namespace mdsd::verif::wor {

// The inner orders, in the order they are tried.
constexpr InnerOrder kLadder[] = {InnerOrder::Top,        InnerOrder::ChainBelowGroup, InnerOrder::ChainPlain,
                                  InnerOrder::ChainSplit, InnerOrder::Bottom,          InnerOrder::Events,
                                  InnerOrder::PairSweep};

inline bool Route::applies(InnerOrder o, int64_t group) const {
    switch (o) {
        case InnerOrder::Top:
        case InnerOrder::ChainBelowGroup: return true;
        case InnerOrder::ChainPlain: return !last_resort && group > 0;
        case InnerOrder::ChainSplit: return !last_resort && group >= 0;  // after ChainBelowGroup
        case InnerOrder::Bottom:
        case InnerOrder::Events: return !last_resort;
        case InnerOrder::PairSweep: return !last_resort && n == 2 && !retry;
    }
    return false;
}

// The work order o charges once started, whatever the budget does meanwhile (grid operations):
// the products and passes it makes before its first budget check. A chain (chain.hpp) on k tokens
// with a group of mt on top and an event head of m: the unvisited product (k - mt), the head at
// weights 1 and 0 (2m), the down pass (4 per tail token), and with mt > 0 the products of the
// group and of the rest (k); ChainBelowGroup first finds its group (a pass, 3k; the group is
// shorter than jump_scan). The others: one greedy pass (3 per tail token) and the head's product;
// the prefix-event order also the tail's product and one step over its head; the pair sweep one
// step. With less than that left, the order would spend the rest of the budget and end cut short
// or above it; the ladder would stop after it anyway, so it is not started.
inline double Route::order_floor(InnerOrder o, int64_t group) const {
    const int64_t k = static_cast<int64_t>(ord.size());
    auto chain = [&](int64_t mt) {
        mt = std::min(mt, k);
        const int64_t m = std::min(event_head, k - mt), kt = k - mt - m;
        return static_cast<double>((k - mt) + 2 * m + 4 * kt + (mt > 0 ? k : 0));
    };
    const int64_t mb = std::min(k, m_max), me = std::min(k, event_head);
    double tokens = 0.0;
    switch (o) {
        case InnerOrder::Top: return 0.0;
        case InnerOrder::ChainBelowGroup:
            tokens = 3.0 * static_cast<double>(k) + chain(opt.jump_scan) - static_cast<double>(k);
            break;
        case InnerOrder::ChainPlain: tokens = chain(0); break;
        case InnerOrder::ChainSplit: tokens = chain(std::max<int64_t>(group, 0)); break;
        case InnerOrder::Bottom: tokens = static_cast<double>(mb + 3 * (k - mb)); break;
        case InnerOrder::Events: tokens = static_cast<double>(7 * me + 4 * (k - me)); break;
        case InnerOrder::PairSweep: return kPairStepOps * static_cast<double>(k);
    }
    return std::max(0.0, tokens) * n * static_cast<double>(G);
}

inline double Route::run_order(InnerOrder o, std::vector<Chunk>& ch, std::vector<double>& wn, int64_t& group) {
    // about a chunk per inner token and two per event-head token: grown once, not by doubling
    ch.reserve(ord.size() + 2 * static_cast<std::size_t>(std::min<int64_t>(event_head, ord.size())));
    switch (o) {
        case InnerOrder::Top: return order_top(ch, wn);
        case InnerOrder::ChainBelowGroup: group = needy_group(ord, base); return order_chain(ch, wn, group, false);
        case InnerOrder::ChainPlain: return order_chain(ch, wn, 0, false);
        case InnerOrder::ChainSplit: return order_chain(ch, wn, group, true);
        case InnerOrder::Bottom: return order_bottom(ch, wn);
        case InnerOrder::Events: return order_events(ch, wn);
        case InnerOrder::PairSweep: return order_pair_sweep(ch, wn);
    }
    return 0.0;
}

inline void Route::inner_system() {
    if (Hs.empty()) return;
    int64_t group = -1;  // the needy group found by ChainBelowGroup
    double best = run_order(kLadder[0], chH, won, group);
    std::vector<Chunk> ch2;
    best_order = static_cast<int>(kLadder[0]);
    orders_run = 1;
    for (std::size_t i = 1; i < sizeof(kLadder) / sizeof(kLadder[0]); ++i) {
        if (best <= opt.certify_tol / 2 || budget.exhausted()) break;
        if (!applies(kLadder[i], group) || !budget.fits(order_floor(kLadder[i], group))) continue;
        std::vector<double> won2(won);
        const double d = run_order(kLadder[i], ch2, won2, group);
        ++orders_run;
        if (d < best) {
            chH.swap(ch2);
            won.swap(won2);
            best = d;
            best_order = static_cast<int>(kLadder[i]);
        }
    }
}

// Systems: the first k_in tokens of sup inner, the rest outer.
inline void split_at(Plan& pl, const std::vector<int32_t>& sup, int64_t k_in) {
    const int64_t K = static_cast<int64_t>(sup.size());
    pl.side.assign(pl.V, Side::Never);
    for (int64_t k = 0; k < K; ++k) pl.side[sup[k]] = k < k_in ? Side::Inner : Side::Outer;
    pl.num_inner = k_in;
    pl.num_outer = K - k_in;
}

// The full-vocabulary route into pl (split at ks). Returns the least work a further run of the
// row charges: its first order's greedy pass covers at least the swept tokens of this run
// outside the exact head (a run with fewer inner tokens is never made).
inline double run_route(Plan& pl, const double* p, const double* q, int n, const std::vector<int32_t>& sup, int64_t ks,
                        const Options& opt, Budget& budget, int64_t last_resort_head, bool retry) {
    Route r(p, q, pl.V, n, sup, ks, opt, budget, last_resort_head, retry);
    r.outer_system();
    if (!retry) pl.route.work_outer = budget.used;
    r.inner_system();
    pl.sweep_steps += r.sweep_steps;
    pl.route.best_order = r.best_order;
    pl.route.orders_run += r.orders_run;
    store_chunks(pl, r.chA, r.chH);
    finish(pl, p, r.won);
    const double tail = static_cast<double>(r.ord.size()) - static_cast<double>(opt.exact_head);
    return tail > 0.0 ? 3.0 * tail * n * static_cast<double>(r.G) : 0.0;
}

// The exact sweep on an enumerable support: loads from the stored chunks by enumeration of the
// draft sets (exact given the chunks).
inline void run_exact(Plan& pl, const double* p, const double* q, int n, const std::vector<int32_t>& sup, int64_t ks) {
    const int64_t K = static_cast<int64_t>(sup.size());
    const auto law = wor_set_law(q, sup, n);
    SystemSets outer, inner;
    for (int64_t k = ks; k < K; ++k) outer.sys_tok.push_back(sup[k]);
    for (int64_t k = 0; k < ks; ++k) inner.sys_tok.push_back(sup[k]);
    const uint64_t hmask = ks >= 64 ? ~uint64_t{0} : ((uint64_t{1} << ks) - 1);
    for (const auto& [m, pr] : law) {
        if (m & ~hmask) {
            outer.mask.push_back(static_cast<uint32_t>(m >> ks));
            outer.prob.push_back(pr);
        } else {
            inner.mask.push_back(static_cast<uint32_t>(m));
            inner.prob.push_back(pr);
        }
    }
    int64_t s1 = 0, s2 = 0;
    const auto chA = exact_outer(outer, p, static_cast<int>(K - ks), s1);
    const auto chH = exact_inner(inner, p, static_cast<int>(ks), s2);
    pl.sweep_steps = s1 + s2;
    store_chunks(pl, chA, chH);
    std::vector<double> won(pl.V, 0.0);
    std::vector<int32_t> toks;
    std::vector<double> sel;
    for (const auto& [m, pr] : law) {
        toks.clear();
        const bool out = (m & ~hmask) != 0;
        for (int64_t k = 0; k < K; ++k)
            if ((m >> k & 1u) && (k >= ks) == out) toks.push_back(sup[k]);
        sel.assign(toks.size(), 0.0);
        win_probs(pl, toks.data(), static_cast<int>(toks.size()), sel.data());
        for (std::size_t j = 0; j < toks.size(); ++j) won[toks[j]] += pr * sel[j];
    }
    finish(pl, p, won);
}

inline const char* order_name(int o) {
    switch (o) {
        case static_cast<int>(InnerOrder::Top): return "top";
        case static_cast<int>(InnerOrder::ChainBelowGroup): return "chain below the needy group";
        case static_cast<int>(InnerOrder::ChainPlain): return "plain chain";
        case static_cast<int>(InnerOrder::ChainSplit): return "split chain";
        case static_cast<int>(InnerOrder::Bottom): return "bottom";
        case static_cast<int>(InnerOrder::Events): return "prefix events";
        case static_cast<int>(InnerOrder::PairSweep): return "pair sweep";
        default: return "none";
    }
}

inline std::string fmt_g(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
}

// A row "optimal" refuses (Policy::Strict): the plan's acceptance short of alpha*. The message names
// the scheme the caller asked for and its alpha*: a mixed scheme top<m>+wor catches the refusal of
// its inner wor row and restates it with its own numbers, lift + alpha (registry.hpp).
struct Refused : std::domain_error {
    double alpha_star, alpha_plan;
    std::string details;  // the route's account, after the numbers
    Refused(const std::string& scheme, double lift, double a_star, double a_plan, const std::string& why)
        : std::domain_error(message(scheme, lift, a_star, a_plan, why)),
          alpha_star(a_star),
          alpha_plan(a_plan),
          details(why) {}
    static std::string message(const std::string& scheme, double lift, double a_star, double a_plan,
                               const std::string& why) {
        const double s = std::min(1.0, lift + a_star), a = std::min(1.0, lift + a_plan);
        return "scheme: 'optimal' for '" + scheme + "' drafts reaches acceptance " + std::to_string(a) +
               ", below alpha*_" + scheme + " = " + std::to_string(s) + " by " + fmt_g(s - a) + why;
    }
};

struct OptimalWor {
    using Plan = wor::Plan;

    static Plan prepare(const double* p, const double* q, int64_t V, int n, Policy policy,
                        const Options& opt = Options{}) {
        Plan pl;
        pl.init(p, q, V, n, Drafter::Wor);
        DualWorkspace ws;
        // H* of the scan of every prefix: on rows where F ties its minimum within rounding (alpha* ~ 1)
        // the chord scan may pick another, equally good prefix, and the routes were tuned on that H*. So
        // the chord scan's H* is taken only when no other prefix comes near its F, else every prefix
        // is scanned (race/chord_scan.hpp, argmin_margin). alpha* is then the chord scan's (~1e-14 off).
        ws.chords.argmin_margin = race::ChordScan::kArgminMargin;
        ws.chords.enabled = !opt.h_star_every_prefix;
        const DualResult dr = dual_prefix(p, q, V, n, Scheme::Wor, WorMethod::Auto, ws);
        pl.alpha_star = dr.alpha;
        const std::vector<int32_t> sup = ws.order;  // supp q by ascending p/q; H* = its first k_star
        const int64_t K = static_cast<int64_t>(sup.size()), ks = dr.k_star;
        split_at(pl, sup, ks);
        const int64_t tuples = ordered_tuples(K, n, kMaxOrdered);
        if (ks <= kMaxSystem && K - ks <= kMaxSystem && tuples <= kMaxOrdered) {
            run_exact(pl, p, q, n, sup, ks);
            return pl;
        }
        const double limit = opt.work_budget > 0.0
                                 ? opt.work_budget
                                 : (policy == Policy::Strict ? kOptimalWorkBudget : kDefaultWorkBudget);
        Budget budget{limit};
        const double run_floor = run_route(pl, p, q, n, sup, ks, opt, budget, 0, false);
        // A second run for the row (k_in tokens inner, prefix-event heads of `head` tokens, 0: the
        // default), kept if it accepts more.
        auto run_again = [&](int64_t k_in, int64_t head) {
            Plan alt;
            alt.init(p, q, V, n, Drafter::Wor);
            alt.alpha_star = pl.alpha_star;
            split_at(alt, sup, k_in);
            alt.route.orders_run = pl.route.orders_run;
            run_route(alt, p, q, n, sup, k_in, opt, budget, head, true);
            if (alt.alpha_plan > pl.alpha_plan) pl = std::move(alt);
            else pl.route.orders_run = alt.route.orders_run;
        };
        auto short_of_alpha = [&] { return pl.alpha_star - pl.alpha_plan > opt.certify_tol; };
        if (short_of_alpha() && ks < K && budget.fits(run_floor)) run_again(K, 0);  // no split
        if (short_of_alpha() && budget.fits(run_floor)) run_again(ks, opt.last_resort_head);
        pl.route.work = budget.used;
        pl.route.out_of_budget = budget.exhausted() || budget.declined;
        // "optimal" means optimal: a row the route does not certify is refused under Strict.
        if (policy == Policy::Strict && short_of_alpha())
            throw Refused("wor", 0.0, pl.alpha_star, pl.alpha_plan,
                          " (the without-replacement race at this support size: " + std::to_string(ks) +
                              " tokens in H*, " + std::to_string(K - ks) +
                              " outside); closest inner order: " + order_name(pl.route.best_order) + ", " +
                              std::to_string(pl.route.orders_run) + " orders run, " +
                              (pl.route.out_of_budget
                                   ? "work budget spent or too small for the next order (" + fmt_g(budget.used) +
                                         " of " + fmt_g(limit) + " grid operations; raise work_budget=)"
                                   : "budget not spent (" + fmt_g(budget.used) + " grid operations)") +
                              "; refused rather than called optimal ('sweep' keeps this lossless plan; "
                              "docs/theory/wor_route.md §15.3)");
        return pl;
    }

    static void walk(const Plan& pl, const int32_t* t, SampleVisitor& vis) { wor::walk(pl, t, vis); }
    static void walk(const Plan& pl, const int32_t* t, LawVisitor& vis) { wor::walk(pl, t, vis); }
    static double exact(const Plan& pl, double /*budget*/) { return pl.alpha_plan; }
};

}  // namespace mdsd::verif::wor
