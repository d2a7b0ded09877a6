// The one-pass remaining levels of the level race (optimal_iid/remaining_levels.hpp, docs/theory/level_race.md §12.6):
// the levels left after cutting a set G of a system's tokens with take_window, in any order, equal
// the upper envelope of shifted copies built from G's prefix sums by ascending p/q.
//
// - Outer system: every subset, every order (windows that stop at the top included).
// - Inner system: the same (the envelope measured from the top).
// - In the ratio order, the windows that stop at the bottom or top form a suffix of the system (small
//   cases).
// - Negative control: the envelope built from G in id order instead of the ratio order must miss
//   the cut on a fair share of cases, so the comparison can fail.
// - remaining_bucketed (no sort; the set given shuffled) equals the envelope of the sorted set, with
//   2 to 1,024 buckets; its control: merging each pair of neighbours in the ratio order into one
//   token (what a bucket without its bound would do) must change the levels on a fair share.
// - remaining_at (the levels before several drafts from one pass, optimal_iid/draft_levels.hpp) equals the
//   envelope of each read's prefix, on the small cases and on LLM-like rows with zeros and ties,
//   with 0 to 1,024 buckets; its control: refining only from the deepest read must leave a bound
//   copy on a shallower read (levels off) on a fair share of the LLM-like rows.
// - LLM-like rows (V = 2,000): both systems cut whole in the ratio order and shuffled, against the
//   envelope in long double. The double envelope stays within 1e-13 of it; the cut, whose tiny
//   windows are placed from rounded level endpoints, within 1e-8 (docs/theory/level_race.md §12.6).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "mdsd/bound/dual.hpp"
#include "mdsd/verifiers/optimal_iid/level_windows.hpp"
#include "mdsd/verifiers/optimal_iid/draft_levels.hpp"
#include "mdsd/verifiers/optimal_iid/remaining_levels.hpp"
#include "level_sets.hpp"

using cases::Gen;
using cases::Vec;
namespace lv = mdsd::verif::level;
using level_sets::set_distance;
namespace sw = mdsd::verif::shadow;

struct Cut {
    std::vector<lv::Seg> left;  // remaining levels
    bool capped = false;        // some window stopped at the bottom or top (load != p)
    bool suffix = true;         // the windows at the bottom or top come after every exact one
    int64_t first_far = -1;     // the first window at the bottom or top (-1: none)
};

// Cuts seq with take_window from the system's start end, as OptimalIid::prepare does.
static Cut cut(const Vec& p, const Vec& q, const std::vector<int32_t>& seq, const sw::System& s, bool inner) {
    lv::Levels L;
    L.n = s.n;
    L.from_bottom = inner;
    L.iv.push_back({s.lo, s.lo + s.H});
    L.total = s.H;
    Cut c;
    std::vector<lv::Seg> out;
    for (std::size_t k = 0; k < seq.size(); ++k) {
        const int32_t y = seq[k];
        const std::size_t b = out.size();
        lv::take_window(L, q[y], p[y], inner ? +1 : -1, false, out);
        double load = 0.0;
        for (std::size_t e = b; e < out.size(); ++e) load += lv::diffpow(out[e].lo, out[e].hi, s.n);
        // windows below ~1e-6 are left out: the cut places them from rounded level endpoints
        // (relative load error ~1e-16 / q per piece end) or, below kTinyWindow, by their level alone
        if (!(q[y] >= 1e-6)) continue;
        const bool far = std::fabs(load - p[y]) > 1e-6 * p[y] + 1e-15;
        if (c.capped && !far) c.suffix = false;
        if (far && !c.capped) c.first_far = static_cast<int64_t>(k);
        c.capped = c.capped || far;
    }
    c.left = L.iv;
    std::sort(c.left.begin(), c.left.end(), [](const lv::Seg& u, const lv::Seg& v) { return u.lo < v.lo; });
    return c;
}

// The envelope of G, with G's tokens listed in `by` order (the ratio order for the theorem).
template <class T = double>
static std::vector<lv::Seg> envelope(const Vec& p, const Vec& q, const std::vector<int32_t>& by, const sw::System& s) {
    Vec qs, ps;
    for (int32_t y : by) {
        qs.push_back(q[y]);
        ps.push_back(p[y]);
    }
    return sw::remaining<T>(s, qs.data(), ps.data(), static_cast<int64_t>(by.size()));
}

