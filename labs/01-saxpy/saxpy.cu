// Lab 01: SAXPY and vector basics. Your file: implement the TODOs, then run
//   ./workbook check 01
// The handout is labs/01-saxpy/README.md; the interface is saxpy.h (do not edit it).
#include "saxpy.h"

#include <cuda_runtime.h>

// TODO(1): write the kernel. One thread per element: compute the global index i from
// blockIdx.x, blockDim.x and threadIdx.x, and update y[i] only when i < n.
__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
}

cudaError_t saxpy(int n, float a, const float* d_x, float* d_y) {
  // TODO(2): pick a block size (a multiple of 32, e.g. 256), compute the number of blocks
  // so that blocks * block_size >= n, handle n == 0, launch saxpy_kernel, and return
  // cudaGetLastError().
  (void)n; (void)a; (void)d_x; (void)d_y;
  return cudaErrorNotYetImplemented;
}

// TODO(3): write a grid-stride kernel: start at the global index and advance by
// blockDim.x * gridDim.x until i >= n.

cudaError_t saxpy_grid_stride(int n, float a, const float* d_x, float* d_y, int num_blocks, int block_size) {
  // TODO(4): launch your grid-stride kernel with exactly num_blocks x block_size threads and
  // return the launch error.
  (void)n; (void)a; (void)d_x; (void)d_y; (void)num_blocks; (void)block_size;
  return cudaErrorNotYetImplemented;
}

cudaError_t saxpy_host(int n, float a, const float* h_x, float* h_y) {
  // TODO(5): return cudaSuccess at once when n <= 0. Otherwise cudaMalloc two device arrays,
  // cudaMemcpy h_x and h_y to them, call saxpy(), cudaMemcpy the result back into h_y, cudaFree
  // both arrays. Check every call's cudaError_t and return the first error as soon as it
  // happens (after freeing what you allocated).
  (void)n; (void)a; (void)h_x; (void)h_y;
  return cudaErrorNotYetImplemented;
}
