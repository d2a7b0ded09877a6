// VerifierBatch, the class of mdsd_fast._core.verifiers: one registry verifier prepared for every
// row of (B, V) arrays (docs/theory/verifiers.md §8): exact acceptance, simulation, verification of given
// drafts and the exact conditional output law. Inputs arrive validated and normalised from
// python/mdsd_fast/verifiers/; every loop runs without the GIL.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/core/parallel.hpp"
#include "mdsd/core/rng.hpp"
#include "mdsd/verifiers/registry.hpp"
#include "row_keys.hpp"

namespace mdsd::bindings {

namespace py = pybind11;
namespace v = mdsd::verif;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using I32 = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;


// Samples are drawn in blocks of this many steps; block b of row r uses the stream
// (seed, id(r) * 2^32 + b), so results do not depend on the number of threads; id(r) is the
// caller's stable row id (row_ids) or r, so a row keyed by its id gives the same samples in any
// batch, chunk or order.
constexpr int64_t kBlock = 4096;

struct Workspace {
    v::Scratch scratch;
};

class VerifierBatch {
  public:
    VerifierBatch(const std::string& name, const F64& p, const F64& q, int n, const std::string& scheme,
                  const py::object& lp, int threads, double budget, const py::dict& wor_options)
        : name_(name) {
        if (!(budget >= 0.0))  // 0: the verifier's own default ("optimal" and "sweep" differ; budget.hpp)
            throw std::invalid_argument("budget: must be a positive amount of work (or 0: the default), got " +
                                        std::to_string(budget));
        v::wor::Options wor_opt;
        wor_opt.work_budget = budget;
        for (const auto& kv : wor_options) {
            const std::string k = py::cast<std::string>(kv.first);
            // the reference routes of the tests (budget.hpp, Options)
            if (k == "h_star_every_prefix" || k == "outer_by_division") {
                (k == "h_star_every_prefix" ? wor_opt.h_star_every_prefix : wor_opt.outer_by_division) =
                    py::cast<bool>(kv.second);
                continue;
            }
            const int64_t x = py::cast<int64_t>(kv.second);
            if (x < 1) throw std::invalid_argument("wor_options: " + k + " must be >= 1");
            if (k == "exact_head") wor_opt.exact_head = static_cast<int>(std::min<int64_t>(x, 64));
            else if (k == "event_head") wor_opt.event_head = x;
            else if (k == "last_resort_head") wor_opt.last_resort_head = x;
            else if (k == "chain_depth") wor_opt.chain_depth = static_cast<int>(std::min<int64_t>(x, 64));
            else throw std::invalid_argument("wor_options: unknown option '" + k + "'");
        }
        if (p.ndim() != 2 || q.ndim() != 2 || p.shape(0) != q.shape(0) || p.shape(1) != q.shape(1))
            throw std::invalid_argument("p, q: expected two C-contiguous float64 arrays of the same shape (B, V)");
        if (n < 1) throw std::invalid_argument("n: must be >= 1");
        const v::Kind kind = v::parse_kind(name);
        const v::Drafter::Spec sk = v::parse_drafts(scheme);
        B_ = p.shape(0);
        V_ = p.shape(1);
        n_ = n;
        // Keep the LP arrays (converted to the expected dtypes) alive while the GIL is released.
        std::vector<I64> ptrs;
        std::vector<I32> toks;
        std::vector<F64> flows, weights;
        std::vector<v::LpFlow> flow(B_);
        if (kind == v::Kind::OptimalLp) {
            py::list rows = py::cast<py::list>(lp);
            if (static_cast<int64_t>(rows.size()) != B_)
                throw std::invalid_argument("lp: expected one (set_ptr, set_tokens, flows, set_weights) per row");
            for (int64_t r = 0; r < B_; ++r) {
                py::tuple t = py::cast<py::tuple>(rows[r]);
                ptrs.push_back(py::cast<I64>(t[0]));
                toks.push_back(py::cast<I32>(t[1]));
                flows.push_back(py::cast<F64>(t[2]));
                weights.push_back(py::cast<F64>(t[3]));
                const int64_t S = weights.back().shape(0);
                if (ptrs.back().shape(0) != S + 1 || toks.back().shape(0) != flows.back().shape(0) ||
                    (S + 1 > 0 && ptrs.back().data()[S] != toks.back().shape(0)))
                    throw std::invalid_argument("lp: inconsistent set_ptr / set_tokens / flows / set_weights");
                flow[r] =
                    v::LpFlow{ptrs.back().data(), toks.back().data(), flows.back().data(), weights.back().data(), S};
            }
        }
        rows_.resize(B_);
        const double* pp = p.data();
        const double* qq = q.data();
        const int64_t V = V_;
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<Workspace>(B_, threads, [&](int64_t r, Workspace&) {
            rows_[r] = v::prepare_row(kind, pp + r * V, qq + r * V, V, n, sk,
                                      kind == v::Kind::OptimalLp ? &flow[r] : nullptr, wor_opt);
        });
    }

