// Exact acceptance without a plan: the verifiers whose acceptance is a closed form or a per-row
// formula ("sd", "rrs", "kseq", "greedy", "topk", "spechub"), each in a few linear passes over the
// row (bound as _core.verifiers.exact_closed). A plan would copy the row, sort it by p/q and build
// samplers, none of which the number needs. The formulas run on G rows at once, one vector lane
// per row (planless/rowlanes.hpp): a row's sums keep their order, so its bits are those of the row
// alone, while G add chains run side by side. Raw rows are normalised (x / row sum, the division
// as_pair makes) on the fly in the first pass; greedy's and spechub's later passes read the G rows
// interleaved (token-major), rrs's and kseq's one row at a time (a row fits in cache, a group does
// not), normalised rows in place. What bounds them (bench/verifiers/one_call.py, V = 49,152): the
// validation pass reads the rows once (~1x the memory-stream floor), and the divider (4 doubles per
// ~5 cycles) makes the two divisions per token ~1x again; greedy and spechub divide 2 and 3 more times.
//
// Same numbers as the plans' exact(): "sd", "greedy", "topk" and "spechub" run the plans' own sums
// in the plans' own (token-id) order on the same normalised row, so they give the same bits.
// "rrs" and "kseq" need sums over the tokens above a threshold, which the plans take as differences
// of prefix sums in ratio order; here they are term-by-term sums in id order (planless/rrs.hpp,
// planless/kseq.hpp, the route verify already takes): up to ~2e-13 apart, and these the closer to
// the exact value (tests/verifiers/test_closed_forms.py).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mdsd/core/scheme.hpp"
#include "mdsd/verifiers/planless/kseq.hpp"
#include "mdsd/verifiers/planless/rowlanes.hpp"

