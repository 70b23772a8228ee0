// Lab 02: matrix transpose. Your file: implement the TODOs, then run
//   ./workbook check 02
// The handout is labs/02-transpose/README.md; the interface is transpose.h (do not edit it).
//
// out[c * rows + r] = in[r * cols + c]: in has rows x cols elements, out has cols x rows.
#include "transpose.h"

#include <cuda_runtime.h>

// Suggested configuration (you may choose another): a tile of 32 x 32 elements moved by a
// block of 32 x 8 threads, each thread moving 4 elements of the tile.
[[maybe_unused]] constexpr int kTile = 32;
[[maybe_unused]] constexpr int kBlockRows = 8;

// ---- Version 1: naive ------------------------------------------------------------------

// TODO(1): one thread per element. Compute the input column c from blockIdx.x, blockDim.x
// and threadIdx.x (so that a warp reads consecutive columns of one row), the input row r
// from the y dimension, and when r < rows and c < cols copy in[r * cols + c] to
// out[c * rows + r]. Remember that gridDim.y is at most 65535 (see TODO(2)).
__global__ void transpose_naive_kernel(int rows, int cols, const float* in, float* out) {
}

cudaError_t transpose_naive(int rows, int cols, const float* d_in, float* d_out) {
  // TODO(2): return cudaSuccess when rows or cols is 0; choose a 2D block (e.g. 32 x 8) and
  // a 2D grid that covers cols along x and rows along y, rounding up. If rows needs more
  // than 65535 blocks along y, cap gridDim.y and let each thread loop over rows
  // (r += blockDim.y * gridDim.y). Launch, and return cudaGetLastError().
  (void)rows; (void)cols; (void)d_in; (void)d_out;
  return cudaErrorNotYetImplemented;
}

// ---- Version 2: shared-memory tile ---------------------------------------------------------

// TODO(3): each block transposes one 32 x 32 tile (tile_row = blockIdx.y * kTile,
// tile_col = blockIdx.x * kTile), or loops over tile rows when gridDim.y is capped.
//   a. Declare __shared__ float tile[kTile][kTile].
//   b. Load: thread (x, y) reads in(tile_row + j, tile_col + x) for j = y, y + kBlockRows, ...
//      into tile[j][x], when that element exists (row < rows, column < cols).
//   c. __syncthreads(): the tile must be complete before anyone reads it transposed.
//   d. Store: thread (x, y) writes out(tile_col + j, tile_row + x) = tile[x][j], when that
//      element exists (out row < cols, out column < rows). threadIdx.x now runs along a row
//      of out, so the store is coalesced too.
//   e. If the kernel loops to another tile, __syncthreads() again before overwriting tile.
__global__ void transpose_tiled_kernel(int rows, int cols, const float* in, float* out) {
}

cudaError_t transpose_tiled(int rows, int cols, const float* d_in, float* d_out) {
  // TODO(4): handle empty matrices, launch transpose_tiled_kernel with blocks of
  // kTile x kBlockRows threads and one block per tile (round up; cap gridDim.y at 65535),
  // and return cudaGetLastError().
  (void)rows; (void)cols; (void)d_in; (void)d_out;
  return cudaErrorNotYetImplemented;
}

// ---- Version 3: no bank conflicts ----------------------------------------------------------

// TODO(5): the same kernel as version 2, with the tile declared so that a warp reading a
// column, tile[threadIdx.x][j], touches 32 different shared-memory banks: one padding
// column, float tile[kTile][kTile + 1], does it.
__global__ void transpose_conflict_free_kernel(int rows, int cols, const float* in, float* out) {
}

cudaError_t transpose_conflict_free(int rows, int cols, const float* d_in, float* d_out) {
  // TODO(6): launch transpose_conflict_free_kernel like version 2.
  (void)rows; (void)cols; (void)d_in; (void)d_out;
  return cudaErrorNotYetImplemented;
}
