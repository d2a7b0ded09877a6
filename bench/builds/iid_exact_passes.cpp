// Micro-bench of the exact-sum iid routes (iid_exact.hpp), each pass alone and the whole route, with
// the ExactSum selection and the full sort beside them, on LLM-like rows (bench_dual.py's llm_like: logits N(0, 3^2), q's logits + N(0, 1)), one
// thread, with the memory-stream floor (a copy of p and q) timed in the same loop. Standalone:
//   g++ -std=c++17 -O3 -march=x86-64 -mtune=generic -fno-math-errno -ffp-contract=off -Icpp/include \
//       bench/builds/iid_exact_passes.cpp -o /tmp/bie && /tmp/bie
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <ctime>
#include <vector>

#include "mdsd/bound/dual.hpp"
#include "mdsd/bound/iid_exact.hpp"

// The minimum CPU time of the calling thread over `reps` calls, in us: the machine is shared, and
// time slices lost to other processes do not count (POSIX; the bench is a standalone tool).
template <class F>
static double min_cpu_us(F f, int reps) {
    double best = 1e300;
    f();
    for (int r = 0; r < reps; ++r) {
        timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        f();
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        best = std::min(best, 1e6 * (b.tv_sec - a.tv_sec) + 1e-3 * (b.tv_nsec - a.tv_nsec));
    }
    return best;
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
            const double floor = min_cpu_us(
                [&] { std::memcpy(cp.data(), p.data(), 8 * V), std::memcpy(cq.data(), q.data(), 8 * V); }, 31);
            // Each pass alone: the first pass with the bounds, the second (window list and the base
            // lanes, no certificate), then the gather and the window's sort.
            int64_t bf = 0, bc = 0, m0 = 0, m = 0;
            const double t_pass1 = min_cpu_us([&] { mdsd::sel_window(p.data(), q.data(), V, n, sw, r, bf, bc); }, 31);
            const double t_pass2 =
                min_cpu_us([&] { m = mdsd::sel_base(p.data(), q.data(), V, sw, bf, bc, true, nullptr, m0); }, 31);
            const double t_gather = min_cpu_us([&] { mdsd::sel_gather(p.data(), q.data(), sw, bf, bc, m); }, 31);
            const double t_fast =
                min_cpu_us([&] { r = mdsd::iid_select_fast(p.data(), q.data(), V, n, sw, o, false); }, 31);
            const double t_cert =
                min_cpu_us([&] { r = mdsd::iid_select_fast(p.data(), q.data(), V, n, sw, o, true); }, 31);
            const double t_ex = min_cpu_us([&] { mdsd::iid_select_exact(p.data(), q.data(), V, n, sw, o); }, 11);
            const double t_sort = min_cpu_us(
                [&] { mdsd::dual_prefix(p.data(), q.data(), V, n, mdsd::Scheme::Iid, mdsd::WorMethod::Auto, dw); }, 11);
            std::printf(
                "V=%lld n=%d floor %.0f us | pass 1 %.0f (%.1fx) | pass 2 %.0f (%.1fx) | gather+sort %.0f (%.1fx) | "
                "select %.0f us = %.1fx "
                "floor, with certificate %.0f (%.1fx) | exact select %.0f | sorted %.0f | window %lld, kept %lld of "
                "%lld, base by token %d, exact sums %d\n",
                (long long)V, n, floor, t_pass1, t_pass1 / floor, t_pass2, t_pass2 / floor, t_gather, t_gather / floor,
                t_fast, t_fast / floor, t_cert, t_cert / floor, t_ex, t_sort, (long long)r.window, (long long)r.kept,
                (long long)r.support, (int)r.base_tokens, (int)r.exact_sums);
        }
    }
}
