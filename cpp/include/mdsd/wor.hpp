// Q_wor(H_k) = Pr[all n without-replacement drafts lie in H_k] on every prefix of the ratio
// order (THEORY §4.4), in three interchangeable evaluators:
//   * exact n = 2:  Q = S - lambda * s1,              O(1) per token
//   * exact n = 3:  Q = S - lambda * (s1 + pair sum),  O(k) per token (O(K^2) in all)
//   * the exponential-race integral, any n:            O(n G) per token, G ~ 100-300 nodes
// Each evaluator is a small state machine: add(token) then value(lambda) for the current prefix.
// S = q(H), lambda = q(outside H) (a suffix sum, accurate when small), s1 = sum_{a in H} q_a/(1-q_a).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace mdsd {

// 1 - q_a without cancellation when q_a is close to 1: for the (at most one) token with
// q_a > 1/2 the mass of the other tokens is summed directly.
inline void rest_masses(const double* q, const int32_t* order, int64_t K, std::vector<double>& rest) {
    rest.resize(K);
    int64_t big = -1;
    for (int64_t k = 0; k < K; ++k) {
        double qa = q[order[k]];
        rest[k] = 1.0 - qa;
        if (qa > 0.5) big = k;
    }
    if (big >= 0) {
        double s = 0.0;
        for (int64_t k = 0; k < K; ++k)
            if (k != big) s += q[order[k]];
        rest[big] = s;
    }
}

struct WorExact2 {
    double s1 = 0.0;
    void add(double qa, double ra) { s1 += qa / ra; }
    double value(double S, double lam) const { return S - lam * s1; }
};

struct WorExact3 {
    double s1 = 0.0, pair = 0.0;
    std::vector<double> qs, rs;  // tokens already in H
    void reset(int64_t K) { s1 = pair = 0.0; qs.clear(); rs.clear(); qs.reserve(K); rs.reserve(K); }
    void add(double qc, double rc) {
        // ordered pairs (a, c) and (c, a): q_a q_c / ((1-q_a)(1-q_a-q_c)) + q_c q_a / ((1-q_c)(1-q_c-q_a))
        double acc = 0.0;
        const std::size_t m = qs.size();
        for (std::size_t j = 0; j < m; ++j) {
            double qa = qs[j], ra = rs[j];
            acc += qa * qc * (1.0 / (ra * (ra - qc)) + 1.0 / (rc * (rc - qa)));
        }
        pair += acc;
        s1 += qc / rc;
        qs.push_back(qc);
        rs.push_back(rc);
    }
    double value(double S, double lam) const { return S - lam * (s1 + pair); }
};

// Exponential-race integral (THEORY §4.4): Q_wor(H) = int_0^inf lam e^{-lam t} F_H(t) dt with
// F_H(t) = Pr[at least n of the clocks in H rang by t]. We track, on a log-t grid, the Poisson-
// binomial counts P[c](t) for c < n only, and integrate the complement
//     Q = 1 - Ltail(lam) - h sum_g lam t_g e^{-lam t_g} Fbar(t_g),   Fbar = sum_{c<n} P[c],
// which keeps the absolute error at rounding level (only absolute error matters for alpha*).
// The trapezoid rule in s = ln t converges exponentially; summed over the whole infinite grid the
// weights h lam t_g e^{-lam t_g} add up to 1 within ~1e-17, so nodes where Fbar = 0 (saturated)
// or lam t > 45 are skipped and the nodes below t_lo are summed in closed form (Ltail).
// Grid: rho = 2^{1/3} so t_{g+3} = 2 t_g exactly, and 1 - e^{-2x} = b (2 - b) with b = 1 - e^{-x}:
// per node and token this costs one multiply-add instead of an exp, without losing accuracy.
struct WorRace {
    static constexpr int kM = 3;                  // nodes per doubling of t
    static constexpr double kCut = 45.0;          // lam t beyond this carries < 1e-19
    static constexpr double kSat = 1e-18;         // Fbar below this is treated as 0
    int n = 0;
    int64_t G = 0, g_sat = 0;
    double h = 0.0, t_lo = 0.0, log_t_lo = 0.0;
    std::vector<double> t, P, b, e;                // P laid out [c][g] so the DP vectorises over g

