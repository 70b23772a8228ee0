#include "wb_check.h"
#include "wb_timed.h"

#include <cstdio>
#include <cstring>
#include <algorithm>
#include <charconv>
#include <random>
#include <sstream>

#include "wb/error.h"

#if defined(CUSIM) && __has_include(<cusim/analysis.h>)
#include <cusim/analysis.h>
#define WB_HAVE_CUSIM_ANALYSIS 1
#endif

namespace wb::check {

void record_measured(const std::string& value) { testing::Test::RecordProperty("measured", value); }
void record_hint(const std::string& value) { testing::Test::RecordProperty("hint", value); }
void record_no_hint() { testing::Test::RecordProperty("no_hint", "1"); }

testing::AssertionResult cuda_success(cudaError_t code, std::string_view call, std::string_view function) {
  if (code == cudaSuccess) return testing::AssertionSuccess();
  if (code == cudaErrorNotYetImplemented) {
    return testing::AssertionFailure() << "not implemented yet: " << function << " in " << lab_sources()
                                       << " (" << call << " returned cudaErrorNotYetImplemented, "
                                       << "which is what the skeleton returns)";
  }
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << " returned " << wb::error_text(code);
  // What a launch returns for an invalid configuration: cudaErrorInvalidValue for every kind on CUDA 13
  // (tests/conformance/launch_errors.cu, answered by an H100); older toolkits said
  // cudaErrorInvalidConfiguration for a block over its limits.
  if (code == cudaErrorInvalidConfiguration) {
    failure << ": the launch configuration was invalid (more than 1024 threads per block, or a block "
               "dimension over (1024, 1024, 64))";
  } else if (code == cudaErrorInvalidValue) {
    failure << ": an argument was invalid; for a kernel launch: a grid or block dimension of 0 (a grid of 0 "
               "blocks), more than 1024 threads per block or a block dimension over (1024, 1024, 64), more "
               "threads per block than the kernel's __launch_bounds__, gridDim.y or gridDim.z above 65535, or "
               "more dynamic shared memory than the kernel may use";
  }
  return failure;
}

testing::AssertionResult device_clean_after(std::string_view call) {
  const cudaError_t sync = cudaDeviceSynchronize();
  if (sync != cudaSuccess) {
    return testing::AssertionFailure()
           << call << " returned cudaSuccess, but the kernel failed while running: " << wb::error_text(sync)
           << ". The device error report above the check output says where.";
  }
  const cudaError_t pending = cudaGetLastError();
  if (pending != cudaSuccess) {
    return testing::AssertionFailure()
           << call << " returned cudaSuccess, but a CUDA error was left pending: " << wb::error_text(pending)
           << ". Return the error (cudaGetLastError() after a launch) instead of dropping it.";
  }
  return testing::AssertionSuccess();
}

testing::AssertionResult no_out_of_bounds_writes(const GuardDamage& damage, std::string_view array,
                                                 std::size_t n, std::string_view call) {
  if (damage.intact()) return testing::AssertionSuccess();
  testing::AssertionResult failure = testing::AssertionFailure();
  failure << call << " wrote outside " << array << "[0.." << (n == 0 ? std::string("-1") : std::to_string(n - 1))
          << "] (n = " << n << "): ";
  if (damage.past_end > 0 && damage.before_start == 0) {
    if (damage.past_end == 1 && damage.first_index == static_cast<std::int64_t>(n)) {
      failure << array << "[" << n << "] was written, one past the end. An off-by-one bound? "
              << "Valid indices are 0 .. n-1: test i < n, not i <= n.";
    } else {
      failure << damage.past_end << " element(s) past the end were written (" << array << "["
              << damage.first_index << "] to " << array << "[" << damage.last_index
              << "]). Threads with an index i >= n must not touch memory: is the bounds check "
                 "`if (i < n)` missing?";
    }
  } else {
    failure << damage.modified << " element(s) outside the array were written, from index " << damage.first_index
            << " to " << damage.last_index << ". Check how the index is computed, and the bounds check.";
  }
  return failure;
}

std::string describe_unwritten(std::span<const float> original, std::span<const float> expected,
                               std::span<const float> got, std::string_view array) {
  if (original.size() != got.size() || expected.size() != got.size()) return "";
  std::size_t unwritten = 0;
  std::size_t first_unwritten = got.size();
  std::size_t last_changed = 0;
  bool any_changed = false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&expected[i], &original[i], sizeof(float)) == 0) continue;  // cannot tell
    const bool same_as_before = std::memcmp(&got[i], &original[i], sizeof(float)) == 0;
    if (same_as_before) {
      ++unwritten;
      if (first_unwritten == got.size()) first_unwritten = i;
    } else {
      any_changed = true;
      last_changed = i;
    }
  }
  if (unwritten == 0) return "";
  std::ostringstream out;
  const bool suffix = !any_changed || last_changed < first_unwritten;
  if (suffix) {
    out << array << "[" << first_unwritten << "] to " << array << "[" << got.size() - 1
        << "] were never written: the threads covered only the first " << first_unwritten << " of "
        << got.size() << " elements, so the grid is too small for n.";
  } else {
    out << unwritten << " element(s) of " << array << " were never written (the first is " << array << "["
        << first_unwritten << "]): some indices get no thread.";
  }
  return out.str();
}

