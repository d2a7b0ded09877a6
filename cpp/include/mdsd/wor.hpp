// Q_wor(H_k) = Pr[all n without-replacement drafts lie in H_k] on every prefix of the ratio
// order (THEORY §4.4), in three interchangeable evaluators:
//   * exact n = 2:  Q = S - lambda * s1,              O(1) per token
//   * exact n = 3:  Q = S - lambda * (s1 + pair sum),  O(k) per token (O(K^2) in all)
//   * the exponential-race integral, any n:            O(n G) per token, G ~ 100-300 nodes
//     for n <= 8 (~ sqrt(n / 8) times more above)
// Each evaluator is a small state machine: add(token) then value(lambda) for the current prefix.
// S = q(H), lambda = q(outside H) (a suffix sum, accurate when small), s1 = sum_{a in H} q_a/(1-q_a).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace mdsd {

// 1 - e^{-y} for 0 <= y <= 1/8 by its series up to y^10 (relative error < 1e-18): the race grids'
// first nodes, where libm's expm1 and exp would cost more than the rest of a token's nodes.
constexpr double kSeriesMaxArg = 0.125;
inline double one_minus_exp_neg(double y) {
    constexpr double inv[11] = {0.0, 1.0, 1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 5, 1.0 / 6, 1.0 / 7, 1.0 / 8, 1.0 / 9, 1.0 / 10};
    double s = 1.0;
    for (int m = 10; m >= 2; --m) s = 1.0 - s * y * inv[m];
    return y * s;
}

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
    // q_a / (1 - q_a) overflows only for the (at most one) token whose rest mass is subnormal;
    // its term is kept apart and applied as (lam / r_a) q_a, both factors <= 1 for a in H.
    double big_q = 0.0, big_r = 1.0;
    bool has_big = false;
    void add(double qa, double ra) {
        const double t = qa / ra;
        if (t <= std::numeric_limits<double>::max()) s1 += t;
        else { big_q = qa; big_r = ra; has_big = true; }
    }
    double value(double S, double lam) const {
        const double Q = S - lam * s1;
        return has_big ? Q - (lam / big_r) * big_q : Q;
    }
};

struct WorExact3 {
    double s1 = 0.0, pair = 0.0;
    std::vector<double> qs, rs;  // tokens already in H
    // 1 - q_a - q_c cancels when two tokens hold nearly all of q. Such a pair holds a token with
    // q > 1/4 (at most 3) and, for that token h, the largest other token a*(h). Those pairs
    // ("close pairs", at most 3) carry their outside mass summed directly; their position in H
    // is recorded as their tokens arrive (order position k of each token).
    struct Close { int64_t k1, k2; double out; int64_t j1 = -1; };
    std::vector<Close> close;
    std::vector<int64_t> cuts;
    // Close pairs whose outside mass d is so small that 1 / d overflows: their term is kept as
    // coef / d and applied as (lam / d) coef in value(), lam <= d once both tokens are in H.
    struct Tiny { double coef, d; };
    std::vector<Tiny> tiny;
    int64_t kbig = -1, jbig = -1;  // the token with q > 1/2: order position, and index in H once added
    void reset(int64_t K) {
        s1 = pair = 0.0;
        kbig = jbig = -1;
        qs.clear(); rs.clear(); tiny.clear();
        qs.reserve(K); rs.reserve(K);
    }

    // Close pairs of the ratio order `order` (length K) of q.
    void find_close(const double* q, const int32_t* order, int64_t K) {
        close.clear();
        kbig = jbig = -1;
        for (int64_t h = 0; h < K; ++h)
            if (q[order[h]] > 0.5) kbig = h;
        for (int64_t h = 0; h < K; ++h) {
            if (!(q[order[h]] > 0.25)) continue;
            int64_t a = -1;
            for (int64_t j = 0; j < K; ++j)
                if (j != h && (a < 0 || q[order[j]] > q[order[a]])) a = j;
            if (a < 0) continue;
            const int64_t k1 = std::min(h, a), k2 = std::max(h, a);
            bool seen = false;
            for (const Close& c : close) seen |= c.k1 == k1 && c.k2 == k2;
            if (seen) continue;
            double out = 0.0;
            for (int64_t j = 0; j < K; ++j)
                if (j != k1 && j != k2) out += q[order[j]];
            close.push_back(Close{k1, k2, out});
        }
    }

    // the two ordered-pair terms of (a, c) given their outside mass d = 1 - q_a - q_c
    static double term(double qa, double ra, double qc, double rc, double d) {
        return qa * qc * (1.0 / (ra * d) + 1.0 / (rc * d));
    }

