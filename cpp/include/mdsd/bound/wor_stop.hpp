// A lower bound on F(k) = P_k - Q_wor(H_k) tighter than P_k - S_k^n at large n, for stopping the chord
// scan of alpha*_wor early (race/chord_scan.hpp; docs/guide/bound.md, "alpha*_wor at large n").
//
// For any set J of tokens inside H, the n first rings of the exponential race all in H imply that,
// in the race without J's clocks, the first n - |J| rings lie in H \ J; without replacement draws
// never beat i.i.d. ones at staying in a set ((S - x) / (1 - x) <= S), so
//     Q_wor(H) <= (q(H \ J) / q(V \ J))^(n - |J|) = (1 - lam / q(V \ J))^(n - |J|),   lam = q(V \ H).
// With J the few largest tokens of q already in H this is far below S^n on rows where q is
// concentrated (0.95 on one token: S^64 ~ 0.94 where the bound gives ~0.3). The scan stops once the
// bound keeps every later prefix but the whole support at least kStopMargin above the best F found:
// their computed F (within ~1e-12 of the exact one) cannot then beat it, so alpha* keeps its bits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/core/bits.hpp"

namespace mdsd {

// Margin between the bound and the best F before the scan stops: ~1000x the race integral's error.
constexpr double kWorStopMargin = 1e-9;
// The largest tokens of q tried as J (each prefix of them inside H, one bound each).
constexpr int kWorStopTop = 4;

// sufmin[k] = min over j in [k, K) of P_j - UB(j) for k in [1, K) (UB: the smallest of S_j^n and the
// bounds above), +huge at K and K + 1 (F(K) = P_K - 1 is offered apart). ord: the ratio order of the
// support (K tokens); lam[k] = q(V \ H_k), lam[0] = q(V).
inline void wor_stop_bound(const double* p, const double* q, const int32_t* ord, int64_t K, int n, const double* lam,
                           std::vector<double>& sufmin) {
    sufmin.assign(K + 2, 1e300);
    const int m = static_cast<int>(std::min<int64_t>({kWorStopTop, n - 1, K}));
    double tq[kWorStopTop];  // the m largest q, descending, and their places in the order
    int64_t tp[kWorStopTop];
    int have = 0;
    for (int64_t k = 0; k < K; ++k) {
        const double x = q[ord[k]];
        if (have == m && !(x > tq[m - 1])) continue;
        int i = have < m ? have++ : m - 1;
        for (; i > 0 && tq[i - 1] < x; --i) {
            tq[i] = tq[i - 1];
            tp[i] = tp[i - 1];
        }
        tq[i] = x;
        tp[i] = k;
    }
    double P = 0.0, S = 0.0;
    for (int64_t k = 0; k + 1 < K; ++k) {
        P += p[ord[k]];
        S += q[ord[k]];
        const int64_t kk = k + 1;
        double ub = ipow(S, n), qJ = 0.0;
        int c = 0;
        for (int i = 0; i < have; ++i) {
            if (tp[i] >= kk) continue;  // not in H yet
            qJ += tq[i];
            ++c;
            const double rest = lam[0] - qJ;  // q(V \ J); kept away from cancellation
            if (!(rest >= 1e-3)) break;
            const double r = std::max(0.0, 1.0 - lam[kk] / rest);
            ub = std::min(ub, ipow(r, n - c));
        }
        sufmin[kk] = P - ub;
    }
    for (int64_t k = K - 2; k >= 1; --k) sufmin[k] = std::min(sufmin[k], sufmin[k + 1]);
}

}  // namespace mdsd
