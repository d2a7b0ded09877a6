// Native exact max-flow on the draft-set network (docs/theory/transport.md §2.2), in float64:
//   source -> set A (capacity w_A) -> token y in A (capacity inf) -> sink (capacity p_y),
// by push_relabel.hpp's BipartiteFlow.
//
// With a certificate H (the sorted-prefix H* of the dual, docs/theory/verifiers.md §8.10) complementary slackness
// splits the problem in two networks that both must be *saturated*, so no excess ever has to be
// proven unroutable (that proof is where push-relabel spends its time on this network):
//   outer: sets meeting A = V \ H send all their mass to their A tokens (left = sets);
//   inner: tokens of H are filled by the sets inside H (left = tokens, right = sets: reversed).
// If either fails to saturate, H was not a minimum cut and the plain max-flow runs instead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/bound/lp/flow.hpp"
#include "mdsd/bound/lp/push_relabel.hpp"
#include "mdsd/bound/lp/sets.hpp"
#include "mdsd/core/parallel.hpp"

namespace mdsd {

struct MaxFlowResult {
    double value = 0.0;       // accepted mass: sum of token -> sink flows
    std::vector<double> x;    // flow on each set -> token edge, aligned with DraftSets::tok
    std::vector<int64_t> H;   // certificate: sorted token ids (p = 0 tokens included)
    double cut = 0.0;         // p(H) + sum_{A not inside H} w_A
    bool used_hint = false;   // the certificate split was used (else the plain max-flow ran)
    int64_t pushes = 0, relabels = 0, global_relabels = 0;
};

namespace detail {

inline void finish(MaxFlowResult& r, const DraftSets& sets, const double* p, int64_t V, std::vector<char>& inH) {
    for (int64_t i = 0; i < V; ++i)
        if (p[i] <= 0.0) inH[i] = 1;
    r.H.clear();
    for (int64_t i = 0; i < V; ++i)
        if (inH[i]) r.H.push_back(i);
    r.cut = cut_value(sets, p, V, inH);
    r.value = 0.0;
    for (double v : r.x) r.value += v;
}

// The two saturated networks of the certificate split. Returns false if either is not saturated.
inline bool split_flow(const DraftSets& sets, const double* p, int64_t V, const std::vector<char>& inH,
                       MaxFlowResult& r) {
    const int64_t S = sets.num_sets();
    std::vector<int32_t> local(V, -1);  // token id -> index among A tokens or among H tokens
    // outer network: left = sets meeting A, right = A tokens
    std::vector<int64_t> optr{0}, oset, oedge;
    std::vector<int32_t> oadj;
    std::vector<double> osup, ocap;
    std::vector<int32_t> atok;
    optr.reserve(S + 1);
    osup.reserve(S);
    oset.reserve(S);
    oadj.reserve(sets.tok.size());
    oedge.reserve(sets.tok.size());
    // inner network (reversed): left = H tokens, right = sets inside H
    std::vector<int64_t> iset;
    std::vector<int32_t> htok;
    for (int64_t s = 0; s < S; ++s) {
        poll_interrupt();
        bool meets_a = false;
        for (int64_t e = sets.ptr[s]; e < sets.ptr[s + 1]; ++e) meets_a |= !inH[sets.tok[e]];
        if (!meets_a) {
            iset.push_back(s);
            continue;
        }
        for (int64_t e = sets.ptr[s]; e < sets.ptr[s + 1]; ++e) {
            const int32_t t = sets.tok[e];
            if (inH[t]) continue;
            if (local[t] < 0) {
                local[t] = static_cast<int32_t>(atok.size());
                atok.push_back(t);
            }
            oadj.push_back(local[t]);
            oedge.push_back(e);
        }
        optr.push_back(static_cast<int64_t>(oadj.size()));
        osup.push_back(sets.w[s]);
        oset.push_back(s);
    }
    for (int32_t t : atok) ocap.push_back(p[t]);
    // inner: transpose of the sets inside H
    std::vector<int64_t> hcount;
    for (int64_t k = 0; k < static_cast<int64_t>(iset.size()); ++k) {
        const int64_t s = iset[k];
        for (int64_t e = sets.ptr[s]; e < sets.ptr[s + 1]; ++e) {
            const int32_t t = sets.tok[e];
            if (local[t] < 0) {
                local[t] = static_cast<int32_t>(htok.size());
                htok.push_back(t);
                hcount.push_back(0);
            }
            ++hcount[local[t]];
        }
    }
    // every live token of H must be filled, so an H token in no inner set cannot be: not a cut
    for (int64_t i = 0; i < V; ++i)
        if (inH[i] && p[i] > 0.0 && local[i] < 0) return false;
    const int64_t Hn = static_cast<int64_t>(htok.size());
    std::vector<int64_t> iptr(Hn + 1, 0);
    for (int64_t j = 0; j < Hn; ++j) iptr[j + 1] = iptr[j] + hcount[j];
    std::vector<int32_t> iadj(iptr[Hn]);
    std::vector<int64_t> iedge(iptr[Hn]);
    std::vector<int64_t> pos(iptr.begin(), iptr.end() - 1);
    for (int64_t k = 0; k < static_cast<int64_t>(iset.size()); ++k) {
        const int64_t s = iset[k];
        for (int64_t e = sets.ptr[s]; e < sets.ptr[s + 1]; ++e) {
            const int32_t j = local[sets.tok[e]];
            iadj[pos[j]] = static_cast<int32_t>(k);
            iedge[pos[j]++] = e;
        }
    }
    std::vector<double> isup(Hn), icap(iset.size());
    for (int64_t j = 0; j < Hn; ++j) isup[j] = p[htok[j]];
    for (std::size_t k = 0; k < iset.size(); ++k) icap[k] = sets.w[iset[k]];

    BipartiteFlow outer(std::move(optr), std::move(oadj), std::move(osup), std::move(ocap));
    outer.run();
    for (double ex : outer.left_excess())
        if (ex > 0.0) return false;
    BipartiteFlow inner(std::move(iptr), std::move(iadj), std::move(isup), std::move(icap));
    inner.run();
    for (double ex : inner.left_excess())
        if (ex > 0.0) return false;
    r.x.assign(sets.tok.size(), 0.0);
    for (std::size_t k = 0; k < oedge.size(); ++k) r.x[oedge[k]] = outer.x[k];
    for (std::size_t k = 0; k < iedge.size(); ++k) r.x[iedge[k]] = inner.x[k];
    r.pushes = outer.pushes + inner.pushes;
    r.relabels = outer.relabels + inner.relabels;
    r.global_relabels = outer.global_relabels + inner.global_relabels;
    r.used_hint = true;
    (void)oset;
    return true;
}

}  // namespace detail

// Exact max-flow over the draft sets. hint (optional, size V): a candidate certificate H.
inline MaxFlowResult max_flow_sets(const DraftSets& sets, const double* p, int64_t V, const char* hint = nullptr) {
    MaxFlowResult r;
    if (hint) {
        std::vector<char> inH(hint, hint + V);
        for (int64_t i = 0; i < V; ++i)
            if (p[i] <= 0.0) inH[i] = 1;
        if (detail::split_flow(sets, p, V, inH, r)) {
            detail::finish(r, sets, p, V, inH);
            return r;
        }
        r = MaxFlowResult{};
    }
    // Right nodes: the tokens that occur in some set, in ascending id order.
    std::vector<int32_t> local(V, -1), tokens;
    for (int32_t t : sets.tok) local[t] = 0;
    for (int64_t i = 0; i < V; ++i)
        if (local[i] == 0) {
            local[i] = static_cast<int32_t>(tokens.size());
            tokens.push_back(static_cast<int32_t>(i));
        }
    std::vector<int32_t> adj(sets.tok.size());
    for (std::size_t e = 0; e < sets.tok.size(); ++e) adj[e] = local[sets.tok[e]];
    std::vector<double> cap(tokens.size());
    for (std::size_t j = 0; j < tokens.size(); ++j) cap[j] = p[tokens[j]];
    BipartiteFlow f(sets.ptr, std::move(adj), sets.w, std::move(cap));
    f.run();
    r.x = f.x;
    r.pushes = f.pushes;
    r.relabels = f.relabels;
    r.global_relabels = f.global_relabels;
    // Min cut from the labels: H = tokens that cannot reach the sink.
    std::vector<char> inH(V, 0);
    for (std::size_t j = 0; j < tokens.size(); ++j)
        if (f.right_cut_off(static_cast<int64_t>(j))) inH[tokens[j]] = 1;
    detail::finish(r, sets, p, V, inH);
    return r;
}

}  // namespace mdsd
