/// @file
/// @brief cusim's fault injection as a check (sim backend): each CUDA runtime call and kernel
/// launch that a lab's host function makes is failed in turn (cusim::checker::inject_failure),
/// and the function must return that exact error at once, with no copy, memset, allocation or
/// launch after it and no device memory left behind (returns_injected_errors).
///
/// Needs only GoogleTest and the CUDA runtime (cusim's, or a judge's forwarding of it): the
/// single-process labs use it through wb_host_checks.h, lab 12 (a collective lab, which links
/// neither common/wb nor wb_check) directly. In a check binary split into judge and worker, the
/// judge forwards the cusim::checker calls to the worker that runs the lab's code
/// (checker/support/remote: judge_cuda.cpp, worker_cuda.cpp), which is where the calls count.
/// Empty on other backends: the checks that use it are listed with "backends": ["sim"].
#pragma once

#if defined(CUSIM)
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <cusim/checker.h>

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace wb::check::host {

/// "cudaErrorLaunchFailure (unspecified launch failure)", as wb::error_text writes it.
inline std::string cuda_error_text(cudaError_t code) {
  const char* name = cudaGetErrorName(code);
  const char* text = cudaGetErrorString(code);
  return std::string(name ? name : "cudaError") + " (" + (text ? text : "unknown error") + ")";
}

inline std::string describe_memory(const cusim::checker::DeviceMemory& m) {
  return std::to_string(m.allocations) + " allocation(s), " + std::to_string(m.bytes) + " bytes";
}

/// "left 2 device allocation(s) (264 bytes) behind" when @p after holds more than @p before.
inline std::string describe_leak(const cusim::checker::DeviceMemory& before,
                                 const cusim::checker::DeviceMemory& after) {
  std::ostringstream out;
  if (after.allocations >= before.allocations && after.bytes >= before.bytes) {
    out << "left " << (after.allocations - before.allocations) << " device allocation(s) ("
        << (after.bytes - before.bytes) << " bytes) behind";
  } else {
    out << "changed the device memory held from " << describe_memory(before) << " to " << describe_memory(after)
        << " (it freed memory it had not allocated)";
  }
  return out.str();
}

/// "1st", "2nd", "3rd", "4th", ... "11th", "12th", "13th", ... "21st".
inline std::string ordinal(unsigned n) {
  const unsigned tens = n % 100, ones = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th" : ones == 1 ? "st" : ones == 2 ? "nd" : ones == 3 ? "rd" : "th";
  return std::to_string(n) + suffix;
}

/// A failure injected into one runtime function: an allocation runs out of memory; a copy or a
/// memset fails as it does after an earlier kernel failed (cudaErrorLaunchFailure); raising a
/// kernel's shared-memory limit is refused (cudaErrorInvalidValue, as for a size past the
/// device's); a kernel launch asks for more registers or shared memory than an SM has
/// (cudaErrorLaunchOutOfResources: the kernel does not run, and only cudaGetLastError() says so).
struct Fault {
  const char* api;
  cudaError_t error;
};
inline constexpr Fault kFaults[] = {{"cudaMalloc", cudaErrorMemoryAllocation},
                                    {"cudaMemcpy", cudaErrorLaunchFailure},
                                    {"cudaMemcpyAsync", cudaErrorLaunchFailure},
                                    {"cudaMemset", cudaErrorLaunchFailure},
                                    {"cudaMemsetAsync", cudaErrorLaunchFailure},
                                    {"cudaFuncSetAttribute", cudaErrorInvalidValue},
                                    {cusim::checker::kKernelLaunch, cudaErrorLaunchOutOfResources}};

/// How code sees that a call of @p api failed.
inline std::string how_to_test(const char* api) {
  if (std::string(api) == cusim::checker::kKernelLaunch) {
    return "A launch returns nothing: call cudaGetLastError() right after each launch and return its error when "
           "it is not cudaSuccess, before the next launch or copy.";
  }
  return "Test the cudaError_t of every CUDA call and return it at once when it is not cudaSuccess.";
}
/// At most this many calls of one function are made to fail in turn, per call of the code
/// (returns_injected_errors' default).
inline constexpr unsigned kMaxFailedCallsPerApi = 8;

/// What returns_injected_errors tested: the failed calls whose error came back as it should.
struct InjectionTally {
  unsigned tested = 0;
  std::vector<std::pair<std::string, unsigned>> per_api;  ///< in the order of kFaults
  void add(const char* api) {
    ++tested;
    for (auto& [name, count] : per_api) {
      if (name == api) {
        ++count;
        return;
      }
    }
    per_api.emplace_back(api, 1);
  }
  /// "3 failed calls returned their error (cudaMemsetAsync x2, cudaMalloc x1)"
  std::string measured() const {
    std::string text = std::to_string(tested) + " failed calls returned their error";
    for (std::size_t i = 0; i < per_api.size(); ++i) {
      text += (i == 0 ? " (" : ", ") + per_api[i].first + " x" + std::to_string(per_api[i].second);
    }
    return per_api.empty() ? text : text + ")";
  }
};

/// (b) Each call of each function of kFaults (kernel launches included) that @p run makes is made
/// to fail in turn (1st, 2nd, ... until @p run makes fewer, at most @p max_calls_per_api of each). @p run calls the lab's @p function on buffers made beforehand:
/// every CUDA call counts while a failure is injected, the check's own too. @p prepare (may be
/// empty) runs before each call, outside the injection (e.g. to reset a workspace, so that code
/// which goes on after a failure still runs on defined data). The function must return exactly
/// the injected error, make no CUDA call or launch after the failure (but cudaDeviceSynchronize),
/// and hold as much device memory afterwards as before. @p call describes the call
/// ("histogram(n=1000, num_bins=256)"). A function that makes no such call has nothing to test.
inline testing::AssertionResult returns_injected_errors(const std::string& call, const std::string& function,
                                                        const std::function<void()>& prepare,
                                                        const std::function<cudaError_t()>& run,
                                                        InjectionTally& tally,
                                                        unsigned max_calls_per_api = kMaxFailedCallsPerApi) {
  for (const Fault& f : kFaults) {
    for (unsigned nth = 1; nth <= max_calls_per_api; ++nth) {
      if (prepare) prepare();
      std::ostringstream failing;
      failing << call << " with its " << ordinal(nth) << " " << f.api << " failing with " << cudaGetErrorName(f.error);
      const cusim::checker::DeviceMemory before = cusim::checker::device_memory();
      if (!cusim::checker::inject_failure(f.api, nth, f.error)) {
        return testing::AssertionFailure() << "cusim refused to inject a failure into " << f.api;
      }
      const cudaError_t returned = run();
      const cusim::checker::InjectionOutcome outcome = cusim::checker::end_injected_failures();
      // Wait for what was launched anyway, then clear the injected error, also the last error.
      cudaDeviceSynchronize();
      cudaGetLastError();
      const cusim::checker::DeviceMemory after = cusim::checker::device_memory();
      if (outcome.not_fired) break;  // the code makes fewer than nth calls of f.api
      if (returned == cudaSuccess) {
        return testing::AssertionFailure()
               << failing.str() << " returned cudaSuccess: " << function << " ignored the error of that " << f.api
               << ". " << how_to_test(f.api);
      }
      if (returned != f.error) {
        return testing::AssertionFailure()
               << failing.str() << " returned " << cuda_error_text(returned) << " instead of "
               << cuda_error_text(f.error) << ", the error of the failed " << f.api
               << ". Return a call's error as soon as it fails: code that goes on after a failure makes later calls "
                  "fail in turn, with errors that hide the first.";
      }
      // The error may come back after the code went on: the cudaGetLastError() after a launch
      // returns the failed call's error too. Going on is the mistake (a kernel on data never set).
      if (outcome.work_after_failure > 0) {
        return testing::AssertionFailure()
               << failing.str() << " returned the error, but only after going on: " << outcome.first_work_after_failure
               << " came after the failed " << f.api
               << (outcome.work_after_failure > 1
                       ? " (and " + std::to_string(outcome.work_after_failure - 1) + " more call(s) or launch(es))"
                       : std::string())
               << ". " << function << " must return a call's error as soon as it fails (if (err != cudaSuccess) "
               << "return err;); here it came back only because a later call reported it again. " << how_to_test(f.api);
      }
      if (after != before) {
        return testing::AssertionFailure()
               << failing.str() << " returned the error but " << describe_leak(before, after)
               << ": free what " << function << " had already allocated on its error paths as well (an RAII guard "
               << "whose destructor calls cudaFree covers every return).";
      }
      tally.add(f.api);
    }
  }
  return testing::AssertionSuccess();
}

}  // namespace wb::check::host
#endif  // CUSIM
