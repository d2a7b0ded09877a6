// The prefix scan of alpha*_wor on the race integral, with chord bounds (docs/theory/sorted_prefix.md §4.4.1).
//
// Q_wor is q-convex (§4.1): along the ratio order, Q(H_k) as a function of S_k = q(H_k) has
// non-decreasing slopes, so between two prefixes a < b where Q is known it lies below the chord
//     Q(H_k) <= Q_a + (S_k - S_a) / (S_b - S_a) * (Q_b - Q_a),
// and F(k) = P_k - Q(H_k) >= P_k - chord(k). The scan integrates Q only at the ends of runs of
// prefixes; a run whose chord bound (or the i.i.d. bound P_k - S_k^n) keeps every inner prefix at or
// above the best F found is done, the others are split at their middle, the race's counts restored
// from a checkpoint. The tokens between two integrations join the counts as one tiny batch.
// Each integrated point must lie below the chord of the run it splits, up to rounding; one that does
// not (Q not convex as computed) sends the row back to the scan of every prefix (`fallback`).
// With `argmin_margin` >= 0 the row also goes back when some other prefix's bound (its F if integrated,
// else its chord or i.i.d. bound) comes within that margin of the best: then the scan of every prefix
// may pick that prefix by rounding (F ties when alpha* ~ 1), and a caller tuned on its H* wants it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "mdsd/core/bits.hpp"
#include "mdsd/race/prefix_mass.hpp"

namespace mdsd::race {

struct ChordScanResult {
    double best = 0.0;      // min_k F(k) over the prefixes, F(0) = 0 included
    int64_t k_best = 0;     // the smallest prefix size attaining it among those evaluated
    int64_t evaluated = 0;  // prefixes whose Q was integrated
    bool fallback = false;  // a computed Q above its chord: the caller scans every prefix instead
    bool ambiguous = false;  // (argmin_margin >= 0) fell back: another prefix may tie with the best
};

class ChordScan {
  public:
    bool enabled = true;   // false: dual_prefix integrates every prefix the i.i.d. bound leaves (tests)
    bool split = true;     // false: runs are never split, a wrong scan (the tests' negative control)
    double convex_slack = kConvexSlack;  // -1: every split falls back (the tests of the fallback)
    ChordScanResult last;  // of the latest run

    // Tokens in the first run; a run that needs no split doubles the next one, a split one halves it.
    static constexpr int64_t kFirstRun = 64;
    static constexpr int64_t kMaxRun = int64_t{1} << 16;
    // A computed Q may exceed its chord by rounding and the integral's error (<~1e-12, and smooth in
    // k); more than this is not rounding.
    static constexpr double kConvexSlack = 1e-10;
    // >= 0: fall back unless k_best is the only prefix whose F may lie within this of the best, so that
    // the scan of every prefix, on its own rounding, has the same argmin. -1: no check (the chord
    // scan's own argmin). The two scans' F at one prefix differ by their batching's rounding (at most
    // 3.1e-14 on the bench rows), and a computed Q departs from convexity by the quadrature's error,
    // smooth in k: 1e-12 is ~30x the former. Measured, not proved (tests/bound/test_wor_chord_scan.py).
    double argmin_margin = -1.0;
    static constexpr double kArgminMargin = 1e-12;

    // p, q: the row; ord: the ratio order of the support (K tokens); lam[k] = q(outside H_k);
    // lb_sufmin[k] = min_{j >= k} LB(j), LB(j) = P_j - S_j^n; race: reset for prefixes up to k_max
    // (its grid reaches 45 / lam[k_max]); every prefix in (k_max, K) has LB >= 0.
    // stop_sufmin (optional), stop_margin: the scan also stops once stop_sufmin[a + 1] >= min(best, F(K)) +
    // stop_margin (bound/wor_stop.hpp: a bound on F of every prefix after a but the whole support): the
    // prefixes left cannot reach the minimum, nor tie with it.
    ChordScanResult run(const double* p, const double* q, const int32_t* ord, int64_t K, int n, const double* lam,
                        const double* lb_sufmin, int64_t k_max, WorRace& race, const double* stop_sufmin = nullptr,
                        double stop_margin = 0.0) {
        n_ = n;
        lam_ = lam;
        race_ = &race;
        res_ = ChordScanResult{};
        known_.clear();
        // The order's masses once, contiguous: every later pass reads them in order. P_k and LB(k) are
        // the running sums of dual_prefix (the same bits).
        qs_.resize(k_max);
        Pk_.resize(k_max + 1);
        lb_.resize(k_max + 1);
        double P = 0.0, S = 0.0;
        Pk_[0] = lb_[0] = 0.0;
        for (int64_t k = 0; k < k_max; ++k) {
            qs_[k] = q[ord[k]];
            P += p[ord[k]];
            S += qs_[k];
            Pk_[k + 1] = P;
            lb_[k + 1] = P - ipow(S, n);
        }
        // Prefixes with fewer than n tokens: Q = 0, F = P.
        int64_t a = 0;
        for (; a < std::min<int64_t>(n - 1, k_max); ++a) {
            race.add(qs_[a]);
            offer(Pk_[a + 1], a + 1);
        }
        double Qa = 0.0;
        race.flush();
        save(0);
        int64_t run_len = kFirstRun;
        // F(K) = P_K - 1, offered after the loop: the stop test may count it already (same sums, same bits).
        double stop_floor = res_.best;
        if (stop_sufmin) {
            double PK = Pk_[k_max];
            for (int64_t k = k_max; k < K; ++k) PK += p[ord[k]];
            stop_floor = PK - 1.0;
        }
        while (a < k_max && !res_.fallback) {
            if (lb_sufmin[a + 1] >= res_.best) break;  // F(j) >= LB(j) >= best for all j > a
            if (stop_sufmin && stop_sufmin[a + 1] >= std::min(res_.best, stop_floor) + stop_margin) break;
            const int64_t b = std::min(k_max, a + run_len);
            for (int64_t k = a; k < b; ++k) race.add(qs_[k]);
            const double Qb = evaluate(b);
            save(1);
            const int64_t before = res_.evaluated;
            refine(a, b, Qa, Qb, 0, 2);
            const bool split = res_.evaluated != before;
            run_len = split ? std::max<int64_t>(2, run_len / 2) : std::min(kMaxRun, 2 * run_len);
            if (split) restore(1);  // the race is at some prefix inside the run: back to b, the next start
            std::swap(slots_[0], slots_[1]);
            std::swap(slot_g_[0], slot_g_[1]);
            a = b;
            Qa = Qb;
        }
        // The whole support: Q = 1, P_K the running sum continued.
        P = Pk_[a];
        for (int64_t k = a; k < K; ++k) P += p[ord[k]];
        offer(P - 1.0, K);
        if (argmin_margin >= 0.0 && !res_.fallback && !isolated(std::min<int64_t>(n - 1, k_max), a, K, lb_sufmin)) {
            res_.fallback = true;
            res_.ambiguous = true;
        }
        last = res_;
        return res_;
    }

