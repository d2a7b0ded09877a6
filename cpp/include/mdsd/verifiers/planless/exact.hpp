// Exact acceptance without a plan: the verifiers whose acceptance is a closed form or a per-row
// formula ("sd", "rrs", "kseq", "greedy", "topk", "spechub"), one row at a time, each in a few
// linear passes over the row (bound as _core.verifiers.exact_closed). A plan would copy the row,
// sort it by p/q and build samplers, none of which the number needs.
//
// Same numbers as the plans' exact(): "sd", "greedy", "topk" and "spechub" run the plans' own sums
// in the plans' own (token-id) order on the same normalised row, so they give the same bits.
// "rrs" and "kseq" need sums over the tokens above a threshold, which the plans take as differences
// of prefix sums in ratio order; here they are term-by-term sums in id order (planless/rrs.hpp,
// planless/kseq.hpp, the route verify already takes): up to ~2e-13 apart, and these the closer to
// the exact value (tests/verifiers/test_closed_forms.py).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mdsd/verifiers/planless/batch.hpp"

namespace mdsd::verif::direct {

enum class Closed { Sd, Rrs, Kseq, Greedy, Topk, SpecHub };

inline bool parse_closed(const std::string& name, Closed& out) {
    if (name == "sd") out = Closed::Sd;
    else if (name == "rrs") out = Closed::Rrs;
    else if (name == "kseq") out = Closed::Kseq;
    else if (name == "greedy") out = Closed::Greedy;
    else if (name == "topk") out = Closed::Topk;
    else if (name == "spechub") out = Closed::SpecHub;
    else return false;
    return true;
}

// The m tokens scheme.hpp's top_tokens picks (largest q, lowest id on ties), in increasing id
// order, by one scan keeping the best m so far (m is a draft count: small), or for m > 32 by
// top_tokens' selection; false when fewer than
// `need` tokens have q > 0 (`support` then holds their number).
inline bool top_small(const double* q, int64_t V, int m, int need, std::vector<int32_t>& top, int64_t& support) {
    top.clear();
    support = 0;
    if (m > 32) {  // many drafts: count, then select as top_tokens does
        for (int64_t i = 0; i < V; ++i) support += q[i] > 0.0;
        if (support < need) return false;
        top_tokens(q, V, m, top, "drafts");
        return true;
    }
    auto better = [&](int32_t a, int32_t b) { return q[a] > q[b] || (q[a] == q[b] && a < b); };
    for (int64_t i = 0; i < V; ++i) {
        if (!(q[i] > 0.0)) continue;
        ++support;
        const int32_t x = static_cast<int32_t>(i);
        if (static_cast<int>(top.size()) < m) {
            top.insert(std::upper_bound(top.begin(), top.end(), x, better), x);
        } else if (m > 0 && better(x, top.back())) {
            top.pop_back();
            top.insert(std::upper_bound(top.begin(), top.end(), x, better), x);
        }
    }
    if (support < need) return false;
    std::sort(top.begin(), top.end());
    return true;
}

// Greedy::exact on the normalised row: T = top n-1 of q, X ~ q renormalised off T.
inline double greedy_exact(const double* p, const double* q, int64_t V, const std::vector<char>& inT) {
    double rest = 0.0;
    for (int64_t i = 0; i < V; ++i)
        if (!inT[i]) rest += q[i];
    double acc = 0.0, rej = 0.0, s = 0.0, rT = 0.0;  // s: the residual's running sum (Categorical's cdf)
    for (int64_t i = 0; i < V; ++i) {
        const double r = inT[i] ? p[i] : std::max(0.0, p[i] - q[i] / rest);
        if (r > 0.0) {
            const double before = s;
            s += r;
            if (inT[i]) rT += s - before;  // Categorical::weight(j): a difference of its running sums
        }
        if (inT[i] || !(q[i] > 0.0)) continue;
        const double qt = q[i] / rest;
        const double a = p[i] >= qt ? 1.0 : p[i] / qt;
        acc += qt * a;
        rej += qt * (1.0 - a);
    }
    if (rej > 0.0 && s > 0.0) acc += rej * rT / s;
    return std::min(acc, 1.0);
}

// SpecHub::exact on the normalised row, hub a = argmax q (lowest id on ties).
inline double spechub_exact(const double* p, const double* q, int64_t V, int32_t a) {
    double qa_rest = 0.0;
    for (int64_t i = 0; i < V; ++i)
        if (i != a) qa_rest += q[i];
    auto ratio = [](double num, double den) { return den > 0.0 ? std::min(1.0, num / den) : 1.0; };
    double SA = 0.0, SB = 0.0, acc = 0.0, rejB = 0.0, rejA = 0.0;
    for (int64_t i = 0; i < V; ++i) {
        if (i == a) continue;
        const double qai = q[a] * q[i] / qa_rest;
        const double pp = std::max(0.0, p[i] - q[i]);
        SA += std::max(0.0, qai - pp);
        SB += std::max(0.0, q[i] - p[i]);
        if (!(q[i] > 0.0)) continue;
        const double ai = ratio(p[i], q[i]), bi = ratio(pp, qai);
        acc += q[i] * ai + qai * bi;
        rejB += q[i] * (1.0 - ai);
        rejA += qai * (1.0 - bi);
    }
    const double ppa = std::max(0.0, p[a] - SA);
    acc += rejB * ratio(ppa, SB) + rejA * ratio(p[a], SA);
    return std::min(acc, 1.0);
}

// One thread's state for the closed forms (the normalised row lives in Scratch).
struct ClosedScratch {
    Scratch row;
    std::vector<int32_t> top;
    std::vector<char> inT;
};

// The exact acceptance of `kind` with n drafts on the normalised row p, q; -1 (and `support` set)
// when q has too few tokens with positive probability for the scheme's deterministic drafts.
inline double closed_form(Closed kind, const double* p, const double* q, int64_t V, int n, ClosedScratch& ws,
                          int64_t& support) {
    switch (kind) {
        case Closed::Sd: {
            double a = 0.0;
            for (int64_t i = 0; i < V; ++i) a += std::min(p[i], q[i]);
            return std::min(a, 1.0);
        }
        case Closed::Rrs: {  // Rrs::prepare's thresholds, its masses summed in id order
            double T = 0.0, M = mass(p, q, V, 0.0);
            const double M0 = M;
            for (int i = 0; i < n && M > 0.0; ++i) {
                T += M;
                M = mass(p, q, V, T);
            }
            return std::min(1.0, std::max(0.0, 1.0 - M / M0));
        }
        case Closed::Kseq: {
            double beta1 = 0.0;
            for (int64_t i = 0; i < V; ++i) beta1 += std::min(p[i], q[i]);
            double rho = 1.0, beta = 0.0;
            kseq_rho(p, q, V, n, beta1, ws.row.kseq, rho, beta);
            return 1.0 - ipow(1.0 - beta, n);
        }
        case Closed::Greedy: {
            if (!top_small(q, V, n - 1, n, ws.top, support)) return -1.0;
            ws.inT.assign(static_cast<std::size_t>(V), 0);
            for (int32_t t : ws.top) ws.inT[t] = 1;
            return greedy_exact(p, q, V, ws.inT);
        }
        case Closed::Topk: {
            if (!top_small(q, V, n, n, ws.top, support)) return -1.0;
            double pT = 0.0;
            for (int32_t t : ws.top) pT += p[t];
            return std::min(pT, 1.0);
        }
        case Closed::SpecHub: {
            if (!top_small(q, V, 1, 2, ws.top, support)) return -1.0;
            return spechub_exact(p, q, V, ws.top[0]);
        }
    }
    throw std::logic_error("closed_form: unknown verifier");
}

}  // namespace mdsd::verif::direct