namespace mdsd::verif::direct {

enum class Closed { Sd, Rrs, Kseq, Greedy, Topk, SpecHub };

inline bool parse_closed(const std::string& name, Closed& out) {
    if (name == "sd") out = Closed::Sd;
    else if (name == "rrs") out = Closed::Rrs;
    else if (name == "kseq") out = Closed::Kseq;
    else if (name == "greedy") out = Closed::Greedy;
    else if (name == "topk") out = Closed::Topk;
    else if (name == "spechub") out = Closed::SpecHub;
    else return false;
    return true;
}

// One thread's buffers: a group's interleaved rows, its row-major rows (kseq's bracket; many
// drafts), sparse rows scattered to the vocabulary, the top tokens and kseq's bracket.
struct ClosedScratch {
    std::vector<double> P, Q;
    std::vector<double> rp[4], rq[4], dense_p[4], dense_q[4];
    std::vector<int32_t> ids[4];
    KseqBracket kseq;
};

namespace closed {

using namespace rows;

template <class L>
L zero() {
    return splat<L>(0.0);
}

// simd::mass of K row-major rows (T[k] each), with AVX2 one register per row whose lane j sums
// the tokens i = j mod 4: simd::mass's four partial sums, added in its order, so the same bits.
// K rows side by side: K add chains in flight.
template <int K>
void row_mass(const double* const* p, const double* const* q, int64_t V, const double* T, double* out) {
#ifdef MDSD_AVX2
    const D4 z = zero<D4>();
    D4 a[K], Tv[K];
    for (int k = 0; k < K; ++k) a[k] = z, Tv[k] = splat<D4>(T[k]);
    int64_t i = 0;
    for (; i + 4 <= V; i += 4)
        for (int k = 0; k < K; ++k) {
            const D4 pv = load<D4>(p[k] + i), qv = load<D4>(q[k] + i);
            a[k] = a[k] + sel(gt(qv, z), smax(z, pv - Tv[k] * qv), pv);
        }
    for (int k = 0; k < K; ++k) {
        double m[4], tail = 0.0;
        put(m, a[k]);
        for (int64_t j = i; j < V; ++j) tail += simd::d_at(p[k][j], q[k][j], T[k]);
        out[k] = ((m[0] + m[2]) + (m[1] + m[3])) + tail;
    }
#else
    for (int k = 0; k < K; ++k) out[k] = simd::mass(p[k], q[k], V, T[k]);
#endif
}

// The top m of q (need tokens with q > 0) of each lane's row into ws.ids, from a scan (m <= 32) or
// from the row-major rows and top_tokens' selection; support[r] = -1 when the row has enough.
template <class L>
void tops(const TopScan<L>& scan, int m, int need, int64_t V, const double* const* rq, ClosedScratch& ws,
          int64_t* support) {
    for (int r = 0; r < kLanes<L>; ++r) {
        int64_t s = 0;
        if (m <= 32) {
            s = scan.finish(r, ws.ids[r]);
        } else {
            for (int64_t i = 0; i < V; ++i) s += rq[r][i] > 0.0;
            if (s >= need) top_tokens(rq[r], V, m, ws.ids[r], "drafts");
        }
        if (s < need) ws.ids[r].clear();  // no drafts: the row is refused
        support[r] = s < need ? s : -1;
    }
}

// Greedy::exact: T = top n-1 of q, X ~ q renormalised off T.
template <class L>
void greedy(const double* P, const double* Q, int64_t V, ClosedScratch& ws, double* out) {
    constexpr int G = kLanes<L>;
    Marks<L> mk;
    for (int r = 0; r < G; ++r) mk.ids[r] = &ws.ids[r];
    mk.start();
    L rest = zero<L>();
    for (int64_t i = 0; i < V; ++i) rest = rest + sel(mk.at_token(i), zero<L>(), load<L>(Q + i * G));
    mk.start();
    const L one = splat<L>(1.0);
    L s = zero<L>(), rT = s, acc = s, rej = s;  // s: the residual's running sum (Categorical's cdf)
    for (int64_t i = 0; i < V; ++i) {
        const auto inT = mk.at_token(i);
        const L p = load<L>(P + i * G), q = load<L>(Q + i * G);
        const L qt = ldiv(q, rest);
        const L r = sel(inT, p, smax(zero<L>(), p - qt));
        const auto pos = gt(r, zero<L>());
        const L before = s;
        s = s + sel(pos, r, zero<L>());
        rT = rT + sel(mand(pos, inT), s - before, zero<L>());  // Categorical::weight(j)
        const auto on = mand(mnot(inT), gt(q, zero<L>()));
        const L a = sel(ge(p, qt), one, ldiv(p, qt));
        acc = acc + sel(on, qt * a, zero<L>());
        rej = rej + sel(on, qt * (one - a), zero<L>());
    }
    double S[G], RT[G], A[G], R[G];
    put(S, s), put(RT, rT), put(A, acc), put(R, rej);
    for (int r = 0; r < G; ++r) {
        if (R[r] > 0.0 && S[r] > 0.0) A[r] += R[r] * RT[r] / S[r];
        out[r] = std::min(A[r], 1.0);
    }
}

// SpecHub::exact, hub a = argmax q (lowest id on ties): ws.ids[r] = {a}.
template <class L>
void spechub(const double* P, const double* Q, int64_t V, ClosedScratch& ws, double* out) {
    constexpr int G = kLanes<L>;
    Marks<L> mk;
    double qa[G], pa[G];
    for (int r = 0; r < G; ++r) {
        mk.ids[r] = &ws.ids[r];
        const int64_t a = ws.ids[r].empty() ? 0 : ws.ids[r][0];
        qa[r] = Q[a * G + r];
        pa[r] = P[a * G + r];
    }
    mk.start();
    L rest = zero<L>();
    for (int64_t i = 0; i < V; ++i) rest = rest + sel(mk.at_token(i), zero<L>(), load<L>(Q + i * G));
    mk.start();
    const L one = splat<L>(1.0), qav = load<L>(qa);
    auto ratio = [&](L num, L den) { return sel(gt(den, zero<L>()), smin(one, ldiv(num, den)), one); };
    L SA = zero<L>(), SB = SA, acc = SA, rejB = SA, rejA = SA;
    for (int64_t i = 0; i < V; ++i) {
        const auto off = mnot(mk.at_token(i));
        const L p = load<L>(P + i * G), q = load<L>(Q + i * G);
        const L qai = ldiv(qav * q, rest);
        const L pp = smax(zero<L>(), p - q);
        SA = SA + sel(off, smax(zero<L>(), qai - pp), zero<L>());
        SB = SB + sel(off, smax(zero<L>(), q - p), zero<L>());
        const auto on = mand(off, gt(q, zero<L>()));
        const L ai = ratio(p, q), bi = ratio(pp, qai);
        acc = acc + sel(on, q * ai + qai * bi, zero<L>());
        rejB = rejB + sel(on, q * (one - ai), zero<L>());
        rejA = rejA + sel(on, qai * (one - bi), zero<L>());
    }
    double sa[G], sb[G], A[G], rb[G], ra[G];
    put(sa, SA), put(sb, SB), put(A, acc), put(rb, rejB), put(ra, rejA);
    auto ratio1 = [](double num, double den) { return den > 0.0 ? std::min(1.0, num / den) : 1.0; };
    for (int r = 0; r < G; ++r) {
        const double ppa = std::max(0.0, pa[r] - sa[r]);
        A[r] += rb[r] * ratio1(ppa, sb[r]) + ra[r] * ratio1(pa[r], sa[r]);
        out[r] = std::min(A[r], 1.0);
    }
}

}  // namespace closed

// The exact acceptance of `kind` with n drafts for the G rows of g (lane r: out[r]); -1 and
// support[r] set when q has too few tokens with q > 0 for the scheme's deterministic drafts.
// Div: the rows are raw, divided by g.sp / g.sq as they are read.
template <class L, bool Div, class T>
void closed_group(Closed kind, const rows::Group<T, rows::kLanes<L>>& g, int64_t V, int n, ClosedScratch& ws,
                  double* out, int64_t* support) {
    using namespace rows;
    using closed::zero;
    constexpr int G = kLanes<L>;
    for (int r = 0; r < G; ++r) support[r] = -1;
    double v[G];
    const double* rp[G] = {};  // the rows row-major: normalised rows read in place, or copies
    const double* rq[G] = {};
    double* wp[G] = {};  // where the first pass writes them (none: in place)
    double* wq[G] = {};
    auto rowmajor = [&] {
        for (int r = 0; r < G; ++r) {
            if constexpr (!Div && std::is_same_v<T, double>) {
                rp[r] = g.p[r];
                rq[r] = g.q[r];
            } else {
                ws.rp[r].resize(static_cast<std::size_t>(V));
                ws.rq[r].resize(static_cast<std::size_t>(V));
                rp[r] = wp[r] = ws.rp[r].data();
                rq[r] = wq[r] = ws.rq[r].data();
            }
        }
    };
    if (kind == Closed::Sd || kind == Closed::Kseq) {  // sum min(p, q): sd, and kseq's beta(1)
        if (kind == Closed::Kseq) rowmajor();
        L a = zero<L>();
        for_tokens<L, Div>(g, V, [&](L p, L q, int64_t) { a = a + smin(p, q); }, wp[0] ? wp : nullptr, wq);
        put(v, a);
        for (int r = 0; r < G; ++r) {
            if (kind == Closed::Sd) {
                out[r] = std::min(v[r], 1.0);
                continue;
            }
            double rho = 1.0, beta = 0.0;
            kseq_rho(rp[r], rq[r], V, n, v[r], ws.kseq, rho, beta);
            out[r] = 1.0 - ipow(1.0 - beta, n);
        }
        return;
    }
    if (kind == Closed::Topk) {  // p(T), T = top n of q
        TopScan<L> scan;
        scan.start(n);
        if (n > 32) rowmajor();
        for_tokens<L, Div>(
            g, V, [&](L, L q, int64_t i) { n <= 32 ? scan.see(q, i) : void(); }, wp[0] ? wp : nullptr, wq);
        closed::tops(scan, n, n, V, rq, ws, support);
        for (int r = 0; r < G; ++r) {
            double pT = 0.0;
            for (int32_t t : ws.ids[r]) pT += Div ? static_cast<double>(g.p[r][t]) / g.sp[r] : g.p[r][t];
            out[r] = support[r] >= 0 ? -1.0 : std::min(pT, 1.0);
        }
        return;
    }
    if (kind == Closed::Rrs) {  // Rrs::prepare's thresholds, its masses as simd::mass sums them
        rowmajor();
        if (wp[0]) for_tokens<L, Div>(g, V, [](L, L, int64_t) {}, wp, wq);
        for (int r0 = 0; r0 < G; r0 += 2) {  // two rows at a time (in cache, their chains side by side)
            const int k = std::min(2, G - r0);
            double Th[2] = {0.0, 0.0}, M[2], M0[2], Mk[2];
            if (k == 2) closed::row_mass<2>(rp + r0, rq + r0, V, Th, M);
            else closed::row_mass<1>(rp + r0, rq + r0, V, Th, M);
            bool on[2] = {M[0] > 0.0, k == 2 && M[1] > 0.0};
            M0[0] = M[0], M0[1] = M[1];
            for (int i = 0; i < n && (on[0] || on[1]); ++i) {
                for (int j = 0; j < 2; ++j) Th[j] += on[j] ? M[j] : 0.0;
                if (on[0] && on[1]) closed::row_mass<2>(rp + r0, rq + r0, V, Th, Mk);
                for (int j = 0; j < k; ++j)
                    if (on[j] && !on[1 - j]) closed::row_mass<1>(rp + r0 + j, rq + r0 + j, V, Th + j, Mk + j);
                for (int j = 0; j < k; ++j)
                    if (on[j]) M[j] = Mk[j], on[j] = M[j] > 0.0;
            }
            for (int j = 0; j < k; ++j) out[r0 + j] = std::min(1.0, std::max(0.0, 1.0 - M[j] / M0[j]));
        }
        return;
    }
    // greedy, spechub: several passes, over the rows interleaved
    ws.P.resize(static_cast<std::size_t>(V * G));
    ws.Q.resize(static_cast<std::size_t>(V * G));
    double* P = ws.P.data();
    double* Q = ws.Q.data();
    const int m = kind == Closed::Greedy ? n - 1 : 1;
    const bool scanning = m <= 32;
    if (m > 32) rowmajor();
    TopScan<L> scan;
    scan.start(m);
    for_tokens<L, Div>(
        g, V,
        [&](L p, L q, int64_t i) {
            put(P + i * G, p);
            put(Q + i * G, q);
            if (scanning) scan.see(q, i);
        },
        wp[0] ? wp : nullptr, wq);
    closed::tops(scan, m, m + 1, V, rq, ws, support);
    if (kind == Closed::Greedy) closed::greedy<L>(P, Q, V, ws, v);
    else closed::spechub<L>(P, Q, V, ws, v);
    for (int r = 0; r < G; ++r) out[r] = support[r] >= 0 ? -1.0 : v[r];
}

}  // namespace mdsd::verif::direct
