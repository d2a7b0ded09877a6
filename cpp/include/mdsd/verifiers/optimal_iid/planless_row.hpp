// One row of the plan-free i.i.d. optimal verifier (optimal_iid/planless.hpp): the split into the inner
// system (H*) and the outer one, each system's tokens in cutting order, and the residual
// r = p - a (docs/theory/level_race.md §12.5-§12.6):
//   inner windows and the outer exact prefix end at a = p (r = 0; the plan keeps ~1-ulp leftovers
//   there), q = 0 tokens keep r = p, and the outer capped suffix (§12.6: after the first window
//   that cannot reach p(y), every window is the top one) tiles the levels left by the exact prefix
//   from the top, so its loads come from one walk over those levels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/verifiers/certificate_split.hpp"
#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/optimal_iid/level_windows.hpp"
#include "mdsd/verifiers/optimal_iid/remaining_levels.hpp"

namespace mdsd::verif::shadow {

// One row, ready for the tuples drafted from it. System 0 is the inner one (H*, cut from the
// bottom by descending p/q), 1 the outer one (cut from the top by ascending p/q).
struct TupleRow {
    const double* p = nullptr;
    const double* q = nullptr;
    int64_t V = 0;
    int n = 1;
    double alpha_star = 0.0;
    std::vector<Side> side;
    std::vector<int64_t> at;       // token -> its index in its system's cutting order
    std::vector<int32_t> ct[2];        // each system's tokens in cutting order
    std::vector<double> cq[2], cp[2];  // their q and p
    std::vector<double> total[2];  // measure left before each cut, rounded as the plan's cut does
    System sys[2];
    int64_t exact_outer = 0;  // outer windows that reach p(y); the rest is the capped suffix
    Categorical res;          // the residual r = p - a (once build_residual ran)
    std::vector<double> rw;   // its weights by token (build_residual's scratch)
};

// The loads of the capped suffix: widths w[0..m) tiled from the end R is cut from (outer: the top),
// the last taking what is left. R: segments by ascending level.
inline void tile_loads(const std::vector<Seg>& R, const double* w, int64_t m, int n, double* load) {
    int64_t s = static_cast<int64_t>(R.size()) - 1;
    double hi = s >= 0 ? R[s].hi : 0.0;  // the top of what is left of segment s
    for (int64_t k = 0; k < m; ++k) {
        double need = w[k], ld = 0.0;
        const bool last = k + 1 == m;
        while (s >= 0 && (last || need > 0.0)) {
            const double lo = last ? R[s].lo : std::max(R[s].lo, hi - need);
            ld += level::diffpow(lo, hi, n);
            need -= hi - lo;
            hi = lo;
            if (!(hi > R[s].lo)) {
                if (--s >= 0) hi = R[s].hi;
            } else if (!last) {
                break;
            }
        }
        load[k] = ld;
    }
}

// The residual r = p - a of a row: only a rejected tuple needs it (walk_lazy).
inline void build_residual(TupleRow& r);

// The split, the cutting orders and (residual = true) the residual of one row, into r: a row
// reused from one call to the next keeps its buffers (at V = 49,152 a fresh row's ~2 MB of page
// faults cost more than the split itself). ws: dual_prefix_ordered's workspace.
inline void make_row(TupleRow& r, const double* p, const double* q, int64_t V, int n, DualWorkspace& ws,
                     bool residual = true) {
    r.p = p;
    r.q = q;
    r.V = V;
    r.n = n;
    const DualResult dr = dual_prefix_ordered(p, q, V, n, ws);
    r.alpha_star = dr.alpha;
    const std::vector<int32_t>& ord = ws.order;
    const int64_t K = static_cast<int64_t>(ord.size()), ks = dr.k_star;
    r.side.assign(V, Side::Never);
    r.at.assign(V, -1);
    double qH = 0.0, qA = 0.0;  // summed as OptimalIid::prepare sums them
    for (int64_t k = 0; k < ks; ++k) qH += q[ord[k]];
    for (int64_t k = ks; k < K; ++k) qA += q[ord[k]];
    r.sys[0] = System{0.0, qH, n, true};
    r.sys[1] = System{qH, qA, n, false};
    for (int s = 0; s < 2; ++s) {
        const int64_t m = s == 0 ? ks : K - ks;
        r.ct[s].resize(m);
        r.cq[s].resize(m);
        r.cp[s].resize(m);
        r.total[s].resize(m);
        double left = s == 0 ? qH : qA;
        for (int64_t k = 0; k < m; ++k) {
            const int32_t y = s == 0 ? ord[ks - 1 - k] : ord[ks + k];
            r.side[y] = s == 0 ? Side::Inner : Side::Outer;
            r.at[y] = k;
            r.ct[s][k] = y;
            r.cq[s][k] = q[y];
            r.cp[s][k] = p[y];
            r.total[s][k] = left;
            left = std::max(0.0, left - q[y]);
        }
    }
    if (residual) build_residual(r);
}

inline TupleRow make_row(const double* p, const double* q, int64_t V, int n, DualWorkspace& ws, bool residual = true) {
    TupleRow r;
    make_row(r, p, q, V, n, ws, residual);
    return r;
}

inline void build_residual(TupleRow& r) {
    const int64_t V = r.V;
    const int n = r.n;
    std::vector<double>& res = r.rw;
    res.assign(static_cast<std::size_t>(V), 0.0);
    for (int64_t y = 0; y < V; ++y)
        if (r.side[y] == Side::Never) res[y] = r.p[y];
    const int64_t mo = static_cast<int64_t>(r.ct[1].size());
    if (mo > 0) {
        // the last token takes what is left (remaining() does not judge it): it always joins the
        // tiling. R: the levels left by the exact prefix, from the pass that finds where it ends.
        const std::vector<Seg> R =
            remaining(r.sys[1], r.cq[1].data(), r.cp[1].data(), mo - 1, nullptr, &r.exact_outer, true);
        const int64_t e = r.exact_outer, mc = mo - e;
        if (mc > 0) {
            std::vector<double> load(static_cast<std::size_t>(mc));
            tile_loads(R, r.cq[1].data() + e, mc, n, load.data());
            for (int64_t k = 0; k < mc; ++k) res[r.ct[1][e + k]] = std::max(0.0, r.cp[1][e + k] - load[k]);
        }
    }
    r.res.build(res.data(), V);
}

}  // namespace mdsd::verif::shadow
