#include "wb/bandwidth.h"

#include "wb/device_buffer.h"
#include "wb/error.h"
#include "wb/timing_hooks.h"

namespace wb {

Bandwidth measure_bandwidth(double bytes_moved, const std::function<void()>& work, TimingOptions options) {
  Bandwidth result;
  result.bytes_moved = bytes_moved;
  result.timing = time_median(work, options);
  result.gb_per_s = gb_per_s(bytes_moved, result.timing.median_ms);
  return result;
}

Bandwidth device_copy_bandwidth(std::size_t bytes, TimingOptions options) {
  if (const detail::TimingHooks& hooks = detail::timing_hooks(); hooks.device_copy_bandwidth) {
    return hooks.device_copy_bandwidth(bytes, options);
  }
  DeviceBuffer<unsigned char> source(bytes);
  DeviceBuffer<unsigned char> destination(bytes);
  source.fill_bytes(0x3C);
  return measure_bandwidth(
      2.0 * static_cast<double>(bytes),
      [&] {
        WB_CUDA_CHECK(cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice,
                                      options.stream));
      },
      options);
}

}  // namespace wb
