// A row's beta rows (beta_chain on its grid) kept per token, so that the passes after a token's first
// read its row instead of recomputing it: about two thirds of a wor row's betas calls repeat a token
// (counted on the bench rows, session 18). Same function on the same (grid, q): the same bits, so
// every decision of the route stays as without the cache (docs/research/OPTIMAL_WOR.md, session 18).
//
// Memory: one row of G doubles per cached token, at most kBetaCacheBytes per thread (32 MiB: a full
// LLM row of 45,000 small tokens at G = 69, n <= 4, is 25 MB; at n = 8, G ~ 122, the first ~34,000
// tokens); tokens beyond it are recomputed as before. The buffer is kept across bind()s: prepare holds
// one cache per thread, since a fresh allocation per row would fault in up to 32 MiB of pages again.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "mdsd/race/grid.hpp"

namespace mdsd::race {

constexpr std::size_t kBetaCacheBytes = std::size_t{32} << 20;

// The budget prepare gives a row's cache (0: none, every beta recomputed as before session 18); set
// only by the benches and tests that compare budgets.
inline std::size_t& beta_cache_bytes() {
    static std::size_t bytes = kBetaCacheBytes;
    return bytes;
}

struct BetaCache {
    // the grid the rows belong to; a pass on another grid is refused (its rows would be wrong)
    int64_t G = 0, g0 = 0;
    int M = 0;
    double t1 = 0.0, t_last = 0.0;
    int64_t cap = 0, used = 0;   // rows that fit, rows filled
    std::vector<int32_t> slot;   // by token id: its row, -1 if none
    std::unique_ptr<double[]> rows;  // cap x G doubles, uninitialised: pages are touched as rows fill
    std::size_t have = 0;            // doubles allocated

    // Empties the cache and binds it to gr, for token ids below V.
    void bind(const Grid& gr, int64_t V, std::size_t bytes = kBetaCacheBytes) {
        G = gr.G;
        g0 = gr.g0;
        M = gr.M;
        t1 = gr.t1;
        t_last = gr.t[gr.G - 1];
        used = 0;
        slot.assign(V, -1);
        cap = std::min<int64_t>(V, static_cast<int64_t>(bytes / (sizeof(double) * static_cast<std::size_t>(G))));
        const std::size_t want = static_cast<std::size_t>(cap) * static_cast<std::size_t>(G);
        if (have < want) {
            rows.reset(new double[want]);
            have = want;
        }
    }
    void reset() { G = 0; }  // unbound: the next row binds it afresh (its token ids mean other masses)
    bool bound() const { return G > 0; }
    bool matches(const Grid& gr) const {
        return gr.G == G && gr.g0 == g0 && gr.M == M && gr.t1 == t1 && gr.t[gr.G - 1] == t_last;
    }
    // Token y's betas (q[y] = x) on gr: its row if cached, else computed into buf (and cached while
    // the budget lasts). The pointer stays valid until the next bind().
    const double* get(const Grid& gr, int32_t y, double x, double* buf) {
        if (!matches(gr)) throw std::logic_error("race::BetaCache: a pass on a grid the cache was not built on");
        const int32_t s = slot[y];
        if (s >= 0) return rows.get() + static_cast<std::ptrdiff_t>(s) * G;
        if (used == cap) {
            gr.betas(x, buf);
            return buf;
        }
        double* r = rows.get() + used * G;
        gr.betas(x, r);
        slot[y] = static_cast<int32_t>(used++);
        return r;
    }
};

// A pass asks for its rows a few tokens ahead: a cached row read cold from memory costs more than
// computing it (~130 against ~85 ns at G = 69, session 18), so its lines are fetched early.
constexpr int64_t kBetaAhead = 4;
inline void beta_prefetch(const Grid& gr, int32_t y) {
    const BetaCache* bc = gr.beta_cache;
    if (!bc) return;
    const int32_t s = bc->slot[y];
    if (s < 0) return;
    const char* r = reinterpret_cast<const char*>(bc->rows.get() + static_cast<std::ptrdiff_t>(s) * bc->G);
    for (int64_t off = 0; off < bc->G * static_cast<int64_t>(sizeof(double)); off += 64) __builtin_prefetch(r + off);
}

// Token y's betas on gr (q[y] = x): from gr's cache if it has one, else computed into buf.
inline const double* beta_row(const Grid& gr, int32_t y, double x, double* buf) {
    if (gr.beta_cache) return gr.beta_cache->get(gr, y, x, buf);
    gr.betas(x, buf);
    return buf;
}

}  // namespace mdsd::race
