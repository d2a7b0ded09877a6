// Bindings for the engine reference kernels (cpp/include/mdsd/engines/): vLLM V1's rejection
// sampler here, SGLang's token-tree verification in engines_tree.cpp, every random number an input.
// python/mdsd_fast/engines/ checks the types and shapes; the values (counts, ids, the output's
// bytes, the float32 / float64 rows read in place, the uniforms and the noise) are checked here,
// the rows and uniforms in the kernel's own pass over each request (engines_args.hpp).
// Every loop runs without the GIL, requests split over threads; outputs are int32, the engines' dtype.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::optional: the arrays that may be None

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engines_args.hpp"
#include "mdsd/core/limits.hpp"
#include "mdsd/core/parallel.hpp"
#include "mdsd/engines/vllm.hpp"

namespace py = pybind11;

void register_engines_tree(py::module_& m);

namespace {

namespace e = mdsd::engines;
using namespace mdsd::bindings::engines;

// (smallest, largest, sum, the counts as int64) in one pass over an integer array or a list of
// plain Python ints (the list read without NumPy); the sum exact (a Python int) past int64's
// range. None for a list NumPy would read otherwise (empty, bools, other types, past int64): the
// caller reads those through NumPy.
py::object count_range(const py::object& counts) {
    I64 arr;
    if (PyList_CheckExact(counts.ptr())) {
        const Py_ssize_t n = PyList_GET_SIZE(counts.ptr());
        if (n == 0) return py::none();
        arr = I64(n);
        int64_t* a = arr.mutable_data();
        for (Py_ssize_t i = 0; i < n; ++i) {
            PyObject* item = PyList_GET_ITEM(counts.ptr(), i);
            int overflow = 0;
            if (!PyLong_CheckExact(item)) return py::none();
            a[i] = PyLong_AsLongLongAndOverflow(item, &overflow);
            if (overflow) return py::none();
        }
    } else {
        arr = I64::ensure(counts);
        if (!arr) throw py::error_already_set();
    }
    const int64_t* c = arr.data();
    const int64_t n = arr.size();
    int64_t lo = 0, hi = 0, s = 0;
    bool over = false;
    for (int64_t b = 0; b < n; ++b) {
        lo = b ? std::min(lo, c[b]) : c[b];
        hi = b ? std::max(hi, c[b]) : c[b];
        over = over || __builtin_add_overflow(s, c[b], &s);
    }
    if (over) return py::make_tuple(lo, hi, py::module_::import("builtins").attr("sum")(arr.attr("tolist")()), arr);
    return py::make_tuple(lo, hi, s, arr);
}

// The inclusive prefix sums of num_draft_tokens (each count in [0, T], summing to T: the Python
// layer checks and names them; this keeps a direct call from indexing out of bounds), checked
// against cu_num_draft_tokens when it is given.
std::vector<int64_t> prefix_sums(const I64& counts, const std::optional<I64>& cu_given, int64_t T) {
    const int64_t B = counts.size();
    const int64_t* c = counts.data();
    std::vector<int64_t> cu(static_cast<std::size_t>(B));
    for (int64_t b = 0, s = 0; b < B; ++b) {
        if (c[b] < 0 || c[b] > T - s)
            throw std::invalid_argument("num_draft_tokens: expected counts >= 0 summing to T = " + std::to_string(T));
        cu[b] = s += c[b];
    }
    if ((B ? cu.back() : 0) != T)
        throw std::invalid_argument("num_draft_tokens: expected counts >= 0 summing to T = " + std::to_string(T));
    if (cu_given) {
        if (cu_given->ndim() != 1 || cu_given->shape(0) != B)
            throw std::invalid_argument("cu_num_draft_tokens: expected shape (B,)");
        check_ids(*cu_given, 0, T, "cu_num_draft_tokens");
        if (!std::equal(cu.begin(), cu.end(), cu_given->data()))
            throw std::invalid_argument("cu_num_draft_tokens: not the inclusive prefix sums of num_draft_tokens");
    }
    return cu;
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

py::array_t<int32_t> rejection_sample(const I64& draft_token_ids, const I64& num_draft_tokens,
                                      const std::optional<I64>& cu_num_draft_tokens,
                                      const std::optional<py::array>& draft_probs, const py::array& target_probs,
                                      const I64& bonus_token_ids, const std::optional<Bool>& is_greedy,
                                      const std::optional<F64>& uniform_probs,
                                      const std::optional<py::array>& recovery_noise, int64_t max_spec_len, double tol,
                                      int threads) {
    int64_t ts = 0, ds = 0, ns = 0;
    int pk = 0, dk = 0, ek = 8;
    const py::array tp = float_rows(target_probs, 2, "target_probs", ts, pk);
    const int64_t B = num_draft_tokens.size(), T = draft_token_ids.size(), V = tp.shape(1);
    // the shapes the Python layer checks, again for direct calls: nothing below reads out of bounds
    if (draft_token_ids.ndim() != 1 || num_draft_tokens.ndim() != 1 || tp.shape(0) != T ||
        bonus_token_ids.size() != B ||
        !(bonus_token_ids.ndim() == 1 || (bonus_token_ids.ndim() == 2 && bonus_token_ids.shape(1) == 1)))
        throw std::invalid_argument(
            "draft_token_ids, num_draft_tokens, target_probs, bonus_token_ids: expected shapes (T,), (B,), (T, V), "
            "(B,) or (B, 1)");
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
    if (is_greedy && (is_greedy->ndim() != 1 || is_greedy->shape(0) != B))
        throw std::invalid_argument("is_greedy: expected shape (B,)");
    if (uniform_probs && (uniform_probs->ndim() != 1 || uniform_probs->shape(0) != T))
        throw std::invalid_argument("uniform_probs: expected shape (T,)");
    // the values the Python layer leaves to this pass, in the order it used to check them
    const std::vector<int64_t> cu = prefix_sums(num_draft_tokens, cu_num_draft_tokens, T);
    for (int64_t b = 0; b < B; ++b)
        if (num_draft_tokens.data()[b] > max_spec_len)
            throw std::invalid_argument("max_spec_len: expected at least the largest count");
    if (max_spec_len < 0 || max_spec_len >= mdsd::limits::kMaxAllocBytes / 4)
        throw std::invalid_argument("max_spec_len: expected an integer in [0, max_alloc_bytes / 4)");
    const int64_t width = max_spec_len;
    check_ids(draft_token_ids, -1, V - 1, "draft_token_ids");
    check_ids(bonus_token_ids, 0, V - 1, "bonus_token_ids");
    bool random = false;  // a non-greedy request with drafts reads the uniforms and the noise
    for (int64_t b = 0; b < B && !random; ++b)
        random = !(is_greedy && is_greedy->data()[b]) && num_draft_tokens.data()[b];
    if (random && !uniform_probs)
        throw std::invalid_argument("uniform_probs: needed (shape (T,)) when some request is not greedy");
    if (random && !noise)
        throw std::invalid_argument("recovery_noise: needed (shape (B, V), Exp(1)) when some request is not greedy");
    auto out = filled({static_cast<py::ssize_t>(B), static_cast<py::ssize_t>(width + 1)}, "max_spec_len");
    int32_t* o = out.mutable_data();
    auto fill = [&](auto& c) {
        c.B = B, c.T = T, c.V = V, c.max_spec_len = width, c.tol = tol;
        c.target_stride = ts, c.draft_stride = ds, c.noise_stride = ns;
        c.draft_token_ids = draft_token_ids.data();
        c.cu_num_draft_tokens = cu.data();
        c.bonus_token_ids = bonus_token_ids.data();
        c.is_greedy = reinterpret_cast<const uint8_t*>(data_or_null(is_greedy));
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

}  // namespace

void register_engines(py::module_& m) {
    m.def("rejection_sample", &rejection_sample, py::arg("draft_token_ids"), py::arg("num_draft_tokens"),
          py::arg("cu_num_draft_tokens"), py::arg("draft_probs"), py::arg("target_probs"), py::arg("bonus_token_ids"),
          py::arg("is_greedy"), py::arg("uniform_probs"), py::arg("recovery_noise"), py::arg("max_spec_len"),
          py::arg("tol"), py::arg("threads") = 0,
          "vLLM V1's rejection_sample: int32 (B, max_spec_len + 1), -1 placeholders. Types and shapes\n"
          "and the counts checked by the caller (count_range); cu_num_draft_tokens, the ids, the\n"
          "float32 / float64 rows (read in place), the uniforms and the noise checked here.");
    m.def("count_range", &count_range, py::arg("counts"),
          "(smallest, largest, sum, counts as int64) of an integer array or a list of plain ints in one\n"
          "pass, the sum exact past int64's range; None for a list NumPy would read otherwise.");
    register_engines_tree(m);
}
