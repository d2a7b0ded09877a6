// Draft schemes as data (docs/theory/notation.md §1, §5.2): the law of the random drafts and how many of the
// n drafts are the deterministic top tokens of q. Engines draft "topk" (all n deterministic) and
// mixed schemes "top<m>+iid" / "top<m>+wor" (m deterministic, n - m drawn from q over the rest);
// "greedy" is the mixed scheme with m = n - 1, kept under its own name and closed form.
//
// A mixed scheme reduces to its random part: every draft set contains T, so tokens of T are always
// accepted and T acts as one absorbing token t0 (the lowest id of T) with p(t0) = p(T), q(t0) = 0,
// next to q renormalised over V \ T (the "split" below). alpha*_mixed = p(T) + alpha* of the split
// pair at n - m drafts, and any lossless verifier of the split pair becomes one of the mixed scheme
// by mapping an output t0 to a draw from p restricted to T.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mdsd {

enum class Scheme { Iid = 0, Wor = 1, Greedy = 2, Topk = 3 };

// kind Iid / Wor with top > 0 is the mixed scheme "top<top>+iid" / "top<top>+wor".
struct DraftScheme {
    Scheme kind = Scheme::Iid;
    int top = 0;
    bool mixed() const { return top > 0; }
};

inline Scheme parse_scheme(const std::string& s) {
    if (s == "iid") return Scheme::Iid;
    if (s == "wor") return Scheme::Wor;
    if (s == "greedy") return Scheme::Greedy;
    if (s == "topk") return Scheme::Topk;
    throw std::invalid_argument("scheme: unknown dual scheme '" + s + "'");
}

// "iid", "wor", "greedy", "topk", or "top<m>+iid" / "top<m>+wor" with m >= 1 (m < n is checked by the kernels).
inline DraftScheme parse_draft_scheme(const std::string& s) {
    if (s.rfind("top", 0) == 0 && s != "topk") {
        const std::size_t plus = s.find('+');
        const std::string digits = s.substr(3, plus == std::string::npos ? std::string::npos : plus - 3);
        const bool ok = plus != std::string::npos && !digits.empty() && digits.size() <= 6 &&
                        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
        const std::string rest = ok ? s.substr(plus + 1) : "";
        const int m = ok ? std::stoi(digits) : 0;
        if (!ok || m < 1 || (rest != "iid" && rest != "wor"))
            throw std::invalid_argument("scheme: expected 'top<m>+iid' or 'top<m>+wor' with m >= 1, got '" + s + "'");
        return {parse_scheme(rest), m};
    }
    return {parse_scheme(s), 0};
}

// The m most probable tokens of q among those with q > 0 (ties: lower id first), as sorted ids.
inline void top_tokens(const double* q, int64_t V, int m, std::vector<int32_t>& top, const char* what) {
    top.clear();
    if (m <= 0) return;
    std::vector<int32_t> idx;
    idx.reserve(V);
    for (int64_t i = 0; i < V; ++i)
        if (q[i] > 0.0) idx.push_back(static_cast<int32_t>(i));
    if (static_cast<int64_t>(idx.size()) < m)
        throw std::invalid_argument(std::string("n: ") + what + " need at least " + std::to_string(m) +
                                    " tokens with q > 0, q has " + std::to_string(idx.size()));
    auto better = [&](int32_t a, int32_t b) { return q[a] > q[b] || (q[a] == q[b] && a < b); };
    std::nth_element(idx.begin(), idx.begin() + (m - 1), idx.end(), better);
    top.assign(idx.begin(), idx.begin() + m);
    std::sort(top.begin(), top.end());
}

// Greedy drafts: T = top n-1 of q; the last draft needs one more token with q > 0.
inline void greedy_top(const double* q, int64_t V, int n, std::vector<int32_t>& top) {
    top_tokens(q, V, n, top, "greedy drafts");  // checks n tokens with q > 0
    top_tokens(q, V, n - 1, top, "greedy drafts");
}

// The split pair of a mixed scheme: T, and p, q with T collapsed into the absorbing token t0.
struct TopSplit {
    std::vector<int32_t> T;
    std::vector<double> p, q;  // p(t0) = p(T), p = 0 elsewhere on T; q = 0 on T, q / q(V \ T) elsewhere
    int32_t t0 = -1;
    double pT = 0.0;
    double rest = 0.0;  // q(V \ T), summed directly (accurate when small)

    // `rest_scheme` draws n_rest tokens over V \ T: "wor" needs n_rest more tokens with q > 0, "iid" one.
    void build(const double* pp, const double* qq, int64_t V, int m, int n_rest, Scheme rest_scheme) {
        const int need = m + (rest_scheme == Scheme::Wor ? n_rest : 1);
        top_tokens(qq, V, need, T, "mixed drafts");  // the count check only
        top_tokens(qq, V, m, T, "mixed drafts");
        split(pp, qq, V);
    }

    // The split pair of T (set by the caller: sorted ids, at least one).
    void split(const double* pp, const double* qq, int64_t V) {
        p.assign(pp, pp + V);
        q.assign(qq, qq + V);
        pT = 0.0;
        for (int32_t t : T) {
            pT += p[t];
            p[t] = 0.0;
            q[t] = 0.0;
        }
        t0 = T.front();
        p[t0] = pT;
        rest = 0.0;
        for (int64_t i = 0; i < V; ++i) rest += q[i];
        for (int64_t i = 0; i < V; ++i) q[i] /= rest;
    }
};

}  // namespace mdsd
