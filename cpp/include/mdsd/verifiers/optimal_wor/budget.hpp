// The budget and options of the full-vocabulary without-replacement route (docs/theory/wor_route.md §15).
//
// The route tries ever more expensive orders of the same race until its plan reaches alpha*_wor;
// how far it climbs is bounded by a work budget per row, not by caps on each kind of retry.
// Work is counted in grid operations: laying or multiplying one token factor on the race grid
// costs n x G multiply-adds (G grid nodes), and every pass, product, exact core and sweep step
// charges what it touches. Counting work instead of time keeps every plan independent of the
// machine, its load and the thread count. When the budget is spent the route stops at the next
// check and keeps the best plan so far -- lossless like every plan of the race, with its exact
// acceptance -- and the policy (plan.hpp) decides whether a row short of alpha*_wor is kept or
// refused. The first order always runs to the end, so every row gets a plan.
#pragma once

#include <cstdint>

#include "mdsd/core/limits.hpp"

namespace mdsd::verif::wor {

// Default work per row (limits.hpp; bench/verifiers/optimal_wor_route.py measures time against work):
// "sweep" (Policy::Keep, the report's column) keeps a bounded time per row.
constexpr double kDefaultWorkBudget = limits::kWorWorkBudget;
// "optimal" (Policy::Strict) refuses what it does not certify, so by default it may climb 100 times
// further: >= 97 % of held-out real rows certified at n = 2-8 (docs/guide/verifiers.md, measured by
// bench/verifiers/optimal_wor_heldout.py).
constexpr double kOptimalWorkBudget = 100.0 * kDefaultWorkBudget;

struct Budget {
    double limit = kDefaultWorkBudget;
    double used = 0.0;
    bool declined = false;  // an order or run was not started: it could not end within what is left
    bool exhausted() const { return used >= limit; }
    // Whether `floor` more grid operations fit; records a refusal.
    bool fits(double floor) {
        if (!exhausted() && limit - used >= floor) return true;
        declined = true;
        return false;
    }
};

struct Options {
    double work_budget = 0.0;  // grid operations per row (see above); <= 0: the default of the policy
    int exact_head = 8;                       // neediest inner tokens swept exactly on top ("top" order)
    int64_t event_head = 256;                 // tokens of the prefix-event heads ("chain", "events")
    int64_t last_resort_head = 1024;          // the same, for the last resort (O(head^2) scans)
    int chain_depth = 8;                      // levels of needy groups, each a chain on top of the next
    int64_t jump_scan = 2048;                 // prefixes scanned for the end of such a group
    double violation_tol = 1e-12;             // relative: a removal slack below it is a violation
    int64_t law_bytes = int64_t{256} << 20;   // marked law tables of an exact core (core_law)
    double certify_tol = 1e-9;                // alpha* - acceptance accepted as "optimal"
    // Reference routes for the tests (the defaults are the shipped route): H* from the scan of every
    // prefix instead of the chord scan, and the outer system's passes checkpointed instead of by division.
    bool h_star_every_prefix = false;
    bool outer_by_division = true;
};

// What the route did with a row, for diagnostics (strict refusals say it; the bindings expose it).
struct Report {
    double work = 0.0;         // grid operations spent
    double work_outer = 0.0;   // of which the set-up and outer system of the first run
    bool out_of_budget = false;  // spent, or too small for the next order or run
    int best_order = -1;       // the InnerOrder of the kept inner plan (-1: no inner system)
    int orders_run = 0;
};

}  // namespace mdsd::verif::wor
