// _core.verifiers.exact_lifted: the exact acceptance of "rrs-wor" and of the mixed lifts without a
// plan (verifiers/planless/lifted.hpp), with the same results, errors and refusals as exact_closed
// and the plan route (VerifierBatch::exact).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/core/limits.hpp"
#include "mdsd/verifiers/planless/lifted.hpp"
#include "raw_pair.hpp"

namespace mdsd::bindings {

namespace py = pybind11;

using UnionIds = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// The vocabulary ids (B, V) of prepared rows on their union support (-1: padding), checked against
// `vocab`, kept alive in `keep`; null for ids None (dense rows).
inline const int64_t* union_ids(const py::object& ids_obj, bool prepared, int64_t B, int64_t V, int64_t vocab,
                                UnionIds& keep) {
    if (ids_obj.is_none()) return nullptr;
    if (!prepared) throw std::invalid_argument("ids: only with prepared rows");
    keep = ids_obj.cast<UnionIds>();
    if (keep.ndim() != 2 || keep.shape(0) != B || keep.shape(1) != V)
        throw std::invalid_argument("ids: expected shape (B, V) of p and q");
    if (vocab < 1 || vocab > mdsd::limits::kMaxVocab) throw std::invalid_argument("vocab: out of range");
    for (int64_t k = 0; k < B * V; ++k)
        if (keep.data()[k] >= vocab) throw std::invalid_argument("ids: an id at or above vocab");
    return keep.data();
}

// (0, status, side, row, value) for the first broken rule of p in any row, else of q; None if
// every row is valid (the error tuple exact_closed and exact_lifted hand to Python's raise_row_error).
inline py::object first_row_error(const std::vector<mdsd::verif::direct::RowCheck>& rchk) {
    for (int side = 0; side < 2; ++side)
        for (std::size_t i = 0; i < rchk.size(); ++i)
            if (rchk[i].status[side] != mdsd::validate::kOk)
                return py::make_tuple(0, rchk[i].status[side], side, static_cast<int64_t>(i), rchk[i].value[side]);
    return py::none();
}

// (acc[B], None); (None, (0, status, side, row, value)) for an invalid row (the first broken rule
// of p in any row, else of q); (None, (1, row, support, 0, 0)) for the first row whose q has too
// few tokens with q > 0 for the scheme. A row whose rrs-wor recursion costs more than `budget`
// raises TooLargeError with the plan route's message (after every row has been checked).
inline py::tuple exact_lifted(const std::string& name, const py::array& p, const py::array& q, int n,
                              const std::string& scheme, double tol, int threads, bool prepared,
                              const py::object& ids_obj, int64_t vocab, double budget) {
    namespace d = mdsd::verif::direct;
    d::Lifted s;
    if (!d::parse_lifted(name, scheme, s))
        throw std::invalid_argument("name, scheme: no plan-free exact route for '" + name + "' under '" + scheme +
                                    "' (it serves 'rrs-wor' under 'wor' or 'top<m>+wor', 'rrs' and 'kseq' under "
                                    "'top<m>+iid')");
    const int fk = float_kind(p, q, 2);
    if (n < 1 || n > mdsd::limits::kMaxDrafts) throw std::invalid_argument("n: out of range");
    if (s.m >= n)
        throw std::invalid_argument("scheme: a mixed scheme top<m>+... needs 1 <= m < n, got m = " +
                                    std::to_string(s.m) + ", n = " + std::to_string(n));
    if (!(budget >= 0.0)) throw std::invalid_argument("budget: must be >= 0");
    if (prepared && fk != 2) throw std::invalid_argument("p, q: prepared rows are float64");
    const int64_t B = p.shape(0), V = p.shape(1);
    UnionIds ids;
    const int64_t* id = union_ids(ids_obj, prepared, B, V, vocab, ids);
    std::vector<d::RowCheck> rchk(static_cast<std::size_t>(B));
    std::vector<d::LiftedRow> rows(static_cast<std::size_t>(B));
    const void* pv = p.data();
    const void* qv = q.data();
    auto run = [&](auto tag) -> py::tuple {
        using T = decltype(tag);
        const T* pp = static_cast<const T*>(pv);
        const T* qq = static_cast<const T*>(qv);
        {
            py::gil_scoped_release nogil;
            d::lifted_rows(s, pp, qq, B, V, n, tol, prepared, id, vocab, budget, threads, rchk, rows);
        }
        if (py::object err = first_row_error(rchk); !err.is_none()) return py::make_tuple(py::none(), err);
        for (int64_t i = 0; i < B; ++i)
            if (rows[i].short_of >= 0) return py::make_tuple(py::none(), py::make_tuple(1, i, rows[i].short_of, 0, 0));
        for (int64_t i = 0; i < B; ++i)
            if (rows[i].refused) d::lifted_refuse(s, pp, qq, i, V, n, tol, prepared, id, vocab, budget);
        py::array_t<double> acc(B);
        for (int64_t i = 0; i < B; ++i) acc.mutable_data()[i] = rows[i].acc;
        return py::make_tuple(acc, py::none());
    };
    return fk == 1 ? run(float{}) : run(double{});
}

}  // namespace mdsd::bindings
