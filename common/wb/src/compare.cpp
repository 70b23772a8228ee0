#include "wb/compare.h"

#include <cstdio>
#include <limits>
#include <sstream>

namespace wb {
namespace {

// Maps the bits of a float to an integer line on which adjacent floats are adjacent
// integers (negative values mirrored), so that the ULP distance is a difference.
template <class Bits, class F>
std::int64_t ordered(F value) noexcept {
  Bits bits;
  std::memcpy(&bits, &value, sizeof bits);
  constexpr Bits sign = Bits(1) << (sizeof(Bits) * 8 - 1);
  if (bits & sign) return -static_cast<std::int64_t>(bits & ~sign);
  return static_cast<std::int64_t>(bits);
}

template <class Bits, class F>
std::uint64_t ulp_distance_impl(F a, F b) noexcept {
  if (std::isnan(a) || std::isnan(b)) {
    return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<std::uint64_t>::max();
  }
  const std::int64_t x = ordered<Bits>(a);
  const std::int64_t y = ordered<Bits>(b);
  // Both lie within +-2^63 - 1 for doubles, so compute the difference unsigned.
  return x > y ? static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y)
               : static_cast<std::uint64_t>(y) - static_cast<std::uint64_t>(x);
}

std::string number(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}

}  // namespace

std::uint64_t ulp_distance(float a, float b) noexcept { return ulp_distance_impl<std::uint32_t>(a, b); }
std::uint64_t ulp_distance(double a, double b) noexcept { return ulp_distance_impl<std::uint64_t>(a, b); }

std::string describe_tolerance(const Tolerance& t) {
  std::ostringstream out;
  out << "|got - expected| <= " << number(t.abs);
  if (t.rel != 0.0) out << " + " << number(t.rel) << " * |expected|";
  if (t.ulps > 0) out << " or <= " << t.ulps << " ulp";
  return out.str();
}

std::string Comparison::describe(std::string_view what, std::size_t max_lines) const {
  std::ostringstream out;
  if (ok()) {
    out << "all " << count << " elements of " << what << " match (" << tolerance << ")";
    return out.str();
  }
  out << mismatches << " of " << count << " elements of " << what << " differ from the reference ("
      << tolerance << "); first mismatches:";
  std::size_t lines = 0;
  for (const Mismatch& m : first) {
    if (lines++ == max_lines) break;
    out << "\n  " << what << "[" << m.index << "]: expected " << number(m.expected) << ", got "
        << number(m.got);
    if (!std::isnan(m.expected) && !std::isnan(m.got)) {
      out << " (difference " << number(std::fabs(m.got - m.expected)) << ", allowed " << number(m.allowed)
          << ")";
    }
  }
  return out.str();
}

}  // namespace wb
