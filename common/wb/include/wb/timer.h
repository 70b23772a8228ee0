/// @file
/// @brief Timing GPU work with CUDA events: warm-up, then the median of repetitions.
///
/// The median is robust to the odd slow repetition (a clock change, another process);
/// the minimum and maximum are kept for reports. For bandwidth-bound kernels, flush the
/// L2 cache before each repetition, otherwise a working set that fits in L2 is measured
/// at cache speed rather than memory speed.
/// @code
///   wb::Timing t = wb::time_median([&] { WB_CUDA_CHECK(my_launcher(...)); },
///                                  {.warmup = 3, .repetitions = 21, .flush_l2 = true});
///   double gbps = wb::gb_per_s(bytes_moved, t.median_ms);
/// @endcode
/// On the sim backend events carry host timestamps, so timings measure the simulator and
/// say nothing about a GPU: use cusim analysis metrics there instead.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <vector>

#include "wb/device_buffer.h"

namespace wb {

/// How to time a piece of GPU work.
struct TimingOptions {
  int warmup = 3;             ///< untimed runs first (clocks ramp up, caches and TLBs warm)
  int repetitions = 21;       ///< timed runs; the median is reported
  bool flush_l2 = false;      ///< overwrite the L2 cache before every run (untimed)
  cudaStream_t stream = 0;    ///< stream the events are recorded on
  /// Untimed work before every run (warm-ups included), before the L2 flush: for example new
  /// inputs, so that a run cannot replay a result computed for an earlier one.
  std::function<void()> before_each;
};

/// Result of time_median(), in milliseconds.
struct Timing {
  double median_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;
  int repetitions = 0;
  /// Median time the device still had work after a repetition's stop event had completed: about
  /// the cost of one cudaDeviceSynchronize when the work ran on options.stream (or streams it
  /// waits for) only.
  double after_stop_ms = 0.0;
};

/// Thrown by time_median() when the work kept the device busy after its stop event: work on a
/// stream the timing does not wait for (created with cudaStreamNonBlocking) or launched from
/// another thread, which the events did not time.
class TimingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Evicts the L2 cache by writing a device buffer twice the L2 size, after resetting lines marked
/// persisting (cudaCtxResetPersistingL2Cache) so that none survives it (on a GPU).
class L2Flusher {
 public:
  L2Flusher();
  /// Overwrites the scratch buffer on @p stream.
  void flush(cudaStream_t stream = 0);
  std::size_t bytes() const noexcept { return scratch_.size(); }

 private:
  DeviceBuffer<unsigned char> scratch_;
};

/// Runs @p work options.warmup times, then options.repetitions times between two events,
/// and returns the median. @p work must enqueue its GPU work on options.stream and throw
/// on error (WB_CUDA_CHECK). After each repetition the whole device is synchronized: when the
/// median time it was still busy after the stop event exceeds 0.03 ms + 0.25 x the median
/// (work the events did not time: another stream that does not wait for options.stream's work,
/// another thread), throws TimingError saying so.
Timing time_median(const std::function<void()>& work, const TimingOptions& options = {});

namespace detail {
/// The statistics of time_median() from the event times of its repetitions (@p samples) and how
/// long the device stayed busy after each stop event (@p after_stop); throws TimingError as
/// time_median() does. Shared with timings that run their repetitions elsewhere.
Timing summarize(std::vector<double> samples, std::vector<double> after_stop);
}  // namespace detail

/// Median of @p values (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> values);

/// Bandwidth in GB/s (10^9 bytes per second) of @p bytes_moved in @p milliseconds.
double gb_per_s(double bytes_moved, double milliseconds);

}  // namespace wb
