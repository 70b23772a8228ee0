// Lab 04's vendor-library baselines (cub_baselines.cu) as remote calls: where the checks are split
// (cuda with WB_CUDA_SPLIT), the judge's proxies below send them to check_04_..._trusted, the
// checker's own CUDA process, which registers them and links CUB; the checks call them in a scope
// of wb::check::InCheckersProcess (wb_baseline.h), on buffers made there. temp_bytes is a host
// value in and out, so both functions are written out by hand.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "wb_remote_interface.h"

cudaError_t wb_cub_inclusive_sum(const int* d_in, int* d_out, int n, void* d_temp, std::size_t* temp_bytes);
cudaError_t wb_cub_histogram_even(const unsigned* d_values, int n, unsigned* d_bins, int num_bins, void* d_temp,
                                  std::size_t* temp_bytes);

using wb::remote::from_wire;
using wb::remote::Reader;
using wb::remote::to_wire;
using wb::remote::Writer;

#if defined(WB_REMOTE_JUDGE)
cudaError_t wb_cub_inclusive_sum(const int* d_in, int* d_out, int n, void* d_temp, std::size_t* temp_bytes) {
  Writer w;
  w.put<std::uint64_t>(to_wire(d_in)).put<std::uint64_t>(to_wire(d_out)).put(n);
  w.put<std::uint64_t>(to_wire(d_temp)).put<std::uint64_t>(*temp_bytes);
  Reader r = wb::remote::call("wb_cub_inclusive_sum", w);
  const auto e = r.get<cudaError_t>();
  *temp_bytes = static_cast<std::size_t>(r.get<std::uint64_t>());
  return e;
}

cudaError_t wb_cub_histogram_even(const unsigned* d_values, int n, unsigned* d_bins, int num_bins, void* d_temp,
                                  std::size_t* temp_bytes) {
  Writer w;
  w.put<std::uint64_t>(to_wire(d_values)).put(n).put<std::uint64_t>(to_wire(d_bins)).put(num_bins);
  w.put<std::uint64_t>(to_wire(d_temp)).put<std::uint64_t>(*temp_bytes);
  Reader r = wb::remote::call("wb_cub_histogram_even", w);
  const auto e = r.get<cudaError_t>();
  *temp_bytes = static_cast<std::size_t>(r.get<std::uint64_t>());
  return e;
}
#elif defined(WB_REMOTE_WORKER)
static const wb::remote::Registration inclusive_sum_registration{
    "wb_cub_inclusive_sum", [](Reader& in, Writer& out) {
      const auto d_in = from_wire<const int*>(in.get<std::uint64_t>());
      const auto d_out = from_wire<int*>(in.get<std::uint64_t>());
      const int n = in.get<int>();
      const auto d_temp = from_wire<void*>(in.get<std::uint64_t>());
      std::size_t temp_bytes = static_cast<std::size_t>(in.get<std::uint64_t>());
      const cudaError_t e = wb_cub_inclusive_sum(d_in, d_out, n, d_temp, &temp_bytes);
      out.put(e).put<std::uint64_t>(temp_bytes);
    }};

static const wb::remote::Registration histogram_even_registration{
    "wb_cub_histogram_even", [](Reader& in, Writer& out) {
      const auto d_values = from_wire<const unsigned*>(in.get<std::uint64_t>());
      const int n = in.get<int>();
      const auto d_bins = from_wire<unsigned*>(in.get<std::uint64_t>());
      const int num_bins = in.get<int>();
      const auto d_temp = from_wire<void*>(in.get<std::uint64_t>());
      std::size_t temp_bytes = static_cast<std::size_t>(in.get<std::uint64_t>());
      const cudaError_t e = wb_cub_histogram_even(d_values, n, d_bins, num_bins, d_temp, &temp_bytes);
      out.put(e).put<std::uint64_t>(temp_bytes);
    }};
#endif
