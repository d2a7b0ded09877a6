// The tree value recursion (trees/value.hpp) without Python:
//   * a chain verified by sd: L = sum_k prod_{j <= k} min(1, p_j(x_j) / q_j(x_j)) for the drafted x;
//   * a branching tree verified by rrs: L(0) equals the sum of the reach probabilities, every
//     reach is the product of the node laws (RowBase::law read directly) along the path, and the
//     depth-1 mass equals the root's law on its children;
//   * leaves and nodes without a verifier use p; bad arrays are refused naming the node.
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "cases.hpp"
#include "check.hpp"
#include "mdsd/trees/value.hpp"

using cases::Gen;
using cases::Vec;
namespace t = mdsd::trees;
namespace v = mdsd::verif;

struct Tree {
    std::vector<int64_t> parent, token, draw_ptr{0}, draw_child;
    Vec p, q;
    int64_t V = 0;
    t::TreeView view() const {
        t::TreeView tv;
        tv.N = static_cast<int64_t>(parent.size());
        tv.V = V;
        tv.parent = parent.data();
        tv.token = token.data();
        tv.p = p.data();
        tv.q = q.data();
        tv.draw_ptr = draw_ptr.data();
        tv.draw_child = draw_child.data();
        return tv;
    }
    int64_t add(Gen& g, int64_t par, int64_t tok) {
        parent.push_back(par);
        token.push_back(tok);
        Vec pr, qr;
        cases::random_case(g, V, pr, qr);
        p.insert(p.end(), pr.begin(), pr.end());
        q.insert(q.end(), qr.begin(), qr.end());
        return static_cast<int64_t>(parent.size()) - 1;
    }
};

static void test_sd_chain() {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        Gen g(seed);
        Tree tr;
        tr.V = 6;
        tr.add(g, -1, -1);
        for (int k = 0; k < 4; ++k) {  // each node drafts one token with q > 0
            const int64_t i = k;
            int64_t x = 0;
            while (tr.q[i * tr.V + x] == 0.0) ++x;
            x = (x + g.integer(0, tr.V - 1)) % tr.V;
            while (tr.q[i * tr.V + x] == 0.0) x = (x + 1) % tr.V;
            tr.add(g, i, x);
            tr.draw_child.push_back(i + 1);
            tr.draw_ptr.push_back(static_cast<int64_t>(tr.draw_child.size()));
        }
        tr.draw_ptr.push_back(static_cast<int64_t>(tr.draw_child.size()));  // the leaf
        std::vector<t::NodeVerifier> nodes(tr.parent.size(), t::NodeVerifier{v::Kind::Sd, v::Drafter::Iid});
        std::vector<double> reach(tr.parent.size()), law;
        std::vector<int32_t> tuple;
        const double L = t::tree_value(tr.view(), nodes.data(), v::wor::Options{}, false, reach.data(), law, tuple);
        double want = 0.0, prod = 1.0;
        for (int64_t k = 1; k <= 4; ++k) {
            const double pk = tr.p[(k - 1) * tr.V + tr.token[k]], qk = tr.q[(k - 1) * tr.V + tr.token[k]];
            prod *= std::min(1.0, pk / qk);
            want += prod;
        }
        check::context("sd chain, seed %llu", static_cast<unsigned long long>(seed));
        CHECK_NEAR(L, want, 1e-13);
    }
}

static void test_rrs_tree() {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
        Gen g(100 + seed);
        Tree tr;
        tr.V = 8;
        tr.add(g, -1, -1);
        // root drafts (a, b, a) i.i.d.; child a drafts (c, d); others are leaves
        std::vector<int64_t> sup;
        for (int64_t x = 0; x < tr.V; ++x)
            if (tr.q[x] > 0) sup.push_back(x);
        const int64_t a = tr.add(g, 0, sup[0]), b = tr.add(g, 0, sup[1]);
        tr.draw_child = {a, b, a};
        tr.draw_ptr.push_back(3);
        std::vector<int64_t> sa;
        for (int64_t x = 0; x < tr.V; ++x)
            if (tr.q[a * tr.V + x] > 0) sa.push_back(x);
        const int64_t c = tr.add(g, a, sa[0]), d = tr.add(g, a, sa.back());
        tr.draw_child.insert(tr.draw_child.end(), {c, d});
        tr.draw_ptr.insert(tr.draw_ptr.end(), {5, 5, 5, 5});
        std::vector<t::NodeVerifier> nodes(5, t::NodeVerifier{v::Kind::Rrs, v::Drafter::Iid});
        std::vector<double> reach(5), law;
        std::vector<int32_t> tuple;
        const t::TreeView tv = tr.view();
        tv.check();
        const double L = t::tree_value(tv, nodes.data(), v::wor::Options{}, false, reach.data(), law, tuple);
        check::context("rrs tree, seed %llu", static_cast<unsigned long long>(seed));
        CHECK_NEAR(L, reach[1] + reach[2] + reach[3] + reach[4], 1e-14);
        // the root's law read directly
        auto root = v::prepare_row(v::Kind::Rrs, tr.p.data(), tr.q.data(), tr.V, 3, v::Drafter::Iid, nullptr);
        const int32_t tup0[3] = {static_cast<int32_t>(tr.token[a]), static_cast<int32_t>(tr.token[b]),
                                 static_cast<int32_t>(tr.token[a])};
        std::vector<double> law0(tr.V, 0.0);
        root->law(tup0, law0.data(), false);
        CHECK_NEAR(reach[a], law0[tr.token[a]], 1e-15);
        CHECK_NEAR(reach[b], law0[tr.token[b]], 1e-15);
        auto row_a = v::prepare_row(v::Kind::Rrs, tr.p.data() + a * tr.V, tr.q.data() + a * tr.V, tr.V, 2,
                                    v::Drafter::Iid, nullptr);
        const int32_t tupa[2] = {static_cast<int32_t>(tr.token[c]), static_cast<int32_t>(tr.token[d])};
        std::vector<double> lawa(tr.V, 0.0);
        row_a->law(tupa, lawa.data(), false);
        CHECK_NEAR(reach[c], reach[a] * lawa[tr.token[c]], 1e-15);
        CHECK_NEAR(reach[d], reach[a] * lawa[tr.token[d]], 1e-15);
        // without verifiers every node draws from p
        std::vector<t::NodeVerifier> none(5);
        const double Lp = t::tree_value(tv, none.data(), v::wor::Options{}, false, reach.data(), law, tuple);
        const double pa = tr.p[tr.token[a]], pb = tr.p[tr.token[b]];
        const double pc = tr.p[a * tr.V + tr.token[c]], pd = tr.p[a * tr.V + tr.token[d]];
        CHECK_NEAR(Lp, pa * (1 + pc + pd) + pb, 1e-14);
    }
}

static void test_refusals() {
    Gen g(7);
    Tree tr;
    tr.V = 4;
    tr.add(g, -1, -1);
    tr.add(g, 0, 1);
    tr.draw_child = {1};
    tr.draw_ptr = {0, 1, 1};
    tr.parent[1] = 1;  // not an earlier node
    CHECK_THROWS(tr.view().check(), std::invalid_argument);
    tr.parent[1] = 0;
    tr.token[1] = 4;  // outside [0, V)
    CHECK_THROWS(tr.view().check(), std::invalid_argument);
}

int main() {
    test_sd_chain();
    test_rrs_tree();
    test_refusals();
    return check::summary("test_trees");
}
