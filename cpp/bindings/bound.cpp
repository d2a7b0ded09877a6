// mdsd_fast._core.bound: alpha* by the dual kernels (sorted prefix, greedy closed form, topk, mixed
// schemes) and the flow LP (draft-set enumeration and flow-LP assembly, solved by HiGHS from Python;
// the native max-flow).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/bound/lp/flow.hpp"
#include "mdsd/bound/lp/maxflow.hpp"
#include "mdsd/bound/lp/sets.hpp"
#include "mdsd/core/parallel.hpp"
#include "mdsd/verifiers/planless/batch.hpp"
#include "raw_pair.hpp"

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

namespace {

namespace direct = mdsd::verif::direct;

mdsd::WorMethod parse_wor(const std::string& s) {
    if (s == "auto") return mdsd::WorMethod::Auto;
    if (s == "exact") return mdsd::WorMethod::Exact;
    if (s == "integral") return mdsd::WorMethod::Integral;
    throw std::invalid_argument("wor_method: expected 'auto', 'exact' or 'integral', got '" + s + "'");
}

// The calling thread keeps its workspace between calls. A fresh one touches new pages on every
// call (about 350 for one row at V = 49,152), and on a VM a page fault costs microseconds: as much
// as the kernel itself. Worker threads live for one call, so only the caller's is kept; a
// re-entrant call (a signal handler calling back in) gets a fresh one. Results do not depend on
// it: every kernel sizes what it reads. W: the dual kernels' workspace, or the direct route's
// scratch (its normalised row besides).
template <class W>
class CallerKept {
  public:
    CallerKept() {
        thread_local W kept;
        thread_local bool busy = false;
        if (!busy) {
            busy = true;
            busy_ = &busy;
            ws_ = &kept;
        } else {
            own_ = std::make_unique<W>();
            ws_ = own_.get();
        }
    }
    ~CallerKept() {
        if (busy_) *busy_ = false;
    }
    CallerKept(const CallerKept&) = delete;
    CallerKept& operator=(const CallerKept&) = delete;
    W& get() { return *ws_; }

  private:
    W* ws_ = nullptr;
    bool* busy_ = nullptr;
    std::unique_ptr<W> own_;
};
using CallerDualWorkspace = CallerKept<mdsd::DualWorkspace>;

py::list cert_list(std::vector<std::vector<int64_t>>& certs) {
    py::list out;
    for (auto& c : certs) out.append(py::array_t<int64_t>(static_cast<py::ssize_t>(c.size()), c.data()));
    return out;
}

py::tuple dual_batch_route(const F64& p, const F64& q, int n, const std::string& scheme, const std::string& wor_method,
                           bool certificate, int threads, mdsd::IidRoute route) {
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
        mdsd::parallel_rows<CallerDualWorkspace>(B, threads, [&](int64_t r, CallerDualWorkspace& ws) {
            a[r] = mdsd::dual_alpha(pp + r * V, qq + r * V, V, n, sc, wm, ws.get(), certificate ? &certs[r] : nullptr,
                                    route);
        });
    }
    if (!certificate) return py::make_tuple(alpha, py::none());
    return py::make_tuple(alpha, cert_list(certs));
}

// alpha* of raw rows, each validated and normalised in its own row's pass into the thread's
// scratch (direct::normalise_pair: normalize_rows' rows bit for bit), so the normalised copy of
// the batch is never written to memory and read back. failed[r]: the kernel refused row r's input
// (too small a support for the scheme): the caller's validated route names the problem.
template <class T>
void alpha_rows(const T* pp, const T* qq, int64_t B, int64_t V, int n, mdsd::DraftScheme sc, mdsd::WorMethod wm,
                double tol, int threads, double* a, std::vector<std::vector<int64_t>>* certs,
                std::vector<direct::RowCheck>& rchk, std::vector<char>& failed) {
    py::gil_scoped_release nogil;
    mdsd::parallel_rows<CallerKept<direct::Scratch>>(B, threads, [&](int64_t r, CallerKept<direct::Scratch>& k) {
        direct::Scratch& ws = k.get();
        if (!direct::normalise_pair(pp + r * V, qq + r * V, V, tol, ws, rchk[r], true)) return;
        try {
            a[r] = mdsd::dual_alpha(ws.p.data(), ws.q.data(), V, n, sc, wm, ws.dual, certs ? &(*certs)[r] : nullptr);
        } catch (const std::invalid_argument&) { failed[r] = 1; }
    });
}

// (alpha[B], certificates or None, None); for invalid p or q (None, None, (status, side, row,
// value)), the first broken rule of p (side 0) in any row, else of q (side 1), as normalize_rows
// reports it; (None, None, None) if the kernel refused a valid row.
py::tuple dual_direct(const py::array& p, const py::array& q, int n, const std::string& scheme,
                      const std::string& wor_method, bool certificate, int threads, double tol) {
    const int fk = mdsd::bindings::float_kind(p, q, 2);
    if (n < 1) throw std::invalid_argument("n: must be >= 1");
    const mdsd::DraftScheme sc = mdsd::parse_draft_scheme(scheme);
    const mdsd::WorMethod wm = parse_wor(wor_method);
    const int64_t B = p.shape(0), V = p.shape(1);
    py::array_t<double> alpha(B);
    std::vector<std::vector<int64_t>> certs(certificate ? B : 0);
    std::vector<direct::RowCheck> rchk(static_cast<std::size_t>(B));
    std::vector<char> failed(static_cast<std::size_t>(B), 0);
    std::vector<std::vector<int64_t>>* cp = certificate ? &certs : nullptr;
    if (fk == 1)
        alpha_rows(static_cast<const float*>(p.data()), static_cast<const float*>(q.data()), B, V, n, sc, wm, tol,
                   threads, alpha.mutable_data(), cp, rchk, failed);
    else
        alpha_rows(static_cast<const double*>(p.data()), static_cast<const double*>(q.data()), B, V, n, sc, wm, tol,
                   threads, alpha.mutable_data(), cp, rchk, failed);
    for (int side = 0; side < 2; ++side)
        for (int64_t r = 0; r < B; ++r)
            if (rchk[r].status[side] != mdsd::validate::kOk)
                return py::make_tuple(py::none(), py::none(),
                                      py::make_tuple(rchk[r].status[side], side, r, rchk[r].value[side]));
    if (std::find(failed.begin(), failed.end(), 1) != failed.end())
        return py::make_tuple(py::none(), py::none(), py::none());
    return py::make_tuple(alpha, certificate ? py::object(cert_list(certs)) : py::object(py::none()), py::none());
}

