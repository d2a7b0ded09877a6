// The token-tree contract of SGLang's tree_speculative_sampling_target_only (sgl-kernel,
// speculative_sampling.cuh, from flashinfer) and MLC-LLM, one request at a time, every random
// number an input (docs/guide/engines.md).
//
// A request is a tree of N nodes; node 0 is the root (the last verified token). Node i's children
// are retrive_next_token[i], then retrive_next_sibling of that child, and so on (-1 ends a list);
// candidates[i] is node i's token; target_probs[i] (draft_probs[i]) is the target's (draft's)
// next-token distribution after node i, so node i's children are verified against row i.
// Outputs: predicts (flat [B * N], indexed by retrive_index): at every accepted node the token
// that follows it; accept_index [B, num_spec]: retrive_index of the root and of each accepted
// node (-1 after); accept_token_num [B]: accepted nodes, the root not counted.
//
// Two rules walk the tree:
//   SGLang's own (sglang_request): a coin per node, uniform_samples[i]; children are tried in
//     sibling order, accumulating p of their tokens, and child c is accepted when
//     coin <= acc / threshold_acc or p(token) >= threshold_single; a rejected child's token is
//     removed from the final residual. At the last accepted node the final token is drawn by
//     inverse CDF with uniform_samples_for_final_sampling from max(p - d, 0), d = draft_probs
//     with the rejected children's entries set to p (zeros in SGLang: target-only), or from p
//     alone when the depth limit was reached. Thresholds (1, 1) are lossless.
//   A registry verifier (registry_request): at each node the children's tokens are the draft
//     tuple of p = target_probs[i], q = draft_probs[i] (both renormalised); the verifier's output
//     is accepted when it is a child (the first child holding it) and ends the step otherwise.
//     Its randomness is the stream Rng(double_bits(uniform_samples[i]), i) (mdsd/core/rng.hpp).
//     At a leaf or the depth limit the final token is the inverse-CDF draw from p.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/engines/sampling.hpp"
#include "mdsd/core/limits.hpp"
#include "mdsd/core/rng.hpp"
#include "mdsd/verifiers/registry.hpp"

