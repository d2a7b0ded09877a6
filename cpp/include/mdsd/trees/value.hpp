// Exact value of a drafted tree under per-node verifiers: L(i) = sum_c pi_i(token c) (1 + L(c)),
// pi_i the node verifier's exact output law given its tuple (RowBase::law). The reach probability
// of node c is the product of pi along its path; L(0) is their sum over non-root nodes. A node
// without a verifier (a leaf, or a "static" set: the deterministic-set rule) has pi_i = p_i.
// Each node prepares its own row (O(V) to O(V log V)) and reads one law row; nothing depends on
// which thread runs the tree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/trees/tree.hpp"
#include "mdsd/verifiers/registry.hpp"

namespace mdsd::trees {

// The verifier of one node: none (pi = p), or a registry kind under a draft scheme.
struct NodeVerifier {
    std::optional<verif::Kind> kind;
    verif::Drafter::Spec scheme = verif::Drafter::Iid;
};

// Fills reach (N,) and returns L(0). `law` is a scratch row of V doubles.
inline double tree_value(const TreeView& t, const NodeVerifier* nodes, const verif::wor::Options& wor_opt, bool naive,
                         double* reach, std::vector<double>& law, std::vector<int32_t>& tuple) {
    std::vector<double> accept(static_cast<std::size_t>(t.N), 0.0);  // pi_parent(token of the node)
    law.resize(static_cast<std::size_t>(t.V));
    for (int64_t i = 0; i < t.N; ++i) {
        const int64_t n = t.draws(i);
        if (n == 0) continue;
        const double* pi = t.p + i * t.V;
        if (nodes[i].kind) {
            try {
                auto row = verif::prepare_row(*nodes[i].kind, t.p + i * t.V, t.q + i * t.V, t.V, static_cast<int>(n),
                                              nodes[i].scheme, nullptr, wor_opt);
                tuple.resize(static_cast<std::size_t>(n));
                for (int64_t k = 0; k < n; ++k)
                    tuple[static_cast<std::size_t>(k)] = static_cast<int32_t>(t.token[t.draw_child[t.draw_ptr[i] + k]]);
                row->check(tuple.data());
                std::fill(law.begin(), law.end(), 0.0);
                row->law(tuple.data(), law.data(), naive);
            } catch (const std::invalid_argument& exc) {
                throw std::invalid_argument("node " + std::to_string(i) + ": " + exc.what());
            }
            pi = law.data();
        }
        for (int64_t k = t.draw_ptr[i]; k < t.draw_ptr[i + 1]; ++k) {
            const int64_t c = t.draw_child[k];
            accept[static_cast<std::size_t>(c)] = pi[t.token[c]];  // a repeat writes the same value
        }
    }
    reach[0] = 1.0;
    for (int64_t c = 1; c < t.N; ++c) reach[c] = reach[t.parent[c]] * accept[static_cast<std::size_t>(c)];
    std::vector<double> L(static_cast<std::size_t>(t.N), 0.0);
    for (int64_t c = t.N - 1; c >= 1; --c)  // children before parents
        L[static_cast<std::size_t>(t.parent[c])] +=
            accept[static_cast<std::size_t>(c)] * (1.0 + L[static_cast<std::size_t>(c)]);
    return L[0];
}

}  // namespace mdsd::trees
