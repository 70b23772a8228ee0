#include "wb/random.h"

#include <cmath>

namespace wb {

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo, float hi) {
  Random rng(seed);
  std::vector<float> values(n);
  const double width = static_cast<double>(hi) - static_cast<double>(lo);
  for (float& v : values) {
    v = static_cast<float>(lo + width * rng.next_unit_double());
    if (v >= hi) v = std::nextafter(hi, lo);  // rounding to float can reach hi
  }
  return values;
}

std::vector<double> random_doubles(std::size_t n, std::uint64_t seed, double lo, double hi) {
  Random rng(seed);
  std::vector<double> values(n);
  for (double& v : values) v = lo + (hi - lo) * rng.next_unit_double();
  return values;
}

std::vector<int> random_ints(std::size_t n, std::uint64_t seed, int lo, int hi) {
  Random rng(seed);
  std::vector<int> values(n);
  for (int& v : values) v = static_cast<int>(rng.next_int(lo, hi));
  return values;
}

std::vector<float> random_integer_floats(std::size_t n, std::uint64_t seed, int lo, int hi) {
  Random rng(seed);
  std::vector<float> values(n);
  for (float& v : values) v = static_cast<float>(rng.next_int(lo, hi));
  return values;
}

}  // namespace wb
