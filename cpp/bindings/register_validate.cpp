// Input validation in one pass per row (python/mdsd_fast/_validate.py states the rules): finite,
// non-negative, and the row sum, taken over the positive entries in ascending id order with
// Neumaier's compensated summation (accurate to a few ulps at any V, where a plain running sum
// drifts by up to V ulps): the one sum dense and sparse rows share, so both normalise alike, bit
// for bit.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/parallel.hpp"

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

namespace {

enum Status { kOk = 0, kNonFinite = 1, kNegative = 2, kOffSum = 3 };

struct Empty {};

// Neumaier's compensated sum: s + c carries the rounding errors of the running sum.
struct Sum {
    double s = 0.0, c = 0.0;
    void add(double v) {
        const double t = s + v;
        c += std::fabs(s) >= std::fabs(v) ? (s - t) + v : (v - t) + s;
        s = t;
    }
    double value() const { return s + c; }
};

// Sequential sum of the positive entries; status of the first broken rule.
inline double row_sum(const double* x, int64_t V, int& status, double& value) {
    Sum s;
    for (int64_t i = 0; i < V; ++i) {
        const double v = x[i];
        if (!std::isfinite(v)) {
            status = kNonFinite;
            return s.value();
        }
        if (v < 0.0) {
            status = kNegative;
            value = v;
            return s.value();
        }
        if (v > 0.0) s.add(v);
    }
    return s.value();
}

// (out, status, row, value): rows divided by their sums, or the first broken rule (status, row,
// the offending value or sum) with out = None.
py::tuple normalize_rows(const F64& x, double tol, int threads) {
    if (x.ndim() != 2) throw std::invalid_argument("x: expected a (B, V) array");
    const int64_t B = x.shape(0), V = x.shape(1);
    std::vector<double> sums(static_cast<std::size_t>(B));
    std::vector<int> status(static_cast<std::size_t>(B), kOk);
    std::vector<double> value(static_cast<std::size_t>(B), 0.0);
    const double* xp = x.data();
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<Empty>(B, threads, [&](int64_t r, Empty&) {
            sums[r] = row_sum(xp + r * V, V, status[r], value[r]);
            if (status[r] == kOk && !(std::fabs(sums[r] - 1.0) <= tol)) {
                status[r] = kOffSum;
                value[r] = sums[r];
            }
        });
    }
    for (int64_t r = 0; r < B; ++r)
        if (status[r] != kOk) return py::make_tuple(py::none(), status[r], r, value[r]);
    py::array_t<double> out({B, V});
    double* o = out.mutable_data();
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<Empty>(B, threads, [&](int64_t r, Empty&) {
            const double s = sums[r];
            for (int64_t i = 0; i < V; ++i) o[r * V + i] = xp[r * V + i] / s;
        });
    }
    return py::make_tuple(out, static_cast<int>(kOk), int64_t{-1}, 0.0);
}

// The same sums for CSR rows whose values are positive and in ascending id order.
py::array_t<double> csr_row_sums(const F64& data, const I64& ptr) {
    const int64_t B = ptr.shape(0) - 1;
    py::array_t<double> out(B);
    double* o = out.mutable_data();
    const double* d = data.data();
    const int64_t* p = ptr.data();
    for (int64_t r = 0; r < B; ++r) {
        Sum s;
        for (int64_t k = p[r]; k < p[r + 1]; ++k) s.add(d[k]);
        o[r] = s.value();
    }
    return out;
}

}  // namespace

void register_validate(py::module_& m) {
    m.def("normalize_rows", &normalize_rows, py::arg("x"), py::arg("tol"), py::arg("threads") = 0,
          "Validate and normalise (B, V) rows in one pass each: (out, status, row, value); status 0 = ok,\n"
          "1 = NaN or inf, 2 = a negative entry (value), 3 = the row sum (value) is not within tol of 1.");
    m.def("csr_row_sums", &csr_row_sums, py::arg("data"), py::arg("ptr"),
          "Row sums of CSR rows (positive values in ascending id order), as normalize_rows sums.");
}