    py::array_t<double> exact(double budget, int threads) const {
        for (int64_t r = 0; r < B_; ++r) {
            const double c = rows_[r]->cost();
            if (c > budget) rows_[r]->exact(budget);  // throws TooLarge with the estimate
        }
        py::array_t<double> out(B_);
        double* o = out.mutable_data();
        {
            py::gil_scoped_release nogil;
            mdsd::parallel_rows<Workspace>(B_, threads, [&](int64_t r, Workspace&) { o[r] = rows_[r]->exact(budget); });
        }
        return out;
    }

    py::array_t<double> rho() const {
        py::array_t<double> out(B_);
        for (int64_t r = 0; r < B_; ++r) out.mutable_data()[r] = rows_[r]->rho();
        return out;
    }

    // What the without-replacement route did with each row: work spent, whether the budget ran
    // out, the inner order of the kept plan, orders run, alpha* and the plan's acceptance.
    py::dict route() const {
        py::array_t<double> work(B_), work_outer(B_), star(B_), plan(B_);
        py::array_t<bool> out(B_);
        py::array_t<int64_t> order(B_), runs(B_);
        py::list names;
        for (int64_t r = 0; r < B_; ++r) {
            const v::wor::Report* rep = rows_[r]->route();
            work.mutable_data()[r] = rep ? rep->work : 0.0;
            work_outer.mutable_data()[r] = rep ? rep->work_outer : 0.0;
            out.mutable_data()[r] = rep ? rep->out_of_budget : false;
            order.mutable_data()[r] = rep ? rep->best_order : -1;
            runs.mutable_data()[r] = rep ? rep->orders_run : 0;
            names.append(v::wor::order_name(rep ? rep->best_order : -1));
            star.mutable_data()[r] = rows_[r]->alpha_star();
            plan.mutable_data()[r] = rows_[r]->exact(0.0);
        }
        py::dict d;
        d["work"] = work;
        d["work_outer"] = work_outer;
        d["out_of_budget"] = out;
        d["best_order"] = order;
        d["best_order_name"] = names;
        d["orders_run"] = runs;
        d["alpha_star"] = star;
        d["alpha_plan"] = plan;
        return d;
    }

    py::array_t<double> cost() const {
        py::array_t<double> out(B_);
        for (int64_t r = 0; r < B_; ++r) out.mutable_data()[r] = rows_[r]->cost();
        return out;
    }

    py::tuple simulate(int64_t samples, uint64_t seed, int threads, bool naive_residual,
                       const py::object& row_ids) const {
        check_samples(samples);
        const std::vector<uint64_t> keys = row_keys(row_ids, B_);
        py::array_t<int64_t> tokens({B_, samples});
        py::array_t<bool> accepted({B_, samples});
        py::array_t<int64_t> drafts({B_, samples, static_cast<int64_t>(n_)});
        int64_t* t = tokens.mutable_data();
        uint8_t* a = reinterpret_cast<uint8_t*>(accepted.mutable_data());
        int64_t* d = drafts.mutable_data();
        const int64_t nb = (samples + kBlock - 1) / kBlock;
        {
            py::gil_scoped_release nogil;
            mdsd::parallel_rows<Workspace>(B_ * nb, threads, [&](int64_t item, Workspace& ws) {
                const int64_t r = item / nb, b = item % nb;
                const int64_t s0 = b * kBlock, cnt = std::min(kBlock, samples - s0);
                mdsd::Rng rng(seed, (keys[r] << 32) + static_cast<uint64_t>(b));
                const int64_t off = r * samples + s0;
                rows_[r]->run(rng, cnt, t + off, a + off, d + off * n_, naive_residual, ws.scratch);
            });
        }
        return py::make_tuple(tokens, accepted, drafts);
    }

    // Acceptance estimated from `samples` steps per row: (rate[B], standard error[B]).
    py::tuple estimate(int64_t samples, uint64_t seed, int threads, const py::object& row_ids) const {
        check_samples(samples);
        const std::vector<uint64_t> keys = row_keys(row_ids, B_);
        if (samples < 1) throw std::invalid_argument("samples: need at least one sample to estimate");
        const int64_t nb = (samples + kBlock - 1) / kBlock;
        std::vector<int64_t> hits(B_ * nb, 0);
        {
            py::gil_scoped_release nogil;
            mdsd::parallel_rows<Workspace>(B_ * nb, threads, [&](int64_t item, Workspace& ws) {
                const int64_t r = item / nb, b = item % nb;
                const int64_t s0 = b * kBlock, cnt = std::min(kBlock, samples - s0);
                mdsd::Rng rng(seed, (keys[r] << 32) + static_cast<uint64_t>(b));
                hits[item] = rows_[r]->run(rng, cnt, nullptr, nullptr, nullptr, false, ws.scratch);
            });
        }
        py::array_t<double> rate(B_), se(B_);
        for (int64_t r = 0; r < B_; ++r) {
            int64_t h = 0;
            for (int64_t b = 0; b < nb; ++b) h += hits[r * nb + b];
            const double m = static_cast<double>(h) / static_cast<double>(samples);
            rate.mutable_data()[r] = m;
            se.mutable_data()[r] = std::sqrt(m * (1.0 - m) / static_cast<double>(samples));
        }
        return py::make_tuple(rate, se);
    }

