// The tight-set sweep: an exact optimal verifier for without-replacement drafts (THEORY §2.3, §3,
// §8.10), on supports small enough to enumerate the draft sets and the token subsets of each
// system, plus the exponential-race oracle (namespace race) the full-vocabulary route builds on.
// Used by "optimal" (optimal.hpp) for scheme "wor".
//
// As for i.i.d. drafts, the certificate H* splits every optimal plan into an outer system (a set
// with a draft in A = supp q \ H* outputs one of its A-drafts, with load a(y) <= p(y)) and an inner
// system (a set inside H* outputs one of its drafts or rejects, with a(y) = p(y) on H*).
//
// Random-utility race. Each token of a system owns a list of "chunks" of its level mass, laid top
// down in one global order (a sweep); a drafted token draws one of its chunks (probability = the
// chunk's mass), and the drafted token whose chunk was laid first wins. Inner tokens lay only part
// of their mass; a draw beyond it lands below every chunk ("reject"). With u_j the mass of token j
// laid so far, laying a chunk of mass d of token y earns y exactly
//     d * w_y,   w_y = E[1{y in S} prod_{j in S, j != y} (1 - u_j)]   (drafts of the system only),
// since y wins from that chunk iff every other drafted token of the system lies below it; w_y does
// not depend on u_y, so every chunk list has exactly computable loads.
//
// The sweep (found and proved for this package, docs/research/OPTIMAL_WOR.md; checked in exact
// rational arithmetic on 1,350 random cases before this implementation). With mu_u(m) = sum over sets whose system part is m
// of Q(S) prod_{j in m} (1 - u_j):
//   outer: Hall slack h(Z) = pi(Z) - mu_u(0 != T subset Z) >= 0 for Z within the active tokens
//     (pi = p - load; initially Hall's condition, i.e. the minimality of H*). Lay a token y outside
//     the largest proper tight set (h = 0), until y is exhausted or a new set Z containing y turns
//     tight: h is submodular, so the tight sets form a lattice, no tight proper set containing y
//     loses slack, and exhaustion of y leaves pi_y = h({y}) >= 0, i.e. load(y) <= p(y).
//   inner: slack s(Y) = mu_u(T meets Y) - pi(Y) >= 0 (minimality of H* against H* \ Y). Lay a
//     token y of the smallest tight set (any active token if none is tight), until pi_y = 0 (y is
//     "done": the rest of its mass lies below reject) or a new set Y without y turns tight. Every
//     inner token ends with won mass exactly p(y): no coin is needed.
// Each step ends with an exhaustion or a new tight set, and tight sets stay tight, so the sweep is
// finite (observed <= 2 steps per token). Together: acceptance p(H*) + Pr[S meets A] = alpha*_wor.
//
// Floating point: slacks within kTol of 0 count as tight; a chunk never exceeds the token's
// remaining mass; the reported loads are recomputed from the stored chunks by enumeration, so the
// residual (THEORY §2.3) absorbs every rounding and the verifier is lossless in every case.
// Cost: O(steps * (sets * n + k 2^k)) per system with k <= kMaxSystem tokens. Larger supports:
// namespace race below evaluates w and set laws by the exponential-race identity; the route built
// on it (Optimal::prepare_wor_race) runs this exact sweep only on a small head/core and is certified
// per row (docs/research/OPTIMAL_WOR.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mdsd/parallel.hpp"
#include "mdsd/wor.hpp"

