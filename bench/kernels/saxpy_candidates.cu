// Candidate kernels for lab 01's saxpy (saxpy_candidates.h). Why: with one element per thread the
// reference reached 0.90 x a device-to-device copy on an H100 and 0.81 on an H200, whose memory is
// faster, against a threshold of 0.80 (docs/perf/gpu.md): a margin of 1% on the H200. If every
// one-element-per-thread candidate stays near 0.81 there while four elements per thread reach the
// copy, the contract caps the ratio, and a baseline that keeps the contract (the fastest of them,
// timed in the same run) judges the lab's kernel better than the copy does (docs/perf/kernels.md).
#include "saxpy_candidates.h"

namespace candidates {
namespace {

__global__ void one_per_thread_kernel(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void float4_kernel(int n, float a, const float4* x4, float4* y4, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int quads = n / 4;
  if (i < quads) {
    const float4 xv = x4[i];
    float4 yv = y4[i];
    yv.x = a * xv.x + yv.x;
    yv.y = a * xv.y + yv.y;
    yv.z = a * xv.z + yv.z;
    yv.w = a * xv.w + yv.w;
    y4[i] = yv;
  } else if (i == quads) {
    for (int k = 4 * quads; k < n; ++k) y[k] = a * x[k] + y[k];  // the last n % 4 elements
  }
}

}  // namespace

cudaError_t saxpy_one_per_thread(int n, float a, const float* x, float* y, int block_size) {
  if (n <= 0) return cudaSuccess;
  one_per_thread_kernel<<<(n + block_size - 1) / block_size, block_size>>>(n, a, x, y);
  return cudaGetLastError();
}

cudaError_t saxpy_float4(int n, float a, const float* x, float* y) {
  if (n <= 0) return cudaSuccess;
  const int threads = n / 4 + 1;  // one more for the tail
  float4_kernel<<<(threads + 255) / 256, 256>>>(n, a, reinterpret_cast<const float4*>(x),
                                                reinterpret_cast<float4*>(y), x, y);
  return cudaGetLastError();
}

}  // namespace candidates
