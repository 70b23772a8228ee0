// Functions the tests of wb::check::timed_and_verified time (wb_test.cpp): one that does its work
// on every call, and one that replays the result of an earlier call with the same arguments, as
// submissions on GPU leaderboards have done to time well.
#include "timed_kernels.h"

namespace {

__global__ void add_one_kernel(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + 1;
}

cudaError_t launch(const int* in, int* out, int n) {
  add_one_kernel<<<(n + 255) / 256, 256>>>(in, out, n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t add_one(const int* in, int* out, int n) { return launch(in, out, n); }

cudaError_t add_one_replaying(const int* in, int* out, int n) {
  static const int* last_in = nullptr;
  static int* last_out = nullptr;
  static int last_n = -1;
  if (in == last_in && out == last_out && n == last_n) return cudaSuccess;  // "the same call again"
  last_in = in;
  last_out = out;
  last_n = n;
  return launch(in, out, n);
}
