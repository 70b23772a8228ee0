/// @file
/// @brief Timing a lab's function so that every timed run must do its work (the Performance
/// checks on a GPU).
///
/// GPU leaderboards have met submissions that time well without doing the work of each run: a
/// result cached from an earlier call with the same arguments and replayed, or outputs written
/// after the call returned (docs/concepts/checking.md, "Work left running at return"). A check
/// that times through timed_and_verified() validates the function once, gives it changed inputs
/// before every timed run (untimed: ChangingInput), and after the last run compares the outputs
/// with its reference for the inputs that run was given.
/// @code
///   std::vector<float> x_host = ...;            // data whose results the check can verify
///   wb::DeviceBuffer<float> x{std::span<const float>(x_host)}, y(n);
///   wb::check::ChangingInput<float> changing(x_host, x.data());
///   wb::Bandwidth b;
///   WB_ASSERT(wb::check::timed_and_verified(
///       "scale(n=2^26)", 8.0 * n, [&] { return scale(x.data(), y.data(), n); }, [&] { changing.change(); },
///       [&] { return matches(x_host, y.download()); }, b));
/// @endcode
#pragma once

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "wb/bandwidth.h"
#include "wb/error.h"
#include "wb_baseline.h"

namespace wb::check {

/// The input of a timed function, changed before every run: each change copies a few of the
/// input's own elements over others (values stay in the input's range, and data chosen so that
/// the arithmetic is exact stay so), at positions drawn from a seed that no code of the lab can
/// know in advance (std::random_device). The host copy follows the device buffer, so the check
/// computes its reference for the last inputs from it.
template <class T>
class ChangingInput {
 public:
  /// @p host: the input's values, which @p device (host.size() elements) holds.
  ChangingInput(std::vector<T>& host, T* device, std::size_t moves_per_change = 16)
      : host_(host), device_(device), moves_(moves_per_change), rng_(std::random_device{}()) {}

  /// Makes every change in @p device_in_checkers too, a copy of the input made in a scope of
  /// InCheckersProcess (wb_baseline.h): the data a vendor-library reference computes from there.
  void mirror_in_checkers_process(T* device_in_checkers) { mirror_ = device_in_checkers; }

  /// One run's changes, on the device and in the host copy (synchronous copies).
  void change() {
    if (host_.size() < 2) return;
    std::uniform_int_distribution<std::size_t> position(0, host_.size() - 1);
    const std::size_t first = changed_.size();
    for (std::size_t m = 0; m < moves_; ++m) {
      const std::size_t from = position(rng_), to = position(rng_);
      host_[to] = host_[from];
      WB_CUDA_CHECK(cudaMemcpy(device_ + to, &host_[to], sizeof(T), cudaMemcpyHostToDevice));
      changed_.push_back(to);
    }
    if (mirror_ != nullptr) {
      InCheckersProcess checkers;
      for (std::size_t k = first; k < changed_.size(); ++k) {
        const std::size_t to = changed_[k];
        WB_CUDA_CHECK(cudaMemcpy(mirror_ + to, &host_[to], sizeof(T), cudaMemcpyHostToDevice));
      }
    }
    ++changes_;
  }

  /// How many changes were made.
  std::size_t changes() const { return changes_; }
  /// Every position a change wrote, in order (repeats included): where a check that verifies only
  /// part of a large output must look, since a replayed result differs there.
  const std::vector<std::size_t>& changed() const { return changed_; }

 private:
  std::vector<T>& host_;
  T* device_;
  std::size_t moves_;
  std::mt19937_64 rng_;
  std::size_t changes_ = 0;
  std::vector<std::size_t> changed_;
  T* mirror_ = nullptr;
};

/// "" for a success, else its message: a verify function of timed_and_verified() made from a
/// comparison that returns a testing::AssertionResult.
inline std::string failure_text(const testing::AssertionResult& result) {
  return result ? std::string() : std::string(result.message());
}

/// Timed runs whose outputs timed_and_verified() verifies besides the last run's, drawn at random.
constexpr std::size_t kRandomlyVerifiedRuns = 4;

/// Runs @p run once and checks its outputs with @p verify ("" when they hold the right result for
/// the current inputs, else what is wrong); then times it as wb::measure_bandwidth() does (into
/// @p result), with @p change_inputs called before every run (untimed), and checks the outputs the
/// last run left with @p verify again. With @p change_inputs, the outputs of kRandomlyVerifiedRuns
/// more timed runs, drawn with std::random_device, are verified too (after the run, before the next
/// run's changes, untimed), so that a function that skips some calls' work is caught whichever it
/// skips: one that skips half of them passes with probability 1/32. A failure names @p call: a launch or runtime error, a wrong
/// result before timing, or a wrong result after it, which says what every run must do.
/// wb::CudaError and wb::TimingError thrown by the timing pass through.
testing::AssertionResult timed_and_verified(std::string_view call, double bytes_moved,
                                            const std::function<cudaError_t()>& run,
                                            const std::function<void()>& change_inputs,
                                            const std::function<std::string()>& verify, wb::Bandwidth& result,
                                            wb::TimingOptions options = {.flush_l2 = true});

/// timed_and_verified() of @p run (@p bytes_moved read plus written per call) as a ratio to a
/// device-to-device copy of the same traffic, timed in the same run: on success @p ratio is set and
/// "name R x copy (B GB/s vs C GB/s)" appended to @p text (append_measured); the failure names
/// @p name.
testing::AssertionResult verified_bandwidth_ratio(const std::string& name, double bytes_moved,
                                                  const std::function<cudaError_t()>& run,
                                                  const std::function<void()>& change_inputs,
                                                  const std::function<std::string()>& verify, std::string& text,
                                                  double& ratio);

}  // namespace wb::check
