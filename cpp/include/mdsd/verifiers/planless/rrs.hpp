// One tuple per row without a plan: the engine case (a batch of positions, one draft tuple each).
// "sd", "rrs" and "rrs-wor" need, per step, only the residual mass M(T) = sum_x (p(x) - T q(x))_+
// at the threshold T of verifiers/rrs.hpp, and at the end one draw from D_T. Both are linear passes over the
// row, so a tuple costs at most n + 2 passes over p and q instead of a plan's copies, ratio sort
// and samplers. The walk is the verifiers' own (verifiers/rrs.hpp: the same tests, thresholds and
// residual), run by the same visitors, so the exact-law tests check this code too; the residual
// is drawn by inverse CDF in token-id order rather than in ratio order (same law, other tokens).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "mdsd/verifiers/common.hpp"
#include "mdsd/verifiers/planless/simd.hpp"

namespace mdsd::verif::direct {

using simd::d_at;

inline double mass(const double* p, const double* q, int64_t V, double T) { return simd::mass(p, q, V, T); }

// A residual norm(w) with w(x) = weight(p(x), q(x)) >= 0 and mass M = sum w (weight.sum over a
// range, vectorised), drawn by one pass in id order; an empty w (probability 0 in exact
// arithmetic) falls back to p.
template <class W>
struct IdResidual {
    const double* p;
    const double* q;
    int64_t V;
    W weight;
    double M;
    bool empty() const { return false; }
    double w(int64_t i, bool use_p) const { return use_p ? p[i] : weight(p[i], q[i]); }
    // Inverse CDF in id order: block sums (vectorised) find the block, a scan finds the token.
    int32_t sample(Rng& r) const {
        constexpr int64_t kBlock = 512;
        const bool use_p = !(M > 0.0);
        const double tot = use_p ? mass(p, q, V, 0.0) : M;
        const double u = r.uniform() * tot;
        double s = 0.0;
        int64_t last_block = -1;
        for (int64_t b0 = 0; b0 < V; b0 += kBlock) {
            const int64_t len = std::min(kBlock, V - b0);
            const double blk = use_p ? simd::sum(p + b0, len) : weight.sum(p + b0, q + b0, len);
            if (blk > 0.0) last_block = b0;
            if (!(s + blk > u)) {
                s += blk;
                continue;
            }
            for (int64_t i = b0; i < b0 + len; ++i) {  // the block's own running sum decides
                const double d = w(i, use_p);
                if (!(d > 0.0)) continue;
                s += d;
                if (s > u) return static_cast<int32_t>(i);
            }
        }
        if (last_block < 0) return -1;
        int32_t last = -1;  // u * tot rounded up to the total: the last token with weight
        for (int64_t i = last_block; i < std::min(V, last_block + kBlock); ++i)
            if (w(i, use_p) > 0.0) last = static_cast<int32_t>(i);
        return last;
    }
    void add_law(double mass_in, double* out) const {
        const bool use_p = !(M > 0.0);
        const double tot = use_p ? mass(p, q, V, 0.0) : M;
        for (int64_t i = 0; i < V; ++i) {
            const double d = w(i, use_p);
            if (d > 0.0) out[i] += mass_in * (d / tot);
        }
    }
};

// D_T of verifiers/rrs.hpp as an IdResidual weight.
struct DT {
    double T;
    double operator()(double p, double q) const { return d_at(p, q, T); }
    double sum(const double* p, const double* q, int64_t len) const { return simd::mass(p, q, len, T); }
};
using Residual = IdResidual<DT>;

// The walk of "rrs" (wor = false) or "rrs-wor" (wor = true) on tuple t of n drafts; "sd" is rrs
// with n = 1. As RrsWor: rest = q-mass not drafted yet, summed directly once it cancels. M0 and
// qsum are the plain sums of p and q in id order (the caller's pass may have them already).
template <class Vis>
void walk_rrs(const double* p, const double* q, int64_t V, const int32_t* t, int n, bool wor, Vis& vis, double M0,
              double qsum) {
    double T = 0.0, M = M0;
    double rest = wor ? qsum : 1.0;
    for (int i = 0; i < n; ++i) {
        const int32_t x = t[i];
        const double D = d_at(p[x], q[x], T);
        const double a = M > 0.0 && rest > 0.0 ? std::min(1.0, D * rest / (M * q[x])) : 1.0;
        if (vis.test(x, a)) return;
        if (!(M > 0.0 && rest > 0.0)) break;  // unreachable: that test accepts surely
        T += M / rest;
        M = mass(p, q, V, T);
        if (wor) {
            rest -= q[x];
            if (rest < 1e-9 * qsum) {  // cancellation: sum what is left directly
                rest = 0.0;
                for (int64_t y = 0; y < V; ++y)
                    if (!contains(t, i + 1, static_cast<int32_t>(y))) rest += q[y];
            }
        }
    }
    vis.residual(Residual{p, q, V, DT{T}, M});
}

template <class Vis>
void walk_rrs(const double* p, const double* q, int64_t V, const int32_t* t, int n, bool wor, Vis& vis) {
    double M = 0.0, qsum = 0.0;
    for (int64_t i = 0; i < V; ++i) {
        M += p[i];
        qsum += q[i];
    }
    walk_rrs(p, q, V, t, n, wor, vis, M, qsum);
}

}  // namespace mdsd::verif::direct
