// Lab 03: parallel reduction. Your file: implement the TODOs, then run
//   ./workbook check 03
// The handout is labs/03-reduction/README.md; the interface is reduction.h (do not edit it).
#include "reduction.h"

#include <cuda_runtime.h>

#include <cmath>

// ---- Provided: the multi-pass driver of versions 1-4 (complete, nothing to do) ----------
//
// Runs passes of a kernel that reduces `elements_per_block` consecutive elements per block
// into one partial sum per block, until a single value is left; the last pass writes d_out,
// the others write their partial sums one after another into d_workspace.
// launch_pass(in, count, out, blocks) must launch `blocks` blocks over in[0..count), block b
// writing the sum of in[b * elements_per_block ..] (at most elements_per_block elements,
// fewer in the last block) to out[b].
template <class LaunchPass>
cudaError_t reduce_in_passes(const float* d_in, int n, float* d_out, float* d_workspace, int elements_per_block,
                             LaunchPass launch_pass) {
  if (n <= 0) return cudaMemset(d_out, 0, sizeof(float));  // the empty sum
  const float* in = d_in;
  int count = n;
  float* next = d_workspace;
  while (true) {
    const int blocks = (count + elements_per_block - 1) / elements_per_block;
    float* out = blocks == 1 ? d_out : next;
    launch_pass(in, count, out, blocks);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
    if (blocks == 1) return cudaSuccess;
    in = out;
    count = blocks;
    next += blocks;
  }
}

// ---- Version 1: interleaved addressing -------------------------------------------------------

// TODO(1): each block sums blockDim.x consecutive elements of in[0..n) into out[blockIdx.x].
//   a. Declare the block's shared array: extern __shared__ float sdata[]; (its size is the
//      launch's third parameter, blockDim.x * sizeof(float)).
//   b. Thread t stores in[blockIdx.x * blockDim.x + t] into sdata[t], or 0 past the end of in.
//   c. __syncthreads().
//   d. For s = 1, 2, 4, ... < blockDim.x: index = 2 * s * t; if index < blockDim.x, add
//      sdata[index + s] into sdata[index]; __syncthreads() after every step.
//   e. Thread 0 writes sdata[0] to out[blockIdx.x].
__global__ void reduce_interleaved_kernel(const float* in, int n, float* out) {
}

cudaError_t reduce_sum_interleaved(const float* d_in, int n, float* d_out, float* d_workspace, int block_size) {
  // TODO(2): return reduce_in_passes(d_in, n, d_out, d_workspace, block_size,
  //              [&](const float* in, int count, float* out, int blocks) {
  //                reduce_interleaved_kernel<<<blocks, block_size, block_size * sizeof(float)>>>(in, count, out);
  //              });
  (void)d_in; (void)n; (void)d_out; (void)d_workspace; (void)block_size;
  return cudaErrorNotYetImplemented;
}

// ---- Version 2: sequential addressing --------------------------------------------------------

// TODO(3): version 1 with a different tree: for s = blockDim.x / 2, ..., 1, thread t < s adds
// sdata[t + s] into sdata[t] (__syncthreads() after every step).
__global__ void reduce_sequential_kernel(const float* in, int n, float* out) {
}

cudaError_t reduce_sum_sequential(const float* d_in, int n, float* d_out, float* d_workspace, int block_size) {
  // TODO(4): as TODO(2), with reduce_sequential_kernel.
  (void)d_in; (void)n; (void)d_out; (void)d_workspace; (void)block_size;
  return cudaErrorNotYetImplemented;
}

// ---- Version 3: first add during load ---------------------------------------------------------

// TODO(5): version 2, but each block covers 2 * blockDim.x elements: with
// i = blockIdx.x * 2 * blockDim.x + t, thread t adds in[i] and in[i + blockDim.x] (each
// only when it is < n) and stores the sum into sdata[t].
__global__ void reduce_first_add_kernel(const float* in, int n, float* out) {
}

cudaError_t reduce_sum_first_add(const float* d_in, int n, float* d_out, float* d_workspace, int block_size) {
  // TODO(6): as TODO(2) with reduce_first_add_kernel, and 2 * block_size elements per block.
  (void)d_in; (void)n; (void)d_out; (void)d_workspace; (void)block_size;
  return cudaErrorNotYetImplemented;
}

