// vLLM V1's rejection sampler (vllm/v1/sample/rejection_sampler.py: rejection_sample with its
// greedy, random and recovered-token kernels, and vLLM PR #46533's placeholder drafts) in vLLM's
// own tensor layout, one request at a time, with every random number an input: the output is a
// deterministic function of the arguments, so an engine port can be diffed token for token
// (docs/guide/engines.md).
//
// Per request b with drafts t = start..end-1 (start = cu[b-1], end = cu[b]):
//   greedy request: output argmax target_probs[t] at each position until it differs from the
//     draft (that argmax is still written), then stop; the bonus token if every draft matched.
//   random request: accept draft x at t iff x != -1, q(x) > 0 and p(x) / q(x) >= uniform_probs[t]
//     (q(x) = 1 for n-gram drafts, draft_probs absent); at the first rejection write the recovered
//     token argmax_v r(v) / noise[b, v], r = max(p - q, 0) (n-gram: p with the draft zeroed),
//     noise ~ Exp(1) one row per request (vLLM's exponential race), and stop; bonus if all accepted.
//   A draft id of -1 (vLLM's placeholder) is always rejected: it is never an index.
//
// The probability rows are float32 or float64 (P), the noise float32 or float64 (E), read in place
// and widened to float64 entry by entry, so a float32 input gives the bits of its float64
// conversion. The rows a request owns are validated in the request's own pass (validate.hpp's
// row_sum: finite, non-negative, the sum within tol of 1; a draft row may be all zero): a broken
// row is recorded, not thrown, so the error reported does not depend on the thread count.
#pragma once

#include <cmath>
#include <cstdint>

#include "mdsd/engines/sampling.hpp"
#include "mdsd/inputs/validate.hpp"

