// vLLM V1's rejection sampler (vllm/v1/sample/rejection_sampler.py: rejection_sample with its
// greedy, random and recovered-token kernels) in vLLM's own tensor layout, one request at a time,
// with every random number an input: the output is a deterministic function of the arguments, so
// an engine port can be diffed token for token (docs/guide/engines.md).
//
// Per request b with drafts t = start..end-1 (start = cu[b-1], end = cu[b]):
//   greedy request: output argmax target_probs[t] at each position until it differs from the
//     draft (that argmax is still written), then stop; the bonus token if every draft matched.
//   random request: accept draft x at t iff q(x) > 0 and p(x) / q(x) >= uniform_probs[t]
//     (q(x) = 1 for n-gram drafts, draft_probs absent); at the first rejection write the recovered
//     token argmax_v r(v) / noise[b, v], r = max(p - q, 0) (n-gram: p with the draft zeroed),
//     noise ~ Exp(1) one row per request (vLLM's exponential race), and stop; bonus if all accepted.
#pragma once

#include <cstdint>
#include <vector>

#include "mdsd/engines/sampling.hpp"

namespace mdsd::engines {

// Row-major views of validated inputs (python/mdsd_fast/engines/ checks shapes and values).
struct ChainBatch {
    int64_t B = 0, T = 0, V = 0, max_spec_len = 0;
    const int64_t* draft_token_ids = nullptr;      // [T]
    const int64_t* cu_num_draft_tokens = nullptr;  // [B], inclusive prefix sums
    const double* draft_probs = nullptr;           // [T, V], or null: n-gram drafts (q = 1 at the draft)
    const double* target_probs = nullptr;          // [T, V], one row per draft position (no bonus rows)
    const int64_t* bonus_token_ids = nullptr;      // [B]
    const uint8_t* is_greedy = nullptr;            // [B], or null: no greedy request
    const double* uniform_probs = nullptr;         // [T]; may be null when every request is greedy
    const double* recovery_noise = nullptr;        // [B, V] Exp(1); may be null when every request is greedy
};

// vLLM's recovered token at draft position t of request b (sample_recovered_tokens_kernel).
inline int64_t recovered_token(const ChainBatch& c, int64_t b, int64_t t, std::vector<double>& score) {
    const int64_t V = c.V;
    const double* p = c.target_probs + t * V;
    const double* noise = c.recovery_noise + b * V;
    score.resize(V);
    for (int64_t v = 0; v < V; ++v) {
        const double r = c.draft_probs ? (p[v] > c.draft_probs[t * V + v] ? p[v] - c.draft_probs[t * V + v] : 0.0)
                                       : (v == c.draft_token_ids[t] ? 0.0 : p[v]);
        score[v] = r / noise[v];
    }
    return first_argmax(score.data(), V);
}

// Fills row b of out ([B, max_spec_len + 1], pre-filled with kPlaceholder).
inline void rejection_sample_request(const ChainBatch& c, int64_t b, int64_t* out, std::vector<double>& score) {
    const int64_t start = b ? c.cu_num_draft_tokens[b - 1] : 0;
    const int64_t n = c.cu_num_draft_tokens[b] - start;
    int64_t* row = out + b * (c.max_spec_len + 1);
    const int64_t V = c.V;
    const bool greedy = c.is_greedy && c.is_greedy[b];
    for (int64_t pos = 0; pos < n; ++pos) {
        const int64_t t = start + pos;
        const int64_t x = c.draft_token_ids[t];
        const double* p = c.target_probs + t * V;
        if (greedy) {
            const int64_t best = first_argmax(p, V);
            row[pos] = best;
            if (best != x) return;
            continue;
        }
        const double qx = c.draft_probs ? c.draft_probs[t * V + x] : 1.0;
        // vLLM rejects when q(x) = 0 (no division), and accepts on equality p/q = u.
        if (qx > 0.0 && p[x] / qx >= c.uniform_probs[t]) {
            row[pos] = x;
        } else {
            row[pos] = recovered_token(c, b, t, score);
            return;
        }
    }
    row[n] = c.bonus_token_ids[b];
}

}  // namespace mdsd::engines
