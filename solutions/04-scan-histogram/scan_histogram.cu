// Lab 04 reference solution: scan (prefix sums) and histograms.
//
//   1. scan_block_kogge_stone    one block, step d adds element i - d: O(n log n) additions
//   2. scan_block_blelloch       one block, up-sweep + down-sweep in place: O(n) additions
//   3. scan_reduce_then_scan     any n: reduce tiles, scan the tile sums, scan tiles again
//   inclusive_scan / exclusive_scan: a single pass with decoupled look-back (Merrill and
//      Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016): every
//      element is read once and written once.
//   4. histogram_global_atomics  one global atomicAdd per element
//   5. histogram_shared          a private histogram per block in shared memory, merged with
//                                one global atomicAdd per nonzero bin and block
//   histogram: version 5 with 16-byte loads and run-length counting in registers (a run of
//      equal values costs one shared atomic), a grid sized for the GPU.
#include "scan_histogram.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

int multiprocessors() {
  static const int count = [] {
    int device = 0, value = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || value <= 0) {
      (void)cudaGetLastError();
      return 80;
    }
    return value;
  }();
  return count;
}

}  // namespace

// ---- Block-wide building blocks -------------------------------------------------------------

// Inclusive scan of the 32 lanes' values (Kogge-Stone over shuffles).
template <class T>
__device__ T warp_inclusive_scan(T v) {
  const unsigned lane = threadIdx.x % 32;
  for (int d = 1; d < 32; d <<= 1) {
    const T other = __shfl_up_sync(kFullMask, v, d);
    if (lane >= static_cast<unsigned>(d)) v += other;
  }
  return v;
}

// Exclusive scan of one value per thread over the block (blockDim.x a multiple of 32);
// *total receives the sum of all values. scratch: 32 elements of shared memory.
template <class T>
__device__ T block_exclusive_scan(T v, T* scratch, T* total) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const T inclusive = warp_inclusive_scan(v);
  T exclusive = __shfl_up_sync(kFullMask, inclusive, 1);
  if (lane == 0) exclusive = T(0);
  if (lane == 31) scratch[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    T s = lane < warps ? scratch[lane] : T(0);
    s = warp_inclusive_scan(s);
    if (lane < warps) scratch[lane] = s;
  }
  __syncthreads();
  if (warp > 0) exclusive += scratch[warp - 1];
  *total = scratch[warps - 1];
  __syncthreads();  // the caller may reuse scratch
  return exclusive;
}

// ---- Version 1: Kogge-Stone in one block ------------------------------------------------------

// Step d: element i adds element i - d. All reads of a step finish (barrier) before any
// thread overwrites its element, so no thread reads a value of the current step.
__global__ void scan_kogge_stone_kernel(const int* in, int* out, int n) {
  extern __shared__ int values[];
  const int t = threadIdx.x;
  values[t] = t < n ? in[t] : 0;
  __syncthreads();
  for (int d = 1; d < static_cast<int>(blockDim.x); d <<= 1) {
    int v = values[t];
    if (t >= d) v += values[t - d];
    __syncthreads();
    values[t] = v;
    __syncthreads();
  }
  if (t < n) out[t] = values[t];
}

cudaError_t scan_block_kogge_stone(const int* d_in, int* d_out, int n) {
  if (n <= 0) return cudaSuccess;
  const int threads = (n + 31) / 32 * 32;
  scan_kogge_stone_kernel<<<1, threads, threads * sizeof(int)>>>(d_in, d_out, n);
  return cudaGetLastError();
}

// ---- Version 2: Blelloch in one block ---------------------------------------------------------

