// mdsd_fast._core.verifiers: the verifier table, VerifierBatch (verifier_batch.hpp) and the
// plan-free route ("planless", verifiers/planless/batch.hpp): row i of raw (B, V) p, q verifies
// tuple i, validation fused into the row's pass. Streams as VerifierBatch::verify: (seed,
// row_ids[i] or i), so results depend neither on the thread count nor on the chunking. `untouched`
// (tests only): "optimal" cuts every window from the untouched levels, a deliberately wrong variant
// (the negative control of the order-freedom its windows rest on, docs/theory/level_race.md §12.6).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mdsd/core/parallel.hpp"
#include "mdsd/core/rng.hpp"
#include "mdsd/verifiers/planless/batch.hpp"
#include "mdsd/verifiers/planless/exact.hpp"
#include "mdsd/verifiers/registry.hpp"
#include "exact_lifted.hpp"
#include "raw_pair.hpp"
#include "row_keys.hpp"
#include "verifier_batch.hpp"

namespace py = pybind11;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using mdsd::bindings::F64;
using mdsd::bindings::VerifierBatch;

namespace {

namespace v = mdsd::verif;
namespace d = mdsd::verif::direct;

// A draft error of a row: the index k of the offending draft, its kind and token.
enum DraftErr { kNone = 0, kRange = 1, kQZero = 2, kTwice = 3 };
struct TupleCheck {
    int k = -1;
    int kind = kNone;
    int64_t token = 0;
};

std::string draft_message(int64_t row, const TupleCheck& c, int64_t V) {
    const std::string head = "drafts: row " + std::to_string(row) + ": ";
    const std::string tok = std::to_string(c.token);
    if (c.kind == kRange) return head + "token id " + tok + " outside [0, " + std::to_string(V) + ")";
    if (c.kind == kQZero) return head + "token " + tok + " has q = 0, so it cannot have been drafted from q";
    return head + "token " + tok + " appears twice; without-replacement drafts are distinct";
}

// Tuples as int32 with their range and (without replacement) distinctness checked; q > 0 is
// checked on the normalised row, in the row's pass.
std::vector<int32_t> read_tuples(const I64& drafts, int64_t V, bool wor, std::vector<TupleCheck>& chk) {
    const int64_t B = drafts.shape(0), n = drafts.shape(1);
    std::vector<int32_t> tup(static_cast<std::size_t>(B * n), 0);
    chk.assign(static_cast<std::size_t>(B), TupleCheck{});
    for (int64_t i = 0; i < B; ++i)
        for (int64_t k = 0; k < n; ++k) {
            const int64_t x = drafts.data()[i * n + k];
            if (x < 0 || x >= V) {
                chk[i] = TupleCheck{static_cast<int>(k), kRange, x};
                break;
            }
            tup[i * n + k] = static_cast<int32_t>(x);
            if (wor && v::contains(tup.data() + i * n, static_cast<int>(k), static_cast<int32_t>(x))) {
                chk[i] = TupleCheck{static_cast<int>(k), kTwice, x};
                break;
            }
        }
    return tup;
}

using mdsd::bindings::float_kind;

struct Out {
    int64_t* tokens;
    uint8_t* accepted;
    std::vector<d::RowCheck>& rows;
    std::vector<TupleCheck>& tuples;
};

template <class T>
void run_rows(d::Kind kind, const T* pp, const T* qq, int64_t B, int64_t V, double tol, const int32_t* tup, int n,
              uint64_t seed, const std::vector<uint64_t>& keys, int threads, bool untouched, Out& out) {
    py::gil_scoped_release nogil;
    mdsd::parallel_rows<d::Scratch>(B, threads, [&](int64_t i, d::Scratch& ws) {
        if (!d::normalise_pair(pp + i * V, qq + i * V, V, tol, ws, out.rows[i], kind == d::Kind::Optimal)) return;
        TupleCheck& tc = out.tuples[i];
        const int32_t* ti = tup + i * n;
        const int k0 = d::first_q_zero(ws, ti, tc.kind == kNone ? n : tc.k);
        if (k0 >= 0) tc = TupleCheck{k0, kQZero, ti[k0]};
        if (tc.kind != kNone) return;
        mdsd::Rng rng(seed, keys[i]);
        ws.race.untouched = untouched;
        v::SampleVisitor vis{rng, ws.target, false};
        d::walk_row(kind, ws, V, ti, n, vis);
        out.tokens[i] = vis.out;
        out.accepted[i] = v::contains(ti, n, vis.out);
    });
}

// (tokens[B], accepted[B], None) or, for invalid p or q, (None, None, (status, side, row, value)):
// the first broken rule of p (side 0) in any row, else of q (side 1), as _core.inputs.normalize_rows
// reports it. Draft errors raise ValueError naming the row.
py::tuple verify_direct(const std::string& name, const py::array& p, const py::array& q, const I64& drafts,
                        uint64_t seed, int threads, const py::object& row_ids, double tol, bool untouched) {
    const d::Kind kind = d::parse_direct(name);
    const int fk = float_kind(p, q, 2);
    const int64_t B = p.shape(0), V = p.shape(1);
    if (drafts.ndim() != 2 || drafts.shape(0) != B || drafts.shape(1) < 1)
        throw std::invalid_argument("drafts: expected shape (B, n) with B = " + std::to_string(B));
    const int n = static_cast<int>(drafts.shape(1));
    if (name == "sd" && n != 1)
        throw std::invalid_argument("n: verifier 'sd' handles n = 1 drafts only, got n = " + std::to_string(n));
    std::vector<TupleCheck> tchk;
    const std::vector<int32_t> tup = read_tuples(drafts, V, kind == d::Kind::RrsWor, tchk);
    const std::vector<uint64_t> keys = mdsd::bindings::row_keys(row_ids, B);
    std::vector<d::RowCheck> rchk(static_cast<std::size_t>(B));
    py::array_t<int64_t> tokens(B);
    py::array_t<bool> accepted(B);
    Out out{tokens.mutable_data(), reinterpret_cast<uint8_t*>(accepted.mutable_data()), rchk, tchk};
    if (fk == 1)
        run_rows(kind, static_cast<const float*>(p.data()), static_cast<const float*>(q.data()), B, V, tol, tup.data(),
                 n, seed, keys, threads, untouched, out);
    else
        run_rows(kind, static_cast<const double*>(p.data()), static_cast<const double*>(q.data()), B, V, tol,
                 tup.data(), n, seed, keys, threads, untouched, out);
    for (int side = 0; side < 2; ++side)
        for (int64_t i = 0; i < B; ++i)
            if (rchk[i].status[side] != mdsd::validate::kOk)
                return py::make_tuple(py::none(), py::none(),
                                      py::make_tuple(rchk[i].status[side], side, i, rchk[i].value[side]));
    for (int64_t i = 0; i < B; ++i)
        if (tchk[i].kind != kNone) throw std::invalid_argument(draft_message(i, tchk[i], V));
    return py::make_tuple(tokens, accepted, py::none());
}

// Exact output law of the direct route for each tuple (m, n) of one raw row (V,): (m, V), after
// the same validation and normalisation as verify_direct. For the tests.
template <class T>
py::array_t<double> law_rows(d::Kind kind, const T* p, const T* q, int64_t V, double tol, const I64& tuples, bool wor,
                             bool untouched) {
    d::Scratch ws;
    ws.race.untouched = untouched;
    d::RowCheck rc;
    if (!d::normalise_pair(p, q, V, tol, ws, rc, kind == d::Kind::Optimal))
        throw std::invalid_argument("p, q: not valid distributions (status " + std::to_string(rc.status[0]) + ", " +
                                    std::to_string(rc.status[1]) + ")");
    const int64_t m = tuples.shape(0);
    const int n = static_cast<int>(tuples.shape(1));
    std::vector<TupleCheck> tchk;
    const std::vector<int32_t> tup = read_tuples(tuples, V, wor, tchk);
    py::array_t<double> out({m, V});
    double* o = out.mutable_data();
    std::fill(o, o + m * V, 0.0);
    for (int64_t i = 0; i < m; ++i) {
        const int k0 = d::first_q_zero(ws, tup.data() + i * n, tchk[i].kind == kNone ? n : tchk[i].k);
        if (k0 >= 0) tchk[i] = TupleCheck{k0, kQZero, tup[i * n + k0]};
        if (tchk[i].kind != kNone) throw std::invalid_argument(draft_message(i, tchk[i], V));
        v::LawVisitor vis{o + i * V, ws.target, false};
        d::walk_row(kind, ws, V, tup.data() + i * n, n, vis);
    }
    return out;
}

py::array_t<double> law_direct(const std::string& name, const py::array& p, const py::array& q, const I64& tuples,
                               double tol, bool untouched) {
    const d::Kind kind = d::parse_direct(name);
    const int fk = float_kind(p, q, 1);
    const int64_t V = p.shape(0);
    if (tuples.ndim() != 2 || tuples.shape(1) < 1) throw std::invalid_argument("tuples: expected shape (m, n)");
    const bool wor = kind == d::Kind::RrsWor;
    if (fk == 1)
        return law_rows(kind, static_cast<const float*>(p.data()), static_cast<const float*>(q.data()), V, tol, tuples,
                        wor, untouched);
    return law_rows(kind, static_cast<const double*>(p.data()), static_cast<const double*>(q.data()), V, tol, tuples,
                    wor, untouched);
}

// Exact acceptance of a closed-form verifier for every row of (B, V) p, q (planless/exact.hpp):
// (acc[B], None), or (None, (0, status, side, row, value)) for an invalid row (as verify_direct),
// or (None, (1, row, support, 0, 0)) for a row whose q has too few tokens with q > 0 for the
// scheme's deterministic drafts. prepared: p, q are already validated, normalised float64 rows
// (as_pair's output), read in place; otherwise each raw row is validated (validate.hpp's pair
// pass) and divided by its exact sum as it is read (as_pair's rows bit for bit). Rows go in
// groups of kWide, one vector lane each (the bits of each row alone), the last ones one by one.
#ifdef MDSD_AVX2
using Wide = mdsd::D4;
#elif defined(MDSD_SSE2)
using Wide = mdsd::D2;
#else
using Wide = double;
#endif
constexpr int kWide = d::rows::kLanes<Wide>;
constexpr int64_t kWideTokens = int64_t{1} << 22;  // wider rows one by one: a group's buffers <= 512 MiB

template <class L, class T>
void closed_group_rows(d::Closed kind, const T* pp, const T* qq, int64_t first, int64_t count, int64_t V, int n,
                       double tol, bool prepared, const int64_t* ids, int64_t vocab, d::ClosedScratch& ws, double* acc,
                       std::vector<d::RowCheck>& rchk, std::vector<int64_t>& short_of) {
    constexpr int G = d::rows::kLanes<L>;
    d::rows::Group<T, G> g;
    d::rows::Group<double, G> gd;  // sparse rows, scattered
    int64_t row[G];
    int valid = -1;
    for (int r = 0; r < G; ++r) {
        row[r] = first + std::min<int64_t>(r, count - 1);  // a short group repeats its last row
        g.p[r] = pp + row[r] * V;
        g.q[r] = qq + row[r] * V;
        g.sp[r] = g.sq[r] = 1.0;
        if (!prepared && r < count) {
            double sums[2];
            d::RowCheck& c = rchk[row[r]];
            if (mdsd::validate::pair_sums(g.p[r], g.q[r], V, tol, sums, c.status, c.value)) {
                g.sp[r] = sums[0];
                g.sq[r] = sums[1];
                if (valid < 0) valid = r;
            }
        } else if (r < count && valid < 0) {
            valid = r;
        }
    }
    if (valid < 0) return;
    for (int r = 0; r < G; ++r)  // an invalid row's lane computes a valid one's (and is dropped)
        if (r >= count || (!prepared && !rchk[row[r]].ok())) {
            g.p[r] = g.p[valid], g.q[r] = g.q[valid], g.sp[r] = g.sp[valid], g.sq[r] = g.sq[valid];
        }
    double out[G];
    int64_t support[G];
    if (ids) {
        for (int r = 0; r < G; ++r) {
            ws.dense_p[r].assign(static_cast<std::size_t>(vocab), 0.0);
            ws.dense_q[r].assign(static_cast<std::size_t>(vocab), 0.0);
            for (int64_t j = 0; j < V; ++j) {
                const int64_t id = ids[row[r] * V + j];
                if (id < 0) continue;  // padding
                ws.dense_p[r][id] = static_cast<double>(g.p[r][j]);
                ws.dense_q[r][id] = static_cast<double>(g.q[r][j]);
            }
            gd.p[r] = ws.dense_p[r].data();
            gd.q[r] = ws.dense_q[r].data();
            gd.sp[r] = gd.sq[r] = 1.0;
        }
        d::closed_group<L, false>(kind, gd, vocab, n, ws, out, support);
    } else if (prepared) {
        d::closed_group<L, false>(kind, g, V, n, ws, out, support);
    } else {
        d::closed_group<L, true>(kind, g, V, n, ws, out, support);
    }
    for (int r = 0; r < count; ++r) {
        if (!prepared && !rchk[row[r]].ok()) continue;
        acc[row[r]] = out[r];
        if (out[r] < 0.0) short_of[row[r]] = support[r];
    }
}

template <class T>
void closed_rows(d::Closed kind, const T* pp, const T* qq, int64_t B, int64_t V, int n, double tol, bool prepared,
                 const int64_t* ids, int64_t vocab, int threads, double* acc, std::vector<d::RowCheck>& rchk,
                 std::vector<int64_t>& short_of) {
    py::gil_scoped_release nogil;
    const int64_t len = ids ? vocab : V;
    const int64_t full = len <= kWideTokens ? B / kWide : 0;  // groups of kWide rows, then single rows
    const int64_t jobs = full + (B - full * kWide);
    mdsd::parallel_rows<d::ClosedScratch>(jobs, threads, [&](int64_t j, d::ClosedScratch& ws) {
        if (j < full)
            closed_group_rows<Wide>(kind, pp, qq, j * kWide, kWide, V, n, tol, prepared, ids, vocab, ws, acc, rchk,
                                    short_of);
        else
            closed_group_rows<double>(kind, pp, qq, full * kWide + (j - full), 1, V, n, tol, prepared, ids, vocab, ws,
                                      acc, rchk, short_of);
    });
}

py::tuple exact_closed(const std::string& name, const py::array& p, const py::array& q, int n, double tol, int threads,
                       bool prepared, const py::object& ids_obj, int64_t vocab) {
    d::Closed kind;
    if (!d::parse_closed(name, kind))
        throw std::invalid_argument("name: no closed form for '" + name +
                                    "' (closed forms: 'sd', 'rrs', 'kseq', 'greedy', 'topk', 'spechub')");
    const int fk = float_kind(p, q, 2);
    if (n < 1 || n > mdsd::limits::kMaxDrafts) throw std::invalid_argument("n: out of range");
    if (prepared && fk != 2) throw std::invalid_argument("p, q: prepared rows are float64");
    const int64_t B = p.shape(0), V = p.shape(1);
    mdsd::bindings::UnionIds ids;
    const int64_t* id = mdsd::bindings::union_ids(ids_obj, prepared, B, V, vocab, ids);
    py::array_t<double> acc(B);
    std::vector<d::RowCheck> rchk(static_cast<std::size_t>(B));
    std::vector<int64_t> short_of(static_cast<std::size_t>(B), -1);
    if (fk == 1)
        closed_rows(kind, static_cast<const float*>(p.data()), static_cast<const float*>(q.data()), B, V, n, tol,
                    prepared, id, vocab, threads, acc.mutable_data(), rchk, short_of);
    else
        closed_rows(kind, static_cast<const double*>(p.data()), static_cast<const double*>(q.data()), B, V, n, tol,
                    prepared, id, vocab, threads, acc.mutable_data(), rchk, short_of);
    if (py::object err = mdsd::bindings::first_row_error(rchk); !err.is_none()) return py::make_tuple(py::none(), err);
    for (int64_t i = 0; i < B; ++i)
        if (short_of[i] >= 0) return py::make_tuple(py::none(), py::make_tuple(1, i, short_of[i], 0, 0));
    return py::make_tuple(acc, py::none());
}

}  // namespace

