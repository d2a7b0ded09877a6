// mdsd_fast._core.intervals: the without-replacement ends of acceptance_bounds
// (mdsd/intervals/unseen_mass.hpp, family_descent.hpp), one row at a time over a batch on the
// union layout of python/mdsd_fast/intervals.iid.py. Rows are independent, so the results do
// not depend on the thread count.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "mdsd/core/parallel.hpp"
#include "mdsd/intervals/family_descent.hpp"
#include "mdsd/intervals/unseen_mass.hpp"

namespace py = pybind11;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

namespace {

void check_rows(const F64& p, const F64& q, int k) {
    if (p.ndim() != 2 || q.ndim() != 2 || p.shape(0) != q.shape(0) || p.shape(1) != q.shape(1))
        throw std::invalid_argument("p, q: expected two (B, L) float64 arrays of the same shape");
    if (k < 1 || k > 64) throw std::invalid_argument("k: must be in 1..64, got " + std::to_string(k));
    for (const F64* x : {&p, &q})
        for (int64_t i = 0; i < x->size(); ++i)
            if (!(std::isfinite(x->data()[i]) && x->data()[i] >= 0.0))
                throw std::invalid_argument("p, q: entries must be finite and >= 0");
}

void check_vec(const char* name, const F64& x, int64_t B) {
    if (x.ndim() != 1 || x.shape(0) != B) throw std::invalid_argument(std::string(name) + ": expected a (B,) array");
    for (int64_t i = 0; i < B; ++i)
        if (!(std::isfinite(x.data()[i]) && x.data()[i] >= 0.0))
            throw std::invalid_argument(std::string(name) + ": entries must be finite and >= 0");
}

F64 bucket_alpha(const F64& p, const F64& q, const F64& u, int k, int threads) {
    check_rows(p, q, k);
    const int64_t B = p.shape(0), L = p.shape(1);
    check_vec("u", u, B);
    for (int64_t r = 0; r < B; ++r)
        if (!(u.data()[r] > 0.0)) throw std::invalid_argument("u: the bucket's mass must be > 0");
    F64 out(B);
    double* o = out.mutable_data();
    const double *pp = p.data(), *qq = q.data(), *uu = u.data();
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<mdsd::WorBoundsWorkspace>(B, threads, [&](int64_t r, mdsd::WorBoundsWorkspace& ws) {
            o[r] = mdsd::wor_bucket_alpha(pp + r * L, qq + r * L, L, uu[r], k, ws);
        });
    }
    return out;
}

// The checks of the union-layout row arguments shared by wor_cut_min and wor_cut_descent.
void check_cut_rows(const F64& p, const F64& q, const I64& hidden, const F64& up, const F64& tp, const F64& uq,
                    const F64& tq, int k, const F64& p_top, const I64& n_tc, int pieces) {
    check_rows(p, q, k);
    if (pieces < 1 || pieces > mdsd::kMaxCapPieces)
        throw std::invalid_argument("pieces: must be in 1..2^20, got " + std::to_string(pieces));
    const int64_t B = p.shape(0);
    if (hidden.ndim() != 1 || hidden.shape(0) != B) throw std::invalid_argument("hidden: expected a (B,) array");
    for (int64_t r = 0; r < B; ++r)
        if (hidden.data()[r] < 0) throw std::invalid_argument("hidden: counts must be >= 0");
    check_vec("up", up, B);
    check_vec("tp", tp, B);
    check_vec("uq", uq, B);
    check_vec("tq", tq, B);
    check_vec("p_top", p_top, B);
    if (n_tc.ndim() != 1 || n_tc.shape(0) != B) throw std::invalid_argument("n_tc: expected a (B,) array");
    for (int64_t r = 0; r < B; ++r)
        if (n_tc.data()[r] < 0) throw std::invalid_argument("n_tc: counts must be >= 0");
}

mdsd::TruncatedRow cut_row(int64_t r, const F64& p, const F64& q, const I64& hidden, const F64& up, const F64& tp,
                           const F64& uq, const F64& tq, const F64& p_top, const I64& n_tc) {
    const int64_t L = p.shape(1);
    return mdsd::TruncatedRow{
        p.data() + r * L, q.data() + r * L, L, hidden.data()[r], up.data()[r], tp.data()[r], uq.data()[r], tq.data()[r],
        p_top.data()[r],  n_tc.data()[r]};
}

F64 cut_min(const F64& p, const F64& q, const I64& hidden, const F64& up, const F64& tp, const F64& uq, const F64& tq,
            int k, const F64& p_top, const I64& n_tc, int pieces, int threads) {
    check_cut_rows(p, q, hidden, up, tp, uq, tq, k, p_top, n_tc, pieces);
    const int64_t B = p.shape(0);
    F64 out(B);
    double* o = out.mutable_data();
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<mdsd::WorBoundsWorkspace>(B, threads, [&](int64_t r, mdsd::WorBoundsWorkspace& ws) {
            o[r] = mdsd::wor_cut_min(cut_row(r, p, q, hidden, up, tp, uq, tq, p_top, n_tc), k, ws, pieces);
        });
    }
    return out;
}

