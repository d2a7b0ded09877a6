// Bindings for draft-set enumeration and flow-LP assembly (solved by HiGHS from Python).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mdsd/dual.hpp"
#include "mdsd/flow.hpp"
#include "mdsd/maxflow.hpp"
#include "mdsd/sets.hpp"

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

namespace {

template <class T>
py::array_t<T> to_numpy(const std::vector<T>& v) {
    return py::array_t<T>(static_cast<py::ssize_t>(v.size()), v.data());
}

struct FlowModel {
    mdsd::DraftSets sets;
    std::vector<double> p;
    int64_t V = 0;
    // The CSC LP is only needed by HiGHS and the dual rounding: built on first use.
    const mdsd::FlowLP& lp() const {
        std::call_once(lp_once_, [this] { lp_ = mdsd::assemble_flow(sets, p.data(), V); });
        return lp_;
    }

  private:
    mutable std::once_flag lp_once_;
    mutable mdsd::FlowLP lp_;
};

std::shared_ptr<FlowModel> make_model(const F64& p, const std::optional<F64>& q, int n, const std::string& scheme,
                                      double max_sets, const std::optional<I64>& tuples,
                                      const std::optional<F64>& probs) {
    if (p.ndim() != 1) throw std::invalid_argument("p: expected shape (V,)");
    auto mdl = std::make_shared<FlowModel>();
    mdl->V = p.shape(0);
    const int64_t V = mdl->V;
    mdl->p.assign(p.data(), p.data() + V);
    const double* pp = mdl->p.data();
    if (scheme == "explicit") {
        if (!tuples || !probs) throw std::invalid_argument("tuples, probs: required for scheme='explicit'");
        if (tuples->ndim() != 2 || probs->ndim() != 1 || tuples->shape(0) != probs->shape(0))
            throw std::invalid_argument("tuples, probs: expected shapes (m, n) and (m,)");
        const int64_t mrows = tuples->shape(0);
        const int width = static_cast<int>(tuples->shape(1));
        const int64_t* tt = tuples->data();
        const double* pr = probs->data();
        py::gil_scoped_release nogil;
        mdl->sets = mdsd::sets_explicit(pp, tt, pr, mrows, width, V, max_sets);
    } else {
        if (!q) throw std::invalid_argument("q: required for scheme='" + scheme + "'");
        const double* qq = q->data();
        if (scheme == "independent") {
            if (q->ndim() != 2 || q->shape(0) != n || q->shape(1) != V)
                throw std::invalid_argument("q: expected shape (n, V) for scheme='independent'");
            py::gil_scoped_release nogil;
            mdl->sets = mdsd::sets_independent(pp, qq, V, n, max_sets);
        } else {
            if (q->ndim() != 1 || q->shape(0) != V) throw std::invalid_argument("q: expected shape (V,)");
            const mdsd::DraftScheme ds = mdsd::parse_draft_scheme(scheme);
            const mdsd::Scheme sc = ds.kind;
            py::gil_scoped_release nogil;
            if (ds.mixed()) mdl->sets = mdsd::sets_mixed(pp, qq, V, n, ds, max_sets);
            else if (sc == mdsd::Scheme::Topk) mdl->sets = mdsd::sets_topk(pp, qq, V, n);
            else if (sc == mdsd::Scheme::Iid) mdl->sets = mdsd::sets_iid(pp, qq, V, n, max_sets);
            else if (sc == mdsd::Scheme::Wor) mdl->sets = mdsd::sets_wor(pp, qq, V, n, max_sets);
            else {
                std::vector<int32_t> T;
                mdsd::greedy_top(qq, V, n, T);
                mdl->sets = mdsd::sets_greedy(pp, qq, V, n, T, max_sets);
            }
        }
    }
    return mdl;
}

}  // namespace

