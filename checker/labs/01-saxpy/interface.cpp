// Lab 01's interface as remote calls: the checks (the judge) call these, the student's code
// runs them in the worker process (checker/support/remote/wb_remote_interface.h).
#include <cstring>
#include <vector>

#include "saxpy.h"
#include "wb_remote_interface.h"

WB_REMOTE(cudaError_t, saxpy, (int n, float a, const float* d_x, float* d_y), (n, a, d_x, d_y))
WB_REMOTE(cudaError_t, saxpy_grid_stride,
          (int n, float a, const float* d_x, float* d_y, int num_blocks, int block_size),
          (n, a, d_x, d_y, num_blocks, block_size))

// saxpy_host takes host arrays: they travel with the call and h_y comes back. The check puts
// kHostGuard sentinel elements after each array (check_saxpy.cpp, HostRoundTrip); they travel
// too, so a copy past the end lands in them and the check sees it.
namespace {
constexpr int kHostGuard = 1024;
}

#if defined(WB_REMOTE_JUDGE)
cudaError_t saxpy_host(int n, float a, const float* h_x, float* h_y) {
  const std::size_t count = static_cast<std::size_t>(n > 0 ? n : 0) + kHostGuard;
  wb::remote::Writer w;
  w.put(n).put(a).put_bytes(h_x, count * sizeof(float)).put_bytes(h_y, count * sizeof(float));
  wb::remote::Reader r = wb::remote::call("saxpy_host", w);
  const auto e = r.get<cudaError_t>();
  std::memcpy(const_cast<float*>(h_x), r.take(count * sizeof(float)), count * sizeof(float));
  std::memcpy(h_y, r.take(count * sizeof(float)), count * sizeof(float));
  return e;
}
#else
static const wb::remote::Registration saxpy_host_registration{
    "saxpy_host", [](wb::remote::Reader& in, wb::remote::Writer& out) {
      const int n = in.get<int>();
      const float a = in.get<float>();
      const std::size_t count = static_cast<std::size_t>(n > 0 ? n : 0) + kHostGuard;
      std::vector<float> x(count), y(count);
      std::memcpy(x.data(), in.take(count * sizeof(float)), count * sizeof(float));
      std::memcpy(y.data(), in.take(count * sizeof(float)), count * sizeof(float));
      const cudaError_t e = saxpy_host(n, a, x.data(), y.data());
      out.put(e).put_bytes(x.data(), count * sizeof(float)).put_bytes(y.data(), count * sizeof(float));
    }};
#endif
