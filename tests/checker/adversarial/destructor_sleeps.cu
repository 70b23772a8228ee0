// Attack (destructor_sleeps): a correct SAXPY (the solution's kernels) whose process will not
// end: a static destructor sleeps 1000 s and an atexit handler spins forever.
// Must happen: the checks pass as the solution's do (the verdict does not wait for the lab's
// process to end), each check takes a normal time (the judge kills the worker shortly after
// asking it to stop), and no process is left behind.
#include "saxpy.h"

#include <unistd.h>

#include <cstdlib>

namespace {
struct SleepsAtExit {
  SleepsAtExit() {
    std::atexit([] {
      static volatile unsigned long spin = 0;
      for (;;) spin = spin + 1;
    });
  }
  ~SleepsAtExit() { sleep(1000); }
} sleeps_at_exit;

__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void saxpy_grid_stride_kernel(int n, float a, const float* x, float* y) {
  const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    y[i] = a * x[i] + y[i];
  }
}

struct DeviceArray {
  float* ptr = nullptr;
  ~DeviceArray() {
    if (ptr != nullptr) cudaFree(ptr);
  }
};
}  // namespace

cudaError_t saxpy(int n, float a, const float* d_x, float* d_y) {
  if (n <= 0) return cudaSuccess;
  saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, d_x, d_y);
  return cudaGetLastError();
}

cudaError_t saxpy_grid_stride(int n, float a, const float* d_x, float* d_y, int num_blocks, int block_size) {
  saxpy_grid_stride_kernel<<<num_blocks, block_size>>>(n, a, d_x, d_y);
  return cudaGetLastError();
}

cudaError_t saxpy_host(int n, float a, const float* h_x, float* h_y) {
  if (n <= 0) return cudaSuccess;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  DeviceArray x, y;
  cudaError_t err = cudaMalloc(&x.ptr, bytes);
  if (err != cudaSuccess) return err;
  if ((err = cudaMalloc(&y.ptr, bytes)) != cudaSuccess) return err;
  if ((err = cudaMemcpy(x.ptr, h_x, bytes, cudaMemcpyHostToDevice)) != cudaSuccess) return err;
  if ((err = cudaMemcpy(y.ptr, h_y, bytes, cudaMemcpyHostToDevice)) != cudaSuccess) return err;
  if ((err = saxpy(n, a, x.ptr, y.ptr)) != cudaSuccess) return err;
  return cudaMemcpy(h_y, y.ptr, bytes, cudaMemcpyDeviceToHost);
}
