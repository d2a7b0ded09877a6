// Split the rows of a batch over threads. Each row is computed by the same deterministic code
// whatever thread runs it, so results are bit-for-bit identical for every thread count.
//
// Interrupts: long loops call poll_interrupt() (cheap: a counter, and a clock read every 256
// calls). At most every kPollInterval it calls the hook installed by the bindings, which acquires
// the GIL in the Python main thread only, runs PyErr_CheckSignals and throws if a signal handler
// raised (KeyboardInterrupt). Worker threads never call the hook; they stop at their next row once
// any row has failed. The headers themselves do not depend on Python: without a hook the poll is
// a no-op.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "mdsd/core/limits.hpp"

namespace mdsd {

//: A hook that throws to abort the computation (installed by the Python bindings).
using InterruptHook = void (*)();

inline std::atomic<InterruptHook>& interrupt_hook() {
    static std::atomic<InterruptHook> hook{nullptr};
    return hook;
}

inline void set_interrupt_hook(InterruptHook h) { interrupt_hook().store(h); }

// Minimum time between two calls of the hook from one thread.
constexpr std::chrono::milliseconds kPollInterval{20};

// Reads the clock on every call: for loops whose iterations are long. May throw whatever the
// hook throws; calls it at most every kPollInterval per thread.
inline void poll_interrupt_now() {
    thread_local std::chrono::steady_clock::time_point last{};
    const InterruptHook h = interrupt_hook().load(std::memory_order_relaxed);
    if (!h) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last < kPollInterval) return;
    last = now;
    h();
}

// Call from long loops of short iterations. Cost: one thread-local increment, and the clock read
// of poll_interrupt_now every 256 calls.
inline void poll_interrupt() {
    thread_local uint32_t calls = 0;
    if ((++calls & 255u) == 0) poll_interrupt_now();
}

//: Upper bound on worker threads per call, whatever the caller asks (results never depend on it).
constexpr int kMaxThreads = limits::kMaxThreads;

// The number of cores, read once: std::thread::hardware_concurrency() re-reads sysfs on every call
// (about 13 us of CPU), which a one-row call would pay at every entry.
inline int hardware_threads() {
    static const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return cores;
}

inline int resolve_threads(int threads, int64_t rows) {
    if (threads <= 0) threads = hardware_threads();
    threads = std::min(threads, kMaxThreads);
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, rows)));
}

// fn(row, workspace&) is called once per row; each thread owns one Workspace. Rows are handed
// out dynamically (an atomic counter), which balances uneven rows. The first exception thrown
// by any row (or by the interrupt hook, polled by the calling thread between its rows) is
// rethrown here after all threads have stopped. If the system refuses to start a thread, the
// rows are shared by the threads that did start.
template <class Workspace, class Fn>
void parallel_rows(int64_t rows, int threads, Fn&& fn) {
    threads = resolve_threads(threads, rows);
    std::atomic<int64_t> next{0};
    std::exception_ptr err;
    std::mutex err_mu;
    std::atomic<bool> failed{false};
    auto worker = [&](bool caller) {
        try {
            Workspace ws;
            for (;;) {
                if (failed.load(std::memory_order_relaxed)) return;
                if (caller) poll_interrupt_now();
                const int64_t r = next.fetch_add(1);
                if (r >= rows) return;
                fn(r, ws);
            }
        } catch (...) {
            std::lock_guard<std::mutex> lk(err_mu);
            if (!err) err = std::current_exception();
            failed = true;
        }
    };
    if (threads == 1) {
        worker(true);
    } else {
        std::vector<std::thread> pool;
        pool.reserve(threads - 1);
        for (int t = 0; t < threads - 1; ++t) {
            try {
                pool.emplace_back(worker, false);
            } catch (const std::system_error&) {
                break;  // out of threads: the ones running (and this one) share the rows
            }
        }
        worker(true);
        for (auto& th : pool) th.join();
    }
    if (err) std::rethrow_exception(err);
}

}  // namespace mdsd
