// Input validation in one pass per row (mdsd/inputs/validate.hpp: the rules and the one row sum, the
// rounded exact sum, that dense and sparse rows share, so both normalise alike, bit for bit).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/core/parallel.hpp"
#include "mdsd/inputs/validate.hpp"

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

namespace {

using mdsd::validate::kOffSum;
using mdsd::validate::kOk;
using mdsd::validate::row_sum;

struct Empty {};

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

// The same sums for CSR rows (positive values; the rounded exact sum needs no order).
py::array_t<double> csr_row_sums(const F64& data, const I64& ptr) {
    const int64_t B = ptr.shape(0) - 1;
    py::array_t<double> out(B);
    double* o = out.mutable_data();
    const double* d = data.data();
    const int64_t* p = ptr.data();
    for (int64_t r = 0; r < B; ++r) {
        int status = kOk;
        double value = 0.0;
        o[r] = row_sum(d + p[r], p[r + 1] - p[r], status, value);  // NaN for a broken rule
    }
    return out;
}

}  // namespace

void register_inputs(py::module_& m) {
    m.def("normalize_rows", &normalize_rows, py::arg("x"), py::arg("tol"), py::arg("threads") = 0,
          "Validate and normalise (B, V) rows in one pass each: (out, status, row, value); status 0 = ok,\n"
          "1 = NaN or inf, 2 = a negative entry (value), 3 = the row sum (value) is not within tol of 1.");
    m.def("csr_row_sums", &csr_row_sums, py::arg("data"), py::arg("ptr"),
          "Row sums of CSR rows (positive values), as normalize_rows sums (the rounded exact sum).");
}
