// The engine reference kernels (mdsd/engines/): the sampling primitives at their boundaries,
// vLLM's accept / recover / greedy / bonus rules on hand-made requests, SGLang's tree rule on its
// published vector, the tree shape check, and a registry verifier's node stream.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "check.hpp"
#include "mdsd/engines/tree.hpp"
#include "mdsd/engines/vllm.hpp"

namespace e = mdsd::engines;

static void test_primitives() {
    const double x[] = {0.1, 0.4, 0.4, 0.1};
    CHECK_EQ(e::first_argmax(x, 4), 1);  // lowest index on ties
    const double w[] = {0.0, 0.25, 0.0, 0.75};
    CHECK_EQ(e::inverse_cdf(w, 4, 0.0), 1);    // the first token with mass, never a zero one
    CHECK_EQ(e::inverse_cdf(w, 4, 0.25), 3);   // cdf must exceed u strictly: 0.25 > 0.25 is false
    CHECK_EQ(e::inverse_cdf(w, 4, 0.2499), 1);
    const double z[] = {0.0, 0.0, 0.0};
    CHECK_EQ(e::inverse_cdf(z, 3, 0.5), 2);  // zero mass: V - 1, flashinfer's initial sampled_id
    CHECK(e::double_bits(0.5) == 0x3FE0000000000000ull);
}

static void test_vllm_rules() {
    // one request, 2 drafts, V = 3; rows: p, q
    const int64_t ids[] = {2, 1};
    const int64_t cu[] = {2};
    const double p[] = {0.5, 0.5, 0.0, 0.2, 0.3, 0.5};
    const double q[] = {0.0, 0.0, 1.0, 0.6, 0.3, 0.1};
    const int64_t bonus[] = {0};
    const double noise[] = {1.0, 1.0, 1.0};
    e::ChainBatch c;
    c.B = 1, c.T = 2, c.V = 3, c.max_spec_len = 2;
    c.draft_token_ids = ids, c.cu_num_draft_tokens = cu, c.draft_probs = q, c.target_probs = p;
    c.bonus_token_ids = bonus, c.recovery_noise = noise;
    std::vector<double> score;
    auto run = [&](double u0, double u1) {
        const double u[] = {u0, u1};
        c.uniform_probs = u;
        std::vector<int64_t> out(3, e::kPlaceholder);
        e::rejection_sample_request(c, 0, out.data(), score);
        return out;
    };
    // u = 0 accepts p(x) = 0 (0 / 1 >= 0); then p/q = 1 >= u accepts; then the bonus
    CHECK(run(0.0, 0.999) == (std::vector<int64_t>{2, 1, 0}));
    // u > 0 rejects x = 2 (p = 0): recovered argmax max(p - q, 0) = (0.5, 0.5, 0) -> 0 (ties: lowest)
    CHECK(run(0.1, 0.5) == (std::vector<int64_t>{0, -1, -1}));
    // greedy: argmax of p at each position, stop at the first mismatch (argmax written)
    const uint8_t greedy[] = {1};
    c.is_greedy = greedy;
    CHECK(run(0.5, 0.5) == (std::vector<int64_t>{0, -1, -1}));
}

static e::TreeBatch sglang_vector(std::vector<double>& tp, int64_t b) {
    // sgl-kernel's test_tree_speculative_sampling_target_only, request b, as one-hot rows
    static const int64_t cand[2][6] = {{0, 1, 2, 3, 4, 5}, {7, 8, 9, 10, 11, 12}};
    static const int64_t idx[2][6] = {{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}};
    static const int64_t nxt[2][6] = {{1, 2, -1, 4, 5, -1}, {4, 2, 3, -1, 5, -1}};
    static const int64_t sib[2][6] = {{-1, 3, -1, -1, -1, -1}, {-1, -1, -1, -1, 1, -1}};
    static const double coins[6] = {0.3, 0.6, 0.2, 0.9, 0.4, 0.7};
    static const double final_coin[1] = {0.5};
    const int64_t hot[2][6] = {{3, 18, 18, 4, 5, 18}, {11, 18, 18, 18, 12, 18}};
    tp.assign(6 * 20, 0.0);
    for (int i = 0; i < 6; ++i) tp[i * 20 + hot[b][i]] = 1.0;
    e::TreeBatch t;
    t.B = 1, t.N = 6, t.V = 20, t.num_spec = 4;
    t.candidates = cand[b], t.retrive_index = idx[b], t.next_token = nxt[b], t.next_sibling = sib[b];
    t.uniform_samples = coins, t.uniform_final = final_coin, t.target_probs = tp.data();
    return t;
}

