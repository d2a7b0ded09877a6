// Prefix-event sweeps (docs/theory/wor_route.md §15.2): the inner rule of the tight-set sweep on systems
// too large to enumerate, with its tight sets taken to be prefixes of the current rho order
// (rho = pi / (h w), neediest first) -- the shape they had in every exact-rational run. Two
// implementations of one step rule (prefix_event_step):
//   * PrefixEventSweep: on a head of tokens, w by the race quadrature, everything else entering
//     through an environment pair; O(|head|^2 n G);
//   * PairPrefixEventSweep (pair_events.hpp): at n = 2 on a whole system, w in closed form; O(k^2).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/core/parallel.hpp"
#include "mdsd/race/grid.hpp"
#include "mdsd/race/moments.hpp"
#include "mdsd/race/pair.hpp"
#include "mdsd/race/pass.hpp"
#include "mdsd/verifiers/optimal_wor/exact_sweep.hpp"

namespace mdsd::verif::wor {

// The step size of the inner rule on prefix tight sets (both sweeps below). o: the
// active tokens by descending rho; s: its prefix slacks; the laid token k = o[py] has need pik and
// weight wy. It is laid until done (pik / wy), exhausted (h_k) or until a shorter prefix turns tight.
// A prefix falls at a rate of at most wy, so the rates are needed only when d wy reaches the
// smallest shorter slack; they are affine in h_k, read from the zero-prefix scans at h_k = 1 and 0
// (scan(hk, v)). vs: the slacks' own scan (h_k at its current weight), reused when h_k = 1.
template <class Weight, class Scan>
inline double prefix_event_step(const std::vector<int64_t>& o, const std::vector<double>& s, int64_t py, Weight&& h,
                                double pik, double wy, std::vector<double>& vs, Scan&& scan) {
    const int64_t k = o[py];
    double d = h(k);
    if (wy > 0.0) d = std::min(d, pik / wy);
    double smin = 1e300;
    for (int64_t i = 0; i < py; ++i) smin = std::min(smin, s[i]);
    if (py > 0 && d * wy >= smin) {
        std::vector<double> v1, v0;
        if (h(k) == 1.0) v1.swap(vs);
        else scan(1.0, v1);
        scan(0.0, v0);
        const int64_t a = static_cast<int64_t>(o.size());
        std::vector<double> Rs(a + 1, 0.0);  // Rs[j]: sum over positions >= j of the h_k-slope of h v
        for (int64_t j = a - 1; j >= 0; --j) {
            const double h1 = o[j] == k ? 1.0 : h(o[j]), h0 = o[j] == k ? 0.0 : h(o[j]);
            Rs[j] = Rs[j + 1] + (h1 * v1[j] - h0 * v0[j]);
        }
        for (int64_t i = 0; i < py; ++i) {
            const double r = wy - Rs[i + 1];
            if (r > 1e-300 && s[i] > kTol) d = std::min(d, s[i] / r);
        }
    }
    return d;
}

// The inner sweep (exact_sweep.hpp inner) on a set W of tokens at full vocabulary, with its tight sets taken
// to be prefixes of W's current rho order (rho = pi / (h w), neediest first) -- as they were in
// every exact-rational run -- and everything else entering through an environment pair (tokens
// outside W at their current weights). Each step costs a few O(|W| n G) scans, and the sweep takes
// about two steps per token: O(|W|^2 n G). Used by the full-vocabulary route (the heads of the
// "events" order and of the chains).
struct PrefixEventSweep {
    const race::Grid* gr = nullptr;
    const double *q = nullptr, *p = nullptr;
    std::vector<int32_t> tok;
    std::vector<double> h, pi;
    std::vector<char> done;
    race::Pair fixed;  // the done W tokens at their final weights
    std::vector<Chunk>* chunks = nullptr;
    std::vector<double>* won = nullptr;  // by token id
    std::vector<double> fe, fb;  // the factors of tok (token i at i * G)
    std::vector<double> fu;      // small tokens: beta = b / e (scan without e), at i * G
    std::vector<char> small;     // q <= small_cut: the factor is e (1 + x h beta)
    std::vector<double> suf, eblk, wts, one, scratch;  // scan's buffers (kept: a sweep runs thousands of scans)
    // A scan to run in place of scan_unit (null: scan_unit): the tests' reference form, which keeps
    // every token's e, so that whole sweeps of both forms can be compared.
    using ScanForm = void (*)(PrefixEventSweep&, const race::Pair& env, const std::vector<int64_t>& o, bool zero_prefix,
                              int64_t ov, double hov, std::vector<double>& v);
    ScanForm scan_form = nullptr;

