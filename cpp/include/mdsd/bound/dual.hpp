// The fast dual: alpha* = 1 + min_H [p(H) - Q(all drafts in H)] (docs/theory/dual.md §3.2), solved by the
// sorted-prefix scan for q-convex schemes (iid, wor; §4.2; iid with order-independent sums and
// by bucket selection instead of a full sort, §4.2.1-§4.2.3, iid_exact.hpp), by the closed form for greedy (§5), as
// p(T) for topk drafts and through the split pair for mixed drafts (§5.2, scheme.hpp).
// Every kernel reports the certificate H: the token set attaining the minimum.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/core/bits.hpp"
#include "mdsd/bound/iid_exact.hpp"
#include "mdsd/core/order.hpp"
#include "mdsd/core/scheme.hpp"
#include "mdsd/bound/wor.hpp"
#include "mdsd/bound/wor_stop.hpp"

namespace mdsd {

struct DualWorkspace {
    OrderWorkspace ows;
    std::vector<int32_t> order;
    std::vector<double> lam, rest, lb_sufmin, stop_sufmin;
    WorExact3 ex3;
    WorRace race;
    race::ChordScan chords;  // the race route's scan (race/chord_scan.hpp)
    bool wor_stop = true;    // n > 8: the chord scan's early stop (wor_stop.hpp); false for the tests
    TopSplit split;  // mixed schemes
    IidSelectWorkspace sel;
    std::vector<int32_t> sel_order;  // dual_prefix_ordered's selection (its order is not kept)
};

struct DualResult {
    double alpha = 1.0;
    int64_t k_star = 0;  // iid / wor: the certificate is order[0, k_star)
};

// How dual_alpha finds the iid minimum: Select (iid_select_fast, the default) or Sorted (a full
// ratio sort, dual_prefix). The two give the same bits (F is a function of the prefix's token set,
// iid_exact.hpp); Sorted is kept for the tests and for callers that need the whole order (the
// optimal iid verifier).
enum class IidRoute { Select, Sorted };

// alpha*_greedy = p(T) + sum_{x not in T} min(p(x), q(x)/q(V\T))   (docs/theory/greedy.md §5)
inline double dual_greedy(const double* p, const double* q, int64_t V, int n, std::vector<int64_t>* cert) {
    std::vector<int32_t> T;
    greedy_top(q, V, n, T);
    std::vector<char> inT(V, 0);
    for (int32_t t : T) inT[t] = 1;
    double rest = 0.0, pT = 0.0;
    for (int64_t i = 0; i < V; ++i) {
        if (inT[i]) pT += p[i];
        else rest += q[i];
    }
    double acc = pT;
    if (cert) cert->clear();
    for (int64_t i = 0; i < V; ++i) {
        if (inT[i]) {
            if (cert) cert->push_back(i);
            continue;
        }
        double qt = q[i] / rest;
        acc += std::min(p[i], qt);
        if (cert && p[i] < qt) cert->push_back(i);
    }
    return std::min(acc, 1.0);
}

// The sorted-prefix scan for iid and wor. F(k) = P_k - Q(H_k); alpha* = 1 + min_k F(k). For iid
// (any scheme at n = 1) P_k and S_k are the exact prefix masses rounded once (iid_scan_order).
// For wor, Q_wor(H) <= q(H)^n gives the lower bound F(k) >= P_k - S_k^n; prefixes whose bound
// cannot beat the best value found are not evaluated, and the scan stops once no later prefix can.
inline DualResult dual_prefix(const double* p, const double* q, int64_t V, int n, Scheme scheme, WorMethod wm,
                              DualWorkspace& ws) {
    if (n < 1) throw std::invalid_argument("n: must be >= 1");
    const int64_t K = ratio_order(p, q, V, ws.ows, ws.order);
    const int32_t* ord = ws.order.data();
    DualResult res;
    double best = 0.0;
    int64_t kbest = 0;
    if (scheme == Scheme::Iid || n == 1) {
        bool exact_sums;
        const IidBest scan = iid_scan_order(p, q, ord, K, n, exact_sums);
        res.alpha = std::min(1.0, 1.0 + scan.best);
        res.k_star = scan.kbest;
        return res;
    }
    if (K < n) throw std::invalid_argument("n: without-replacement drafts need at least n tokens with q > 0");
    // Suffix sums: lam[k] = q(outside H_k), accurate when small.
    ws.lam.resize(K + 1);
    ws.lam[K] = 0.0;
    for (int64_t k = K - 1; k >= 0; --k) ws.lam[k] = ws.lam[k + 1] + q[ord[k]];
    rest_masses(q, ord, K, ws.rest);
    // Lower bounds LB(k) = P_k - S_k^n and their suffix minima, for pruning.
    ws.lb_sufmin.resize(K + 2);
    {
        double P = 0.0, S = 0.0;
        for (int64_t k = 0; k < K; ++k) {
            P += p[ord[k]];
            S += q[ord[k]];
            ws.lb_sufmin[k + 1] = (k + 1 == K) ? P - 1.0 : P - ipow(S, n);
        }
        ws.lb_sufmin[K + 1] = 1e300;
        for (int64_t k = K - 1; k >= 1; --k) ws.lb_sufmin[k] = std::min(ws.lb_sufmin[k], ws.lb_sufmin[k + 1]);
    }
    if (wm == WorMethod::Exact && n > 3)
        throw std::invalid_argument("wor_method: the exact without-replacement evaluator covers n <= 3 only");
    // The n = 3 closed form divides by products of two rest masses, which underflow when one
    // token holds all but a tiny part of q (rest < kWorExact3MinRest); the race integral has no
    // such limit, so "auto" uses it there and "exact" refuses rather than return a wrong value.
    bool tiny_rest = false;
    for (int64_t k = 0; k < K; ++k) tiny_rest |= ws.rest[k] < kWorExact3MinRest;
    if (n == 3 && wm == WorMethod::Exact && tiny_rest)
        throw std::invalid_argument(
            "wor_method: the exact n = 3 evaluator needs every 1 - q(x) >= 1e-150 (one token of q holds all but "
            "less than that); use wor_method='auto' or 'integral'");
    enum { E2, E3, RACE } ev;
    if (n == 2 && wm != WorMethod::Integral) ev = E2;
    else if (n == 3 && !tiny_rest && (wm == WorMethod::Exact || (wm == WorMethod::Auto && K <= kWorExact3MaxSupport)))
        ev = E3;
    else ev = RACE;
    WorExact2 ex2;
    if (ev == E3) {
        ws.ex3.reset(K);
        ws.ex3.find_close(q, ord, K);
    }
    if (ev == RACE) {
        // Only prefixes with P_k - S_k^n < 0 can improve on best <= 0, so the grid need only reach
        // 45 / lam of the last such prefix (often far below 45 / q(last token) on LLM rows).
        int64_t k_last = K - 1;
        while (k_last > 1 && !(ws.lb_sufmin[k_last] < 0.0)) --k_last;
        const int64_t k_max = std::max<int64_t>(1, std::min<int64_t>(k_last, K - 1));
        ws.race.reset(n, ws.lam[k_max]);
        if (ws.chords.enabled) {
            // n > 8 lays every token one by one (no tiny batch): a tighter bound stops the scan sooner
            // (wor_stop.hpp); not where the caller checks that the argmin is isolated (argmin_margin).
            const bool stop = ws.wor_stop && n > race::TinyBatch::kMaxN && ws.chords.argmin_margin < 0.0;
            if (stop) wor_stop_bound(p, q, ord, K, n, ws.lam.data(), ws.stop_sufmin);
            const race::ChordScanResult r =
                ws.chords.run(p, q, ord, K, n, ws.lam.data(), ws.lb_sufmin.data(), k_max, ws.race,
                              stop ? ws.stop_sufmin.data() : nullptr, kWorStopMargin);
            if (!r.fallback) {
                res.alpha = std::min(1.0, 1.0 + r.best);
                res.k_star = r.k_best;
                return res;
            }
            ws.race.reset(n, ws.lam[k_max]);  // Q not convex as computed: every prefix below
        }
    }

    double P = 0.0, S = 0.0;
    for (int64_t k = 0; k < K; ++k) {
        const int32_t i = ord[k];
        P += p[i];
        S += q[i];
        const double qi = q[i], ri = ws.rest[k];
        switch (ev) {
            case E2: ex2.add(qi, ri); break;
            case E3: ws.ex3.add(qi, ri, k); break;
            case RACE: ws.race.add(qi); break;
        }
        const int64_t kk = k + 1;  // prefix size
        double F;
        if (kk < n) F = P;                       // Q = 0: fewer than n tokens
        else if (kk == K) F = P - 1.0;           // Q = 1: H holds the whole support
        else if (P - ipow(S, n) >= best) F = best;  // F(k) >= P_k - S_k^n: cannot improve
        else {
            const double lam = ws.lam[kk];
            double Q;
            switch (ev) {
                case E2: Q = ex2.value(S, lam); break;
                case E3: Q = ws.ex3.value(S, lam); break;
                default: Q = ws.race.value(S, lam); break;
            }
            F = P - Q;
        }
        if (F < best) {
            best = F;
            kbest = kk;
        }
        if (kk < K && ws.lb_sufmin[kk + 1] >= best) break;  // F(j) >= LB(j) >= best for all j > k
    }
    res.alpha = std::min(1.0, 1.0 + best);
    res.k_star = kbest;
    return res;
}

// dual_prefix, with the iid case (any scheme at n = 1) by selection unless `route` says Sorted.
// ws.order then holds the certificate's tokens first (order[0, k_star), not in ratio order) and
// maybe more, not all K; without `want_order` (no certificate asked for) it holds nothing useful.
inline DualResult dual_prefix_routed(const double* p, const double* q, int64_t V, int n, Scheme scheme, WorMethod wm,
                                     DualWorkspace& ws, IidRoute route, bool want_order = true) {
    if (route == IidRoute::Sorted || !(scheme == Scheme::Iid || n == 1) || n < 1)
        return dual_prefix(p, q, V, n, scheme, wm, ws);
    const IidSelectResult r = iid_select_fast(p, q, V, n, ws.sel, ws.order, want_order);
    if (r.fallback) return dual_prefix(p, q, V, n, scheme, wm, ws);
    DualResult res;
    res.alpha = std::min(1.0, 1.0 + r.best);
    res.k_star = r.k_star;
    return res;
}

// dual_prefix for iid (any scheme at n = 1) with ws.order the full ratio order, as dual_prefix
// leaves it, but k* and alpha* by selection instead of its scan of every prefix (the same bits:
// test_iid_select): the verifiers that cut windows in the ratio order need both.
inline DualResult dual_prefix_ordered(const double* p, const double* q, int64_t V, int n, DualWorkspace& ws) {
    if (n < 1) throw std::invalid_argument("n: must be >= 1");
    const IidSelectResult r = iid_select_fast(p, q, V, n, ws.sel, ws.sel_order, false);
    if (r.fallback) return dual_prefix(p, q, V, n, Scheme::Iid, WorMethod::Auto, ws);
    ratio_order(p, q, V, ws.ows, ws.order);
    DualResult res;
    res.alpha = std::min(1.0, 1.0 + r.best);
    res.k_star = r.k_star;
    return res;
}

// One row: alpha* and (optionally) the certificate H as sorted token ids.
inline double dual_alpha(const double* p, const double* q, int64_t V, int n, DraftScheme ds, WorMethod wm,
                         DualWorkspace& ws, std::vector<int64_t>* cert, IidRoute route = IidRoute::Select) {
    if (n < 1) throw std::invalid_argument("n: must be >= 1");
    if (ds.kind == Scheme::Greedy) return dual_greedy(p, q, V, n, cert);
    if (ds.kind == Scheme::Topk) {  // alpha* = p(T), H = T: every draft set is T
        std::vector<int32_t> T;
        top_tokens(q, V, n, T, "topk drafts");
        double pT = 0.0;
        for (int32_t t : T) pT += p[t];
        if (cert) cert->assign(T.begin(), T.end());
        return std::min(pT, 1.0);
    }
    if (!ds.mixed()) {
        DualResult r = dual_prefix_routed(p, q, V, n, ds.kind, wm, ws, route, cert != nullptr);
        if (cert) {
            cert->assign(ws.order.begin(), ws.order.begin() + r.k_star);
            std::sort(cert->begin(), cert->end());
        }
        return r.alpha;
    }
    if (ds.top >= n)
        throw std::invalid_argument("scheme: a mixed scheme top<m>+... needs m < n (m = n is 'topk'), got m = " +
                                    std::to_string(ds.top) + ", n = " + std::to_string(n));
    TopSplit& sp = ws.split;
    sp.build(p, q, V, ds.top, n - ds.top, ds.kind);
    DualResult r = dual_prefix_routed(sp.p.data(), sp.q.data(), V, n - ds.top, ds.kind, wm, ws, route, cert != nullptr);
    if (cert) {  // H = T u the split pair's certificate (which never holds t0: q(t0) = 0)
        cert->assign(sp.T.begin(), sp.T.end());
        cert->insert(cert->end(), ws.order.begin(), ws.order.begin() + r.k_star);
        std::sort(cert->begin(), cert->end());
    }
    return std::min(1.0, sp.pT + r.alpha);
}

inline double dual_alpha(const double* p, const double* q, int64_t V, int n, Scheme scheme, WorMethod wm,
                         DualWorkspace& ws, std::vector<int64_t>* cert, IidRoute route = IidRoute::Select) {
    return dual_alpha(p, q, V, n, DraftScheme{scheme, 0}, wm, ws, cert, route);
}

}  // namespace mdsd