// m = 2 * blockDim.x elements (a power of two). Up-sweep: a reduction tree built in place,
// the sum of each subtree stored at its last element. Down-sweep: the root becomes 0 and
// every node passes its value to its left child and value + left sum to its right child.
__global__ void scan_blelloch_kernel(const int* in, int* out, int n) {
  extern __shared__ int tree[];
  const int t = threadIdx.x, half = blockDim.x, m = 2 * half;
  tree[t] = t < n ? in[t] : 0;
  tree[t + half] = t + half < n ? in[t + half] : 0;
  int offset = 1;
  for (int d = m >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (t < d) {
      const int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
      tree[b] += tree[a];
    }
    offset <<= 1;
  }
  if (t == 0) tree[m - 1] = 0;
  for (int d = 1; d < m; d <<= 1) {
    offset >>= 1;
    __syncthreads();
    if (t < d) {
      const int a = offset * (2 * t + 1) - 1, b = offset * (2 * t + 2) - 1;
      const int left = tree[a];
      tree[a] = tree[b];
      tree[b] += left;
    }
  }
  __syncthreads();
  if (t < n) out[t] = tree[t];
  if (t + half < n) out[t + half] = tree[t + half];
}

cudaError_t scan_block_blelloch(const int* d_in, int* d_out, int n) {
  if (n <= 0) return cudaSuccess;
  int m = 64;  // a power of two >= n; at least one warp of threads
  while (m < n) m *= 2;
  scan_blelloch_kernel<<<1, m / 2, m * sizeof(int)>>>(d_in, d_out, n);
  return cudaGetLastError();
}

// ---- Version 3: reduce-then-scan ---------------------------------------------------------------

namespace {
constexpr int kRtsThreads = 256;
constexpr int kRtsItems = 4;
constexpr int kRtsTile = kRtsThreads * kRtsItems;  // elements per block
}  // namespace

