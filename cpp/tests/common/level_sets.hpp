// Comparing two sets of remaining levels (unions of segments), for the level-race tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "mdsd/verifiers/optimal_iid/level_windows.hpp"

namespace level_sets {

using mdsd::verif::level::Seg;

// Measure of the segments of R below level x.
inline double below(const std::vector<Seg>& R, double x) {
    double s = 0.0;
    for (const Seg& g : R) s += std::max(0.0, std::min(g.hi, x) - g.lo);
    return s;
}

// Largest difference between the measures of R1 and R2 below any level: 0 iff the same sets
// (up to measure zero). The difference is piecewise linear, so its extremes sit at endpoints.
inline double set_distance(const std::vector<Seg>& R1, const std::vector<Seg>& R2) {
    double d = 0.0;
    for (const auto* R : {&R1, &R2})
        for (const Seg& g : *R)
            for (double x : {g.lo, g.hi}) d = std::max(d, std::fabs(below(R1, x) - below(R2, x)));
    return d;
}

}  // namespace level_sets