void fail_on_wrong_result(const char* what, const testing::AssertionResult& results, bool tools_ran) {
  record_measured("a wrong result");
  record_no_hint();
  FAIL() << "A result was wrong, so this check (" << what << ") gives no verdict on this code"
         << (tools_ran ? std::string("; ") + what + " reported nothing" : std::string()) << ". Fix the failing "
         << "Correctness check of that function first, following its message and hint. The first wrong result of "
         << "this check's run:\n"
         << results.message();
}

void expect_no_analysis_reports(const std::vector<std::string>& tools, const char* what,
                                const testing::AssertionResult& results) {
#if WB_HAVE_CUSIM_ANALYSIS
  if (!cusim::analysis::available()) {
    if (!results) return fail_on_wrong_result(what, results);
    WB_NOT_MEASURED("this build's kernels are not instrumented for cusim analysis (WB_SIM_ANALYSIS=OFF)");
  }
  std::vector<cusim::analysis::Report> found;
  for (const auto& r : cusim::analysis::reports()) {
    if (std::find(tools.begin(), tools.end(), r.tool) != tools.end()) found.push_back(r);
  }
  if (!found.empty()) {
    record_measured(std::to_string(found.size()) + " reports");
    std::ostringstream out;
    out << found.size() << " " << what << " report(s) for the kernels of " << lab_sources() << ":";
    std::size_t shown = 0;
    for (const auto& r : found) {
      if (shown++ == 3) break;
      out << "\n" << (r.message.empty() ? r.tool + ": " + r.kind + " at " + r.file + ":" + std::to_string(r.line)
                                         : r.message);
      if (r.count > 1) out << "\n  (" << r.count << " occurrences)";
    }
    if (!results) out << "\nThe results were wrong as well:\n" << results.message();
    FAIL() << out.str();
  }
  if (!results) return fail_on_wrong_result(what, results, true);
  record_measured("0 reports");
#else
  (void)tools;
  if (!results) return fail_on_wrong_result(what, results);
  WB_NOT_MEASURED("this cusim build has no analysis API (cusim/analysis.h)");
#endif
}

void expect_no_analysis_reports(
    const std::vector<std::string>& tools, const char* what,
    const std::function<void(const std::function<void(testing::AssertionResult)>& keep)>& cases) {
#if WB_HAVE_CUSIM_ANALYSIS
  cusim::analysis::reset();
#endif
  testing::AssertionResult first = testing::AssertionSuccess();
  cases([&](testing::AssertionResult r) {
    if (!r && first) first = std::move(r);
  });
  expect_no_analysis_reports(tools, what, first);
}

std::string as_written(double v) {
  char buffer[48];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return ec == std::errc() ? std::string(buffer, end) : fixed(v, 6);
}

std::string fixed(double v, int digits) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
  return buffer;
}

testing::AssertionResult guarded(std::string_view call, const std::function<testing::AssertionResult()>& check) {
  try {
    return check();
  } catch (const wb::CudaError& e) {
    return testing::AssertionFailure() << "a CUDA call of the checker failed around " << call << ": " << e.what();
  }
}

void append_measured(std::string& text, std::string_view part) {
  if (!text.empty()) text += "; ";
  text += part;
  record_measured(text);
}

