// Split the rows of a batch over threads. Each row is computed by the same deterministic code
// whatever thread runs it, so results are bit-for-bit identical for every thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace mdsd {

inline int resolve_threads(int threads, int64_t rows) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, rows)));
}

// fn(row, workspace&) is called once per row; each thread owns one Workspace. Rows are handed
// out dynamically (an atomic counter), which balances uneven rows. The first exception thrown
// by any row is rethrown here after all threads have stopped.
template <class Workspace, class Fn>
void parallel_rows(int64_t rows, int threads, Fn&& fn) {
    threads = resolve_threads(threads, rows);
    std::atomic<int64_t> next{0};
    std::exception_ptr err;
    std::mutex err_mu;
    std::atomic<bool> failed{false};
    auto worker = [&]() {
        Workspace ws;
        for (;;) {
            if (failed.load(std::memory_order_relaxed)) return;
            const int64_t r = next.fetch_add(1);
            if (r >= rows) return;
            try {
                fn(r, ws);
            } catch (...) {
                std::lock_guard<std::mutex> lk(err_mu);
                if (!err) err = std::current_exception();
                failed = true;
                return;
            }
        }
    };
    if (threads == 1) {
        worker();
    } else {
        std::vector<std::thread> pool;
        pool.reserve(threads - 1);
        for (int t = 0; t < threads - 1; ++t) pool.emplace_back(worker);
        worker();
        for (auto& th : pool) th.join();
    }
    if (err) std::rethrow_exception(err);
}

}  // namespace mdsd
