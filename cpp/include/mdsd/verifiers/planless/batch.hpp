// The engine case end to end, one row at a time (bound as _core.verifiers.verify_direct): the raw input row
// (float32 or float64, as the caller has it) is validated by validate.hpp's pair pass, scaled by
// 1/sum into the thread's scratch (within an ulp of _validate.as_pair's rows, without a (B, V) copy),
// and walked by planless/rrs.hpp ("sd", "rrs", "rrs-wor"), planless/kseq.hpp ("kseq") or, for "optimal"
// with i.i.d. drafts, optimal_iid/planless.hpp (the split and the drafts' windows, no plan). A row is read
// from memory once; every later pass runs on the scratch, which stays in cache.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mdsd/inputs/validate.hpp"
#include "mdsd/verifiers/planless/rrs.hpp"
#include "mdsd/verifiers/planless/kseq.hpp"
#include "mdsd/verifiers/optimal_iid/planless.hpp"

namespace mdsd::verif::direct {

enum class Kind { Rrs, RrsWor, Kseq, Optimal };

inline Kind parse_direct(const std::string& name) {
    if (name == "sd" || name == "rrs") return Kind::Rrs;
    if (name == "rrs-wor") return Kind::RrsWor;
    if (name == "kseq") return Kind::Kseq;
    if (name == "optimal") return Kind::Optimal;  // i.i.d. drafts: the caller routes no other scheme here
    throw std::invalid_argument("name: the direct route serves 'sd', 'rrs', 'rrs-wor', 'kseq' and 'optimal', got '" +
                                name + "'");
}

// Buckets of the levels before the optimal drafts (shadow::remaining_at, one pass per system):
// bench/verifiers/planless_levels.cpp's choice (64 and 1,024 are 6-26 % slower at V = 49,152), the same law as
// without buckets (test_planless_optimal_iid.cpp).
constexpr int kOptimalBuckets = 256;

// One thread's normalised row, kseq's bracket and optimal's workspaces.
struct Scratch {
    std::vector<double> p, q;
    KseqBracket kseq;
    DualWorkspace dual;
    shadow::TupleRow row;  // reused: its buffers outlive the row
    shadow::TupleRace race;
    Categorical target;  // p, the fallback of an empty residual (as PlanBase::samplers()); built on need
    double psum = 0.0, qsum = 0.0;  // sums of the normalised rows
    double beta1 = 0.0;             // sum of min(p, q) over the normalised rows
};

// What validation found in a row: per side (p, q) a validate::Status and its value.
struct RowCheck {
    int status[2] = {validate::kOk, validate::kOk};
    double value[2] = {0.0, 0.0};
    bool ok() const { return status[0] == validate::kOk && status[1] == validate::kOk; }
};

// Validate raw rows p, q and write p / sum(p), q / sum(q) into ws; false (chk set) if invalid.
// divide: each entry divided by its row's sum, as_pair's rows bit for bit. "optimal" needs it: its
// law given a tuple follows the ratio order p/q, ties included, which a 1-ulp change can reorder.
template <class T>
bool normalise_pair(const T* p, const T* q, int64_t V, double tol, Scratch& ws, RowCheck& chk, bool divide = false) {
    double sums[2];
    if (!validate::pair_sums(p, q, V, tol, sums, chk.status, chk.value)) return false;
    ws.p.resize(static_cast<std::size_t>(V));
    ws.q.resize(static_cast<std::size_t>(V));
    double* po = ws.p.data();
    double* qo = ws.q.data();
    if (divide) {
        for (int64_t i = 0; i < V; ++i) {
            po[i] = static_cast<double>(p[i]) / sums[0];
            qo[i] = static_cast<double>(q[i]) / sums[1];
        }
        return true;
    }
    // x * (1/sum), within an ulp of as_pair's x / sum (a division per entry would cost more than
    // the pass), and the sums walk_rrs starts from.
    double scaled[3];
    simd::scale_pair(p, q, V, 1.0 / sums[0], 1.0 / sums[1], po, qo, scaled);
    ws.psum = scaled[0];
    ws.qsum = scaled[1];
    ws.beta1 = scaled[2];
    return true;
}

// Index of the first draft of t with q = 0 in the normalised row, or -1.
inline int first_q_zero(const Scratch& ws, const int32_t* t, int n) {
    for (int k = 0; k < n; ++k)
        if (!(ws.q[t[k]] > 0.0)) return k;
    return -1;
}

// The walk of `kind` on the normalised row in ws. The visitor's fallback must be ws.target (an
// optimal row whose residual is empty, alpha* = 1 up to rounding, falls back to p as the plan does).
template <class Vis>
void walk_row(Kind kind, Scratch& ws, int64_t V, const int32_t* t, int n, Vis& vis) {
    if (kind == Kind::Optimal) {
        ws.race.buckets = kOptimalBuckets;
        const bool sampler = std::is_same_v<Vis, SampleVisitor>;  // the residual on rejection only
        shadow::make_row(ws.row, ws.p.data(), ws.q.data(), V, n, ws.dual, !sampler);
        if constexpr (std::is_same_v<Vis, SampleVisitor>) {
            shadow::walk_lazy(ws.row, t, ws.race, vis, ws.target);
        } else {
            if (ws.row.res.empty()) ws.target.build(ws.p.data(), V);
            shadow::walk(ws.row, t, ws.race, vis);
        }
    } else if (kind == Kind::Kseq) walk_kseq(ws.p.data(), ws.q.data(), V, t, n, ws.beta1, ws.kseq, vis);
    else walk_rrs(ws.p.data(), ws.q.data(), V, t, n, kind == Kind::RrsWor, vis, ws.psum, ws.qsum);
}

}  // namespace mdsd::verif::direct