// Phase 1: the sum of each tile. Loads are striped (element j * blockDim.x + t of the tile),
// so a warp reads 32 consecutive ints per load.
__global__ void reduce_tiles_kernel(const int* in, int n, int* tile_sums) {
  __shared__ int scratch[32];
  const int base = blockIdx.x * kRtsTile;
  int sum = 0;
  for (int j = 0; j < kRtsItems; ++j) {
    const int i = base + j * kRtsThreads + threadIdx.x;
    if (i < n) sum += in[i];
  }
  int total;
  block_exclusive_scan(sum, scratch, &total);
  if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// Phase 3 (and the whole scan of a single tile): striped coalesced loads into shared memory,
// each thread scans kRtsItems consecutive elements, the block scans the threads' sums, and
// the tile's offset (tile_offsets[blockIdx.x], or 0) is added.
__global__ void scan_tiles_kernel(const int* in, int* out, int n, const int* tile_offsets, bool inclusive) {
  __shared__ int tile[kRtsTile];
  __shared__ int scratch[32];
  __shared__ int tile_offset;
  const int t = threadIdx.x, base = blockIdx.x * kRtsTile;
  if (t == 0) tile_offset = tile_offsets ? tile_offsets[blockIdx.x] : 0;
  for (int j = 0; j < kRtsItems; ++j) {
    const int i = base + j * kRtsThreads + t;
    tile[j * kRtsThreads + t] = i < n ? in[i] : 0;
  }
  __syncthreads();
  int items[kRtsItems];
  int sum = 0;
  for (int j = 0; j < kRtsItems; ++j) {
    items[j] = tile[t * kRtsItems + j];
    sum += items[j];
  }
  int total;
  int running = block_exclusive_scan(sum, scratch, &total) + tile_offset;
  for (int j = 0; j < kRtsItems; ++j) {
    const int next = running + items[j];
    tile[t * kRtsItems + j] = inclusive ? next : running;
    running = next;
  }
  __syncthreads();
  for (int j = 0; j < kRtsItems; ++j) {
    const int i = base + j * kRtsThreads + t;
    if (i < n) out[i] = tile[j * kRtsThreads + t];
  }
}

namespace {

// Scans in[0..n) into out (in == out allowed); the tile sums of every level go to workspace.
cudaError_t reduce_then_scan(const int* in, int* out, int n, int* workspace, bool inclusive) {
  if (n <= 0) return cudaSuccess;
  const int tiles = (n + kRtsTile - 1) / kRtsTile;
  if (tiles == 1) {
    scan_tiles_kernel<<<1, kRtsThreads>>>(in, out, n, nullptr, inclusive);
    return cudaGetLastError();
  }
  int* tile_sums = workspace;
  reduce_tiles_kernel<<<tiles, kRtsThreads>>>(in, n, tile_sums);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  // The tile sums become the tiles' offsets: their exclusive scan, in place.
  if (const cudaError_t err = reduce_then_scan(tile_sums, tile_sums, tiles, workspace + tiles, false);
      err != cudaSuccess) {
    return err;
  }
  scan_tiles_kernel<<<tiles, kRtsThreads>>>(in, out, n, tile_sums, inclusive);
  return cudaGetLastError();
}

}  // namespace

cudaError_t scan_reduce_then_scan(const int* d_in, int* d_out, int n, void* d_workspace) {
  return reduce_then_scan(d_in, d_out, n, static_cast<int*>(d_workspace), true);
}

// ---- Final: single pass with decoupled look-back -----------------------------------------------
//
// Tiles are numbered in the order blocks start (an atomic ticket, not blockIdx.x), so a tile
// only ever waits for tiles whose blocks are already running: no deadlock whatever order the
// GPU schedules blocks in. Each tile publishes a 64-bit status word {flag, value}: first its
// own sum (AGGREGATE), then, once its prefix is known, the sum up to its end (INCLUSIVE). A
// tile's first warp looks back over 32 predecessors at a time, adding AGGREGATE values until
// it meets an INCLUSIVE one. One word holds flag and value, so a reader never sees a flag
// with a stale value.
//
// Performance considerations. The scan moves as many bytes as a copy, so what matters is
// keeping enough loads in flight and never idling the memory system for long:
//   - Each warp transposes its own slice of the tile through shared memory (CUB's
//     BLOCK_LOAD_WARP_TRANSPOSE): warp w owns 32 * kScanItems consecutive elements; lane l
//     loads elements l, l + 32, ... (every load instruction reads 128 contiguous bytes), and
//     after __syncwarp() reads back its own kScanItems consecutive elements. Only the lanes
//     of one warp exchange data, so no block-wide barrier sits between a warp's loads and its
//     scan: a barrier there would hold every warp until the slowest warp's loads arrived.
//     Stores go back the same way.
//   - kScanItems = 21 ints per thread: 21 independent loads in flight per thread, and a third
//     fewer tiles (look-backs, tickets) than 15 items.
//   - Occupancy: whole slices (all but the last tile's) load and store without bounds checks,
//     and __launch_bounds__ asks for kScanBlocksPerSM blocks per multiprocessor, which holds
//     nvcc to 40 registers per thread with no spills: 6 x 256 threads x 21 loads of 4 bytes,
//     129 KB in flight per multiprocessor. Left alone, nvcc took 64 registers (4 blocks).
// Measured on an H100 (2^26 ints, against CUB's DeviceScan::InclusiveSum in the same run):
// this kernel 0.94 x CUB (0.76 x a device-to-device copy); with 64 registers 0.83 x; with 15
// or 19 items per thread 0.84 x and 0.92 x; the block-wide transpose it replaced (a
// __syncthreads() after the loads and before the stores, 15 items) 0.80 x.

namespace {
constexpr int kScanThreads = 256;
constexpr int kScanItems = 21;  // odd: lane l's consecutive elements l*21.. hit 32 different banks
constexpr int kScanWarpItems = 32 * kScanItems;  // the slice of the tile one warp loads and scans
constexpr int kScanTile = kScanThreads * kScanItems;
constexpr int kScanBlocksPerSM = 6;  // caps registers at 65536 / (6 x 256) = 42 per thread
constexpr unsigned long long kFlagAggregate = 1ull << 32;
constexpr unsigned long long kFlagInclusive = 2ull << 32;
constexpr std::size_t kStatusOffset = 256;  // bytes: the tile counter lives before the status words
}  // namespace

__device__ inline unsigned value_bits(int v) { return static_cast<unsigned>(v); }
__device__ inline unsigned value_bits(float v) { return __float_as_uint(v); }
template <class T>
__device__ inline T value_from_bits(unsigned bits);
template <>
__device__ inline int value_from_bits<int>(unsigned bits) { return static_cast<int>(bits); }
template <>
__device__ inline float value_from_bits<float>(unsigned bits) { return __uint_as_float(bits); }

template <class T>
__device__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Run by the 32 lanes of warp 0. Publishes the tile's aggregate, returns the sum of all
// elements before the tile and publishes the tile's inclusive prefix.
template <class T>
__device__ T look_back(int tile, T aggregate, volatile unsigned long long* status) {
  const int lane = threadIdx.x;
  if (tile == 0) {
    if (lane == 0) status[0] = kFlagInclusive | value_bits(aggregate);
    return T(0);
  }
  if (lane == 0) status[tile] = kFlagAggregate | value_bits(aggregate);
  T exclusive = T(0);
  unsigned sleep_ns = 32;
  for (int window_end = tile;; window_end -= 32) {
    const int predecessor = window_end - 1 - lane;  // lane 0 is the nearest
    unsigned long long word;
    while (true) {
      word = kFlagInclusive;  // before tile 0: an inclusive sum of 0
      if (predecessor >= 0) word = status[predecessor];
      if (__all_sync(kFullMask, (word >> 32) != 0)) break;
      __nanosleep(sleep_ns);
      if (sleep_ns < 1024) sleep_ns *= 2;
    }
    const unsigned inclusive_lanes = __ballot_sync(kFullMask, (word >> 32) == 2);
    const int last = inclusive_lanes ? __ffs(inclusive_lanes) - 1 : 31;  // lanes 0..last count
    exclusive += warp_sum(lane <= last ? value_from_bits<T>(static_cast<unsigned>(word)) : T(0));
    if (inclusive_lanes) break;
  }
  if (lane == 0) status[tile] = kFlagInclusive | value_bits(exclusive + aggregate);
  return exclusive;
}

template <class T, bool kInclusive>
__global__ void __launch_bounds__(kScanThreads, kScanBlocksPerSM)
    scan_single_pass_kernel(const T* in, T* out, int n, unsigned* tile_counter, unsigned long long* status) {
  __shared__ T tile_data[kScanTile];
  __shared__ T scratch[32];
  __shared__ int tile_ticket;
  __shared__ T tile_prefix;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  if (t == 0) tile_ticket = static_cast<int>(atomicAdd(tile_counter, 1u));
  __syncthreads();
  const int tile = tile_ticket;
  // Warp w's slice: elements warp_base .. warp_base + kScanWarpItems - 1 of the input, of
  // which the first `valid` exist (fewer, or none, in the last tile), staged in warp_data.
  const long long warp_base = static_cast<long long>(tile) * kScanTile + warp * kScanWarpItems;
  const long long remaining = n - warp_base;  // negative for a warp wholly past the end
  const int valid = remaining < kScanWarpItems ? static_cast<int>(remaining) : kScanWarpItems;
  const T* warp_in = in + warp_base;
  T* warp_data = tile_data + warp * kScanWarpItems;
  // Striped loads: every load instruction of a warp reads 32 consecutive elements. Every
  // slice but those of the last tile is whole and needs no bounds checks.
  T items[kScanItems];
  if (valid == kScanWarpItems) {
#pragma unroll
    for (int j = 0; j < kScanItems; ++j) items[j] = warp_in[j * 32 + lane];
  } else {
#pragma unroll
    for (int j = 0; j < kScanItems; ++j) items[j] = j * 32 + lane < valid ? warp_in[j * 32 + lane] : T(0);
  }
#pragma unroll
  for (int j = 0; j < kScanItems; ++j) warp_data[j * 32 + lane] = items[j];
  __syncwarp();
  // Blocked scan: lane l owns elements l * kScanItems .. + kScanItems - 1 of its warp's slice,
  // so thread t's elements come after those of threads 0 .. t-1, as the block scan assumes.
  T sum = T(0);
#pragma unroll
  for (int j = 0; j < kScanItems; ++j) {
    sum += warp_data[lane * kScanItems + j];
    items[j] = sum;
  }
  T aggregate;
  const T thread_prefix = block_exclusive_scan(sum, scratch, &aggregate);
  if (t < 32) {
    const T prefix = look_back(tile, aggregate, status);
    if (t == 0) tile_prefix = prefix;
  }
  __syncthreads();
  const T offset = tile_prefix + thread_prefix;
  // Each lane overwrites only the elements it read itself, so no barrier is needed before.
#pragma unroll
  for (int j = 0; j < kScanItems; ++j) {
    warp_data[lane * kScanItems + j] = kInclusive ? offset + items[j] : (j == 0 ? offset : offset + items[j - 1]);
  }
  __syncwarp();
  T* warp_out = out + warp_base;
  if (valid == kScanWarpItems) {
#pragma unroll
    for (int j = 0; j < kScanItems; ++j) warp_out[j * 32 + lane] = warp_data[j * 32 + lane];
  } else {
#pragma unroll
    for (int j = 0; j < kScanItems; ++j) {
      if (j * 32 + lane < valid) warp_out[j * 32 + lane] = warp_data[j * 32 + lane];
    }
  }
}

template <class T, bool kInclusive>
cudaError_t scan_single_pass(const T* d_in, T* d_out, int n, void* d_workspace) {
  if (n <= 0) return cudaSuccess;
  const int tiles = (n + kScanTile - 1) / kScanTile;
  auto* tile_counter = static_cast<unsigned*>(d_workspace);
  auto* status = reinterpret_cast<unsigned long long*>(static_cast<char*>(d_workspace) + kStatusOffset);
  if (const cudaError_t err = cudaMemsetAsync(d_workspace, 0, kStatusOffset + sizeof(unsigned long long) * tiles);
      err != cudaSuccess) {
    return err;
  }
  scan_single_pass_kernel<T, kInclusive><<<tiles, kScanThreads>>>(d_in, d_out, n, tile_counter, status);
  return cudaGetLastError();
}

cudaError_t inclusive_scan(const int* d_in, int* d_out, int n, void* d_workspace) {
  return scan_single_pass<int, true>(d_in, d_out, n, d_workspace);
}

cudaError_t exclusive_scan(const int* d_in, int* d_out, int n, void* d_workspace) {
  return scan_single_pass<int, false>(d_in, d_out, n, d_workspace);
}

cudaError_t inclusive_scan(const float* d_in, float* d_out, int n, void* d_workspace) {
  return scan_single_pass<float, true>(d_in, d_out, n, d_workspace);
}

// ---- Version 4: one global atomic per element -------------------------------------------------------

__global__ void histogram_global_kernel(const unsigned* values, int n, unsigned* bins, unsigned num_bins) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const unsigned v = values[i];
    if (v < num_bins) atomicAdd(&bins[v], 1u);
  }
}