py::tuple cut_descent(const F64& p, const F64& q, const I64& hidden, const F64& up, const F64& tp, const F64& uq,
                      const F64& tq, int k, const F64& p_top, const I64& n_tc, const I64& start, int64_t budget,
                      int pieces, bool hold_a, int threads) {
    check_cut_rows(p, q, hidden, up, tp, uq, tq, k, p_top, n_tc, pieces);
    const int64_t B = p.shape(0);
    if (start.ndim() != 2 || start.shape(0) != B || start.shape(1) != 3)
        throw std::invalid_argument("start: expected a (B, 3) array of (h_B, h_C, A prefix)");
    if (budget < 0) throw std::invalid_argument("budget: must be >= 0");
    F64 high(B);
    I64 work(B);
    py::array_t<bool> whole(B);
    I64 arg({B, int64_t{4}});
    double* o = high.mutable_data();
    int64_t* wk = work.mutable_data();
    bool* wh = whole.mutable_data();
    int64_t* ag = arg.mutable_data();
    const int64_t* st = start.data();
    {
        py::gil_scoped_release nogil;
        mdsd::parallel_rows<mdsd::WorBoundsWorkspace>(B, threads, [&](int64_t r, mdsd::WorBoundsWorkspace& ws) {
            const mdsd::BoxSearch s =
                mdsd::wor_cut_descent(cut_row(r, p, q, hidden, up, tp, uq, tq, p_top, n_tc), k, st[3 * r],
                                      st[3 * r + 1], st[3 * r + 2], budget, ws, pieces, hold_a);
            o[r] = s.high;
            wk[r] = s.work;
            wh[r] = s.whole;
            std::copy_n(s.arg, 4, ag + 4 * r);
        });
    }
    return py::make_tuple(high, work, whole, arg);
}

}  // namespace

void register_intervals(py::module_& m) {
    m.def("wor_low_end", &bucket_alpha, py::arg("p"), py::arg("q"), py::arg("u"), py::arg("k"), py::arg("threads") = 1,
          "Per row: 1 + min_H [p(H) - Q(H + bucket)] for k draws without replacement from the logged q\n"
          "plus a Poisson bucket of mass u (> 0) in every H: the low end of acceptance_bounds for \"wor\"\n"
          "(docs/guide/intervals.md §2). p, q: (B, L) logged values, u: (B,).");
    m.def("wor_cut_min", &cut_min, py::arg("p"), py::arg("q"), py::arg("hidden"), py::arg("up"), py::arg("tp"),
          py::arg("uq"), py::arg("tq"), py::arg("k"), py::arg("p_top"), py::arg("n_tc"),
          py::arg("pieces") = mdsd::kMaxCapPieces, py::arg("threads") = 1,
          "Per row: min over every H of 1 + p_max(H) - Q_min(H) for k draws without replacement: the high\n"
          "end of acceptance_bounds for \"wor\" (docs/design/intervals.md §3.2). p, q: (B, L) on the union layout;\n"
          "hidden: tokens logged in neither; up, tp, uq, tq: unseen masses and caps, (B,); for top<m>+wor\n"
          "T's columns zeroed, p_top = p(T) and n_tc = its p-unseen tokens (zeros for wor), (B,); pieces:\n"
          "the q mass forced into H at the cap t_q in at most this many pieces, equal lumps beyond (§3.5;\n"
          "1: one lump, §3; the default 2^20 never merges below 2^20 unseen tokens).");
    m.def("wor_cut_descent", &cut_descent, py::arg("p"), py::arg("q"), py::arg("hidden"), py::arg("up"), py::arg("tp"),
          py::arg("uq"), py::arg("tq"), py::arg("k"), py::arg("p_top"), py::arg("n_tc"), py::arg("start"),
          py::arg("budget"), py::arg("pieces") = mdsd::kMaxCapPieces, py::arg("hold_a") = false, py::arg("threads") = 1,
          "Per row: the smallest cut bound of wor_cut_min over the sets of its family that a descent from\n"
          "start = (h_B, h_C, A prefix), (B, 3), visits within budget (race steps plus sets tried) by boxes\n"
          "of the family (docs/design/intervals.md §3.2): (high, work, whole, arg), whole = a box covered the family\n"
          "(high is then wor_cut_min's), arg = the best set's (h_B, h_C, A prefix, h_D), (B, 4). hold_a keeps the A "
          "prefix at the start's (a negative control).");
}
