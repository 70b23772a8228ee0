// Lab 04: scan and histogram. Your file: implement the TODOs, then run
//   ./workbook check 04
// The handout is labs/04-scan-histogram/README.md; the interface is scan_histogram.h (do not
// edit it).
#include "scan_histogram.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

// ---- Version 1: Kogge-Stone in one block ------------------------------------------------------

// TODO(1): inclusive scan of in[0..n) with one thread per element (blockDim.x >= n).
//   a. extern __shared__ int values[]; thread t stores in[t] (0 when t >= n); __syncthreads().
//   b. For d = 1, 2, 4, ... < blockDim.x: v = values[t], plus values[t - d] when t >= d;
//      __syncthreads() (every thread has read before anyone writes); values[t] = v;
//      __syncthreads().
//   c. Thread t < n writes values[t] to out[t].
__global__ void scan_kogge_stone_kernel(const int* in, int* out, int n) {
}

cudaError_t scan_block_kogge_stone(const int* d_in, int* d_out, int n) {
  // TODO(2): nothing to do for n == 0; else launch one block of n threads rounded up to a
  // multiple of 32, with that many ints of dynamic shared memory; return cudaGetLastError().
  (void)d_in; (void)d_out; (void)n;
  return cudaErrorNotYetImplemented;
}

// ---- Version 2: Blelloch in one block ---------------------------------------------------------

// TODO(3): exclusive scan of in[0..n) in one block of blockDim.x threads over
// m = 2 * blockDim.x elements (a power of two; elements >= n are 0).
//   a. extern __shared__ int tree[]; thread t loads elements t and t + blockDim.x.
//   b. Up-sweep: offset = 1; for d = m / 2, m / 4, ..., 1: __syncthreads(); threads t < d add
//      tree[offset * (2t + 1) - 1] into tree[offset * (2t + 2) - 1]; offset *= 2.
//   c. Thread 0 sets tree[m - 1] = 0.
//   d. Down-sweep: for d = 1, 2, ..., m / 2: offset /= 2; __syncthreads(); threads t < d, with
//      a and b as above: left = tree[a]; tree[a] = tree[b]; tree[b] += left.
//   e. __syncthreads(); store elements t and t + blockDim.x that are < n.
__global__ void scan_blelloch_kernel(const int* in, int* out, int n) {
}

cudaError_t scan_block_blelloch(const int* d_in, int* d_out, int n) {
  // TODO(4): m = the smallest power of two >= n and >= 64; launch one block of m / 2 threads
  // with m ints of dynamic shared memory.
  (void)d_in; (void)d_out; (void)n;
  return cudaErrorNotYetImplemented;
}

// ---- Version 3: reduce-then-scan -----------------------------------------------------------------
//
// Tiles of kTile = 256 threads x 4 elements. Load a tile with striped indices
// base + j * 256 + t (j = 0..3): a warp then reads 32 consecutive ints per load.

[[maybe_unused]] constexpr int kThreads = 256;
[[maybe_unused]] constexpr int kItems = 4;
[[maybe_unused]] constexpr int kTile = kThreads * kItems;

// TODO(5): phase 1. Block b writes the sum of in[b * kTile .. b * kTile + kTile) (elements
// >= n count as 0) to tile_sums[b]: each thread sums its four striped elements, then the
// block adds its threads' sums (warp shuffles, one value per warp in shared memory, warp 0).
__global__ void reduce_tiles_kernel(const int* in, int n, int* tile_sums) {
}

// TODO(6): phase 3 (and the whole scan when there is one tile). Block b scans its tile and
// adds tile_offsets[b] (0 when tile_offsets is nullptr), inclusive or exclusive:
//   a. Striped loads into __shared__ int tile[kTile]; __syncthreads().
//   b. Thread t scans elements t * kItems .. t * kItems + 3 of the tile in registers.
//   c. An exclusive scan of the threads' sums over the block gives each thread its start.
//   d. Write the results back to tile[], __syncthreads(), striped stores to out (i < n).
// Read tile_offsets[b] once per block (one thread, through shared memory), not per thread.
__global__ void scan_tiles_kernel(const int* in, int* out, int n, const int* tile_offsets, bool inclusive) {
}