cudaError_t histogram_global_atomics(const unsigned* d_values, int n, unsigned* d_bins, int num_bins) {
  if (const cudaError_t err = cudaMemsetAsync(d_bins, 0, num_bins * sizeof(unsigned)); err != cudaSuccess) return err;
  if (n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  histogram_global_kernel<<<(n + kThreads - 1) / kThreads, kThreads>>>(d_values, n, d_bins, num_bins);
  return cudaGetLastError();
}

// ---- Version 5: privatized histogram in shared memory -----------------------------------------------

// What changed: the block counts into its own histogram in shared memory (fast atomics, and
// only the block's threads collide), then merges it with one global atomic per nonzero bin.
__global__ void histogram_shared_kernel(const unsigned* values, int n, unsigned* bins, unsigned num_bins) {
  extern __shared__ unsigned local_bins[];
  for (unsigned b = threadIdx.x; b < num_bins; b += blockDim.x) local_bins[b] = 0;
  __syncthreads();
  const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const unsigned v = values[i];
    if (v < num_bins) atomicAdd(&local_bins[v], 1u);
  }
  __syncthreads();
  for (unsigned b = threadIdx.x; b < num_bins; b += blockDim.x) {
    const unsigned count = local_bins[b];
    if (count != 0) atomicAdd(&bins[b], count);
  }
}

