// The two deterministic sampling primitives the engines' kernels use, written once: the first
// argmax (torch.argmax, triton's tl.argmax: lowest index on ties) and the inverse-CDF draw of
// flashinfer's DeviceSamplingFromProb (SGLang's final sampling). Sums run left to right in float64;
// an engine sums in float32 blocks, so the two can differ when a uniform lands within rounding of
// a CDF step (docs/guide/engines.md).
#pragma once

#include <cstdint>
#include <cstring>

namespace mdsd::engines {

// vLLM's and SGLang's "no token here" (-1).
constexpr int64_t kPlaceholder = -1;

// Index of the largest x[v], the lowest index on ties (T float or double, compared widened).
template <class T>
inline int64_t first_argmax(const T* x, int64_t V) {
    int64_t best = 0;
    double top = V ? static_cast<double>(x[0]) : 0.0;
    for (int64_t v = 1; v < V; ++v)
        if (static_cast<double>(x[v]) > top) top = x[v], best = v;
    return best;
}

// The smallest v with w[v] > 0 and w[0] + ... + w[v] > coin * (w[0] + ... + w[V-1]), w >= 0 unnormalised.
// When no v qualifies because coin * total rounded up to total, the last v with w[v] > 0
// (flashinfer's last_valid_id, DeviceSamplingFromProb since flashinfer PR #923); with zero mass,
// -1: the caller picks its engine's fallback (V - 1, the initial sampled_id, or SGLang's last
// rejected child).
template <class T>
inline int64_t inverse_cdf(const T* w, int64_t V, double coin) {
    double total = 0.0;
    for (int64_t v = 0; v < V; ++v) total += static_cast<double>(w[v]);
    const double u = coin * total;
    double acc = 0.0;
    int64_t last_valid = -1;
    for (int64_t v = 0; v < V; ++v) {
        const double x = w[v];
        acc += x;
        if (x > 0.0) {
            if (acc > u) return v;
            last_valid = v;
        }
    }
    return last_valid;
}

// The IEEE-754 binary64 bits of x: the seed of a registry verifier's node stream (tree.hpp).
inline uint64_t double_bits(double x) {
    uint64_t b = 0;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

}  // namespace mdsd::engines