namespace mdsd::verif::sweep {

constexpr int kMaxSystem = 12;            // tokens per system (subset tables of 2^k)
constexpr int64_t kMaxOrdered = 500000;   // ordered draft tuples enumerated to build the set law
constexpr double kTol = 1e-14;            // slack treated as zero

// Number of ordered without-replacement tuples K (K-1) ... (K-n+1), saturated at cap + 1.
inline int64_t ordered_tuples(int64_t K, int n, int64_t cap) {
    int64_t c = 1;
    for (int j = 0; j < n && j < K; ++j) {
        c *= (K - j);
        if (c > cap) return cap + 1;
    }
    return c;
}

// The law of the draft set under without-replacement sampling from q: (mask over the support
// indices `sup`, probability) pairs, by depth-first enumeration of the ordered tuples (K <= 64).
inline std::vector<std::pair<uint64_t, double>> wor_set_law(const double* q, const std::vector<int32_t>& sup, int n) {
    const int K = static_cast<int>(sup.size());
    const int m = std::min(n, K);
    std::vector<std::pair<uint64_t, double>> acc;
    struct Rec {
        const double* q;
        const std::vector<int32_t>& sup;
        int m, K;
        std::vector<std::pair<uint64_t, double>>& acc;
        void go(int depth, uint64_t used, double pr) {
            if (depth == m) { acc.emplace_back(used, pr); return; }
            // The mass not yet drawn, summed directly: 1 - q(drawn) cancels when it is small.
            double rest = 0.0;
            for (int i = 0; i < K; ++i)
                if (!(used >> i & 1u)) rest += q[sup[i]];
            for (int i = 0; i < K; ++i) {
                if (used >> i & 1u) continue;
                go(depth + 1, used | (uint64_t{1} << i), pr * (q[sup[i]] / rest));
            }
        }
    } rec{q, sup, m, K, acc};
    rec.go(0, 0, 1.0);
    std::sort(acc.begin(), acc.end());
    std::vector<std::pair<uint64_t, double>> out;
    for (const auto& e : acc) {
        if (!out.empty() && out.back().first == e.first) out.back().second += e.second;
        else out.push_back(e);
    }
    return out;
}

// One chunk of a token's level mass: its place in the sweep (global order) and its mass.
struct Chunk {
    int32_t tok;
    double mass;
};

// Sets of one system: the mask of their system tokens and their probability.
struct SystemSets {
    std::vector<uint32_t> mask;
    std::vector<double> prob;
    std::vector<int32_t> sys_tok;  // local index -> token id
};

inline int popcount(uint32_t x) { return __builtin_popcount(x); }

// Subset sums F[Z] = sum_{m subset Z} M[m] over all Z of k bits.
inline void zeta(std::vector<double>& F, int k) {
    const uint32_t N = 1u << k;
    for (int b = 0; b < k; ++b)
        for (uint32_t Z = 0; Z < N; ++Z)
            if (Z >> b & 1u) F[Z] += F[Z ^ (1u << b)];
}

// mu_u(m) aggregated by mask (restricted to `keep`), and per-token weights without the token's own
// factor: W[i] = sum_{m containing i} prob * prod_{j in m, j != i} (1 - u_j)  (= w_i).
inline void aggregate(const SystemSets& S, const std::vector<double>& u, uint32_t keep, int k,
                      std::vector<double>& M, std::vector<double>& W, int only = -1, std::vector<double>* My = nullptr) {
    const uint32_t N = 1u << k;
    M.assign(N, 0.0);
    W.assign(k, 0.0);
    if (My) My->assign(N, 0.0);
    int bits[32];
    for (std::size_t s = 0; s < S.mask.size(); ++s) {
        const uint32_t m = S.mask[s];
        int c = 0;
        for (uint32_t r = m; r; r &= r - 1) bits[c++] = __builtin_ctz(r);
        double full = S.prob[s];
        for (int a = 0; a < c; ++a) full *= (1.0 - u[bits[a]]);
        M[m & keep] += full;
        for (int a = 0; a < c; ++a) {  // without the token's own factor (u may be 1: no division)
            double wo = S.prob[s];
            for (int b = 0; b < c; ++b)
                if (b != a) wo *= (1.0 - u[bits[b]]);
            W[bits[a]] += wo;
            if (My && bits[a] == only) (*My)[m & keep] += wo;
        }
    }
}

// Outer system: every set with a token of the system must output one of them; loads <= p.
inline std::vector<Chunk> outer(const SystemSets& S, const double* p, int k, int64_t& steps) {
    std::vector<double> u(k, 0.0), load(k, 0.0), M, W, My, F, Fy;
    std::vector<char> gone(k, 0);
    std::vector<Chunk> chunks;
    const int max_steps = 8 * k + 64;
    for (steps = 0; steps < max_steps; ++steps) {
        uint32_t act = 0;
        for (int i = 0; i < k; ++i)
            if (!gone[i]) act |= 1u << i;
        if (!act) break;
        aggregate(S, u, ~0u, k, M, W);
        F = M;
        F[0] = 0.0;  // sets without a system token are not in this system
        zeta(F, k);
        auto h = [&](uint32_t Z) {
            double pz = 0.0;
            for (int i = 0; i < k; ++i)
                if (Z >> i & 1u) pz += p[S.sys_tok[i]] - load[i];
            return pz - F[Z];
        };
        // largest proper tight set (submasks of act only: exhausted tokens carry no mass)
        uint32_t Z1 = 0;
        int best = -1;
        for (uint32_t Z = act; Z; Z = (Z - 1) & act) {
            if (Z == act) continue;
            if (popcount(Z) > best && h(Z) <= kTol) { best = popcount(Z); Z1 = Z; }
        }
        // candidate: max rho = pi / ((1-u) w) outside Z1
        int y = -1;
        double best_rho = -1.0;
        for (int i = 0; i < k; ++i) {
            if (gone[i] || (Z1 >> i & 1u)) continue;
            const double R = (1.0 - u[i]) * W[i];
            const double pi = p[S.sys_tok[i]] - load[i];
            const double rho = R > 0.0 ? pi / R : 1e300;
            if (rho > best_rho) { best_rho = rho; y = i; }
        }
        if (y < 0) y = __builtin_ctz(act);  // only if rounding made act itself look tight
        aggregate(S, u, ~0u, k, M, W, y, &My);
        Fy = My;
        zeta(Fy, k);
        const double wy = W[y];
        double d = 1.0 - u[y];
        for (uint32_t Z = act; Z; Z = (Z - 1) & act) {
            if (Z == act || !(Z >> y & 1u)) continue;
            const double r = wy - Fy[Z];  // mass of sets with y whose system part is not inside Z
            if (r > 1e-300) {
                const double hz = std::max(0.0, h(Z));
                if (hz <= kTol) continue;  // tight: y outside Z1 cannot lower it (rate 0 up to rounding)
                d = std::min(d, hz / r);
            }
        }
        if (!(d > 0.0)) d = 1.0 - u[y];
        load[y] += wy * d;
        u[y] += d;
        chunks.push_back({S.sys_tok[y], d});
        if (u[y] >= 1.0 - 1e-15) { u[y] = 1.0; gone[y] = 1; }
    }
    // Anything left (only if the step limit was hit): lay it, the residual absorbs any excess.
    for (int i = 0; i < k; ++i)
        if (!gone[i] && u[i] < 1.0) chunks.push_back({S.sys_tok[i], 1.0 - u[i]});
    return chunks;
}

// Inner system: sets inside H* output one of their tokens or reject; won mass = p.
inline std::vector<Chunk> inner(const SystemSets& S, const double* p, int k, int64_t& steps) {
    std::vector<double> u(k, 0.0), load(k, 0.0), M, W, My, F, Fy;
    std::vector<char> done(k, 0);
    for (int i = 0; i < k; ++i) done[i] = !(p[S.sys_tok[i]] > 0.0);
    std::vector<Chunk> chunks;
    const int max_steps = 8 * k + 64;
    for (steps = 0; steps < max_steps; ++steps) {
        uint32_t act = 0;
        for (int i = 0; i < k; ++i)
            if (!done[i]) act |= 1u << i;
        if (!act) break;
        aggregate(S, u, act, k, M, W);
        F = M;
        zeta(F, k);
        const double tot = F[act];
        auto s_of = [&](uint32_t Y) {
            double pz = 0.0;
            for (int i = 0; i < k; ++i)
                if (Y >> i & 1u) pz += p[S.sys_tok[i]] - load[i];
            return (tot - F[act & ~Y]) - pz;
        };
        uint32_t Y0 = 0;
        int best = 99;
        for (uint32_t Y = act; Y; Y = (Y - 1) & act)
            if (popcount(Y) < best && s_of(Y) <= kTol) { best = popcount(Y); Y0 = Y; }
        const uint32_t cand = Y0 ? Y0 : act;
        int y = -1;
        double best_rho = 1e308;
        for (int i = 0; i < k; ++i) {
            if (!(cand >> i & 1u)) continue;
            const double R = (1.0 - u[i]) * W[i];
            const double pi = p[S.sys_tok[i]] - load[i];
            const double rho = R > 0.0 ? pi / R : 1e300;
            if (y < 0 || rho < best_rho) { best_rho = rho; y = i; }
        }
        aggregate(S, u, act, k, M, W, y, &My);
        Fy = My;
        zeta(Fy, k);
        const double wy = W[y];
        const double pi_y = p[S.sys_tok[y]] - load[y];
        double d = 1.0 - u[y];
        if (wy > 0.0) d = std::min(d, pi_y / wy);
        for (uint32_t Y = act; Y; Y = (Y - 1) & act) {
            if (Y >> y & 1u) continue;
            const double r = wy - Fy[act & ~Y];  // sets with y that meet Y
            if (r > 1e-300) {
                const double sy = std::max(0.0, s_of(Y));
                if (sy <= kTol) continue;
                d = std::min(d, sy / r);
            }
        }
        if (!(d > 0.0) || !(wy > 0.0)) {  // nothing to gain: y cannot win more
            done[y] = 1;
            continue;
        }
        load[y] += wy * d;
        u[y] += d;
        chunks.push_back({S.sys_tok[y], d});
        if (p[S.sys_tok[y]] - load[y] <= kTol * std::max(1.0, p[S.sys_tok[y]]) || u[y] >= 1.0 - 1e-15) done[y] = 1;
    }
    return chunks;
}


// ---------------------------------------------------------------------------------------------
// Full vocabulary: the same race with an exponential-race oracle (docs/research/OPTIMAL_WOR.md).
//
// Without-replacement drafts are the n earliest of independent clocks E_j ~ Exp(q_j), so for token
// weights h (h = 1 - u: the share of a token's level mass not laid above the current level)
//     E[prod_{j in S} h_j] = int_0^inf sum_z h_z q_z e_z(t) [x^{n-1}] prod_{j != z} (e_j + x h_j b_j) dt,
// e_j = exp(-q_j t), b_j = 1 - e_j. A product of token factors is kept as a pair (Pi, D): Pi =
// prod f_j, D = sum_z c_z prod_{j != z} f_j with c_z = h_z q_z e_z (the n-th draft). Then
//     w_y = E[1{y in S} prod_{S \ y} h] = int q_y e_y [x^{n-1}] Pi_{-y} + b_y [x^{n-2}] D_{-y} dt,
// with Pi_{-y}, D_{-y} the pair of every other token, O(n) per node from a prefix pair and a suffix
// pair (no division). Tokens outside the system enter as factors e_j (weight 0: a draft there
// leaves the system) or e_j + x b_j (weight 1). Integration: trapezoid in ln t, M nodes per
// doubling (t_{g+M} = 2 t_g, so e and b follow by squaring), M growing like sqrt(n).
// The step size of the inner rule on prefix tight sets (race::Watch, pairs::Watch2). o: the
// active tokens by descending rho; s: its prefix slacks; the laid token k = o[py] has need pik and
// weight wy. It is laid until done (pik / wy), exhausted (h_k) or until a shorter prefix turns tight.
// A prefix falls at a rate of at most wy, so the rates are needed only when d wy reaches the
// smallest shorter slack; they are affine in h_k, read from the zero-prefix scans at h_k = 1 and 0
// (scan(hk, v)). vs: the slacks' own scan (h_k at its current weight), reused when h_k = 1.
template <class Weight, class Scan>
inline double inner_step(const std::vector<int64_t>& o, const std::vector<double>& s, int64_t py, Weight&& h,
                         double pik, double wy, std::vector<double>& vs, Scan&& scan) {
    const int64_t k = o[py];
    double d = h(k);
    if (wy > 0.0) d = std::min(d, pik / wy);
    double smin = 1e300;
    for (int64_t i = 0; i < py; ++i) smin = std::min(smin, s[i]);
    if (py > 0 && d * wy >= smin) {
        std::vector<double> v1, v0;
        if (h(k) == 1.0) v1.swap(vs);
        else scan(1.0, v1);
        scan(0.0, v0);
        const int64_t a = static_cast<int64_t>(o.size());
        std::vector<double> Rs(a + 1, 0.0);  // Rs[j]: sum over positions >= j of the h_k-slope of h v
        for (int64_t j = a - 1; j >= 0; --j) {
            const double h1 = o[j] == k ? 1.0 : h(o[j]), h0 = o[j] == k ? 0.0 : h(o[j]);
            Rs[j] = Rs[j + 1] + (h1 * v1[j] - h0 * v0[j]);
        }
        for (int64_t i = 0; i < py; ++i) {
            const double r = wy - Rs[i + 1];
            if (r > 1e-300 && s[i] > kTol) d = std::min(d, s[i] / r);
        }
    }
    return d;
}

namespace race {

struct Grid {
    int n = 2;
    int M = 3;                  // nodes per doubling of the geometric part (t_{g+M} = 2 t_g)
    int64_t G = 0;
    int64_t g0 = 0;             // the geometric part starts here; nodes [0, g0) interpolate [0, t_1]
    double t1 = 0.0;            // start of the geometric part
    std::vector<double> t, wt;  // nodes (ascending) and weights
    static constexpr int kSmallNodes = 14;   // Chebyshev nodes on [0, t_1]
    static constexpr double kSmallT = 0.5;   // t_1 q(supp): at most ~0.5 expected arrivals by t_1
    // Trapezoid in s = ln t, t_1 2^{k/M}, over the whole line; it converges exponentially because
    // every integrand here is a smooth bell in s. Above t_1 the nodes are kept as they are, up to
    // t_hi. Below t_1 (where half the nodes used to sit, covering the t^{n-1} rise of the n-th
    // arrival down to 1e-18) the integrand f is entire in t with exponential type <~ 2 q(supp),
    // so it is replaced by its interpolant at kSmallNodes Chebyshev points of [0, t_1] (error
    // ~ 2 (q(supp) t_1 / 2)^N / N! <~ 1e-19 of max |f| there), and the trapezoid's infinite tail
    // sum_{k<0} h t_k f(t_k) becomes sum_i L_i f(tau_i), L_i = sum_{k<0} h t_k l_i(t_k) (l_i: the
    // Lagrange basis). Above t_hi, fewer than n arrivals (among the tokens other than any one y)
    // needs one of the n largest other clocks unrung, probability <= n e^{-q_(n+1) t}
    // (q_(n+1): the (n+1)-th largest mass), so the cut-off mass is <= n^2 e^{-q_(n+1) t_hi} /
    // q_(n+1) <= e^{-45}. With n or fewer tokens, t_hi = 60 / qmin.
    void build(int n_, double qsum, double q_np1, double qmin) {
        n = n_;
        // The n-th arrival is peaked in ln t (width ~ 1/sqrt(n)): the step shrinks with it. Checked by
        // sum_y Pr[y in S] = n: error <= 1e-12 for n <= 64 (M = 3 alone gives 1e-7 at n = 16).
        M = 3 * static_cast<int>(std::ceil(std::sqrt(std::max(1.0, n / 4.0))));
        const double h = std::log(2.0) / M;
        t1 = kSmallT / qsum;
        const double t_hi = q_np1 > 0.0 ? (std::log(static_cast<double>(n) * n / q_np1) + 45.0) / q_np1 : 60.0 / qmin;
        const int64_t ng = static_cast<int64_t>(std::ceil(M * std::log2(std::max(2.0, t_hi / t1)))) + 1;
        constexpr int N = kSmallNodes;
        g0 = N;
        G = g0 + ng;
        t.resize(G);
        wt.resize(G);
        const double pi_ = 3.141592653589793;
        double x[N], bw[N];  // Chebyshev points of [0, t_1] (ascending) and barycentric weights
        for (int i = 0; i < N; ++i) {
            const double th = pi_ * (2.0 * (N - 1 - i) + 1.0) / (2.0 * N);
            x[i] = 0.5 * t1 * (1.0 + std::cos(th));
            bw[i] = ((i & 1) ? -1.0 : 1.0) * std::sin(th);
        }
        for (int i = 0; i < N; ++i) {
            t[i] = x[i];
            wt[i] = 0.0;
        }
        // L_i: the tail nodes t_1 2^{-k/M}, k >= 1, until they no longer count (t_k < 1e-40 t_1).
        for (int64_t k = 1; k <= 140 * M; ++k) {
            const double tk = t1 * std::exp2(-static_cast<double>(k) / M);
            double den = 0.0, l[N];
            int hit = -1;
            for (int i = 0; i < N; ++i) {
                if (tk == x[i]) { hit = i; break; }
                l[i] = bw[i] / (tk - x[i]);
                den += l[i];
            }
            for (int i = 0; i < N; ++i)
                wt[i] += h * tk * (hit >= 0 ? (i == hit ? 1.0 : 0.0) : l[i] / den);
        }
        for (int64_t g = 0; g < ng; ++g) {
            t[g0 + g] = t1 * std::exp2(static_cast<double>(g) / M);
            wt[g0 + g] = h * t[g0 + g];
        }
    }
    // e_g = exp(-x t_g), b_g = 1 - e_g. The interpolation nodes and the first M geometric ones
    // directly: by the series of 1 - e^{-y} while x t <= 1/8 there (one_minus_exp_neg), else by
    // libm. The other geometric nodes by doubling (1 - e^{-2y} = b (2 - b) while b <= 1/2,
    // e^{-2y} = e^2 after).
    void factors(double x, double* e, double* b) const {
        const int64_t direct = g0 + M;  // the interpolation nodes and the first M geometric nodes
        if (x * t[direct - 1] <= kSeriesMaxArg) {
            for (int64_t g = 0; g < direct; ++g) {
                b[g] = one_minus_exp_neg(x * t[g]);
                e[g] = 1.0 - b[g];
            }
        } else {
            for (int64_t g = 0; g < direct; ++g) {
                b[g] = -std::expm1(-x * t[g]);
                e[g] = std::exp(-x * t[g]);
            }
        }
        // by doubling: 1 - e^{-2y} = b (2 - b) while b <= 1/2, e^{-2y} = e^2 after (branch-free)
        for (int64_t g = direct; g < G; ++g) {
            const double bb = b[g - M], ee = e[g - M];
            const double b2 = bb * (2.0 - bb), e2 = ee * ee;
            const bool lo = bb <= 0.5;
            b[g] = lo ? b2 : 1.0 - e2;
            e[g] = lo ? 1.0 - b2 : e2;
        }
    }
};

// (dP, dD) = (sP, sD) times a token factor e + x h b with seed h q e, on n x G coefficient rows
// ([c][g]); in place when d == s (row c reads only rows c and c - 1 of s, and rows go down).
inline void mul_factor(int n, int64_t G, const double* sP, const double* sD, double* dP, double* dD, const double* e,
                       const double* b, double h, double q) {
    if (h == 0.0) {  // the factor is e alone (same values as the general form below)
        for (int c = 0; c < n; ++c) {
            const std::size_t o = static_cast<std::size_t>(c) * G;
            for (int64_t g = 0; g < G; ++g) {
                dD[o + g] = sD[o + g] * e[g];
                dP[o + g] = sP[o + g] * e[g];
            }
        }
        return;
    }
    for (int c = n - 1; c >= 0; --c) {  // row c reads rows c and c - 1 of s: rows go down
        const double* Pc = sP + static_cast<std::size_t>(c) * G;
        const double* Dc = sD + static_cast<std::size_t>(c) * G;
        double* oP = dP + static_cast<std::size_t>(c) * G;
        double* oD = dD + static_cast<std::size_t>(c) * G;
        if (c) {
            const double* Pm = sP + static_cast<std::size_t>(c - 1) * G;
            const double* Dm = sD + static_cast<std::size_t>(c - 1) * G;
            for (int64_t g = 0; g < G; ++g) {
                double dn = Dc[g] * e[g] + h * q * e[g] * Pc[g];
                double pn = Pc[g] * e[g];
                dn += Dm[g] * h * b[g];
                pn += Pm[g] * h * b[g];
                oD[g] = dn;
                oP[g] = pn;
            }
        } else {
            for (int64_t g = 0; g < G; ++g) {
                const double dn = Dc[g] * e[g] + h * q * e[g] * Pc[g];
                const double pn = Pc[g] * e[g];
                oD[g] = dn;
                oP[g] = pn;
            }
        }
    }
}

// (Pi, D) on the grid, coefficients of x^0 .. x^{n-1}, laid out [c][g].
struct Pair {
    int n = 0;
    int64_t G = 0;
    std::vector<double> Pi, D;
    void unit(int n_, int64_t G_) {
        n = n_;
        G = G_;
        Pi.assign(static_cast<std::size_t>(n) * G, 0.0);
        D.assign(static_cast<std::size_t>(n) * G, 0.0);
        std::fill(Pi.begin(), Pi.begin() + G, 1.0);
    }
    // times a token factor e + x h b with seed h q e
    void add(const double* e, const double* b, double h, double q) {
        mul_factor(n, G, Pi.data(), D.data(), Pi.data(), D.data(), e, b, h, q);
    }
    void scale(const double* s) {
        for (int c = 0; c < n; ++c)
            for (int64_t g = 0; g < G; ++g) {
                Pi[static_cast<std::size_t>(c) * G + g] *= s[g];
                D[static_cast<std::size_t>(c) * G + g] *= s[g];
            }
    }
};

// w_y from the pair of the tokens before y (a) and after it (b): Pi_{-y} = a.Pi b.Pi,
// D_{-y} = a.D b.Pi + a.Pi b.D (only the coefficients n-1 and n-2 are needed).
inline double w_raw(const Grid& gr, const double* aP, const double* aD, const double* bP, const double* bD,
                    const double* e, const double* bb, double qy) {
    const int n = gr.n;
    const int64_t G = gr.G;
    double acc = 0.0;
    for (int64_t g = 0; g < G; ++g) {
        double pi = 0.0, d = 0.0;
        for (int i = 0; i < n; ++i) {
            const std::size_t ai = static_cast<std::size_t>(i) * G + g;
            const std::size_t bi = static_cast<std::size_t>(n - 1 - i) * G + g;
            pi += aP[ai] * bP[bi];
            if (i <= n - 2) {
                const std::size_t bj = static_cast<std::size_t>(n - 2 - i) * G + g;
                d += aD[ai] * bP[bj] + aP[ai] * bD[bj];
            }
        }
        acc += gr.wt[g] * (qy * e[g] * pi + bb[g] * d);
    }
    return acc;
}
inline double w_of(const Grid& gr, const Pair& a, const Pair& b, const double* e, const double* bb, double qy) {
    return w_raw(gr, a.Pi.data(), a.D.data(), b.Pi.data(), b.D.data(), e, bb, qy);
}

// Product of two pairs (the tokens of both), truncated at x^{n-1}.
inline Pair mul(const Pair& a, const Pair& b) {
    Pair c;
    c.unit(a.n, a.G);
    std::fill(c.Pi.begin(), c.Pi.end(), 0.0);
    const int n = a.n;
    const int64_t G = a.G;
    for (int i = 0; i < n; ++i)
        for (int j = 0; i + j < n; ++j) {
            const double *ap = &a.Pi[static_cast<std::size_t>(i) * G], *ad = &a.D[static_cast<std::size_t>(i) * G];
            const double *bp = &b.Pi[static_cast<std::size_t>(j) * G], *bd = &b.D[static_cast<std::size_t>(j) * G];
            double *cp = &c.Pi[static_cast<std::size_t>(i + j) * G], *cd = &c.D[static_cast<std::size_t>(i + j) * G];
            for (int64_t g = 0; g < G; ++g) {
                cp[g] += ap[g] * bp[g];
                cd[g] += ad[g] * bp[g] + ap[g] * bd[g];
            }
        }
    return c;
}

// Sweep of `toks` in the given order over an environment `base` (every token outside `toks`):
// token i is laid, given the tokens before it at their final weights (prefix) and those after it at
// weight h0[i] (1 if h0 is null; suffix, rebuilt per block of kBlock from checkpoints). `lay(i, w)`
// returns the token's final weight 1 - u; w_out[i] receives its w at that moment.
// With `ex` (an environment for the same tokens), lay is called as lay(i, w, E), E the weight of
// token i over the sets whose other system tokens all lie before it: prefix at final weights over
// `ex`, suffix at weight 0 (the factor e^{-q(suffix) t}).
constexpr int64_t kBlock = 128;

// Suffix pairs of toks at weight h0 (1 if null) at the block starts: check c = tokens
// [c kBlock, k), flat (Pi then D, 2 S doubles each); check 0 is the product of all of toks.
struct Checks {
    int64_t nb = 0;
    std::size_t S = 0;
    std::vector<double> v;
    Pair at(int64_t c, int n, int64_t G) const {
        Pair x;
        x.n = n;
        x.G = G;
        x.Pi.assign(v.begin() + c * 2 * S, v.begin() + c * 2 * S + S);
        x.D.assign(v.begin() + c * 2 * S + S, v.begin() + (c + 1) * 2 * S);
        return x;
    }
    void put(int64_t c, const Pair& x) {
        std::copy(x.Pi.begin(), x.Pi.end(), v.begin() + c * 2 * S);
        std::copy(x.D.begin(), x.D.end(), v.begin() + c * 2 * S + S);
    }
};
inline Checks suffix_checks(const Grid& gr, const double* q, const std::vector<int32_t>& toks, const double* h0) {
    const int64_t k = static_cast<int64_t>(toks.size()), G = gr.G;
    const int n = gr.n;
    Checks ck;
    ck.S = static_cast<std::size_t>(n) * G;
    ck.nb = (k + kBlock - 1) / kBlock;
    ck.v.resize(static_cast<std::size_t>(ck.nb + 1) * 2 * ck.S);
    std::vector<double> e(G), b(G);
    Pair s;
    s.unit(n, G);
    ck.put(ck.nb, s);
    for (int64_t c = ck.nb - 1; c >= 0; --c) {
        poll_interrupt_now();  // a block is ~0.1 ms; a row can take seconds (Ctrl-C)
        for (int64_t i = std::min(k, (c + 1) * kBlock) - 1; i >= c * kBlock; --i) {
            gr.factors(q[toks[i]], e.data(), b.data());
            s.add(e.data(), b.data(), h0 ? h0[i] : 1.0, q[toks[i]]);
        }
        ck.put(c, s);
    }
    return ck;
}

// `ck`: the suffix checks of toks at h0, if the caller already has them (suffix_checks).
template <class Lay>
inline void pass(const Grid& gr, const double* q, const std::vector<int32_t>& toks, const Pair& base, Lay&& lay,
                 std::vector<double>& w_out, const double* h0 = nullptr, const Pair* ex = nullptr,
                 const Checks* ck = nullptr) {
    if constexpr (std::is_invocable_v<Lay, int64_t, double, double>)
        if (!ex) throw std::invalid_argument("race::pass: lay(i, w, E) needs the environment `ex`");
    const int64_t k = static_cast<int64_t>(toks.size()), G = gr.G;
    const int n = gr.n;
    const std::size_t S = static_cast<std::size_t>(n) * G;  // doubles per Pi (or D)
    const int64_t nb = (k + kBlock - 1) / kBlock;
    Checks own;
    if (!ck) {
        own = suffix_checks(gr, q, toks, h0);
        ck = &own;
    }
    const std::vector<double>& check = ck->v;
    w_out.assign(k, 0.0);
    Pair pre = base, pex;
    std::vector<double> qsuf, sc;  // ex: q(toks[i..k)) and the suffix factors e^{-q(suffix) t} of a block
    if (ex) {
        pex = *ex;
        qsuf.assign(k + 1, 0.0);
        for (int64_t i = k - 1; i >= 0; --i) qsuf[i] = qsuf[i + 1] + q[toks[i]];
        sc.resize(static_cast<std::size_t>(kBlock + 1) * G);
    }
    // Per block: inside[j] = suffix pair of tokens [lo + j, k) (flat, 2 S doubles each), and the
    // factors of the block's tokens (computed once, used by both sweeps).
    std::vector<double> inside(static_cast<std::size_t>(kBlock + 1) * 2 * S), fe(kBlock * G), fb(kBlock * G);
    for (int64_t c = 0; c < nb; ++c) {
        poll_interrupt_now();
        const int64_t lo = c * kBlock, hi = std::min(k, lo + kBlock);
        std::copy(check.begin() + (c + 1) * 2 * S, check.begin() + (c + 2) * 2 * S,
                  inside.begin() + static_cast<std::size_t>(hi - lo) * 2 * S);
        if (ex)
            for (int64_t g = 0; g < G; ++g) sc[static_cast<std::size_t>(hi - lo) * G + g] = std::exp(-qsuf[hi] * gr.t[g]);
        for (int64_t i = hi - 1; i >= lo; --i) {
            double* ei = &fe[(i - lo) * G];
            double* bi = &fb[(i - lo) * G];
            gr.factors(q[toks[i]], ei, bi);
            if (i == lo) break;
            const double* src = &inside[static_cast<std::size_t>(i - lo + 1) * 2 * S];
            double* dst = &inside[static_cast<std::size_t>(i - lo) * 2 * S];
            mul_factor(n, G, src, src + S, dst, dst + S, ei, bi, h0 ? h0[i] : 1.0, q[toks[i]]);
            if (ex)
                for (int64_t g = 0; g < G; ++g)
                    sc[static_cast<std::size_t>(i - lo) * G + g] = sc[static_cast<std::size_t>(i - lo + 1) * G + g] * ei[g];
        }
        for (int64_t i = lo; i < hi; ++i) {
            const double qy = q[toks[i]];
            const double* ei = &fe[(i - lo) * G];
            const double* bi = &fb[(i - lo) * G];
            const double* in = &inside[static_cast<std::size_t>(i - lo + 1) * 2 * S];
            const double w = w_raw(gr, pre.Pi.data(), pre.D.data(), in, in + S, ei, bi, qy);
            w_out[i] = w;
            double h;
            if constexpr (std::is_invocable_v<Lay, int64_t, double, double>) {
                double E = 0.0;
                const double* s1 = &sc[static_cast<std::size_t>(i - lo + 1) * G];
                const double* P1 = &pex.Pi[static_cast<std::size_t>(n - 1) * G];
                const double* D2 = n >= 2 ? &pex.D[static_cast<std::size_t>(n - 2) * G] : nullptr;
                for (int64_t g = 0; g < G; ++g)
                    E += gr.wt[g] * s1[g] * (qy * ei[g] * P1[g] + (D2 ? bi[g] * D2[g] : 0.0));
                h = lay(i, w, E);
                pex.add(ei, bi, h, qy);
            } else {
                h = lay(i, w);
            }
            pre.add(ei, bi, h, qy);
        }
    }
}

// The product of the factors of `toks` at weight 1 from power sums of q, for tokens with
// q t <= ln 2 on the whole grid -- for ordering only (loo_weights). Per node,
//     prod (e + x b) = e^{-Q t} E(x),   D = e^{-Q t} E(x) sum_j (-x)^j R_j,
// with E's coefficients the elementary symmetric functions of beta = e^{q t} - 1 (Newton's
// identities from S_k = sum beta^k), R_j = sum q beta^j, and S_k, R_j from P_m = sum (q / qs)^m by
// the series of (e^u - 1)^k. O(k M) for k tokens and M = kMoments, against O(k n G) for the
// factors one by one. Returns false where Newton's identities would lose more than ~1e-10 to
// cancellation (few tokens holding the mass) or n > 8; the caller then multiplies the factors.
constexpr int kMoments = 48;
inline bool product_by_moments(const Grid& gr, const double* q, const std::vector<int32_t>& toks, double qs,
                               Pair& out) {
    const int n = gr.n;
    const int64_t G = gr.G;
    constexpr int M = kMoments;
    if (n > 8) return false;  // (e^u - 1)^k needs more than M terms for k >= 8 at u = ln 2
    out.unit(n, G);
    if (toks.empty() || !(qs > 0.0)) return true;
    double P[M + 2] = {0.0};
    for (int32_t y : toks) {
        const double r = q[y] / qs;
        double pw = r;
        for (int m = 1; m <= M + 1 && pw > 1e-300; ++m) {
            P[m] += pw;
            pw *= r;
        }
    }
    // c[k][m]: coefficient of u^m in (e^u - 1)^k, k < n
    double c[8][M + 1] = {{0.0}};
    {
        double f = 1.0;
        for (int m = 1; m <= M; ++m) { f /= m; c[1][m] = f; }
        for (int k = 2; k < n; ++k)
            for (int m = k; m <= M; ++m)
                for (int j = 1; j <= m - k + 1; ++j) c[k][m] += c[1][j] * c[k - 1][m - j];
    }
    // Q = q(toks), compensated (Neumaier): it enters as e^{-Q t}, whose relative error is Q t times
    // Q's, and Q t reaches ~100 where the integrands still count (the plain sum gave 1e-12 there).
    double Q = 0.0;
    {
        double comp = 0.0;
        for (int32_t y : toks) {
            const double x = q[y], sum = Q + x;
            comp += std::fabs(Q) >= std::fabs(x) ? (Q - sum) + x : (x - sum) + Q;
            Q = sum;
        }
        Q += comp;
    }
    double worst = 0.0;  // largest sum of |terms| over |result| (cancellation)
    for (int64_t g = 0; g < G; ++g) {
        const double u = qs * gr.t[g];
        double Sk[8] = {0.0}, Rj[8] = {0.0}, E[8] = {0.0};
        Rj[0] = Q;
        for (int k = 1; k < n; ++k) {
            double us = 1.0, sk = 0.0, rj = 0.0;
            for (int m = 1; m <= M; ++m) {
                us *= u;
                if (m < k) continue;
                sk += c[k][m] * us * P[m];
                rj += c[k][m] * us * P[m + 1];
            }
            Sk[k] = sk;
            Rj[k] = qs * rj;
        }
        E[0] = 1.0;
        for (int cc = 1; cc < n; ++cc) {
            double acc = 0.0, mag = 0.0;
            for (int k = 1; k <= cc; ++k) {
                const double term = ((k & 1) ? 1.0 : -1.0) * E[cc - k] * Sk[k];
                acc += term;
                mag += std::fabs(term);
            }
            E[cc] = acc / cc;
            if (mag > 0.0) worst = std::max(worst, acc != 0.0 ? mag / std::fabs(acc) : 1e300);
        }
        const double eq = std::exp(-Q * gr.t[g]);
        for (int cc = 0; cc < n; ++cc) {
            double acc = 0.0, mag = 0.0;
            for (int j = 0; j <= cc; ++j) {
                const double term = ((j & 1) ? -1.0 : 1.0) * E[cc - j] * Rj[j];
                acc += term;
                mag += std::fabs(term);
            }
            if (mag > 0.0) worst = std::max(worst, acc != 0.0 ? mag / std::fabs(acc) : 1e300);
            out.Pi[static_cast<std::size_t>(cc) * G + g] = eq * E[cc];
            out.D[static_cast<std::size_t>(cc) * G + g] = eq * acc;
        }
    }
    return worst < 1e6;  // rounding ~1e-16 times this
}

// Tokens with q t <= ln 2 on the whole grid are "small": b <= 1/2 <= e at every node, so their
// factor can be divided out stably and their product comes from power sums (product_by_moments).
inline double small_cut(const Grid& gr) { return std::log(2.0) / gr.t[gr.G - 1]; }

// The product of the small tokens of `toks` at weight 1: by power sums where well conditioned, else
// factor by factor (same values to ~1e-13 relative; both are ~2-6e-13 from a long-double product on
// shipped rows at k ~ 45,000).
inline Pair small_product(const Grid& gr, const double* q, const std::vector<int32_t>& toks) {
    const double qcut = small_cut(gr);
    std::vector<int32_t> small;
    double qs = 0.0;
    for (int32_t y : toks)
        if (q[y] <= qcut) { small.push_back(y); qs = std::max(qs, q[y]); }
    Pair out;
    if (product_by_moments(gr, q, small, qs, out)) return out;
    out.unit(gr.n, gr.G);
    std::vector<double> e(gr.G), b(gr.G);
    for (int32_t y : small) {
        gr.factors(q[y], e.data(), b.data());
        out.add(e.data(), b.data(), 1.0, q[y]);
    }
    return out;
}

// (dP, dD) = (sP, sD) divided by a token factor e + x b with seed q e (weight 1), ie = 1 / e:
// dP[c] = (sP[c] - b dP[c-1]) / e, dD[c] = (sD[c] - q e dP[c] - b dD[c-1]) / e. The top row of D
// (x^{n-1}) is left alone: no w reads it, and no lower row depends on it.
inline void div_factor(int n, int64_t G, const double* __restrict__ sP, const double* __restrict__ sD,
                       double* __restrict__ dP, double* __restrict__ dD, const double* __restrict__ e,
                       const double* __restrict__ b, const double* __restrict__ ie, double q) {
    for (int64_t g = 0; g < G; ++g) {
        const double p1 = sP[g] * ie[g];
        dP[g] = p1;
        if (n > 1) dD[g] = (sD[g] - q * e[g] * p1) * ie[g];
    }
    for (int c = 1; c < n; ++c) {
        const std::size_t o = static_cast<std::size_t>(c) * G;
        if (c == n - 1) {
            for (int64_t g = 0; g < G; ++g) dP[o + g] = (sP[o + g] - b[g] * dP[o - G + g]) * ie[g];
            break;
        }
        for (int64_t g = 0; g < G; ++g) {
            const double p1 = (sP[o + g] - b[g] * dP[o - G + g]) * ie[g];
            dP[o + g] = p1;
            dD[o + g] = (sD[o + g] - q * e[g] * p1 - b[g] * dD[o - G + g]) * ie[g];
        }
    }
}

// (P, D) -= u (x b Q + seed q e Q): a product over Q times e + x b (seed q e) becomes the same
// product over Q times e + x (1 - u) b (seed (1 - u) q e). D's top row is not kept (div_factor).
inline void unlay_update(int n, int64_t G, double* __restrict__ P, double* __restrict__ D,
                         const double* __restrict__ QP, const double* __restrict__ QD, const double* __restrict__ e,
                         const double* __restrict__ b, double q, double u) {
    if (n > 1)
        for (int64_t g = 0; g < G; ++g) D[g] -= u * (q * e[g] * QP[g]);
    for (int c = 1; c < n; ++c) {
        const std::size_t o = static_cast<std::size_t>(c) * G;
        if (c == n - 1) {
            for (int64_t g = 0; g < G; ++g) P[o + g] -= u * (b[g] * QP[o - G + g]);
            break;
        }
        for (int64_t g = 0; g < G; ++g) {
            P[o + g] -= u * (b[g] * QP[o - G + g]);
            D[o + g] -= u * (q * e[g] * QP[o + g] + b[g] * QD[o - G + g]);
        }
    }
}

// pass() with the suffix at weight 1 and no `ex`, without checkpoints. A running pair E holds env,
// the small tokens before i at their final weights and those from i on at weight 1. Token i's
// factor at weight 1 is divided out of E (stable for a small token: b <= 1/2 <= e), which gives its
// environment Q_i, and E then takes the update E - u Q_i (x b + seed q e), u = 1 - h: the division's
// rounding enters E only as far as the token is laid. (Re-multiplying Q_i by the final factor
// instead let rounding drift to 1e-12 relative in w over 40,000 tokens; the update keeps every w
// within 1e-14 absolute of pass() on the shipped rows.) Big tokens stay out of E: their suffix
// products at weight 1 are kept for each of them, and their part of the environment enters w as one
// more pair. `small` (optional): the product of toks' small tokens at weight 1 (small_product).
// Per small token: one division, one w, one update (pass(): three products and one w, counting its
// checkpoints). Returns false, doing nothing, when toks holds more than kDivMaxBig big tokens.
constexpr int64_t kDivMaxBig = 512;
template <class Lay>
inline bool pass_div(const Grid& gr, const double* q, const std::vector<int32_t>& toks, const Pair& env, Lay&& lay,
                     std::vector<double>& w_out, const Pair* small = nullptr) {
    const int64_t k = static_cast<int64_t>(toks.size()), G = gr.G;
    const int n = gr.n;
    const std::size_t S = static_cast<std::size_t>(n) * G;
    const double qcut = small_cut(gr);
    std::vector<int64_t> bigpos;
    for (int64_t i = 0; i < k; ++i)
        if (q[toks[i]] > qcut) bigpos.push_back(i);
    const int64_t nbig = static_cast<int64_t>(bigpos.size());
    if (nbig > kDivMaxBig) return false;
    std::vector<double> e(G), b(G), ie(G);
    Checks sufB;  // sufB.at(j): the big tokens from the j-th on, at weight 1
    sufB.S = S;
    sufB.nb = nbig;
    sufB.v.resize(static_cast<std::size_t>(nbig + 1) * 2 * S);
    {
        Pair sb;
        sb.unit(n, G);
        sufB.put(nbig, sb);
        for (int64_t j = nbig - 1; j >= 0; --j) {
            const double qy = q[toks[bigpos[j]]];
            gr.factors(qy, e.data(), b.data());
            sb.add(e.data(), b.data(), 1.0, qy);
            sufB.put(j, sb);
        }
    }
    Pair E = mul(env, small ? *small : small_product(gr, q, toks)), Qi = E, preB, EB;
    preB.unit(n, G);
    EB = sufB.at(0, n, G);
    w_out.assign(k, 0.0);
    int64_t jb = 0;
    for (int64_t i = 0; i < k; ++i) {
        if ((i & (kBlock - 1)) == 0) poll_interrupt_now();
        const double qy = q[toks[i]];
        gr.factors(qy, e.data(), b.data());
        if (jb < nbig && bigpos[jb] == i) {
            const Pair X = mul(E, preB);
            const double* sb = &sufB.v[static_cast<std::size_t>(jb + 1) * 2 * S];
            const double w = w_raw(gr, X.Pi.data(), X.D.data(), sb, sb + S, e.data(), b.data(), qy);
            w_out[i] = w;
            preB.add(e.data(), b.data(), lay(i, w), qy);
            ++jb;
            EB = mul(preB, sufB.at(jb, n, G));
            continue;
        }
        // Q_i = E / (e + x b) with seed q e: Q[c] = (E[c] - b Q[c-1]) / e, QD[c] = (ED[c] - q e Q[c] - b QD[c-1]) / e
        for (int64_t g = 0; g < G; ++g) ie[g] = 1.0 / e[g];
        div_factor(n, G, E.Pi.data(), E.D.data(), Qi.Pi.data(), Qi.D.data(), e.data(), b.data(), ie.data(), qy);
        const double w = w_raw(gr, Qi.Pi.data(), Qi.D.data(), EB.Pi.data(), EB.D.data(), e.data(), b.data(), qy);
        w_out[i] = w;
        const double u = 1.0 - lay(i, w);
        if (u == 0.0) continue;
        // E <- Q_i (e + x h b) = E - u (x b Q_i + seed q e Q_i)
        unlay_update(n, G, E.Pi.data(), E.D.data(), Qi.Pi.data(), Qi.D.data(), e.data(), b.data(), qy, u);
    }
    return true;
}

// w_y of every token of `toks` over `base`, all of `toks` at weight 1 -- for ordering tokens only
// (the loads of a plan always come from `pass`). At weight 1, w_y depends on y only through q_y.
// For q t <= ln 2 on the grid ("small" tokens), w(q) = w of a token of mass q divided out of the
// total product (the recurrence amplifies rounding by at most 2^n) is analytic in q t and is
// interpolated from kLooNodes Chebyshev nodes; the small tokens' product comes from power sums
// (product_by_moments) where that is well conditioned; the other tokens run a pass over themselves.
constexpr int kLooNodes = 24;
inline void loo_weights(const Grid& gr, const double* q, const std::vector<int32_t>& toks, const Pair& base,
                        std::vector<double>& w_out) {
    const int64_t k = static_cast<int64_t>(toks.size()), G = gr.G;
    const int n = gr.n;
    const double qcut = small_cut(gr);
    std::vector<double> e(G), b(G);
    std::vector<int32_t> big, small;
    std::vector<int64_t> big_at;
    double qsmall = 0.0;
    for (int64_t i = 0; i < k; ++i) {
        const double qy = q[toks[i]];
        if (qy > qcut) { big.push_back(toks[i]); big_at.push_back(i); continue; }
        small.push_back(toks[i]);
        qsmall = std::max(qsmall, qy);
    }
    Pair ps;  // the small tokens
    if (!product_by_moments(gr, q, small, qsmall, ps)) {
        ps.unit(n, G);
        for (int32_t y : small) {
            gr.factors(q[y], e.data(), b.data());
            ps.add(e.data(), b.data(), 1.0, q[y]);
        }
    }
    w_out.assign(k, 0.0);
    Pair env = mul(base, ps), pb;
    pb.unit(n, G);
    if (!big.empty()) {
        std::vector<double> wb;
        pass(gr, q, big, env, [](int64_t, double) { return 1.0; }, wb);
        for (std::size_t j = 0; j < big.size(); ++j) {
            w_out[big_at[j]] = wb[j];
            gr.factors(q[big[j]], e.data(), b.data());
            pb.add(e.data(), b.data(), 1.0, q[big[j]]);
        }
    }
    if (!(qsmall > 0.0)) return;
    const Pair tot = mul(env, pb);
    // w(x) / x at the nodes x_j = qsmall (1 + cos(pi (j + 1/2) / N)) / 2, by division:
    // Pi_{-y}[c] = (Pi[c] - b Pi_{-y}[c-1]) / e, D_{-y}[c] = (D[c] - q e Pi_{-y}[c] - b D_{-y}[c-1]) / e
    constexpr int N = kLooNodes;
    const double pi_ = 3.141592653589793;
    double fx[N], cf[N];
    std::vector<double> pi(G), d(G), pi1(G), d1(G);
    for (int j = 0; j < N; ++j) {
        const double x = 0.5 * qsmall * (1.0 + std::cos(pi_ * (j + 0.5) / N));
        gr.factors(x, e.data(), b.data());
        std::fill(pi.begin(), pi.end(), 0.0);
        std::fill(d.begin(), d.end(), 0.0);
        for (int c = 0; c < n; ++c) {
            const double* P = &tot.Pi[static_cast<std::size_t>(c) * G];
            const double* D = &tot.D[static_cast<std::size_t>(c) * G];
            for (int64_t g = 0; g < G; ++g) {
                pi1[g] = (P[g] - b[g] * pi[g]) / e[g];
                d1[g] = (D[g] - x * e[g] * pi1[g] - b[g] * d[g]) / e[g];
            }
            if (c == n - 1) break;  // pi1 = Pi_{-y}[n-1], d = D_{-y}[n-2]
            pi.swap(pi1);
            d.swap(d1);
        }
        double acc = 0.0;
        for (int64_t g = 0; g < G; ++g) acc += gr.wt[g] * (x * e[g] * pi1[g] + b[g] * d[g]);
        fx[j] = acc / x;
    }
    for (int m = 0; m < N; ++m) {  // Chebyshev coefficients
        double c = 0.0;
        for (int j = 0; j < N; ++j) c += fx[j] * std::cos(pi_ * m * (j + 0.5) / N);
        cf[m] = (m ? 2.0 : 1.0) * c / N;
    }
    for (int64_t i = 0; i < k; ++i) {
        const double qy = q[toks[i]];
        if (qy > qcut) continue;
        const double u = 2.0 * qy / qsmall - 1.0;  // Clenshaw on [-1, 1]
        double b1 = 0.0, b2 = 0.0;
        for (int m = N - 1; m >= 1; --m) {
            const double t = 2.0 * u * b1 - b2 + cf[m];
            b2 = b1;
            b1 = t;
        }
        w_out[i] = qy * (u * b1 - b2 + cf[0]);
    }
}

// The inner sweep (sweep::inner) on a set W of tokens at full vocabulary, with its tight sets taken
// to be prefixes of W's current rho order (rho = pi / (h w), neediest first) -- as they were in
// every exact-rational run -- and everything else entering through an environment pair (tokens
// outside W at their current weights). Each step costs a few O(|W| n G) scans, and the sweep takes
// about two steps per token: O(|W|^2 n G). Used by Optimal::prepare_wor_race (the heads of the
// "events" order and of the chains).
struct Watch {
    const Grid* gr = nullptr;
    const double *q = nullptr, *p = nullptr;
    std::vector<int32_t> tok;
    std::vector<double> h, pi;
    std::vector<char> done;
    Pair fixed;  // the done W tokens at their final weights
    std::vector<Chunk>* chunks = nullptr;
    std::vector<double>* won = nullptr;  // by token id
    std::vector<double> fe, fb;  // the factors of tok (token i at i * G)
    std::vector<double> suf;      // scan's buffer (kept: a sweep runs thousands of scans)

