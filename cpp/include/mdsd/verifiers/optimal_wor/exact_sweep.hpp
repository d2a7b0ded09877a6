// The tight-set sweep (docs/theory/tight_set_sweep.md §13): the exact optimal verifier for without-replacement
// drafts on supports small enough to enumerate the draft sets and the token subsets of each system.
//
// The certificate H* splits every optimal plan into an outer system (a set with a draft in
// A = supp q \ H* outputs one of its A-drafts, with load a(y) <= p(y)) and an inner system (a set
// inside H* outputs one of its drafts or rejects, with a(y) = p(y) on H*). Each system is a
// random-utility race: every token owns "chunks" of its level mass, laid top down in one order; a
// drafted token draws one of its chunks and the drafted token whose chunk was laid first wins.
// Laying a chunk of mass d of token y earns y exactly d * w_y, with
//     w_y = E[1{y in S} prod_{j in S, j != y} (1 - u_j)]   (u_j: token j's mass laid so far),
// and the sweep chooses the chunks so that the system's Hall slacks stay non-negative:
//   outer: h(Z) = pi(Z) - mu_u(0 != T subset Z) >= 0; lay a token outside the largest proper tight
//     set until it is exhausted or a new set containing it turns tight;
//   inner: s(Y) = mu_u(T meets Y) - pi(Y) >= 0; lay a token of the smallest tight set until it has
//     won p(y) or a new set without it turns tight.
// Submodularity keeps tight sets tight, so the sweep ends; its acceptance is alpha*_wor. In
// floating point slacks within kTol count as tight and the loads are recomputed from the stored
// chunks, so the residual absorbs every rounding (lossless in every case).
// Cost: O(steps * (sets * n + k 2^k)) per system with k <= kMaxSystem tokens.
#pragma once

#include <algorithm>
#include <cstdint>

#include "mdsd/core/bits.hpp"
#include <vector>

#include "mdsd/core/limits.hpp"
#include "mdsd/bound/wor_law.hpp"

