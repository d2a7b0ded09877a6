// The race grid of a draft law q as the plans (and the race_grid test binding) build it: shared by
// the race tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "cases.hpp"
#include "mdsd/race/grid.hpp"

inline mdsd::race::Grid grid_of(const cases::Vec& q, int n) {
    std::vector<double> qs;
    double qsum = 0.0;
    for (double x : q)
        if (x > 0.0) {
            qs.push_back(x);
            qsum += x;
        }
    std::sort(qs.begin(), qs.end(), std::greater<double>());
    mdsd::race::Grid gr;
    gr.build(n, qsum, static_cast<int64_t>(qs.size()) > n ? qs[n] : 0.0, qs.back());
    return gr;
}
