// The verifier registry: the verifier table, and one prepared plan per batch row behind a small
// virtual interface, so the binding can loop over rows and sample blocks without knowing which
// verifier it runs. Names are a contract with the Python layer.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mdsd/rng.hpp"
#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/greedy.hpp"
#include "mdsd/verifiers/kseq.hpp"
#include "mdsd/verifiers/lp.hpp"
#include "mdsd/verifiers/optimal_iid.hpp"
#include "mdsd/verifiers/optimal_wor/route.hpp"
#include "mdsd/verifiers/rrs.hpp"
#include "mdsd/verifiers/sd.hpp"

namespace mdsd::verif {

enum class Kind { Sd, Rrs, RrsWor, Kseq, SpecHub, Greedy, OptimalLp, Optimal, Sweep };

// The verifier table: what each verifier is, read by the registry below and by the Python layer
// (_core.verifier_table(): verifiers.py and the gap report build their facts from it).
struct VerifierInfo {
    const char* name;
    Kind kind;
    const char* schemes;  // draft schemes it verifies, comma separated; the first is the default
    const char* bound;    // the scheme whose alpha* bounds it (under its default scheme)
    int n_min;            // n range; n_max = 0: up to limits::kMaxDrafts
    int n_max;
    const char* report;   // schemes under which the gap report lists it (each at its own alpha*)
    const char* exact;    // how its exact acceptance is computed
};
inline constexpr VerifierInfo kVerifiers[] = {
    {"sd", Kind::Sd, "iid", "iid", 1, 1, "iid,wor,greedy", "closed form: sum min(p, q)"},
    {"rrs", Kind::Rrs, "iid", "iid", 1, 0, "iid", "closed form over the ratio table"},
    {"rrs-wor", Kind::RrsWor, "wor", "wor", 1, 0, "wor", "recursion over draft prefixes (refused beyond the budget)"},
    {"kseq", Kind::Kseq, "iid", "iid", 1, 0, "iid", "closed form at the optimal rho"},
    {"spechub", Kind::SpecHub, "spechub", "greedy", 2, 2, "greedy", "closed form"},
    {"greedy", Kind::Greedy, "greedy", "greedy", 1, 0, "greedy", "closed form"},
    {"optimal-lp", Kind::OptimalLp, "iid,wor,greedy", "iid", 1, 0, "iid,wor,greedy", "the LP plan's accepted mass"},
    {"optimal", Kind::Optimal, "iid,wor", "iid", 1, 0, "iid", "the plan's accepted mass"},
    {"sweep", Kind::Sweep, "wor", "wor", 1, 0, "wor", "the plan's accepted mass"},
};

inline Kind parse_kind(const std::string& s) {
    for (const VerifierInfo& v : kVerifiers)
        if (s == v.name) return v.kind;
    throw std::invalid_argument("name: unknown verifier '" + s + "'");
}

inline Drafter::Kind parse_drafts(const std::string& s) {
    if (s == "iid") return Drafter::Iid;
    if (s == "wor") return Drafter::Wor;
    if (s == "greedy") return Drafter::Greedy;
    if (s == "spechub") return Drafter::Hub;
    throw std::invalid_argument("scheme: unknown draft scheme '" + s + "'");
}

struct Scratch {
    std::vector<int32_t> tuple;
};

class RowBase {
  public:
    virtual ~RowBase() = default;
    virtual const PlanBase& base() const = 0;
    virtual double exact(double budget) const = 0;
    virtual double cost() const { return 0.0; }
    virtual double rho() const { return 0.0; }
    // The without-replacement route's account of the row (null for other verifiers) and alpha*.
    virtual const wor::Report* route() const { return nullptr; }
    virtual double alpha_star() const { return 0.0; }
    // `count` steps: draft, verify, record (any output pointer may be null).
    virtual int64_t run(Rng& rng, int64_t count, int64_t* tokens, uint8_t* accepted, int64_t* drafts, bool naive,
                        Scratch& ws) const = 0;
    virtual int32_t verify(const int32_t* tuple, Rng& rng) const = 0;
    virtual void law(const int32_t* tuple, double* out, bool naive) const = 0;
    void check(const int32_t* tuple) const { base().drafter.check(base().q.data(), tuple); }
};

template <class U>
class Row final : public RowBase {
  public:
    explicit Row(typename U::Plan&& pl) : plan_(std::move(pl)) {}
    const PlanBase& base() const override { return plan_; }
    double exact(double budget) const override { return U::exact(plan_, budget); }
    double cost() const override {
        if constexpr (std::is_same_v<U, RrsWor>) return RrsWor::cost(plan_);
        else return 0.0;
    }
    double rho() const override {
        if constexpr (std::is_same_v<U, Kseq>) return plan_.rho;
        else return 0.0;
    }
    const wor::Report* route() const override {
        if constexpr (std::is_same_v<U, wor::OptimalWor>) return &plan_.route;
        else return nullptr;
    }
    double alpha_star() const override {
        if constexpr (std::is_same_v<U, wor::OptimalWor> || std::is_same_v<U, OptimalIid>) return plan_.alpha_star;
        else return 0.0;
    }

