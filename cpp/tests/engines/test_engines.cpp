// The engine reference kernels (mdsd/engines/): the sampling primitives at their boundaries,
// vLLM's accept / recover / greedy / bonus rules and placeholder drafts on hand-made requests, the
// rows validated in the kernels' pass (float32 and float64), SGLang's tree rule on its published
// vector and the boundary cases of SGLang PR #35798 (with the rule before it), the tree shape
// check, and a registry verifier's node stream. Small arrays: cheap under ASan / UBSan.
#include <cmath>
#include <cstdint>
#include <utility>
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
    CHECK_EQ(e::inverse_cdf(z, 3, 0.5), -1);  // zero mass: the caller's fallback
    // coin * total rounded up to total: the last token with mass (flashinfer's last_valid_id)
    const double r[] = {0.1, 0.2, 0.0};
    const double u = 1.0 - 0x1p-53;
    if (u * (0.1 + 0.2) >= 0.1 + 0.2) CHECK_EQ(e::inverse_cdf(r, 3, u), 1);
    const float f[] = {0.0f, 0.25f, 0.0f, 0.75f};
    CHECK_EQ(e::inverse_cdf(f, 4, 0.25), 3);
    CHECK_EQ(e::first_argmax(f, 4), 3);
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
    e::ChainBatch<double, double> c;
    c.B = 1, c.T = 2, c.V = 3, c.max_spec_len = 2;
    c.target_stride = c.draft_stride = c.noise_stride = 3;
    c.draft_token_ids = ids, c.cu_num_draft_tokens = cu, c.draft_probs = q, c.target_probs = p;
    c.bonus_token_ids = bonus, c.recovery_noise = noise;
    auto run = [&](double u0, double u1) {
        const double u[] = {u0, u1};
        c.uniform_probs = u;
        std::vector<int32_t> out(3, -1);
        e::ChainErrors err;
        e::rejection_sample_request(c, 0, out.data(), err);
        CHECK(err.row[0] == -1 && err.row[1] == -1 && err.row[2] == -1 && err.row[3] == -1);
        return out;
    };
    // u = 0 accepts p(x) = 0 (0 / 1 >= 0); then p/q = 1 >= u accepts; then the bonus
    CHECK(run(0.0, 0.999) == (std::vector<int32_t>{2, 1, 0}));
    // u > 0 rejects x = 2 (p = 0): recovered argmax max(p - q, 0) = (0.5, 0.5, 0) -> 0 (ties: lowest)
    CHECK(run(0.1, 0.5) == (std::vector<int32_t>{0, -1, -1}));
    // a -1 placeholder draft is rejected even at u = 0, and never read as an index
    const int64_t placeholder[] = {-1, 1};
    c.draft_token_ids = placeholder;
    CHECK(run(0.0, 0.0) == (std::vector<int32_t>{0, -1, -1}));
    c.draft_probs = nullptr;  // n-gram: recovered from p itself (nothing zeroed)
    CHECK(run(0.0, 0.0) == (std::vector<int32_t>{0, -1, -1}));
    c.draft_probs = q, c.draft_token_ids = ids;
    // greedy: argmax of p at each position, stop at the first mismatch (argmax written)
    const uint8_t greedy[] = {1};
    c.is_greedy = greedy;
    CHECK(run(0.5, 0.5) == (std::vector<int32_t>{0, -1, -1}));
    c.draft_token_ids = placeholder;
    CHECK(run(0.5, 0.5) == (std::vector<int32_t>{0, -1, -1}));
}

