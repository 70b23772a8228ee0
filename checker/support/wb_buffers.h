/// @file
/// @brief Device buffers as the correctness checks use them: inputs surrounded by poison and
/// checked for modification, outputs pre-filled with a marker and guarded, and the verdict on a
/// call into the lab's code (its status, the device, then each buffer).
///
///     wb::check::Input<float> x(values, "x");          // NaN around it: a read outside shows
///     wb::check::Output<float> y(n, "y");               // 0xFF bytes in it, guard zones around
///     WB_ASSERT(wb::check::after_call(status, call, "softmax_forward", wb::check::verdicts(call, y, x)));
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "wb/device_buffer.h"
#include "wb/error.h"
#include "wb_check.h"

namespace wb::check {

/// Guard elements on each side of a checked buffer.
inline constexpr std::size_t kGuardElements = wb::DeviceBuffer<float>::kDefaultGuard;

/// The poison around an input: NaN for floating-point types (a read outside poisons the result),
/// -1 for integers.
template <class T>
T default_poison() {
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::quiet_NaN();
  } else {
    return static_cast<T>(-1);
  }
}

/// True when @p v still holds the 0xFF bytes an Output starts with (a value never written).
inline bool never_written(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits == 0xFFFFFFFFu;
}

/// Sets every guard element on both sides of @p buffer to @p value (a poison that shows in the
/// result when the lab's code reads outside the buffer).
template <class T>
void fill_guards(wb::DeviceBuffer<T>& buffer, T value) {
  if (buffer.guard() == 0) return;
  const std::vector<T> zone(buffer.guard(), value);
  for (T* start : {buffer.data() - buffer.guard(), buffer.data() + buffer.size()}) {
    WB_CUDA_CHECK(cudaMemcpy(start, zone.data(), zone.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
}

/// The index of the first guard element of @p buffer (negative before it, size() and up after it)
/// that no longer holds the bytes of @p value; none when all do.
template <class T>
std::optional<std::ptrdiff_t> first_damaged_guard(const wb::DeviceBuffer<T>& buffer, T value) {
  if (buffer.guard() == 0) return std::nullopt;
  const auto guard = static_cast<std::ptrdiff_t>(buffer.guard());
  std::vector<T> zone(buffer.guard());
  for (const bool after : {false, true}) {
    const T* start = after ? buffer.data() + buffer.size() : buffer.data() - guard;
    WB_CUDA_CHECK(cudaMemcpy(zone.data(), start, zone.size() * sizeof(T), cudaMemcpyDeviceToHost));
    for (std::ptrdiff_t i = 0; i < guard; ++i) {
      if (std::memcmp(&zone[i], &value, sizeof value) != 0) {
        return after ? static_cast<std::ptrdiff_t>(buffer.size()) + i : i - guard;
      }
    }
  }
  return std::nullopt;
}

/// An input on the device, surrounded by @p guard elements of @p poison on each side (0: an
/// allocation of its exact size, where memcheck sees a read past the end), checked for modification
/// afterwards: its elements and the poison around it (a write just outside an input, which memcheck
/// cannot see when it lands in the guard zone).
template <class T>
struct Input {
  std::vector<T> host;
  wb::DeviceBuffer<T> dev;
  const char* name;
  T poison;
  Input(std::vector<T> values, const char* array_name, T poison_value = default_poison<T>(),
        std::size_t guard = kGuardElements)
      : host(std::move(values)), name(array_name), poison(poison_value) {
    dev = wb::DeviceBuffer<T>(host.size(), guard);
    dev.upload(std::span<const T>(host));
    fill_guards(dev, poison);
  }
  /// Success when @p call left the input and its poison as they were. A modified input fails with
  /// "{call} modified {name}, which is an input." or, given @p advice, "..., which is an input: {advice}".
  testing::AssertionResult unchanged(const std::string& call, std::string_view advice = {}) const {
    if (const std::optional<std::ptrdiff_t> i = first_damaged_guard(dev, poison)) {
      return testing::AssertionFailure() << call << " wrote " << name << "[" << *i << "], outside the input " << name
                                         << " (" << host.size() << " elements), which it must only read: test "
                                         << "every index against the size of the array it writes.";
    }
    // Compared a chunk at a time: a large input is not downloaded whole beside its host copy.
    constexpr std::size_t kChunk = std::size_t(1) << 20;
    std::vector<T> after(std::min(host.size(), kChunk));
    for (std::size_t first = 0; first < host.size(); first += kChunk) {
      const std::size_t count = std::min(kChunk, host.size() - first);
      WB_CUDA_CHECK(cudaMemcpy(after.data(), dev.data() + first, count * sizeof(T), cudaMemcpyDeviceToHost));
      if (std::memcmp(after.data(), host.data() + first, count * sizeof(T)) != 0) {
        testing::AssertionResult failure = testing::AssertionFailure();
        failure << call << " modified " << name << ", which is an input";
        if (advice.empty()) return failure << ".";
        return failure << ": " << advice;
      }
    }
    return testing::AssertionSuccess();
  }
};

/// An output (or a workspace) on the device with guard zones, every byte set to @p fill first
/// (0xFF: a float never written reads as NaN and never_written() tells it); with @p write false
/// it is left as the allocator gives it, so that initcheck reports reads of what the call did not
/// write.
template <class T>
struct Output {
  wb::DeviceBuffer<T> dev;
  const char* name;
  Output(std::size_t n, const char* array_name, unsigned char fill = 0xFF, bool write = true)
      : dev(n, kGuardElements), name(array_name) {
    if (write) dev.fill_bytes(fill);
  }
  testing::AssertionResult in_bounds(const std::string& call) const {
    return no_out_of_bounds_writes(dev.check_guards(), name, dev.size(), call);
  }
};

using BufferChecks = std::vector<std::function<testing::AssertionResult()>>;

/// The verdict on a call into the lab's code: its returned @p status, then the device (a kernel
/// that failed while running, an error left pending), then each of @p checks in order.
inline testing::AssertionResult after_call(cudaError_t status, const std::string& call, const char* function,
                                           const BufferChecks& checks) {
  if (auto r = cuda_success(status, call, function); !r) return r;
  if (auto r = device_clean_after(call); !r) return r;
  for (const auto& check : checks) {
    if (auto r = check(); !r) return r;
  }
  return testing::AssertionSuccess();
}

/// The check of after_call() for one buffer of @p call: an Output must be written in bounds, an
/// Input unchanged. It refers to @p call and @p buffer, which must outlive it.
template <class T>
std::function<testing::AssertionResult()> verdict(const std::string& call, const Output<T>& buffer) {
  return [&call, &buffer] { return buffer.in_bounds(call); };
}
template <class T>
std::function<testing::AssertionResult()> verdict(const std::string& call, const Input<T>& buffer) {
  return [&call, &buffer] { return buffer.unchanged(call); };
}

/// The checks of after_call() for @p buffers (Inputs and Outputs), in their order: the first
/// buffer that fails is the one named. Use as
///     WB_ASSERT(after_call(status, call, "maxpool2d_forward", verdicts(call, y, argmax, x)));
template <class... Buffers>
BufferChecks verdicts(const std::string& call, const Buffers&... buffers) {
  return {verdict(call, buffers)...};
}

}  // namespace wb::check
