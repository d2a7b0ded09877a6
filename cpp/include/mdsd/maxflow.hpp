// Native exact max-flow on the draft-set network (docs/theory.md §2.2), in float64:
//   source -> set A (capacity w_A) -> token y in A (capacity inf) -> sink (capacity p_y).
//
// BipartiteFlow is FIFO push-relabel with global relabelling for any network of this shape
// (left nodes with a supply, uncapacitated left -> right edges, right nodes with a capacity):
//   * a left node's edges are uncapacitated, so it discharges all its excess in one push;
//   * a greedy start (forced destinations first, then most room first) leaves little to repair;
//   * no integer scaling (OR-Tools needs capacities * 2^40): pushes move doubles exactly and
//     saturating pushes set the flow to the capacity exactly.
//
// With a certificate H (the sorted-prefix H* of the dual, docs/theory.md §8.10) complementary slackness
// splits the problem in two networks that both must be *saturated*, so no excess ever has to be
// proven unroutable (that proof is where push-relabel spends its time on this network):
//   outer: sets meeting A = V \ H send all their mass to their A tokens (left = sets);
//   inner: tokens of H are filled by the sets inside H (left = tokens, right = sets: reversed).
// If either fails to saturate, H was not a minimum cut and the plain max-flow runs instead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <numeric>
#include <vector>

#include "mdsd/flow.hpp"
#include "mdsd/parallel.hpp"
#include "mdsd/sets.hpp"

namespace mdsd {

class BipartiteFlow {
  public:
    // left i: supply sup[i], edges e in [lptr[i], lptr[i+1]) to right node adj[e]; right j: cap[j].
    BipartiteFlow(std::vector<int64_t> lptr, std::vector<int32_t> adj, std::vector<double> sup, std::vector<double> cap)
        : lptr_(std::move(lptr)), adj_(std::move(adj)), eL_(std::move(sup)), cap_(std::move(cap)) {
        L_ = static_cast<int64_t>(eL_.size());
        R_ = static_cast<int64_t>(cap_.size());
        E_ = static_cast<int64_t>(adj_.size());
        N_ = L_ + R_ + 2;
    }

    int64_t pushes = 0, relabels = 0, global_relabels = 0;
    std::vector<double> x;   // flow per edge
    std::vector<double> fy;  // flow right -> sink
    const std::vector<double>& left_excess() const { return eL_; }  // supply that found no route
    // After run(): right nodes that cannot reach the sink (the sink side of the min cut's complement).
    bool right_cut_off(int64_t j) const { return dR_[j] >= N_; }

    void run() {
        x.assign(E_, 0.0);
        fy.assign(R_, 0.0);
        eR_.assign(R_, 0.0);
        dL_.assign(L_, 0);
        dR_.assign(R_, 0);
        curL_.assign(L_, 0);
        curR_.assign(R_, 0);
        greedy_start();
        bool done = true;
        for (int64_t i = 0; i < L_ && done; ++i) done = eL_[i] <= 0.0;
        if (done) {  // the greedy start routed every supply: nothing to repair, nothing to prove
            dR_.assign(R_, 0);  // every supply reached the sink: the cut is the source edges, H = {}
            return;
        }
        build_transpose();
        global_relabel();
        std::deque<int64_t> active;  // node ids: left 0..L-1, right L..L+R-1
        inq_.assign(L_ + R_, 0);
        auto enqueue = [&](int64_t v) {
            if (!inq_[v]) {
                inq_[v] = 1;
                active.push_back(v);
            }
        };
        auto refill = [&]() {
            active.clear();
            std::fill(inq_.begin(), inq_.end(), 0);
            for (int64_t i = 0; i < L_; ++i)
                if (eL_[i] > 0.0 && dL_[i] < N_) enqueue(i);
            for (int64_t j = 0; j < R_; ++j)
                if (eR_[j] > 0.0 && dR_[j] < N_) enqueue(L_ + j);
        };
        refill();
        int64_t work = 0;
        const int64_t relabel_every = 6 * N_ + E_;
        while (!active.empty()) {
            poll_interrupt();  // KeyboardInterrupt (see parallel.hpp)
            const int64_t v = active.front();
            active.pop_front();
            inq_[v] = 0;
            if (v < L_) work += discharge_left(v, enqueue);
            else work += discharge_right(v - L_, enqueue);
            if (work > relabel_every) {
                work = 0;
                global_relabel();
                refill();
            }
        }
        global_relabel();
        // Make the preflow a flow: right-node excess goes back to the left nodes it came from.
        for (int64_t j = 0; j < R_; ++j)
            for (int64_t i = rptr_[j]; i < rptr_[j + 1] && eR_[j] > 0.0; ++i) {
                const int64_t e = redge_[i];
                const double d = std::min(eR_[j], x[e]);
                x[e] = (d == x[e]) ? 0.0 : x[e] - d;
                eR_[j] -= d;
                eL_[eleft_[e]] += d;
            }
    }

