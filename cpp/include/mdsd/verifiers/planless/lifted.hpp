// Exact acceptance without a plan of "rrs-wor" and of the mixed lifts of the verifiers with a
// plan-free exact route: "rrs" and "kseq" under "top<m>+iid", "rrs-wor" under "top<m>+wor" (the
// verifiers that serve mixed schemes, registry.hpp; "optimal" and "sweep" need their plans). One
// row at a time, in the thread's scratch (bound as _core.verifiers.exact_lifted).
//
// A lifted verifier accepts p(T) + the inner verifier's acceptance on the split pair (mixed.hpp):
// here the split pair is built by the plan's own TopSplit into the scratch, and the inner value
// comes from RrsWorRow (rrs_wor.hpp: the plan's bits) or from the closed forms of exact.hpp ("rrs",
// "kseq": within ~2e-13 of the plans, as unlifted). So "rrs-wor" and "top<m>+wor" give the plan
// route's bits; "top<m>+iid" gives p(T) + the unlifted closed form's value on the split pair.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mdsd/core/parallel.hpp"
#include "mdsd/core/scheme.hpp"
#include "mdsd/verifiers/planless/batch.hpp"
#include "mdsd/verifiers/planless/exact.hpp"
#include "mdsd/verifiers/planless/rrs_wor.hpp"