    void init(const Grid& g, const double* q_, const double* p_, std::vector<int32_t> t, std::vector<Chunk>* ch,
              std::vector<double>* wn) {
        gr = &g; q = q_; p = p_; tok = std::move(t); chunks = ch; won = wn;
        h.assign(tok.size(), 1.0);
        pi.resize(tok.size());
        done.assign(tok.size(), 0);
        for (std::size_t i = 0; i < tok.size(); ++i) pi[i] = p[tok[i]];
        fixed.unit(g.n, g.G);
        fe.resize(tok.size() * g.G);
        fb.resize(tok.size() * g.G);
        for (std::size_t i = 0; i < tok.size(); ++i) g.factors(q[tok[i]], &fe[i * g.G], &fb[i * g.G]);
    }
    std::vector<int64_t> active() const {
        std::vector<int64_t> a;
        for (std::size_t i = 0; i < tok.size(); ++i)
            if (!done[i]) a.push_back(static_cast<int64_t>(i));
        return a;
    }
    // v[i] = E[1{o_i in S} prod_{S \ o_i} h'] with env x fixed below: h' = 0 on o_0..o_{i-1} if
    // zero_prefix (else their weights), the weights after o_i; token `ov` at weight `hov`.
    void scan(const Pair& env, const std::vector<int64_t>& o, bool zero_prefix, int64_t ov, double hov,
              std::vector<double>& v) {
        const int64_t a = static_cast<int64_t>(o.size());
        auto wt = [&](int64_t k) { return k == ov ? hov : h[k]; };
        // suffix pairs of o[i..a), flat (Pi then D, 2 S doubles each), and the factors of o
        const int n = gr->n;
        const int64_t G = gr->G;
        const std::size_t S = static_cast<std::size_t>(n) * G;
        suf.resize(static_cast<std::size_t>(a + 1) * 2 * S);
        std::fill(suf.begin() + a * 2 * S, suf.begin() + (a + 1) * 2 * S, 0.0);
        std::fill(suf.begin() + a * 2 * S, suf.begin() + a * 2 * S + G, 1.0);
        for (int64_t i = a - 1; i >= 0; --i) {
            const double* ei = &fe[o[i] * G];
            const double* bi = &fb[o[i] * G];
            const double* src = &suf[(i + 1) * 2 * S];
            double* dst = &suf[i * 2 * S];
            mul_factor(n, G, src, src + S, dst, dst + S, ei, bi, wt(o[i]), q[tok[o[i]]]);
        }
        v.assign(a, 0.0);
        Pair pre = mul(env, fixed);
        for (int64_t i = 0; i < a; ++i) {
            const double* ei = &fe[o[i] * G];
            const double* bi = &fb[o[i] * G];
            const double* in = &suf[(i + 1) * 2 * S];
            v[i] = w_raw(*gr, pre.Pi.data(), pre.D.data(), in, in + S, ei, bi, q[tok[o[i]]]);
            pre.add(ei, bi, zero_prefix ? 0.0 : wt(o[i]), q[tok[o[i]]]);
        }
    }
    // Active W tokens by descending rho under env (ties: stable), with their w.
    void order(const Pair& env, std::vector<int64_t>& o, std::vector<double>& w) {
        const std::vector<int64_t> act = active();
        std::vector<double> wa;
        scan(env, act, false, -1, 0.0, wa);
        const int64_t a = static_cast<int64_t>(act.size());
        std::vector<double> rho(a);
        for (int64_t j = 0; j < a; ++j) {
            const double R = h[act[j]] * wa[j];
            rho[j] = R > 0.0 ? pi[act[j]] / R : 1e300;
        }
        std::vector<int64_t> ix(a);
        for (int64_t j = 0; j < a; ++j) ix[j] = j;
        std::stable_sort(ix.begin(), ix.end(), [&](int64_t x, int64_t y) { return rho[x] > rho[y]; });
        o.resize(a);
        w.resize(a);
        for (int64_t j = 0; j < a; ++j) { o[j] = act[ix[j]]; w[j] = wa[ix[j]]; }
    }
    // Prefix slacks of order o: s_i = mu(T meets o_0..o_i) - pi(o_0..o_i).
    // v receives the scan behind them (every weight at its current value).
    void slacks(const Pair& env, const std::vector<int64_t>& o, std::vector<double>& s, std::vector<double>& v) {
        scan(env, o, true, -1, 0.0, v);
        s.resize(o.size());
        double cum = 0.0;
        for (std::size_t j = 0; j < o.size(); ++j) { cum += h[o[j]] * v[j] - pi[o[j]]; s[j] = cum; }
    }
    void retire(int64_t k) {
        done[k] = 1;
        fixed.add(&fe[k * gr->G], &fb[k * gr->G], std::max(0.0, h[k]), q[tok[k]]);
    }
    // One step of the inner rule: the least needy token of the smallest tight prefix (of all active
    // tokens if none is tight and `force`) is laid until done or until a shorter prefix turns
    // tight. Returns false if no prefix is tight (and not force) or nothing is active.
    bool step(const Pair& env, bool force) {
        poll_interrupt_now();
        std::vector<int64_t> o;
        std::vector<double> w, s, vs;
        order(env, o, w);
        if (o.empty()) return false;
        slacks(env, o, s, vs);
        int64_t jt = -1;
        for (std::size_t j = 0; j < s.size(); ++j)
            if (s[j] <= kTol) { jt = static_cast<int64_t>(j); break; }
        if (jt < 0 && !force) return false;
        const int64_t py = jt >= 0 ? jt : static_cast<int64_t>(o.size()) - 1, k = o[py];
        const double wy = w[py];
        const double d = inner_step(o, s, py, [&](int64_t j) { return h[j]; }, pi[k], wy, vs,
                                    [&](double hk, std::vector<double>& v) { scan(env, o, true, k, hk, v); });
        if (!(d > 0.0) || !(wy > 0.0)) { retire(k); return true; }
        (*won)[tok[k]] += d * wy;
        pi[k] -= d * wy;
        h[k] -= d;
        chunks->push_back({tok[k], d});
        if (pi[k] <= kTol * std::max(1.0, p[tok[k]]) || h[k] <= 1e-15) retire(k);
        return true;
    }
};

}  // namespace race

// The inner sweep at n = 2 on a whole system, with closed forms in place of the race quadrature.
// For two drafts without replacement from q (mass s on the support),
//     Pr[S = {y, z}] = (q_y q_z / s) (r_y + r_z),   r_y = 1 / (s - q_y),
// so with weights h every w_y = E[1{y in S} prod_{S \ y} h] is O(1) from two sums:
//     w_y = (q_y / s) [r_y (A - q_y h_y) + (B - q_y r_y h_y)],   A = sum q h,  B = sum q r h.
// The prefix slacks of race::Watch are then one O(k) scan, and the whole system runs the
// prefix-event sweep (race::Watch's rule: tight sets taken to be prefixes of the current rho
// order), O(k) per step and about two steps per token: O(k^2) in all, seconds at k ~ 40,000.
// Loads are exact up to rounding (no quadrature). Used by Optimal::prepare_wor_race at n = 2 as
// the last inner order (it certifies shipped rows the race's orders miss).
namespace pairs {

struct Watch2 {
    const double* p = nullptr;
    std::vector<int32_t> tok;
    std::vector<double> q, r, h, pi, w, rho;
    std::vector<char> done;
    double s = 1.0, env_a = 0.0, env_b = 0.0, fix_a = 0.0, fix_b = 0.0;
    std::vector<int64_t> o;  // active tokens by descending rho (kept: nearly sorted step to step)