void register_lp(py::module_& m) {
    py::register_exception<mdsd::TooLarge>(m, "TooLargeError", PyExc_ValueError);
    py::class_<FlowModel, std::shared_ptr<FlowModel>>(
        m, "FlowModel", "Draft sets of one (p, scheme) pair and their flow LP in CSC form.")
        .def(py::init(&make_model), py::arg("p"), py::arg("q"), py::arg("n"), py::arg("scheme"), py::arg("max_sets"),
             py::arg("tuples") = py::none(), py::arg("probs") = py::none())
        .def_property_readonly("num_sets", [](const FlowModel& f) { return f.sets.num_sets(); })
        .def_property_readonly("num_edges", [](const FlowModel& f) { return static_cast<int64_t>(f.sets.tok.size()); })
        .def_property_readonly("num_col", [](const FlowModel& f) { return f.lp().num_col; })
        .def_property_readonly("num_row", [](const FlowModel& f) { return f.lp().num_row; })
        .def_property_readonly("rejected_mass", [](const FlowModel& f) { return f.sets.rejected_mass; })
        .def_property_readonly("set_ptr", [](const FlowModel& f) { return to_numpy(f.sets.ptr); })
        .def_property_readonly("set_tokens", [](const FlowModel& f) { return to_numpy(f.sets.tok); })
        .def_property_readonly("set_weights", [](const FlowModel& f) { return to_numpy(f.sets.w); })
        .def_property_readonly("a_start", [](const FlowModel& f) { return to_numpy(f.lp().a_start); })
        .def_property_readonly("a_index", [](const FlowModel& f) { return to_numpy(f.lp().a_index); })
        .def_property_readonly("row_upper", [](const FlowModel& f) { return to_numpy(f.lp().row_upper); })
        .def_property_readonly("row_tokens", [](const FlowModel& f) { return to_numpy(f.lp().tokens); })
        .def(
            "certificate",
            [](const FlowModel& f, const F64& v) {
                if (v.ndim() != 1 || v.shape(0) != static_cast<py::ssize_t>(f.lp().tokens.size()))
                    throw std::invalid_argument("v: expected one dual value per token row");
                std::vector<int64_t> H;
                double val;
                {
                    py::gil_scoped_release nogil;
                    val = mdsd::best_threshold_cut(f.sets, f.lp(), f.p.data(), f.V, v.data(), H);
                }
                return py::make_tuple(val, to_numpy(H));
            },
            py::arg("v"), "Best threshold cut of the token duals v: (cut value, H as sorted token ids).")
        .def(
            "max_flow",
            [](const FlowModel& f, const std::optional<I64>& hint) {
                mdsd::MaxFlowResult r;
                std::vector<char> h;
                if (hint) {
                    h.assign(f.V, 0);
                    for (py::ssize_t i = 0; i < hint->shape(0); ++i) {
                        const int64_t t = hint->data()[i];
                        if (t < 0 || t >= f.V) throw std::invalid_argument("hint: token id out of range");
                        h[t] = 1;
                    }
                }
                auto* flows = new std::vector<double>();
                py::capsule owner(flows, [](void* v) { delete static_cast<std::vector<double>*>(v); });
                std::vector<double> accepted(f.V, 0.0);
                {
                    py::gil_scoped_release nogil;
                    r = mdsd::max_flow_sets(f.sets, f.p.data(), f.V, hint ? h.data() : nullptr);
                    for (std::size_t e = 0; e < r.x.size(); ++e) accepted[f.sets.tok[e]] += r.x[e];
                    *flows = std::move(r.x);  // handed to numpy without a copy
                }
                py::dict out;
                out["value"] = r.value;
                out["flows"] = py::array_t<double>(static_cast<py::ssize_t>(flows->size()), flows->data(), owner);
                out["accepted"] = to_numpy(accepted);
                out["cut"] = r.cut;
                out["certificate"] = to_numpy(r.H);
                out["pushes"] = r.pushes;
                out["relabels"] = r.relabels;
                out["global_relabels"] = r.global_relabels;
                out["used_hint"] = r.used_hint;
                return out;
            },
            py::arg("hint") = py::none(),
            "Exact max-flow on the draft-set network by push-relabel (no HiGHS): value, flows, accepted mass per\n"
            "token, cut, certificate.\n"
            "hint: optional guess of the certificate H (token ids) that steers the greedy start.")
        .def(
            "cut_value",
            [](const FlowModel& f, const I64& H) {
                std::vector<char> inH(f.V, 0);
                for (py::ssize_t i = 0; i < H.shape(0); ++i) {
                    const int64_t t = H.data()[i];
                    if (t < 0 || t >= f.V) throw std::invalid_argument("H: token id out of range");
                    inH[t] = 1;
                }
                return mdsd::cut_value(f.sets, f.p.data(), f.V, inH);
            },
            py::arg("H"), "p(H) + Pr[S not inside H]: the upper bound on alpha* given by the token set H.");
}
