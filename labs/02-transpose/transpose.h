/// @file
/// @brief Lab 02 interface: matrix transpose, from naive to bank-conflict-free.
///
/// The checker calls these functions; implement them in transpose.cu and do not change
/// this file.
///
/// Matrices are float, row-major and densely packed. The input has @p rows rows and
/// @p cols columns: element (r, c) is d_in[r * cols + c]. The output is the transpose, with
/// cols rows and rows columns:
///
///     d_out[c * rows + r] = d_in[r * cols + c]   for 0 <= r < rows, 0 <= c < cols
///
/// Every shape with rows >= 0, cols >= 0 and rows * cols < 2^31 is valid: square or not,
/// a multiple of the tile size or not, one row or one column, and very tall or very wide
/// (mind the grid limits: gridDim.y and gridDim.z are at most 65535). rows == 0 or
/// cols == 0 is valid and does nothing. d_in and d_out are device pointers to distinct
/// arrays. You choose every launch configuration. Each function returns the first CUDA
/// error it sees (cudaGetLastError() after a launch), else cudaSuccess.
#pragma once

#include <cuda_runtime.h>

/// Version 1: one thread per element, no shared memory. Consecutive threads of a warp
/// (threadIdx.x) take consecutive columns of one input row, so reads are coalesced and
/// writes are rows floats apart.
cudaError_t transpose_naive(int rows, int cols, const float* d_in, float* d_out);

/// Version 2: each block copies a 32 x 32 tile of the input into shared memory, then
/// writes it out transposed, so that global reads *and* writes are coalesced. (Reading the
/// tile down a column of a float[32][32] array is a 32-way bank conflict; version 3 fixes
/// that.)
cudaError_t transpose_tiled(int rows, int cols, const float* d_in, float* d_out);

/// Version 3: version 2 without shared-memory bank conflicts: pad the tile to
/// float[32][33] (or swizzle its columns), so that every shared-memory access of a warp
/// is served in one wavefront. This is the version timed against a device-to-device copy.
cudaError_t transpose_conflict_free(int rows, int cols, const float* d_in, float* d_out);