    int64_t run(Rng& rng, int64_t count, int64_t* tokens, uint8_t* accepted, int64_t* drafts, bool naive,
                Scratch& ws) const override {
        const int n = plan_.n;
        ws.tuple.resize(n);
        int32_t* t = ws.tuple.data();
        int64_t hits = 0;
        const Categorical& target = plan_.samplers();
        for (int64_t s = 0; s < count; ++s) {
            plan_.drafter.draw(plan_.q.data(), rng, t);
            SampleVisitor vis{rng, target, naive};
            U::walk(plan_, t, vis);
            const bool acc = contains(t, n, vis.out);
            hits += acc;
            if (tokens) tokens[s] = vis.out;
            if (accepted) accepted[s] = acc;
            if (drafts)
                for (int k = 0; k < n; ++k) drafts[s * n + k] = t[k];
        }
        return hits;
    }

    int32_t verify(const int32_t* tuple, Rng& rng) const override {
        SampleVisitor vis{rng, plan_.samplers(), false};
        U::walk(plan_, tuple, vis);
        return vis.out;
    }

    void law(const int32_t* tuple, double* out, bool naive) const override {
        LawVisitor vis{out, plan_.samplers(), naive};
        U::walk(plan_, tuple, vis);
    }

  private:
    typename U::Plan plan_;
};

// Prepares one row. `scheme` is used by "optimal-lp", "optimal" and "sweep", `lp` by "optimal-lp"
// only, `wor_opt` by the without-replacement route of "optimal" and "sweep".
inline std::unique_ptr<RowBase> prepare_row(Kind kind, const double* p, const double* q, int64_t V, int n,
                                            Drafter::Kind scheme, const LpFlow* lp,
                                            const wor::Options& wor_opt = wor::Options{}) {
    switch (kind) {
        case Kind::Sd: return std::make_unique<Row<Sd>>(Sd::prepare(p, q, V, n));
        case Kind::Rrs: return std::make_unique<Row<Rrs>>(Rrs::prepare(p, q, V, n));
        case Kind::RrsWor: return std::make_unique<Row<RrsWor>>(RrsWor::prepare(p, q, V, n));
        case Kind::Kseq: return std::make_unique<Row<Kseq>>(Kseq::prepare(p, q, V, n));
        case Kind::SpecHub: return std::make_unique<Row<SpecHub>>(SpecHub::prepare(p, q, V, n));
        case Kind::Greedy: return std::make_unique<Row<Greedy>>(Greedy::prepare(p, q, V, n));
        case Kind::OptimalLp:
            if (!lp) throw std::invalid_argument("lp: 'optimal-lp' needs the LP solution of every row");
            if (scheme == Drafter::Hub)
                throw std::invalid_argument("scheme: 'optimal-lp' serves 'iid', 'wor' and 'greedy'");
            return std::make_unique<Row<OptimalLp>>(OptimalLp::prepare(p, q, V, n, scheme, *lp));
        case Kind::Optimal:
            if (scheme == Drafter::Iid) return std::make_unique<Row<OptimalIid>>(OptimalIid::prepare(p, q, V, n));
            if (scheme == Drafter::Wor)
                return std::make_unique<Row<wor::OptimalWor>>(
                    wor::OptimalWor::prepare(p, q, V, n, wor::Policy::Strict, wor_opt));
            throw std::invalid_argument("scheme: 'optimal' serves 'iid' and 'wor'");
        case Kind::Sweep:  // the wor plan of "optimal", kept where it is not certified optimal
            if (scheme != Drafter::Wor) throw std::invalid_argument("scheme: 'sweep' serves 'wor'");
            return std::make_unique<Row<wor::OptimalWor>>(
                wor::OptimalWor::prepare(p, q, V, n, wor::Policy::Keep, wor_opt));
    }
    throw std::invalid_argument("name: unknown verifier");
}

}  // namespace mdsd::verif
