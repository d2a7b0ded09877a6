// Raw p, q as the routes that validate and normalise each row in its own pass take them (shared by
// the direct verifiers and the direct alpha*): C-contiguous native float32 or float64 arrays of one
// dtype and shape (python/mdsd_fast/inputs/rules.py's raw_rows and the callers make them so).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <stdexcept>

namespace mdsd::bindings {

namespace py = pybind11;

// 1 for float32, 2 for float64; ndim: 1 (one row) or 2 (rows).
inline int float_kind(const py::array& p, const py::array& q, int ndim) {
    using F32 = py::array_t<float, py::array::c_style>;
    using F64 = py::array_t<double, py::array::c_style>;
    const bool f32 = py::isinstance<F32>(p) && py::isinstance<F32>(q);
    const bool f64 = py::isinstance<F64>(p) && py::isinstance<F64>(q);
    if (!(f32 || f64) || p.ndim() != ndim || q.ndim() != ndim || p.shape(ndim - 1) != q.shape(ndim - 1) ||
        (ndim == 2 && p.shape(0) != q.shape(0)))
        throw std::invalid_argument(
            "p, q: expected two C-contiguous arrays of one dtype (float32 or float64) and shape");
    return f32 ? 1 : 2;
}

}  // namespace mdsd::bindings
