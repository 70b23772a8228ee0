// Lab 01 reference solution: SAXPY and vector basics.
#include "saxpy.h"

#include <cuda_runtime.h>

namespace {

constexpr int kBlockSize = 256;  // a multiple of the warp size; 128-512 all run at full bandwidth

}  // namespace

// One thread per element. The bound check matters: the last block usually has threads
// past the end of the arrays.
__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

cudaError_t saxpy(int n, float a, const float* d_x, float* d_y) {
  if (n <= 0) return cudaSuccess;  // a grid of zero blocks is an invalid launch
  const int num_blocks = (n + kBlockSize - 1) / kBlockSize;  // round up: cover all n
  saxpy_kernel<<<num_blocks, kBlockSize>>>(n, a, d_x, d_y);
  return cudaGetLastError();
}

// Grid-stride loop: consecutive threads touch consecutive elements in every pass (so a
// warp's accesses stay coalesced), and any grid size covers any n. The index is 64-bit so
// that i + stride cannot overflow near INT_MAX.
__global__ void saxpy_grid_stride_kernel(int n, float a, const float* x, float* y) {
  const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    y[i] = a * x[i] + y[i];
  }
}

cudaError_t saxpy_grid_stride(int n, float a, const float* d_x, float* d_y, int num_blocks, int block_size) {
  saxpy_grid_stride_kernel<<<num_blocks, block_size>>>(n, a, d_x, d_y);
  return cudaGetLastError();
}

namespace {

// Frees a device allocation on every path out of saxpy_host().
struct DeviceArray {
  float* ptr = nullptr;
  ~DeviceArray() {
    if (ptr != nullptr) cudaFree(ptr);
  }
};

}  // namespace

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
  // cudaMemcpy waits for the kernel, and reports an error that happened while it ran.
  return cudaMemcpy(h_y, y.ptr, bytes, cudaMemcpyDeviceToHost);
}
