// Input validation of a probability row (python/mdsd_fast/_validate.py states the rules): finite,
// non-negative, and the row sum taken over the positive entries in ascending id order with
// Neumaier's compensated summation (accurate to a few ulps at any V, where a plain running sum
// drifts by up to V ulps). It is the one sum dense rows, sparse rows and the fused engine kernel
// (verifiers/direct_batch.hpp) share, so all normalise alike, bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace mdsd::validate {

enum Status { kOk = 0, kNonFinite = 1, kNegative = 2, kOffSum = 3 };

// Neumaier's compensated sum: s + c carries the rounding errors of the running sum. Adding 0.0
// leaves both s and c unchanged, so zeros may be added instead of skipped.
struct Sum {
    double s = 0.0, c = 0.0;
    void add(double v) {
        const double t = s + v;
        c += std::fabs(s) >= std::fabs(v) ? (s - t) + v : (v - t) + s;
        s = t;
    }
    double value() const { return s + c; }
};

// Sequential sum of the positive entries; status of the first broken rule (value: the negative
// entry). T is float or double (a float is widened exactly).
template <class T>
inline double row_sum(const T* x, int64_t V, int& status, double& value) {
    Sum s;
    for (int64_t i = 0; i < V; ++i) {
        const double v = x[i];
        if (!std::isfinite(v)) {
            status = kNonFinite;
            return s.value();
        }
        if (v < 0.0) {
            status = kNegative;
            value = v;
            return s.value();
        }
        if (v > 0.0) s.add(v);
    }
    return s.value();
}

// row_sum of two rows at once, without branches in the loop: the two compensated chains overlap
// and the range check is one comparison per entry. Any broken rule sends the row to row_sum,
// which names the first one. Returns false then (status_x / status_y set).
template <class T>
inline bool pair_sums(const T* x, const T* y, int64_t V, double tol, double sums[2], int status[2], double value[2]) {
    Sum sx, sy;
    bool bad = false;
    constexpr double big = std::numeric_limits<double>::max();
    for (int64_t i = 0; i < V; ++i) {
        const double a = x[i], b = y[i];
        bad |= !(a >= 0.0 && a <= big) || !(b >= 0.0 && b <= big);  // NaN fails both
        sx.add(a);
        sy.add(b);
    }
    if (bad) {
        status[0] = status[1] = kOk;
        sums[0] = row_sum(x, V, status[0], value[0]);
        sums[1] = row_sum(y, V, status[1], value[1]);
    } else {
        sums[0] = sx.value();
        sums[1] = sy.value();
        status[0] = status[1] = kOk;
    }
    for (int k = 0; k < 2; ++k)
        if (status[k] == kOk && !(std::fabs(sums[k] - 1.0) <= tol)) {
            status[k] = kOffSum;
            value[k] = sums[k];
        }
    return status[0] == kOk && status[1] == kOk;
}

}  // namespace mdsd::validate