    // Verify given tuples (drafts of shape (m, n)): tuple i uses row i, or row 0 for every tuple
    // when the batch has one row. Tuple i draws from the stream (seed, id(i)). Returns (token[m], accepted[m]).
    py::tuple verify(const I64& drafts, uint64_t seed, int threads, const py::object& row_ids) const {
        if (drafts.ndim() != 2 || drafts.shape(1) != n_ || (drafts.shape(0) != B_ && B_ != 1))
            throw std::invalid_argument("drafts: expected shape (B, n) = (" + std::to_string(B_) + ", " +
                                        std::to_string(n_) + ")");
        const int64_t m = drafts.shape(0);
        std::vector<int32_t> tup(static_cast<std::size_t>(m * n_));
        for (int64_t i = 0; i < m * n_; ++i) {
            const int64_t x = drafts.data()[i];
            if (x < 0 || x >= V_)
                throw std::invalid_argument("drafts: token id " + std::to_string(x) + " outside [0, " +
                                            std::to_string(V_) + ")");
            tup[i] = static_cast<int32_t>(x);
        }
        for (int64_t i = 0; i < m; ++i) check_row(i, m, tup.data() + i * n_);
        const std::vector<uint64_t> keys = row_keys(row_ids, m);
        py::array_t<int64_t> tokens(m);
        py::array_t<bool> accepted(m);
        int64_t* t = tokens.mutable_data();
        uint8_t* a = reinterpret_cast<uint8_t*>(accepted.mutable_data());
        {
            py::gil_scoped_release nogil;
            mdsd::parallel_rows<Workspace>(m, threads, [&](int64_t i, Workspace&) {
                mdsd::Rng rng(seed, keys[i]);
                const int32_t* ti = tup.data() + i * n_;
                const int32_t y = rows_[B_ == 1 ? 0 : i]->verify(ti, rng);
                t[i] = y;
                a[i] = v::contains(ti, n_, y);
            });
        }
        return py::make_tuple(tokens, accepted);
    }

    // Exact output law Pr[y | tuple] of row `row` for each tuple (m, n): shape (m, V).
    py::array_t<double> law(const I64& tuples, int64_t row, bool naive_residual) const {
        if (row < 0 || row >= B_) throw std::invalid_argument("row: out of range");
        if (tuples.ndim() != 2 || tuples.shape(1) != n_) throw std::invalid_argument("tuples: expected shape (m, n)");
        const int64_t m = tuples.shape(0);
        std::vector<int32_t> tup(static_cast<std::size_t>(m * n_));
        for (int64_t i = 0; i < m * n_; ++i) {
            const int64_t x = tuples.data()[i];
            if (x < 0 || x >= V_) throw std::invalid_argument("tuples: token id out of range");
            tup[i] = static_cast<int32_t>(x);
        }
        for (int64_t i = 0; i < m; ++i) rows_[row]->check(tup.data() + i * n_);
        py::array_t<double> out({m, V_});
        double* o = out.mutable_data();
        std::fill(o, o + m * V_, 0.0);
        {
            py::gil_scoped_release nogil;
            for (int64_t i = 0; i < m; ++i) rows_[row]->law(tup.data() + i * n_, o + i * V_, naive_residual);
        }
        return out;
    }

    int64_t B() const { return B_; }
    int64_t V() const { return V_; }
    int n() const { return n_; }
    const std::string& name() const { return name_; }

  private:
    static void check_samples(int64_t samples) {
        if (samples < 0) throw std::invalid_argument("samples: must be >= 0");
        if (samples >= (int64_t{1} << 44)) throw std::invalid_argument("samples: too many samples per row");
    }
    void check_row(int64_t i, int64_t m, const int32_t* t) const {
        try {
            rows_[B_ == 1 ? 0 : i]->check(t);
        } catch (const std::invalid_argument& e) {
            std::string msg = e.what();
            if (m > 1 && msg.rfind("drafts: ", 0) == 0) msg = "drafts: row " + std::to_string(i) + ": " + msg.substr(8);
            throw std::invalid_argument(msg);
        }
    }

    std::string name_;
    int64_t B_ = 0, V_ = 0;
    int n_ = 1;
    std::vector<std::unique_ptr<v::RowBase>> rows_;
};

}  // namespace mdsd::bindings
