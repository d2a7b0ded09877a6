// The q mass forced into H at the cap (docs/design/intervals.md §3.5), as the race of race::WorRace sees
// it: f = max(0, u_q - t_q r) as floor(f / t_q) clocks of rate t_q and one of the remainder, the
// exact smallest Q over completions (Schur-concavity); more clocks than `most` become `most` equal
// clocks of f / most >= t_q, which majorise the pieces, so Q only falls and the bound stays valid.
// Equal clocks ring a binomial count, so their count's law below k is closed form on every node
// whatever their number: the cost does not grow with `most`, which only keeps the binomial
// coefficients in range (C(2^20, 63) b^63 < 1e293). A completion needs f <= t_q |U_q|, so a cap of
// 2^20 never merges on a vocabulary up to 2^20 tokens: the fill at the cap exactly.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/race/grid.hpp"
#include "mdsd/race/prefix_mass.hpp"

namespace mdsd {

constexpr int kMaxCapPieces = 1 << 20;

// m clocks of rate `size` and, if rem > 0, one of rate rem (the forced mass as the Python side
// splits it, docs/design/intervals.md §3.5).
struct ForcedPieces {
    int64_t m = 0;
    double size = 0.0, rem = 0.0;
    int64_t clocks() const { return m + (rem > 0.0); }
};

inline ForcedPieces forced_pieces(double f, double cap, int most) {
    if (!(f > 0.0)) return {};
    const double whole = cap > 0.0 ? std::floor(f / cap * (1.0 + 1e-12)) : 0.0;  // a rounding below a piece is one
    if (whole >= most) return {most, f / most, 0.0};
    const int64_t m = static_cast<int64_t>(whole);
    const double rem = f - static_cast<double>(m) * cap;
    const bool has_rem = rem > 1e-15;
    if (m + has_rem > most) return {most, f / most, 0.0};
    if (m == 0) return {1, rem, 0.0};  // the remainder alone: one clock
    return {m, cap, has_rem ? rem : 0.0};
}

// R[c][g] = Pr[the pieces ring at most k - 1 - c times by t_g], c < k, on nodes g < G of the race's
// grid (rates in its scaled unit): Fbar with the pieces is sum_c P[c] R[c] (P: the other clocks of H).
// `e`, `b`, `e2`, `b2` and `pmf` ((k + 1) G) are scratch.
inline void pieces_tail_table(const race::WorRace& r, const ForcedPieces& fp, int k, double* R, std::vector<double>& e,
                              std::vector<double>& b, std::vector<double>& e2, std::vector<double>& b2,
                              std::vector<double>& pmf) {
    const int64_t G = r.G, m = fp.m;
    const int J = static_cast<int>(std::min<int64_t>(m, k - 1));  // counts above k - 1 never matter
    e.resize(G);
    b.resize(G);
    e2.resize(G);
    b2.resize(G);
    pmf.assign(static_cast<std::size_t>(k + 1) * G, 0.0);
    race::factor_chain(r.t.data(), G, r.M, r.M, fp.size * r.scale, e.data(), b.data());
    // e^{-(m - J) size t}: the part of every term's survival factor that no count below k changes
    if (m > J)
        race::factor_chain(r.t.data(), G, r.M, r.M, static_cast<double>(m - J) * fp.size * r.scale, e2.data(),
                           b2.data());
    else std::fill(e2.begin(), e2.end(), 1.0);
    // pmf[j] = C(m, j) b^j e^{J - j} e^{-(m - J) size t}, j <= J: products of factors <= 1, the
    // survival factor built from j = J down (no division by an e that may underflow)
    double cb[65];
    for (int64_t g = 0; g < G; ++g) {
        cb[0] = 1.0;
        for (int j = 1; j <= J; ++j) cb[j] = cb[j - 1] * (static_cast<double>(m - j + 1) / j) * b[g];
        double ej = e2[g];
        for (int j = J; j >= 0; --j) {
            pmf[static_cast<std::size_t>(j) * G + g] = cb[j] * ej;
            ej *= e[g];
        }
    }
    if (fp.rem > 0.0) {  // one more clock: pmf'[j] = pmf[j] e_rem + pmf[j - 1] b_rem
        race::factor_chain(r.t.data(), G, r.M, r.M, fp.rem * r.scale, e2.data(), b2.data());
        for (int j = std::min(J + 1, k - 1); j >= 0; --j)
            for (int64_t g = 0; g < G; ++g) {
                double& x = pmf[static_cast<std::size_t>(j) * G + g];
                x = x * e2[g] + (j > 0 ? pmf[static_cast<std::size_t>(j - 1) * G + g] * b2[g] : 0.0);
            }
    }
    for (int64_t g = 0; g < G; ++g) {  // the CDF, stored as R[k - 1 - j] = Pr[count <= j]
        double acc = 0.0;
        for (int j = 0; j < k; ++j) {
            acc += pmf[static_cast<std::size_t>(j) * G + g];
            R[static_cast<std::size_t>(k - 1 - j) * G + g] = std::min(acc, 1.0);
        }
    }
}

}  // namespace mdsd