cudaError_t histogram_shared(const unsigned* d_values, int n, unsigned* d_bins, int num_bins, int num_blocks,
                             int block_size) {
  if (const cudaError_t err = cudaMemsetAsync(d_bins, 0, num_bins * sizeof(unsigned)); err != cudaSuccess) return err;
  histogram_shared_kernel<<<num_blocks, block_size, num_bins * sizeof(unsigned)>>>(d_values, n, d_bins, num_bins);
  return cudaGetLastError();
}

// ---- Final histogram ---------------------------------------------------------------------------------

namespace {
constexpr int kHistogramThreads = 512;
constexpr int kHistogramBlocksPerSM = 2;
constexpr int kHistogramValuesPerThreadMin = 64;  // fewer blocks for small n
}  // namespace

// A thread's run of equal values: `count` values of bin `bin` not yet added to shared memory.
struct BinRun {
  unsigned bin = 0xffffffffu;
  unsigned count = 0;
};

__device__ inline void count_value(unsigned v, unsigned num_bins, BinRun& run, unsigned* local_bins) {
  if (v >= num_bins) return;
  if (v == run.bin) {
    ++run.count;
    return;
  }
  if (run.count != 0) atomicAdd(&local_bins[run.bin], run.count);
  run.bin = v;
  run.count = 1;
}

