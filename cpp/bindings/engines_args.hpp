// The engine kernels' boundary (engines.cpp: vLLM's chains, engines_tree.cpp: SGLang's trees):
// python/mdsd_fast/engines/ checks the types and shapes of the arguments (attribute reads, no pass
// over the data); the values are checked here, in the caller's order, with the caller's messages:
// ids and counts before any is used as an index, outputs refused in bytes before they are
// allocated, probability rows and uniforms in the kernels' own pass.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/core/limits.hpp"
#include "mdsd/engines/sampling.hpp"
#include "mdsd/inputs/validate.hpp"

namespace mdsd::bindings::engines {

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using Bool = py::array_t<bool, py::array::c_style | py::array::forcecast>;

template <class A>
const typename A::value_type* data_or_null(const std::optional<A>& a) {
    return a ? a->data() : nullptr;
}

// The int32 output of the given shape, -1 everywhere; refused above the limits table's bytes
// (counted without overflow).
inline py::array_t<int32_t> filled(std::vector<py::ssize_t> shape, const char* name) {
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
    std::fill(out.mutable_data(), out.mutable_data() + out.size(), static_cast<int32_t>(mdsd::engines::kPlaceholder));
    return out;
}

// Every entry of a in [lo, last]: the kernels index with them. The first one outside is named,
// with the range spelled [lo, last + 1) as the Python layer spells it (the Python layer casts to
// int64 only the dtypes whose values survive the cast).
inline void check_ids(const I64& a, int64_t lo, int64_t last, const char* name) {
    const int64_t* x = a.data();
    for (py::ssize_t i = 0; i < a.size(); ++i)
        if (x[i] < lo || x[i] > last)
            throw std::invalid_argument(std::string(name) + ": id " + std::to_string(x[i]) + " outside [" +
                                        std::to_string(lo) + ", " + std::to_string(static_cast<uint64_t>(last) + 1) +
                                        ")");
}

// A float32 / float64 array of `ndim` dimensions, read in place when its rows (last axis) are each
// contiguous, evenly spaced and in native byte order; otherwise (rare: strided columns, big-endian)
// a C-contiguous native copy. Sets kind (the item size: 4 or 8) and the distance between rows in
// entries (row r of the flattened leading axes starts at r * stride).
inline py::array float_rows(const py::array& a, int ndim, const char* name, int64_t& stride, int& kind) {
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

// Uniforms in [0, 1) of any float32 / float64 layout, as C-contiguous float64 (a small copy only
// when they are not that already); the first one outside is named by its NumPy repr in its own
// dtype, as the Python layer spells it.
inline F64 unit_uniforms(const py::array& a, const char* name) {
    F64 u = F64::ensure(a);
    if (!u) throw py::error_already_set();
    const double* x = u.data();
    for (py::ssize_t i = 0; i < u.size(); ++i)
        if (!(x[i] >= 0.0 && x[i] < 1.0)) {
            const py::object flat = py::module_::import("numpy").attr("ravel")(a);
            throw std::invalid_argument(std::string(name) + ": uniforms must lie in [0, 1), got " +
                                        py::repr(flat[py::int_(i)]).cast<std::string>());
        }
    return u;
}

// The ValueError for the first broken row of the arrays a kernel validates (in this order).
template <class Err>
void raise_first(const std::vector<Err>& errs, int arrays, const char* const* names, const char* const* zero_ok,
                 double tol) {
    namespace v = mdsd::validate;
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

}  // namespace mdsd::bindings::engines
