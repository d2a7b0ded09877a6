// ratio_order (order.hpp) alone, per row, two versions side by side in one process: this tree's and
// a base tree's order.hpp, included into namespace mdsd_base (-DMDSD_BASE_ORDER=path). The calls
// alternate (base, this) on each row and each keeps its best CPU time, so a busy machine inflates
// both alike. bench/builds/ratio_sort_two_trees.py builds and runs it on shipped and held-out rows. One thread.
//   bench_order ROWS_FILE REPS  ->  per row: "K base_us this_us same"  (same: identical order)
// ROWS_FILE: int64 B, int64 V, then B x V float64 p, then B x V float64 q.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <vector>

#define mdsd mdsd_base
#include MDSD_BASE_ORDER
#undef mdsd
#include "mdsd/core/order.hpp"

static double cpu_us() {  // the calling thread's CPU time: time slices lost to other jobs do not count
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return 1e6 * t.tv_sec + 1e-3 * t.tv_nsec;
}

int main(int argc, char** argv) {
    if (argc != 3) return std::fprintf(stderr, "usage: bench_order ROWS_FILE REPS\n"), 2;
    FILE* f = std::fopen(argv[1], "rb");
    int64_t hdr[2];
    if (!f || std::fread(hdr, sizeof hdr, 1, f) != 1) return std::fprintf(stderr, "cannot read %s\n", argv[1]), 2;
    const int64_t B = hdr[0], V = hdr[1];
    std::vector<double> P(B * V), Q(B * V);
    if (std::fread(P.data(), 8, B * V, f) != static_cast<size_t>(B * V) ||
        std::fread(Q.data(), 8, B * V, f) != static_cast<size_t>(B * V))
        return std::fprintf(stderr, "short file\n"), 2;
    std::fclose(f);
    const int reps = std::atoi(argv[2]);
    mdsd::OrderWorkspace ws;  // reused, as the kernels do
    mdsd_base::OrderWorkspace wb;
    std::vector<int32_t> order, ob;
    for (int64_t r = 0; r < B; ++r) {
        const double* p = P.data() + r * V;
        const double* q = Q.data() + r * V;
        double tb = 1e300, tt = 1e300;
        int64_t K = 0;
        for (int k = 0; k < reps; ++k) {
            double t0 = cpu_us();
            mdsd_base::ratio_order(p, q, V, wb, ob);
            tb = std::min(tb, cpu_us() - t0);
            t0 = cpu_us();
            K = mdsd::ratio_order(p, q, V, ws, order);
            tt = std::min(tt, cpu_us() - t0);
        }
        std::printf("%lld %.2f %.2f %d\n", static_cast<long long>(K), tb, tt, order == ob ? 1 : 0);
    }
}
