// Vendor baselines of lab 04's performance checks (cuda backend only): CUB's device-wide
// inclusive sum and even-binned histogram, behind plain functions that the checks (compiled
// by the host compiler) can call. Both follow CUB's two-call protocol: with d_temp == nullptr
// they only store the temporary storage size in *temp_bytes.
#include <cub/cub.cuh>

#include <cstddef>

cudaError_t wb_cub_inclusive_sum(const int* d_in, int* d_out, int n, void* d_temp, std::size_t* temp_bytes) {
  return cub::DeviceScan::InclusiveSum(d_temp, *temp_bytes, d_in, d_out, n);
}

// bins[b] counts values == b for b < num_bins; values >= num_bins are ignored, as in the lab.
cudaError_t wb_cub_histogram_even(const unsigned* d_values, int n, unsigned* d_bins, int num_bins, void* d_temp,
                                  std::size_t* temp_bytes) {
  return cub::DeviceHistogram::HistogramEven(d_temp, *temp_bytes, d_values, d_bins, num_bins + 1, 0u,
                                             static_cast<unsigned>(num_bins), n);
}
