/// @file
/// @brief Lab 04 interface: prefix sums (scan) and histograms.
///
/// The checker calls these functions; implement them in scan_histogram.cu and do not change
/// this file.
///
/// Every function takes device pointers, returns the first CUDA error it sees
/// (cudaGetLastError() after a launch), else cudaSuccess, and may return before the GPU is
/// done (the checker synchronizes). n >= 0 everywhere; n == 0 writes nothing.
///
/// Scans: out[i] = in[0] + ... + in[i] (inclusive) or in[0] + ... + in[i-1] (exclusive,
/// out[0] = 0). d_in and d_out do not overlap. The checker's int data never overflows.
///
/// Histograms: bins[b] = the number of i < n with values[i] == b, for b < num_bins;
/// values >= num_bins are ignored (not counted anywhere). Each function sets d_bins[0..num_bins)
/// to zero itself before counting. 1 <= num_bins <= kMaxHistogramBins. d_values is aligned to
/// 16 bytes, as cudaMalloc memory is.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

/// The most bins a histogram has: 4096 unsigned counters are 16 KiB of shared memory.
constexpr int kMaxHistogramBins = 4096;

/// The largest n of scan_block_kogge_stone (one block of at most 1024 threads, one element
/// each) and of scan_block_blelloch (one block of at most 1024 threads, two elements each).
constexpr int kMaxKoggeStoneScan = 1024;
constexpr int kMaxBlellochScan = 2048;

/// Bytes of device workspace that the multi-block scans receive (d_workspace, aligned to 256
/// bytes as cudaMalloc memory is, contents undefined on entry): 256 bytes plus 16 bytes per
/// 32 elements. That holds the tile sums of every level of a reduce-then-scan whose tiles
/// have at least 32 elements, or one 8-byte status word per tile of a single-pass scan whose
/// tiles have at least 32 elements, plus a few counters.
inline std::size_t scan_workspace_bytes(int n) {
  const std::size_t elements = n > 0 ? static_cast<std::size_t>(n) : 0;
  return 256 + 16 * ((elements + 31) / 32);
}

// ---- Version 1: one block, Kogge-Stone (Hillis-Steele) ------------------------------------------

/// Inclusive scan of n <= kMaxKoggeStoneScan ints in one block (one thread per element):
/// in step d = 1, 2, 4, ..., element i adds element i - d. Every step reads values that other
/// threads write in the same step: a barrier between the reads and the writes (or a double
/// buffer) keeps them apart. O(n log n) additions.
cudaError_t scan_block_kogge_stone(const int* d_in, int* d_out, int n);

// ---- Version 2: one block, Blelloch (work-efficient) ---------------------------------------------

/// Exclusive scan of n <= kMaxBlellochScan ints in one block, each thread handling two
/// elements: an up-sweep (a reduction tree, in place in shared memory), the last element set
/// to 0, then a down-sweep that turns the tree into the exclusive prefix sums. O(n) additions.
cudaError_t scan_block_blelloch(const int* d_in, int* d_out, int n);

// ---- Version 3: any n, reduce-then-scan -------------------------------------------------------

/// Inclusive scan of any n ints with several blocks, in three phases: every block reduces its
/// tile to one sum; the tile sums are scanned (exclusive, recursively for many tiles); every
/// block scans its tile again, starting from its tile's offset. Reads the input twice and
/// writes the output once. d_workspace holds scan_workspace_bytes(n) bytes.
cudaError_t scan_reduce_then_scan(const int* d_in, int* d_out, int n, void* d_workspace);

// ---- Final versions: your choice of algorithm and configuration ------------------------------------

/// The fastest inclusive scan you can write (the checker times it on a GPU against a
/// device-to-device copy and against CUB). Start from version 3; a single pass with
/// decoupled look-back reads the input once. d_workspace holds scan_workspace_bytes(n) bytes.
cudaError_t inclusive_scan(const int* d_in, int* d_out, int n, void* d_workspace);

/// Exclusive scan of ints: out[0] = 0, out[i] = in[0] + ... + in[i-1].
cudaError_t exclusive_scan(const int* d_in, int* d_out, int n, void* d_workspace);

/// Inclusive scan of floats. Any order of additions is accepted: the checker allows the
/// rounding error of float summation.
cudaError_t inclusive_scan(const float* d_in, float* d_out, int n, void* d_workspace);

// ---- Histograms ------------------------------------------------------------------------------

/// Version 4: one thread per element, one atomicAdd on d_bins per element. Correct, but every
/// element is an atomic on global memory, and all of them collide when the data has few
/// distinct values.
cudaError_t histogram_global_atomics(const unsigned* d_values, int n, unsigned* d_bins, int num_bins);

/// Version 5: privatization. Launched exactly as asked (@p num_blocks blocks of
/// @p block_size threads, block_size a multiple of 32 from 32 to 1024, any num_blocks >= 1):
/// every block counts its elements (a grid-stride loop) into its own histogram in shared
/// memory with shared-memory atomics, then adds each nonzero bin to d_bins with one global
/// atomicAdd: at most num_blocks * num_bins global atomics, whatever n.
cudaError_t histogram_shared(const unsigned* d_values, int n, unsigned* d_bins, int num_bins, int num_blocks,
                             int block_size);

/// The fastest histogram you can write (timed on a GPU against a device-to-device copy, on
/// uniform data and on data that all falls into one bin). Start from version 5.
cudaError_t histogram(const unsigned* d_values, int n, unsigned* d_bins, int num_bins);
