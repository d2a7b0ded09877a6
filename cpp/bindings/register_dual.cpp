// Bindings for the fast dual kernels (sorted prefix, greedy closed form, topk, mixed schemes).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "mdsd/dual.hpp"
#include "mdsd/parallel.hpp"

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;

namespace {

mdsd::WorMethod parse_wor(const std::string& s) {
    if (s == "auto") return mdsd::WorMethod::Auto;
    if (s == "exact") return mdsd::WorMethod::Exact;
    if (s == "integral") return mdsd::WorMethod::Integral;
    throw std::invalid_argument("wor_method: expected 'auto', 'exact' or 'integral', got '" + s + "'");
}

py::tuple dual_batch(const F64& p, const F64& q, int n, const std::string& scheme, const std::string& wor_method,
                     bool certificate, int threads) {
    if (p.ndim() != 2 || q.ndim() != 2 || p.shape(0) != q.shape(0) || p.shape(1) != q.shape(1))
        throw std::invalid_argument("p, q: expected two C-contiguous float64 arrays of the same shape (B, V)");
    const mdsd::DraftScheme sc = mdsd::parse_draft_scheme(scheme);
    const mdsd::WorMethod wm = parse_wor(wor_method);
    const int64_t B = p.shape(0), V = p.shape(1);
    py::array_t<double> alpha(B);
    double* a = alpha.mutable_data();
    const double* pp = p.data();
    const double* qq = q.data();
    std::vector<std::vector<int64_t>> certs(certificate ? B : 0);
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<mdsd::DualWorkspace>(B, threads, [&](int64_t r, mdsd::DualWorkspace& ws) {
            a[r] = mdsd::dual_alpha(pp + r * V, qq + r * V, V, n, sc, wm, ws, certificate ? &certs[r] : nullptr);
        });
    }
    if (!certificate) return py::make_tuple(alpha, py::none());
    py::list out;
    for (auto& c : certs) out.append(py::array_t<int64_t>(static_cast<py::ssize_t>(c.size()), c.data()));
    return py::make_tuple(alpha, out);
}

}  // namespace

void register_dual(py::module_& m) {
    m.def("dual_batch", &dual_batch, py::arg("p"), py::arg("q"), py::arg("n"), py::arg("scheme"),
          py::arg("wor_method") = "auto", py::arg("certificate") = false, py::arg("threads") = 0,
          "alpha* of each row of (B, V) arrays by the sorted-prefix scan (iid, wor, mixed) or the closed forms "
          "(greedy, topk).\n"
          "Inputs must already be validated and normalised. Returns (alpha[B], list of certificates or None).");
}
