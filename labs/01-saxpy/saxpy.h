/// @file
/// @brief Lab 01 interface: SAXPY, y = a * x + y, three ways.
///
/// The checker calls these functions; implement them in saxpy.cu and do not change this
/// file. Every function returns a cudaError_t: cudaSuccess when the work was done, else
/// the first CUDA error that occurred (never swallow one).
#pragma once

#include <cuda_runtime.h>

/// y[i] = a * x[i] + y[i] for 0 <= i < n, one thread per element.
///
/// @p d_x and @p d_y are device pointers to n floats. You choose the launch configuration
/// (block size and number of blocks), so that every element gets exactly one thread.
/// n == 0 is valid and does nothing (note: a launch with zero blocks is an error in CUDA).
/// Returns the launch error (cudaGetLastError() right after the launch).
cudaError_t saxpy(int n, float a, const float* d_x, float* d_y);

/// The same computation with a grid-stride loop, launched exactly as asked:
/// @p num_blocks blocks of @p block_size threads, whatever n is.
///
/// Every thread starts at its global index and advances by the total number of threads
/// in the grid, so any grid, even one much smaller than n, covers all n elements.
/// An invalid configuration (block_size 0 or above the device limit of 1024, num_blocks 0)
/// must come back as the launch's error, not cudaSuccess.
cudaError_t saxpy_grid_stride(int n, float a, const float* d_x, float* d_y, int num_blocks, int block_size);

/// y = a * x + y on host arrays: allocate device memory, copy x and y to the device,
/// run saxpy(), copy y back and free the device memory, checking every CUDA call.
/// @p h_x and @p h_y are host pointers to n floats; @p h_y is updated in place.
/// n <= 0 is valid and does nothing: return cudaSuccess without allocating or touching the arrays.
/// When a CUDA call fails, return its error at once (make no further copy, allocation or launch),
/// and free the device memory already allocated on that path too: after every return, the device
/// holds as much memory as before the call.
cudaError_t saxpy_host(int n, float a, const float* h_x, float* h_y);
