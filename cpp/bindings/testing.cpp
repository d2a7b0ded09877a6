// mdsd_fast._core._testing: hooks into the C++ kernels for the tests (not part of the public API).
// Each exposes one kernel on its own so a test can check it against an independent reference.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/race/grid.hpp"
#include "mdsd/race/pair.hpp"
#include "mdsd/race/pass.hpp"

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

namespace {

// The race grid (race::Grid) of a draft law q (1-D, finite, >= 0, at least n positive
// entries), as the full-vocabulary "wor" plans build it. For the test bindings below.
mdsd::race::Grid race_grid(const F64& q, int n) {
    if (q.ndim() != 1) throw std::invalid_argument("q: expected a 1-D float64 array");
    if (n < 1 || n > 64) throw std::invalid_argument("n: must be in 1..64, got " + std::to_string(n));
    std::vector<double> qs;
    double qsum = 0.0;
    for (int64_t y = 0; y < q.shape(0); ++y) {
        const double x = q.data()[y];
        if (!(std::isfinite(x) && x >= 0.0)) throw std::invalid_argument("q: entries must be finite and >= 0");
        if (x > 0.0) {
            qs.push_back(x);
            qsum += x;
        }
    }
    if (static_cast<int64_t>(qs.size()) < n)
        throw std::invalid_argument("q: needs at least n = " + std::to_string(n) + " positive entries, has " +
                                    std::to_string(qs.size()));
    std::sort(qs.begin(), qs.end(), std::greater<double>());
    mdsd::race::Grid gr;
    gr.build(n, qsum, static_cast<int64_t>(qs.size()) > n ? qs[n] : 0.0, qs.back());
    return gr;
}

// E[1{y in S} prod_{j in S, j != y} h_j] for every token y, S the set of n drafts without
// replacement from q: the exponential-race quadrature every full-vocabulary "wor" plan computes
// its loads with (race/, docs/theory/race_oracle.md §14). Exposed so tests can check it against enumeration.
F64 race_weights(const F64& q, const F64& h, int n) {
    if (h.ndim() != 1 || q.ndim() != 1 || q.shape(0) != h.shape(0))
        throw std::invalid_argument("q, h: expected two 1-D float64 arrays of the same length");
    const mdsd::race::Grid gr = race_grid(q, n);
    const int64_t V = q.shape(0);
    const double* qv = q.data();
    const double* hv = h.data();
    std::vector<int32_t> toks;
    std::vector<double> hs;
    for (int64_t y = 0; y < V; ++y) {
        if (!(hv[y] >= 0.0 && hv[y] <= 1.0)) throw std::invalid_argument("h: entries must lie in [0, 1]");
        if (qv[y] > 0.0) {
            toks.push_back(static_cast<int32_t>(y));
            hs.push_back(hv[y]);
        }
    }
    F64 out(V);
    double* w = out.mutable_data();
    std::fill(w, w + V, 0.0);
    {
        py::gil_scoped_release nogil;
        namespace R = mdsd::race;
        R::Pair base;
        base.unit(n, gr.G);
        std::vector<double> wt;
        R::pass(gr, qv, toks, base, [&](int64_t i, double) { return hs[i]; }, wt, hs.data());
        for (std::size_t i = 0; i < toks.size(); ++i) w[toks[i]] = wt[i];
    }
    return out;
}

// The greedy pass of the full-vocabulary "wor" plans (each token of `order`, in turn, laid until it
// has won p or whole; the tokens before it at their final weights, those after it at weight 1,
// every other token with q > 0 at weight 1): returns (w, h) per token of `order`. division=true runs
// race::pass_div (as the plans do), false the checkpointed race::pass. For tests.
py::tuple race_greedy(const F64& p, const F64& q, int n, const I64& order, bool division) {
    if (p.ndim() != 1 || q.ndim() != 1 || p.shape(0) != q.shape(0))
        throw std::invalid_argument("p, q: expected two 1-D float64 arrays of the same length");
    const mdsd::race::Grid gr = race_grid(q, n);
    const int64_t V = q.shape(0);
    const double* pv = p.data();
    const double* qv = q.data();
    for (int64_t y = 0; y < V; ++y)
        if (!(std::isfinite(pv[y]) && pv[y] >= 0.0)) throw std::invalid_argument("p: entries must be finite and >= 0");
    std::vector<char> in(V, 0);
    std::vector<int32_t> toks;
    for (int64_t i = 0; i < order.shape(0); ++i) {
        const int64_t y = order.data()[i];
        if (y < 0 || y >= V || in[y] || !(qv[y] > 0.0))
            throw std::invalid_argument("order: distinct token ids with q > 0 expected");
        in[y] = 1;
        toks.push_back(static_cast<int32_t>(y));
    }
    F64 w_out(static_cast<py::ssize_t>(toks.size())), h_out(static_cast<py::ssize_t>(toks.size()));
    {
        py::gil_scoped_release nogil;
        namespace R = mdsd::race;
        std::vector<double> e(gr.G), b(gr.G), w, h(toks.size(), 1.0);
        R::Pair env;
        env.unit(n, gr.G);
        for (int64_t y = 0; y < V; ++y)
            if (qv[y] > 0.0 && !in[y]) {
                gr.factors(qv[y], e.data(), b.data());
                env.add(e.data(), b.data(), 1.0, qv[y]);
            }
        auto lay = [&](int64_t i, double wi) {
            const double d = wi > 0.0 ? pv[toks[i]] / wi : 0.0;
            return h[i] = d >= 1.0 ? 0.0 : 1.0 - d;
        };
        if (!division || !R::pass_div(gr, qv, toks, env, lay, w)) R::pass(gr, qv, toks, env, lay, w);
        std::copy(w.begin(), w.end(), w_out.mutable_data());
        std::copy(h.begin(), h.end(), h_out.mutable_data());
    }
    return py::make_tuple(w_out, h_out);
}

// p, q: 1-D, the same length, finite and >= 0, q with at least n positive entries; 2 <= n <= 64.
void check_wor_race_args(const F64& p, const F64& q, int n) {
    if (p.ndim() != 1 || q.ndim() != 1 || p.shape(0) != q.shape(0))
        throw std::invalid_argument("p, q: expected two 1-D float64 arrays of the same length");
    if (n < 2 || n > 64) throw std::invalid_argument("n: must be in 2..64, got " + std::to_string(n));
    int64_t pos = 0;
    for (int64_t i = 0; i < q.shape(0); ++i) {
        if (!(std::isfinite(p.data()[i]) && p.data()[i] >= 0.0 && std::isfinite(q.data()[i]) && q.data()[i] >= 0.0))
            throw std::invalid_argument("p, q: entries must be finite and >= 0");
        pos += q.data()[i] > 0.0;
    }
    if (pos < n) throw std::invalid_argument("q: needs at least n = " + std::to_string(n) + " positive entries");
}

// alpha*_wor by the race integral (wor_method "integral"), its prefix size k_star and the number of
// tokens laid by a batch, with the tiny tokens batched (defer, the shipped route) or laid one by one
// (the reference; race/tiny_batch.hpp).
py::tuple wor_alpha_race(const F64& p, const F64& q, int n, bool defer) {
    check_wor_race_args(p, q, n);
    mdsd::DualWorkspace ws;
    ws.race.defer = defer;
    const mdsd::DualResult r =
        mdsd::dual_prefix(p.data(), q.data(), p.shape(0), n, mdsd::Scheme::Wor, mdsd::WorMethod::Integral, ws);
    return py::make_tuple(r.alpha, r.k_star, ws.race.batched);
}

// (alpha*_wor, k_star, prefixes integrated, fallback) by the race integral along one of its scans: "chord" (the
// shipped one, race/chord_scan.hpp), "every" (every prefix the i.i.d. bound leaves, the scan the
// chords replace), "fine" (every prefix, tokens one by one, `fine` times the nodes per doubling: the high-accuracy
// reference), "ends" (chords without splitting runs: a wrong scan, for negative controls) or
// "fallback" (chords, every split point taken as above its chord: the row falls back). p, q as
// for wor_alpha_race. fallback: the chord scan met a non-convex Q and the row was scanned at every
// prefix (the count is then that scan's). "isolated": chords, falling back also when another prefix may tie
// with the best (argmin_margin, as OptimalWor::prepare scans).
py::tuple wor_alpha_scan(const F64& p, const F64& q, int n, const std::string& scan, int fine) {
    if (scan != "chord" && scan != "every" && scan != "fine" && scan != "ends" && scan != "fallback" &&
        scan != "isolated" && scan != "nostop")
        throw std::invalid_argument(
            "scan: expected 'chord', 'every', 'fine', 'ends', 'fallback', 'isolated' or 'nostop', got '" + scan + "'");
    if (fine < 1 || fine > 16) throw std::invalid_argument("fine: must be in 1..16, got " + std::to_string(fine));
    check_wor_race_args(p, q, n);
    mdsd::DualWorkspace ws;
    ws.chords.enabled =
        scan == "chord" || scan == "ends" || scan == "fallback" || scan == "isolated" || scan == "nostop";
    ws.wor_stop = scan != "nostop";
    if (scan == "isolated") ws.chords.argmin_margin = mdsd::race::ChordScan::kArgminMargin;
    ws.chords.split = scan != "ends";
    if (scan == "fallback") ws.chords.convex_slack = -1.0;
    ws.race.defer = scan != "fine";
    ws.race.fine = scan == "fine" ? fine : 1;
    const mdsd::DualResult r =
        mdsd::dual_prefix(p.data(), q.data(), p.shape(0), n, mdsd::Scheme::Wor, mdsd::WorMethod::Integral, ws);
    const bool fallback = ws.chords.enabled && ws.chords.last.fallback;
    return py::make_tuple(r.alpha, r.k_star, ws.race.evaluations, fallback);
}

}  // namespace

