/// @file
/// @brief Where wb's timings run, for a program whose GPU work runs in another process.
///
/// A split check binary (checker/support/remote) holds no lab code and runs no kernel: its CUDA
/// runtime calls are requests to the process that holds the lab's code. Timing that process's
/// work from here with events recorded by separate requests would time the gaps between the
/// requests too, so the checker installs these hooks at start-up: time_median() then runs each
/// repetition's timed region beside the work, and device_copy_bandwidth() runs in a process of
/// the checker's own. Programs that run their GPU work themselves (labs, benchmarks, checks in
/// the lab's process) never set them.
#pragma once

#include <cstddef>
#include <functional>

#include "wb/bandwidth.h"
#include "wb/timer.h"

namespace wb::detail {

struct TimingHooks {
  /// Replaces time_median() when set.
  Timing (*time_median)(const std::function<void()>& work, const TimingOptions& options) = nullptr;
  /// Replaces device_copy_bandwidth() when set.
  Bandwidth (*device_copy_bandwidth)(std::size_t bytes, const TimingOptions& options) = nullptr;
  /// Send this thread's GPU work (CUDA runtime calls, timings, the calls of functions) to the
  /// checker's own CUDA process until the matching leave (a split check binary's vendor-library
  /// baselines: wb::check::InCheckersProcess, checker/support/wb_baseline.h). Null: nothing to do,
  /// the work already runs in this process.
  void (*enter_checkers_process)() = nullptr;
  void (*leave_checkers_process)() = nullptr;
};

/// The hooks in force (both null unless a program installed them).
const TimingHooks& timing_hooks();
/// Installs @p hooks (at start-up, before any timing).
void set_timing_hooks(const TimingHooks& hooks);

}  // namespace wb::detail
