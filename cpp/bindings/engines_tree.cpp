// Binding of SGLang's token-tree verification (cpp/include/mdsd/engines/tree.hpp), every random
// number an input. python/mdsd_fast/engines/ checks the types and shapes; the ids, the tree slots,
// the uniforms, the tree shape and the float32 / float64 rows (read in place) are checked here,
// the rows and the tree in the kernel's own pass over each request (engines_args.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::optional: the arrays that may be None

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engines_args.hpp"
#include "mdsd/core/parallel.hpp"
#include "mdsd/engines/tree.hpp"

namespace py = pybind11;

namespace {

namespace e = mdsd::engines;
using namespace mdsd::bindings::engines;

struct TreeArgs {
    e::Rule rule = e::Rule::Sglang;
    e::RegistryRule registry;
    double threshold_single = 1.0, threshold_acc = 1.0;
    int64_t num_spec = 0;
    int threads = 0;
};

template <class P>
py::tuple run_tree(e::TreeBatch<P>& t, TreeArgs& a) {
    std::vector<int64_t> depth(t.B, 0);
    std::vector<e::TreeErrors> errs(t.B);
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<e::TreeScratch>(t.B, a.threads, [&](int64_t b, e::TreeScratch& ws) {
            depth[b] = e::tree_check(t, b, ws.seen, ws.stack, errs[b]);
        });
    }
    static const char* const names[] = {"target_probs", "draft_probs"};
    static const char* const zero[] = {"", " (or 0: a row of zeros)"};
    raise_first(errs, 2, names, zero, t.tol);
    for (int64_t b = 0; b < t.B; ++b)
        if (errs[b].twice >= 0)
            throw std::invalid_argument("retrive_next_token, retrive_next_sibling: " + e::where(b, errs[b].twice) +
                                        " is reached twice from the root (a cycle or a shared child)");
    t.num_spec = a.num_spec > 0 ? a.num_spec : (t.B ? *std::max_element(depth.begin(), depth.end()) : 0) + 1;
    auto predicts = filled({static_cast<py::ssize_t>(t.B * t.N)}, "candidates");
    auto accept_index = filled({static_cast<py::ssize_t>(t.B), static_cast<py::ssize_t>(t.num_spec)}, "candidates");
    auto accept_num = filled({static_cast<py::ssize_t>(t.B)}, "candidates");
    const e::TreeOut o{predicts.mutable_data(), accept_index.mutable_data(), accept_num.mutable_data()};
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<e::TreeScratch>(t.B, a.threads, [&](int64_t b, e::TreeScratch& ws) {
            if (a.rule == e::Rule::Registry) e::registry_request(t, b, a.registry, o, ws);
            else e::sglang_request(t, b, a.rule, a.threshold_single, a.threshold_acc, o, ws.p, ws.rejected);
        });
    }
    return py::make_tuple(predicts, accept_index, accept_num);
}

// The slots of predicts: retrive_index in [0, B * N) and distinct, or b * N + i when it is None.
std::vector<int64_t> slots(const std::optional<I64>& retrive_index, int64_t B, int64_t N) {
    const int64_t n = B * N;
    if (!retrive_index) {
        std::vector<int64_t> idx(static_cast<std::size_t>(n));
        for (int64_t k = 0; k < n; ++k) idx[k] = k;
        return idx;
    }
    if (retrive_index->ndim() != 2 || retrive_index->shape(0) != B || retrive_index->shape(1) != N)
        throw std::invalid_argument("retrive_index: expected shape (B, N)");
    check_ids(*retrive_index, 0, n - 1, "retrive_index");
    std::vector<bool> seen(static_cast<std::size_t>(n));
    const int64_t* x = retrive_index->data();
    for (int64_t k = 0; k < n; ++k) {
        if (seen[x[k]])
            throw std::invalid_argument(
                "retrive_index: entries must be distinct (each node owns one slot of predicts)");
        seen[x[k]] = true;
    }
    return std::vector<int64_t>(x, x + n);
}

