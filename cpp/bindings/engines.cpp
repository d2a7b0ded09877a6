// Bindings for the engine reference kernels (cpp/include/mdsd/engines/): vLLM V1's rejection
// sampler and SGLang's token-tree verification, every random number an input. Ids, counts and
// (the tree's) uniforms arrive checked from python/mdsd_fast/engines/; the probability rows (float32
// or float64, read in place), vLLM's uniforms and the tree shape are validated here, in the
// kernels' own pass over each request.
// Every loop runs without the GIL, requests split over threads; outputs are int32, the engines' dtype.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::optional: the arrays that may be None

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/core/limits.hpp"
#include "mdsd/core/parallel.hpp"
#include "mdsd/engines/tree.hpp"
#include "mdsd/engines/vllm.hpp"

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using U8 = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

namespace {

namespace e = mdsd::engines;
namespace v = mdsd::validate;

template <class A>
const typename A::value_type* data_or_null(const std::optional<A>& a) {
    return a ? a->data() : nullptr;
}

// The int32 output of the given shape, -1 everywhere; refused above the limits table's bytes
// (counted without overflow).
py::array_t<int32_t> filled(std::vector<py::ssize_t> shape, const char* name) {
    constexpr int64_t most = mdsd::limits::kMaxAllocBytes / 4;
    int64_t entries = 1;
    for (auto s : shape) {
        if (s < 0 || (s > 0 && entries > most / s))
            throw std::invalid_argument(std::string(name) + ": an output of more than " + std::to_string(most) +
                                        " int32 tokens is above the limit of " +
                                        std::to_string(mdsd::limits::kMaxAllocBytes) +
                                        " bytes (limits: max_alloc_bytes)");
        entries *= s;
    }
    if (entries > most)
        throw std::invalid_argument(std::string(name) + ": an output of " + std::to_string(entries) +
                                    " int32 tokens would need " + std::to_string(entries * 4) +
                                    " bytes, above the limit of " + std::to_string(mdsd::limits::kMaxAllocBytes) +
                                    " (limits: max_alloc_bytes)");
    py::array_t<int32_t> out(shape);
    std::fill(out.mutable_data(), out.mutable_data() + out.size(), static_cast<int32_t>(e::kPlaceholder));
    return out;
}

// Every entry of a in [lo, hi): the kernels index with them (the Python layer checks them first, in
// the caller's dtype; this keeps a direct call from reading out of bounds).
void check_ids(const I64& a, int64_t lo, int64_t hi, const char* name) {
    const int64_t* x = a.data();
    for (py::ssize_t i = 0; i < a.size(); ++i)
        if (x[i] < lo || x[i] >= hi)
            throw std::invalid_argument(std::string(name) + ": id " + std::to_string(x[i]) + " outside [" +
                                        std::to_string(lo) + ", " + std::to_string(hi) + ")");
}

// A float32 / float64 array of `ndim` dimensions, read in place when its rows (last axis) are each
// contiguous, evenly spaced and in native byte order; otherwise (rare: strided columns, big-endian)
// a C-contiguous native copy. Sets kind (the item size: 4 or 8) and the distance between rows in
// entries (row r of the flattened leading axes starts at r * stride).
py::array float_rows(const py::array& a, int ndim, const char* name, int64_t& stride, int& kind) {
    if (a.dtype().kind() != 'f' || (a.itemsize() != 4 && a.itemsize() != 8) || a.ndim() != ndim)
        throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(ndim) +
                                    "-D float32 or float64 values");
    kind = static_cast<int>(a.itemsize());
    const auto isz = static_cast<py::ssize_t>(kind);
    const char order = a.dtype().byteorder();
    const uint16_t probe = 1;
    const bool little = *reinterpret_cast<const uint8_t*>(&probe) == 1;
    bool ok = order == '=' || order == '|' || order == (little ? '<' : '>');
    if (a.shape(ndim - 1) > 1) ok = ok && a.strides(ndim - 1) == isz;
    py::ssize_t row = -1;  // bytes between rows; -1: at most one row
    if (ndim == 2 && a.shape(0) > 1) row = a.strides(0);
    if (ndim == 3 && a.shape(1) > 1) {
        row = a.strides(1);
        ok = ok && (a.shape(0) <= 1 || a.strides(0) == a.shape(1) * a.strides(1));
    } else if (ndim == 3 && a.shape(0) > 1) {
        row = a.strides(0);
    }
    ok = ok && (row == -1 || (row >= 0 && row % isz == 0));
    if (ok) {
        stride = row == -1 ? a.shape(ndim - 1) : row / isz;
        return a;
    }
    stride = a.shape(ndim - 1);
    if (kind == 4) return py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
    return py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(a);
}

