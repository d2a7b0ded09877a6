// The verifier registry: the verifier table, and the preparation of one row (row.hpp) of any
// verifier under any draft scheme it serves. Names are a contract with the Python layer.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mdsd/core/rng.hpp"
#include "mdsd/core/scheme.hpp"
#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/greedy.hpp"
#include "mdsd/verifiers/kseq.hpp"
#include "mdsd/verifiers/lp.hpp"
#include "mdsd/verifiers/mixed.hpp"
#include "mdsd/verifiers/optimal_iid/plan.hpp"
#include "mdsd/verifiers/optimal_wor/route.hpp"
#include "mdsd/verifiers/row.hpp"
#include "mdsd/verifiers/rrs.hpp"
#include "mdsd/verifiers/sd.hpp"
#include "mdsd/verifiers/topk.hpp"

namespace mdsd::verif {

enum class Kind { Sd, Rrs, RrsWor, Kseq, SpecHub, Greedy, Topk, OptimalLp, Optimal, Sweep };

// The verifier table: what each verifier is, read by the registry below and by the Python layer
// (_core.verifiers.table(): verifiers.py and the gap report build their facts from it).
struct VerifierInfo {
    const char* name;
    Kind kind;
    const char* schemes;  // draft schemes it verifies, comma separated; the first is the default;
                          // "top<m>+iid" / "top<m>+wor": every mixed scheme of that family (mixed.hpp)
    const char* bound;    // the scheme whose alpha* bounds it (under its default scheme)
    int n_min;            // n range; n_max = 0: up to limits::kMaxDrafts
    int n_max;
    const char* report;   // schemes under which the gap report lists it (each at its own alpha*)
    const char* exact;    // how its exact acceptance is computed
};
inline constexpr VerifierInfo kVerifiers[] = {
    {"sd", Kind::Sd, "iid", "iid", 1, 1, "iid,wor,greedy", "closed form: sum min(p, q)"},
    {"rrs", Kind::Rrs, "iid,top<m>+iid", "iid", 1, 0, "iid,top<m>+iid", "closed form over the ratio table"},
    {"rrs-wor", Kind::RrsWor, "wor,top<m>+wor", "wor", 1, 0, "wor,top<m>+wor",
     "recursion over draft prefixes (refused beyond the budget)"},
    {"kseq", Kind::Kseq, "iid,top<m>+iid", "iid", 1, 0, "iid,top<m>+iid", "closed form at the optimal rho"},
    {"spechub", Kind::SpecHub, "spechub", "greedy", 2, 2, "greedy", "closed form"},
    {"greedy", Kind::Greedy, "greedy", "greedy", 1, 0, "greedy", "closed form"},
    {"topk", Kind::Topk, "topk", "topk", 1, 0, "topk", "closed form: p(T)"},
    {"optimal-lp", Kind::OptimalLp, "iid,wor,greedy,topk,top<m>+iid,top<m>+wor", "iid", 1, 0, "iid,wor,greedy",
     "the LP plan's accepted mass"},
    {"optimal", Kind::Optimal, "iid,wor,top<m>+iid,top<m>+wor", "iid", 1, 0, "iid,top<m>+iid",
     "the plan's accepted mass"},
    {"sweep", Kind::Sweep, "wor,top<m>+wor", "wor", 1, 0, "wor,top<m>+wor", "the plan's accepted mass"},
};

inline Kind parse_kind(const std::string& s) {
    for (const VerifierInfo& v : kVerifiers)
        if (s == v.name) return v.kind;
    throw std::invalid_argument("name: unknown verifier '" + s + "'");
}

inline Drafter::Spec parse_drafts(const std::string& s) {
    if (s == "spechub") return Drafter::Hub;
    const DraftScheme ds = parse_draft_scheme(s);
    const Drafter::Kind rest = ds.kind == Scheme::Wor ? Drafter::Wor : Drafter::Iid;
    if (ds.mixed()) return {Drafter::Mixed, rest, ds.top};
    switch (ds.kind) {
        case Scheme::Iid: return Drafter::Iid;
        case Scheme::Wor: return Drafter::Wor;
        case Scheme::Greedy: return Drafter::Greedy;
        default: return Drafter::Topk;
    }
}

inline std::unique_ptr<RowBase> prepare_row(Kind kind, const double* p, const double* q, int64_t V, int n,
                                            const Drafter::Spec& scheme, const LpFlow* lp,
                                            const wor::Options& wor_opt = wor::Options{});

// A mixed scheme: the verifier runs on the split pair's n - m random drafts (mixed.hpp).
inline std::unique_ptr<RowBase> prepare_mixed(Kind kind, const double* p, const double* q, int64_t V, int n,
                                              const Drafter::Spec& scheme, const wor::Options& wor_opt) {
    const bool iid = scheme.rest == Drafter::Iid;
    const bool serves = iid ? (kind == Kind::Rrs || kind == Kind::Kseq || kind == Kind::Optimal)
                            : (kind == Kind::RrsWor || kind == Kind::Sweep || kind == Kind::Optimal);
    if (!serves)
        throw std::invalid_argument(std::string("scheme: this verifier does not serve mixed ") +
                                    (iid ? "top<m>+iid" : "top<m>+wor") + " drafts");
    TopSplit split;
    if (scheme.m < 1 || scheme.m >= n)
        throw std::invalid_argument("scheme: a mixed scheme top<m>+... needs 1 <= m < n, got m = " +
                                    std::to_string(scheme.m) + ", n = " + std::to_string(n));
    split.build(p, q, V, scheme.m, n - scheme.m, iid ? Scheme::Iid : Scheme::Wor);
    std::unique_ptr<RowBase> inner;
    try {
        inner = prepare_row(kind, split.p.data(), split.q.data(), V, n - scheme.m, scheme.rest, nullptr, wor_opt);
    } catch (const wor::Refused& r) {  // said in the caller's scheme: top<m>+wor and its alpha* (pT + inner)
        throw wor::Refused("top" + std::to_string(scheme.m) + "+wor", split.pT, r.alpha_star, r.alpha_plan, r.details);
    }
    return std::make_unique<MixedRow>(p, q, V, n, scheme, std::move(split), std::move(inner));
}

// Prepares one row. `scheme` is used by "optimal-lp", "optimal", "sweep" and the mixed schemes,
// `lp` by "optimal-lp" only, `wor_opt` by the without-replacement route of "optimal" and "sweep".
inline std::unique_ptr<RowBase> prepare_row(Kind kind, const double* p, const double* q, int64_t V, int n,
                                            const Drafter::Spec& scheme, const LpFlow* lp,
                                            const wor::Options& wor_opt) {
    if (scheme.kind == Drafter::Mixed && kind != Kind::OptimalLp)
        return prepare_mixed(kind, p, q, V, n, scheme, wor_opt);
    switch (kind) {
        case Kind::Sd: return std::make_unique<Row<Sd>>(Sd::prepare(p, q, V, n));
        case Kind::Rrs: return std::make_unique<Row<Rrs>>(Rrs::prepare(p, q, V, n));
        case Kind::RrsWor: return std::make_unique<Row<RrsWor>>(RrsWor::prepare(p, q, V, n));
        case Kind::Kseq: return std::make_unique<Row<Kseq>>(Kseq::prepare(p, q, V, n));
        case Kind::SpecHub: return std::make_unique<Row<SpecHub>>(SpecHub::prepare(p, q, V, n));
        case Kind::Greedy: return std::make_unique<Row<Greedy>>(Greedy::prepare(p, q, V, n));
        case Kind::Topk: return std::make_unique<Row<Topk>>(Topk::prepare(p, q, V, n));
        case Kind::OptimalLp:
            if (!lp) throw std::invalid_argument("lp: 'optimal-lp' needs the LP solution of every row");
            if (scheme.kind == Drafter::Hub)
                throw std::invalid_argument(
                    "scheme: 'optimal-lp' serves 'iid', 'wor', 'greedy', 'topk' and mixed drafts");
            return std::make_unique<Row<OptimalLp>>(OptimalLp::prepare(p, q, V, n, scheme, *lp));
        case Kind::Optimal:
            if (scheme.kind == Drafter::Iid) return std::make_unique<Row<OptimalIid>>(OptimalIid::prepare(p, q, V, n));
            if (scheme.kind == Drafter::Wor)
                return std::make_unique<Row<wor::OptimalWor>>(
                    wor::OptimalWor::prepare(p, q, V, n, wor::Policy::Strict, wor_opt));
            throw std::invalid_argument("scheme: 'optimal' serves 'iid', 'wor' and mixed drafts");
        case Kind::Sweep:  // the wor plan of "optimal", kept where it is not certified optimal
            if (scheme.kind != Drafter::Wor) throw std::invalid_argument("scheme: 'sweep' serves 'wor'");
            return std::make_unique<Row<wor::OptimalWor>>(
                wor::OptimalWor::prepare(p, q, V, n, wor::Policy::Keep, wor_opt));
    }
    throw std::invalid_argument("name: unknown verifier");
}

}  // namespace mdsd::verif
