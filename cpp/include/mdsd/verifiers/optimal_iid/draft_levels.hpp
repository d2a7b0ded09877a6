// The levels left before each drafted token of one system, in one bucketed envelope pass
// (docs/theory/level_race.md §12.6, "One pass for all drafts"). The levels before the draft at cutting
// position j are the envelope of the system's first j tokens; the envelope pass's stack after copy
// j is exactly that envelope (later copies only pop from its top), so one pass over the longest
// drafted prefix, read at each draft's position, replaces one pass per draft.
//
// The tokens come in the system's cutting order (dual_prefix's, ties included), so a bucket is a
// run of consecutive positions: runs of equal leading ratio bits (remaining_bucketed's buckets),
// also cut at every draft's position, so each draft's prefix ends on a run boundary and is exact
// without sorting anything. A run enters the pass as its bound copy (remaining_bucketed's two
// pseudo-tokens); a run whose bound copy owns a segment a read needs splits into runs on more
// ratio bits (a small one into its tokens) and the pass repeats, until no read has a bound copy
// where it is needed. Each read is then the envelope of its prefix exactly there (the bucket
// theorem, per read).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "mdsd/verifiers/optimal_iid/remaining_levels.hpp"

namespace mdsd::verif::shadow {

// Segments of a read that must be exact: indices [from, to) counted from the end the system cuts
// from (outer: the top; inner: the bottom); to < 0: up to the other end.
struct NeedRange {
    int64_t from, to;
};
using SegmentNeed = std::function<void(int, const std::vector<Seg>&, std::vector<NeedRange>&)>;

// A refined run splits on kSubBits more ratio bits; one of at most kTokenRun tokens, into its tokens.
constexpr int kSubBits = 4;
constexpr int64_t kTokenRun = 16;

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
    if (K == 0) {
        for (int k = 0; k < m; ++k)
            if (s.H > 0.0) levels[k].push_back({s.lo, s.lo + s.H});
        if (bound) bound->assign(static_cast<std::size_t>(m), std::vector<char>(s.H > 0.0 ? 1 : 0, 0));
        return;
    }
    // the ratio keys, one division per token (a thread's buffer: at V = 49,152 a fresh one faults
    // its pages in every call); a key's bits are the ratio itself
    thread_local std::vector<uint64_t> keys;
    keys.resize(static_cast<std::size_t>(K));
    for (int64_t k = 0; k < K; ++k) keys[k] = ratio_key(cp[k], cq[k]);
    auto key = [&](int64_t k) { return keys[k]; };
    std::vector<int64_t> cuts(pos, pos + m);
    std::sort(cuts.begin(), cuts.end());
    // runs of consecutive positions below K: equal leading ratio bits, cut at every read
    struct Run {
        int64_t b, e;
        double Q = 0.0, P = 0.0, rlo = std::numeric_limits<double>::infinity(), rhi = 0.0;
        int shift = 0;
        bool tokens = false;  // entered token by token
    };
    std::vector<Run> runs, next;
    auto close = [&](Run& g) {
        for (int64_t k = g.b; k < g.e; ++k) {
            g.Q += cq[k];
            g.P += cp[k];
            double r;
            std::memcpy(&r, &keys[k], sizeof r);
            g.rlo = std::min(g.rlo, r);
            g.rhi = std::max(g.rhi, r);
        }
    };
    // [b, e) cut where key >> shift changes (or at a read), appended to out
    uint64_t kmin = 0;
    auto split = [&](int64_t b, int64_t e, int shift, std::vector<Run>& out) {
        std::size_t c = std::lower_bound(cuts.begin(), cuts.end(), b + 1) - cuts.begin();
        int64_t from = b;
        uint64_t prev = (key(b) - kmin) >> shift;
        for (int64_t k = b + 1; k < e; ++k) {
            const uint64_t u = (key(k) - kmin) >> shift;
            while (c < cuts.size() && cuts[c] < k) ++c;
            if (u != prev || (c < cuts.size() && cuts[c] == k)) {
                out.push_back({from, k});
                out.back().shift = shift;
                close(out.back());
                from = k;
            }
            prev = u;
        }
        out.push_back({from, e});
        out.back().shift = shift;
        close(out.back());
    };
    if (max_buckets > 0) {
        const KeyBuckets kb = key_buckets_of(K, key, max_buckets);
        kmin = kb.kmin;
        split(0, K, kb.shift, runs);
    } else {  // every token its own copy
        for (int64_t k = 0; k < K; ++k) {
            runs.push_back({k, k + 1});
            runs.back().tokens = true;
        }
    }
    // reads by position: the run u at which read k is taken (its prefix ends where run u starts)
    std::vector<int> by_pos(static_cast<std::size_t>(m));
    for (int k = 0; k < m; ++k) by_pos[k] = k;
    std::sort(by_pos.begin(), by_pos.end(), [&](int a, int b) { return pos[a] < pos[b]; });
    std::vector<char> refine;
    std::vector<NeedRange> ranges;
    if (bound) bound->assign(static_cast<std::size_t>(m), {});
    std::vector<int64_t> bound_of, top;  // copy index -> the run whose bound copy it is, or -1
    int rounds = 0;
    for (bool again = true; again;) {
        ++rounds;
        again = false;
        const int64_t U = static_cast<int64_t>(runs.size());
        refine.assign(static_cast<std::size_t>(U), 0);
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
            const Run& g = runs[u];
            read_up_to(g.b);
            if (g.tokens) {
                for (int64_t k = g.b; k < g.e; ++k) put(cq[k], cp[k], -1);
            } else if (g.e - g.b == 1 || !(g.rhi > g.rlo)) {  // one ratio: every inner copy lies on the chord
                put(g.Q, g.P, -1);
            } else {
                double q1, p1;
                bound_copy(s, g.Q, g.P, g.rlo, g.rhi, q1, p1);
                put(q1, p1, u);
                put(g.Q - q1, g.P - p1, -1);
            }
        }
        read_up_to(K);
        if (!again) break;
        // a run whose bound copy is read splits into runs on kSubBits more ratio bits (small runs,
        // or the last bits: into its tokens); the others stay as they are
        next.clear();
        for (int64_t u = 0; u < U; ++u) {
            const Run& g = runs[u];
            if (!refine[u]) {
                next.push_back(g);
                continue;
            }
            if (g.e - g.b <= kTokenRun || g.shift == 0) {
                next.push_back(g);
                next.back().tokens = true;
                continue;
            }
            const std::size_t first = next.size();
            int sh = g.shift;
            do {  // the runs' bits may agree further down: go on until the run splits
                next.resize(first);
                sh = std::max(0, sh - kSubBits);
                split(g.b, g.e, sh, next);
            } while (next.size() == first + 1 && sh > 0);
            if (next.size() == first + 1) next.back().tokens = true;
        }
        runs.swap(next);
    }
    if (stats) {
        stats->buckets = static_cast<int64_t>(runs.size());
        stats->rounds = rounds;
        stats->sorted = 0;
        for (const Run& g : runs)
            if (g.tokens) stats->sorted += g.e - g.b;
    }
}

}  // namespace mdsd::verif::shadow