static void test_vllm_validation() {
    // float32 rows read in place; row 1 of the target has a NaN, row 0 of the draft sums to 2
    const int64_t ids[] = {0, 1};
    const int64_t cu[] = {2};
    const float p[] = {0.5f, 0.5f, 0.0f, 0.2f, NAN, 0.5f};
    const float q[] = {1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    const int64_t bonus[] = {0};
    const float noise[] = {1.0f, 0.0f, 1.0f};  // 0 noise: refused
    const double u[] = {0.5, 1.0};  // 1 is outside [0, 1)
    e::ChainBatch<float, float> c;
    c.B = 1, c.T = 2, c.V = 3, c.max_spec_len = 2;
    c.target_stride = c.draft_stride = c.noise_stride = 3;
    c.draft_token_ids = ids, c.cu_num_draft_tokens = cu, c.draft_probs = q, c.target_probs = p;
    c.bonus_token_ids = bonus, c.recovery_noise = noise, c.uniform_probs = u;
    std::vector<int32_t> out(3, -1);
    e::ChainErrors err;
    e::rejection_sample_request(c, 0, out.data(), err);
    CHECK_EQ(err.row[0], 1);
    CHECK_EQ(err.kind[0], mdsd::validate::kNonFinite);
    CHECK_EQ(err.row[1], 0);
    CHECK_EQ(err.kind[1], mdsd::validate::kOffSum);
    CHECK_EQ(err.row[2], 1);
    CHECK_EQ(err.row[3], 0);
    CHECK(out == (std::vector<int32_t>{-1, -1, -1}));  // nothing sampled from broken rows
}

static e::TreeBatch<double> sglang_vector(std::vector<double>& tp, int64_t b) {
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
    e::TreeBatch<double> t;
    t.B = 1, t.N = 6, t.V = 20, t.num_spec = 4, t.target_stride = 20;
    t.candidates = cand[b], t.retrive_index = idx[b], t.next_token = nxt[b], t.next_sibling = sib[b];
    t.uniform_samples = coins, t.uniform_final = final_coin, t.target_probs = tp.data();
    return t;
}

static void test_sglang_vector() {
    const std::vector<std::vector<int64_t>> want_pred = {{3, -1, -1, 4, 5, 18}, {11, -1, -1, -1, 12, 18}};
    const std::vector<std::vector<int64_t>> want_acc = {{0, 3, 4, 5}, {6, 10, 11, -1}};
    const int64_t want_num[] = {3, 2};
    for (int64_t b = 0; b < 2; ++b) {
        for (e::Rule rule : {e::Rule::Sglang, e::Rule::SglangPre35798}) {
            std::vector<double> tp, resid;
            std::vector<int64_t> rejected;
            const e::TreeBatch<double> t = sglang_vector(tp, b);
            std::vector<int32_t> pred(12, -1), acc(4, -1), num(1, -1);
            const e::TreeOut o{pred.data(), acc.data(), num.data()};
            e::sglang_request(t, 0, rule, 1.0, 1.0, o, resid, rejected);
            // request b's slots are retrive_index[b] = 6 b + i
            CHECK(std::vector<int64_t>(pred.begin() + 6 * b, pred.begin() + 6 * b + 6) == want_pred[b]);
            CHECK(std::vector<int64_t>(acc.begin(), acc.end()) == want_acc[b]);
            CHECK_EQ(num[0], want_num[b]);
        }
    }
}

// One root with children of the given tokens, root row p, coin c; returns (predicts[0], accepted).
static std::pair<int, int> root_case(std::vector<int64_t> toks, std::vector<double> p, double coin, double th_single,
                                     e::Rule rule) {
    const int64_t N = static_cast<int64_t>(toks.size()) + 1, V = static_cast<int64_t>(p.size());
    std::vector<int64_t> cand{0}, idx(N), nxt(N, -1), sib(N, -1);
    for (int64_t i = 0; i < N; ++i) idx[i] = i;
    cand.insert(cand.end(), toks.begin(), toks.end());
    nxt[0] = 1;
    for (int64_t i = 1; i + 1 < N; ++i) sib[i] = i + 1;
    std::vector<double> tp(N * V, 0.0), coins(N, 0.0);
    for (int64_t v = 0; v < V; ++v) tp[v] = p[v];
    for (int64_t i = 1; i < N; ++i) tp[i * V] = 1.0;
    coins[0] = coin;
    const double fin[] = {0.0};
    e::TreeBatch<double> t;
    t.B = 1, t.N = N, t.V = V, t.num_spec = 2, t.target_stride = V;
    t.candidates = cand.data(), t.retrive_index = idx.data(), t.next_token = nxt.data(), t.next_sibling = sib.data();
    t.uniform_samples = coins.data(), t.uniform_final = fin, t.target_probs = tp.data();
    std::vector<int32_t> pred(N, -1), acc(2, -1), num(1, -1);
    std::vector<double> resid;
    std::vector<int64_t> rejected;
    e::sglang_request(t, 0, rule, th_single, 1.0, e::TreeOut{pred.data(), acc.data(), num.data()}, resid, rejected);
    return {pred[0], num[0]};
}

static void test_sglang_35798() {
    using R = std::pair<int, int>;
    const auto now = e::Rule::Sglang, pre = e::Rule::SglangPre35798;
    // SGLang PR #35798's boundary cases: a zero-mass child is never accepted, the CDF is half-open
    CHECK(root_case({2}, {0.0, 1.0, 0.0}, 0.0, 0.0, now) == R(1, 0));
    CHECK(root_case({2}, {0.0, 1.0, 0.0}, 0.0, 1.0, now) == R(1, 0));
    CHECK(root_case({1, 2, 3}, {0.0, 0.25, 0.0, 0.75}, 0.25, 1.0, now) == R(3, 1));
    CHECK(root_case({1}, {0.0, 0.25, 0.75}, 0.0, 1.0, now) == R(1, 1));
    CHECK(root_case({1}, {0.0, 1.0}, 1.0 - 0x1p-24, 1.0, now) == R(1, 1));
    // the rule before it accepted the zero-mass child and took the closed interval
    CHECK(root_case({2}, {0.0, 1.0, 0.0}, 0.0, 1.0, pre) == R(2, 1));
    CHECK(root_case({1, 2, 3}, {0.0, 0.25, 0.0, 0.75}, 0.25, 1.0, pre) == R(1, 1));
    // every child rejected, empty residual: the last rejected child with mass (V - 1 before)
    CHECK(root_case({0, 1}, {0.5, 0.49995, 0.0}, 0.99999, 1.0, now) == R(1, 0));
    CHECK(root_case({0, 1}, {0.5, 0.49995, 0.0}, 0.99999, 1.0, pre) == R(2, 0));
}

static void test_tree_shape() {
    std::vector<double> tp;
    e::TreeBatch<double> t = sglang_vector(tp, 0);
    std::vector<int64_t> seen, stack;
    e::TreeErrors err;
    CHECK_EQ(e::tree_check(t, 0, seen, stack, err), 3);
    CHECK(err.twice == -1 && err.row[0] == -1);
    const int64_t cyc[] = {-1, 3, -1, 1, -1, -1};  // 1 -> 3 -> 1: a sibling cycle
    t.next_sibling = cyc;
    e::tree_check(t, 0, seen, stack, err);
    CHECK_EQ(err.twice, 1);
    tp[2 * 20 + 5] = -0.5;  // node 2's row: a negative entry
    e::TreeErrors bad;
    e::tree_check(t, 0, seen, stack, bad);
    CHECK_EQ(bad.row[0], 2);
    CHECK_EQ(bad.kind[0], mdsd::validate::kNegative);
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
    e::TreeBatch<double> t;
    t.B = 1, t.N = 2, t.V = 3, t.num_spec = 2, t.target_stride = t.draft_stride = 3;
    t.candidates = cand, t.retrive_index = idx, t.next_token = nxt, t.next_sibling = sib;
    t.uniform_samples = coins, t.uniform_final = fin, t.target_probs = tp, t.draft_probs = tp;
    e::RegistryRule rule;  // sd, iid drafts
    rule.n_max = 1;
    e::TreeScratch ws;
    std::vector<int32_t> pred(2, -1), acc(2, -1), num(1, -1);
    e::registry_request(t, 0, rule, e::TreeOut{pred.data(), acc.data(), num.data()}, ws);
    CHECK(pred == (std::vector<int32_t>{1, 2}));  // 0.1 + 0.2 < 0.9 * 1.0: token 2
    CHECK(acc == (std::vector<int32_t>{0, 1}));
    CHECK_EQ(num[0], 1);
}

int main() {
    test_primitives();
    test_vllm_rules();
    test_vllm_validation();
    test_sglang_vector();
    test_sglang_35798();
    test_tree_shape();
    test_registry_node_stream();
    return check::summary("test_engines");
}