void register_bound_testing(py::module_& t);  // bound.cpp

void register_testing(py::module_& t) {
    register_bound_testing(t);
    t.def("race_weights", &race_weights, py::arg("q"), py::arg("h"), py::arg("n"),
          "E[1{y in S} prod_{S minus y} h] for every token y, S the n drafts without replacement from q, by the\n"
          "exponential-race quadrature of the full-vocabulary 'wor' plans (for tests against enumeration).");
    t.def("wor_alpha_race", &wor_alpha_race, py::arg("p"), py::arg("q"), py::arg("n"), py::arg("defer"),
          "(alpha*_wor, k_star, tokens batched) by the race integral, tiny tokens batched (defer) or one by one.");
    t.def("wor_alpha_scan", &wor_alpha_scan, py::arg("p"), py::arg("q"), py::arg("n"), py::arg("scan"),
          py::arg("fine") = 4,
          "(alpha*_wor, k_star, prefixes integrated, fallback) by the race integral along the scan 'chord' (shipped),\n"
          "'every', 'fine' (every prefix, tokens one by one, `fine` times the nodes: the reference), 'ends' (a wrong\n"
          "scan), 'fallback' (every split taken as non-convex), 'isolated' (chords unless another prefix may tie) or\n"
          "'nostop' (chords without the early stop of bound/wor_stop.hpp at n > 8).");
    t.def("race_greedy", &race_greedy, py::arg("p"), py::arg("q"), py::arg("n"), py::arg("order"),
          py::arg("division") = true,
          "The greedy pass of the full-vocabulary 'wor' plans over `order` (each token laid until it has won p):\n"
          "(w, h) per token. division=True: by division (as the plans run it), False: checkpointed (for tests).");
}