static void shuffle(Gen& g, std::vector<int32_t>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[g.integer(0, static_cast<int64_t>(i - 1))]);
}

struct Split {
    std::vector<int32_t> ord;  // supp q by ascending p/q
    int64_t ks = 0;
    sw::System inner, outer;
};

static Split split(const Vec& p, const Vec& q, int n) {
    const int64_t V = static_cast<int64_t>(p.size());
    mdsd::DualWorkspace ws;
    const mdsd::DualResult dr =
        mdsd::dual_prefix(p.data(), q.data(), V, n, mdsd::Scheme::Iid, mdsd::WorMethod::Auto, ws);
    Split sp;
    sp.ord = ws.order;
    sp.ks = dr.k_star;
    double qH = 0.0, qA = 0.0;
    for (int64_t k = 0; k < sp.ks; ++k) qH += q[sp.ord[k]];
    for (int64_t k = sp.ks; k < static_cast<int64_t>(sp.ord.size()); ++k) qA += q[sp.ord[k]];
    sp.inner = {0.0, qH, n, true};
    sp.outer = {qH, qA, n, false};
    return sp;
}

// A random proper subset of the system's tokens (ratio order kept) and a random order to cut it in.
static void pick(Gen& g, const std::vector<int32_t>& sys, std::vector<int32_t>& sorted, std::vector<int32_t>& seq) {
    sorted.clear();
    for (int32_t y : sys)
        if (g.uniform() < 0.7) sorted.push_back(y);
    if (sorted.empty() || sorted.size() == sys.size()) sorted.assign(1, sys[0]);
    seq = sorted;
    shuffle(g, seq);
}

// remaining_at's reads at random positions of sys (cutting order; repeats and 0 allowed) against the
// envelope of each prefix (long double); returns the largest distance. every_read: see remaining_at.
static double check_reads(Gen& g, const Vec& p, const Vec& q, const std::vector<int32_t>& sys, const sw::System& s,
                          int nb, bool every_read = true) {
    const int m = static_cast<int>(g.integer(1, 4));
    std::vector<int64_t> pos(m);
    for (auto& j : pos) j = g.integer(0, static_cast<int64_t>(sys.size()) - 1);
    std::vector<std::vector<lv::Seg>> reads;
    Vec cq(sys.size()), cp(sys.size());
    for (std::size_t k = 0; k < sys.size(); ++k) {
        cq[k] = q[sys[k]];
        cp[k] = p[sys[k]];
    }
    sw::remaining_at(s, cq.data(), cp.data(), pos.data(), m, nb, reads, nullptr, every_read);
    double d = 0.0;
    for (int k = 0; k < m; ++k) {
        const std::vector<int32_t> pre(sys.begin(), sys.begin() + pos[k]);
        d = std::max(d, set_distance(reads[k], envelope<long double>(p, q, pre, s)));
    }
    return d;
}

