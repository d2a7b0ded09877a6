// Counter-keyed random streams. A stream is fixed by (seed, key): simulations hand each block of
// samples its own key, so the numbers a block sees do not depend on which thread runs it, and
// results are identical for every thread count.
//
// The generator is SplitMix64 (Steele, Lea & Flood 2014; passes BigCrush): a Weyl counter passed
// through a 64-bit finaliser. The start of stream (seed, key) is a hash of both, so distinct
// streams start at unrelated points of the 2^64 cycle.
#pragma once

#include <cstdint>

#include "mdsd/core/bits.hpp"

namespace mdsd {

inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

class Rng {
  public:
    static constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

    Rng(uint64_t seed, uint64_t key) : state_(mix64(mix64(seed) ^ mix64(key * kGamma + 0x632BE59BD9B4E019ull))) {}

    uint64_t next() {
        state_ += kGamma;
        return mix64(state_);
    }
    // Uniform on [0, 1) with 53 random bits: u < prob is true with probability prob exactly for
    // prob = 0 and prob = 1, and within 2^-53 otherwise.
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    // Uniform index in [0, m) by the multiply-shift map (bias at most m / 2^64).
    uint64_t below(uint64_t m) { return mulhi64(next(), m); }

  private:
    uint64_t state_;
};

}  // namespace mdsd
