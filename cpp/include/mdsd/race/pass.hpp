// Passes over a token order on the race grid (docs/theory/race_oracle.md §14.4): each token in turn gets its
// w given the tokens before it at their final weights and those after it at weight h0 (or 1),
// and the caller decides how much of it to lay.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "mdsd/core/parallel.hpp"
#include "mdsd/race/grid.hpp"
#include "mdsd/race/moments.hpp"
#include "mdsd/race/pair.hpp"

namespace mdsd::race {

// Sweep of `toks` in the given order over an environment `base` (every token outside `toks`):
// token i is laid, given the tokens before it at their final weights (prefix) and those after it at
// weight h0[i] (1 if h0 is null; suffix, rebuilt per block of kPassBlock from checkpoints). `lay(i, w)`
// returns the token's final weight 1 - u; w_out[i] receives its w at that moment.
// With `ex` (an environment for the same tokens), lay is called as lay(i, w, E), E the weight of
// token i over the sets whose other system tokens all lie before it: prefix at final weights over
// `ex`, suffix at weight 0 (the factor e^{-q(suffix) t}).
constexpr int64_t kPassBlock = 128;  // tokens per checkpoint block of a pass

// Suffix pairs of toks at weight h0 (1 if null) at the block starts: check c = tokens
// [c kPassBlock, k), flat (Pi then D, 2 S doubles each); check 0 is the product of all of toks.
struct Checks {
    int64_t nb = 0;
    std::size_t S = 0;
    std::vector<double> v;
    Pair at(int64_t c, int n, int64_t G) const {
        Pair x;
        x.n = n;
        x.G = G;
        x.Pi.assign(v.begin() + c * 2 * S, v.begin() + c * 2 * S + S);
        x.D.assign(v.begin() + c * 2 * S + S, v.begin() + (c + 1) * 2 * S);
        return x;
    }
    void put(int64_t c, const Pair& x) {
        std::copy(x.Pi.begin(), x.Pi.end(), v.begin() + c * 2 * S);
        std::copy(x.D.begin(), x.D.end(), v.begin() + c * 2 * S + S);
    }
};
// The checkpointed pass without e (docs/theory/race_oracle.md §14.4, "Without e"). A small token's factor
// e + x h b, seed h q e, is e (1 + x h beta), seed e h q (beta = b / e <= 1 below small_cut), so
// inside a block its e is left out of every product (mul_unit) and the e's of the block's small
// tokens become one per-node scale e^{-q(small of block) t}: every w of the block misses exactly
// that scale (the tokens before i, i and those after it in the block), so it goes into the node
// weights once, and pre (and pex) take it at the block's end. Big tokens keep e + x h b. Within a
// block the unscaled products grow by at most (1 + beta)^kPassBlock <= 2^128: no overflow. The same
// values to rounding (~1e-15 relative per product) as the pass that keeps every token's factor
// e + x h b (cpp/tests/race/pass_with_e.hpp, the tests' reference).
inline Checks suffix_checks(const Grid& gr, const double* q, const std::vector<int32_t>& toks, const double* h0) {
    const int64_t k = static_cast<int64_t>(toks.size()), G = gr.G;
    const int n = gr.n;
    const double qcut = small_cut(gr);
    Checks ck;
    ck.S = static_cast<std::size_t>(n) * G;
    ck.nb = (k + kPassBlock - 1) / kPassBlock;
    ck.v.resize(static_cast<std::size_t>(ck.nb + 1) * 2 * ck.S);
    std::vector<double> e(G), b(G), beta(G);
    Pair s;
    s.unit(n, G);
    ck.put(ck.nb, s);
    for (int64_t c = ck.nb - 1; c >= 0; --c) {
        poll_interrupt_now();  // a block is ~0.1 ms; a row can take seconds (Ctrl-C)
        double qs = 0.0;       // the block's small mass
        for (int64_t i = std::min(k, (c + 1) * kPassBlock) - 1; i >= c * kPassBlock; --i) {
            const double qy = q[toks[i]], h = h0 ? h0[i] : 1.0;
            if (qy <= qcut) {
                gr.betas(qy, beta.data());
                mul_unit(n, G, s.Pi.data(), s.D.data(), s.Pi.data(), s.D.data(), beta.data(), h, qy);
                qs += qy;
            } else {
                gr.factors(qy, e.data(), b.data());
                s.add(e.data(), b.data(), h, qy);
            }
        }
        if (qs > 0.0) {
            gr.factors(qs, e.data(), b.data());
            s.scale(e.data());
        }
        ck.put(c, s);
    }
    return ck;
}

// `ck`: the suffix checks of toks at h0, if the caller already has them (suffix_checks).
template <class Lay>
inline void pass(const Grid& gr, const double* q, const std::vector<int32_t>& toks, const Pair& base, Lay&& lay,
                 std::vector<double>& w_out, const double* h0 = nullptr, const Pair* ex = nullptr,
                 const Checks* ck = nullptr) {
    if constexpr (std::is_invocable_v<Lay, int64_t, double, double>)
        if (!ex) throw std::invalid_argument("race::pass: lay(i, w, E) needs the environment `ex`");
    const int64_t k = static_cast<int64_t>(toks.size()), G = gr.G;
    const int n = gr.n;
    const std::size_t S = static_cast<std::size_t>(n) * G;
    const int64_t nb = (k + kPassBlock - 1) / kPassBlock;
    const double qcut = small_cut(gr);
    Checks own;
    if (!ck) {
        own = suffix_checks(gr, q, toks, h0);
        ck = &own;
    }
    const std::vector<double>& check = ck->v;
    w_out.assign(k, 0.0);
    Pair pre = base, pex;
    // ex: q(toks[i..k)), and sc[j] = e^{-q(toks[hi..k)) t} x the block's small scale x the e's of the
    // big tokens of the block from lo + j on: the factor E of token lo + j - 1 misses (see above).
    std::vector<double> qsuf, sc;
    if (ex) {
        pex = *ex;
        qsuf.assign(k + 1, 0.0);
        for (int64_t i = k - 1; i >= 0; --i) qsuf[i] = qsuf[i + 1] + q[toks[i]];
        sc.resize(static_cast<std::size_t>(kPassBlock + 1) * G);
    }
    // Per block: inside[j] = suffix pair of tokens [lo + j, k), without the small e's of the block;
    // fe, fb: the factors of the block's tokens (small: fb = beta, fe unused).
    std::vector<double> inside(static_cast<std::size_t>(kPassBlock + 1) * 2 * S), fe(kPassBlock * G),
        fb(kPassBlock * G), eblk(G), bblk(G), wts(G), one(G, 1.0);
    std::vector<char> small(kPassBlock);
    for (int64_t c = 0; c < nb; ++c) {
        poll_interrupt_now();
        const int64_t lo = c * kPassBlock, hi = std::min(k, lo + kPassBlock);
        std::copy(check.begin() + (c + 1) * 2 * S, check.begin() + (c + 2) * 2 * S,
                  inside.begin() + static_cast<std::size_t>(hi - lo) * 2 * S);
        double qs = 0.0;
        for (int64_t i = lo; i < hi; ++i) {
            small[i - lo] = q[toks[i]] <= qcut;
            if (small[i - lo]) qs += q[toks[i]];
        }
        if (qs > 0.0) gr.factors(qs, eblk.data(), bblk.data());
        else std::fill(eblk.begin(), eblk.end(), 1.0);
        for (int64_t g = 0; g < G; ++g) wts[g] = gr.wt[g] * eblk[g];
        if (ex)
            for (int64_t g = 0; g < G; ++g)
                sc[static_cast<std::size_t>(hi - lo) * G + g] = std::exp(-qsuf[hi] * gr.t[g]) * eblk[g];
        for (int64_t i = hi - 1; i >= lo; --i) {
            const bool sm = small[i - lo];
            double* ei = &fe[(i - lo) * G];
            double* bi = &fb[(i - lo) * G];
            if (sm) gr.betas(q[toks[i]], bi);
            else gr.factors(q[toks[i]], ei, bi);
            if (i == lo) break;
            const double* src = &inside[static_cast<std::size_t>(i - lo + 1) * 2 * S];
            double* dst = &inside[static_cast<std::size_t>(i - lo) * 2 * S];
            const double h = h0 ? h0[i] : 1.0;
            if (sm) mul_unit(n, G, src, src + S, dst, dst + S, bi, h, q[toks[i]]);
            else mul_factor(n, G, src, src + S, dst, dst + S, ei, bi, h, q[toks[i]]);
            if (ex) {
                double* s0 = &sc[static_cast<std::size_t>(i - lo) * G];
                const double* s1 = s0 + G;
                for (int64_t g = 0; g < G; ++g) s0[g] = sm ? s1[g] : s1[g] * ei[g];
            }
        }
        for (int64_t i = lo; i < hi; ++i) {
            const bool sm = small[i - lo];
            const double qy = q[toks[i]];
            const double* ei = sm ? one.data() : &fe[(i - lo) * G];
            const double* bi = &fb[(i - lo) * G];
            const double* in = &inside[static_cast<std::size_t>(i - lo + 1) * 2 * S];
            const double w = w_raw_wt(n, G, wts.data(), pre.Pi.data(), pre.D.data(), in, in + S, ei, bi, qy);
            w_out[i] = w;
            double h;
            if constexpr (std::is_invocable_v<Lay, int64_t, double, double>) {
                double E = 0.0;
                const double* s1 = &sc[static_cast<std::size_t>(i - lo + 1) * G];
                const double* P1 = &pex.Pi[static_cast<std::size_t>(n - 1) * G];
                const double* D2 = n >= 2 ? &pex.D[static_cast<std::size_t>(n - 2) * G] : nullptr;
                for (int64_t g = 0; g < G; ++g)
                    E += gr.wt[g] * s1[g] * (qy * ei[g] * P1[g] + (D2 ? bi[g] * D2[g] : 0.0));
                h = lay(i, w, E);
                if (sm) mul_unit(n, G, pex.Pi.data(), pex.D.data(), pex.Pi.data(), pex.D.data(), bi, h, qy);
                else pex.add(ei, bi, h, qy);
            } else {
                h = lay(i, w);
            }
            if (sm) mul_unit(n, G, pre.Pi.data(), pre.D.data(), pre.Pi.data(), pre.D.data(), bi, h, qy);
            else pre.add(ei, bi, h, qy);
        }
        if (qs > 0.0) {
            pre.scale(eblk.data());
            if (ex) pex.scale(eblk.data());
        }
    }
}

// pass() with the suffix at weight 1 and no `ex`, without checkpoints. A running pair E holds env,
// the small tokens before i at their final weights and those from i on at weight 1. Token i's
// factor at weight 1 is divided out of E (stable for a small token: b <= 1/2 <= e), which gives its
// environment Q_i, and E then takes the update E - u Q_i (x b + seed q e), u = 1 - h: the division's
// rounding enters E only as far as the token is laid. (Re-multiplying Q_i by the final factor
// instead let rounding drift to 1e-12 relative in w over 40,000 tokens; the update keeps every w
// within 1e-14 absolute of pass() on the shipped rows.) Big tokens stay out of E: their suffix
// products at weight 1 are kept for each of them, and their part of the environment enters w as one
// more pair. `small` (optional): the product of toks' small tokens at weight 1 (small_product).
// Per small token: one division, one w, one update (pass(): three products and one w, counting its
// checkpoints). Returns false, doing nothing, when toks holds more than kDivMaxBig big tokens.
constexpr int64_t kDivMaxBig = 512;
template <class Lay>
inline bool pass_div(const Grid& gr, const double* q, const std::vector<int32_t>& toks, const Pair& env, Lay&& lay,
                     std::vector<double>& w_out, const Pair* small = nullptr) {
    const int64_t k = static_cast<int64_t>(toks.size()), G = gr.G;
    const int n = gr.n;
    const std::size_t S = static_cast<std::size_t>(n) * G;
    const double qcut = small_cut(gr);
    std::vector<int64_t> bigpos;
    for (int64_t i = 0; i < k; ++i)
        if (q[toks[i]] > qcut) bigpos.push_back(i);
    const int64_t nbig = static_cast<int64_t>(bigpos.size());
    if (nbig > kDivMaxBig) return false;
    std::vector<double> e(G), b(G), beta(G), one(G, 1.0);  // one: e of the factor 1 + x beta
    Checks sufB;  // sufB.at(j): the big tokens from the j-th on, at weight 1
    sufB.S = S;
    sufB.nb = nbig;
    sufB.v.resize(static_cast<std::size_t>(nbig + 1) * 2 * S);
    {
        Pair sb;
        sb.unit(n, G);
        sufB.put(nbig, sb);
        for (int64_t j = nbig - 1; j >= 0; --j) {
            const double qy = q[toks[bigpos[j]]];
            gr.factors(qy, e.data(), b.data());
            sb.add(e.data(), b.data(), 1.0, qy);
            sufB.put(j, sb);
        }
    }
    Pair E = mul(env, small ? *small : small_product(gr, q, toks)), Qi = E, preB, EB;
    preB.unit(n, G);
    EB = sufB.at(0, n, G);
    w_out.assign(k, 0.0);
    std::vector<double> qt(k);  // q in pass order: one gather up front, not a cache miss per token
    for (int64_t i = 0; i < k; ++i) qt[i] = q[toks[i]];
    int64_t jb = 0;
    for (int64_t i = 0; i < k; ++i) {
        if ((i & (kPassBlock - 1)) == 0) poll_interrupt_now();
        const double qy = qt[i];
        if (jb < nbig && bigpos[jb] == i) {
            gr.factors(qy, e.data(), b.data());
            const Pair X = mul(E, preB);
            const double* sb = &sufB.v[static_cast<std::size_t>(jb + 1) * 2 * S];
            const double w = w_raw(gr, X.Pi.data(), X.D.data(), sb, sb + S, e.data(), b.data(), qy);
            w_out[i] = w;
            preB.add(e.data(), b.data(), lay(i, w), qy);
            ++jb;
            EB = mul(preB, sufB.at(jb, n, G));
            continue;
        }
        // The token's factor is e (1 + x beta) with seed q e, beta = b / e = e^{q t} - 1 (docs/theory/index.md
        // §14.4): E divided by 1 + x beta with seed q is e Q_i, Q_i = E / (e + x b). Then e enters
        // nowhere: q e Q_i = q (e Q_i) and b Q_i = beta (e Q_i), so w and the update read beta alone
        // (no division by e per node). Qi holds e Q_i: Qi[c] = E[c] - beta Qi[c-1],
        // QiD[c] = ED[c] - q Qi[c] - beta QiD[c-1].
        gr.betas(qy, beta.data());
        double w;
        switch (n) {  // fixed n: one sweep over the nodes (div_w_unit), the same bits
#define MDSD_DIV_W(N)                                                                                       \
    case N:                                                                                                 \
        w = div_w_unit<N>(G, E.Pi.data(), E.D.data(), Qi.Pi.data(), Qi.D.data(), EB.Pi.data(), EB.D.data(), \
                          beta.data(), gr.wt.data(), qy);                                                   \
        break;
            MDSD_DIV_W(2)
            MDSD_DIV_W(3)
            MDSD_DIV_W(4)
            MDSD_DIV_W(8)
#undef MDSD_DIV_W
            default:
                div_factor_t<true>(n, G, E.Pi.data(), E.D.data(), Qi.Pi.data(), Qi.D.data(), nullptr, beta.data(),
                                   nullptr, qy);
                w = w_raw(gr, Qi.Pi.data(), Qi.D.data(), EB.Pi.data(), EB.D.data(), one.data(), beta.data(), qy);
        }
        w_out[i] = w;
        const double u = 1.0 - lay(i, w);
        if (u == 0.0) continue;
        // E <- Q_i (e + x h b) = E - u (x b Q_i + seed q e Q_i) = E - u (x beta Qi + seed q Qi)
        switch (n) {
#define MDSD_UNLAY(N) \
    case N: unlay_unit_n<N>(G, E.Pi.data(), E.D.data(), Qi.Pi.data(), Qi.D.data(), beta.data(), qy, u); break;
            MDSD_UNLAY(2)
            MDSD_UNLAY(3)
            MDSD_UNLAY(4)
            MDSD_UNLAY(8)
#undef MDSD_UNLAY
            default:
                unlay_update_t<true>(n, G, E.Pi.data(), E.D.data(), Qi.Pi.data(), Qi.D.data(), nullptr, beta.data(), qy,
                                     u);
        }
    }
    return true;
}

}  // namespace mdsd::race
