// Stream keys of rows (shared by the verifier bindings): row r's random stream is keyed by the
// caller's stable row id (row_ids) or by r, so a row keyed by its id gives the same samples in any
// batch, chunk or order.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mdsd::bindings {

namespace py = pybind11;

// The stream keys of `count` rows: row_ids (non-negative, < 2^31) or 0 .. count-1.
inline std::vector<uint64_t> row_keys(const py::object& row_ids, int64_t count) {
    std::vector<uint64_t> keys(static_cast<std::size_t>(count));
    if (row_ids.is_none()) {
        for (int64_t r = 0; r < count; ++r) keys[r] = static_cast<uint64_t>(r);
        return keys;
    }
    const auto ids = py::cast<py::array_t<int64_t, py::array::c_style | py::array::forcecast>>(row_ids);
    if (ids.ndim() != 1 || ids.shape(0) != count)
        throw std::invalid_argument("row_ids: expected " + std::to_string(count) + " ids, one per row");
    for (int64_t r = 0; r < count; ++r) {
        const int64_t id = ids.data()[r];
        if (id < 0 || id >= (int64_t{1} << 31))
            throw std::invalid_argument("row_ids: ids must be in [0, 2^31), got " + std::to_string(id));
        keys[r] = static_cast<uint64_t>(id);
    }
    return keys;
}

}  // namespace mdsd::bindings
