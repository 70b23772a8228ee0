/// @file
/// @brief Support for lab checks: recording measured value and hint for the runner, turning
/// CUDA errors from student code into learner-readable failures, and explaining out-of-bounds
/// writes and unwritten outputs.
///
/// A check is a GoogleTest test in one of three suites, which are the check groups:
/// `Correctness`, `Analysis` and `Performance`, declared with WB_CHECK (wb_check_spec.h). The runner (`./workbook check`) runs each
/// test in its own process and reads the properties recorded here from GoogleTest's JSON
/// output:
/// - `measured`: what the check measured ("4.00 sectors/request", "12/12 cases"),
/// - `hint`: what to try when it fails (overrides the hint of the check's WB_CHECK),
/// - `not_measured`: why a check could not measure on this backend (the check is then
///   skipped with WB_NOT_MEASURED and shown as NOT MEASURED, which never counts as passed).
///
/// What a check needs to pass (the THRESHOLD column) is not recorded: it is the `.passes` text of
/// its WB_CHECK, which the runner reads from the source.
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <iterator>
#include <span>
#include <string>
#include <vector>
#include <string_view>

#include "wb/device_buffer.h"
#include "wb_check_spec.h"

namespace wb::check {

/// Records the measured value of the running check (shown in the MEASURED column).
void record_measured(const std::string& value);
/// Records a hint shown when the running check fails.
void record_hint(const std::string& value);
/// Records that the running check's failure has no hint: neither its WB_CHECK's nor lab.json's
/// applies (an Analysis check stopped by a wrong result, which its own hint does not explain).
void record_no_hint();

/// The implementation this binary was built from, e.g. "labs/01-saxpy/saxpy.cu". Checks
/// use this rather than the WB_LAB_SOURCES macro: a lab's check sources are compiled once
/// and linked with several implementations (skeleton, solution, known-wrong versions).
const char* lab_sources();

/// Success when @p code is cudaSuccess. Otherwise a failure that says which call failed
/// and how; cudaErrorNotYetImplemented, what a skeleton returns, becomes
/// "not implemented yet: {function} in {lab sources}".
testing::AssertionResult cuda_success(cudaError_t code, std::string_view call, std::string_view function);

/// After student code returned cudaSuccess: waits for the device and fails when a kernel
/// failed while running or an error is still pending (an error that was not returned).
testing::AssertionResult device_clean_after(std::string_view call);

/// Success when no guard element of @p array (a buffer of @p n elements) was modified;
/// else a failure that names the indices written out of bounds and the usual cause.
testing::AssertionResult no_out_of_bounds_writes(const GuardDamage& damage, std::string_view array,
                                                 std::size_t n, std::string_view call);

/// When every wrong element of @p got still holds its @p original value, explains which
/// elements were never written (for example "y[1048576..1048582] were never written: the
/// grid covered only the first 1048576 elements"); "" when that is not the pattern.
/// Elements whose @p expected value equals the original are ignored (they cannot tell).
std::string describe_unwritten(std::span<const float> original, std::span<const float> expected,
                               std::span<const float> got, std::string_view array);

/// Records "passed/total cases correct" (the MEASURED column; @p noun names what is counted when
/// it is not cases: "20/20 shapes correct"). Cases, for_each_case() and run_cases() record it.
inline void record_cases(std::size_t passed, std::size_t total, std::string_view noun = "cases") {
  record_measured(std::to_string(passed) + "/" + std::to_string(total) + " " + std::string(noun) + " correct");
}

/// @p check(), a verdict on @p call into the lab's code made on buffers of the checker; when a CUDA
/// call of the checker's own (an allocation, a copy) throws wb::CudaError meanwhile, a failure that
/// says so: "a CUDA call of the checker failed around {call}: {error}".
testing::AssertionResult guarded(std::string_view call, const std::function<testing::AssertionResult()>& check);

/// Appends @p part to @p text ("; " between parts) and records the whole as the MEASURED column:
/// a check that measures several functions shows each as it is measured.
void append_measured(std::string& text, std::string_view part);

/// Counts a check's cases as they pass, recording "k/total cases correct" (the MEASURED column)
/// after each: a failing case leaves the count of those before it. Use as
///     wb::check::Cases cases(13);
///     for (int n : {1, 31, 32, 33}) for (std::uint64_t seed : {1, 2, 3}) WB_ASSERT(cases(check(n, seed)));
///     WB_ASSERT(cases(check_twice(33, 4)));
/// for cases that are not the elements of one range (for_each_case() takes those). @p noun names
/// what is counted when it is not cases ("shapes": "20/20 shapes correct").
class Cases {
 public:
  explicit Cases(std::size_t total, std::string_view noun = "cases") : total_(total), noun_(noun) {
    record_cases(0, total_, noun_);
  }
  /// @p result, the verdict on the next case, after counting it as passed when it holds.
  testing::AssertionResult operator()(testing::AssertionResult result) {
    if (result) record_cases(++passed_, total_, noun_);
    return result;
  }
  std::size_t passed() const { return passed_; }

