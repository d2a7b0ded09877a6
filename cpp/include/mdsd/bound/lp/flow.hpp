// The flow LP over draft sets (docs/theory/lp.md §7.2) in CSC form, and the cut certificate read off its dual.
//   maximize sum x(A,y)  s.t.  sum_{y in A} x(A,y) <= w_A,  sum_{A ni y} x(A,y) <= p(y),  x >= 0
// Rows: the sets (0 .. S-1), then the tokens that occur in some set (S .. S+T-1).
// Columns: one per edge (A, y), each with exactly two unit entries.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "mdsd/bound/lp/sets.hpp"

namespace mdsd {

struct FlowLP {
    int32_t num_col = 0, num_row = 0;
    std::vector<int32_t> a_start, a_index;  // HiGHS index type (HighsInt = int32)
    std::vector<double> row_upper;
    std::vector<int32_t> tokens;            // token id of token row S + j
};

inline FlowLP assemble_flow(const DraftSets& sets, const double* p, int64_t V) {
    const int64_t S = sets.num_sets();
    const int64_t E = static_cast<int64_t>(sets.tok.size());
    if (2 * E + S + V >= std::numeric_limits<int32_t>::max())
        throw TooLarge("the flow LP has more nonzeros than HiGHS's 32-bit index type allows");
    FlowLP lp;
    std::vector<int32_t> row_of(V, -1);
    for (int32_t t : sets.tok)
        if (row_of[t] < 0) row_of[t] = 0;
    for (int64_t i = 0; i < V; ++i)
        if (row_of[i] == 0) {
            row_of[i] = static_cast<int32_t>(S + lp.tokens.size());
            lp.tokens.push_back(static_cast<int32_t>(i));
        }
    lp.num_col = static_cast<int32_t>(E);
    lp.num_row = static_cast<int32_t>(S + lp.tokens.size());
    lp.a_start.resize(E + 1);
    lp.a_index.resize(2 * E);
    lp.row_upper.resize(lp.num_row);
    for (int64_t s = 0; s < S; ++s) {
        lp.row_upper[s] = sets.w[s];
        for (int64_t e = sets.ptr[s]; e < sets.ptr[s + 1]; ++e) {
            lp.a_start[e] = static_cast<int32_t>(2 * e);
            lp.a_index[2 * e] = static_cast<int32_t>(s);
            lp.a_index[2 * e + 1] = row_of[sets.tok[e]];
        }
    }
    lp.a_start[E] = static_cast<int32_t>(2 * E);
    for (std::size_t j = 0; j < lp.tokens.size(); ++j) lp.row_upper[S + j] = p[lp.tokens[j]];
    return lp;
}

// Cut value of H (given as a membership mask over token ids, p = 0 tokens counted as members):
// p(H) + sum_{A not subset of H} w_A, an upper bound on alpha* for every H (docs/theory/lp.md §7.3).
inline double cut_value(const DraftSets& sets, const double* p, int64_t V, const std::vector<char>& inH) {
    double val = 0.0;
    for (int64_t i = 0; i < V; ++i)
        if (inH[i]) val += p[i];
    for (int64_t s = 0; s < sets.num_sets(); ++s) {
        bool inside = true;
        for (int64_t e = sets.ptr[s]; e < sets.ptr[s + 1] && inside; ++e) inside = inH[sets.tok[e]] != 0;
        if (!inside) val += sets.w[s];
    }
    return val;
}

// Rounds a dual v (one value per token row) to the best threshold cut H_theta = {y : v_y >= theta}
// (docs/theory/lp.md §7.3): the expected cut over theta ~ U(0,1] is at most the dual objective, so the best
// threshold is no worse. Tokens with p = 0 join H for free. Returns the cut value; fills `H`.
inline double best_threshold_cut(const DraftSets& sets, const FlowLP& lp, const double* p, int64_t V, const double* v,
                                 std::vector<int64_t>& H) {
    const int64_t S = sets.num_sets();
    const int64_t T = static_cast<int64_t>(lp.tokens.size());
    std::vector<double> vt(T);
    std::vector<int32_t> row_of(V, -1);
    for (int64_t j = 0; j < T; ++j) {
        vt[j] = std::clamp(v[j], 0.0, 1.0);
        row_of[lp.tokens[j]] = static_cast<int32_t>(j);
    }
    // A set lies inside H_theta iff theta <= min_{y in A} v_y.
    std::vector<double> setmin(S);
    for (int64_t s = 0; s < S; ++s) {
        double m = 1.0;
        for (int64_t e = sets.ptr[s]; e < sets.ptr[s + 1]; ++e) m = std::min(m, vt[row_of[sets.tok[e]]]);
        setmin[s] = m;
    }
    // Candidate thresholds: every distinct v value, plus "above everything" (H = live part empty).
    std::vector<double> cand(vt);
    cand.push_back(2.0);
    std::sort(cand.begin(), cand.end());
    cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
    // Sweep theta upward: p-part = sum_{v_y >= theta} p_y, set-part = sum_{setmin < theta} w_A.
    std::vector<int64_t> tok_ord(T), set_ord(S);
    for (int64_t j = 0; j < T; ++j) tok_ord[j] = j;
    for (int64_t s = 0; s < S; ++s) set_ord[s] = s;
    std::sort(tok_ord.begin(), tok_ord.end(), [&](int64_t a, int64_t b) { return vt[a] < vt[b]; });
    std::sort(set_ord.begin(), set_ord.end(), [&](int64_t a, int64_t b) { return setmin[a] < setmin[b]; });
    double ppart = 0.0;
    for (int64_t j = 0; j < T; ++j) ppart += p[lp.tokens[j]];
    double wpart = 0.0, best = std::numeric_limits<double>::infinity(), best_theta = 2.0;
    int64_t it = 0, is = 0;
    for (double th : cand) {
        while (it < T && vt[tok_ord[it]] < th) ppart -= p[lp.tokens[tok_ord[it++]]];
        while (is < S && setmin[set_ord[is]] < th) wpart += sets.w[set_ord[is++]];
        const double val = ppart + wpart;
        if (val < best) {
            best = val;
            best_theta = th;
        }
    }
    H.clear();
    std::vector<char> inH(V, 0);
    for (int64_t j = 0; j < T; ++j)
        if (vt[j] >= best_theta) inH[lp.tokens[j]] = 1;
    for (int64_t i = 0; i < V; ++i)
        if (p[i] <= 0.0) inH[i] = 1;
    for (int64_t i = 0; i < V; ++i)
        if (inH[i]) H.push_back(i);
    // Re-evaluate exactly on the final set (the sweep's running sums are only for the search).
    return cut_value(sets, p, V, inH);
}

}  // namespace mdsd