int main() {
    Gen g(20261202), gr(15);  // gr: remaining_at's checks (g's stream stays the earlier checks')
    long cases_run[2] = {0, 0}, capped[2] = {0, 0}, control_cases = 0, control_missed = 0;
    double worst = 0.0, env_worst = 0.0, bucket_worst = 0.0;
    double reads_worst = 0.0;
    long reads_cases = 0, llm_reads = 0, llm_reads_missed = 0;
    long far = 0, bucket_sorted = 0, merge_cases = 0, merge_missed = 0, prefix_cases = 0, prefix_same = 0;
    for (int rep = 0; rep < 4000; ++rep) {
        const int64_t V = 4 + rep % 9;
        const int n = 2 + rep % 5;
        Vec p, q;
        cases::random_case(g, V, p, q);
        const Split sp = split(p, q, n);
        const int64_t K = static_cast<int64_t>(sp.ord.size()), ks = sp.ks;
        for (const bool inner : {false, true}) {
            check::context("rep %d, V = %lld, n = %d, %s", rep, static_cast<long long>(V), n,
                           inner ? "inner" : "outer");
            std::vector<int32_t> sys;  // the system in its cutting order
            if (inner) sys.assign(sp.ord.rbegin() + (K - ks), sp.ord.rend());
            else sys.assign(sp.ord.begin() + ks, sp.ord.end());
            if (sys.size() < 2) continue;
            {
                const sw::System& s0 = inner ? sp.inner : sp.outer;
                const Cut whole = cut(p, q, sys, s0, inner);
                CHECK_MSG(whole.suffix, "ratio order: an exact window after one at the bottom or top");
                // the envelope's count of exact windows against the cut's first window at the bottom or top
                Vec qs, ps;
                for (int32_t y : sys) {
                    qs.push_back(q[y]);
                    ps.push_back(p[y]);
                }
                int64_t k_exact = 0;
                (void)sw::remaining(s0, qs.data(), ps.data(), static_cast<int64_t>(sys.size()), nullptr, &k_exact);
                // (a last token that fills the system is judged by the cut only)
                const int64_t k_cut = whole.first_far < 0 || whole.first_far + 1 == static_cast<int64_t>(sys.size())
                                          ? static_cast<int64_t>(sys.size())
                                          : whole.first_far;
                ++prefix_cases;
                const int64_t last = static_cast<int64_t>(sys.size()) - 1;
                prefix_same += std::min(k_exact, last) == std::min(k_cut, last);
            }
            {
                const double dr = check_reads(gr, p, q, sys, inner ? sp.inner : sp.outer, rep % 3 ? 1 << (rep % 5) : 0);
                CHECK_MSG(dr <= 1e-13, "remaining_at vs the prefixes' envelopes: %.3g", dr);
                reads_worst = std::max(reads_worst, dr);
                ++reads_cases;
            }
            std::vector<int32_t> sorted, seq;
            pick(g, sys, sorted, seq);
            const sw::System& s = inner ? sp.inner : sp.outer;
            const Cut c = cut(p, q, seq, s, inner);
            const std::vector<lv::Seg> ref = envelope<long double>(p, q, sorted, s);
            const double e = set_distance(envelope(p, q, sorted, s), ref), d = set_distance(c.left, ref);
            CHECK_MSG(e <= 1e-14, "double envelope vs long double: %.3g", e);
            CHECK_MSG(d <= 1e-10, "the cut and the envelope differ by %.3g", d);
            worst = std::max(worst, d);
            env_worst = std::max(env_worst, e);
            far += d > 1e-13;
            {
                sw::BucketStats bs;
                const int nb = 1 << g.integer(1, 4);
                const std::vector<lv::Seg> bk = sw::remaining_bucketed(s, seq.data(), static_cast<int64_t>(seq.size()),
                                                                       p.data(), q.data(), nb, &bs);
                const double db = set_distance(bk, ref);
                CHECK_MSG(db <= 1e-13, "bucketed (%d buckets) vs envelope: %.3g", nb, db);
                bucket_worst = std::max(bucket_worst, db);
                bucket_sorted += bs.sorted > 0;
                if (sorted.size() >= 2) {
                    std::vector<double> qm, pm;  // neighbours merged in pairs
                    for (std::size_t u = 0; u < sorted.size(); u += 2) {
                        double qq = q[sorted[u]], pp = p[sorted[u]];
                        if (u + 1 < sorted.size()) {
                            qq += q[sorted[u + 1]];
                            pp += p[sorted[u + 1]];
                        }
                        qm.push_back(qq);
                        pm.push_back(pp);
                    }
                    ++merge_cases;
                    merge_missed +=
                        set_distance(sw::remaining(s, qm.data(), pm.data(), static_cast<int64_t>(qm.size())), ref) >
                        1e-9;
                }
            }
            ++cases_run[inner];
            capped[inner] += c.capped;
            // negative control: the same set listed by token id
            std::vector<int32_t> by_id = sorted;
            std::sort(by_id.begin(), by_id.end());
            if (by_id != sorted) {
                ++control_cases;
                control_missed += set_distance(c.left, envelope(p, q, by_id, s)) > 1e-9;
            }
        }
    }
    check::context("totals");
    CHECK_MSG(cases_run[0] >= 2000 && cases_run[1] >= 2000, "only %ld outer, %ld inner cases", cases_run[0],
              cases_run[1]);
    CHECK_MSG(capped[0] >= 300 && capped[1] >= 300,
              "only %ld outer, %ld inner cases with a window at the bottom or top", capped[0], capped[1]);
    CHECK_MSG(prefix_same * 100 >= prefix_cases * 97, "exact prefix: the envelope and the cut agree on %ld of %ld",
              prefix_same, prefix_cases);
    std::printf("test_remaining_levels: the envelope's exact prefix = the cut's on %ld of %ld systems\n", prefix_same,
                prefix_cases);
    CHECK_MSG(bucket_sorted >= 150, "only %ld bucketed cases sorted a bucket", bucket_sorted);
    CHECK_MSG(merge_missed * 5 >= merge_cases, "control: merging neighbours missed only %ld of %ld", merge_missed,
              merge_cases);
    std::printf(
        "test_remaining_levels: bucketed = envelope within %.2g (%ld cases sorted a bucket); merged neighbours "
        "missed %ld of %ld\n",
        bucket_worst, bucket_sorted, merge_missed, merge_cases);
    CHECK_MSG(control_missed * 5 >= control_cases, "negative control: id order missed only %ld of %ld", control_missed,
              control_cases);
    std::printf(
        "test_remaining_levels: %ld outer sets (%ld with windows at the top), %ld inner sets (%ld at the bottom) cut "
        "in "
        "random orders: cut within %.2g of the long-double envelope (beyond 1e-13 in %ld), double envelope within "
        "%.2g; "
        "control: id order missed %ld of %ld\n",
        cases_run[0], capped[0], cases_run[1], capped[1], worst, far, env_worst, control_missed, control_cases);

    // LLM-like rows: each system cut whole but its last token, in the ratio order and shuffled.
    double env_err = 0.0, cut_err = 0.0, shuf_err = 0.0, llm_bucket = 0.0, llm_sorted = 0.0, llm_tokens = 0.0;
    for (int rep = 0; rep < 40; ++rep) {
        Vec p, q;
        cases::llm_rows(g, 2000, p, q);
        const int n = 2 + rep % 4;
        const Split sp = split(p, q, n);
        const int64_t K = static_cast<int64_t>(sp.ord.size()), ks = sp.ks;
        for (const bool inner : {false, true}) {
            check::context("llm rep %d, n = %d, %s", rep, n, inner ? "inner" : "outer");
            std::vector<int32_t> sys;
            if (inner) sys.assign(sp.ord.rbegin() + (K - ks), sp.ord.rend());
            else sys.assign(sp.ord.begin() + ks, sp.ord.end());
            if (sys.size() < 2) continue;
            sys.pop_back();
            const sw::System& s = inner ? sp.inner : sp.outer;
            const std::vector<lv::Seg> ref = envelope<long double>(p, q, sys, s);
            const double e = set_distance(envelope(p, q, sys, s), ref);
            // (no suffix check here: near the inner system's bottom the cut's loads of windows ~1e-6
            // wide are off by ~1e-6 relative, so "exact" cannot be told from "at the bottom")
            const double c = set_distance(cut(p, q, sys, s, inner).left, ref);
            std::vector<int32_t> seq = sys;
            shuffle(g, seq);
            const double d = set_distance(cut(p, q, seq, s, inner).left, ref);
            CHECK_MSG(e <= 1e-13, "double envelope vs long double: %.3g", e);
            for (const int nb : {64, 1024}) {
                std::vector<int32_t> mixed = sys;
                shuffle(g, mixed);
                sw::BucketStats bs;
                const double db =
                    set_distance(sw::remaining_bucketed(s, mixed.data(), static_cast<int64_t>(mixed.size()), p.data(),
                                                        q.data(), nb, &bs),
                                 ref);
                CHECK_MSG(db <= 1e-13, "bucketed (%d buckets) vs envelope: %.3g", nb, db);
                llm_bucket = std::max(llm_bucket, db);
                if (nb == 1024) {
                    llm_sorted += static_cast<double>(bs.sorted);
                    llm_tokens += static_cast<double>(sys.size());
                }
            }
            CHECK_MSG(c <= 1e-8 && d <= 1e-8, "cut vs envelope: %.3g (ratio order), %.3g (shuffled)", c, d);
            env_err = std::max(env_err, e);
            cut_err = std::max(cut_err, c);
            shuf_err = std::max(shuf_err, d);
        }
    }
    std::printf(
        "test_remaining_levels: LLM-like rows (V = 2,000), distance to the long-double envelope: double envelope %.2g, "
        "ratio-order cut %.2g, shuffled cut %.2g\n",
        env_err, cut_err, shuf_err);
    std::printf(
        "test_remaining_levels: LLM-like rows, bucketed (64 and 1,024 buckets) within %.2g; with 1,024 buckets "
        "%.1f %% of the tokens sorted\n",
        llm_bucket, 100.0 * llm_sorted / std::max(1.0, llm_tokens));

    // remaining_at on LLM-like rows, half of them with zeros and tied ratios
    for (int rep = 0; rep < 24; ++rep) {
        Vec p, q;
        cases::llm_rows(gr, 2000, p, q);
        if (rep % 2) cases::add_zeros_and_ties(gr, p, q);
        const int n = 2 + rep % 4;
        const Split sp = split(p, q, n);
        const int64_t K = static_cast<int64_t>(sp.ord.size()), ks = sp.ks;
        for (const bool inner : {false, true}) {
            check::context("llm reads rep %d, n = %d, %s", rep, n, inner ? "inner" : "outer");
            std::vector<int32_t> sys;
            if (inner) sys.assign(sp.ord.rbegin() + (K - ks), sp.ord.rend());
            else sys.assign(sp.ord.begin() + ks, sp.ord.end());
            if (sys.size() < 2) continue;
            const sw::System& s = inner ? sp.inner : sp.outer;
            for (const int nb : {0, 64, 256, 1024}) {
                const double dr = check_reads(gr, p, q, sys, s, nb);
                CHECK_MSG(dr <= 1e-13, "remaining_at (%d buckets) vs the prefixes' envelopes: %.3g", nb, dr);
                reads_worst = std::max(reads_worst, dr);
                ++llm_reads;
            }
            for (int k = 0; k < 4; ++k) llm_reads_missed += check_reads(gr, p, q, sys, s, 256, false) > 1e-9;
        }
    }
    CHECK_MSG(llm_reads_missed * 10 >= llm_reads, "control: refining from the deepest read missed only %ld of %ld",
              llm_reads_missed, llm_reads);
    std::printf(
        "test_remaining_levels: remaining_at = the prefixes' envelopes within %.2g (%ld small systems, %ld LLM-like "
        "reads); control: refining from the deepest read only missed %ld of %ld\n",
        reads_worst, reads_cases, llm_reads, llm_reads_missed, llm_reads);

    // Edge cases: the empty set leaves the whole system; one ratio for every token (one bucket,
    // no bound copy); n = 1 (a flat load density: every window has load = width).
    {
        check::context("edge cases");
        const sw::System so{0.25, 0.75, 3, false}, si{0.0, 0.25, 3, true};
        for (const sw::System* s : {&so, &si}) {
            const std::vector<lv::Seg> e0 = sw::remaining(*s, nullptr, nullptr, 0);
            const std::vector<lv::Seg> b0 = sw::remaining_bucketed(*s, nullptr, 0, nullptr, nullptr);
            CHECK(e0.size() == 1 && b0.size() == 1 && e0[0].lo == s->lo && b0[0].hi == s->lo + s->H);
        }
        Vec p = {0.1, 0.2, 0.3}, q = {0.05, 0.1, 0.15};  // ratio 2 for all
        const std::vector<int32_t> all = {2, 0, 1};
        const sw::System s{0.2, 0.5, 4, false};
        const double d = set_distance(sw::remaining_bucketed(s, all.data(), 2, p.data(), q.data()),
                                      cut(p, q, {2, 0}, s, false).left);
        CHECK_MSG(d <= 1e-13, "equal ratios: %.3g", d);
        Vec p1 = {0.3, 0.1, 0.6}, q1 = {0.2, 0.3, 0.5};
        const sw::System s1{0.0, 1.0, 1, false};
        const std::vector<int32_t> one = {1};
        const double d1 = set_distance(sw::remaining(s1, &q1[1], &p1[1], 1), cut(p1, q1, one, s1, false).left);
        CHECK_MSG(d1 <= 1e-13, "n = 1: %.3g", d1);
    }
    return check::summary("test_remaining_levels");
}
