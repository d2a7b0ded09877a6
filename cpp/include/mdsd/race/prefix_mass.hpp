// Q_wor(H) = Pr[all n without-replacement drafts lie in H] by the exponential-race integral, on
// every prefix H of the ratio order as tokens join it (docs/theory/sorted_prefix.md §4.4, §14.7): the evaluator of
// alpha*_wor for n >= 4 (and for n = 3 on large supports). Its nodes follow race/grid.hpp's
// doubling rule and share its token factors (factor_chain).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mdsd/race/grid.hpp"
#include "mdsd/race/tiny_batch.hpp"

namespace mdsd::race {

// Exponential-race integral (docs/theory/sorted_prefix.md §4.4): Q_wor(H) = int_0^inf lam e^{-lam t} F_H(t) dt with
// F_H(t) = Pr[at least n of the clocks in H rang by t]. We track, on a log-t grid, the Poisson-
// binomial counts P[c](t) for c < n only, and integrate the complement
//     Q = 1 - Ltail(lam) - h sum_g lam t_g e^{-lam t_g} Fbar(t_g),   Fbar = sum_{c<n} P[c],
// which keeps the absolute error at rounding level (only absolute error matters for alpha*).
// The trapezoid rule in s = ln t converges exponentially; summed over the whole infinite grid the
// weights h lam t_g e^{-lam t_g} add up to 1 within ~1e-17, so nodes where Fbar = 0 (saturated)
// or lam t > 45 are skipped and the nodes below t_lo are summed in closed form (Ltail).
// Grid: M nodes per doubling, rho = 2^{1/M}, so t_{g+M} = 2 t_g exactly, and 1 - e^{-2x} = b (2 - b)
// with b = 1 - e^{-x}: per node and token this costs one multiply-add instead of an exp, without
// losing accuracy. The n-th arrival is peaked in ln t (width ~ 1/sqrt(n)), so M grows with n.
//
// Time unit: t is measured in units of 2^k (the rates q and lam are multiplied by `scale` = 2^k).
// Q is invariant under this change of unit, and a power-of-two scale is exact, so k = 0 (every
// draft mass >= 2^-900) reproduces the unscaled computation bit for bit. Below that, the grid's
// upper end 45 / lam would overflow a double (lam < 2.5e-307 gave t_hi = inf and a garbage
// grid) and products q t_g would underflow into subnormals; k = 600 keeps every t_g, q t_g and
// lam t_g in the normal range for any positive double mass, down to 4.9e-324.
struct WorRace {
    static constexpr double kCut = 45.0;          // lam t beyond this carries < 1e-19
    static constexpr double kSat = 1e-18;         // Fbar below this is treated as 0
    static constexpr double kTinyMass = 0x1p-900; // masses below this switch to the scaled time unit
    static constexpr int kTinyShift = 600;        // k for that case
    int n = 0;
    int M = 3;                                     // nodes per doubling of t
    int64_t G = 0, g_sat = 0;
    double h = 0.0, t_lo = 0.0, log_t_lo = 0.0;
    double scale = 1.0;                            // 2^k: rates in the scaled time unit
    std::vector<double> t, P, b, e;                // P laid out [c][g] so the DP vectorises over g
    TinyBatch tiny;                                // tokens deferred to the next value()
    bool defer = true;                             // false: every token one by one (tests' reference)
    int fine = 1;                                  // nodes per doubling times this (tests' reference)
    int64_t batched = 0;                           // tokens laid by a batch since reset() (for tests)
    int64_t evaluations = 0;                       // value() calls since reset() (for tests)

    // Nodes per doubling: M = ceil(3 sqrt(n / 8)), i.e. 3 up to n = 8, so the step stays as fine
    // relative to the peak width as at n = 8. Measured |error| on Q < 1e-12 for n <= 1000 (worst
    // 8e-13 at n = 8; M = 3 alone gave 1e-9 at n = 16): tests/bound/test_wor_integral_accuracy.py.
    static int nodes_per_doubling(int n) {
        if (n <= 8) return 3;
        return static_cast<int>(std::ceil(3.0 * std::sqrt(n / 8.0)));
    }

    void reset(int n_, double lam_min) {
        n = n_;
        M = nodes_per_doubling(n) * fine;
        scale = lam_min < kTinyMass ? std::ldexp(1.0, kTinyShift) : 1.0;
        lam_min *= scale;
        h = std::log(2.0) / M;
        // Below t_lo, F_H(t) <= e_n(q_H) t^n <= t^n / n!, so replacing Fbar by 1 there costs at most
        // t_lo^{n+1} / (n+1)! <= 1e-16. t_lo <= 0.1 keeps lam t_lo <= 0.1 for ltail's series ((n+1)!
        // overflows to inf for n >= 170: then t_lo = 0.1 too).
        double fact = 1.0;
        for (int j = 2; j <= n + 1; ++j) fact *= j;
        t_lo = std::min(0.1, std::pow(fact * 1e-16, 1.0 / (n + 1))) / scale;
        log_t_lo = std::log(t_lo);
        double t_hi = kCut / lam_min;
        G = static_cast<int64_t>(std::ceil((std::log(t_hi) - log_t_lo) / h)) + 1;
        G = std::max<int64_t>(G, M);
        t.resize(G);
        // t_g = t_lo 2^{g/M}: the first M nodes directly, then exact doublings of them.
        for (int64_t g = 0; g < G; ++g)
            t[g] = g < M ? t_lo * std::exp2(static_cast<double>(g) / M) : std::ldexp(t[g % M], static_cast<int>(g / M));
        P.assign(static_cast<std::size_t>(n) * G, 0.0);
        for (int64_t g = 0; g < G; ++g) P[g] = 1.0;  // count 0 with probability 1
        for (int m = 0; m < kTailTerms; ++m) tail_den[m] = std::exp2(static_cast<double>(m + 1) / M) - 1.0;
        b.resize(G);
        e.resize(G);
        g_sat = G;
        tiny.reset(n);
        batched = 0;
        evaluations = 0;
    }

