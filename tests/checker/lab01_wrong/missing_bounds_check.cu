// Known-wrong lab 01: the kernel has no bounds check, so the threads of the last block
// past n write beyond the end of y. Expected: Correctness checks fail naming the write
// past the end.
#include "saxpy.h"

__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = a * x[i] + y[i];  // BUG: no `if (i < n)`
}

cudaError_t saxpy(int n, float a, const float* d_x, float* d_y) {
  if (n <= 0) return cudaSuccess;
  saxpy_kernel<<<(n + 255) / 256, 256>>>(n, a, d_x, d_y);
  return cudaGetLastError();
}

__global__ void saxpy_grid_stride_kernel(int n, float a, const float* x, float* y) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(blockDim.x) * gridDim.x) {
    y[i] = a * x[i] + y[i];
  }
}

cudaError_t saxpy_grid_stride(int n, float a, const float* d_x, float* d_y, int num_blocks, int block_size) {
  saxpy_grid_stride_kernel<<<num_blocks, block_size>>>(n, a, d_x, d_y);
  return cudaGetLastError();
}

cudaError_t saxpy_host(int n, float a, const float* h_x, float* h_y) {
  if (n <= 0) return cudaSuccess;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float *x = nullptr, *y = nullptr;
  cudaError_t err = cudaMalloc(&x, bytes);
  if (err == cudaSuccess) err = cudaMalloc(&y, bytes);
  if (err == cudaSuccess) err = cudaMemcpy(x, h_x, bytes, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) err = cudaMemcpy(y, h_y, bytes, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) err = saxpy(n, a, x, y);
  if (err == cudaSuccess) err = cudaMemcpy(h_y, y, bytes, cudaMemcpyDeviceToHost);
  cudaFree(x);
  cudaFree(y);
  return err;
}