// ---- Version 4: warp-shuffle tail ----------------------------------------------------------------

// TODO(7): version 3 whose shared-memory loop stops while s > 32. Then threads t < 32 take
// v = sdata[t] + sdata[t + 32] and add v += __shfl_down_sync(0xffffffff, v, offset) for
// offset = 16, 8, 4, 2, 1; lane 0 then holds the block's sum. (blockDim.x >= 64.)
__global__ void reduce_warp_shuffle_kernel(const float* in, int n, float* out) {
}

cudaError_t reduce_sum_warp_shuffle(const float* d_in, int n, float* d_out, float* d_workspace, int block_size) {
  // TODO(8): as TODO(6), with reduce_warp_shuffle_kernel.
  (void)d_in; (void)n; (void)d_out; (void)d_workspace; (void)block_size;
  return cudaErrorNotYetImplemented;
}

// ---- Version 5: grid-stride loop, one atomic per block -------------------------------------------

// TODO(9): one pass over any grid.
//   a. Each thread sums in[i] for i = its global index, + blockDim.x * gridDim.x, ... < n.
//   b. Each warp sums its 32 values with shuffles; lane 0 of each warp stores the warp's
//      sum in a __shared__ float warp_sums[32]; __syncthreads().
//   c. Warp 0 sums the blockDim.x / 32 warp sums with shuffles again.
//   d. Thread 0 adds the block's sum to *out with one atomicAdd(out, sum).
__global__ void reduce_grid_stride_kernel(const float* in, int n, float* out) {
}

cudaError_t reduce_sum_grid_stride(const float* d_in, int n, float* d_out, int num_blocks, int block_size) {
  // TODO(10): set *d_out to 0 (cudaMemsetAsync(d_out, 0, sizeof(float))), launch
  // reduce_grid_stride_kernel with exactly num_blocks x block_size threads, and return
  // cudaGetLastError().
  (void)d_in; (void)n; (void)d_out; (void)num_blocks; (void)block_size;
  return cudaErrorNotYetImplemented;
}

// ---- Final versions ---------------------------------------------------------------------------------

// Provided: float max and min with one integer atomic. Floats with the sign bit clear order
// like their bit patterns read as int; floats with it set order inversely to their bit
// patterns read as unsigned. *address must start at -INFINITY (max) or +INFINITY (min).
__device__ inline void atomic_max_float(float* address, float v) {
  if (__float_as_int(v) >= 0) atomicMax(reinterpret_cast<int*>(address), __float_as_int(v));
  else atomicMin(reinterpret_cast<unsigned int*>(address), __float_as_uint(v));
}

__device__ inline void atomic_min_float(float* address, float v) {
  if (__float_as_int(v) >= 0) atomicMin(reinterpret_cast<int*>(address), __float_as_int(v));
  else atomicMax(reinterpret_cast<unsigned int*>(address), __float_as_uint(v));
}

cudaError_t reduce_sum(const float* d_in, int n, float* d_out) {
  // TODO(11): your fastest sum. Start from version 5: a grid of a few blocks per
  // multiprocessor (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, 0)), but
  // no more blocks than n needs; then try float4 loads (d_in is 16-byte aligned; handle the
  // last n % 4 elements separately) and several independent loads per loop iteration.
  (void)d_in; (void)n; (void)d_out;
  return cudaErrorNotYetImplemented;
}

cudaError_t reduce_max(const float* d_in, int n, float* d_out) {
  // TODO(12): reduce_sum with max instead of +: a template on the operation (identity,
  // combine, atomic) avoids writing the kernel three times. *d_out starts at -INFINITY
  // (a 1-thread kernel can set it; cudaMemset sets bytes, not floats), and n == 0 leaves it
  // there.
  (void)d_in; (void)n; (void)d_out;
  return cudaErrorNotYetImplemented;
}

cudaError_t reduce_min(const float* d_in, int n, float* d_out) {
  // TODO(13): as TODO(12), with min and +INFINITY.
  (void)d_in; (void)n; (void)d_out;
  return cudaErrorNotYetImplemented;
}