static void test_sglang_vector() {
    const std::vector<std::vector<int64_t>> want_pred = {{3, -1, -1, 4, 5, 18}, {11, -1, -1, -1, 12, 18}};
    const std::vector<std::vector<int64_t>> want_acc = {{0, 3, 4, 5}, {6, 10, 11, -1}};
    const int64_t want_num[] = {3, 2};
    for (int64_t b = 0; b < 2; ++b) {
        std::vector<double> tp, resid;
        std::vector<int64_t> rejected;
        const e::TreeBatch t = sglang_vector(tp, b);
        std::vector<int64_t> pred(12, e::kPlaceholder), acc(4, e::kPlaceholder), num(1, e::kPlaceholder);
        const e::TreeOut o{pred.data(), acc.data(), num.data()};
        e::sglang_request(t, 0, 1.0, 1.0, o, resid, rejected);
        // request b's slots are retrive_index[b] = 6 b + i
        CHECK(std::vector<int64_t>(pred.begin() + 6 * b, pred.begin() + 6 * b + 6) == want_pred[b]);
        CHECK(acc == want_acc[b]);
        CHECK_EQ(num[0], want_num[b]);
    }
}

static void test_tree_shape() {
    std::vector<double> tp;
    e::TreeBatch t = sglang_vector(tp, 0);
    std::vector<int64_t> seen, stack;
    CHECK_EQ(e::tree_depth(t, 0, seen, stack), 3);
    const int64_t cyc[] = {-1, 3, -1, 1, -1, -1};  // 1 -> 3 -> 1: a sibling cycle
    t.next_sibling = cyc;
    CHECK_THROWS(e::tree_depth(t, 0, seen, stack), std::invalid_argument);
}

static void test_registry_node_stream() {
    // sd at a root with one child whose p = q: accepted whatever the stream (p/q = 1), then the
    // bonus drawn from the child's row by inverse CDF
    const int64_t cand[] = {0, 1};
    const int64_t idx[] = {0, 1};
    const int64_t nxt[] = {1, -1};
    const int64_t sib[] = {-1, -1};
    const double coins[] = {0.25, 0.75};
    const double fin[] = {0.9};
    const double tp[] = {0.5, 0.5, 0.0, 0.1, 0.2, 0.7};
    e::TreeBatch t;
    t.B = 1, t.N = 2, t.V = 3, t.num_spec = 2;
    t.candidates = cand, t.retrive_index = idx, t.next_token = nxt, t.next_sibling = sib;
    t.uniform_samples = coins, t.uniform_final = fin, t.target_probs = tp, t.draft_probs = tp;
    e::RegistryRule rule;  // sd, iid drafts
    rule.n_max = 1;
    e::TreeScratch ws;
    std::vector<int64_t> pred(2, e::kPlaceholder), acc(2, e::kPlaceholder), num(1, e::kPlaceholder);
    e::registry_request(t, 0, rule, e::TreeOut{pred.data(), acc.data(), num.data()}, ws);
    CHECK(pred == (std::vector<int64_t>{1, 2}));  // 0.1 + 0.2 < 0.9 * 1.0: token 2
    CHECK(acc == (std::vector<int64_t>{0, 1}));
    CHECK_EQ(num[0], 1);
}

int main() {
    test_primitives();
    test_vllm_rules();
    test_sglang_vector();
    test_tree_shape();
    test_registry_node_stream();
    return check::summary("test_engines");
}