// The ValueError for the first broken row of the three arrays a kernel validates (in this order).
template <class Err>
void raise_first(const std::vector<Err>& errs, int arrays, const char* const* names, const char* const* zero_ok,
                 double tol) {
    for (int k = 0; k < arrays; ++k)
        for (const auto& er : errs) {
            if (er.row[k] < 0) continue;
            const std::string nm = names[k], r = std::to_string(er.row[k]);
            if (nm == "uniform_probs") {
                char buf[96];
                std::snprintf(buf, sizeof buf, "uniform_probs: uniforms must lie in [0, 1), got %.17g", er.value[k]);
                throw std::invalid_argument(buf);
            }
            if (nm == "recovery_noise")
                throw std::invalid_argument("recovery_noise: Exp(1) noise must be finite and > 0");
            if (er.kind[k] == v::kNonFinite) throw std::invalid_argument(nm + ": row " + r + " contains NaN or inf");
            if (er.kind[k] == v::kNegative) throw std::invalid_argument(nm + ": row " + r + " has negative entries");
            char buf[160];
            std::snprintf(buf, sizeof buf, ": row %s sums to %.9g, not within %g of 1%s", r.c_str(), er.value[k], tol,
                          zero_ok[k]);
            throw std::invalid_argument(nm + buf);
        }
}

template <class P, class E>
void run_chain(e::ChainBatch<P, E>& c, int32_t* o, int threads) {
    std::vector<e::ChainErrors> errs(c.B);
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<int>(c.B, threads, [&](int64_t b, int&) { e::rejection_sample_request(c, b, o, errs[b]); });
    }
    static const char* const names[] = {"target_probs", "draft_probs", "uniform_probs", "recovery_noise"};
    static const char* const zero[] = {"", " (or 0: a row of zeros)", "", ""};
    raise_first(errs, 4, names, zero, c.tol);
}

template <class P, class E>
e::ChainBatch<P, E> chain(const py::array& tp, const std::optional<py::array>& dp,
                          const std::optional<py::array>& noise) {
    e::ChainBatch<P, E> c;
    c.target_probs = static_cast<const P*>(tp.data());
    c.draft_probs = dp ? static_cast<const P*>(dp->data()) : nullptr;
    c.recovery_noise = noise ? static_cast<const E*>(noise->data()) : nullptr;
    return c;
}