    // b_g = 1 - e^{-x t_g}, e_g = e^{-x t_g} for g < gn (the first M nodes directly, then doubling).
    void chain(double x, int64_t gn) { factor_chain(t.data(), gn, M, M, x, e.data(), b.data()); }

    // A token tiny on every node in use (q t <= TinyBatch::kTiny) waits for the next value(), which
    // lays all the waiting ones at once (race/tiny_batch.hpp); on LLM rows that is most tokens, and
    // the scan asks for few values between long runs of them.
    void add(double qi) {
        if (g_sat == 0) return;
        const double x = qi * scale;
        if (defer && n >= 2 && n <= TinyBatch::kMaxN && x * t[g_sat - 1] <= TinyBatch::kTiny) {
            tiny.qs.push_back(x);
            return;
        }
        add_scaled(x);
    }

    // The waiting tiny tokens join P: as one batch, or one by one when there are few.
    void flush() {
        if (tiny.qs.empty()) return;
        if (static_cast<int64_t>(tiny.qs.size()) < TinyBatch::kMinBatch) {
            for (double x : tiny.qs) add_scaled(x);
            tiny.qs.clear();
            return;
        }
        batched += static_cast<int64_t>(tiny.qs.size());
        tiny.apply(P.data(), G, g_sat, t.data(), M, e.data(), b.data());
        saturate();
    }

    // x: the token's rate in the scaled time unit.
    void add_scaled(double x) {
        const int64_t gn = g_sat;
        if (gn == 0) return;
        chain(x, gn);
        const double* bb = b.data();
        const double* ee = e.data();
        for (int c = n - 1; c >= 1; --c) {
            double* Pc = P.data() + static_cast<std::size_t>(c) * G;
            const double* Pm = P.data() + static_cast<std::size_t>(c - 1) * G;
            for (int64_t g = 0; g < gn; ++g) Pc[g] = Pc[g] * ee[g] + Pm[g] * bb[g];
        }
        double* P0 = P.data();
        for (int64_t g = 0; g < gn; ++g) P0[g] *= ee[g];
        saturate();
    }

    // Fbar(t) is non-increasing in t, so the saturated nodes form a suffix of the grid.
    void saturate() {
        while (g_sat > 0) {
            const int64_t g = g_sat - 1;
            double fb = 0.0;
            for (int c = 0; c < n; ++c) fb += P[static_cast<std::size_t>(c) * G + g];
            if (fb >= kSat) break;
            for (int c = 0; c < n; ++c) P[static_cast<std::size_t>(c) * G + g] = 0.0;
            --g_sat;
        }
    }

    // The counts P and the saturation point, for a scan that returns to an earlier prefix
    // (race/chord_scan.hpp). Only right after value() (no token waiting): columns from g_sat on are 0.
    void save_counts(std::vector<double>& buf, int64_t& gs) const {
        gs = g_sat;
        buf.resize(static_cast<std::size_t>(n) * gs);
        for (int c = 0; c < n; ++c)
            std::copy_n(P.begin() + static_cast<std::ptrdiff_t>(c) * G, gs,
                        buf.begin() + static_cast<std::ptrdiff_t>(c) * gs);
    }
    // Back to saved counts (of an earlier or a later prefix): the columns from gs on are zeroed.
    void restore_counts(const std::vector<double>& buf, int64_t gs) {
        tiny.qs.clear();
        for (int c = 0; c < n; ++c) {
            double* row = P.data() + static_cast<std::size_t>(c) * G;
            std::copy_n(buf.begin() + static_cast<std::ptrdiff_t>(c) * gs, gs, row);
            std::fill(row + gs, row + std::max(gs, g_sat), 0.0);
        }
        g_sat = gs;
    }

    // sum_{j>=1} h lam t_{-j} e^{-lam t_{-j}} with t_{-j} = t_lo rho^{-j}, in closed form:
    // h sum_m (-y0)^m y0 / (m! (rho^{m+1} - 1)), y0 = lam t_lo <= 0.1, so 14 terms reach 1e-20.
    static constexpr int kTailTerms = 14;
    double tail_den[kTailTerms] = {};  // rho^{m+1} - 1, set by reset()
    double ltail(double lam) const {
        const double y0 = lam * t_lo;
        double term = y0, s = 0.0;
        for (int m = 0; m < kTailTerms; ++m) {
            s += term / tail_den[m];
            term *= -y0 / (m + 1);
        }
        return h * s;
    }

    double value(double /*S*/, double lam) {
        flush();
        ++evaluations;
        lam *= scale;
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

}  // namespace mdsd::race
