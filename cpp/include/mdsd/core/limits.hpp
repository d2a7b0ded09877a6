// The package's limits, in one table that the C++ core and the Python boundary both read
// (bindings: _core.limits(); Python: mdsd_fast.limits). Each is a size beyond which a route is
// refused (with an error naming the limit) or another route takes over.
#pragma once

#include <cstdint>

namespace mdsd::limits {

// Largest vocabulary: token ids are int32.
constexpr int64_t kMaxVocab = int64_t{2147483647};
// Largest number of drafts any computation accepts (drafting itself needs n <= |supp q| for
// "wor" and "greedy"); each route below may allow fewer.
constexpr int64_t kMaxDrafts = 1000000;
// Threads per call are clamped to this (results never depend on it).
constexpr int kMaxThreads = 256;
// The i.i.d. flow-LP enumeration: its set weights use n!, finite in float64 up to n = 170.
constexpr int kIidFlowMaxN = 170;
// The without-replacement flow-LP enumeration (2^n sub-mask DP per draft set).
constexpr int kWorFlowMaxN = 20;
// The exact tight-set sweep: at most this many tokens on each side of H* and this many ordered
// draft tuples; larger rows take the full-vocabulary route.
constexpr int kExactSweepSystem = 12;
constexpr int64_t kExactSweepTuples = 500000;
// The full-vocabulary without-replacement route (its race grid grows like sqrt(n)).
constexpr int kWorRouteMaxN = 64;
// Work budget per row of that route, in grid operations (verifiers/optimal_wor/budget.hpp): at
// most ~0.25-0.33 s of one core at n <= 4, V = 49,152 on the reference machine (bench/README.md).
constexpr double kWorWorkBudget = 4e7;
// The gap report's n values (its verifiers and schemes at every n of the table).
constexpr int kReportMaxN = 8;
// Bytes of the arrays one call allocates from a declared size (an argument, not the input itself):
// refused, with the size it would need, above this.
constexpr int64_t kMaxAllocBytes = int64_t{1} << 30;

struct Entry {
    const char* name;
    double value;
    const char* what;
};
inline constexpr Entry kTable[] = {
    {"max_vocab", static_cast<double>(kMaxVocab), "largest V (int32 token ids)"},
    {"max_drafts", static_cast<double>(kMaxDrafts), "largest n of any computation"},
    {"max_threads", kMaxThreads, "threads per call are clamped to this"},
    {"iid_flow_max_n", kIidFlowMaxN, "largest n of the i.i.d. flow-LP enumeration"},
    {"wor_flow_max_n", kWorFlowMaxN, "largest n of the without-replacement flow-LP enumeration"},
    {"exact_sweep_system", kExactSweepSystem, "tokens per side of H* for the exact wor sweep"},
    {"exact_sweep_tuples", static_cast<double>(kExactSweepTuples), "ordered draft tuples for the exact wor sweep"},
    {"wor_route_max_n", kWorRouteMaxN, "largest n of the full-vocabulary wor route"},
    {"wor_work_budget", kWorWorkBudget, "default work per row of the wor route (grid operations)"},
    {"report_max_n", kReportMaxN, "largest n of the gap report"},
    {"max_alloc_bytes", static_cast<double>(kMaxAllocBytes),
     "bytes of one call's arrays that grow with an argument, not with the input"},
};

}  // namespace mdsd::limits
