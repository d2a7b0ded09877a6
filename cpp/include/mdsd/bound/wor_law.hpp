// The law of the draft set under without-replacement drafting (docs/theory/notation.md §1, §7.1), written
// once: Pr[S = A] for every n-subset A of the support, used by the flow LP's draft sets
// (sets_wor) and by the exact tight-set sweep (verifiers/optimal_wor/exact_sweep.hpp).
//
// For a subset A, Pr[S = A] = sum over the orderings of A of prod_t q(a_t) / (mass not yet drawn),
// by a DP over the 2^n sub-masks of A (the orderings share prefixes). The mass not yet drawn is
// (mass outside A) + (mass of A's tokens not yet drawn); the mass outside A is summed directly
// when A holds most of q, where total - q(A) would cancel.
#pragma once

#include <algorithm>
#include <cstdint>

#include "mdsd/core/bits.hpp"
#include <limits>
#include <utility>
#include <vector>

#include "mdsd/core/parallel.hpp"

namespace mdsd {

// Calls fn(comb, weight) for every n-subset of `sup` (comb: n ascending indices into sup) with
// weight Pr[S = {sup[comb[0]], ..., sup[comb[n-1]]}] > 0. Needs n <= K = |sup| and n <= 30.
template <class Fn>
inline void for_each_wor_set(const double* q, const std::vector<int32_t>& sup, int n, Fn&& fn) {
    const int64_t K = static_cast<int64_t>(sup.size());
    if (n < 1 || n > K) return;
    double total = 0.0;
    for (int32_t t : sup) total += q[t];
    std::vector<int32_t> comb(n);
    std::vector<double> g(std::size_t(1) << n), qm(std::size_t(1) << n);
    for (int j = 0; j < n; ++j) comb[j] = j;
    const uint32_t full = (1u << n) - 1;
    for (;;) {
        poll_interrupt();
        std::fill(g.begin(), g.end(), 0.0);
        g[0] = 1.0;
        qm[0] = 0.0;
        for (uint32_t mask = 1; mask <= full; ++mask) {
            const int low = ctz32(mask);
            qm[mask] = qm[mask & (mask - 1)] + q[sup[comb[low]]];
        }
        double out = total - qm[full];
        if (qm[full] > 0.5 * total) {
            out = 0.0;
            int j = 0;
            for (int64_t s = 0; s < K; ++s) {
                if (j < n && comb[j] == s) {
                    ++j;
                    continue;
                }
                out += q[sup[s]];
            }
        }
        for (uint32_t mask = 0; mask < full; ++mask) {
            if (g[mask] == 0.0) continue;
            const double den = out + qm[full ^ mask];
            const double inv = 1.0 / den;
            const bool tiny = !(inv <= std::numeric_limits<double>::max());  // subnormal den: divide each
            for (int a = 0; a < n; ++a) {
                if (mask & (1u << a)) continue;
                const double qa = q[sup[comb[a]]];
                g[mask | (1u << a)] += tiny ? g[mask] * (qa / den) : g[mask] * qa * inv;
            }
        }
        if (g[full] > 0.0) fn(comb.data(), g[full]);
        int j = n - 1;  // next combination
        while (j >= 0 && comb[j] == K - n + j) --j;
        if (j < 0) break;
        ++comb[j];
        for (int l = j + 1; l < n; ++l) comb[l] = comb[l - 1] + 1;
    }
}

// The same law as (mask over the indices of `sup`, probability) pairs, ascending by mask (K <= 64).
inline std::vector<std::pair<uint64_t, double>> wor_set_law(const double* q, const std::vector<int32_t>& sup, int n) {
    std::vector<std::pair<uint64_t, double>> out;
    for_each_wor_set(q, sup, n, [&](const int32_t* comb, double w) {
        uint64_t m = 0;
        for (int j = 0; j < n; ++j) m |= uint64_t{1} << comb[j];
        out.emplace_back(m, w);
    });
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace mdsd
