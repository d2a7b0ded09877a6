// Q_wor(H_k) = Pr[all n without-replacement drafts lie in H_k] on every prefix of the ratio
// order (docs/theory/sorted_prefix.md §4.4), in three interchangeable evaluators:
//   * exact n = 2:  Q = S - lambda * s1,              O(1) per token
//   * exact n = 3:  Q = S - lambda * (s1 + pair sum),  O(k) per token (O(K^2) in all)
//   * the exponential-race integral, any n:            O(n G) per token, G ~ 100-300 nodes
//     for n <= 8 (~ sqrt(n / 8) times more above)
// Each evaluator is a small state machine: add(token) then value(lambda) for the current prefix.
// The race integral is race::WorRace (race/prefix_mass.hpp).
// S = q(H), lambda = q(outside H) (a suffix sum, accurate when small), s1 = sum_{a in H} q_a/(1-q_a).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "mdsd/race/chord_scan.hpp"
#include "mdsd/race/prefix_mass.hpp"

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
    // q_a / (1 - q_a) overflows only for the (at most one) token whose rest mass is subnormal;
    // its term is kept apart and applied as (lam / r_a) q_a, both factors <= 1 for a in H.
    double big_q = 0.0, big_r = 1.0;
    bool has_big = false;
    void add(double qa, double ra) {
        const double t = qa / ra;
        if (t <= std::numeric_limits<double>::max()) s1 += t;
        else {
            big_q = qa;
            big_r = ra;
            has_big = true;
        }
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
    struct Close {
        int64_t k1, k2;
        double out;
        int64_t j1 = -1;
    };
    std::vector<Close> close;
    std::vector<int64_t> cuts;
    // Close pairs whose outside mass d is so small that 1 / d overflows: their term is kept as
    // coef / d and applied as (lam / d) coef in value(), lam <= d once both tokens are in H.
    struct Tiny {
        double coef, d;
    };
    std::vector<Tiny> tiny;
    int64_t kbig = -1, jbig = -1;  // the token with q > 1/2: order position, and index in H once added
    void reset(int64_t K) {
        s1 = pair = 0.0;
        kbig = jbig = -1;
        qs.clear();
        rs.clear();
        tiny.clear();
        qs.reserve(K);
        rs.reserve(K);
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
            if ((c.k1 == k || c.k2 == k) && c.j1 == j && cancels) {
                d = c.out;
                is_close = true;
            }
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

using race::WorRace;

enum class WorMethod { Auto = 0, Exact = 1, Integral = 2 };

// Exact evaluators are used up to this support size for n = 3 (O(K^2)); beyond it the integral.
constexpr int64_t kWorExact3MaxSupport = 2048;
// ... and only when every rest mass 1 - q_a is at least this (see dual_prefix).
constexpr double kWorExact3MinRest = 1e-150;

}  // namespace mdsd
