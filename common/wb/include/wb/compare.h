/// @file
/// @brief Comparing results with a relative plus absolute tolerance, or a ULP distance,
/// and reporting the first mismatches (index, expected, got, allowed).
///
/// An element passes when |got - expected| <= abs + rel * |expected|, or when the two are
/// at most `ulps` units in the last place apart. NaN matches NaN; infinities must match
/// exactly. Choose the tolerance from the computation: a sum of n terms in any order
/// needs about n * eps * sum|terms|; a single fused or unfused multiply-add needs about
/// 2 * eps * (|a*x| + |y|) (see compare_within()).
/// @code
///   wb::Comparison c = wb::compare<float>(expected, got, {.rel = 1e-5, .abs = 1e-6});
///   if (!c.ok()) std::cerr << c.describe("y") << "\n";
/// @endcode
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace wb {

/// Accepted difference between an expected and a computed value.
struct Tolerance {
  double rel = 0.0;          ///< relative part, times |expected|
  double abs = 0.0;          ///< absolute part
  std::uint64_t ulps = 0;    ///< alternatively: at most this many ULPs apart (0: unused)
};

/// One element that differs by more than its allowance.
struct Mismatch {
  std::size_t index = 0;
  double expected = 0.0;
  double got = 0.0;
  double allowed = 0.0;       ///< the absolute difference that was allowed at this element
  std::uint64_t ulps = 0;     ///< ULP distance between expected and got
};

/// Outcome of a comparison: counts, the largest errors, and the first mismatches.
struct Comparison {
  std::size_t count = 0;              ///< elements compared
  std::size_t mismatches = 0;         ///< elements outside the tolerance
  double max_abs_error = 0.0;         ///< over all finite pairs
  std::uint64_t max_ulps = 0;         ///< over all pairs
  std::vector<Mismatch> first;        ///< the first mismatches, in index order
  std::string tolerance;              ///< the rule applied, in words

  bool ok() const noexcept { return mismatches == 0; }
  /// Learner-readable summary: "3 of 1000 elements of y differ ...", then one line per
  /// kept mismatch (at most @p max_lines).
  std::string describe(std::string_view what = "result", std::size_t max_lines = 5) const;
};

/// Units in the last place between two floats (0 when equal, including +0 and -0;
/// UINT64_MAX when exactly one is NaN).
std::uint64_t ulp_distance(float a, float b) noexcept;
/// Units in the last place between two doubles.
std::uint64_t ulp_distance(double a, double b) noexcept;

/// "|got - expected| <= 1e-06 + 1e-05 * |expected| or <= 4 ulp".
std::string describe_tolerance(const Tolerance& tolerance);

namespace detail {

template <class T, class Allowed>
Comparison compare_impl(std::span<const T> expected, std::span<const T> got, Allowed allowed,
                        std::uint64_t ulps, std::size_t keep) {
  if (expected.size() != got.size()) {
    throw std::invalid_argument("wb::compare: expected has " + std::to_string(expected.size()) +
                                " elements but got has " + std::to_string(got.size()));
  }
  Comparison result;
  result.count = expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const T e = expected[i];
    const T g = got[i];
    const std::uint64_t distance = ulp_distance(e, g);
    if (distance > result.max_ulps) result.max_ulps = distance;
    bool match;
    double limit = 0.0;
    if (std::isnan(e) || std::isnan(g)) {
      match = std::isnan(e) && std::isnan(g);
    } else if (std::isinf(e) || std::isinf(g)) {
      match = e == g;
    } else {
      const double diff = std::fabs(static_cast<double>(g) - static_cast<double>(e));
      if (diff > result.max_abs_error) result.max_abs_error = diff;
      limit = allowed(i, static_cast<double>(e));
      match = diff <= limit || (ulps > 0 && distance <= ulps);
    }
    if (!match) {
      ++result.mismatches;
      if (result.first.size() < keep) {
        result.first.push_back({i, static_cast<double>(e), static_cast<double>(g), limit, distance});
      }
    }
  }
  return result;
}

}  // namespace detail

/// Compares element by element under one tolerance for all elements.
template <class T>
Comparison compare(std::span<const T> expected, std::span<const T> got, const Tolerance& tolerance,
                   std::size_t keep = 5) {
  Comparison result = detail::compare_impl<T>(
      expected, got,
      [&](std::size_t, double e) { return tolerance.abs + tolerance.rel * std::fabs(e); },
      tolerance.ulps, keep);
  result.tolerance = describe_tolerance(tolerance);
  return result;
}

/// Compares with a per-element allowance: element i passes when
/// |got[i] - expected[i]| <= allowed_abs_error(i). Use it when the error bound depends on
/// the inputs (for y = a*x + y: 2 * eps * (|a*x[i]| + |y[i]|)). @p rule describes it.
template <class T, class AllowedFn>
Comparison compare_within(std::span<const T> expected, std::span<const T> got,
                          AllowedFn allowed_abs_error, std::string rule, std::size_t keep = 5) {
  Comparison result = detail::compare_impl<T>(
      expected, got, [&](std::size_t i, double) { return static_cast<double>(allowed_abs_error(i)); },
      0, keep);
  result.tolerance = std::move(rule);
  return result;
}

}  // namespace wb
