// The prefix-event sweep's scan without e (docs/theory/race_oracle.md §14.4, "Without e") against the form with
// every token's e (scan_e below, the reference; PrefixEventSweep::scan_form runs it in a sweep):
//   * PrefixEventSweep::scan: the same v to rounding on LLM-like heads of 40-400 tokens (one to four
//     blocks of kPassBlock, big and small tokens mixed, zeros and tied ratios in half the rows),
//     weights 1 / in between / 0, zero_prefix on and off, one token overridden, some tokens retired;
//   * whole sweeps (step until done): the same laid chunks and final weights to 1e-11;
//   * a negative control: the same comparison catches a 1e-9 relative change of one token's weight.
#include "mdsd/verifiers/optimal_wor/events.hpp"
namespace R = mdsd::race;
namespace W = mdsd::verif::wor;

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "race_grid.hpp"

using cases::Gen;
using cases::Vec;

// PrefixEventSweep::scan with every token's e: the reference form.
static void scan_e(W::PrefixEventSweep& sw, const R::Pair& env, const std::vector<int64_t>& o, bool zero_prefix,
                   int64_t ov, double hov, std::vector<double>& v) {
    const int64_t a = static_cast<int64_t>(o.size());
    auto wt = [&](int64_t k) { return k == ov ? hov : sw.h[k]; };
    // suffix pairs of o[i..a), flat (Pi then D, 2 S doubles each), and the factors of o
    const int n = sw.gr->n;
    const int64_t G = sw.gr->G;
    const std::size_t S = static_cast<std::size_t>(n) * G;
    sw.suf.resize(static_cast<std::size_t>(a + 1) * 2 * S);
    std::fill(sw.suf.begin() + a * 2 * S, sw.suf.begin() + (a + 1) * 2 * S, 0.0);
    std::fill(sw.suf.begin() + a * 2 * S, sw.suf.begin() + a * 2 * S + G, 1.0);
    for (int64_t i = a - 1; i >= 0; --i) {
        const double* ei = &sw.fe[o[i] * G];
        const double* bi = &sw.fb[o[i] * G];
        const double* src = &sw.suf[(i + 1) * 2 * S];
        double* dst = &sw.suf[i * 2 * S];
        R::mul_factor(n, G, src, src + S, dst, dst + S, ei, bi, wt(o[i]), sw.q[sw.tok[o[i]]]);
    }
    v.assign(a, 0.0);
    R::Pair pre = R::mul(env, sw.fixed);
    for (int64_t i = 0; i < a; ++i) {
        const double* ei = &sw.fe[o[i] * G];
        const double* bi = &sw.fb[o[i] * G];
        const double* in = &sw.suf[(i + 1) * 2 * S];
        v[i] = R::w_raw(*sw.gr, pre.Pi.data(), pre.D.data(), in, in + S, ei, bi, sw.q[sw.tok[o[i]]]);
        pre.add(ei, bi, zero_prefix ? 0.0 : wt(o[i]), sw.q[sw.tok[o[i]]]);
    }
}

static double rel(double a, double b) { return std::fabs(a - b) / std::max({std::fabs(a), std::fabs(b), 1e-300}); }

struct Case {
    Vec p, q;
    R::Grid gr;
    std::vector<int32_t> head;
    R::Pair env;
};

// A head of m tokens: a few of the largest masses (big tokens) and random others, in random order;
// env: the other tokens of the row, at weight 1 or 0 (every third).
static Case make_case(Gen& g, int64_t V, int n, int64_t m, bool ties) {
    Case c;
    cases::llm_rows(g, V, c.p, c.q);
    if (ties) cases::add_zeros_and_ties(g, c.p, c.q);
    c.gr = grid_of(c.q, n);
    std::vector<int32_t> sup;
    for (int64_t y = 0; y < V; ++y)
        if (c.q[y] > 0.0) sup.push_back(static_cast<int32_t>(y));
    std::sort(sup.begin(), sup.end(), [&](int32_t a, int32_t b) { return c.q[a] > c.q[b]; });
    std::vector<char> in(V, 0);
    for (int64_t r = 1; r < std::min<int64_t>(12, static_cast<int64_t>(sup.size())); r += 2) in[sup[r]] = 1;
    for (int64_t y : g.choose(static_cast<int64_t>(sup.size()), static_cast<int64_t>(sup.size())))
        if (std::count(in.begin(), in.end(), 1) < m) in[sup[y]] = 1;
    for (int64_t y : g.choose(V, V))
        if (in[y]) c.head.push_back(static_cast<int32_t>(y));
    c.env.unit(n, c.gr.G);
    std::vector<double> e(c.gr.G), b(c.gr.G);
    int64_t j = 0;
    for (int32_t y : sup) {
        if (in[y]) continue;
        c.gr.factors(c.q[y], e.data(), b.data());
        c.env.add(e.data(), b.data(), j++ % 3 == 0 ? 0.0 : 1.0, c.q[y]);
    }
    return c;
}

