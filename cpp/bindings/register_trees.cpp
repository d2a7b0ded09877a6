// Bindings for the exact values of drafted trees (cpp/include/mdsd/trees/). A batch of trees
// arrives concatenated and validated from python/mdsd_fast/trees/value.py: node arrays of all
// trees back to back (ids local to each tree), tree_ptr the node offset of each tree, draw_ptr
// global offsets into draw_child. Trees split over threads without the GIL; each tree is computed
// by the same sequential code whatever thread runs it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/parallel.hpp"
#include "mdsd/trees/value.hpp"

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

namespace {

namespace t = mdsd::trees;
namespace v = mdsd::verif;

struct Workspace {
    std::vector<double> law;
    std::vector<int32_t> tuple;
};

py::tuple tree_values(const std::vector<std::string>& names, const std::vector<std::string>& schemes, const I64& parent,
                      const I64& token, const F64& p, const F64& q, const I64& draw_ptr, const I64& draw_child,
                      const I64& tree_ptr, double budget, int threads, bool naive) {
    const int64_t N = parent.shape(0);
    const int64_t T = tree_ptr.shape(0) - 1;
    if (p.ndim() != 2 || q.ndim() != 2 || p.shape(0) != N || q.shape(0) != N || p.shape(1) != q.shape(1))
        throw std::invalid_argument("p, q: expected shape (N, V) each");
    if (token.shape(0) != N || draw_ptr.shape(0) != N + 1 || static_cast<int64_t>(names.size()) != N ||
        static_cast<int64_t>(schemes.size()) != N || T < 0)
        throw std::invalid_argument("tree arrays: inconsistent lengths");
    const int64_t* tp = tree_ptr.data();
    const int64_t* dp = draw_ptr.data();
    if (tp[0] != 0 || tp[T] != N || dp[0] != 0 || dp[N] != draw_child.shape(0))
        throw std::invalid_argument("tree_ptr, draw_ptr: expected offsets from 0 to N and to len(draw_child)");
    for (int64_t k = 0; k < T; ++k)
        if (tp[k + 1] <= tp[k]) throw std::invalid_argument("tree_ptr: every tree needs a root");
    std::vector<t::NodeVerifier> nodes(static_cast<std::size_t>(N));
    for (int64_t i = 0; i < N; ++i) {
        if (names[i].empty()) continue;
        nodes[i].kind = v::parse_kind(names[i]);
        nodes[i].scheme = v::parse_drafts(schemes[i]);
    }
    v::wor::Options wor_opt;
    wor_opt.work_budget = budget;
    const int64_t V = p.shape(1);
    py::array_t<double> accepted(T), reach(N);
    double* acc = accepted.mutable_data();
    double* rch = reach.mutable_data();
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<Workspace>(T, threads, [&](int64_t k, Workspace& ws) {
            const int64_t off = tp[k];
            t::TreeView view;
            view.N = tp[k + 1] - off;
            view.V = V;
            view.parent = parent.data() + off;
            view.token = token.data() + off;
            view.p = p.data() + off * V;
            view.q = q.data() + off * V;
            view.draw_ptr = dp + off;
            view.draw_child = draw_child.data();
            view.check();
            acc[k] = t::tree_value(view, nodes.data() + off, wor_opt, naive, rch + off, ws.law, ws.tuple);
        });
    }
    return py::make_tuple(accepted, reach);
}

}  // namespace

void register_trees(py::module_& m) {
    m.def("tree_values", &tree_values, py::arg("names"), py::arg("schemes"), py::arg("parent"), py::arg("token"),
          py::arg("p"), py::arg("q"), py::arg("draw_ptr"), py::arg("draw_child"), py::arg("tree_ptr"),
          py::arg("budget"), py::arg("threads") = 0, py::arg("naive_residual") = false,
          "Exact expected accepted length of each tree of a concatenated batch, and every node's reach\n"
          "probability: (accepted (T,), reach (N,)). names[i] is node i's registry verifier, '' for p.");
}
