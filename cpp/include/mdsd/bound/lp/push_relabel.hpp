// FIFO push-relabel with global relabelling (BipartiteFlow) for networks of the draft-set shape
// (docs/theory/transport.md §2.2): left nodes with a supply, uncapacitated left -> right edges, right nodes
// with a capacity (maxflow.hpp runs it on source -> set -> token -> sink):
//   * a left node's edges are uncapacitated, so it discharges all its excess in one push;
//   * a greedy start (forced destinations first, then most room first) leaves little to repair;
//   * no integer scaling (OR-Tools needs capacities * 2^40): pushes move doubles exactly and
//     saturating pushes set the flow to the capacity exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <numeric>
#include <vector>

#include "mdsd/core/parallel.hpp"

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

}  // namespace mdsd
