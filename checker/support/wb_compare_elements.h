/// @file
/// @brief Element-wise comparison of an output with its reference, and the failure message every
/// lab gives for it: how many elements are wrong, the first one named, what it holds against what
/// was expected and allowed, and why (a check's own diagnosis).
///
///     WB_ASSERT(wb::check::compare_elements(call, "y", got, ref.value, ref.allowed,
///                                           [&](std::size_t i) { return dims.at(i); }));
///
/// gives, for a wrong output, "softmax_forward(rows=3, cols=5): 2 of 15 elements of y are wrong;
/// the first is y[1 * cols + 4] (row 1, column 4): got 0.25, expected 0.5 (allowed difference
/// 1.2e-07)."
///
/// The reference is in double (computed on the host from the same float inputs) with an allowance
/// per element; wb::compare (common/wb, wb/compare.h) is the learners' float-against-float
/// comparison with one tolerance rule.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "wb_buffers.h"
#include "wb_check.h"

namespace wb::check {

/// What a comparison of n elements found: how many were wrong, and the first of them.
struct Mismatches {
  std::size_t count = 0, first = 0;
  bool none() const { return count == 0; }
};

/// The indices i < @p n for which @p wrong(i) holds: counted, and the first.
template <class Wrong>
Mismatches find_mismatches(std::size_t n, Wrong&& wrong) {
  Mismatches m;
  for (std::size_t i = 0; i < n; ++i) {
    if (wrong(i) && m.count++ == 0) m.first = i;
  }
  return m;
}

/// True when @p got matches @p expected within @p allowed: bit-equal (and written) when @p allowed
/// is 0, equal when @p expected is not finite (an infinity must be produced as such), else finite
/// and at most @p allowed away.
inline bool within(float got, double expected, double allowed) {
  if (allowed == 0.0) return !never_written(got) && static_cast<double>(got) == expected;
  if (!std::isfinite(expected)) return static_cast<double>(got) == expected;
  return std::isfinite(got) && std::fabs(static_cast<double>(got) - expected) <= allowed;
}

/// A value in a mismatch message: 8 significant digits, or what an element never written holds.
inline std::string shown_value(float v) {
  return never_written(v) ? std::string("nothing (never written: still the 0xFF bytes the checker put there)")
                          : significant(v, 8);
}

/// The failure for @p m (not none()) among @p n elements of @p array: "{call}: {count} of {n}
/// elements of {array} are wrong; the first is {where}: got {got}, expected {expected}" then
/// " exactly." when @p allowed is 0, "." when @p expected is not finite, else " (allowed difference
/// {allowed}).", then @p why when it is not empty.
inline testing::AssertionResult wrong_elements(std::string_view call, std::string_view array, const Mismatches& m,
                                               std::size_t n, std::string_view where, float got, double expected,
                                               double allowed, std::string_view why = {}) {
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << ": " << m.count << " of " << n << " elements of " << array << " are wrong; the first is " << where
          << ": got " << shown_value(got) << ", expected " << significant(expected, 8);
  if (allowed == 0.0) {
    failure << " exactly.";
  } else if (!std::isfinite(expected)) {
    failure << ".";
  } else {
    failure << " (allowed difference " << significant(allowed, 8) << ").";
  }
  if (!why.empty()) failure << " " << why;
  return failure;
}

/// Compares @p got with @p expected element by element, element i within @p allowed[i] as within()
/// decides; on a mismatch, wrong_elements() for the first wrong element, named by @p where(i)
/// ("y[n=0][c=1][p=2][q=3]") and explained by @p why(i) when given ("" for nothing to add).
inline testing::AssertionResult compare_elements(std::string_view call, std::string_view array,
                                                 std::span<const float> got, std::span<const double> expected,
                                                 std::span<const double> allowed,
                                                 const std::function<std::string(std::size_t)>& where,
                                                 const std::function<std::string(std::size_t)>& why = nullptr) {
  const Mismatches m =
      find_mismatches(got.size(), [&](std::size_t i) { return !within(got[i], expected[i], allowed[i]); });
  if (m.none()) return testing::AssertionSuccess();
  const std::size_t i = m.first;
  return wrong_elements(call, array, m, got.size(), where(i), got[i], expected[i], allowed[i], why ? why(i) : "");
}

}  // namespace wb::check