namespace mdsd::verif::direct {

// What a call computes: `inner` with m = 0 ("rrs-wor" under "wor"), or lifted to top<m>+... .
struct Lifted {
    enum Inner { Rrs, Kseq, RrsWor } inner = RrsWor;
    int m = 0;
    bool wor() const { return inner == RrsWor; }
};

// The verifier and scheme this route serves; false for any other pair.
inline bool parse_lifted(const std::string& name, const std::string& scheme, Lifted& out) {
    const DraftScheme ds = parse_draft_scheme(scheme);  // invalid_argument for a malformed scheme
    if (name == "rrs-wor" && ds.kind == Scheme::Wor) out.inner = Lifted::RrsWor;
    else if ((name == "rrs" || name == "kseq") && ds.kind == Scheme::Iid && ds.mixed())
        out.inner = name == "rrs" ? Lifted::Rrs : Lifted::Kseq;
    else return false;
    out.m = ds.top;
    return true;
}

// One thread's state: the normalised row and the closed forms' state, the split pair, the rrs-wor row.
struct LiftScratch {
    Scratch row;  // the normalised row
    ClosedScratch closed;
    TopSplit split;
    RrsWorRow wor;
};

// One row's outcome: its acceptance; or its number of tokens with q > 0 when the scheme needs
// more (the plan route names the row); or refused: rrs-wor's recursion costs more than the budget.
struct LiftedRow {
    double acc = 0.0;
    int64_t short_of = -1;
    bool refused = false;
};

// The exact acceptance of `s` with n drafts on the normalised row p, q. A row above the budget is
// marked refused and sets `stop`: once set, no row runs the recursion (the call will raise), but
// each still checks its cost, so that the first refused row is found. With `raise`, a row above
// the budget throws RrsWor's TooLarge (the plan route's message) instead.
inline void lifted_row(const Lifted& s, const double* p, const double* q, int64_t V, int n, double budget,
                       LiftScratch& ws, LiftedRow& out, std::atomic<bool>& stop, bool raise = false) {
    // n distinct draws, or the top m plus a draw; T as TopSplit::build picks it
    const int need = s.wor() ? n : s.m + 1;
    {  // the closed forms' top-m scan on this one row (closed::tops)
        rows::TopScan<double> scan;
        scan.start(s.m);
        if (s.m <= 32)
            for (int64_t i = 0; i < V; ++i) scan.see(q[i], i);
        const double* rq[1] = {q};
        int64_t support[1];
        closed::tops(scan, s.m, need, V, rq, ws.closed, support);
        if (support[0] >= 0) {
            out.short_of = support[0];
            return;
        }
        ws.split.T.assign(ws.closed.ids[0].begin(), ws.closed.ids[0].end());
    }
    const double *ip = p, *iq = q;
    if (s.m > 0) {
        ws.split.split(p, q, V);
        ip = ws.split.p.data();
        iq = ws.split.q.data();
    }
    const int ni = n - s.m;
    double inner = 0.0;
    if (s.wor()) {
        ws.wor.build(ip, iq, V, ni);
        if (!raise && ws.wor.cost() > budget) {
            out.refused = true;
            stop.store(true, std::memory_order_relaxed);
            return;
        }
        if (!raise && stop.load(std::memory_order_relaxed)) return;
        inner = ws.wor.exact(budget);
    } else {
        rows::Group<double, 1> g{{ip}, {iq}, {1.0}, {1.0}};  // the split pair, normalised: read in place
        int64_t unused = 0;
        closed_group<double, false>(s.inner == Lifted::Rrs ? Closed::Rrs : Closed::Kseq, g, V, ni, ws.closed, &inner,
                                    &unused);
    }
    out.acc = s.m > 0 ? std::min(1.0, ws.split.pT + inner) : inner;  // as MixedRow::exact, Row<RrsWor>::exact
}

// Row i of (B, V) p, q as the plan route reads it, into p, q, len: prepared float64 rows in place
// (with ids, scattered into a row of `vocab` entries: the dense rows' bits), else validated and
// divided by their sums into the scratch (as_pair's rows bit for bit). False if row i is invalid.
template <class T>
bool lifted_input(const T* pp, const T* qq, int64_t i, int64_t V, double tol, bool prepared, const int64_t* ids,
                  int64_t vocab, Scratch& ws, RowCheck& chk, const double*& p, const double*& q, int64_t& len) {
    len = V;
    if constexpr (std::is_same_v<T, double>) {
        if (prepared && ids) {
            ws.p.assign(static_cast<std::size_t>(vocab), 0.0);
            ws.q.assign(static_cast<std::size_t>(vocab), 0.0);
            for (int64_t j = 0; j < V; ++j) {
                const int64_t id = ids[i * V + j];
                if (id < 0) continue;  // padding
                ws.p[id] = pp[i * V + j];
                ws.q[id] = qq[i * V + j];
            }
            p = ws.p.data();
            q = ws.q.data();
            len = vocab;
            return true;
        }
        if (prepared) {
            p = pp + i * V;
            q = qq + i * V;
            return true;
        }
    }
    if (!normalise_pair(pp + i * V, qq + i * V, V, tol, ws, chk, true)) return false;
    p = ws.p.data();
    q = ws.q.data();
    return true;
}

// Every row of (B, V) p, q (prepared: as lifted_input), on `threads` threads; rchk[i] says whether
// row i is valid and rows[i] what it gave.
template <class T>
void lifted_rows(const Lifted& s, const T* pp, const T* qq, int64_t B, int64_t V, int n, double tol, bool prepared,
                 const int64_t* ids, int64_t vocab, double budget, int threads, std::vector<RowCheck>& rchk,
                 std::vector<LiftedRow>& rows) {
    std::atomic<bool> stop{false};
    parallel_rows<LiftScratch>(B, threads, [&](int64_t i, LiftScratch& ws) {
        const double *p = nullptr, *q = nullptr;
        int64_t len = 0;
        if (!lifted_input(pp, qq, i, V, tol, prepared, ids, vocab, ws.row, rchk[i], p, q, len)) return;
        lifted_row(s, p, q, len, n, budget, ws, rows[i], stop);
    });
}

// Throws the plan route's TooLarge for row i (a row lifted_rows marked refused).
template <class T>
void lifted_refuse(const Lifted& s, const T* pp, const T* qq, int64_t i, int64_t V, int n, double tol, bool prepared,
                   const int64_t* ids, int64_t vocab, double budget) {
    LiftScratch ws;
    RowCheck chk;
    const double *p = nullptr, *q = nullptr;
    int64_t len = 0;
    LiftedRow out;
    std::atomic<bool> stop{false};
    if (lifted_input(pp, qq, i, V, tol, prepared, ids, vocab, ws.row, chk, p, q, len))
        lifted_row(s, p, q, len, n, budget, ws, out, stop, true);
    throw std::logic_error("lifted_refuse: row " + std::to_string(i) + " is within the budget");
}

}  // namespace mdsd::verif::direct
