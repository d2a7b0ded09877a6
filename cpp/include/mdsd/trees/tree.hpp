// A drafted tree for one target call, as the arrays of the tree contract (docs/guide/trees.md): node 0
// the root, parent[i] < i (topological ids), node i's ordered draft tuple draw_child[draw_ptr[i] ..
// draw_ptr[i + 1]) as child ids. The Python layer validates fully; check() repeats what the value
// recursion relies on, so a bad array is an error here too, never a wrong read.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mdsd::trees {

struct TreeView {
    int64_t N = 0, V = 0;
    const int64_t* parent = nullptr;      // (N,)
    const int64_t* token = nullptr;       // (N,)
    const double* p = nullptr;            // (N, V)
    const double* q = nullptr;            // (N, V)
    const int64_t* draw_ptr = nullptr;    // (N + 1,), offsets into draw_child from 0
    const int64_t* draw_child = nullptr;  // (draw_ptr[N],) child ids

    int64_t draws(int64_t i) const { return draw_ptr[i + 1] - draw_ptr[i]; }

    void check() const {
        auto fail = [](int64_t i, const std::string& what) {
            throw std::invalid_argument("node " + std::to_string(i) + ": " + what);
        };
        if (N < 1 || parent[0] != -1) fail(0, "the root must exist and have parent -1");
        if (draw_ptr[0] != 0) fail(0, "draw_ptr must start at 0");
        for (int64_t i = 1; i < N; ++i) {
            if (parent[i] < 0 || parent[i] >= i) fail(i, "parent must be an earlier node");
            if (token[i] < 0 || token[i] >= V) fail(i, "token outside [0, V)");
        }
        for (int64_t i = 0; i < N; ++i) {
            if (draw_ptr[i + 1] < draw_ptr[i]) fail(i, "draw_ptr must not decrease");
            for (int64_t k = draw_ptr[i]; k < draw_ptr[i + 1]; ++k) {
                const int64_t c = draw_child[k];
                if (c < 1 || c >= N || parent[c] != i) fail(i, "its tuple lists a node that is not its child");
            }
        }
    }
};

}  // namespace mdsd::trees
