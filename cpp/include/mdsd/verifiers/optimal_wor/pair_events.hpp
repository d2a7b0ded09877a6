// The prefix-event sweep at n = 2 in closed form (docs/theory/wor_route.md §15.2): PrefixEventSweep's step
// rule (events.hpp, prefix_event_step) on a whole inner system, w without the race quadrature.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mdsd/core/parallel.hpp"
#include "mdsd/verifiers/optimal_wor/events.hpp"
#include "mdsd/verifiers/optimal_wor/exact_sweep.hpp"

namespace mdsd::verif::wor {

// The inner sweep at n = 2 on a whole system, with closed forms in place of the race quadrature.
// For two drafts without replacement from q (mass s on the support),
//     Pr[S = {y, z}] = (q_y q_z / s) (r_y + r_z),   r_y = 1 / (s - q_y),
// so with weights h every w_y = E[1{y in S} prod_{S \ y} h] is O(1) from two sums:
//     w_y = (q_y / s) [r_y (A - q_y h_y) + (B - q_y r_y h_y)],   A = sum q h,  B = sum q r h.
// The prefix slacks are then one O(k) scan, and the whole system runs PrefixEventSweep's rule,
// O(k) per step and about two steps per token: O(k^2) in all. Loads are exact up to rounding (no
// quadrature). The last inner order of the full-vocabulary route at n = 2.
struct PairPrefixEventSweep {
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
        q.resize(k);
        r.resize(k);
        h.assign(k, 1.0);
        pi.resize(k);
        w.assign(k, 0.0);
        rho.assign(k, 0.0);
        done.assign(k, 0);
        for (std::size_t i = 0; i < k; ++i) {
            q[i] = q_[tok[i]];
            r[i] = 1.0 / rest(tok[i]);
            pi[i] = p[tok[i]];
        }
        env_a = env_b = fix_a = fix_b = 0.0;
        for (int32_t y : env) {
            env_a += q_[y];
            env_b += q_[y] / rest(y);
        }
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
        for (int64_t k : o) {
            A += q[k] * wt(k);
            B += q[k] * r[k] * wt(k);
        }
        v.resize(o.size());
        for (std::size_t i = 0; i < o.size(); ++i) {
            const int64_t k = o[i];
            const double hk = wt(k);
            v[i] = w_of(k, hk, A, B);
            A -= q[k] * hk;
            B -= q[k] * r[k] * hk;
        }
    }
    int64_t retired = 0;  // tokens done
    void retire(int64_t k) {
        done[k] = 1;
        ++retired;
        const double hk = std::max(0.0, h[k]);
        fix_a += q[k] * hk;
        fix_b += q[k] * r[k] * hk;
    }
    // One step of the inner rule (as PrefixEventSweep::step). Returns false when every token is done.
    bool step(std::vector<Chunk>& chunks, std::vector<double>& won) {
        poll_interrupt_now();
        o.erase(std::remove_if(o.begin(), o.end(), [&](int64_t k) { return done[k] != 0; }), o.end());
        if (o.empty()) return false;
        double A = env_a + fix_a, B = env_b + fix_b;
        for (int64_t k : o) {
            A += q[k] * h[k];
            B += q[k] * r[k] * h[k];
        }
        for (int64_t k : o) {
            w[k] = w_of(k, h[k], A, B);
            const double R = h[k] * w[k];
            rho[k] = R > 0.0 ? pi[k] / R : 1e300;
        }
        for (std::size_t i = 1; i < o.size(); ++i) {  // insertion sort, descending rho, stable
            const int64_t x = o[i];
            std::size_t j = i;
            while (j > 0 && rho[o[j - 1]] < rho[x]) {
                o[j] = o[j - 1];
                --j;
            }
            o[j] = x;
        }
        const int64_t a = static_cast<int64_t>(o.size());
        scan(-1, 0.0, v_);
        s_.resize(a);
        double cum = 0.0;
        for (int64_t i = 0; i < a; ++i) {
            cum += h[o[i]] * v_[i] - pi[o[i]];
            s_[i] = cum;
        }
        int64_t jt = -1;
        for (int64_t i = 0; i < a; ++i)
            if (s_[i] <= kTol) {
                jt = i;
                break;
            }
        const int64_t py = jt >= 0 ? jt : a - 1, k = o[py];
        const double wy = w[k];
        const double d = prefix_event_step(
            o, s_, py, [&](int64_t j) { return h[j]; }, pi[k], wy, v_,
            [&](double hk, std::vector<double>& v) { scan(k, hk, v); });
        if (!(d > 0.0) || !(wy > 0.0)) {
            retire(k);
            return true;
        }
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

}  // namespace mdsd::verif::wor
