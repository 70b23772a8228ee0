/// @file
/// @brief Host-code checks on sim (cusim/checker.h), shared by the labs whose functions make CUDA
/// calls that can fail (cudaMalloc, cudaMemcpy, cudaMemset...) before or between their launches:
/// - a call must leave the device memory held as it found it (no leak);
/// - when one of those calls fails (cusim's fault injection), the function must return that exact
///   error at once: no copy, memset, allocation or launch after it, and no leak.
///
/// The second is wb_fault_injection.h (returns_injected_errors), which this header includes; here
/// are the leak check and launch_errors_returned, the check of the labs whose calls that can fail
/// are their launches.
///
/// Only on the sim backend: the whole header is empty elsewhere, and the checks that use it are
/// declared with .backends = "sim" (WB_CHECK). In a check binary split into judge and
/// worker, the judge forwards the cusim::checker calls to the worker (checker/support/remote).
/// Lab 01 (saxpy_host, with its host arrays) writes its own fault-injection check with describe_leak
/// and ordinal.
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

#include "wb/wb.h"
#include "wb_check.h"
#include "wb_fault_injection.h"

namespace wb::check::host {

/// (a) @p checked_call runs the lab's @p function once on buffers it makes and frees itself, and
/// checks its status and results (so code that computes nothing does not pass for leaking
/// nothing); the device memory held before and after it must be equal.
inline testing::AssertionResult frees_device_memory(const std::string& call, const std::string& function,
                                                    const std::function<testing::AssertionResult()>& checked_call) {
  const cusim::checker::DeviceMemory before = cusim::checker::device_memory();
  if (testing::AssertionResult r = checked_call(); !r) return r;
  const cusim::checker::DeviceMemory after = cusim::checker::device_memory();
  if (after == before) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << call << " " << describe_leak(before, after) << ": every cudaMalloc in " << function
         << " needs its cudaFree before " << function
         << " returns (or use the device buffers the caller passes in). Device memory is not freed when a pointer goes "
            "out of scope; a program that calls "
         << function << " in a loop runs out of it.";
}

/// One call of a lab's function on buffers made beforehand, for launch_errors_returned().
struct ErrorPathCase {
  std::string call;      ///< "softmax_forward(rows=33, cols=1000)"
  std::string function;  ///< "softmax_forward"
  std::function<cudaError_t()> run;
};

/// The check of the labs whose functions allocate nothing and whose calls that can fail are
/// their launches (and cudaFuncSetAttribute): each case runs once healthy (it must succeed and
/// leave no error behind: a function that does not work yet has no error paths to test), then
/// returns_injected_errors() fails each of its calls in turn. Records the tally as it goes.
inline testing::AssertionResult launch_errors_returned(const std::vector<ErrorPathCase>& cases) {
  InjectionTally tally;
  for (const ErrorPathCase& c : cases) {
    wb::check::record_measured(tally.measured());
    if (auto r = wb::check::cuda_success(c.run(), c.call, c.function); !r) return r;
    if (auto r = wb::check::device_clean_after(c.call); !r) return r;
    if (auto r = returns_injected_errors(c.call, c.function, nullptr, c.run, tally); !r) return r;
  }
  wb::check::record_measured(tally.measured());
  if (tally.tested == 0) {
    return testing::AssertionFailure() << "no CUDA call or kernel launch of the functions checked could be made to fail: "
                                          "did they launch anything?";
  }
  return testing::AssertionSuccess();
}

}  // namespace wb::check::host
#endif  // CUSIM
