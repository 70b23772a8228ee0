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
/// - `limits`: the numbers the check compares with, named: `.limits = {{"max_loads", 9.0},
///   {"max_stores", 4.0}}`. The body reads them with WB_LIMIT("max_loads"), a compile-time constant
///   (a name the declaration lacks does not compile), so a threshold is written once;
/// - `passes`: what passes, one line of text: the THRESHOLD column of `./workbook check`, the
///   `threshold` of results.json, and the "What the checker verifies" row of the lab's handout
///   (generated: `./workbook handouts`). `{max_loads}` stands for that limit's value as written
///   (9.0 reads "9", 0.80 reads "0.8"), `{max_loads:.2f}` with a Python format ("9.00"); each
///   limit appears in the text, and every `{identifier}` in it names a limit;
/// - `hint`: what to try when the check fails (a check may record a more specific one with
///   wb::check::record_hint() where it knows the cause).
///
/// Checks that pass on the same text (the versions of one function, a memcheck and a racecheck
/// check) name one constant of their file instead of repeating it: `constexpr char
/// kVersionPasses[] = "...";`, then `.passes = kVersionPasses` in each (the runner reads such a
/// constant too; `hint` may do the same).
///
/// The runner (`./workbook check`) reads these declarations from the check's source
/// (checker/wbcheck/declarations.py), never from a program that runs the lab's code, so student
/// code cannot change a weight, a threshold's text or a hint on either backend. Write every field
/// as a literal (a number, a string literal or adjacent ones or such a constant, `{2, 4}`,
/// `{{"name", 1.5}}`); the compiler checks the field names, types and limit names, the runner
/// reads the same text. A family of checks may be declared by a macro whose body holds the
/// WB_CHECK (`#define RING_SWEEP(NAME, TYPE, OP) WB_CHECK(Correctness, NAME, ...) { ... }`): the
/// runner expands such a macro where it is used.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <string_view>

namespace wb::check {

/// One named number of a check's declaration (Spec::limits).
struct Limit {
  const char* name = nullptr;  ///< an identifier, e.g. "max_loads"
  double value = 0;            ///< the number the check compares with
};

/// A check's declaration (WB_CHECK); see the file's description for the fields.
struct Spec {
  double weight = 0;           ///< points; 0: the group's weight from lab.json
  const char* backends = "";   ///< "sim" or "cuda" for a check of one backend only; "": both
  double timeout_s = 0;        ///< time limit of one run in seconds; 0: the lab's
  std::array<int, 8> ranks{};  ///< collective labs: rank counts it runs at; {}: the lab's
  Limit limits[6]{};           ///< the named numbers the check compares with (WB_LIMIT)
  const char* passes = "";     ///< what passes; {name} or {name:format} stands for a limit
  const char* hint = "";       ///< what to try when the check fails
};

namespace detail {

constexpr bool is_ident_char(char c, bool first) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

/// Whether @p spec's limits have distinct identifier names, every `{identifier...}` of its
/// passes text names one of them, and each of them appears there.
consteval bool limits_well_formed(const Spec& spec) {
  bool used[6]{};
  for (int i = 0; i < 6; ++i) {
    const char* a = spec.limits[i].name;
    if (a == nullptr) continue;
    if (!is_ident_char(a[0], true)) return false;
    for (const char* c = a; *c; ++c)
      if (!is_ident_char(*c, c == a)) return false;
    for (int j = 0; j < i; ++j)
      if (spec.limits[j].name != nullptr && std::string_view(spec.limits[j].name) == a) return false;
  }
  const std::string_view text = spec.passes;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '{' || i + 1 >= text.size() || !is_ident_char(text[i + 1], true)) continue;
    std::size_t j = i + 1;
    while (j < text.size() && is_ident_char(text[j], false)) ++j;
    if (j >= text.size() || (text[j] != '}' && text[j] != ':')) continue;  // not a placeholder
    const std::string_view name = text.substr(i + 1, j - i - 1);
    bool found = false;
    for (int k = 0; k < 6; ++k) {
      if (spec.limits[k].name != nullptr && name == spec.limits[k].name) used[k] = found = true;
    }
    if (!found) return false;
  }
  for (int k = 0; k < 6; ++k)
    if (spec.limits[k].name != nullptr && !used[k]) return false;
  return true;
}

}  // namespace detail

/// The value of the limit @p name of the check whose declaration is @p Decl (WB_LIMIT).
template <class Decl>
consteval double limit(std::string_view name) {
  for (const Limit& l : Decl::spec.limits) {
    if (l.name != nullptr && name == l.name) return l.value;
  }
  throw "WB_LIMIT names a limit that the check's WB_CHECK does not declare in .limits";
}

}  // namespace wb::check

/// Declares the check Group.Name (a GoogleTest test, TEST(Group, Name)) with its Spec fields;
/// the check's body follows in braces.
#define WB_CHECK(group, name, ...)                                                                      \
  class GTEST_TEST_CLASS_NAME_(group, name);                                                            \
  struct wb_check_decl_##group##_##name {                                                               \
    static constexpr ::wb::check::Spec spec{__VA_ARGS__};                                              \
    static_assert(::wb::check::detail::limits_well_formed(spec),                                       \
                  #group "." #name ": each limit needs an identifier name of its own and a {name} in "  \
                  ".passes, and each {identifier} in .passes must name a limit");                      \
  };                                                                                                    \
  [[maybe_unused]] constexpr wb_check_decl_##group##_##name wb_check_decl_of(                          \
      const GTEST_TEST_CLASS_NAME_(group, name)*) {                                                    \
    return {};                                                                                          \
  }                                                                                                     \
  TEST(group, name)

/// The limit @p name (a string literal) of the running check's declaration: a compile-time
/// constant; use it only in the body of a WB_CHECK.
#define WB_LIMIT(name) (::wb::check::limit<decltype(wb_check_decl_of(this))>(name))