 private:
  std::size_t total_, passed_ = 0;
  std::string noun_;
};

/// Checks every element of @p cases in order with @p check (a function of one case returning a
/// testing::AssertionResult), recording "k/n cases correct" as they pass; the first failure, else
/// success. Use as WB_ASSERT(for_each_case(shapes, [&](const Shape& s) { return check_shape(s); })).
/// @p noun names what is counted when it is not cases (Cases).
template <class Range, class Check>
testing::AssertionResult for_each_case(const Range& cases, Check&& check, std::string_view noun = "cases") {
  Cases counted(std::size(cases), noun);
  for (const auto& c : cases) {
    if (testing::AssertionResult r = counted(check(c)); !r) return r;
  }
  return testing::AssertionSuccess();
}

/// Runs @p count cases in order, @p one(i) checking case i, and records "k/count cases correct"
/// (the MEASURED column) as they pass; returns the first failure, else success. Use as
/// WB_ASSERT(run_cases(n, [&](std::size_t i) { return check_case(cases[i]); })).
inline testing::AssertionResult run_cases(std::size_t count,
                                          const std::function<testing::AssertionResult(std::size_t)>& one) {
  Cases counted(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (testing::AssertionResult r = counted(one(i)); !r) return r;
  }
  return testing::AssertionSuccess();
}

/// An Analysis check whose run hit a wrong result: fails the running check on @p results alone,
/// saying that @p what (its tools) has no verdict on wrong code and that the failing Correctness
/// check is the one to fix, and records no hint (the check's hint is about the tools' findings).
/// The caller returns right after this call.
/// With @p tools_ran, the message adds that the tools found nothing.
void fail_on_wrong_result(const char* what, const testing::AssertionResult& results, bool tools_ran = false);

/// Analysis verdict of a check (sim backend): the cusim reports of @p tools collected since the
/// last cusim::analysis::reset() fail the check, listing the first ones (a report usually explains
/// a wrong result, so reports come before @p results' message). With none, the check passes with
/// "0 reports" when @p results holds; when it does not, the check fails on the wrong result alone:
/// its message says that no tool reported anything and that the result was wrong (the Correctness
/// checks name it too), and it shows no hint, since the check's hint is about the tools' reports.
/// Without analysis instrumentation the check is NOT MEASURED (after the same failure on a wrong
/// result). The caller returns right after this call.
void expect_no_analysis_reports(const std::vector<std::string>& tools, const char* what,
                                const testing::AssertionResult& results);

/// The usual analysis check (sim backend): resets cusim's analysis, runs @p cases, which passes
/// the result of each case it runs to `keep` (the first failure is kept), then decides as
/// expect_no_analysis_reports(tools, what, that first failure) does. Use as
///     expect_no_analysis_reports(tools, what, [&](const auto& keep) { keep(check_case(a)); ... });
void expect_no_analysis_reports(
    const std::vector<std::string>& tools, const char* what,
    const std::function<void(const std::function<void(testing::AssertionResult)>& keep)>& cases);

/// A threshold as its check's source writes it: the shortest decimal that reads back as the same
/// double ("0.8" for 0.80, "1e-05"), never the 0.80000000000000004 that GoogleTest prints when a
/// double is streamed into a failure message. Every check streams its thresholds through this.
std::string as_written(double v);

/// @p v with @p digits digits after the point ("%.*f"): measured ratios and metrics in messages.
std::string fixed(double v, int digits = 2);

/// A rate measured against its baseline of the same run, as the MEASURED column shows it:
/// versus(2870.1, 3376.5, "copy") is "0.85 x copy (2870.10 GB/s vs 3376.50 GB/s)".
std::string versus(double rate, double baseline_rate, std::string_view baseline, std::string_view unit = "GB/s");

/// @p v with @p digits significant digits ("%.*g"): values in mismatch messages.
std::string significant(double v, int digits);

}  // namespace wb::check

/// Fails and leaves the running check when @p expr (a testing::AssertionResult) failed,
/// with the result's message alone as the failure text.
#define WB_ASSERT(expr)                                                     \
  do {                                                                      \
    if (::testing::AssertionResult wb_result_ = (expr); !wb_result_) {      \
      FAIL() << wb_result_.message();                                       \
    }                                                                       \
  } while (0)

/// In an Analysis check: fails the check (and returns from it) when @p expr, the result of the
/// run the check analyses, is a failure, with fail_on_wrong_result's message (@p what: what the
/// check judges, "atomic operations").
#define WB_ASSERT_ANALYSIS_RUN(expr, what)                                  \
  do {                                                                      \
    if (::testing::AssertionResult wb_result_ = (expr); !wb_result_) {      \
      return ::wb::check::fail_on_wrong_result((what), wb_result_);         \
    }                                                                       \
  } while (0)

/// Marks the running check NOT MEASURED on this backend and returns from it. The runner
/// shows it as NOT MEASURED, never as passed, and it scores 0.
#define WB_NOT_MEASURED(reason)                                                   \
  do {                                                                            \
    const std::string wb_not_measured_reason_ = (reason);                         \
    ::testing::Test::RecordProperty("not_measured", wb_not_measured_reason_);     \
    GTEST_SKIP() << "not measured on sim: " << wb_not_measured_reason_;            \
  } while (0)
