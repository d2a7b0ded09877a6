// Products of token factors on the race grid (docs/theory.md §14.2): the pair (Pi, D).
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

#include "mdsd/bits.hpp"
#include <vector>

#include "mdsd/race/grid.hpp"

namespace mdsd::race {

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


// (dP, dD) = (sP, sD) divided by a token factor e + x b with seed q e (weight 1), ie = 1 / e:
// dP[c] = (sP[c] - b dP[c-1]) / e, dD[c] = (sD[c] - q e dP[c] - b dD[c-1]) / e. The top row of D
// (x^{n-1}) is left alone: no w reads it, and no lower row depends on it.
inline void div_factor(int n, int64_t G, const double* MDSD_RESTRICT sP, const double* MDSD_RESTRICT sD,
                       double* MDSD_RESTRICT dP, double* MDSD_RESTRICT dD, const double* MDSD_RESTRICT e,
                       const double* MDSD_RESTRICT b, const double* MDSD_RESTRICT ie, double q) {
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
inline void unlay_update(int n, int64_t G, double* MDSD_RESTRICT P, double* MDSD_RESTRICT D,
                         const double* MDSD_RESTRICT QP, const double* MDSD_RESTRICT QD, const double* MDSD_RESTRICT e,
                         const double* MDSD_RESTRICT b, double q, double u) {
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

}  // namespace mdsd::race
