/// @file
/// @brief Lab 03 interface: parallel reduction (sum, max, min), five versions of the sum.
///
/// The checker calls these functions; implement them in reduction.cu and do not change
/// this file.
///
/// Every function reduces the @p n floats of device array @p d_in (n >= 0, d_in aligned
/// to 16 bytes as cudaMalloc memory is) into one float at device address @p d_out, and
/// returns the first CUDA error it sees (cudaGetLastError() after a launch), else
/// cudaSuccess. The reduction of n == 0 elements is the operation's identity: 0 for a
/// sum, -infinity for a max, +infinity for a min. A sum may add the elements in any
/// order: the checker allows the rounding error of float summation.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

/// Floats of device workspace that versions 1-4 receive: room for the partial results of
/// every pass of a multi-pass reduction in which each block reduces at least 32 elements
/// (the sum over the passes of ceil(m / 32), m = n, ceil(n / 32), ...).
inline std::size_t reduce_workspace_floats(int n) {
  std::size_t total = 0;
  for (std::size_t m = n > 0 ? static_cast<std::size_t>(n) : 0; m > 1;) {
    m = (m + 31) / 32;
    total += m;
  }
  return total;
}

// ---- Versions 1-4: a tree in shared memory, one partial sum per block, passes until one
// value is left. @p block_size is a power of two from 64 to 1024; @p d_workspace holds
// reduce_workspace_floats(n) floats for the partial sums between passes. ----------------

/// Version 1: interleaved addressing. In step s = 1, 2, 4, ... thread t adds
/// sdata[2 s t + s] into sdata[2 s t]: the active threads are contiguous, but their
/// shared-memory addresses are 2 s apart, so a warp's accesses collide in the same banks.
cudaError_t reduce_sum_interleaved(const float* d_in, int n, float* d_out, float* d_workspace, int block_size);

/// Version 2: sequential addressing. In step s = blockDim.x / 2, ..., 1 thread t < s adds
/// sdata[t + s] into sdata[t]: consecutive threads, consecutive addresses, no bank conflicts.
cudaError_t reduce_sum_sequential(const float* d_in, int n, float* d_out, float* d_workspace, int block_size);

/// Version 3: first add during load. Each block reduces 2 * blockDim.x elements; every
/// thread loads two, blockDim.x apart (both loads coalesced), and stores their sum.
cudaError_t reduce_sum_first_add(const float* d_in, int n, float* d_out, float* d_workspace, int block_size);

/// Version 4: version 3 with a warp-shuffle tail. The shared-memory tree stops when 64
/// values are left; one warp finishes with __shfl_down_sync, without shared memory or
/// __syncthreads().
cudaError_t reduce_sum_warp_shuffle(const float* d_in, int n, float* d_out, float* d_workspace, int block_size);

// ---- Version 5 ------------------------------------------------------------------------

/// Version 5: one pass. Launched exactly as asked (@p num_blocks blocks of @p block_size
/// threads, block_size a multiple of 32 from 32 to 1024, any num_blocks >= 1), every thread
/// sums its elements in a grid-stride loop, the block combines its threads' sums (warp
/// shuffles, then one value per warp), and one thread per block adds the block's sum to
/// *d_out with a single atomicAdd. *d_out must be set to 0 first.
cudaError_t reduce_sum_grid_stride(const float* d_in, int n, float* d_out, int num_blocks, int block_size);

// ---- Final versions: your choice of configuration and code --------------------------------

/// The fastest sum you can write (the checker times it on a GPU against the bandwidth of
/// a device-to-device copy). Start from version 5 and size the grid for the GPU.
cudaError_t reduce_sum(const float* d_in, int n, float* d_out);

/// The largest element (-infinity when n == 0).
cudaError_t reduce_max(const float* d_in, int n, float* d_out);

/// The smallest element (+infinity when n == 0).
cudaError_t reduce_min(const float* d_in, int n, float* d_out);