  private:
    void build_transpose() {
        eleft_.resize(E_);
        for (int64_t i = 0; i < L_; ++i)
            for (int64_t e = lptr_[i]; e < lptr_[i + 1]; ++e) eleft_[e] = static_cast<int32_t>(i);
        rptr_.assign(R_ + 1, 0);
        for (int64_t e = 0; e < E_; ++e) ++rptr_[adj_[e] + 1];
        for (int64_t j = 0; j < R_; ++j) rptr_[j + 1] += rptr_[j];
        redge_.resize(E_);
        std::vector<int64_t> fill(rptr_.begin(), rptr_.end() - 1);
        for (int64_t e = 0; e < E_; ++e) redge_[fill[adj_[e]]++] = e;
    }

    // Forced destinations first (left nodes with one edge), then the others, each sending its
    // supply to its right nodes with the most room left, largest first.
    void greedy_start() {
        std::vector<double> room(cap_);
        std::vector<int64_t> by_room;
        // Send as much of m as fits through edge e; returns what is left of m.
        auto fill = [&](int64_t e, double m) {
            const int32_t j = adj_[e];
            const double br = room[j];
            const double d = std::min(m, br);
            x[e] += d;
            room[j] = (d == br) ? 0.0 : br - d;
            return (d == m) ? 0.0 : m - d;
        };
        auto place = [&](int64_t i) {
            const int64_t b = lptr_[i], en = lptr_[i + 1];
            double m = eL_[i];
            if (en - b > 8) {
                // Many edges (a token of the reversed inner network meets thousands of sets):
                // sorting once by room is the same as repeatedly taking the most room, in
                // O(d log d) instead of O(d^2). Stable, so ties go to the lower edge as below.
                by_room.clear();
                for (int64_t e = b; e < en; ++e)
                    if (room[adj_[e]] > 0.0) by_room.push_back(e);
                std::stable_sort(by_room.begin(), by_room.end(),
                                 [&](int64_t a, int64_t c) { return room[adj_[a]] > room[adj_[c]]; });
                for (std::size_t k = 0; k < by_room.size() && m > 0.0; ++k) m = fill(by_room[k], m);
            } else {
                while (m > 0.0) {  // few edges: select the most room each time
                    int64_t best = -1;
                    double br = 0.0;
                    for (int64_t e = b; e < en; ++e)
                        if (room[adj_[e]] > br) {
                            br = room[adj_[e]];
                            best = e;
                        }
                    if (best < 0) break;
                    m = fill(best, m);
                }
            }
            eL_[i] = m;
        };
        for (int64_t i = 0; i < L_; ++i) {
            poll_interrupt();
            if (lptr_[i + 1] - lptr_[i] == 1) place(i);
        }
        for (int64_t i = 0; i < L_; ++i) {
            poll_interrupt();
            if (lptr_[i + 1] - lptr_[i] != 1) place(i);
        }
        for (int64_t j = 0; j < R_; ++j) fy[j] = (room[j] == 0.0) ? cap_[j] : cap_[j] - room[j];
    }

