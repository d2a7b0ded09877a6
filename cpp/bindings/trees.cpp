// Bindings for the exact values of drafted trees (cpp/include/mdsd/trees/). A batch arrives as a
// list of validated trees from python/mdsd_fast/trees/value.py (their arrays are read in place, not
// concatenated: p and q are N x V each), with each node's verifier name and scheme. Trees split
// over threads without the GIL; each is computed by the same sequential code whatever thread runs it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/core/parallel.hpp"
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

// One tree's arrays, cast (without a copy when they already are C-contiguous of the right dtype).
struct TreeArrays {
    I64 parent, token, draw_ptr, draw_child;
    F64 p, q;
};

py::tuple tree_values(const std::vector<std::string>& names, const std::vector<std::string>& schemes,
                      const py::list& trees, double budget, int threads, bool naive) {
    const int64_t T = static_cast<int64_t>(trees.size());
    std::vector<TreeArrays> arr(static_cast<std::size_t>(T));
    std::vector<int64_t> offset(static_cast<std::size_t>(T + 1), 0);
    for (int64_t k = 0; k < T; ++k) {
        const py::tuple tup = py::cast<py::tuple>(trees[k]);
        if (tup.size() != 6)
            throw std::invalid_argument("trees: expected (parent, token, p, q, draw_ptr, draw_child) per tree");
        TreeArrays& a = arr[k];
        a.parent = py::cast<I64>(tup[0]);
        a.token = py::cast<I64>(tup[1]);
        a.p = py::cast<F64>(tup[2]);
        a.q = py::cast<F64>(tup[3]);
        a.draw_ptr = py::cast<I64>(tup[4]);
        a.draw_child = py::cast<I64>(tup[5]);
        const int64_t N = a.parent.shape(0);
        if (N < 1 || a.token.shape(0) != N || a.p.ndim() != 2 || a.q.ndim() != 2 || a.p.shape(0) != N ||
            a.q.shape(0) != N || a.p.shape(1) != a.q.shape(1) || a.draw_ptr.shape(0) != N + 1 ||
            a.draw_ptr.data()[0] != 0 || a.draw_ptr.data()[N] != a.draw_child.shape(0))
            throw std::invalid_argument("trees: tree " + std::to_string(k) + " has inconsistent array shapes");
        offset[k + 1] = offset[k] + N;
    }
    const int64_t N = offset[T];
    if (static_cast<int64_t>(names.size()) != N || static_cast<int64_t>(schemes.size()) != N)
        throw std::invalid_argument("names, schemes: expected one entry per node of every tree");
    std::vector<t::NodeVerifier> nodes(static_cast<std::size_t>(N));
    for (int64_t i = 0; i < N; ++i) {
        if (names[i].empty()) continue;
        nodes[i].kind = v::parse_kind(names[i]);
        nodes[i].scheme = v::parse_drafts(schemes[i]);
    }
    v::wor::Options wor_opt;
    wor_opt.work_budget = budget;
    py::array_t<double> accepted(T), reach(N);
    double* acc = accepted.mutable_data();
    double* rch = reach.mutable_data();
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<Workspace>(T, threads, [&](int64_t k, Workspace& ws) {
            const TreeArrays& a = arr[k];
            t::TreeView view;
            view.N = a.parent.shape(0);
            view.V = a.p.shape(1);
            view.parent = a.parent.data();
            view.token = a.token.data();
            view.p = a.p.data();
            view.q = a.q.data();
            view.draw_ptr = a.draw_ptr.data();
            view.draw_child = a.draw_child.data();
            try {
                view.check();
                acc[k] =
                    t::tree_value(view, nodes.data() + offset[k], wor_opt, naive, rch + offset[k], ws.law, ws.tuple);
            } catch (const std::invalid_argument& exc) {
                throw std::invalid_argument("tree " + std::to_string(k) + ": " + exc.what());
            }
        });
    }
    return py::make_tuple(accepted, reach);
}

}  // namespace

void register_trees(py::module_& m) {
    m.def("values", &tree_values, py::arg("names"), py::arg("schemes"), py::arg("trees"), py::arg("budget"),
          py::arg("threads") = 0, py::arg("naive_residual") = false,
          "Exact expected accepted length of each tree, (parent, token, p, q, draw_ptr, draw_child), and\n"
          "every node's reach probability: (accepted (T,), reach (sum of N,)). names and schemes run over\n"
          "the nodes of all trees in order; names[i] is the node's registry verifier, '' for p.");
}