    // tokens `t` (p > 0) are swept; `env` (p = 0, never laid) sit at weight 1. rest(y) = s - q_y.
    template <class Rest>
    void init(const double* p_, const double* q_, double s_, const std::vector<int32_t>& t,
              const std::vector<int32_t>& env, Rest&& rest) {
        p = p_;
        s = s_;
        tok = t;
        const std::size_t k = tok.size();
        q.resize(k); r.resize(k); h.assign(k, 1.0); pi.resize(k); w.assign(k, 0.0); rho.assign(k, 0.0);
        done.assign(k, 0);
        for (std::size_t i = 0; i < k; ++i) { q[i] = q_[tok[i]]; r[i] = 1.0 / rest(tok[i]); pi[i] = p[tok[i]]; }
        env_a = env_b = fix_a = fix_b = 0.0;
        for (int32_t y : env) { env_a += q_[y]; env_b += q_[y] / rest(y); }
        o.resize(k);
        for (std::size_t i = 0; i < k; ++i) o[i] = static_cast<int64_t>(i);
    }
    double w_of(int64_t k, double hk, double A, double B) const {
        return q[k] / s * (r[k] * (A - q[k] * hk) + (B - q[k] * r[k] * hk));
    }
    // v[i] = w of o_i with o_0 .. o_{i-1} at weight 0, token kk at weight hkk (kk < 0: none).
    void scan(int64_t kk, double hkk, std::vector<double>& v) const {
        auto wt = [&](int64_t k) { return k == kk ? hkk : h[k]; };
        double A = env_a + fix_a, B = env_b + fix_b;
        for (int64_t k : o) { A += q[k] * wt(k); B += q[k] * r[k] * wt(k); }
        v.resize(o.size());
        for (std::size_t i = 0; i < o.size(); ++i) {
            const int64_t k = o[i];
            const double hk = wt(k);
            v[i] = w_of(k, hk, A, B);
            A -= q[k] * hk;
            B -= q[k] * r[k] * hk;
        }
    }
    void retire(int64_t k) {
        done[k] = 1;
        const double hk = std::max(0.0, h[k]);
        fix_a += q[k] * hk;
        fix_b += q[k] * r[k] * hk;
    }
    // One step of the inner rule (as race::Watch::step). Returns false when every token is done.
    bool step(std::vector<Chunk>& chunks, std::vector<double>& won) {
        poll_interrupt_now();
        o.erase(std::remove_if(o.begin(), o.end(), [&](int64_t k) { return done[k] != 0; }), o.end());
        if (o.empty()) return false;
        double A = env_a + fix_a, B = env_b + fix_b;
        for (int64_t k : o) { A += q[k] * h[k]; B += q[k] * r[k] * h[k]; }
        for (int64_t k : o) {
            w[k] = w_of(k, h[k], A, B);
            const double R = h[k] * w[k];
            rho[k] = R > 0.0 ? pi[k] / R : 1e300;
        }
        for (std::size_t i = 1; i < o.size(); ++i) {  // insertion sort, descending rho, stable
            const int64_t x = o[i];
            std::size_t j = i;
            while (j > 0 && rho[o[j - 1]] < rho[x]) { o[j] = o[j - 1]; --j; }
            o[j] = x;
        }
        const int64_t a = static_cast<int64_t>(o.size());
        scan(-1, 0.0, v_);
        s_.resize(a);
        double cum = 0.0;
        for (int64_t i = 0; i < a; ++i) { cum += h[o[i]] * v_[i] - pi[o[i]]; s_[i] = cum; }
        int64_t jt = -1;
        for (int64_t i = 0; i < a; ++i)
            if (s_[i] <= kTol) { jt = i; break; }
        const int64_t py = jt >= 0 ? jt : a - 1, k = o[py];
        const double wy = w[k];
        const double d = inner_step(o, s_, py, [&](int64_t j) { return h[j]; }, pi[k], wy, v_,
                                    [&](double hk, std::vector<double>& v) { scan(k, hk, v); });
        if (!(d > 0.0) || !(wy > 0.0)) { retire(k); return true; }
        won[tok[k]] += d * wy;
        pi[k] -= d * wy;
        h[k] -= d;
        chunks.push_back({tok[k], d});
        if (pi[k] <= kTol * std::max(1.0, p[tok[k]]) || h[k] <= 1e-15) retire(k);
        return true;
    }

  private:
    std::vector<double> v_, s_;
};

}  // namespace pairs
}  // namespace mdsd::verif::sweep