namespace mdsd::verif::wor {

using mdsd::wor_set_law;

constexpr int kMaxSystem = limits::kExactSweepSystem;       // tokens per system (subset tables of 2^k)
constexpr int64_t kMaxOrdered = limits::kExactSweepTuples;  // ordered draft tuples of an enumerable row
constexpr double kTol = 1e-14;                              // slack treated as zero

// Number of ordered without-replacement tuples K (K-1) ... (K-n+1), saturated at cap + 1.
inline int64_t ordered_tuples(int64_t K, int n, int64_t cap) {
    int64_t c = 1;
    for (int j = 0; j < n && j < K; ++j) {
        c *= (K - j);
        if (c > cap) return cap + 1;
    }
    return c;
}


// One chunk of a token's level mass: its place in the sweep (global order) and its mass.
struct Chunk {
    int32_t tok;
    double mass;
};

// Sets of one system: the mask of their system tokens and their probability.
struct SystemSets {
    std::vector<uint32_t> mask;
    std::vector<double> prob;
    std::vector<int32_t> sys_tok;  // local index -> token id
};

inline int popcount(uint32_t x) { return popcount32(x); }

// Subset sums F[Z] = sum_{m subset Z} M[m] over all Z of k bits.
inline void zeta(std::vector<double>& F, int k) {
    const uint32_t N = 1u << k;
    for (int b = 0; b < k; ++b)
        for (uint32_t Z = 0; Z < N; ++Z)
            if (Z >> b & 1u) F[Z] += F[Z ^ (1u << b)];
}

// mu_u(m) aggregated by mask (restricted to `keep`), and per-token weights without the token's own
// factor: W[i] = sum_{m containing i} prob * prod_{j in m, j != i} (1 - u_j)  (= w_i).
inline void aggregate(const SystemSets& S, const std::vector<double>& u, uint32_t keep, int k, std::vector<double>& M,
                      std::vector<double>& W, int only = -1, std::vector<double>* My = nullptr) {
    const uint32_t N = 1u << k;
    M.assign(N, 0.0);
    W.assign(k, 0.0);
    if (My) My->assign(N, 0.0);
    int bits[32];
    for (std::size_t s = 0; s < S.mask.size(); ++s) {
        const uint32_t m = S.mask[s];
        int c = 0;
        for (uint32_t r = m; r; r &= r - 1) bits[c++] = ctz32(r);
        double full = S.prob[s];
        for (int a = 0; a < c; ++a) full *= (1.0 - u[bits[a]]);
        M[m & keep] += full;
        for (int a = 0; a < c; ++a) {  // without the token's own factor (u may be 1: no division)
            double wo = S.prob[s];
            for (int b = 0; b < c; ++b)
                if (b != a) wo *= (1.0 - u[bits[b]]);
            W[bits[a]] += wo;
            if (My && bits[a] == only) (*My)[m & keep] += wo;
        }
    }
}

// Outer system: every set with a token of the system must output one of them; loads <= p.
inline std::vector<Chunk> exact_outer(const SystemSets& S, const double* p, int k, int64_t& steps) {
    std::vector<double> u(k, 0.0), load(k, 0.0), M, W, My, F, Fy;
    std::vector<char> gone(k, 0);
    std::vector<Chunk> chunks;
    const int max_steps = 8 * k + 64;
    for (steps = 0; steps < max_steps; ++steps) {
        uint32_t act = 0;
        for (int i = 0; i < k; ++i)
            if (!gone[i]) act |= 1u << i;
        if (!act) break;
        aggregate(S, u, ~0u, k, M, W);
        F = M;
        F[0] = 0.0;  // sets without a system token are not in this system
        zeta(F, k);
        auto h = [&](uint32_t Z) {
            double pz = 0.0;
            for (int i = 0; i < k; ++i)
                if (Z >> i & 1u) pz += p[S.sys_tok[i]] - load[i];
            return pz - F[Z];
        };
        // largest proper tight set (submasks of act only: exhausted tokens carry no mass)
        uint32_t Z1 = 0;
        int best = -1;
        for (uint32_t Z = act; Z; Z = (Z - 1) & act) {
            if (Z == act) continue;
            if (popcount(Z) > best && h(Z) <= kTol) {
                best = popcount(Z);
                Z1 = Z;
            }
        }
        // candidate: max rho = pi / ((1-u) w) outside Z1
        int y = -1;
        double best_rho = -1.0;
        for (int i = 0; i < k; ++i) {
            if (gone[i] || (Z1 >> i & 1u)) continue;
            const double R = (1.0 - u[i]) * W[i];
            const double pi = p[S.sys_tok[i]] - load[i];
            const double rho = R > 0.0 ? pi / R : 1e300;
            if (rho > best_rho) {
                best_rho = rho;
                y = i;
            }
        }
        if (y < 0) y = ctz32(act);  // only if rounding made act itself look tight
        aggregate(S, u, ~0u, k, M, W, y, &My);
        Fy = My;
        zeta(Fy, k);
        const double wy = W[y];
        double d = 1.0 - u[y];
        for (uint32_t Z = act; Z; Z = (Z - 1) & act) {
            if (Z == act || !(Z >> y & 1u)) continue;
            const double r = wy - Fy[Z];  // mass of sets with y whose system part is not inside Z
            if (r > 1e-300) {
                const double hz = std::max(0.0, h(Z));
                if (hz <= kTol) continue;  // tight: y outside Z1 cannot lower it (rate 0 up to rounding)
                d = std::min(d, hz / r);
            }
        }
        if (!(d > 0.0)) d = 1.0 - u[y];
        load[y] += wy * d;
        u[y] += d;
        chunks.push_back({S.sys_tok[y], d});
        if (u[y] >= 1.0 - 1e-15) {
            u[y] = 1.0;
            gone[y] = 1;
        }
    }
    // Anything left (only if the step limit was hit): lay it, the residual absorbs any excess.
    for (int i = 0; i < k; ++i)
        if (!gone[i] && u[i] < 1.0) chunks.push_back({S.sys_tok[i], 1.0 - u[i]});
    return chunks;
}

// Inner system: sets inside H* output one of their tokens or reject; won mass = p.
inline std::vector<Chunk> exact_inner(const SystemSets& S, const double* p, int k, int64_t& steps) {
    std::vector<double> u(k, 0.0), load(k, 0.0), M, W, My, F, Fy;
    std::vector<char> done(k, 0);
    for (int i = 0; i < k; ++i) done[i] = !(p[S.sys_tok[i]] > 0.0);
    std::vector<Chunk> chunks;
    const int max_steps = 8 * k + 64;
    for (steps = 0; steps < max_steps; ++steps) {
        uint32_t act = 0;
        for (int i = 0; i < k; ++i)
            if (!done[i]) act |= 1u << i;
        if (!act) break;
        aggregate(S, u, act, k, M, W);
        F = M;
        zeta(F, k);
        const double tot = F[act];
        auto s_of = [&](uint32_t Y) {
            double pz = 0.0;
            for (int i = 0; i < k; ++i)
                if (Y >> i & 1u) pz += p[S.sys_tok[i]] - load[i];
            return (tot - F[act & ~Y]) - pz;
        };
        uint32_t Y0 = 0;
        int best = 99;
        for (uint32_t Y = act; Y; Y = (Y - 1) & act)
            if (popcount(Y) < best && s_of(Y) <= kTol) {
                best = popcount(Y);
                Y0 = Y;
            }
        const uint32_t cand = Y0 ? Y0 : act;
        int y = -1;
        double best_rho = 1e308;
        for (int i = 0; i < k; ++i) {
            if (!(cand >> i & 1u)) continue;
            const double R = (1.0 - u[i]) * W[i];
            const double pi = p[S.sys_tok[i]] - load[i];
            const double rho = R > 0.0 ? pi / R : 1e300;
            if (y < 0 || rho < best_rho) {
                best_rho = rho;
                y = i;
            }
        }
        aggregate(S, u, act, k, M, W, y, &My);
        Fy = My;
        zeta(Fy, k);
        const double wy = W[y];
        const double pi_y = p[S.sys_tok[y]] - load[y];
        double d = 1.0 - u[y];
        if (wy > 0.0) d = std::min(d, pi_y / wy);
        for (uint32_t Y = act; Y; Y = (Y - 1) & act) {
            if (Y >> y & 1u) continue;
            const double r = wy - Fy[act & ~Y];  // sets with y that meet Y
            if (r > 1e-300) {
                const double sy = std::max(0.0, s_of(Y));
                if (sy <= kTol) continue;
                d = std::min(d, sy / r);
            }
        }
        if (!(d > 0.0) || !(wy > 0.0)) {  // nothing to gain: y cannot win more
            done[y] = 1;
            continue;
        }
        load[y] += wy * d;
        u[y] += d;
        chunks.push_back({S.sys_tok[y], d});
        if (p[S.sys_tok[y]] - load[y] <= kTol * std::max(1.0, p[S.sys_tok[y]]) || u[y] >= 1.0 - 1e-15) done[y] = 1;
    }
    return chunks;
}

}  // namespace mdsd::verif::wor
