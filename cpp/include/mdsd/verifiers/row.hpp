// One prepared verifier plan per batch row behind a small virtual interface, so the binding can loop
// over rows and sample blocks without knowing which verifier it runs. Row<U> wraps a verifier unit U
// (prepare / walk / exact); MixedRow (mixed.hpp) wraps another row.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "mdsd/core/rng.hpp"
#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/kseq.hpp"
#include "mdsd/verifiers/optimal_iid/plan.hpp"
#include "mdsd/verifiers/optimal_wor/route.hpp"
#include "mdsd/verifiers/rrs.hpp"

namespace mdsd::verif {

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
    // `naive`: as in run(), every rejection resamples from p (the classic bug, for power tests).
    virtual int32_t verify(const int32_t* tuple, Rng& rng, bool naive = false) const = 0;
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

    int32_t verify(const int32_t* tuple, Rng& rng, bool naive = false) const override {
        SampleVisitor vis{rng, plan_.samplers(), naive};
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

}  // namespace mdsd::verif
