// bench_saxpy: bandwidth of the lab 01 reference SAXPY, one thread per element and
// grid-stride with block sizes 32..1024, beside a device-to-device copy that moves the same
// bytes, in the same run (median of 21 runs after 3 warm-ups, L2 flushed before each).
// On the sim backend the times measure the simulator, not a GPU; the sim lines report
// simulated elements per second instead of a ratio to the copy.
#include <cstdio>
#include <exception>
#include <vector>

#include "saxpy.h"
#include "wb/wb.h"

int main() {
  try {
#if defined(CUSIM)
    const int n = 1 << 22;
    const wb::TimingOptions options{.warmup = 1, .repetitions = 5, .flush_l2 = false};
#else
    const int n = 1 << 26;
    const wb::TimingOptions options{};
#endif
    const std::vector<float> x_host = wb::random_floats(n, 1), y_host = wb::random_floats(n, 2);
    wb::DeviceBuffer<float> x{std::span<const float>(x_host)}, y{std::span<const float>(y_host)};
    const double bytes = 12.0 * n;
    int device = 0, sms = 1;
    WB_CUDA_CHECK(cudaGetDevice(&device));
    WB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));

#if defined(CUSIM)
    std::printf("# sim backend: simulator throughput, not GPU performance; n = %d\n", n);
    std::printf("%-28s %12s %16s\n", "variant", "time (ms)", "M elements/s");
    auto report = [&](const char* name, const wb::Bandwidth& b) {
      std::printf("%-28s %12.2f %16.1f\n", name, b.timing.median_ms, n / (b.timing.median_ms * 1e3));
    };
#else
    const wb::Bandwidth copy = wb::device_copy_bandwidth(static_cast<std::size_t>(6.0 * n), options);
    std::printf("# n = %d floats (%.0f MiB per array), %d SMs; copy moves the same %.0f MiB\n", n,
                n * 4.0 / (1 << 20), sms, bytes / (1 << 20));
    std::printf("%-28s %12s %10s %10s\n", "variant", "time (ms)", "GB/s", "x copy");
    std::printf("%-28s %12.3f %10.1f %10.2f\n", "cudaMemcpy D2D", copy.timing.median_ms, copy.gb_per_s, 1.0);
    auto report = [&](const char* name, const wb::Bandwidth& b) {
      std::printf("%-28s %12.3f %10.1f %10.2f\n", name, b.timing.median_ms, b.gb_per_s, b.gb_per_s / copy.gb_per_s);
    };
#endif
    report("saxpy (1 thread/element)",
           wb::measure_bandwidth(bytes, [&] { WB_CUDA_CHECK(saxpy(n, 0.5f, x.data(), y.data())); }, options));
    for (int block : {32, 64, 128, 256, 512, 1024}) {
      const int blocks = 8 * sms * (1024 / block);  // the same number of threads for each block size
      char name[64];
      std::snprintf(name, sizeof name, "grid-stride %4d x %-6d", blocks, block);
      report(name, wb::measure_bandwidth(bytes, [&] {
               WB_CUDA_CHECK(saxpy_grid_stride(n, 0.5f, x.data(), y.data(), blocks, block));
             }, options));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_saxpy: %s\n", e.what());
    return 1;
  }
}
