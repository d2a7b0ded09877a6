// The row sum of validate.hpp against ExactSum (exact_sum.hpp: an independent superaccumulator):
// every row, float or double, in any order, by row_sum and by pair_sums, is the exact sum rounded
// once. The rows include sums at a rounding midpoint (the lanes' bound cannot decide them: the
// ExactSum fallback), subnormals, a wide dynamic range and every tail length; broken rows name
// their first broken rule.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "check.hpp"
#include "mdsd/inputs/validate.hpp"

namespace {

template <class T>
double exact(const std::vector<T>& x) {
    mdsd::ExactSum e;
    for (T v : x) e.add(static_cast<double>(v));
    return e.value();
}

// x and y of the same length (pair_sums reads both to V).
template <class T>
void check_row(const std::vector<T>& x, const std::vector<T>& y, const char* what) {
    check::context("%s, V = %zu", what, x.size());
    int status = mdsd::validate::kOk;
    double value = 0.0;
    const double s = mdsd::validate::row_sum(x.data(), static_cast<int64_t>(x.size()), status, value);
    CHECK_EQ(status, mdsd::validate::kOk);
    CHECK_EQ(s, exact(x));
    double sums[2];
    int st[2];
    double val[2];
    mdsd::validate::pair_sums(x.data(), y.data(), static_cast<int64_t>(x.size()), 1e300, sums, st, val);
    CHECK_EQ(st[0], mdsd::validate::kOk);
    CHECK_EQ(st[1], mdsd::validate::kOk);
    CHECK_EQ(sums[0], exact(x));
    CHECK_EQ(sums[1], exact(y));
}

}  // namespace

int main() {
    std::mt19937_64 eng(5);
    std::normal_distribution<double> N(0.0, 1.0);
    std::uniform_real_distribution<double> U(-700.0, 5.0);
    // A midpoint: 1 + 2^-53 is half-way between 1 and its successor; with 4,000 zeros the lanes'
    // a priori bound is positive, so the fallback decides (to even: 1).
    std::vector<double> mid(4001, 0.0), above{1.0, 0x1p-53, 0x1p-106};
    mid[0] = 1.0;
    mid[2222] = 0x1p-53;
    check_row(mid, std::vector<double>(mid.rbegin(), mid.rend()), "midpoint");
    check_row(above, std::vector<double>{0x1p-106, 1.0, 0x1p-53}, "above the midpoint");
    CHECK_EQ(exact(mid), 1.0);
    CHECK_EQ(exact(above), 1.0 + 0x1p-52);
    std::vector<double> sub(9, 0x1p-1074);
    sub[4] = 0x1p-1060;
    check_row(sub, sub, "subnormals");
    for (int r = 0; r < 300; ++r) {
        const std::size_t V = 1 + static_cast<std::size_t>(eng() % 5000);
        std::vector<double> x(V), y(V);
        for (std::size_t i = 0; i < V; ++i) {
            x[i] = r % 2 ? std::exp(U(eng)) * static_cast<double>(eng() % 2) : std::exp(3.0 * N(eng));
            y[i] = std::exp(3.0 * N(eng));
        }
        check_row(x, y, "random double");
        std::shuffle(x.begin(), x.end(), eng);
        check_row(x, y, "shuffled");
        std::vector<float> xf(x.begin(), x.end()), yf(y.begin(), y.end());
        check_row(xf, yf, "random float");
    }
    // The first broken rule of a row, and the pair's fallback to it.
    check::context("broken rows");
    std::vector<double> bad{0.5, 0.25, -0.125, std::nan(""), 0.25};
    int status = mdsd::validate::kOk;
    double value = 0.0;
    mdsd::validate::row_sum(bad.data(), 5, status, value);
    CHECK_EQ(status, mdsd::validate::kNegative);
    CHECK_EQ(value, -0.125);
    status = mdsd::validate::kOk;
    mdsd::validate::row_sum(bad.data() + 3, 2, status, value);
    CHECK_EQ(status, mdsd::validate::kNonFinite);
    const double big = std::numeric_limits<double>::max();
    std::vector<double> over{big, big, 0.0, 0.0, 0.0}, ok{0.5, 0.5, 0.0, 0.0, 0.0};
    double sums[2], val[2];
    int st[2];
    CHECK(!mdsd::validate::pair_sums(over.data(), ok.data(), 5, 1e-6, sums, st, val));
    CHECK_EQ(st[0], mdsd::validate::kOffSum);
    CHECK_EQ(st[1], mdsd::validate::kOk);
    CHECK(std::isinf(val[0]));
    CHECK(!mdsd::validate::pair_sums(ok.data(), bad.data(), 5, 1e-6, sums, st, val));
    CHECK_EQ(st[0], mdsd::validate::kOk);
    CHECK_EQ(st[1], mdsd::validate::kNegative);
    return check::summary("test_validate");
}
