/// @file
/// @brief One declaration per check: `WB_CHECK(Group, Name, .weight = 2, .hint = "...") { ... }`.
///
/// A check is a GoogleTest test in one of the suites `Correctness`, `Analysis` and
/// `Performance`, declared with what the runner needs to know of it, in one place beside its
/// body:
/// @code
///   WB_CHECK(Correctness, SaxpySmallSizes, .weight = 2,
///            .hint = "Compute i = blockIdx.x * blockDim.x + threadIdx.x and update y[i] only when i < n.") {
///     ...
///   }
/// @endcode
/// The fields, in this order, each optional:
/// - `weight`: the check's points (default: its group's weight in lab.json "weights", else 1);
/// - `backends`: `"sim"` or `"cuda"` when the check exists on one backend only (it is then compiled
///   under `#if defined(CUSIM)` or its negation; the checker's self-tests verify that the
///   binary's checks are the declared ones);
/// - `timeout_s`: the time limit of one run of the check in seconds (default: lab.json "timeout_s");
/// - `ranks`: the rank counts a collective lab's check runs at (`.ranks = {2, 4}`; default: the
///   lab's "launch" ranks);
/// - `hint`: what to try when the check fails (a check may record a more specific one with
///   wb::check::record_hint() where it knows the cause).
///
/// The runner (`./workbook check`) reads these declarations from the check's source
/// (checker/wbcheck/declarations.py), never from a program that runs the lab's code, so student
/// code cannot change a weight or a hint on either backend. Write every field as a literal (a
/// number, a string literal or adjacent ones, `{2, 4}`); the compiler checks the field names and
/// types, the runner reads the same text. A family of checks may be declared by a macro whose
/// body holds the WB_CHECK (`#define RING_SWEEP(NAME, TYPE, OP) WB_CHECK(Correctness, NAME, ...)
/// { ... }`): the runner expands such a macro where it is used.
#pragma once

#include <gtest/gtest.h>

#include <array>

namespace wb::check {

/// A check's declaration (WB_CHECK); see the file's description for the fields.
struct Spec {
  double weight = 0;           ///< points; 0: the group's weight from lab.json
  const char* backends = "";   ///< "sim" or "cuda" for a check of one backend only; "": both
  double timeout_s = 0;        ///< time limit of one run in seconds; 0: the lab's
  std::array<int, 8> ranks{};  ///< collective labs: rank counts it runs at; {}: the lab's
  const char* hint = "";       ///< what to try when the check fails
};

}  // namespace wb::check

/// Declares the check Group.Name (a GoogleTest test, TEST(Group, Name)) with its Spec fields;
/// the check's body follows in braces.
#define WB_CHECK(group, name, ...)                                                          \
  [[maybe_unused]] static constexpr ::wb::check::Spec wb_check_spec_##group##_##name{__VA_ARGS__}; \
  TEST(group, name)