// Version 5 with 16-byte loads (four values per load) and run-length counting: data with
// long runs of one value (the adversarial all-in-one-bin input) costs one shared atomic per
// run instead of one per value, where every lane of a warp would hit the same address.
__global__ void __launch_bounds__(kHistogramThreads)
    histogram_final_kernel(const unsigned* values, int n, unsigned* bins, unsigned num_bins) {
  extern __shared__ unsigned local_bins[];
  for (unsigned b = threadIdx.x; b < num_bins; b += blockDim.x) local_bins[b] = 0;
  __syncthreads();
  const uint4* values4 = reinterpret_cast<const uint4*>(values);
  const int n4 = n / 4;
  const int stride = blockDim.x * gridDim.x;
  const int first = blockIdx.x * blockDim.x + threadIdx.x;
  BinRun run;
  for (int i = first; i < n4; i += stride) {
    const uint4 q = values4[i];
    count_value(q.x, num_bins, run, local_bins);
    count_value(q.y, num_bins, run, local_bins);
    count_value(q.z, num_bins, run, local_bins);
    count_value(q.w, num_bins, run, local_bins);
  }
  if (4 * n4 + first < n) count_value(values[4 * n4 + first], num_bins, run, local_bins);
  if (run.count != 0) atomicAdd(&local_bins[run.bin], run.count);
  __syncthreads();
  for (unsigned b = threadIdx.x; b < num_bins; b += blockDim.x) {
    const unsigned count = local_bins[b];
    if (count != 0) atomicAdd(&bins[b], count);
  }
}

cudaError_t histogram(const unsigned* d_values, int n, unsigned* d_bins, int num_bins) {
  if (const cudaError_t err = cudaMemsetAsync(d_bins, 0, num_bins * sizeof(unsigned)); err != cudaSuccess) return err;
  if (n <= 0) return cudaSuccess;
  const long long wanted = (static_cast<long long>(n) + kHistogramThreads * kHistogramValuesPerThreadMin - 1) /
                           (kHistogramThreads * kHistogramValuesPerThreadMin);
  const int blocks = static_cast<int>(std::min<long long>(wanted, kHistogramBlocksPerSM * multiprocessors()));
  histogram_final_kernel<<<blocks, kHistogramThreads, num_bins * sizeof(unsigned)>>>(d_values, n, d_bins, num_bins);
  return cudaGetLastError();
}
