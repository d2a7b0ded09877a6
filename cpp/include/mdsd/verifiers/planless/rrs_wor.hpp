// Exact acceptance of "rrs-wor" without a plan. The recursion over drafted tokens (RrsWor::rec,
// verifiers/rrs.hpp) needs the residual mass M(T) at a threshold per node, and its cost grows like
// K^(n-1) nodes for K tokens with q > 0; the plan answers each M(T) in O(log V) from its ratio
// table. This row keeps exactly what the recursion reads -- the ratio table, the support and its
// q-mass -- and reads p and q in place from the thread's normalised row: no copies of p and q, no
// draft or target samplers, and its buffers (the table, the sort's workspace) reused across rows.
//
// Why a table and not a linear scan per node: after the root every node needs its own M(T), so a
// scan would cost V per node (K V at n = 2, against the table's one O(V) radix sort and K binary
// searches), and the plan's bits come from the table's prefix sums in ratio order, which a scan
// in id order would not reproduce (bench/verifiers/lifted_exact.py measures both routes).
//
// Same bits as the plan: the same table built by the same code on the same normalised row (q
// scaled by RrsWor::scaled_q as the plan scales it), walked by RrsWor's own recursion and budget.
#pragma once

#include <cstdint>
#include <vector>

#include "mdsd/core/order.hpp"
#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/rrs.hpp"

namespace mdsd::verif::direct {

struct RrsWorRow {
    // What RrsWor's recursion reads (the members of RrsWor::Plan it uses).
    const double* p = nullptr;
    const double* q = nullptr;
    int64_t V = 0;
    int n = 1;
    RatioTable tab;
    std::vector<int32_t> support;
    double qsum = 1.0;
    // Reused buffers: q * 2^600 where RrsWor scales q, and the ratio sort's workspace.
    std::vector<double> qs;
    OrderWorkspace ows;
    std::vector<int32_t> asc;

    // The row of n drafts on p, q (normalised, read in place until the next build).
    void build(const double* pp, const double* qq, int64_t v, int nd) {
        p = pp;
        V = v;
        n = nd;
        q = RrsWor::scaled_q(qq, V, qs);
        RrsWor::index(*this, p, q, V, ows, asc);
    }
    // The recursion's work (RrsWor::cost) and its value (RrsWor::exact: TooLarge above budget).
    double cost() const { return RrsWor::cost(*this); }
    double exact(double budget) const { return RrsWor::exact(*this, budget); }
};

}  // namespace mdsd::verif::direct