    // Token at order position k (0-based) with mass qc and rest mass rc joins H.
    // Pair (a, c) terms q_a q_c / ((1-q_a)(1-q_a-q_c)) + q_c q_a / ((1-q_c)(1-q_c-q_a)) with the
    // outside mass 1-q_a-q_c computed as (1-q_a) - q_c and (1-q_c) - q_a. Exceptions ("cuts"):
    //  * a pair with the big token b (q_b > 1/2, rest r_b summed directly by rest_masses): only
    //    r_b - q_other is accurate (the other form cancels to 0 when q_b rounds to 1): use it twice;
    //  * a close pair whose outside mass cancels: the directly summed mass (find_close).
    void add(double qc, double rc, int64_t k) {
        cuts.clear();
        for (Close& c : close) {
            if (c.k1 == k || c.k2 == k) {
                if (c.j1 < 0) c.j1 = static_cast<int64_t>(qs.size());  // first of the two: remember where
                else cuts.push_back(c.j1);
            }
        }
        const bool c_big = k == kbig;
        if (jbig >= 0) cuts.push_back(jbig);
        std::sort(cuts.begin(), cuts.end());
        cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
        double acc = 0.0;
        const int64_t m = static_cast<int64_t>(qs.size());
        if (c_big) {
            for (int64_t j = 0; j < m; ++j) special(qs[j], rs[j], qc, rc, j, k, rc - qs[j], acc);
            jbig = m;
        } else {
            int64_t j = 0;
            for (std::size_t ci = 0; ci <= cuts.size(); ++ci) {
                const int64_t end = ci < cuts.size() ? cuts[ci] : m;
                for (; j < end; ++j) {
                    double qa = qs[j], ra = rs[j];
                    acc += qa * qc * (1.0 / (ra * (ra - qc)) + 1.0 / (rc * (rc - qa)));
                }
                if (ci < cuts.size()) {
                    const double qa = qs[j], ra = rs[j];
                    if (j == jbig) special(qa, ra, qc, rc, j, k, ra - qc, acc);
                    else special(qa, ra, qc, rc, j, k, -1.0, acc);
                    ++j;
                }
            }
        }
        pair += acc;
        s1 += qc / rc;
        qs.push_back(qc);
        rs.push_back(rc);
    }

    // One exceptional pair (a = prefix index j, c = order position k). d_big >= 0: the accurate
    // outside mass of a pair with the big token; -1: a close pair (the usual forms unless they cancel).
    void special(double qa, double ra, double qc, double rc, int64_t j, int64_t k, double d_big, double& acc) {
        double d = d_big;
        const bool cancels = (ra - qc < 1e-3 || rc - qa < 1e-3);
        bool is_close = false;
        for (const Close& c : close)
            if ((c.k1 == k || c.k2 == k) && c.j1 == j && cancels) { d = c.out; is_close = true; }
        if (!is_close && d_big < 0.0) {  // a close pair that does not cancel: the usual expression
            acc += qa * qc * (1.0 / (ra * (ra - qc)) + 1.0 / (rc * (rc - qa)));
            return;
        }
        if (d >= 1e-140) acc += term(qa, ra, qc, rc, d);
        else tiny.push_back(Tiny{qa * qc * (1.0 / ra + 1.0 / rc), d});
    }
    double value(double S, double lam) const {
        double Q = S - lam * (s1 + pair);
        for (const Tiny& t : tiny) Q -= (lam / t.d) * t.coef;
        return Q;
    }
};

// Exponential-race integral (THEORY §4.4): Q_wor(H) = int_0^inf lam e^{-lam t} F_H(t) dt with
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

    // Nodes per doubling: M = ceil(3 sqrt(n / 8)), i.e. 3 up to n = 8, so the step stays as fine
    // relative to the peak width as at n = 8. Measured |error| on Q < 1e-12 for n <= 1000 (worst
    // 8e-13 at n = 8; M = 3 alone gave 1e-9 at n = 16): tests/test_wor_integral_accuracy.py.
    static int nodes_per_doubling(int n) {
        if (n <= 8) return 3;
        return static_cast<int>(std::ceil(3.0 * std::sqrt(n / 8.0)));
    }

    void reset(int n_, double lam_min) {
        n = n_;
        M = nodes_per_doubling(n);
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
    }

    // b_g = 1 - e^{-x t_g}, e_g = e^{-x t_g} for g < gn, by the doubling chain.
    // The doubling chain starts from M directly computed nodes; nodes where x t_g is below
    // kChainStart (possible only for masses below ~1e-250) are computed directly too, since
    // doubling from an underflowed b = 0 would never let that clock ring.
    static constexpr double kChainStart = 0x1p-900;
    void chain(double x, int64_t gn) {
        int64_t g0 = 0;
        while (g0 < gn && x * t[g0] < kChainStart) ++g0;
        const int64_t direct = std::min<int64_t>(g0 + M, gn);
        for (int64_t g = 0; g < direct; ++g) {
            const double y = x * t[g];
            if (y <= kSeriesMaxArg) {
                b[g] = one_minus_exp_neg(y);
                e[g] = 1.0 - b[g];
                continue;
            }
            double bb = -std::expm1(-y);
            b[g] = bb;
            e[g] = bb <= 0.5 ? 1.0 - bb : std::exp(-y);
        }
        for (int64_t g = direct; g < gn; ++g) {
            double bp = b[g - M];
            if (bp <= 0.5) {
                double bb = bp * (2.0 - bp);
                b[g] = bb;
                e[g] = 1.0 - bb;
            } else {
                double ee = e[g - M] * e[g - M];
                e[g] = ee;
                b[g] = 1.0 - ee;
            }
        }
    }

    void add(double qi) {
        const int64_t gn = g_sat;
        if (gn == 0) return;
        chain(qi * scale, gn);
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

enum class WorMethod { Auto = 0, Exact = 1, Integral = 2 };

// Exact evaluators are used up to this support size for n = 3 (O(K^2)); beyond it the integral.
constexpr int64_t kWorExact3MaxSupport = 2048;
// ... and only when every rest mass 1 - q_a is at least this (see dual_prefix).
constexpr double kWorExact3MinRest = 1e-150;

}  // namespace mdsd