namespace mdsd::engines {

// Row-major views of validated inputs (python/mdsd_fast/engines/ checks shapes, id ranges and
// uniforms; the tree shape is checked here).
struct TreeBatch {
    int64_t B = 0, N = 0, V = 0;
    int64_t num_spec = 0;                           // accept_index width: at most num_spec - 1 accepted nodes
    const int64_t* candidates = nullptr;            // [B, N]
    const int64_t* retrive_index = nullptr;         // [B, N], distinct values in [0, B * N)
    const int64_t* next_token = nullptr;            // [B, N], first child or -1
    const int64_t* next_sibling = nullptr;          // [B, N], next sibling or -1
    const double* uniform_samples = nullptr;        // [B, N]
    const double* uniform_final = nullptr;          // [B]
    const double* target_probs = nullptr;           // [B, N, V]
    const double* draft_probs = nullptr;            // [B, N, V], or null (zeros, SGLang's usage)
};

struct TreeOut {
    int64_t* predicts = nullptr;      // [B * N], pre-filled with kPlaceholder
    int64_t* accept_index = nullptr;  // [B, num_spec], pre-filled with kPlaceholder
    int64_t* accept_num = nullptr;    // [B]
};

inline std::string where(int64_t b, int64_t node) {
    return "request " + std::to_string(b) + ", node " + std::to_string(node);
}

// Depth (edges on the longest root path) of request b's tree; throws std::invalid_argument when
// a node is reached twice from the root (a cycle, a shared child, or the root as a child), which
// would make an engine's kernel loop or overwrite its outputs.
inline int64_t tree_depth(const TreeBatch& t, int64_t b, std::vector<int64_t>& seen, std::vector<int64_t>& stack) {
    const int64_t base = b * t.N;
    seen.assign(t.N, -1);  // depth of each reached node
    seen[0] = 0;
    stack.assign(1, 0);
    int64_t depth = 0;
    while (!stack.empty()) {
        const int64_t i = stack.back();
        stack.pop_back();
        for (int64_t c = t.next_token[base + i]; c != -1; c = t.next_sibling[base + c]) {
            if (seen[c] != -1)
                throw std::invalid_argument("retrive_next_token, retrive_next_sibling: " + where(b, c) +
                                            " is reached twice from the root (a cycle or a shared child)");
            seen[c] = seen[i] + 1;
            depth = seen[c] > depth ? seen[c] : depth;
            stack.push_back(c);
        }
    }
    return depth;
}

// SGLang's rule (TreeSpeculativeSamplingTargetOnly) for request b.
inline void sglang_request(const TreeBatch& t, int64_t b, double threshold_single, double threshold_acc,
                           const TreeOut& o, std::vector<double>& resid, std::vector<int64_t>& rejected) {
    const int64_t N = t.N, V = t.V, base = b * N;
    threshold_acc = threshold_acc > 1e-9 ? threshold_acc : 1e-9;  // SGLang's cap, against division by 0
    double prob_acc = 0.0;
    int64_t row = 0;  // the node whose children are being tried
    double coin = t.uniform_samples[base];
    int64_t last = t.retrive_index[base];
    o.accept_index[b * t.num_spec] = last;
    int64_t accepted = 0;
    int64_t cur = 0;
    rejected.clear();
    for (int64_t j = 1; j < t.num_spec; ++j) {
        cur = t.next_token[base + cur];
        while (cur != -1) {
            const int64_t tok = t.candidates[base + cur];
            const double ps = t.target_probs[(base + row) * V + tok];
            prob_acc += ps;
            if (coin <= prob_acc / threshold_acc || ps >= threshold_single) {
                prob_acc = 0.0;
                row = cur;
                coin = t.uniform_samples[base + cur];
                o.predicts[last] = tok;
                ++accepted;
                last = t.retrive_index[base + cur];
                o.accept_index[b * t.num_spec + accepted] = last;
                rejected.clear();
                break;
            }
            rejected.push_back(tok);  // SGLang writes draft_probs[row, tok] = p(tok): out of the residual
            cur = t.next_sibling[base + cur];
        }
        if (cur == -1) break;
    }
    o.accept_num[b] = accepted;
    const double* p = t.target_probs + (base + row) * V;
    resid.assign(p, p + V);
    if (accepted != t.num_spec - 1) {  // at the depth limit there is no draft row for the bonus
        if (t.draft_probs) {
            const double* d = t.draft_probs + (base + row) * V;
            for (int64_t v = 0; v < V; ++v) resid[v] = p[v] > d[v] ? p[v] - d[v] : 0.0;
        }
        for (int64_t tok : rejected) resid[tok] = 0.0;
    }
    o.predicts[last] = inverse_cdf(resid.data(), V, t.uniform_final[b]);
}

// A registry verifier applied at every node.
struct RegistryRule {
    verif::Kind kind = verif::Kind::Sd;
    int n_min = 1, n_max = static_cast<int>(limits::kMaxDrafts);  // children a node may have (the verifier's n range)
    verif::Drafter::Spec scheme = verif::Drafter::Iid;
    verif::wor::Options wor_opt;
};

struct TreeScratch {
    std::vector<double> p, q;
    std::vector<int64_t> kids, seen, stack, rejected;
    std::vector<int32_t> tuple;
};

// A copy of a distribution row divided by its mass (the verifiers' plans assume sum 1).
inline void normalised(const double* x, int64_t V, std::vector<double>& out, const char* name) {
    double s = 0.0;
    for (int64_t v = 0; v < V; ++v) s += x[v];
    if (!(s > 0.0)) throw std::invalid_argument(std::string(name) + ": the node's row has zero mass");
    out.resize(V);
    for (int64_t v = 0; v < V; ++v) out[v] = x[v] / s;
}

inline void registry_request(const TreeBatch& t, int64_t b, const RegistryRule& rule, const TreeOut& o,
                             TreeScratch& ws) {
    const int64_t N = t.N, V = t.V, base = b * N;
    int64_t node = 0;
    int64_t last = t.retrive_index[base];
    o.accept_index[b * t.num_spec] = last;
    int64_t accepted = 0;
    while (accepted < t.num_spec - 1) {
        ws.kids.clear();
        ws.tuple.clear();
        for (int64_t c = t.next_token[base + node]; c != -1; c = t.next_sibling[base + c]) {
            ws.kids.push_back(c);
            ws.tuple.push_back(static_cast<int32_t>(t.candidates[base + c]));
        }
        if (ws.kids.empty()) break;
        int32_t y = -1;
        try {
            normalised(t.target_probs + (base + node) * V, V, ws.p, "target_probs");
            normalised(t.draft_probs + (base + node) * V, V, ws.q, "draft_probs");
            const int n = static_cast<int>(ws.kids.size());
            if (n < rule.n_min || n > rule.n_max)
                throw std::invalid_argument("n: the verifier handles " + std::to_string(rule.n_min) + " to " +
                                            std::to_string(rule.n_max) + " drafts, the node has " + std::to_string(n) +
                                            " children");
            auto plan =
                verif::prepare_row(rule.kind, ws.p.data(), ws.q.data(), V, n, rule.scheme, nullptr, rule.wor_opt);
            plan->check(ws.tuple.data());
            Rng rng(double_bits(t.uniform_samples[base + node]), static_cast<uint64_t>(node));
            y = plan->verify(ws.tuple.data(), rng);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(where(b, node) + " (its children are the drafts): " + e.what());
        }
        o.predicts[last] = y;
        std::size_t k = 0;
        while (k < ws.kids.size() && ws.tuple[k] != y) ++k;
        if (k == ws.kids.size()) {  // the verifier's own residual draw ends the step
            o.accept_num[b] = accepted;
            return;
        }
        node = ws.kids[k];
        last = t.retrive_index[base + node];
        ++accepted;
        o.accept_index[b * t.num_spec + accepted] = last;
    }
    o.accept_num[b] = accepted;
    o.predicts[last] = inverse_cdf(t.target_probs + (base + node) * V, V, t.uniform_final[b]);
}

}  // namespace mdsd::engines