py::tuple tree_sample(const I64& candidates, const std::optional<I64>& retrive_index, const I64& next_token,
                      const I64& next_sibling, const py::array& uniform_samples, const py::array& uniform_final,
                      const py::array& target_probs, const std::optional<py::array>& draft_probs, int64_t num_spec,
                      const std::string& verifier, const std::string& scheme, double threshold_single,
                      double threshold_acc, double work_budget, double tol, int threads) {
    int64_t ts = 0, ds = 0;
    int pk = 0, dk = 0;
    const py::array tp = float_rows(target_probs, 3, "target_probs", ts, pk);
    const int64_t B = tp.shape(0), N = tp.shape(1), V = tp.shape(2);
    // the shapes the Python layer checks, again for direct calls: nothing below reads out of bounds
    for (const I64* a : {&candidates, &next_token, &next_sibling})
        if (a->ndim() != 2 || a->shape(0) != B || a->shape(1) != N)
            throw std::invalid_argument(
                "candidates, retrive_next_token, retrive_next_sibling: expected shape (B, N) of target_probs (B, N, "
                "V)");
    if (uniform_samples.ndim() != 2 || uniform_samples.shape(0) != B || uniform_samples.shape(1) != N ||
        uniform_final.ndim() != 1 || uniform_final.shape(0) != B)
        throw std::invalid_argument(
            "uniform_samples, uniform_samples_for_final_sampling: expected shapes (B, N), (B,)");
    if (N == 0 && B > 0) throw std::invalid_argument("target_probs: a tree needs at least its root (N >= 1)");
    std::optional<py::array> dp;
    if (draft_probs) {
        dp = float_rows(*draft_probs, 3, "draft_probs", ds, dk);
        if (dk != pk || dp->shape(0) != B || dp->shape(1) != N || dp->shape(2) != V)
            throw std::invalid_argument("draft_probs: expected the dtype and shape (B, N, V) of target_probs");
    }
    if (num_spec > N) throw std::invalid_argument("num_speculative_tokens: at most N");
    // the values, in the order the Python layer used to check them
    check_ids(candidates, 0, V - 1, "candidates");
    check_ids(next_token, -1, N - 1, "retrive_next_token");
    check_ids(next_sibling, -1, N - 1, "retrive_next_sibling");
    if (B * N > int64_t{2147483647})
        throw std::invalid_argument("candidates: B * N = " + std::to_string(B * N) +
                                    " nodes; predicts holds int32 slots (at most 2^31 - 1)");
    const std::vector<int64_t> idx = slots(retrive_index, B, N);
    const F64 coins = unit_uniforms(uniform_samples, "uniform_samples");
    const F64 last_u = unit_uniforms(uniform_final, "uniform_samples_for_final_sampling");
    TreeArgs a;
    a.threads = threads;
    a.num_spec = num_spec;
    // SGLang's kernel takes both thresholds as float32 and floors threshold_acc at 1e-9f.
    a.threshold_single = static_cast<float>(threshold_single);
    a.threshold_acc = std::max(static_cast<float>(threshold_acc), 1e-9f);
    if (verifier == "sglang") {
        a.rule = e::Rule::Sglang;
    } else if (verifier == "sglang-pre-35798") {
        a.rule = e::Rule::SglangPre35798;
    } else {
        a.rule = e::Rule::Registry;
        auto& rule = a.registry;
        rule.kind = mdsd::verif::parse_kind(verifier);
        if (rule.kind == mdsd::verif::Kind::OptimalLp)
            throw std::invalid_argument("verifier: 'optimal-lp' needs an LP solve per node; it is not served here");
        if (!dp) throw std::invalid_argument("draft_probs: verifier '" + verifier + "' needs the draft distributions");
        rule.scheme = mdsd::verif::parse_drafts(scheme);
        for (const auto& info : mdsd::verif::kVerifiers)
            if (info.kind == rule.kind) {
                rule.n_min = info.n_min;
                if (info.n_max > 0) rule.n_max = info.n_max;
            }
        rule.wor_opt.work_budget = work_budget;
    }
    auto fill = [&](auto& t) {
        t.B = B, t.N = N, t.V = V, t.tol = tol;
        t.target_stride = ts, t.draft_stride = ds;
        t.candidates = candidates.data();
        t.retrive_index = idx.data();
        t.next_token = next_token.data();
        t.next_sibling = next_sibling.data();
        t.uniform_samples = coins.data();
        t.uniform_final = last_u.data();
        return run_tree(t, a);
    };
    if (pk == 4) {
        e::TreeBatch<float> t;
        t.target_probs = static_cast<const float*>(tp.data());
        t.draft_probs = dp ? static_cast<const float*>(dp->data()) : nullptr;
        return fill(t);
    }
    e::TreeBatch<double> t;
    t.target_probs = static_cast<const double*>(tp.data());
    t.draft_probs = dp ? static_cast<const double*>(dp->data()) : nullptr;
    return fill(t);
}

}  // namespace

void register_engines_tree(py::module_& m) {
    m.def("tree_sample", &tree_sample, py::arg("candidates"), py::arg("retrive_index"), py::arg("retrive_next_token"),
          py::arg("retrive_next_sibling"), py::arg("uniform_samples"), py::arg("uniform_samples_for_final_sampling"),
          py::arg("target_probs"), py::arg("draft_probs"), py::arg("num_speculative_tokens"), py::arg("verifier"),
          py::arg("scheme"), py::arg("threshold_single"), py::arg("threshold_acc"), py::arg("work_budget"),
          py::arg("tol"), py::arg("threads") = 0,
          "SGLang's token-tree verification (verifier='sglang', or 'sglang-pre-35798' for the rule before\n"
          "SGLang PR #35798) or a registry verifier at every node: (predicts (B*N,), accept_index\n"
          "(B, num_speculative_tokens), accept_token_num (B,)), int32 with -1 placeholders.\n"
          "Types and shapes checked by the caller; ids, retrive_index (None: b * N + i), the uniforms,\n"
          "the tree and the rows checked here. num_speculative_tokens <= 0: the deepest tree's depth + 1.");
}
