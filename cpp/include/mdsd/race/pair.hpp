// Products of token factors on the race grid (docs/theory/race_oracle.md §14.2): the pair (Pi, D).
//
// For token weights h (h = 1 - u: the share of a token's level mass not yet laid),
//     E[prod_{j in S} h_j] = int_0^inf sum_z h_z q_z e_z(t) [x^{n-1}] prod_{j != z} (e_j + x h_j b_j) dt.
// A product over a set of tokens is kept as a pair: Pi = prod f_j and D = sum_z c_z prod_{j != z} f_j,
// f_j = e_j + x h_j b_j, c_z = h_z q_z e_z (the n-th draft), as n coefficients of x per node. Then
//     w_y = E[1{y in S} prod_{S \ y} h] = int q_y e_y [x^{n-1}] Pi_{-y} + b_y [x^{n-2}] D_{-y} dt
// with (Pi_{-y}, D_{-y}) the pair of every other token. Tokens outside a system enter as factors e_j
// (weight 0: a draft there leaves the system) or e_j + x b_j (weight 1).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/core/bits.hpp"
#include "mdsd/core/lanes.hpp"
#include "mdsd/race/grid.hpp"

namespace mdsd::race {

// (dP, dD) = (sP, sD) times a token factor e + x h b with seed h q e, on n x G coefficient rows
// ([c][g]); in place when d == s (row c reads only rows c and c - 1 of s, and rows go down).
// Two nodes a step with SSE2 (lane_sweep): the compilers leave the loops scalar, as d may be s.
inline void mul_factor(int n, int64_t G, const double* sP, const double* sD, double* dP, double* dD, const double* e,
                       const double* b, double h, double q) {
    if (h == 0.0) {  // the factor is e alone (same values as the general form below)
        for (int c = 0; c < n; ++c) {
            const std::size_t o = static_cast<std::size_t>(c) * G;
            lane_sweep(G, [&](auto lane, int64_t g) {
                using T = decltype(lane);
                const T eg = lane_load<T>(e + g);
                lane_store(dD + o + g, lane_load<T>(sD + o + g) * eg);
                lane_store(dP + o + g, lane_load<T>(sP + o + g) * eg);
            });
        }
        return;
    }
    const double hq = h * q;
    for (int c = n - 1; c >= 0; --c) {  // row c reads rows c and c - 1 of s: rows go down
        const double* Pc = sP + static_cast<std::size_t>(c) * G;
        const double* Dc = sD + static_cast<std::size_t>(c) * G;
        const double* Pm = c ? sP + static_cast<std::size_t>(c - 1) * G : nullptr;
        const double* Dm = c ? sD + static_cast<std::size_t>(c - 1) * G : nullptr;
        double* oP = dP + static_cast<std::size_t>(c) * G;
        double* oD = dD + static_cast<std::size_t>(c) * G;
        lane_sweep(G, [&](auto lane, int64_t g) {
            using T = decltype(lane);
            const T eg = lane_load<T>(e + g), pc = lane_load<T>(Pc + g);
            T dn = lane_load<T>(Dc + g) * eg + lane_splat<T>(hq) * eg * pc;
            T pn = pc * eg;
            if (c) {
                const T vh = lane_splat<T>(h), bg = lane_load<T>(b + g);
                dn = dn + lane_load<T>(Dm + g) * vh * bg;
                pn = pn + lane_load<T>(Pm + g) * vh * bg;
            }
            lane_store(oD + g, dn);
            lane_store(oP + g, pn);
        });
    }
}

// mul_factor by a small token's factor over its e, 1 + x h beta with seed h q (beta = b / e,
// docs/theory/race_oracle.md §14.4 "Without e"): the same operations as mul_factor with e = 1, in the same
// order (the same bits). For n = 2, 3, 4, 8 one sweep over the nodes with the coefficients in
// registers (mul_unit_n), two nodes a step with SSE2 (mul_unit_node, T = D2); in place when d == s
// (a node's coefficients are all read before any is written).
template <int N, class T>
inline void mul_unit_node(int64_t G, int64_t g, const double* sP, const double* sD, double* dP, double* dD,
                          const double* beta, double h, double hq) {
    T p[N], d[N];
    for (int c = 0; c < N; ++c) {
        p[c] = lane_load<T>(sP + c * G + g);
        d[c] = lane_load<T>(sD + c * G + g);
    }
    const T bt = lane_load<T>(beta + g), vh = lane_splat<T>(h), vhq = lane_splat<T>(hq);
    for (int c = N - 1; c >= 0; --c) {
        T dn = d[c] + vhq * p[c];
        T pn = p[c];
        if (c) {
            dn = dn + d[c - 1] * vh * bt;
            pn = pn + p[c - 1] * vh * bt;
        }
        lane_store(dD + c * G + g, dn);
        lane_store(dP + c * G + g, pn);
    }
}
template <int N>
inline void mul_unit_n(int64_t G, const double* sP, const double* sD, double* dP, double* dD, const double* beta,
                       double h, double q) {
    const double hq = h * q;
    lane_sweep(G, [&](auto lane, int64_t g) { mul_unit_node<N, decltype(lane)>(G, g, sP, sD, dP, dD, beta, h, hq); });
}
inline void mul_unit(int n, int64_t G, const double* sP, const double* sD, double* dP, double* dD, const double* beta,
                     double h, double q) {
    if (h == 0.0) {  // the factor is 1
        if (dP != sP) {
            std::copy(sP, sP + static_cast<std::size_t>(n) * G, dP);
            std::copy(sD, sD + static_cast<std::size_t>(n) * G, dD);
        }
        return;
    }
    switch (n) {
        case 2: return mul_unit_n<2>(G, sP, sD, dP, dD, beta, h, q);
        case 3: return mul_unit_n<3>(G, sP, sD, dP, dD, beta, h, q);
        case 4: return mul_unit_n<4>(G, sP, sD, dP, dD, beta, h, q);
        case 8: return mul_unit_n<8>(G, sP, sD, dP, dD, beta, h, q);
        default: break;
    }
    for (int c = n - 1; c >= 0; --c) {  // as mul_factor with e = 1
        const std::size_t o = static_cast<std::size_t>(c) * G;
        for (int64_t g = 0; g < G; ++g) {
            double dn = sD[o + g] + h * q * sP[o + g];
            double pn = sP[o + g];
            if (c) {
                dn += sD[o - G + g] * h * beta[g];
                pn += sP[o - G + g] * h * beta[g];
            }
            dD[o + g] = dn;
            dP[o + g] = pn;
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

// One node (T = double) or two (T = D2) of w_raw_wt for a fixed n: the same operations in the same
// order as its blocks.
template <int N, class T>
inline T w_node(int64_t G, int64_t g, const double* wt, const double* aP, const double* aD, const double* bP,
                const double* bD, const double* e, const double* bb, double qy) {
    T pi = lane_splat<T>(0.0), d = lane_splat<T>(0.0);
    for (int i = 0; i < N; ++i) {
        const T a = lane_load<T>(aP + i * G + g);
        pi = pi + a * lane_load<T>(bP + (N - 1 - i) * G + g);
        if (i <= N - 2)
            d = d + (lane_load<T>(aD + i * G + g) * lane_load<T>(bP + (N - 2 - i) * G + g) +
                     a * lane_load<T>(bD + (N - 2 - i) * G + g));
    }
    return lane_load<T>(wt + g) * (lane_splat<T>(qy) * lane_load<T>(e + g) * pi + lane_load<T>(bb + g) * d);
}
// For n = 2, 3, 4, 8: one sweep, the nodes' terms added in order as they come (two nodes a step with
// SSE2), so the in-order sum overlaps the arithmetic (as div_w_unit).
template <int N>
inline double w_raw_n(int64_t G, const double* wt, const double* aP, const double* aD, const double* bP,
                      const double* bD, const double* e, const double* bb, double qy) {
    double acc = 0.0;
    lane_sweep(G, [&](auto lane, int64_t g) {
        add_in_order(acc, w_node<N, decltype(lane)>(G, g, wt, aP, aD, bP, bD, e, bb, qy));
    });
    return acc;
}
// w_y from the pair of the tokens before y (a) and after it (b): Pi_{-y} = a.Pi b.Pi,
// D_{-y} = a.D b.Pi + a.Pi b.D (only the coefficients n-1 and n-2 are needed). The node sums run
// over blocks of nodes, coefficient by coefficient (vectorisable), in the same order per node as one
// node at a time, and the integral adds the nodes in order: the same bits either way (and in
// w_raw_n's one sweep for n = 2, 3, 4, 8).
// w_raw_wt: the same with node weights wt (the grid's times a per-node scale).
inline double w_raw_wt(int n, int64_t G, const double* wt, const double* aP, const double* aD, const double* bP,
                       const double* bD, const double* e, const double* bb, double qy) {
    switch (n) {
        case 2: return w_raw_n<2>(G, wt, aP, aD, bP, bD, e, bb, qy);
        case 3: return w_raw_n<3>(G, wt, aP, aD, bP, bD, e, bb, qy);
        case 4: return w_raw_n<4>(G, wt, aP, aD, bP, bD, e, bb, qy);
        case 8: return w_raw_n<8>(G, wt, aP, aD, bP, bD, e, bb, qy);
        default: break;
    }
    constexpr int64_t kBlock = 64;
    double pi[kBlock], d[kBlock];
    double acc = 0.0;
    for (int64_t g0 = 0; g0 < G; g0 += kBlock) {
        const int64_t gn = std::min(kBlock, G - g0);
        for (int i = 0; i < n; ++i) {  // i = 0 sets the sums (0 + x = x)
            const double* a = aP + static_cast<std::size_t>(i) * G + g0;
            const double* bp = bP + static_cast<std::size_t>(n - 1 - i) * G + g0;
            for (int64_t g = 0; g < gn; ++g) pi[g] = (i ? pi[g] : 0.0) + a[g] * bp[g];
            if (i <= n - 2) {
                const double* ad = aD + static_cast<std::size_t>(i) * G + g0;
                const double* bp2 = bP + static_cast<std::size_t>(n - 2 - i) * G + g0;
                const double* bd2 = bD + static_cast<std::size_t>(n - 2 - i) * G + g0;
                for (int64_t g = 0; g < gn; ++g) d[g] = (i ? d[g] : 0.0) + (ad[g] * bp2[g] + a[g] * bd2[g]);
            } else if (n == 1) {
                std::fill(d, d + gn, 0.0);
            }
        }
        for (int64_t g = 0; g < gn; ++g) acc += wt[g0 + g] * (qy * e[g0 + g] * pi[g] + bb[g0 + g] * d[g]);
    }
    return acc;
}
inline double w_raw(const Grid& gr, const double* aP, const double* aD, const double* bP, const double* bD,
                    const double* e, const double* bb, double qy) {
    return w_raw_wt(gr.n, gr.G, gr.wt.data(), aP, aD, bP, bD, e, bb, qy);
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


// (dP, dD) = (sP, sD) divided by a token factor e + x b with seed q e (weight 1), ie = 1 / e:
// dP[c] = (sP[c] - b dP[c-1]) / e, dD[c] = (sD[c] - q e dP[c] - b dD[c-1]) / e. The top row of D
// (x^{n-1}) is left alone: no w reads it, and no lower row depends on it. kUnit: e = ie = 1 (the
// factor 1 + x beta of race::pass_div; e and ie are not read).
template <bool kUnit>
inline void div_factor_t(int n, int64_t G, const double* MDSD_RESTRICT sP, const double* MDSD_RESTRICT sD,
                         double* MDSD_RESTRICT dP, double* MDSD_RESTRICT dD, const double* MDSD_RESTRICT e,
                         const double* MDSD_RESTRICT b, const double* MDSD_RESTRICT ie, double q) {
    for (int64_t g = 0; g < G; ++g) {
        const double p1 = kUnit ? sP[g] : sP[g] * ie[g];
        dP[g] = p1;
        if (n > 1) dD[g] = kUnit ? sD[g] - q * p1 : (sD[g] - q * e[g] * p1) * ie[g];
    }
    for (int c = 1; c < n; ++c) {
        const std::size_t o = static_cast<std::size_t>(c) * G;
        if (c == n - 1) {
            for (int64_t g = 0; g < G; ++g) {
                const double x = sP[o + g] - b[g] * dP[o - G + g];
                dP[o + g] = kUnit ? x : x * ie[g];
            }
            break;
        }
        for (int64_t g = 0; g < G; ++g) {
            const double x = sP[o + g] - b[g] * dP[o - G + g];
            const double p1 = kUnit ? x : x * ie[g];
            dP[o + g] = p1;
            const double y = sD[o + g] - (kUnit ? q * p1 : q * e[g] * p1) - b[g] * dD[o - G + g];
            dD[o + g] = kUnit ? y : y * ie[g];
        }
    }
}
inline void div_factor(int n, int64_t G, const double* sP, const double* sD, double* dP, double* dD, const double* e,
                       const double* b, const double* ie, double q) {
    div_factor_t<false>(n, G, sP, sD, dP, dD, e, b, ie, q);
}

// (P, D) -= u (x b Q + seed q e Q): a product over Q times e + x b (seed q e) becomes the same
// product over Q times e + x (1 - u) b (seed (1 - u) q e). D's top row is not kept (div_factor).
// kUnit: e = 1 (not read).
template <bool kUnit>
inline void unlay_update_t(int n, int64_t G, double* MDSD_RESTRICT P, double* MDSD_RESTRICT D,
                           const double* MDSD_RESTRICT QP, const double* MDSD_RESTRICT QD,
                           const double* MDSD_RESTRICT e, const double* MDSD_RESTRICT b, double q, double u) {
    if (n > 1)
        for (int64_t g = 0; g < G; ++g) D[g] -= u * (kUnit ? q * QP[g] : q * e[g] * QP[g]);
    for (int c = 1; c < n; ++c) {
        const std::size_t o = static_cast<std::size_t>(c) * G;
        if (c == n - 1) {
            for (int64_t g = 0; g < G; ++g) P[o + g] -= u * (b[g] * QP[o - G + g]);
            break;
        }
        for (int64_t g = 0; g < G; ++g) {
            P[o + g] -= u * (b[g] * QP[o - G + g]);
            D[o + g] -= u * ((kUnit ? q * QP[o + g] : q * e[g] * QP[o + g]) + b[g] * QD[o - G + g]);
        }
    }
}
// unlay_update_t<true> for a fixed n in one sweep over the nodes, two a step with SSE2: the same
// operations per coefficient (the same bits).
template <int N>
inline void unlay_unit_n(int64_t G, double* MDSD_RESTRICT P, double* MDSD_RESTRICT D, const double* MDSD_RESTRICT QP,
                         const double* MDSD_RESTRICT QD, const double* MDSD_RESTRICT b, double q, double u) {
    lane_sweep(G, [&](auto lane, int64_t g) {
        using T = decltype(lane);
        const T vu = lane_splat<T>(u), vq = lane_splat<T>(q), bg = lane_load<T>(b + g);
        lane_store(D + g, lane_load<T>(D + g) - vu * (vq * lane_load<T>(QP + g)));
        for (int c = 1; c < N; ++c) {
            const int64_t o = c * G + g;
            lane_store(P + o, lane_load<T>(P + o) - vu * (bg * lane_load<T>(QP + o - G)));
            if (c < N - 1)
                lane_store(D + o,
                           lane_load<T>(D + o) - vu * (vq * lane_load<T>(QP + o) + bg * lane_load<T>(QD + o - G)));
        }
    });
}
inline void unlay_update(int n, int64_t G, double* P, double* D, const double* QP, const double* QD, const double* e,
                         const double* b, double q, double u) {
    unlay_update_t<false>(n, G, P, D, QP, QD, e, b, q, u);
}

// One node (T = double) or two (T = D2) of div_w_unit: Q's coefficients stored, the node's term
// of w returned.
template <int N, class T>
inline T div_w_node(int64_t G, int64_t g, const double* MDSD_RESTRICT EP, const double* MDSD_RESTRICT ED,
                    double* MDSD_RESTRICT QP, double* MDSD_RESTRICT QD, const double* MDSD_RESTRICT BP,
                    const double* MDSD_RESTRICT BD, const double* MDSD_RESTRICT beta, const double* MDSD_RESTRICT wt,
                    double q) {
    const T bt = lane_load<T>(beta + g), vq = lane_splat<T>(q);
    T p[N], d[N - 1];
    p[0] = lane_load<T>(EP + g);
    d[0] = lane_load<T>(ED + g) - vq * p[0];
    for (int c = 1; c < N; ++c) {
        p[c] = lane_load<T>(EP + c * G + g) - bt * p[c - 1];
        if (c < N - 1) d[c] = lane_load<T>(ED + c * G + g) - vq * p[c] - bt * d[c - 1];
    }
    T pi = lane_splat<T>(0.0), dd = lane_splat<T>(0.0);
    for (int i = 0; i < N; ++i) {
        lane_store(QP + i * G + g, p[i]);
        pi = pi + p[i] * lane_load<T>(BP + (N - 1 - i) * G + g);
        if (i <= N - 2) {
            lane_store(QD + i * G + g, d[i]);
            dd = dd + (d[i] * lane_load<T>(BP + (N - 2 - i) * G + g) + p[i] * lane_load<T>(BD + (N - 2 - i) * G + g));
        }
    }
    return lane_load<T>(wt + g) * (vq * pi + bt * dd);
}

// pass_div's small token in one sweep over the nodes, for a fixed n: div_factor_t<true> of E by
// 1 + x beta with seed q into Q, then w_raw(Q, B, e = 1, beta, q). The same operations per node
// in the same order as those two calls (the same bits); the coefficients stay in registers. The
// nodes' terms are added in node order as they come (two nodes a step with SSE2), so the in-order
// sum, a chain of dependent adds, overlaps the nodes' arithmetic instead of following it.
template <int N>
inline double div_w_unit(int64_t G, const double* MDSD_RESTRICT EP, const double* MDSD_RESTRICT ED,
                         double* MDSD_RESTRICT QP, double* MDSD_RESTRICT QD, const double* MDSD_RESTRICT BP,
                         const double* MDSD_RESTRICT BD, const double* MDSD_RESTRICT beta,
                         const double* MDSD_RESTRICT wt, double q) {
    static_assert(N >= 2, "n = 1 has no D rows to divide");
    double acc = 0.0;
    lane_sweep(G, [&](auto lane, int64_t g) {
        add_in_order(acc, div_w_node<N, decltype(lane)>(G, g, EP, ED, QP, QD, BP, BD, beta, wt, q));
    });
    return acc;
}

}  // namespace mdsd::race