cudaError_t scan_reduce_then_scan(const int* d_in, int* d_out, int n, void* d_workspace) {
  // TODO(7): for n > 0, with tiles = (n + kTile - 1) / kTile:
  //   - one tile: scan_tiles_kernel<<<1, kThreads>>>(in, out, n, nullptr, true);
  //   - else: reduce_tiles_kernel into tile_sums (the first `tiles` ints of the workspace);
  //     scan tile_sums in place, exclusively, the same way (a recursive helper taking
  //     `inclusive` and the rest of the workspace: workspace + tiles); then
  //     scan_tiles_kernel<<<tiles, kThreads>>>(in, out, n, tile_sums, true).
  //   Return the first error of cudaGetLastError() after each launch.
  (void)d_in; (void)d_out; (void)n; (void)d_workspace;
  return cudaErrorNotYetImplemented;
}

// ---- Final versions --------------------------------------------------------------------------------

cudaError_t inclusive_scan(const int* d_in, int* d_out, int n, void* d_workspace) {
  // TODO(8): your fastest inclusive scan. Start by calling your reduce-then-scan; then write a
  // single pass with decoupled look-back (see the handout): every element read once.
  (void)d_in; (void)d_out; (void)n; (void)d_workspace;
  return cudaErrorNotYetImplemented;
}

cudaError_t exclusive_scan(const int* d_in, int* d_out, int n, void* d_workspace) {
  // TODO(9): as TODO(8), exclusive: out[0] = 0, out[i] = in[0] + ... + in[i-1].
  (void)d_in; (void)d_out; (void)n; (void)d_workspace;
  return cudaErrorNotYetImplemented;
}

cudaError_t inclusive_scan(const float* d_in, float* d_out, int n, void* d_workspace) {
  // TODO(10): as TODO(8), on floats (a template on the element type serves both).
  (void)d_in; (void)d_out; (void)n; (void)d_workspace;
  return cudaErrorNotYetImplemented;
}

// ---- Version 4: one global atomic per element -------------------------------------------------------

// TODO(11): thread i < n reads v = values[i] and, when v < num_bins, atomicAdd(&bins[v], 1u).
__global__ void histogram_global_kernel(const unsigned* values, int n, unsigned* bins, unsigned num_bins) {
}

cudaError_t histogram_global_atomics(const unsigned* d_values, int n, unsigned* d_bins, int num_bins) {
  // TODO(12): clear d_bins (cudaMemsetAsync(d_bins, 0, num_bins * sizeof(unsigned))), then for
  // n > 0 launch one thread per value.
  (void)d_values; (void)n; (void)d_bins; (void)num_bins;
  return cudaErrorNotYetImplemented;
}

// ---- Version 5: privatized histogram in shared memory -----------------------------------------------

// TODO(13): extern __shared__ unsigned local_bins[] (num_bins counters).
//   a. Clear all num_bins local bins (b = threadIdx.x, += blockDim.x); __syncthreads().
//   b. Grid-stride loop over the values: atomicAdd(&local_bins[v], 1u) for v < num_bins.
//   c. __syncthreads(); then for each local bin b that is not 0: atomicAdd(&bins[b], count).
__global__ void histogram_shared_kernel(const unsigned* values, int n, unsigned* bins, unsigned num_bins) {
}

cudaError_t histogram_shared(const unsigned* d_values, int n, unsigned* d_bins, int num_bins, int num_blocks,
                             int block_size) {
  // TODO(14): clear d_bins, then launch exactly num_blocks x block_size threads with
  // num_bins * sizeof(unsigned) bytes of dynamic shared memory.
  (void)d_values; (void)n; (void)d_bins; (void)num_bins; (void)num_blocks; (void)block_size;
  return cudaErrorNotYetImplemented;
}

// ---- Final histogram ---------------------------------------------------------------------------------

cudaError_t histogram(const unsigned* d_values, int n, unsigned* d_bins, int num_bins) {
  // TODO(15): your fastest histogram. Start with version 5 and a grid of a few blocks per
  // multiprocessor (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device)),
  // but no more blocks than n needs; then try 16-byte loads (uint4; d_values is 16-byte
  // aligned) and counting runs of equal values in registers before one shared atomicAdd.
  (void)d_values; (void)n; (void)d_bins; (void)num_bins;
  return cudaErrorNotYetImplemented;
}