    // Exact distances to the sink in the residual graph (BFS backwards); unreachable nodes get N.
    void global_relabel() {
        ++global_relabels;
        std::fill(dL_.begin(), dL_.end(), N_);
        std::fill(dR_.begin(), dR_.end(), N_);
        std::vector<int64_t> q;
        q.reserve(L_ + R_);
        for (int64_t j = 0; j < R_; ++j)
            if (fy[j] < cap_[j]) {
                dR_[j] = 1;
                q.push_back(L_ + j);
            }
        for (std::size_t h = 0; h < q.size(); ++h) {
            poll_interrupt();
            const int64_t v = q[h];
            if (v >= L_) {  // right j is reached from every left node adjacent to it (uncapacitated)
                const int64_t j = v - L_;
                for (int64_t i = rptr_[j]; i < rptr_[j + 1]; ++i) {
                    const int32_t l = eleft_[redge_[i]];
                    if (dL_[l] == N_) {
                        dL_[l] = dR_[j] + 1;
                        q.push_back(l);
                    }
                }
            } else {  // left v is reached from right j through the reverse of a positive flow
                for (int64_t e = lptr_[v]; e < lptr_[v + 1]; ++e) {
                    const int32_t j = adj_[e];
                    if (x[e] > 0.0 && dR_[j] == N_) {
                        dR_[j] = dL_[v] + 1;
                        q.push_back(L_ + j);
                    }
                }
            }
        }
        std::fill(curL_.begin(), curL_.end(), 0);
        std::fill(curR_.begin(), curR_.end(), 0);
    }

    template <class Enq>
    int64_t discharge_left(int64_t i, Enq& enqueue) {
        const int64_t b = lptr_[i], en = lptr_[i + 1];
        int64_t work = 1;
        while (eL_[i] > 0.0 && dL_[i] < N_) {
            for (int64_t e = b + curL_[i]; e < en; ++e) {
                const int32_t j = adj_[e];
                if (dR_[j] == dL_[i] - 1) {  // admissible and uncapacitated: push everything
                    x[e] += eL_[i];
                    eR_[j] += eL_[i];
                    eL_[i] = 0.0;
                    curL_[i] = e - b;
                    ++pushes;
                    enqueue(L_ + j);
                    return work;
                }
            }
            int64_t d = N_;
            for (int64_t e = b; e < en; ++e) d = std::min<int64_t>(d, dR_[adj_[e]] + 1);
            dL_[i] = d;
            curL_[i] = 0;
            ++relabels;
            work += en - b + 12;
        }
        return work;
    }

    template <class Enq>
    int64_t discharge_right(int64_t j, Enq& enqueue) {
        const int64_t b = rptr_[j], en = rptr_[j + 1];
        int64_t work = 1;
        while (eR_[j] > 0.0 && dR_[j] < N_) {
            if (dR_[j] == 1 && fy[j] < cap_[j]) {
                const double room = cap_[j] - fy[j];
                if (eR_[j] >= room) {
                    fy[j] = cap_[j];
                    eR_[j] -= room;
                } else {
                    fy[j] += eR_[j];
                    eR_[j] = 0.0;
                }
                ++pushes;
                if (eR_[j] <= 0.0) {
                    eR_[j] = 0.0;
                    break;
                }
            }
            for (int64_t i = b + curR_[j]; i < en && eR_[j] > 0.0; ++i) {
                const int64_t e = redge_[i];
                const int32_t l = eleft_[e];
                if (x[e] > 0.0 && dL_[l] == dR_[j] - 1) {
                    const double d = std::min(eR_[j], x[e]);
                    x[e] = (d == x[e]) ? 0.0 : x[e] - d;
                    eR_[j] = (d == eR_[j]) ? 0.0 : eR_[j] - d;
                    eL_[l] += d;
                    ++pushes;
                    enqueue(l);
                    curR_[j] = i - b;
                }
            }
            if (eR_[j] <= 0.0) break;
            int64_t d = (fy[j] < cap_[j]) ? 1 : N_;
            for (int64_t i = b; i < en; ++i) {
                const int64_t e = redge_[i];
                if (x[e] > 0.0) d = std::min<int64_t>(d, dL_[eleft_[e]] + 1);
            }
            dR_[j] = d;
            curR_[j] = 0;
            ++relabels;
            work += en - b + 12;
        }
        return work;
    }

    std::vector<int64_t> lptr_;
    std::vector<int32_t> adj_;
    std::vector<double> eL_, cap_, eR_;
    int64_t L_ = 0, R_ = 0, E_ = 0, N_ = 0;
    std::vector<int32_t> eleft_;
    std::vector<int64_t> rptr_, redge_, dL_, dR_, curL_, curR_;
    std::vector<char> inq_;
};

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