namespace mdsd::engines {

// Row-major views; rows of target_probs / draft_probs / recovery_noise are `*_stride` entries
// apart, each row contiguous. Ids and counts arrive checked by the binding (bindings/engines.cpp).
template <class P, class E>
struct ChainBatch {
    int64_t B = 0, T = 0, V = 0, max_spec_len = 0;
    const int64_t* draft_token_ids = nullptr;      // [T], in [-1, V)
    const int64_t* cu_num_draft_tokens = nullptr;  // [B], inclusive prefix sums
    const P* draft_probs = nullptr;                // [T, V], or null: n-gram drafts (q = 1 at the draft)
    const P* target_probs = nullptr;               // [T, V], one row per draft position (no bonus rows)
    int64_t draft_stride = 0, target_stride = 0, noise_stride = 0;
    const int64_t* bonus_token_ids = nullptr;  // [B]
    const uint8_t* is_greedy = nullptr;        // [B], or null: no greedy request
    const double* uniform_probs = nullptr;     // [T]; may be null when every request is greedy
    const E* recovery_noise = nullptr;         // [B, V] Exp(1); may be null when every request is greedy
    double tol = 1e-4;                         // the row-sum tolerance
};

// The first broken row of each input within one request (row -1: none). kind: validate::Status.
struct ChainErrors {
    int64_t row[4] = {-1, -1, -1, -1};  // target_probs, draft_probs, uniform_probs, recovery_noise
    int kind[4] = {0, 0, 0, 0};
    double value[4] = {0.0, 0.0, 0.0, 0.0};
};

namespace detail {

// The plain float64 sum of x[0, V) and whether every entry lies in [0, DBL_MAX] (NaN fails); four
// partial sums (two SSE2 registers), the float32 entries widened exactly.
template <class P>
inline double plain_sum(const P* x, int64_t V, bool& ok) {
    constexpr double big = validate::detail::kBig;
    int64_t v = 0;
    double s = 0.0;
#ifdef MDSD_SSE2
    __m128d s0 = _mm_setzero_pd(), s1 = _mm_setzero_pd();
    __m128d in = _mm_castsi128_pd(_mm_set1_epi64x(-1));
    const __m128d zero = _mm_setzero_pd(), top = _mm_set1_pd(big);
    for (; v + 4 <= V; v += 4) {
        __m128d a, b;
        if constexpr (sizeof(P) == 4) {
            const __m128 f = _mm_loadu_ps(reinterpret_cast<const float*>(x + v));
            a = _mm_cvtps_pd(f);
            b = _mm_cvtps_pd(_mm_movehl_ps(f, f));
        } else {
            a = _mm_loadu_pd(reinterpret_cast<const double*>(x + v));
            b = _mm_loadu_pd(reinterpret_cast<const double*>(x + v + 2));
        }
        in = _mm_and_pd(in, _mm_and_pd(_mm_and_pd(_mm_cmpge_pd(a, zero), _mm_cmple_pd(a, top)),
                                       _mm_and_pd(_mm_cmpge_pd(b, zero), _mm_cmple_pd(b, top))));
        s0 = _mm_add_pd(s0, a);
        s1 = _mm_add_pd(s1, b);
    }
    double h[4];
    _mm_storeu_pd(h, s0);
    _mm_storeu_pd(h + 2, s1);
    s = (h[0] + h[2]) + (h[1] + h[3]);
    ok = _mm_movemask_pd(in) == 3;
#else
    ok = true;
#endif
    for (; v < V; ++v) {
        const double a = x[v];
        ok = ok && a >= 0.0 && a <= big;
        s += a;
    }
    return s;
}

}  // namespace detail

// validate::Status of one probability row (value: the sum, or the negative entry). The engines use
// rows as given, so the sum only has to meet a tolerance: one plain vector pass decides the rows
// it finds within it; validate::row_sum (the exact sum) decides the others and names the first
// broken rule.
template <class P>
inline int check_row(const P* x, int64_t V, double tol, bool zero_ok, double& value) {
    bool ok = false;
    const double s = detail::plain_sum(x, V, ok);
    if (ok && (std::fabs(s - 1.0) <= tol || (zero_ok && s == 0.0))) return validate::kOk;
    int status = validate::kOk;
    const double exact = validate::row_sum(x, V, status, value);
    if (status != validate::kOk) return status;
    value = exact;
    return (std::fabs(exact - 1.0) <= tol || (zero_ok && exact == 0.0)) ? validate::kOk : validate::kOffSum;
}

// vLLM's recovered token at draft position t of request b (sample_recovered_tokens_kernel),
// the first argmax of r / noise computed on the fly.
template <class P, class E>
inline int64_t recovered_token(const ChainBatch<P, E>& c, int64_t b, int64_t t) {
    const P* p = c.target_probs + t * c.target_stride;
    const P* q = c.draft_probs ? c.draft_probs + t * c.draft_stride : nullptr;
    const E* noise = c.recovery_noise + b * c.noise_stride;
    const int64_t x = c.draft_token_ids[t];
    int64_t best = 0;
    double top = 0.0;
    for (int64_t v = 0; v < c.V; ++v) {
        const double pv = p[v];
        double r;
        if (q) {
            const double qv = q[v];
            r = pv > qv ? pv - qv : 0.0;
        } else {
            r = v == x ? 0.0 : pv;
        }
        const double s = r / static_cast<double>(noise[v]);
        if (v == 0 || s > top) {
            top = s;
            best = v;
        }
    }
    return best;
}

// Validates the rows request b owns and fills row b of out ([B, max_spec_len + 1], pre-filled
// with kPlaceholder); a request with a broken row is left unsampled (the call raises).
template <class P, class E, class Out>
inline void rejection_sample_request(const ChainBatch<P, E>& c, int64_t b, Out* out, ChainErrors& err) {
    const int64_t start = b ? c.cu_num_draft_tokens[b - 1] : 0;
    const int64_t n = c.cu_num_draft_tokens[b] - start;
    const int64_t V = c.V;
    for (int64_t t = start; t < start + n; ++t) {
        double value = 0.0;
        int k = check_row(c.target_probs + t * c.target_stride, V, c.tol, false, value);
        if (k && err.row[0] < 0) err.row[0] = t, err.kind[0] = k, err.value[0] = value;
        if (c.draft_probs) {
            k = check_row(c.draft_probs + t * c.draft_stride, V, c.tol, true, value);
            if (k && err.row[1] < 0) err.row[1] = t, err.kind[1] = k, err.value[1] = value;
        }
    }
    const bool greedy = c.is_greedy && c.is_greedy[b];
    if (c.recovery_noise) {
        const E* e = c.recovery_noise + b * c.noise_stride;
        bool ok = true;
        for (int64_t v = 0; v < V; ++v) {
            const double x = e[v];
            ok &= x > 0.0 && x <= validate::detail::kBig;
        }
        if (!ok) err.row[3] = b, err.kind[3] = validate::kNonFinite;
    }
    if (c.uniform_probs)
        for (int64_t t = start; t < start + n && err.row[2] < 0; ++t) {
            const double u = c.uniform_probs[t];
            if (!(u >= 0.0 && u < 1.0)) err.row[2] = t, err.kind[2] = validate::kOffSum, err.value[2] = u;
        }
    if (err.row[0] >= 0 || err.row[1] >= 0 || err.row[2] >= 0 || err.row[3] >= 0) return;
    Out* row = out + b * (c.max_spec_len + 1);
    for (int64_t pos = 0; pos < n; ++pos) {
        const int64_t t = start + pos;
        const int64_t x = c.draft_token_ids[t];
        const P* p = c.target_probs + t * c.target_stride;
        if (greedy) {
            const int64_t top = first_argmax(p, V);
            row[pos] = static_cast<Out>(top);
            if (top != x) return;
            continue;
        }
        const bool accept = [&] {
            if (x == kPlaceholder) return false;  // vLLM PR #46533: never accepted, never an index
            const double qx = c.draft_probs ? static_cast<double>(c.draft_probs[t * c.draft_stride + x]) : 1.0;
            // vLLM rejects when q(x) = 0 (no division), and accepts on equality p/q = u.
            return qx > 0.0 && static_cast<double>(p[x]) / qx >= c.uniform_probs[t];
        }();
        if (accept) {
            row[pos] = static_cast<Out>(x);
        } else {
            row[pos] = static_cast<Out>(recovered_token(c, b, t));
            return;
        }
    }
    row[n] = static_cast<Out>(c.bonus_token_ids[b]);
}

}  // namespace mdsd::engines
