// The pass of race/pass.hpp in the form that keeps every token's factor e + x h b (no per-block
// scale of the small tokens' e): the tests' reference for race::pass and race::suffix_checks, which
// must give the same w, E and laid weights to rounding (docs/theory/race_oracle.md §14.4, "Without e").
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
#include "mdsd/race/pass.hpp"

namespace pass_with_e {

namespace R = mdsd::race;

inline R::Checks suffix_checks_e(const R::Grid& gr, const double* q, const std::vector<int32_t>& toks,
                                 const double* h0) {
    const int64_t k = static_cast<int64_t>(toks.size()), G = gr.G;
    const int n = gr.n;
    R::Checks ck;
    ck.S = static_cast<std::size_t>(n) * G;
    ck.nb = (k + R::kPassBlock - 1) / R::kPassBlock;
    ck.v.resize(static_cast<std::size_t>(ck.nb + 1) * 2 * ck.S);
    std::vector<double> e(G), b(G);
    R::Pair s;
    s.unit(n, G);
    ck.put(ck.nb, s);
    for (int64_t c = ck.nb - 1; c >= 0; --c) {
        mdsd::poll_interrupt_now();
        for (int64_t i = std::min(k, (c + 1) * R::kPassBlock) - 1; i >= c * R::kPassBlock; --i) {
            gr.factors(q[toks[i]], e.data(), b.data());
            s.add(e.data(), b.data(), h0 ? h0[i] : 1.0, q[toks[i]]);
        }
        ck.put(c, s);
    }
    return ck;
}

template <class Lay>
inline void pass_e(const R::Grid& gr, const double* q, const std::vector<int32_t>& toks, const R::Pair& base, Lay&& lay,
                   std::vector<double>& w_out, const double* h0 = nullptr, const R::Pair* ex = nullptr,
                   const R::Checks* ck = nullptr) {
    if constexpr (std::is_invocable_v<Lay, int64_t, double, double>)
        if (!ex) throw std::invalid_argument("pass_e: lay(i, w, E) needs the environment `ex`");
    const int64_t k = static_cast<int64_t>(toks.size()), G = gr.G;
    const int n = gr.n;
    const std::size_t S = static_cast<std::size_t>(n) * G;  // doubles per Pi (or D)
    const int64_t nb = (k + R::kPassBlock - 1) / R::kPassBlock;
    R::Checks own;
    if (!ck) {
        own = suffix_checks_e(gr, q, toks, h0);
        ck = &own;
    }
    const std::vector<double>& check = ck->v;
    w_out.assign(k, 0.0);
    R::Pair pre = base, pex;
    std::vector<double> qsuf, sc;  // ex: q(toks[i..k)) and the suffix factors e^{-q(suffix) t} of a block
    if (ex) {
        pex = *ex;
        qsuf.assign(k + 1, 0.0);
        for (int64_t i = k - 1; i >= 0; --i) qsuf[i] = qsuf[i + 1] + q[toks[i]];
        sc.resize(static_cast<std::size_t>(R::kPassBlock + 1) * G);
    }
    // Per block: inside[j] = suffix pair of tokens [lo + j, k) (flat, 2 S doubles each), and the
    // factors of the block's tokens (computed once, used by both sweeps).
    std::vector<double> inside(static_cast<std::size_t>(R::kPassBlock + 1) * 2 * S), fe(R::kPassBlock * G),
        fb(R::kPassBlock * G);
    for (int64_t c = 0; c < nb; ++c) {
        mdsd::poll_interrupt_now();
        const int64_t lo = c * R::kPassBlock, hi = std::min(k, lo + R::kPassBlock);
        std::copy(check.begin() + (c + 1) * 2 * S, check.begin() + (c + 2) * 2 * S,
                  inside.begin() + static_cast<std::size_t>(hi - lo) * 2 * S);
        if (ex)
            for (int64_t g = 0; g < G; ++g)
                sc[static_cast<std::size_t>(hi - lo) * G + g] = std::exp(-qsuf[hi] * gr.t[g]);
        for (int64_t i = hi - 1; i >= lo; --i) {
            double* ei = &fe[(i - lo) * G];
            double* bi = &fb[(i - lo) * G];
            gr.factors(q[toks[i]], ei, bi);
            if (i == lo) break;
            const double* src = &inside[static_cast<std::size_t>(i - lo + 1) * 2 * S];
            double* dst = &inside[static_cast<std::size_t>(i - lo) * 2 * S];
            R::mul_factor(n, G, src, src + S, dst, dst + S, ei, bi, h0 ? h0[i] : 1.0, q[toks[i]]);
            if (ex)
                for (int64_t g = 0; g < G; ++g)
                    sc[static_cast<std::size_t>(i - lo) * G + g] =
                        sc[static_cast<std::size_t>(i - lo + 1) * G + g] * ei[g];
        }
        for (int64_t i = lo; i < hi; ++i) {
            const double qy = q[toks[i]];
            const double* ei = &fe[(i - lo) * G];
            const double* bi = &fb[(i - lo) * G];
            const double* in = &inside[static_cast<std::size_t>(i - lo + 1) * 2 * S];
            const double w = R::w_raw(gr, pre.Pi.data(), pre.D.data(), in, in + S, ei, bi, qy);
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
                pex.add(ei, bi, h, qy);
            } else {
                h = lay(i, w);
            }
            pre.add(ei, bi, h, qy);
        }
    }
}

}  // namespace pass_with_e