// Largest relative difference of the two forms' scans over a few orders and weight patterns of
// one sweep; `perturb`: the with-e form sees the largest token at weight 0.3 (1 + 1e-9) (the negative
// control).
static double compare_scans(Gen& g, Case& c, bool perturb) {
    W::PrefixEventSweep S;
    std::vector<W::Chunk> ch;
    std::vector<double> won(c.p.size(), 0.0);
    S.init(c.gr, c.q.data(), c.p.data(), c.head, &ch, &won);
    const int64_t m = static_cast<int64_t>(c.head.size());
    for (int64_t i = 0; i < m; ++i) S.h[i] = i % 4 == 0 ? 1.0 : i % 4 == 1 ? g.uniform() : i % 4 == 2 ? 1.0 : 0.3;
    for (int64_t i = 5; i < m; i += 37) S.retire(i);  // into `fixed`, out of the active set
    double worst = 0.0;
    for (int rep = 0; rep < 3; ++rep) {
        std::vector<int64_t> o = S.active();
        const std::vector<int64_t> perm = g.choose(static_cast<int64_t>(o.size()), static_cast<int64_t>(o.size()));
        std::vector<int64_t> o2(o.size());
        for (std::size_t i = 0; i < o.size(); ++i) o2[i] = o[perm[i]];
        int64_t big = o2[0];
        for (int64_t k : o2)
            if (c.q[c.head[k]] > c.q[c.head[big]] && k != o2[o2.size() / 2]) big = k;
        for (bool zp : {false, true})
            for (int64_t ov : {int64_t{-1}, o2[o2.size() / 2]}) {
                std::vector<double> v[2];
                for (int form = 0; form < 2; ++form) {
                    S.scan_form = form == 1 ? scan_e : nullptr;
                    const double h0 = S.h[big];
                    if (perturb && form == 1) S.h[big] = 0.3 * (1.0 + 1e-9);
                    S.scan(c.env, o2, zp, ov, rep == 1 ? 0.0 : 0.7, v[form]);
                    S.h[big] = h0;
                }
                S.scan_form = nullptr;
                for (std::size_t i = 0; i < o2.size(); ++i) worst = std::max(worst, rel(v[0][i], v[1][i]));
            }
    }
    return worst;
}

static void test_scan_forms(Gen& g) {
    double worst = 0.0, control = 1e300;
    for (int it = 0; it < 12; ++it) {
        const int n = it % 4 == 3 ? static_cast<int>(g.integer(5, 9)) : std::vector<int>{2, 3, 4}[it % 4];
        const int64_t V = g.integer(1500, 4000), m = g.integer(40, 400);
        Case c = make_case(g, V, n, m, it % 2 == 1);
        check::context("scan forms case %d: V = %lld, n = %d, head %zu", it, static_cast<long long>(V), n,
                       c.head.size());
        const double d = compare_scans(g, c, false);
        CHECK_MSG(d <= 1e-13, "scan without e vs with e: relative difference %.3g", d);
        worst = std::max(worst, d);
        control = std::min(control, compare_scans(g, c, true));
    }
    // the negative control: a 1e-9 change of one weight shows far above the tolerance on every case
    CHECK_MSG(control > 1e-11, "the comparison missed a 1e-9 change of a weight (%.3g)", control);
    std::printf("  scan without e vs with e: max relative difference %.2g (control: min %.2g)\n", worst, control);
}

// Whole sweeps in both forms: the same chunks (token and mass) and final weights.
static void test_sweep_forms(Gen& g) {
    double worst = 0.0;
    for (int it = 0; it < 6; ++it) {
        const int n = std::vector<int>{2, 3, 4, 8, 2, 4}[it];
        Case c = make_case(g, g.integer(1500, 3000), n, g.integer(30, 160), it % 2 == 1);
        check::context("sweep forms case %d: n = %d, head %zu", it, n, c.head.size());
        std::vector<W::Chunk> ch[2];
        std::vector<double> h[2];
        for (int form = 0; form < 2; ++form) {
            W::PrefixEventSweep S;
            S.scan_form = form == 1 ? scan_e : nullptr;
            std::vector<double> won(c.p.size(), 0.0);
            S.init(c.gr, c.q.data(), c.p.data(), c.head, &ch[form], &won);
            for (int64_t guard = 0; guard < 8 * static_cast<int64_t>(c.head.size()) + 64; ++guard)
                if (!S.step(c.env, true)) break;
            h[form] = S.h;
        }
        CHECK_EQ(ch[0].size(), ch[1].size());
        if (ch[0].size() != ch[1].size()) continue;
        for (std::size_t i = 0; i < ch[0].size(); ++i) {
            CHECK_MSG(ch[0][i].tok == ch[1][i].tok, "chunk %zu: token %d vs %d", i, ch[0][i].tok, ch[1][i].tok);
            worst = std::max(worst, std::fabs(ch[0][i].mass - ch[1][i].mass));
        }
        for (std::size_t i = 0; i < h[0].size(); ++i) worst = std::max(worst, std::fabs(h[0][i] - h[1][i]));
        CHECK_MSG(worst <= 1e-11, "laid masses / weights differ by %.3g", worst);
    }
    std::printf("  sweeps without e vs with e: %s, max difference of laid masses and weights %.2g\n",
                "same chunk tokens", worst);
}

int main() {
    Gen g(20261217);
    test_scan_forms(g);
    test_sweep_forms(g);
    return check::summary("test_prefix_events");
}
