// Bindings for the engine reference kernels (cpp/include/mdsd/engines/): vLLM V1's rejection
// sampler and SGLang's token-tree verification, every random number an input. Inputs arrive
// validated from python/mdsd_fast/engines/ (shapes, id ranges, uniforms); the tree shape is
// checked here. Every loop runs without the GIL, requests split over threads.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::optional: the arrays that may be None

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/engines/tree.hpp"
#include "mdsd/engines/vllm.hpp"
#include "mdsd/core/parallel.hpp"

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using U8 = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

namespace {

namespace e = mdsd::engines;

template <class A>
const typename A::value_type* data_or_null(const std::optional<A>& a) {
    return a ? a->data() : nullptr;
}

py::array_t<int64_t> filled(std::vector<py::ssize_t> shape) {
    py::array_t<int64_t> out(shape);
    std::fill(out.mutable_data(), out.mutable_data() + out.size(), e::kPlaceholder);
    return out;
}

py::array_t<int64_t> rejection_sample(const I64& draft_token_ids, const I64& cu_num_draft_tokens,
                                      const std::optional<F64>& draft_probs, const F64& target_probs,
                                      const I64& bonus_token_ids, const std::optional<U8>& is_greedy,
                                      const std::optional<F64>& uniform_probs, const std::optional<F64>& recovery_noise,
                                      int64_t max_spec_len, int threads) {
    e::ChainBatch c;
    c.B = cu_num_draft_tokens.shape(0);
    c.T = draft_token_ids.shape(0);
    c.V = target_probs.ndim() == 2 ? target_probs.shape(1) : 0;
    c.max_spec_len = max_spec_len;
    if (target_probs.ndim() != 2 || target_probs.shape(0) != c.T || bonus_token_ids.shape(0) != c.B)
        throw std::invalid_argument("target_probs, bonus_token_ids: expected shapes (T, V) and (B,)");
    c.draft_token_ids = draft_token_ids.data();
    c.cu_num_draft_tokens = cu_num_draft_tokens.data();
    c.draft_probs = data_or_null(draft_probs);
    c.target_probs = target_probs.data();
    c.bonus_token_ids = bonus_token_ids.data();
    c.is_greedy = data_or_null(is_greedy);
    c.uniform_probs = data_or_null(uniform_probs);
    c.recovery_noise = data_or_null(recovery_noise);
    auto out = filled({static_cast<py::ssize_t>(c.B), static_cast<py::ssize_t>(max_spec_len + 1)});
    int64_t* o = out.mutable_data();
    py::gil_scoped_release nogil;
    mdsd::parallel_rows<std::vector<double>>(
        c.B, threads, [&](int64_t b, std::vector<double>& score) { e::rejection_sample_request(c, b, o, score); });
    return out;
}

py::tuple tree_sample(const I64& candidates, const I64& retrive_index, const I64& next_token, const I64& next_sibling,
                      const F64& uniform_samples, const F64& uniform_final, const F64& target_probs,
                      const std::optional<F64>& draft_probs, int64_t num_spec, const std::string& verifier,
                      const std::string& scheme, double threshold_single, double threshold_acc, double work_budget,
                      int threads) {
    e::TreeBatch t;
    if (candidates.ndim() != 2 || target_probs.ndim() != 3)
        throw std::invalid_argument("candidates, target_probs: expected shapes (B, N) and (B, N, V)");
    t.B = candidates.shape(0);
    t.N = candidates.shape(1);
    t.V = target_probs.shape(2);
    t.candidates = candidates.data();
    t.retrive_index = retrive_index.data();
    t.next_token = next_token.data();
    t.next_sibling = next_sibling.data();
    t.uniform_samples = uniform_samples.data();
    t.uniform_final = uniform_final.data();
    t.target_probs = target_probs.data();
    t.draft_probs = data_or_null(draft_probs);
    const bool own = verifier == "sglang";
    e::RegistryRule rule;
    if (!own) {
        rule.kind = mdsd::verif::parse_kind(verifier);
        if (rule.kind == mdsd::verif::Kind::OptimalLp)
            throw std::invalid_argument("verifier: 'optimal-lp' needs an LP solve per node; it is not served here");
        if (!t.draft_probs)
            throw std::invalid_argument("draft_probs: verifier '" + verifier + "' needs the draft distributions");
        rule.scheme = mdsd::verif::parse_drafts(scheme);
        for (const auto& info : mdsd::verif::kVerifiers)
            if (info.kind == rule.kind) {
                rule.n_min = info.n_min;
                if (info.n_max > 0) rule.n_max = info.n_max;
            }
        rule.wor_opt.work_budget = work_budget;
    }
    std::vector<int64_t> depth(t.B, 0);
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<e::TreeScratch>(
            t.B, threads, [&](int64_t b, e::TreeScratch& ws) { depth[b] = e::tree_depth(t, b, ws.seen, ws.stack); });
    }
    if (num_spec <= 0) num_spec = (t.B ? *std::max_element(depth.begin(), depth.end()) : 0) + 1;
    t.num_spec = num_spec;
    auto predicts = filled({static_cast<py::ssize_t>(t.B * t.N)});
    auto accept_index = filled({static_cast<py::ssize_t>(t.B), static_cast<py::ssize_t>(num_spec)});
    auto accept_num = filled({static_cast<py::ssize_t>(t.B)});
    const e::TreeOut o{predicts.mutable_data(), accept_index.mutable_data(), accept_num.mutable_data()};
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<e::TreeScratch>(t.B, threads, [&](int64_t b, e::TreeScratch& ws) {
            if (own) e::sglang_request(t, b, threshold_single, threshold_acc, o, ws.p, ws.rejected);
            else e::registry_request(t, b, rule, o, ws);
        });
    }
    return py::make_tuple(predicts, accept_index, accept_num);
}

}  // namespace

void register_engines(py::module_& m) {
    m.def("rejection_sample", &rejection_sample, py::arg("draft_token_ids"), py::arg("cu_num_draft_tokens"),
          py::arg("draft_probs"), py::arg("target_probs"), py::arg("bonus_token_ids"), py::arg("is_greedy"),
          py::arg("uniform_probs"), py::arg("recovery_noise"), py::arg("max_spec_len"), py::arg("threads") = 0,
          "vLLM V1's rejection_sample on validated arrays: int64 (B, max_spec_len + 1), -1 placeholders.");
    m.def("tree_sample", &tree_sample, py::arg("candidates"), py::arg("retrive_index"), py::arg("retrive_next_token"),
          py::arg("retrive_next_sibling"), py::arg("uniform_samples"), py::arg("uniform_samples_for_final_sampling"),
          py::arg("target_probs"), py::arg("draft_probs"), py::arg("num_speculative_tokens"), py::arg("verifier"),
          py::arg("scheme"), py::arg("threshold_single"), py::arg("threshold_acc"), py::arg("work_budget"),
          py::arg("threads") = 0,
          "SGLang's token-tree verification (verifier='sglang') or a registry verifier at every node, on\n"
          "validated arrays: (predicts (B*N,), accept_index (B, num_speculative_tokens), accept_token_num (B,)),\n"
          "int64 with -1 placeholders. num_speculative_tokens <= 0: the deepest tree's depth + 1.");
}