py::array_t<int32_t> rejection_sample(const I64& draft_token_ids, const I64& cu_num_draft_tokens,
                                      const std::optional<py::array>& draft_probs, const py::array& target_probs,
                                      const I64& bonus_token_ids, const std::optional<U8>& is_greedy,
                                      const std::optional<F64>& uniform_probs,
                                      const std::optional<py::array>& recovery_noise, int64_t max_spec_len, double tol,
                                      int threads) {
    int64_t ts = 0, ds = 0, ns = 0;
    int pk = 0, dk = 0, ek = 8;
    const py::array tp = float_rows(target_probs, 2, "target_probs", ts, pk);
    const int64_t B = cu_num_draft_tokens.shape(0), T = draft_token_ids.shape(0), V = tp.shape(1);
    if (tp.shape(0) != T || bonus_token_ids.shape(0) != B)
        throw std::invalid_argument("target_probs, bonus_token_ids: expected shapes (T, V) and (B,)");
    std::optional<py::array> dp, noise;
    if (draft_probs) {
        dp = float_rows(*draft_probs, 2, "draft_probs", ds, dk);
        if (dk != pk || dp->shape(0) != T || dp->shape(1) != V)
            throw std::invalid_argument("draft_probs: expected the dtype and shape (T, V) of target_probs");
    }
    if (recovery_noise) {
        noise = float_rows(*recovery_noise, 2, "recovery_noise", ns, ek);
        if (noise->shape(0) != B || noise->shape(1) != V)
            throw std::invalid_argument("recovery_noise: expected shape (B, V)");
    }
    if (draft_token_ids.ndim() != 1 || cu_num_draft_tokens.ndim() != 1 || bonus_token_ids.ndim() != 1)
        throw std::invalid_argument("draft_token_ids, cu_num_draft_tokens, bonus_token_ids: expected 1-D arrays");
    check_ids(draft_token_ids, -1, V, "draft_token_ids");
    check_ids(bonus_token_ids, 0, V, "bonus_token_ids");
    if (max_spec_len < 0 || max_spec_len >= mdsd::limits::kMaxAllocBytes / 4)
        throw std::invalid_argument("max_spec_len: expected an integer in [0, max_alloc_bytes / 4)");
    for (int64_t b = 0, prev = 0; b < B; prev = cu_num_draft_tokens.data()[b++]) {
        const int64_t cb = cu_num_draft_tokens.data()[b];
        if (cb < prev || cb - prev > max_spec_len || (b == B - 1 && cb != T))
            throw std::invalid_argument(
                "cu_num_draft_tokens: expected non-decreasing prefix sums ending at T, each count <= max_spec_len");
    }
    if (B == 0 && T != 0) throw std::invalid_argument("cu_num_draft_tokens: no request, but T > 0 drafts");
    if (is_greedy && (is_greedy->ndim() != 1 || is_greedy->shape(0) != B))
        throw std::invalid_argument("is_greedy: expected shape (B,)");
    if (uniform_probs && (uniform_probs->ndim() != 1 || uniform_probs->shape(0) != T))
        throw std::invalid_argument("uniform_probs: expected shape (T,)");
    bool random = false;  // a non-greedy request with drafts reads the uniforms and the noise
    for (int64_t b = 0; b < B && !random; ++b)
        random = !(is_greedy && is_greedy->data()[b]) &&
                 cu_num_draft_tokens.data()[b] > (b ? cu_num_draft_tokens.data()[b - 1] : 0);
    if (random && (!uniform_probs || !noise))
        throw std::invalid_argument("uniform_probs, recovery_noise: needed when some request is not greedy");
    auto out = filled({static_cast<py::ssize_t>(B), static_cast<py::ssize_t>(max_spec_len + 1)}, "max_spec_len");
    int32_t* o = out.mutable_data();
    auto fill = [&](auto& c) {
        c.B = B, c.T = T, c.V = V, c.max_spec_len = max_spec_len, c.tol = tol;
        c.target_stride = ts, c.draft_stride = ds, c.noise_stride = ns;
        c.draft_token_ids = draft_token_ids.data();
        c.cu_num_draft_tokens = cu_num_draft_tokens.data();
        c.bonus_token_ids = bonus_token_ids.data();
        c.is_greedy = data_or_null(is_greedy);
        c.uniform_probs = data_or_null(uniform_probs);
        run_chain(c, o, threads);
    };
    if (pk == 4 && ek == 4) {
        auto c = chain<float, float>(tp, dp, noise);
        fill(c);
    } else if (pk == 4) {
        auto c = chain<float, double>(tp, dp, noise);
        fill(c);
    } else if (ek == 4) {
        auto c = chain<double, float>(tp, dp, noise);
        fill(c);
    } else {
        auto c = chain<double, double>(tp, dp, noise);
        fill(c);
    }
    return out;
}

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