    void init(const race::Grid& g, const double* q_, const double* p_, std::vector<int32_t> t, std::vector<Chunk>* ch,
              std::vector<double>* wn) {
        gr = &g;
        q = q_;
        p = p_;
        tok = std::move(t);
        chunks = ch;
        won = wn;
        h.assign(tok.size(), 1.0);
        pi.resize(tok.size());
        done.assign(tok.size(), 0);
        for (std::size_t i = 0; i < tok.size(); ++i) pi[i] = p[tok[i]];
        fixed.unit(g.n, g.G);
        fe.resize(tok.size() * g.G);
        fb.resize(tok.size() * g.G);
        fu.resize(tok.size() * g.G);
        small.resize(tok.size());
        one.assign(g.G, 1.0);
        const double qcut = race::small_cut(g);
        for (std::size_t i = 0; i < tok.size(); ++i) {
            g.factors(q[tok[i]], &fe[i * g.G], &fb[i * g.G]);
            small[i] = q[tok[i]] <= qcut;
            if (small[i]) g.betas(q[tok[i]], &fu[i * g.G]);
        }
    }
    std::vector<int64_t> active() const {
        std::vector<int64_t> a;
        for (std::size_t i = 0; i < tok.size(); ++i)
            if (!done[i]) a.push_back(static_cast<int64_t>(i));
        return a;
    }
    // v[i] = E[1{o_i in S} prod_{S \ o_i} h'] with env x fixed below: h' = 0 on o_0..o_{i-1} if
    // zero_prefix (else their weights), the weights after o_i; token `ov` at weight `hov`.
    void scan(const race::Pair& env, const std::vector<int64_t>& o, bool zero_prefix, int64_t ov, double hov,
              std::vector<double>& v) {
        if (scan_form) scan_form(*this, env, o, zero_prefix, ov, hov, v);
        else scan_unit(env, o, zero_prefix, ov, hov, v);
    }
    // scan without e (docs/theory/race_oracle.md §14.4, "Without e"), as race::pass: in a block of kPassBlock
    // positions of o a small token multiplies by 1 + x h beta with seed h q (race::mul_unit), and the
    // e's of the block's small tokens, which every w of the block misses, are one per-node scale:
    // in the node weights of its w's, and into the suffix pair at the block's start and pre at its end.
    void scan_unit(const race::Pair& env, const std::vector<int64_t>& o, bool zero_prefix, int64_t ov, double hov,
                   std::vector<double>& v) {
        const int64_t a = static_cast<int64_t>(o.size()), B = race::kPassBlock, nb = (a + B - 1) / B;
        auto wt = [&](int64_t k) { return k == ov ? hov : h[k]; };
        const int n = gr->n;
        const int64_t G = gr->G;
        const std::size_t S = static_cast<std::size_t>(n) * G;
        eblk.resize(static_cast<std::size_t>(nb) * G);
        scratch.resize(G);
        for (int64_t c = 0; c < nb; ++c) {  // eblk: e^{-q(small of block c) t}
            double qs = 0.0;
            for (int64_t i = c * B; i < std::min(a, (c + 1) * B); ++i)
                if (small[o[i]]) qs += q[tok[o[i]]];
            double* ec = &eblk[c * G];
            if (qs > 0.0) gr->factors(qs, ec, scratch.data());
            else std::fill(ec, ec + G, 1.0);
        }
        suf.resize(static_cast<std::size_t>(a + 1) * 2 * S);
        std::fill(suf.begin() + a * 2 * S, suf.begin() + (a + 1) * 2 * S, 0.0);
        std::fill(suf.begin() + a * 2 * S, suf.begin() + a * 2 * S + G, 1.0);
        for (int64_t i = a - 1; i >= 0; --i) {
            const int64_t k = o[i];
            const double* src = &suf[(i + 1) * 2 * S];
            double* dst = &suf[i * 2 * S];
            if (small[k]) race::mul_unit(n, G, src, src + S, dst, dst + S, &fu[k * G], wt(k), q[tok[k]]);
            else race::mul_factor(n, G, src, src + S, dst, dst + S, &fe[k * G], &fb[k * G], wt(k), q[tok[k]]);
            if (i % B == 0 && i > 0) {  // the whole suffix, for the block before
                const double* ec = &eblk[(i / B) * G];
                for (int r = 0; r < 2 * n; ++r)
                    for (int64_t g = 0; g < G; ++g) dst[r * G + g] *= ec[g];
            }
        }
        v.assign(a, 0.0);
        race::Pair pre = race::mul(env, fixed);
        wts.resize(G);
        for (int64_t c = 0; c < nb; ++c) {
            const double* ec = &eblk[c * G];
            for (int64_t g = 0; g < G; ++g) wts[g] = gr->wt[g] * ec[g];
            for (int64_t i = c * B; i < std::min(a, (c + 1) * B); ++i) {
                const int64_t k = o[i];
                const double qy = q[tok[k]], hp = zero_prefix ? 0.0 : wt(k);
                const double* in = &suf[(i + 1) * 2 * S];
                if (small[k]) {
                    const double* bt = &fu[k * G];
                    v[i] =
                        race::w_raw_wt(n, G, wts.data(), pre.Pi.data(), pre.D.data(), in, in + S, one.data(), bt, qy);
                    race::mul_unit(n, G, pre.Pi.data(), pre.D.data(), pre.Pi.data(), pre.D.data(), bt, hp, qy);
                } else {
                    const double *ei = &fe[k * G], *bi = &fb[k * G];
                    v[i] = race::w_raw_wt(n, G, wts.data(), pre.Pi.data(), pre.D.data(), in, in + S, ei, bi, qy);
                    pre.add(ei, bi, hp, qy);
                }
            }
            pre.scale(ec);
        }
    }
    // Active W tokens by descending rho under env (ties: stable), with their w.
    void order(const race::Pair& env, std::vector<int64_t>& o, std::vector<double>& w) {
        const std::vector<int64_t> act = active();
        std::vector<double> wa;
        scan(env, act, false, -1, 0.0, wa);
        const int64_t a = static_cast<int64_t>(act.size());
        std::vector<double> rho(a);
        for (int64_t j = 0; j < a; ++j) {
            const double R = h[act[j]] * wa[j];
            rho[j] = R > 0.0 ? pi[act[j]] / R : 1e300;
        }
        std::vector<int64_t> ix(a);
        for (int64_t j = 0; j < a; ++j) ix[j] = j;
        std::stable_sort(ix.begin(), ix.end(), [&](int64_t x, int64_t y) { return rho[x] > rho[y]; });
        o.resize(a);
        w.resize(a);
        for (int64_t j = 0; j < a; ++j) {
            o[j] = act[ix[j]];
            w[j] = wa[ix[j]];
        }
    }
    // Prefix slacks of order o: s_i = mu(T meets o_0..o_i) - pi(o_0..o_i).
    // v receives the scan behind them (every weight at its current value).
    void slacks(const race::Pair& env, const std::vector<int64_t>& o, std::vector<double>& s, std::vector<double>& v) {
        scan(env, o, true, -1, 0.0, v);
        s.resize(o.size());
        double cum = 0.0;
        for (std::size_t j = 0; j < o.size(); ++j) {
            cum += h[o[j]] * v[j] - pi[o[j]];
            s[j] = cum;
        }
    }
    int64_t retired = 0;  // tokens done
    void retire(int64_t k) {
        done[k] = 1;
        ++retired;
        fixed.add(&fe[k * gr->G], &fb[k * gr->G], std::max(0.0, h[k]), q[tok[k]]);
    }
    // One step of the inner rule: the least needy token of the smallest tight prefix (of all active
    // tokens if none is tight and `force`) is laid until done or until a shorter prefix turns
    // tight. Returns false if no prefix is tight (and not force) or nothing is active.
    bool step(const race::Pair& env, bool force) {
        poll_interrupt_now();
        std::vector<int64_t> o;
        std::vector<double> w, s, vs;
        order(env, o, w);
        if (o.empty()) return false;
        slacks(env, o, s, vs);
        int64_t jt = -1;
        for (std::size_t j = 0; j < s.size(); ++j)
            if (s[j] <= kTol) {
                jt = static_cast<int64_t>(j);
                break;
            }
        if (jt < 0 && !force) return false;
        const int64_t py = jt >= 0 ? jt : static_cast<int64_t>(o.size()) - 1, k = o[py];
        const double wy = w[py];
        const double d = prefix_event_step(
            o, s, py, [&](int64_t j) { return h[j]; }, pi[k], wy, vs,
            [&](double hk, std::vector<double>& v) { scan(env, o, true, k, hk, v); });
        if (!(d > 0.0) || !(wy > 0.0)) {
            retire(k);
            return true;
        }
        (*won)[tok[k]] += d * wy;
        pi[k] -= d * wy;
        h[k] -= d;
        chunks->push_back({tok[k], d});
        if (pi[k] <= kTol * std::max(1.0, p[tok[k]]) || h[k] <= 1e-15) retire(k);
        return true;
    }
};

}  // namespace mdsd::verif::wor
