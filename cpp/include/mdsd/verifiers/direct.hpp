// One tuple per row without a plan: the engine case (a batch of positions, one draft tuple each).
// "sd", "rrs" and "rrs-wor" need, per step, only the residual mass M(T) = sum_x (p(x) - T q(x))_+
// at the threshold T of rrs.hpp, and at the end one draw from D_T. Both are linear passes over the
// row, so a tuple costs at most n + 2 passes over p and q instead of a plan's copies, ratio sort
// and samplers. The walk is the verifiers' own (rrs.hpp: the same tests, thresholds and
// residual), run by the same visitors, so the exact-law tests check this code too; the residual
// is drawn by inverse CDF in token-id order rather than in ratio order (same law, other tokens).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "mdsd/verifiers/common.hpp"

namespace mdsd::verif::direct {

// D_T(x) = (p(x) - T q(x))_+; a token with q = 0 keeps p (also at T = inf).
inline double d_at(double p, double q, double T) { return q > 0.0 ? std::max(0.0, p - T * q) : p; }

inline double mass(const double* p, const double* q, int64_t V, double T) {
    double m = 0.0;
    for (int64_t i = 0; i < V; ++i) m += d_at(p[i], q[i], T);
    return m;
}

// The residual norm(D_T), drawn by one pass in id order; an empty D_T (probability 0 in exact
// arithmetic) falls back to p.
struct Residual {
    const double* p;
    const double* q;
    int64_t V;
    double T, M;
    bool empty() const { return false; }
    int32_t sample(Rng& r) const {
        const bool use_p = !(M > 0.0);
        const double tot = use_p ? mass(p, q, V, 0.0) : M;
        const double u = r.uniform() * tot;
        double s = 0.0;
        int32_t last = -1;
        for (int64_t i = 0; i < V; ++i) {
            const double d = use_p ? p[i] : d_at(p[i], q[i], T);
            if (!(d > 0.0)) continue;
            s += d;
            last = static_cast<int32_t>(i);
            if (s > u) return last;
        }
        return last;  // u * tot rounded up to the total
    }
    void add_law(double w, double* out) const {
        const bool use_p = !(M > 0.0);
        const double tot = use_p ? mass(p, q, V, 0.0) : M;
        for (int64_t i = 0; i < V; ++i) {
            const double d = use_p ? p[i] : d_at(p[i], q[i], T);
            if (d > 0.0) out[i] += w * (d / tot);
        }
    }
};

// The walk of "rrs" (wor = false) or "rrs-wor" (wor = true) on tuple t of n drafts; "sd" is rrs
// with n = 1. As RrsWor: rest = q-mass not drafted yet, summed directly once it cancels.
template <class Vis>
void walk_rrs(const double* p, const double* q, int64_t V, const int32_t* t, int n, bool wor, Vis& vis) {
    double T = 0.0, M = 0.0, qsum = 0.0;
    for (int64_t i = 0; i < V; ++i) {
        M += p[i];
        qsum += q[i];
    }
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
    vis.residual(Residual{p, q, V, T, M});
}

}  // namespace mdsd::verif::direct