py::tuple tree_sample(const I64& candidates, const I64& retrive_index, const I64& next_token, const I64& next_sibling,
                      const F64& uniform_samples, const F64& uniform_final, const py::array& target_probs,
                      const std::optional<py::array>& draft_probs, int64_t num_spec, const std::string& verifier,
                      const std::string& scheme, double threshold_single, double threshold_acc, double work_budget,
                      double tol, int threads) {
    int64_t ts = 0, ds = 0;
    int pk = 0, dk = 0;
    const py::array tp = float_rows(target_probs, 3, "target_probs", ts, pk);
    if (candidates.ndim() != 2 || candidates.shape(0) != tp.shape(0) || candidates.shape(1) != tp.shape(1))
        throw std::invalid_argument("candidates, target_probs: expected shapes (B, N) and (B, N, V)");
    const int64_t B = tp.shape(0), N = tp.shape(1), V = tp.shape(2);
    for (const I64* a : {&retrive_index, &next_token, &next_sibling})
        if (a->ndim() != 2 || a->shape(0) != B || a->shape(1) != N)
            throw std::invalid_argument(
                "retrive_index, retrive_next_token, retrive_next_sibling: expected shape (B, N)");
    if (uniform_samples.ndim() != 2 || uniform_samples.shape(0) != B || uniform_samples.shape(1) != N ||
        uniform_final.ndim() != 1 || uniform_final.shape(0) != B)
        throw std::invalid_argument(
            "uniform_samples, uniform_samples_for_final_sampling: expected shapes (B, N), (B,)");
    if (N == 0 && B > 0) throw std::invalid_argument("target_probs: a tree needs at least its root (N >= 1)");
    check_ids(candidates, 0, V, "candidates");
    check_ids(retrive_index, 0, B * N, "retrive_index");
    check_ids(next_token, -1, N, "retrive_next_token");
    check_ids(next_sibling, -1, N, "retrive_next_sibling");
    if (num_spec > N) throw std::invalid_argument("num_speculative_tokens: at most N");
    if (B * N > int64_t{2147483647})
        throw std::invalid_argument("candidates: B * N = " + std::to_string(B * N) +
                                    " nodes; predicts holds int32 slots (at most 2^31 - 1)");
    std::optional<py::array> dp;
    if (draft_probs) {
        dp = float_rows(*draft_probs, 3, "draft_probs", ds, dk);
        if (dk != pk || dp->shape(0) != B || dp->shape(1) != N || dp->shape(2) != V)
            throw std::invalid_argument("draft_probs: expected the dtype and shape (B, N, V) of target_probs");
    }
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
        t.retrive_index = retrive_index.data();
        t.next_token = next_token.data();
        t.next_sibling = next_sibling.data();
        t.uniform_samples = uniform_samples.data();
        t.uniform_final = uniform_final.data();
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

void register_engines(py::module_& m) {
    m.def("rejection_sample", &rejection_sample, py::arg("draft_token_ids"), py::arg("cu_num_draft_tokens"),
          py::arg("draft_probs"), py::arg("target_probs"), py::arg("bonus_token_ids"), py::arg("is_greedy"),
          py::arg("uniform_probs"), py::arg("recovery_noise"), py::arg("max_spec_len"), py::arg("tol"),
          py::arg("threads") = 0,
          "vLLM V1's rejection_sample: int32 (B, max_spec_len + 1), -1 placeholders. Ids and counts\n"
          "checked by the caller; the float32 / float64 rows (read in place) and the uniforms validated here.");
    m.def("tree_sample", &tree_sample, py::arg("candidates"), py::arg("retrive_index"), py::arg("retrive_next_token"),
          py::arg("retrive_next_sibling"), py::arg("uniform_samples"), py::arg("uniform_samples_for_final_sampling"),
          py::arg("target_probs"), py::arg("draft_probs"), py::arg("num_speculative_tokens"), py::arg("verifier"),
          py::arg("scheme"), py::arg("threshold_single"), py::arg("threshold_acc"), py::arg("work_budget"),
          py::arg("tol"), py::arg("threads") = 0,
          "SGLang's token-tree verification (verifier='sglang', or 'sglang-pre-35798' for the rule before\n"
          "SGLang PR #35798) or a registry verifier at every node: (predicts (B*N,), accept_index\n"
          "(B, num_speculative_tokens), accept_token_num (B,)), int32 with -1 placeholders.\n"
          "num_speculative_tokens <= 0: the deepest tree's depth + 1.");
}
