/// @file
/// @brief Seeded, portable random test data.
///
/// The generator is SplitMix64 with explicit arithmetic, so a seed gives the same data with
/// every compiler and standard library (std::uniform_real_distribution does not promise
/// that). A failing check can therefore print its seed and be reproduced anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wb {

/// SplitMix64: small, fast, and good enough for test data (not for cryptography).
class Random {
 public:
  explicit Random(std::uint64_t seed) noexcept : state_(seed) {}
  /// The next 64 random bits.
  std::uint64_t next_u64() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1), a multiple of 2^-24 (exactly representable as float).
  float next_unit_float() noexcept { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }
  /// Uniform in [0, 1), a multiple of 2^-53.
  double next_unit_double() noexcept { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [lo, hi] (hi >= lo); the tiny modulo bias is irrelevant for tests.
  std::int64_t next_int(std::int64_t lo, std::int64_t hi) noexcept {
    const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<std::int64_t>(span == 0 ? next_u64() : next_u64() % span);
  }

 private:
  std::uint64_t state_;
};

/// @p n floats uniform in [lo, hi).
std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);

/// @p n doubles uniform in [lo, hi).
std::vector<double> random_doubles(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0);

/// @p n integers uniform in [lo, hi].
std::vector<int> random_ints(std::size_t n, std::uint64_t seed, int lo, int hi);

/// @p n floats holding small integers uniform in [lo, hi]: sums and products of these are
/// exact in float as long as they stay below 2^24, so results can be compared bit for bit
/// whatever the order of operations.
std::vector<float> random_integer_floats(std::size_t n, std::uint64_t seed, int lo = -8, int hi = 8);

}  // namespace wb
