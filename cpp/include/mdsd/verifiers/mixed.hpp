// Any verifier of the random part, lifted to a mixed scheme "top<m>+iid" / "top<m>+wor"
// (docs/theory/greedy.md §5.2, scheme.hpp). The inner row verifies the n - m random drafts against the
// split pair (T collapsed into the absorbing token t0, q renormalised over V \ T); an output t0
// becomes a draw from p restricted to T, which is always a draft. The output law is p exactly
// whenever the inner verifier is lossless, and the acceptance is p(T) + the inner acceptance, so
// an optimal inner verifier gives alpha*_mixed = p(T) + alpha* of the split pair.
#pragma once

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "mdsd/core/scheme.hpp"
#include "mdsd/verifiers/row.hpp"

namespace mdsd::verif {

class MixedRow final : public RowBase {
  public:
    // `split` must be built from (p, q) with m = spec.m; `inner` prepared on split.p, split.q at n - m.
    MixedRow(const double* p, const double* q, int64_t V, int n, const Drafter::Spec& spec, TopSplit&& split,
             std::unique_ptr<RowBase> inner)
        : split_(std::move(split)), inner_(std::move(inner)) {
        outer_.init(p, q, V, n, spec);
        std::vector<double> w(V, 0.0);
        for (int32_t t : split_.T) w[t] = p[t];
        in_top_.build(w.data(), V);
    }

    const PlanBase& base() const override { return outer_; }
    double exact(double budget) const override { return std::min(1.0, split_.pT + inner_->exact(budget)); }
    double cost() const override { return inner_->cost(); }
    double rho() const override { return inner_->rho(); }
    const wor::Report* route() const override { return inner_->route(); }
    double alpha_star() const override {
        const double a = inner_->alpha_star();
        return a > 0.0 ? std::min(1.0, split_.pT + a) : 0.0;
    }

    int64_t run(Rng& rng, int64_t count, int64_t* tokens, uint8_t* accepted, int64_t* drafts, bool naive,
                Scratch& ws) const override {
        const int n = outer_.n;
        ws.tuple.resize(n);
        int32_t* t = ws.tuple.data();
        outer_.samplers();
        int64_t hits = 0;
        for (int64_t s = 0; s < count; ++s) {
            outer_.drafter.draw(outer_.q.data(), rng, t);
            const int32_t y = lift(inner_->verify(t + outer_.drafter.m, rng, naive), rng);
            const bool acc = contains(t, n, y);
            hits += acc;
            if (tokens) tokens[s] = y;
            if (accepted) accepted[s] = acc;
            if (drafts)
                for (int k = 0; k < n; ++k) drafts[s * n + k] = t[k];
        }
        return hits;
    }

    int32_t verify(const int32_t* tuple, Rng& rng, bool naive = false) const override {
        std::vector<int32_t> r = random_part(tuple);
        return lift(inner_->verify(r.data(), rng, naive), rng);
    }

    void law(const int32_t* tuple, double* out, bool naive) const override {
        std::vector<int32_t> r = random_part(tuple);
        std::vector<double> inner_law(static_cast<std::size_t>(outer_.V), 0.0);
        inner_->law(r.data(), inner_law.data(), naive);
        for (int64_t y = 0; y < outer_.V; ++y)
            if (y != split_.t0) out[y] += inner_law[y];
        if (inner_law[split_.t0] > 0.0) in_top_.add_law(inner_law[split_.t0], out);
    }

  private:
    int32_t lift(int32_t y, Rng& rng) const { return y == split_.t0 && !in_top_.empty() ? in_top_.sample(rng) : y; }

    // The drafts outside T, in their order (check() has verified there are n - m of them).
    std::vector<int32_t> random_part(const int32_t* tuple) const {
        std::vector<int32_t> r;
        for (int k = 0; k < outer_.n; ++k)
            if (!std::binary_search(split_.T.begin(), split_.T.end(), tuple[k])) r.push_back(tuple[k]);
        return r;
    }

    PlanBase outer_;
    TopSplit split_;
    std::unique_ptr<RowBase> inner_;
    Categorical in_top_;  // p restricted to T
};

}  // namespace mdsd::verif
