// The levels left before each drafted token of one system, in one bucketed envelope pass
// (docs/theory.md §12.6, "One pass for all drafts"). The levels before the draft at cutting
// position j are the envelope of the system's first j tokens; the envelope pass's stack after copy
// j is exactly that envelope (later copies only pop from its top), so one pass over the longest
// drafted prefix, read at each draft's position, replaces one pass per draft.
//
// The tokens come in the system's cutting order (dual_prefix's, ties included), so a bucket is a
// run of consecutive positions: runs of equal leading ratio bits (remaining_bucketed's buckets),
// also cut at every draft's position, so each draft's prefix ends on a run boundary and is exact
// without sorting anything. A run enters the pass as its bound copy (remaining_bucketed's two
// pseudo-tokens); a run whose bound copy owns a segment at ANY of the reads is entered token by
// token and the pass repeats, until no read has a bound copy on it. Each read is then the envelope
// of its prefix exactly (the bucket theorem, per read).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "mdsd/verifiers/shadow_windows.hpp"

namespace mdsd::verif::shadow {

// Segments of a read that must be exact: indices [from, to) counted from the end the system cuts
// from (outer: the top; inner: the bottom); to < 0: up to the other end.
struct NeedRange {
    int64_t from, to;
};
using SegmentNeed = std::function<void(int, const std::vector<Seg>&, std::vector<NeedRange>&)>;

// levels[k] = remaining(s, cq, cp, pos[k]) for k < m, by ascending level. cq, cp: the q and p of
// the system's tokens in cutting order (make_row's copies); pos: any positions (repeats allowed).
// max_buckets <= 0: no bound copies (every token entered, one pass). every_read = false (the tests'
// negative control) refines only from the deepest read, which leaves bound copies on shallower ones.
//
// need (optional): need(k, levels[k], ranges) lists the segments of read k that must be exact
// (none listed: all of them). Only bound copies owning those segments are refined: where a real
// copy owns the envelope of the bound copies, that envelope equals the exact one (the bound copies
// lie on the far side of every copy of their bucket), so whatever is read there is exact. The rest
// of the read is only a bound. bound (optional): per read, by ascending level, whether a bound
// copy owns each segment.
inline void remaining_at(const System& s, const double* cq, const double* cp, const int64_t* pos, int m,
                         int max_buckets, std::vector<std::vector<Seg>>& levels, BucketStats* stats = nullptr,
                         bool every_read = true, const SegmentNeed& need = nullptr,
                         std::vector<std::vector<char>>* bound = nullptr) {
    levels.assign(static_cast<std::size_t>(m), {});
    int64_t K = 0;
    for (int k = 0; k < m; ++k) K = std::max(K, pos[k]);
    // runs [rs[u], rs[u + 1]) of consecutive positions below K
    std::vector<int64_t> rs;
    auto key = [&](int64_t k) { return ratio_key(cp[k], cq[k]); };
    std::vector<int64_t> cuts(pos, pos + m);
    std::sort(cuts.begin(), cuts.end());
    rs.push_back(0);
    if (max_buckets > 0 && K > 0) {
        const KeyBuckets kb = key_buckets_of(K, key, max_buckets);
        std::size_t c = 0;
        uint64_t prev = kb.of(key(0));
        for (int64_t k = 1; k < K; ++k) {
            const uint64_t b = kb.of(key(k));
            while (c < cuts.size() && cuts[c] < k) ++c;
            if (b != prev || (c < cuts.size() && cuts[c] == k)) rs.push_back(k);
            prev = b;
        }
    } else {
        for (int64_t k = 1; k < K; ++k) rs.push_back(k);
    }
    rs.push_back(K);
    const int64_t U = static_cast<int64_t>(rs.size()) - 1;
    if (K == 0) {
        for (int k = 0; k < m; ++k)
            if (s.H > 0.0) levels[k].push_back({s.lo, s.lo + s.H});
        if (bound) bound->assign(static_cast<std::size_t>(m), std::vector<char>(s.H > 0.0 ? 1 : 0, 0));
        return;
    }
    std::vector<double> Q(U, 0.0), P(U, 0.0), rlo(U, std::numeric_limits<double>::infinity()), rhi(U, 0.0);
    for (int64_t u = 0; u < U; ++u)
        for (int64_t k = rs[u]; k < rs[u + 1]; ++k) {
            Q[u] += cq[k];
            P[u] += cp[k];
            const double r = cp[k] / cq[k];
            rlo[u] = std::min(rlo[u], r);
            rhi[u] = std::max(rhi[u], r);
        }
    // reads by position: the run u at which read k is taken (its prefix ends where run u starts)
    std::vector<int> by_pos(static_cast<std::size_t>(m));
    for (int k = 0; k < m; ++k) by_pos[k] = k;
    std::sort(by_pos.begin(), by_pos.end(), [&](int a, int b) { return pos[a] < pos[b]; });
    std::vector<char> refine(U, 0);
    std::vector<NeedRange> ranges;
    if (bound) bound->assign(static_cast<std::size_t>(m), {});
    std::vector<int64_t> bound_of, top;  // copy index -> the run whose bound copy it is, or -1
    int rounds = 0;
    for (bool again = true; again;) {
        ++rounds;
        again = false;
        EnvelopePass<double> pass(s);
        bound_of.assign(1, -1);
        auto put = [&](double qq, double pp, int64_t u) {
            pass.push(qq, pp);
            bound_of.push_back(u);
        };
        int r = 0;  // next read, by position
        auto read_up_to = [&](int64_t at) {
            for (; r < m && pos[by_pos[r]] <= at; ++r) {
                top.clear();
                const int rd = by_pos[r];
                levels[rd] = pass.segments(&top);
                // top: the owners in stack order, which runs from the other end (the end the
                // envelope is measured from), so segment e from the cutting end is top[T - 1 - e]
                const int64_t T = static_cast<int64_t>(top.size());
                if (bound) {
                    std::vector<char>& f = (*bound)[rd];
                    f.resize(static_cast<std::size_t>(T));
                    for (int64_t i = 0; i < T; ++i) f[s.inner ? T - 1 - i : i] = bound_of[top[i]] >= 0;
                }
                if (!every_read && r + 1 < m) continue;
                ranges.clear();
                if (need) need(rd, levels[rd], ranges);
                if (ranges.empty()) ranges.push_back({0, -1});
                for (const NeedRange& g : ranges) {
                    const int64_t to = g.to < 0 ? T : std::min(T, g.to);
                    for (int64_t e = std::max<int64_t>(0, g.from); e < to; ++e) {
                        const int64_t j = top[T - 1 - e];
                        if (bound_of[j] >= 0 && !refine[bound_of[j]]) {
                            refine[bound_of[j]] = 1;
                            again = true;
                        }
                    }
                }
            }
        };
        for (int64_t u = 0; u < U; ++u) {
            read_up_to(rs[u]);
            if (refine[u] || !(rhi[u] > rlo[u])) {  // one ratio: every inner copy lies on the chord
                if (refine[u])
                    for (int64_t k = rs[u]; k < rs[u + 1]; ++k) put(cq[k], cp[k], -1);
                else put(Q[u], P[u], -1);
                continue;
            }
            double q1, p1;
            bound_copy(s, Q[u], P[u], rlo[u], rhi[u], q1, p1);
            put(q1, p1, u);
            put(Q[u] - q1, P[u] - p1, -1);
        }
        read_up_to(K);
    }
    if (stats) {
        stats->buckets = U;
        stats->rounds = rounds;
        stats->sorted = 0;
        for (int64_t u = 0; u < U; ++u)
            if (refine[u]) stats->sorted += rs[u + 1] - rs[u];
    }
}

}  // namespace mdsd::verif::shadow