py::tuple dual_batch(const F64& p, const F64& q, int n, const std::string& scheme, const std::string& wor_method,
                     bool certificate, int threads) {
    return dual_batch_route(p, q, n, scheme, wor_method, certificate, threads, mdsd::IidRoute::Select);
}

py::tuple dual_batch_sorted(const F64& p, const F64& q, int n, const std::string& scheme, const std::string& wor_method,
                            bool certificate, int threads) {
    return dual_batch_route(p, q, n, scheme, wor_method, certificate, threads, mdsd::IidRoute::Sorted);
}

// Per row of validated (B, V) arrays, the iid selection's bookkeeping: (tokens in order[0, kept),
// |supp q|, whether the row fell back to the sorted route (overflow), tokens in the window, whether
// ExactSum gave the bits, alpha*, the certificate). `force_exact` takes the ExactSum path (tests).
py::tuple iid_select_kept(const F64& p, const F64& q, int n, bool force_exact) {
    if (p.ndim() != 2 || q.ndim() != 2 || p.shape(0) != q.shape(0) || p.shape(1) != q.shape(1))
        throw std::invalid_argument("p, q: expected two C-contiguous float64 arrays of the same shape (B, V)");
    if (n < 1) throw std::invalid_argument("n: must be >= 1");
    const int64_t B = p.shape(0), V = p.shape(1);
    py::array_t<int64_t> kept(B), support(B), window(B);
    py::array_t<bool> fallback(B), exact(B);
    py::array_t<double> alpha(B);
    py::list certs;
    mdsd::DualWorkspace ws;
    for (int64_t r = 0; r < B; ++r) {
        const mdsd::IidSelectResult s =
            mdsd::iid_select_fast(p.data() + r * V, q.data() + r * V, V, n, ws.sel, ws.order, true, force_exact);
        kept.mutable_data()[r] = s.kept;
        support.mutable_data()[r] = s.support;
        fallback.mutable_data()[r] = s.fallback;
        window.mutable_data()[r] = s.window;
        exact.mutable_data()[r] = s.exact_sums;
        alpha.mutable_data()[r] = std::min(1.0, 1.0 + s.best);
        std::vector<int64_t> h(ws.order.begin(), ws.order.begin() + s.k_star);
        std::sort(h.begin(), h.end());
        certs.append(py::array_t<int64_t>(static_cast<py::ssize_t>(h.size()), h.data()));
    }
    return py::make_tuple(kept, support, fallback, window, exact, alpha, certs);
}

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

// dual_batch's reference routes, for mdsd_fast._core._testing (testing.cpp).
void register_bound_testing(py::module_& t) {
    t.def("dual_batch_sorted", &dual_batch_sorted, py::arg("p"), py::arg("q"), py::arg("n"), py::arg("scheme"),
          py::arg("wor_method") = "auto", py::arg("certificate") = false, py::arg("threads") = 0,
          "dual_batch with the iid minimum found by a full ratio sort (the reference route of the selection).");
    t.def("iid_select_kept", &iid_select_kept, py::arg("p"), py::arg("q"), py::arg("n"), py::arg("force_exact") = false,
          "Per row of validated (B, V) arrays: (tokens below the window and in it, |supp q|, whether it fell back\n"
          "to the sorted route (some p / q overflowed), tokens in the window, whether ExactSum gave the bits,\n"
          "alpha*, the certificate). force_exact takes the ExactSum path; alpha* is meaningless on fallback rows.");
}

void register_bound(py::module_& m) {
    m.def("dual_batch", &dual_batch, py::arg("p"), py::arg("q"), py::arg("n"), py::arg("scheme"),
          py::arg("wor_method") = "auto", py::arg("certificate") = false, py::arg("threads") = 0,
          "alpha* of each row of (B, V) arrays by the sorted-prefix scan (iid, wor, mixed) or the closed forms "
          "(greedy, topk).\n"
          "Inputs must already be validated and normalised. Returns (alpha[B], list of certificates or None).");
    m.def("dual_direct", &dual_direct, py::arg("p"), py::arg("q"), py::arg("n"), py::arg("scheme"),
          py::arg("wor_method") = "auto", py::arg("certificate") = false, py::arg("threads") = 0, py::arg("tol") = 1e-4,
          "dual_batch on raw (B, V) rows (float32 or float64, one dtype), each validated and normalised in its\n"
          "own row's pass: (alpha[B], certificates or None, None); (None, None, (status, side, row, value)) for\n"
          "invalid input (status as normalize_rows); (None, None, None) if the kernel refused a valid row.");
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