    void reset(int n_, double lam_min) {
        n = n_;
        h = std::log(2.0) / kM;
        // Below t_lo, F_H(t) <= e_n(q_H) t^n <= t^n / n!, so replacing Fbar by 1 there costs at most
        // t_lo^{n+1} / (n+1)! <= 1e-16.
        double fact = 1.0;
        for (int j = 2; j <= n + 1; ++j) fact *= j;
        t_lo = std::pow(fact * 1e-16, 1.0 / (n + 1));
        log_t_lo = std::log(t_lo);
        double t_hi = kCut / lam_min;
        G = static_cast<int64_t>(std::ceil((std::log(t_hi) - log_t_lo) / h)) + 1;
        G = std::max<int64_t>(G, kM);
        t.resize(G);
        const double base[kM] = {t_lo, t_lo * std::exp2(1.0 / kM), t_lo * std::exp2(2.0 / kM)};
        for (int64_t g = 0; g < G; ++g) t[g] = std::ldexp(base[g % kM], static_cast<int>(g / kM));
        P.assign(static_cast<std::size_t>(n) * G, 0.0);
        for (int64_t g = 0; g < G; ++g) P[g] = 1.0;  // count 0 with probability 1
        b.resize(G);
        e.resize(G);
        g_sat = G;
    }

    // b_g = 1 - e^{-x t_g}, e_g = e^{-x t_g} for g < gn, by the doubling chain.
    void chain(double x, int64_t gn) {
        for (int64_t g = 0; g < std::min<int64_t>(kM, gn); ++g) {
            double y = x * t[g];
            double bb = -std::expm1(-y);
            b[g] = bb;
            e[g] = bb <= 0.5 ? 1.0 - bb : std::exp(-y);
        }
        for (int64_t g = kM; g < gn; ++g) {
            double bp = b[g - kM];
            if (bp <= 0.5) {
                double bb = bp * (2.0 - bp);
                b[g] = bb;
                e[g] = 1.0 - bb;
            } else {
                double ee = e[g - kM] * e[g - kM];
                e[g] = ee;
                b[g] = 1.0 - ee;
            }
        }
    }

    void add(double qi) {
        const int64_t gn = g_sat;
        if (gn == 0) return;
        chain(qi, gn);
        const double* bb = b.data();
        const double* ee = e.data();
        for (int c = n - 1; c >= 1; --c) {
            double* Pc = P.data() + static_cast<std::size_t>(c) * G;
            const double* Pm = P.data() + static_cast<std::size_t>(c - 1) * G;
            for (int64_t g = 0; g < gn; ++g) Pc[g] = Pc[g] * ee[g] + Pm[g] * bb[g];
        }
        double* P0 = P.data();
        for (int64_t g = 0; g < gn; ++g) P0[g] *= ee[g];
        // Fbar(t) is non-increasing in t, so the saturated nodes form a suffix of the grid.
        while (g_sat > 0) {
            const int64_t g = g_sat - 1;
            double fb = 0.0;
            for (int c = 0; c < n; ++c) fb += P[static_cast<std::size_t>(c) * G + g];
            if (fb >= kSat) break;
            for (int c = 0; c < n; ++c) P[static_cast<std::size_t>(c) * G + g] = 0.0;
            --g_sat;
        }
    }

    // sum_{j>=1} h lam t_{-j} e^{-lam t_{-j}} with t_{-j} = t_lo rho^{-j}, in closed form:
    // h sum_m (-y0)^m y0 / (m! (rho^{m+1} - 1)), y0 = lam t_lo <= 0.1, so 14 terms reach 1e-20.
    double ltail(double lam) const {
        const double y0 = lam * t_lo;
        double term = y0, s = 0.0;
        for (int m = 0; m < 14; ++m) {
            s += term / (std::exp2(static_cast<double>(m + 1) / kM) - 1.0);
            term *= -y0 / (m + 1);
        }
        return h * s;
    }

    double value(double /*S*/, double lam) {
        int64_t g_max = static_cast<int64_t>(std::floor((std::log(kCut / lam) - log_t_lo) / h)) + 1;
        const int64_t gn = std::clamp<int64_t>(g_max, 0, g_sat);
        chain(lam, gn);
        double acc = 0.0;
        for (int64_t g = 0; g < gn; ++g) {
            double fb = P[g];
            for (int c = 1; c < n; ++c) fb += P[static_cast<std::size_t>(c) * G + g];
            acc += t[g] * e[g] * fb;
        }
        return 1.0 - ltail(lam) - h * lam * acc;
    }
};

enum class WorMethod { Auto = 0, Exact = 1, Integral = 2 };

// Exact evaluators are used up to this support size for n = 3 (O(K^2)); beyond it the integral.
constexpr int64_t kWorExact3MaxSupport = 2048;

}  // namespace mdsd