void register_verifiers(py::module_& m) {
    m.def(
        "table",
        [] {
            py::list out;
            for (const v::VerifierInfo& e : v::kVerifiers) {
                py::dict d;
                d["name"] = e.name;
                d["schemes"] = e.schemes;
                d["bound"] = e.bound;
                d["n_min"] = e.n_min;
                d["n_max"] = e.n_max > 0 ? static_cast<int64_t>(e.n_max) : mdsd::limits::kMaxDrafts;
                d["report"] = e.report;
                d["exact"] = e.exact;
                out.append(d);
            }
            return out;
        },
        "The verifier table (cpp/include/mdsd/verifiers/registry.hpp): one dict per verifier.");
    py::class_<VerifierBatch>(
        m, "VerifierBatch",
        "One verifier prepared for every row of (B, V) arrays p, q (validated, normalised). wor_options (the\n"
        "without-replacement route): exact_head, event_head, last_resort_head, chain_depth (ints >= 1), and the\n"
        "tests' reference routes h_star_every_prefix (H* from the scan of every prefix) and outer_by_division\n"
        "(False: the outer system's passes checkpointed).")
        .def(py::init<const std::string&, const F64&, const F64&, int, const std::string&, const py::object&, int,
                      double, const py::dict&>(),
             py::arg("name"), py::arg("p"), py::arg("q"), py::arg("n"), py::arg("scheme"), py::arg("lp") = py::none(),
             py::arg("threads") = 0, py::arg("budget") = 0.0, py::arg("wor_options") = py::dict())
        .def("route", &VerifierBatch::route,
             "What the without-replacement route did with each row (optimal / sweep with scheme='wor'): a dict\n"
             "of arrays work, out_of_budget, best_order, orders_run, alpha_star, alpha_plan and best_order_name.")
        .def_property_readonly("B", &VerifierBatch::B)
        .def_property_readonly("V", &VerifierBatch::V)
        .def_property_readonly("n", &VerifierBatch::n)
        .def_property_readonly("name", &VerifierBatch::name)
        .def("exact", &VerifierBatch::exact, py::arg("budget"), py::arg("threads") = 0,
             "Exact acceptance of every row; raises TooLargeError when the exact route costs more than budget.")
        .def("cost", &VerifierBatch::cost, "Estimated work of the exact route per row (rrs-wor; 0 otherwise).")
        .def("rho", &VerifierBatch::rho, "K-SEQ's rho* per row (0 for other verifiers).")
        .def("simulate", &VerifierBatch::simulate, py::arg("samples"), py::arg("seed"), py::arg("threads") = 0,
             py::arg("naive_residual") = false, py::arg("row_ids") = py::none(),
             "Draft and verify `samples` times per row: (tokens[B, s], accepted[B, s], drafts[B, s, n]).\n"
             "naive_residual=True resamples from p on rejection (a deliberately biased variant, for tests).")
        .def("estimate", &VerifierBatch::estimate, py::arg("samples"), py::arg("seed"), py::arg("threads") = 0,
             py::arg("row_ids") = py::none(),
             "Acceptance estimated by simulation: (rate[B], standard error[B]). row_ids: stable stream keys.")
        .def("verify", &VerifierBatch::verify, py::arg("drafts"), py::arg("seed"), py::arg("threads") = 0,
             py::arg("row_ids") = py::none(),
             "Verify given draft tuples, shape (m, n) with m = B (or any m when B = 1): (token[m], accepted[m]).")
        .def("law", &VerifierBatch::law, py::arg("tuples"), py::arg("row") = 0, py::arg("naive_residual") = false,
             "Exact conditional output law Pr[y | tuple] for each tuple of shape (m, n): array (m, V).\n"
             "naive_residual=True: the law of the biased variant of simulate (for tests).");
    m.def("verify_direct", &verify_direct, py::arg("name"), py::arg("p"), py::arg("q"), py::arg("drafts"),
          py::arg("seed"), py::arg("threads") = 0, py::arg("row_ids") = py::none(), py::arg("tol") = 1e-4,
          py::arg("untouched") = false,
          "Verify tuple i against raw row i of (B, V) p, q without a plan ('sd', 'rrs', 'rrs-wor', 'kseq',\n"
          "'optimal' with i.i.d. drafts),\n"
          "validating and normalising each row in its own pass: (token[B], accepted[B], None), or\n"
          "(None, None, (status, side, row, value)) for invalid input (status as normalize_rows).");
    m.def("exact_closed", &exact_closed, py::arg("name"), py::arg("p"), py::arg("q"), py::arg("n"),
          py::arg("tol") = 1e-4, py::arg("threads") = 0, py::arg("prepared") = false, py::arg("ids") = py::none(),
          py::arg("vocab") = 0,
          "Exact acceptance of 'sd', 'rrs', 'kseq', 'greedy', 'topk' or 'spechub' for every row of (B, V) p, q by\n"
          "its closed form, without a plan: (acc[B], None), (None, (0, status, side, row, value)) for an invalid\n"
          "row, or (None, (1, row, support, 0, 0)) when q has too few tokens with q > 0. prepared=True: p, q are\n"
          "as_pair's validated float64 rows, read in place; with ids (B, V) int64 (-1: padding), rows on their\n"
          "union support, scattered into a row of `vocab` entries (the dense rows' bits).");
    m.def("exact_lifted", &mdsd::bindings::exact_lifted, py::arg("name"), py::arg("p"), py::arg("q"), py::arg("n"),
          py::arg("scheme"), py::arg("tol") = 1e-4, py::arg("threads") = 0, py::arg("prepared") = false,
          py::arg("ids") = py::none(), py::arg("vocab") = 0, py::arg("budget") = 2e8,
          "Exact acceptance without a plan of 'rrs-wor' ('wor' or 'top<m>+wor') and of 'rrs' and 'kseq' under\n"
          "'top<m>+iid', for every row of (B, V) p, q; arguments and results as exact_closed. An rrs-wor row\n"
          "whose recursion costs more than budget raises TooLargeError, as VerifierBatch.exact does.");
    m.def("law_direct", &law_direct, py::arg("name"), py::arg("p"), py::arg("q"), py::arg("tuples"),
          py::arg("tol") = 1e-4, py::arg("untouched") = false,
          "Exact output law of the direct route for each tuple (m, n) of one raw row (V,): (m, V).\n"
          "untouched=True (tests): 'optimal' with its windows cut from the untouched levels (wrong on purpose).");
}