  private:
    int n_ = 0;
    const double* lam_ = nullptr;
    WorRace* race_ = nullptr;
    ChordScanResult res_;
    std::vector<double> qs_, Pk_, lb_;        // q of order[k]; P and LB of the prefix of size k
    std::vector<std::vector<double>> slots_;  // race counts at the run's ends and at split points
    std::vector<int64_t> slot_g_;
    std::vector<std::pair<int64_t, double>> known_;  // (k, Q) of every integrated prefix, in scan order

    void offer(double F, int64_t k) {
        if (F < res_.best || (F == res_.best && k < res_.k_best)) {
            res_.best = F;
            res_.k_best = k;
        }
    }
    double evaluate(int64_t k) {
        const double Q = race_->value(0.0, lam_[k]);
        ++res_.evaluated;
        offer(Pk_[k] - Q, k);
        known_.emplace_back(k, Q);
        return Q;
    }
    // Whether every prefix but k_best has a bound on F above best + argmin_margin: the sizes below n
    // (F = P), the integrated ones (their F), those between two integrated ones or after a0 (Q = 0)
    // (the larger of the chord and the i.i.d. bound, with the chords refine() uses), and those after
    // the scan's end a_end (lb_sufmin, which also holds F(K) = P_K - 1; a row whose best is K goes back).
    bool isolated(int64_t a0, int64_t a_end, int64_t K, const double* lb_sufmin) {
        const double lim = res_.best + argmin_margin;
        const int64_t kb = res_.k_best;
        if (kb != 0 && 0.0 <= lim) return false;  // F(0) = 0
        for (int64_t k = 1; k <= a0; ++k)
            if (k != kb && Pk_[k] <= lim) return false;
        std::sort(known_.begin(), known_.end());
        int64_t a = a0;
        double Qa = 0.0;
        for (const auto& [b, Qb] : known_) {
            if (b != kb && Pk_[b] - Qb <= lim) return false;
            double run_q = 0.0;
            for (int64_t k = a; k < b; ++k) run_q += qs_[k];
            const double slope = (Qb - Qa) / run_q;
            double s = 0.0;
            for (int64_t k = a + 1; k < b; ++k) {
                s += qs_[k - 1];
                if (k != kb && std::max(lb_[k], Pk_[k] - (Qa + s * slope)) <= lim) return false;
            }
            a = b;
            Qa = Qb;
        }
        return kb != K && (a_end + 1 > K || lb_sufmin[a_end + 1] > lim);
    }
    // The race's counts (flushed: right after a value()) into / from slot s.
    void save(std::size_t s) {
        if (slots_.size() <= s) {
            slots_.resize(s + 1);
            slot_g_.resize(s + 1);
        }
        race_->save_counts(slots_[s], slot_g_[s]);
    }
    void restore(std::size_t s) { race_->restore_counts(slots_[s], slot_g_[s]); }

    // Prefixes strictly inside (a, b), Q known at both ends, the race's counts at a in slot sa; slots
    // from `free` on are unused. The chord's abscissa is q of (a, k] summed on its own: accurate where
    // S_k - S_a (running sums near 1) would not be.
    void refine(int64_t a, int64_t b, double Qa, double Qb, std::size_t sa, std::size_t free) {
        if (b - a < 2 || res_.fallback || !split) return;
        double run_q = 0.0;
        for (int64_t k = a; k < b; ++k) run_q += qs_[k];
        const double slope = (Qb - Qa) / run_q;
        const double best = res_.best;
        double s = 0.0;
        bool open = false;
        for (int64_t k = a + 1; k < b && !open; ++k) {
            s += qs_[k - 1];
            open = Pk_[k] - (Qa + s * slope) < best && lb_[k] < best;
        }
        if (!open) return;
        const int64_t m = a + (b - a) / 2;
        restore(sa);
        s = 0.0;
        for (int64_t k = a; k < m; ++k) {
            s += qs_[k];
            race_->add(qs_[k]);
        }
        const double Qm = evaluate(m);
        if (Qm > Qa + s * slope + convex_slack) {
            res_.fallback = true;
            return;
        }
        save(free);
        refine(a, m, Qa, Qm, sa, free + 1);
        refine(m, b, Qm, Qb, free, free + 1);
    }
};

}  // namespace mdsd::race
