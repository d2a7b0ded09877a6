// A tiny assertion layer for the C++ tests (no framework): every check counts, a failing check
// prints file:line, the expression and the values, and main() ends with `return check::summary(..)`,
// which prints one line and returns non-zero if anything failed (ctest reads the exit code).
//
//   CHECK(cond)                         a boolean
//   CHECK_MSG(cond, fmt, ...)           with a printf-style context (case number, n, V, ...)
//   CHECK_EQ(a, b)                      integers / exact values
//   CHECK_NEAR(a, b, tol)               |a - b| <= tol
//   CHECK_CLOSE(a, b, rel, abs)         |a - b| <= abs + rel |b|   (b: the reference)
//   CHECK_THROWS(stmt, Type)            stmt throws Type (anything else, or nothing, fails)
//
// The context of the current case can be set once with check::context("...") and is printed with
// every failure until it is changed. After kMaxPrinted failures only the count goes on.
#pragma once

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>

namespace check {

struct State {
    long checks = 0, failures = 0;
    std::string ctx;
};
inline State& state() {
    static State s;
    return s;
}
constexpr long kMaxPrinted = 25;

inline void context(const char* fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    state().ctx = buf;
}

// Records one check; on failure prints "file:line: FAIL what [detail] (context)".
inline bool record(bool ok, const char* file, int line, const char* what, const char* detail) {
    State& s = state();
    ++s.checks;
    if (ok) return true;
    ++s.failures;
    if (s.failures <= kMaxPrinted) {
        std::fprintf(stderr, "%s:%d: FAIL %s%s%s%s%s\n", file, line, what, detail[0] ? "  " : "", detail,
                     s.ctx.empty() ? "" : "  [", s.ctx.empty() ? "" : (s.ctx + "]").c_str());
    } else if (s.failures == kMaxPrinted + 1) {
        std::fprintf(stderr, "... (further failures are counted, not printed)\n");
    }
    return false;
}

inline bool near(double a, double b, double tol) { return std::fabs(a - b) <= tol; }  // NaN fails

// Prints "name: N checks, F failed" and returns the process exit code.
inline int summary(const char* name) {
    const State& s = state();
    std::printf("%s: %ld checks, %ld failed -- %s\n", name, s.checks, s.failures, s.failures ? "FAILED" : "OK");
    return s.failures ? 1 : 0;
}

}  // namespace check

#define CHECK(cond) ::check::record(static_cast<bool>(cond), __FILE__, __LINE__, "CHECK(" #cond ")", "")

#define CHECK_MSG(cond, ...)                                                            \
    do {                                                                                \
        const bool check_ok_ = static_cast<bool>(cond);                                 \
        char check_buf_[512] = "";                                                      \
        if (!check_ok_) std::snprintf(check_buf_, sizeof check_buf_, __VA_ARGS__);      \
        ::check::record(check_ok_, __FILE__, __LINE__, "CHECK(" #cond ")", check_buf_); \
    } while (0)

#define CHECK_EQ(a, b)                                                                                              \
    do {                                                                                                            \
        const auto check_a_ = (a);                                                                                  \
        const auto check_b_ = (b);                                                                                  \
        const bool check_ok_ = check_a_ == check_b_;                                                                \
        char check_buf_[256] = "";                                                                                  \
        if (!check_ok_)                                                                                             \
            std::snprintf(check_buf_, sizeof check_buf_, "lhs = %.17g, rhs = %.17g", static_cast<double>(check_a_), \
                          static_cast<double>(check_b_));                                                           \
        ::check::record(check_ok_, __FILE__, __LINE__, "CHECK_EQ(" #a ", " #b ")", check_buf_);                     \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                                  \
    do {                                                                                                       \
        const double check_a_ = (a), check_b_ = (b), check_t_ = (tol);                                         \
        const bool check_ok_ = ::check::near(check_a_, check_b_, check_t_);                                    \
        char check_buf_[256] = "";                                                                             \
        if (!check_ok_)                                                                                        \
            std::snprintf(check_buf_, sizeof check_buf_, "lhs = %.17g, rhs = %.17g, |diff| = %.3g > tol %.3g", \
                          check_a_, check_b_, std::fabs(check_a_ - check_b_), check_t_);                       \
        ::check::record(check_ok_, __FILE__, __LINE__, "CHECK_NEAR(" #a ", " #b ")", check_buf_);              \
    } while (0)

#define CHECK_CLOSE(a, b, rel, abs_)                                                                           \
    do {                                                                                                       \
        const double check_a_ = (a), check_b_ = (b);                                                           \
        const double check_t_ = (abs_) + (rel) * std::fabs(check_b_);                                          \
        const bool check_ok_ = ::check::near(check_a_, check_b_, check_t_);                                    \
        char check_buf_[256] = "";                                                                             \
        if (!check_ok_)                                                                                        \
            std::snprintf(check_buf_, sizeof check_buf_, "lhs = %.17g, rhs = %.17g, |diff| = %.3g > tol %.3g", \
                          check_a_, check_b_, std::fabs(check_a_ - check_b_), check_t_);                       \
        ::check::record(check_ok_, __FILE__, __LINE__, "CHECK_CLOSE(" #a ", " #b ")", check_buf_);             \
    } while (0)

#define CHECK_THROWS(stmt, Type)                                                             \
    do {                                                                                     \
        const char* check_got_ = "nothing was thrown";                                       \
        bool check_ok_ = false;                                                              \
        try {                                                                                \
            stmt;                                                                            \
        } catch (const Type&) { check_ok_ = true; } catch (...) {                            \
            check_got_ = "another exception type was thrown";                                \
        }                                                                                    \
        ::check::record(check_ok_, __FILE__, __LINE__, "CHECK_THROWS(" #stmt ", " #Type ")", \
                        check_ok_ ? "" : check_got_);                                        \
    } while (0)
