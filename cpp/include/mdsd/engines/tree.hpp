// The token-tree contract of SGLang's tree_speculative_sampling_target_only (TreeSpeculativeSamplingTargetOnly,
// from flashinfer) and MLC-LLM, one request at a time, every random number an input
// (docs/guide/engines.md).
//
// A request is a tree of N nodes; node 0 is the root (the last verified token). Node i's children
// are retrive_next_token[i], then retrive_next_sibling of that child, and so on (-1 ends a list);
// candidates[i] is node i's token; target_probs[i] (draft_probs[i]) is the target's (draft's)
// next-token distribution after node i, so node i's children are verified against row i.
// Outputs: predicts (flat [B * N], indexed by retrive_index): at every accepted node the token
// that follows it; accept_index [B, num_spec]: retrive_index of the root and of each accepted
// node (-1 after); accept_token_num [B]: accepted nodes, the root not counted.
//
// Three rules walk the tree:
//   SGLang's (sglang_request, Rule::Sglang), as of SGLang PR #35798 (sgl-project/sglang
//     python/sglang/kernels/jit/include/sgl_kernel/speculative/sampling.cuh at 3d7eaa8): a coin per
//     node, uniform_samples[i]; children are tried in sibling order, accumulating p of their
//     tokens, and child c is accepted when p(token) > 0 and (coin < acc / threshold_acc or
//     p(token) >= threshold_single); a rejected child's token is removed from the final residual.
//     At the last accepted node the final token is drawn by inverse CDF with
//     uniform_samples_for_final_sampling from max(p - d, 0), d = draft_probs with the rejected
//     children's entries set to p (zeros in SGLang: target-only), or from p alone when the depth
//     limit was reached; an empty residual gives the last rejected child with p > 0 (V - 1 when
//     there is none). Thresholds are rounded to float32, as SGLang's kernel takes them.
//   SGLang before PR #35798 (Rule::SglangPre35798; sgl-kernel/csrc/speculative/
//     speculative_sampling.cuh at 120affb): accepted when coin <= acc / threshold_acc or
//     p(token) >= threshold_single, a zero-probability token included; an empty residual gives V - 1.
//   A registry verifier (registry_request): at each node the children's tokens are the draft
//     tuple of p = target_probs[i], q = draft_probs[i] (both renormalised); the verifier's output
//     is accepted when it is a child (the first child holding it) and ends the step otherwise.
//     Its randomness is the stream Rng(double_bits(uniform_samples[i]), i) (mdsd/core/rng.hpp).
//     At a leaf or the depth limit the final token is the inverse-CDF draw from p.
// Probability rows are float32 or float64 (P), read in place and widened entry by entry; the rows
// of a request are validated in its own pass (tree_check), errors recorded per request.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/core/limits.hpp"
#include "mdsd/core/rng.hpp"
#include "mdsd/engines/sampling.hpp"
#include "mdsd/engines/vllm.hpp"
#include "mdsd/verifiers/registry.hpp"

