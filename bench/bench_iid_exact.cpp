// Micro-bench of the exact-sum iid routes (iid_exact.hpp) against today's selection and the full
// sort, on LLM-like rows (bench_dual.py's llm_like: logits N(0, 3^2), q's logits + N(0, 1)), one
// thread, with the memory-stream floor (a copy of p and q) timed in the same loop. Standalone:
//   g++ -std=c++17 -O3 -Icpp/include bench/bench_iid_exact.cpp -o /tmp/bie && /tmp/bie
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "mdsd/dual.hpp"
#include "mdsd/iid_exact.hpp"

template <class F>
static double med_us(F f, int reps) {
    std::vector<double> t;
    f();
    for (int r = 0; r < reps; ++r) {
        const auto a = std::chrono::steady_clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main() {
    std::mt19937_64 eng(7);
    std::normal_distribution<double> N(0.0, 1.0);
    for (int64_t V : {49152, 151936}) {
        std::vector<double> p(V), q(V), cp(V), cq(V), lg(V);
        for (auto& x : lg) x = 3.0 * N(eng);
        const double mx = *std::max_element(lg.begin(), lg.end());
        double sp = 0, sq = 0;
        for (int64_t i = 0; i < V; ++i) {
            p[i] = std::exp(lg[i] - mx);
            q[i] = std::exp(lg[i] + N(eng) - mx);
            sp += p[i];
            sq += q[i];
        }
        for (int64_t i = 0; i < V; ++i) p[i] /= sp, q[i] /= sq;
        for (int n : {2, 4, 8}) {
            mdsd::IidSelectWorkspace sw;
            mdsd::OrderWorkspace ow;
            mdsd::DualWorkspace dw;
            std::vector<int32_t> o;
            mdsd::IidSelectResult r{};
            const double floor =
                med_us([&] { std::memcpy(cp.data(), p.data(), 8 * V), std::memcpy(cq.data(), q.data(), 8 * V); }, 31);
            const double t_sel = med_us([&] { mdsd::iid_select(p.data(), q.data(), V, n, sw, o); }, 31);
            const double t_ex = med_us([&] { r = mdsd::iid_select_exact(p.data(), q.data(), V, n, sw, o); }, 31);
            const double t_ref = med_us([&] { mdsd::iid_exact_sorted(p.data(), q.data(), V, n, ow, o); }, 11);
            const double t_sort = med_us(
                [&] { mdsd::dual_prefix(p.data(), q.data(), V, n, mdsd::Scheme::Iid, mdsd::WorMethod::Auto, dw); }, 11);
            int64_t bf, bc;  // the window: tokens in the buckets that can hold the minimiser
            mdsd::IidSelectResult w{};
            mdsd::sel_window(p.data(), q.data(), V, n, sw, w, bf, bc);
            int64_t window = 0;
            for (int64_t b = bf; b <= bc; ++b) window += sw.cnt[b];
            std::printf(
                "V=%lld n=%d floor %.0f us | select(today) %.0f us = %.1fx floor | exact select %.0f us = %.1fx floor "
                "| exact sorted %.0f us | sorted(today) %.0f us | window %lld, kept %lld of %lld\n",
                (long long)V, n, floor, t_sel, t_sel / floor, t_ex, t_ex / floor, t_ref, t_sort, (long long)window,
                (long long)r.kept, (long long)r.support);
        }
    }
}
