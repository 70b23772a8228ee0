/// @file
/// @brief DeviceBuffer<T>: an owning, move-only device allocation with optional guard zones.
///
/// Guard zones ("canaries") are extra elements before and after the usable range, filled
/// with a known byte pattern. A kernel that writes out of bounds changes them, which
/// check_guards() detects on any backend, without a sanitizer.
/// @code
///   wb::DeviceBuffer<float> y(n, wb::DeviceBuffer<float>::kDefaultGuard);
///   y.upload(host_y);
///   my_kernel_launcher(n, y.data());
///   if (auto damage = y.check_guards(); !damage.intact()) { ... damage.first_index ... }
/// @endcode
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "wb/error.h"

namespace wb {

/// Where an out-of-bounds write landed in a guarded buffer. Indices are relative to the
/// first usable element: -1 is just before it, size() is just past the end.
struct GuardDamage {
  std::size_t modified = 0;         ///< number of guard elements whose bytes changed
  std::int64_t first_index = 0;     ///< lowest modified index (valid when modified > 0)
  std::int64_t last_index = 0;      ///< highest modified index (valid when modified > 0)
  std::size_t before_start = 0;     ///< modified elements below index 0
  std::size_t past_end = 0;         ///< modified elements at or above size()
  bool intact() const noexcept { return modified == 0; }
};

/// Owning device memory for @p count elements of T, plus optional guard elements on both
/// sides. data() points at the first usable element. Errors throw wb::CudaError.
template <class T>
class DeviceBuffer {
 public:
  /// Guard elements per side: 64 KiB, more than the overrun of a missing bounds check in
  /// any launch (at most one block, 1024 threads, past the end).
  static constexpr std::size_t kDefaultGuard = (64 * 1024) / sizeof(T) > 0 ? (64 * 1024) / sizeof(T) : 1;
  /// The byte every guard element is filled with.
  static constexpr unsigned char kGuardByte = 0xA5;

  DeviceBuffer() = default;

  /// Allocates @p count elements (uninitialised) and @p guard elements on each side.
  explicit DeviceBuffer(std::size_t count, std::size_t guard = 0) : count_(count), guard_(guard) {
    const std::size_t total = count + 2 * guard;
    if (total > 0) {
      WB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&base_), total * sizeof(T)));
    }
    if (guard > 0) fill_guards();
  }

  /// Allocates and uploads @p host.
  explicit DeviceBuffer(std::span<const T> host, std::size_t guard = 0)
      : DeviceBuffer(host.size(), guard) {
    upload(host);
  }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      DeviceBuffer(std::move(other)).swap(*this);
    }
    return *this;
  }
  /// Frees the memory. A failing cudaFree (for example after a sticky launch error) is
  /// ignored: destructors must not throw, and the process is about to report that error.
  ~DeviceBuffer() {
    if (base_ != nullptr) (void)cudaFree(base_);
  }

  void swap(DeviceBuffer& other) noexcept {
    std::swap(base_, other.base_);
    std::swap(count_, other.count_);
    std::swap(guard_, other.guard_);
  }

  /// First usable element (nullptr when the buffer is empty and unguarded).
  T* data() noexcept { return base_ == nullptr ? nullptr : base_ + guard_; }
  const T* data() const noexcept { return base_ == nullptr ? nullptr : base_ + guard_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t size_bytes() const noexcept { return count_ * sizeof(T); }
  std::size_t guard() const noexcept { return guard_; }
  bool empty() const noexcept { return count_ == 0; }

  /// Copies host.size() elements (at most size()) to the start of the buffer.
  void upload(std::span<const T> host) {
    if (host.size() > count_) throw std::length_error("DeviceBuffer::upload: more elements than the buffer holds");
    if (!host.empty()) {
      WB_CUDA_CHECK(cudaMemcpy(data(), host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
    }
  }

  /// Copies the whole usable range back to the host.
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (count_ > 0) {
      WB_CUDA_CHECK(cudaMemcpy(host.data(), data(), size_bytes(), cudaMemcpyDeviceToHost));
    }
    return host;
  }

  /// Sets every byte of the usable range to @p byte.
  void fill_bytes(unsigned char byte) {
    if (count_ > 0) WB_CUDA_CHECK(cudaMemset(data(), byte, size_bytes()));
  }

  /// Refills both guard zones with kGuardByte.
  void fill_guards() {
    if (guard_ == 0) return;
    WB_CUDA_CHECK(cudaMemset(base_, kGuardByte, guard_ * sizeof(T)));
    WB_CUDA_CHECK(cudaMemset(base_ + guard_ + count_, kGuardByte, guard_ * sizeof(T)));
  }

  /// Reads both guard zones back and reports which elements changed.
  GuardDamage check_guards() const {
    GuardDamage damage;
    if (guard_ == 0) return damage;
    std::vector<unsigned char> bytes(guard_ * sizeof(T));
    auto scan = [&](const T* zone, std::int64_t first_index) {
      WB_CUDA_CHECK(cudaMemcpy(bytes.data(), zone, bytes.size(), cudaMemcpyDeviceToHost));
      for (std::size_t e = 0; e < guard_; ++e) {
        bool changed = false;
        for (std::size_t b = 0; b < sizeof(T); ++b) changed |= bytes[e * sizeof(T) + b] != kGuardByte;
        if (!changed) continue;
        const std::int64_t index = first_index + static_cast<std::int64_t>(e);
        if (damage.modified == 0 || index < damage.first_index) damage.first_index = index;
        if (damage.modified == 0 || index > damage.last_index) damage.last_index = index;
        ++damage.modified;
        if (index < 0) ++damage.before_start; else ++damage.past_end;
      }
    };
    scan(base_, -static_cast<std::int64_t>(guard_));
    scan(base_ + guard_ + count_, static_cast<std::int64_t>(count_));
    return damage;
  }

 private:
  T* base_ = nullptr;
  std::size_t count_ = 0;
  std::size_t guard_ = 0;
};

}  // namespace wb