std::string versus(double rate, double baseline_rate, std::string_view baseline, std::string_view unit) {
  std::string text = fixed(rate / baseline_rate) + " x ";
  text.append(baseline).append(" (").append(fixed(rate)).append(" ");
  text.append(unit).append(" vs ").append(fixed(baseline_rate)).append(" ").append(unit).append(")");
  return text;
}

std::string significant(double v, int digits) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, v);
  return buffer;
}

testing::AssertionResult timed_and_verified(std::string_view call, double bytes_moved,
                                            const std::function<cudaError_t()>& run_call,
                                            const std::function<void()>& change_inputs,
                                            const std::function<std::string()>& verify, wb::Bandwidth& result,
                                            wb::TimingOptions options) {
  // Once, untimed: a wrong result's speed means nothing.
  const cudaError_t status = run_call();
  const cudaError_t sync = status == cudaSuccess ? cudaDeviceSynchronize() : status;
  if (sync != cudaSuccess) {
    (void)cudaGetLastError();
    return testing::AssertionFailure() << call << " failed on the timing data: " << wb::error_text(sync);
  }
  if (const std::string why = verify(); !why.empty()) {
    return testing::AssertionFailure() << call << " on the timing data: " << why;
  }
  // Besides the last run's, the outputs of kRandomlyVerifiedRuns timed runs drawn here, where no
  // code of the lab can see the draw, are verified before the next run's inputs change: a function
  // that skips the work of some calls (so that the median times an empty run) is caught at any run.
  std::vector<bool> verify_after(static_cast<std::size_t>(options.warmup + options.repetitions), false);
  if (change_inputs) {
    std::vector<int> candidates;  // the timed runs but the last, which is verified anyway
    for (int i = options.warmup; i + 1 < options.warmup + options.repetitions; ++i) candidates.push_back(i);
    std::mt19937_64 rng(std::random_device{}());
    std::shuffle(candidates.begin(), candidates.end(), rng);
    for (std::size_t k = 0; k < candidates.size() && k < kRandomlyVerifiedRuns; ++k) verify_after[candidates[k]] = true;
  }
  int run = -1;  // the run that just finished (-1: none yet)
  int failed_run = -1;
  std::string failed_why;
  if (change_inputs) {
    options.before_each = [earlier = options.before_each, &change_inputs, &verify, &verify_after, &run, &failed_run,
                           &failed_why, warmup = options.warmup] {
      if (run >= 0 && verify_after[static_cast<std::size_t>(run)] && failed_run < 0) {
        if (std::string why = verify(); !why.empty()) {
          failed_run = run - warmup + 1;
          failed_why = std::move(why);
        }
      }
      ++run;
      if (earlier) earlier();
      change_inputs();
    };
  }
  result = wb::measure_bandwidth(bytes_moved, [&] { WB_CUDA_CHECK(run_call()); }, options);
  const char* contract =
      " Every call must compute its result from the inputs it is given and finish its work before it returns: a "
      "result cached from an earlier call, skipped, or written after the call returned, is timed for nothing.";
  if (failed_run >= 0) {
    return testing::AssertionFailure()
           << call << ": timed run " << failed_run << " of " << options.repetitions
           << ", given changed inputs, left outputs that do not hold the result of its inputs (" << failed_why
           << "; that run's outputs were verified after it, a run drawn at random)." << contract;
  }
  if (const std::string why = verify(); !why.empty()) {
    return testing::AssertionFailure()
           << call << ": after " << options.repetitions << " timed runs"
           << (change_inputs ? ", each given changed inputs," : "")
           << " the outputs do not hold the result of the last run's inputs (" << why << ")." << contract;
  }
  return testing::AssertionSuccess();
}

testing::AssertionResult verified_bandwidth_ratio(const std::string& name, double bytes_moved,
                                                  const std::function<cudaError_t()>& run,
                                                  const std::function<void()>& change_inputs,
                                                  const std::function<std::string()>& verify, std::string& text,
                                                  double& ratio) {
  const wb::Bandwidth copy = wb::device_copy_bandwidth(static_cast<std::size_t>(bytes_moved / 2));
  wb::Bandwidth b;
  if (auto r = timed_and_verified(name, bytes_moved, run, change_inputs, verify, b); !r) return r;
  ratio = b.gb_per_s / copy.gb_per_s;
  append_measured(text, name + " " + versus(b.gb_per_s, copy.gb_per_s, "copy"));
  return testing::AssertionSuccess();
}

}  // namespace wb::check
