// Functions the tests of wb::check::timed_and_verified and of a judge's timing time
// (timed_and_verified_test.cpp, remote_timing_test.cpp): one that does its work on every call, one
// that replays the result of an earlier call with the same arguments and one that skips the work
// of most calls, as submissions on GPU leaderboards have done to time well, and a slow one.
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

cudaError_t add_one_skipping(const int* in, int* out, int n) {
  static int calls = 0;
  ++calls;
  if (calls != 1 && calls != 7) return cudaSuccess;  // the validation call and the last of 1 + 5 timed runs
  return launch(in, out, n);
}

namespace {

__global__ void busy_add_one_kernel(const int* in, int* out, int n, int iterations, unsigned sentinel) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned acc = static_cast<unsigned>(in[i]);
  for (int k = 0; k < iterations; ++k) acc = (acc * 2654435761u + 12345u) % 1000003u;
  out[i] = in[i] + 1 + (acc == sentinel ? 1 : 0);  // sentinel: a value acc never takes
}

}  // namespace

cudaError_t busy_add_one(const int* in, int* out, int n, int iterations) {
  busy_add_one_kernel<<<(n + 255) / 256, 256>>>(in, out, n, iterations, 0xFFFFFFFFu);
  return cudaGetLastError();
}
