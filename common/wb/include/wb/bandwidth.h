/// @file
/// @brief Memory bandwidth, and the same-run baseline it is judged against.
///
/// A kernel's bandwidth is only meaningful next to what the same GPU achieves in the same
/// run: cudaMemcpy device-to-device is the baseline (it reads and writes every byte, so
/// it moves 2 x size). A check then asks for a ratio (kernel GB/s / copy GB/s), which
/// holds across GPU models, clocks and drivers where an absolute GB/s number would not.
#pragma once

#include <cstddef>
#include <functional>

#include "wb/timer.h"

namespace wb {

/// A bandwidth measurement: GB/s from the median time.
struct Bandwidth {
  double gb_per_s = 0.0;
  double bytes_moved = 0.0;
  Timing timing;
};

/// Times @p work (which moves @p bytes_moved bytes of DRAM traffic per run).
/// L2 is flushed before each repetition unless @p options says otherwise.
Bandwidth measure_bandwidth(double bytes_moved, const std::function<void()>& work,
                            TimingOptions options = {.flush_l2 = true});

/// The baseline: cudaMemcpy device-to-device of @p bytes (2 x @p bytes moved), timed like
/// measure_bandwidth().
Bandwidth device_copy_bandwidth(std::size_t bytes, TimingOptions options = {.flush_l2 = true});

}  // namespace wb