namespace mdsd::engines {

enum class Rule { Sglang, SglangPre35798, Registry };

// Row-major views: ids, slots and uniforms checked by the binding (cpp/bindings/engines_tree.cpp;
// the tree shape and the probability rows are checked here); row (b, i) starts at (b * N + i) * stride.
template <class P>
struct TreeBatch {
    int64_t B = 0, N = 0, V = 0;
    int64_t num_spec = 0;                     // accept_index width: at most num_spec - 1 accepted nodes
    const int64_t* candidates = nullptr;      // [B, N]
    const int64_t* retrive_index = nullptr;   // [B, N], distinct values in [0, B * N)
    const int64_t* next_token = nullptr;      // [B, N], first child or -1
    const int64_t* next_sibling = nullptr;    // [B, N], next sibling or -1
    const double* uniform_samples = nullptr;  // [B, N]
    const double* uniform_final = nullptr;    // [B]
    const P* target_probs = nullptr;          // [B, N, V]
    const P* draft_probs = nullptr;           // [B, N, V], or null (zeros, SGLang's usage)
    int64_t target_stride = 0, draft_stride = 0;
    double tol = 1e-4;  // the row-sum tolerance
    const P* target_row(int64_t r) const { return target_probs + r * target_stride; }
    const P* draft_row(int64_t r) const { return draft_probs + r * draft_stride; }
};

struct TreeOut {
    int32_t* predicts = nullptr;      // [B * N], pre-filled with kPlaceholder
    int32_t* accept_index = nullptr;  // [B, num_spec], pre-filled with kPlaceholder
    int32_t* accept_num = nullptr;    // [B]
};

// What tree_check found wrong in one request: the first broken row of target_probs and
// draft_probs (flat row b * N + i, -1: none; kind: validate::Status) and a node reached twice.
struct TreeErrors {
    int64_t row[2] = {-1, -1};
    int kind[2] = {0, 0};
    double value[2] = {0.0, 0.0};
    int64_t twice = -1;
};

inline std::string where(int64_t b, int64_t node) {
    return "request " + std::to_string(b) + ", node " + std::to_string(node);
}

// Validates request b's rows and returns the depth (edges on the longest root path) of its tree;
// a node reached twice from the root (a cycle, a shared child, or the root as a child), which
// would make an engine's kernel loop or overwrite its outputs, is recorded in err.twice.
template <class P>
inline int64_t tree_check(const TreeBatch<P>& t, int64_t b, std::vector<int64_t>& seen, std::vector<int64_t>& stack,
                          TreeErrors& err) {
    const int64_t base = b * t.N;
    for (int64_t i = 0; i < t.N; ++i) {
        double value = 0.0;
        int k = check_row(t.target_row(base + i), t.V, t.tol, false, value);
        if (k && err.row[0] < 0) err.row[0] = base + i, err.kind[0] = k, err.value[0] = value;
        if (t.draft_probs) {
            k = check_row(t.draft_row(base + i), t.V, t.tol, true, value);
            if (k && err.row[1] < 0) err.row[1] = base + i, err.kind[1] = k, err.value[1] = value;
        }
    }
    seen.assign(t.N, -1);  // depth of each reached node
    seen[0] = 0;
    stack.assign(1, 0);
    int64_t depth = 0;
    while (!stack.empty()) {
        const int64_t i = stack.back();
        stack.pop_back();
        for (int64_t c = t.next_token[base + i]; c != -1; c = t.next_sibling[base + c]) {
            if (seen[c] != -1) {
                err.twice = c;
                return depth;
            }
            seen[c] = seen[i] + 1;
            depth = seen[c] > depth ? seen[c] : depth;
            stack.push_back(c);
        }
    }
    return depth;
}

// SGLang's rule (TreeSpeculativeSamplingTargetOnly) for request b, as of SGLang PR #35798 or
// before it. Thresholds arrive rounded to float32 (the binding does it).
template <class P>
inline void sglang_request(const TreeBatch<P>& t, int64_t b, Rule rule, double threshold_single, double threshold_acc,
                           const TreeOut& o, std::vector<double>& resid, std::vector<int64_t>& rejected) {
    const int64_t N = t.N, V = t.V, base = b * N;
    const bool pre = rule == Rule::SglangPre35798;
    double prob_acc = 0.0;
    int64_t row = 0;  // the node whose children are being tried
    double coin = t.uniform_samples[base];
    int64_t last = t.retrive_index[base];
    o.accept_index[b * t.num_spec] = static_cast<int32_t>(last);
    int64_t accepted = 0;
    int64_t cur = 0;
    int64_t last_rejected = kPlaceholder;  // the last rejected child with p > 0 (PR #35798's fallback)
    rejected.clear();
    for (int64_t j = 1; j < t.num_spec; ++j) {
        cur = t.next_token[base + cur];
        while (cur != -1) {
            const int64_t tok = t.candidates[base + cur];
            const double ps = t.target_row(base + row)[tok];
            prob_acc += ps;
            const bool accept = pre ? (coin <= prob_acc / threshold_acc || ps >= threshold_single)
                                    : (ps > 0.0 && (coin < prob_acc / threshold_acc || ps >= threshold_single));
            if (accept) {
                prob_acc = 0.0;
                row = cur;
                coin = t.uniform_samples[base + cur];
                o.predicts[last] = static_cast<int32_t>(tok);
                ++accepted;
                last = t.retrive_index[base + cur];
                o.accept_index[b * t.num_spec + accepted] = static_cast<int32_t>(last);
                rejected.clear();
                last_rejected = kPlaceholder;
                break;
            }
            if (ps > 0.0) last_rejected = tok;
            rejected.push_back(tok);  // SGLang writes draft_probs[row, tok] = p(tok): out of the residual
            cur = t.next_sibling[base + cur];
        }
        if (cur == -1) break;
    }
    o.accept_num[b] = static_cast<int32_t>(accepted);
    const P* p = t.target_row(base + row);
    resid.resize(V);
    if (accepted != t.num_spec - 1 && t.draft_probs) {  // at the depth limit there is no draft row for the bonus
        const P* d = t.draft_row(base + row);
        for (int64_t v = 0; v < V; ++v) {
            const double pv = p[v], dv = d[v];
            resid[v] = pv > dv ? pv - dv : 0.0;
        }
    } else {
        for (int64_t v = 0; v < V; ++v) resid[v] = p[v];
    }
    if (accepted != t.num_spec - 1)
        for (int64_t tok : rejected) resid[tok] = 0.0;
    int64_t y = inverse_cdf(resid.data(), V, t.uniform_final[b]);
    if (y < 0) y = (!pre && last_rejected != kPlaceholder) ? last_rejected : V - 1;
    o.predicts[last] = static_cast<int32_t>(y);
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

// A float64 copy of a distribution row divided by its mass (the verifiers' plans assume sum 1).
template <class P>
inline void normalised(const P* x, int64_t V, std::vector<double>& out, const char* name) {
    double s = 0.0;
    for (int64_t v = 0; v < V; ++v) s += static_cast<double>(x[v]);
    if (!(s > 0.0)) throw std::invalid_argument(std::string(name) + ": the node's row has zero mass");
    out.resize(V);
    for (int64_t v = 0; v < V; ++v) out[v] = static_cast<double>(x[v]) / s;
}

template <class P>
inline void registry_request(const TreeBatch<P>& t, int64_t b, const RegistryRule& rule, const TreeOut& o,
                             TreeScratch& ws) {
    const int64_t N = t.N, V = t.V, base = b * N;
    int64_t node = 0;
    int64_t last = t.retrive_index[base];
    o.accept_index[b * t.num_spec] = static_cast<int32_t>(last);
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
            normalised(t.target_row(base + node), V, ws.p, "target_probs");
            normalised(t.draft_row(base + node), V, ws.q, "draft_probs");
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
            o.accept_num[b] = static_cast<int32_t>(accepted);
            return;
        }
        node = ws.kids[k];
        last = t.retrive_index[base + node];
        ++accepted;
        o.accept_index[b * t.num_spec + accepted] = static_cast<int32_t>(last);
    }
    o.accept_num[b] = static_cast<int32_t>(accepted);
    const int64_t y = inverse_cdf(t.target_row(base + node), V, t.uniform_final[b]);
    o.predicts[last] = static_cast<int32_t>(y < 0 ? V - 1 : y);
}

}  // namespace mdsd::engines
