// Ratio order of the draft support: the sort behind every sorted-prefix (dual) kernel.
//
// Tokens with q = 0 are dropped (they have ratio +inf and never help a prefix, docs/theory.md §4.2);
// tokens with p = 0 get ratio 0 and come first. The sort is a stable LSD radix sort on the
// IEEE bit pattern of the ratio (non-negative doubles order like their uint64 bits), so ties
// keep token-id order and the order -- hence the certificate -- is deterministic.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace mdsd {

struct OrderWorkspace {
    std::vector<uint64_t> keys, keys_tmp;
    std::vector<int32_t> idx, idx_tmp;
};

// The sort key of a ratio r >= 0: its IEEE bits, which order like r.
inline uint64_t key_bits(double r) {
    uint64_t k;
    std::memcpy(&k, &r, sizeof k);
    return k;
}

// Fills ws.keys[0, K) and ws.idx[0, K) with the ratio keys of the support of q (q > 0), in token
// order: the IEEE bits of p / q (or of p / (q 2^64), see below: the same order). Returns K.
inline int64_t ratio_keys(const double* p, const double* q, int64_t V, OrderWorkspace& ws) {
    ws.keys.resize(V);
    ws.idx.resize(V);
    int64_t K = 0;
    bool overflow = false;
    for (int64_t i = 0; i < V; ++i) {
        if (q[i] > 0.0) {
            const double r = p[i] / q[i];
            overflow |= r > std::numeric_limits<double>::max();
            ws.keys[K] = key_bits(r);
            ws.idx[K] = static_cast<int32_t>(i);
            ++K;
        }
    }
    // p / q overflows to +inf for subnormal q, and every such token would tie (a wrong order and
    // a wrong alpha*). Then all ratios are taken as p / (q 2^64): the same order, since the factor
    // is common and exact, and at most 2e323 / 2^64 ~ 1e304. Ratios below ~1e-304 (p < 1e-304)
    // may tie at 0 instead; their p is too small to move alpha*.
    if (overflow) {
        for (int64_t j = 0; j < K; ++j) {
            const int32_t i = ws.idx[j];
            ws.keys[j] = key_bits(p[i] / std::ldexp(q[i], 64));
        }
    }
    return K;
}

// Fills `order` with the support of q (q > 0) sorted by ascending p/q. Returns its length K.
inline int64_t ratio_order(const double* p, const double* q, int64_t V, OrderWorkspace& ws,
                           std::vector<int32_t>& order) {
    const int64_t K = ratio_keys(p, q, V, ws);
    order.resize(K);
    if (K < 256) {
        // Small supports: a comparison sort beats the radix passes.
        std::vector<int32_t> pos(K);
        for (int64_t i = 0; i < K; ++i) pos[i] = static_cast<int32_t>(i);
        std::stable_sort(pos.begin(), pos.end(), [&](int32_t a, int32_t b) { return ws.keys[a] < ws.keys[b]; });
        for (int64_t i = 0; i < K; ++i) order[i] = ws.idx[pos[i]];
        return K;
    }
    constexpr int kBits = 11, kBuckets = 1 << kBits, kPasses = 6;  // 6 x 11 bits >= 64
    std::array<std::array<uint32_t, kBuckets>, kPasses> hist{};
    for (int64_t i = 0; i < K; ++i) {
        uint64_t k = ws.keys[i];
        for (int d = 0; d < kPasses; ++d) ++hist[d][(k >> (d * kBits)) & (kBuckets - 1)];
    }
    ws.keys_tmp.resize(K);
    ws.idx_tmp.resize(K);
    uint64_t* ks = ws.keys.data();
    int32_t* is = ws.idx.data();
    uint64_t* kd = ws.keys_tmp.data();
    int32_t* id = ws.idx_tmp.data();
    for (int d = 0; d < kPasses; ++d) {
        auto& h = hist[d];
        // A digit shared by every key leaves the order unchanged: skip the pass.
        if (h[(ks[0] >> (d * kBits)) & (kBuckets - 1)] == static_cast<uint32_t>(K)) continue;
        uint32_t sum = 0;
        for (int b = 0; b < kBuckets; ++b) {
            uint32_t c = h[b];
            h[b] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < K; ++i) {
            uint32_t dst = h[(ks[i] >> (d * kBits)) & (kBuckets - 1)]++;
            kd[dst] = ks[i];
            id[dst] = is[i];
        }
        std::swap(ks, kd);
        std::swap(is, id);
    }
    std::memcpy(order.data(), is, K * sizeof(int32_t));
    return K;
}

}  // namespace mdsd
