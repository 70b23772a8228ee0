// Known-wrong lab 02: the store of the tiled kernels tests the output coordinates against
// the input's dimensions (out row < rows, out column < cols) instead of the output's. Square
// matrices and full tiles come out right; the partial edge tiles of non-square matrices do
// not. Expected: Correctness.TiledShapes fails with a mismatch at an index of out.
#include "transpose.h"

#include <cuda_runtime.h>

#include <algorithm>

namespace {

constexpr int kTile = 32;       // tile edge: one warp spans a tile row
constexpr int kBlockRows = 8;   // threads per block: kTile x kBlockRows
constexpr int kMaxGridY = 65535;

dim3 tile_grid(int rows, int cols) {
  const int col_tiles = (cols + kTile - 1) / kTile;
  const int row_tiles = (rows + kTile - 1) / kTile;
  return dim3(col_tiles, std::min(row_tiles, kMaxGridY));
}

}  // namespace

// Version 1. Thread (x, y) of the grid handles in(r = y, c = x): the read in[r * cols + c]
// is coalesced (consecutive x, consecutive addresses), the write out[c * rows + r] is not:
// consecutive threads write rows floats apart, one 32-byte sector each.
__global__ void transpose_naive_kernel(int rows, int cols, const float* in, float* out) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += blockDim.y * gridDim.y) {
    out[c * rows + r] = in[r * cols + c];
  }
}

cudaError_t transpose_naive(int rows, int cols, const float* d_in, float* d_out) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const dim3 block(kTile, kBlockRows);
  const dim3 grid((cols + kTile - 1) / kTile, std::min((rows + kBlockRows - 1) / kBlockRows, kMaxGridY));
  transpose_naive_kernel<<<grid, block>>>(rows, cols, d_in, d_out);
  return cudaGetLastError();
}

// Version 2. What changed: the block reads a 32 x 32 tile of in along its rows into
// shared memory, waits for the whole tile, and writes it along the rows of out. Both
// global accesses are coalesced. The read tile[threadIdx.x][j] walks down a column:
// addresses 32 floats apart fall into the same bank, 32 wavefronts per request.
// Edge tiles: the load tests the input bounds (r < rows, c < cols); the store tests the
// output's (out row c < cols, out column r < rows), the same condition seen transposed.
__global__ void transpose_tiled_kernel(int rows, int cols, const float* in, float* out) {
  __shared__ float tile[kTile][kTile];
  const int tile_col = blockIdx.x * kTile;
  for (int tile_row = blockIdx.y * kTile; tile_row < rows; tile_row += gridDim.y * kTile) {
    const int c = tile_col + threadIdx.x;
    for (int j = threadIdx.y; j < kTile; j += kBlockRows) {
      const int r = tile_row + j;
      if (r < rows && c < cols) tile[j][threadIdx.x] = in[r * cols + c];
    }
    __syncthreads();  // the whole tile is in shared memory before anyone reads a column
    const int out_col = tile_row + threadIdx.x;  // an input row
    for (int j = threadIdx.y; j < kTile; j += kBlockRows) {
      const int out_row = tile_col + j;          // an input column
      // BUG: the output has cols rows and rows columns, not rows rows and cols columns.
      if (out_row < rows && out_col < cols) out[out_row * rows + out_col] = tile[threadIdx.x][j];
    }
    __syncthreads();  // everyone has read the tile before the next iteration overwrites it
  }
}

cudaError_t transpose_tiled(int rows, int cols, const float* d_in, float* d_out) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  transpose_tiled_kernel<<<tile_grid(rows, cols), dim3(kTile, kBlockRows)>>>(rows, cols, d_in, d_out);
  return cudaGetLastError();
}

// Version 3. What changed: one padding column. Element (i, j) of float[32][33] is word
// 33 i + j, in bank (33 i + j) % 32 = (i + j) % 32, so a warp reading a column (i = lane)
// touches 32 different banks: one wavefront instead of 32.
__global__ void transpose_conflict_free_kernel(int rows, int cols, const float* in, float* out) {
  __shared__ float tile[kTile][kTile + 1];
  const int tile_col = blockIdx.x * kTile;
  for (int tile_row = blockIdx.y * kTile; tile_row < rows; tile_row += gridDim.y * kTile) {
    const int c = tile_col + threadIdx.x;
    for (int j = threadIdx.y; j < kTile; j += kBlockRows) {
      const int r = tile_row + j;
      if (r < rows && c < cols) tile[j][threadIdx.x] = in[r * cols + c];
    }
    __syncthreads();
    const int out_col = tile_row + threadIdx.x;
    for (int j = threadIdx.y; j < kTile; j += kBlockRows) {
      const int out_row = tile_col + j;
      if (out_row < rows && out_col < cols) out[out_row * rows + out_col] = tile[threadIdx.x][j];  // BUG
    }
    __syncthreads();
  }
}

cudaError_t transpose_conflict_free(int rows, int cols, const float* d_in, float* d_out) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  transpose_conflict_free_kernel<<<tile_grid(rows, cols), dim3(kTile, kBlockRows)>>>(rows, cols, d_in, d_out);
  return cudaGetLastError();
}
