// Lab 03 reference solution: parallel reduction.
//
//   1. reduce_sum_interleaved   tree in shared memory, thread t adds sdata[2st + s] into sdata[2st]
//   2. reduce_sum_sequential    thread t < s adds sdata[t + s] into sdata[t]: no bank conflicts
//   3. reduce_sum_first_add     each thread adds two elements while loading: half the blocks
//   4. reduce_sum_warp_shuffle  the last 32 -> 1 steps in registers with __shfl_down_sync
//   5. reduce_sum_grid_stride   one pass: grid-stride loop, block sum, one atomicAdd per block
//   reduce_sum / reduce_max / reduce_min: version 5 with float4 loads, a grid sized for the
//   GPU, and the operation as a template parameter.
//
// Versions 1-4 produce one partial sum per block and run pass after pass on the partial
// sums until one value is left (reduce_in_passes). Version 5 needs a single pass.
#include "reduction.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace {

// Runs passes of a kernel that reduces elements_per_block consecutive elements per block
// into one partial result, until a single value is left; the last pass writes d_out.
// launch_pass(in, count, out, blocks) launches one pass over in[0..count).
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

}  // namespace

// ---- Version 1: interleaved addressing -------------------------------------------------------

// Each block sums blockDim.x consecutive elements. In step s, thread t works on index 2 s t:
// the working threads are contiguous (little divergence), but a warp's addresses are 2 s
// floats apart, so lanes collide in the same shared-memory banks (2-way for s = 1, 4-way
// for s = 2, ...).
__global__ void reduce_interleaved_kernel(const float* in, int n, float* out) {
  extern __shared__ float sdata[];
  const unsigned t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    const unsigned index = 2 * s * t;
    if (index < blockDim.x) sdata[index] += sdata[index + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = sdata[0];
}

cudaError_t reduce_sum_interleaved(const float* d_in, int n, float* d_out, float* d_workspace, int block_size) {
  return reduce_in_passes(d_in, n, d_out, d_workspace, block_size,
                          [&](const float* in, int count, float* out, int blocks) {
                            reduce_interleaved_kernel<<<blocks, block_size, block_size * sizeof(float)>>>(in, count, out);
                          });
}

// ---- Version 2: sequential addressing --------------------------------------------------------

// What changed: in step s, thread t < s adds sdata[t + s] into sdata[t]. A warp reads 32
// consecutive words: 32 different banks, one wavefront.
__global__ void reduce_sequential_kernel(const float* in, int n, float* out) {
  extern __shared__ float sdata[];
  const unsigned t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sdata[t] += sdata[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = sdata[0];
}

cudaError_t reduce_sum_sequential(const float* d_in, int n, float* d_out, float* d_workspace, int block_size) {
  return reduce_in_passes(d_in, n, d_out, d_workspace, block_size,
                          [&](const float* in, int count, float* out, int blocks) {
                            reduce_sequential_kernel<<<blocks, block_size, block_size * sizeof(float)>>>(in, count, out);
                          });
}

// ---- Version 3: first add during load ---------------------------------------------------------

// What changed: a block covers 2 * blockDim.x elements; thread t loads elements t and
// t + blockDim.x of its block's range (two coalesced loads) and stores their sum. Half the
// blocks, half the shared-memory traffic per element; in version 2 half the threads were
// idle from the first step on.
__global__ void reduce_first_add_kernel(const float* in, int n, float* out) {
  extern __shared__ float sdata[];
  const unsigned t = threadIdx.x;
  const int i = blockIdx.x * (2 * blockDim.x) + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  if (i + static_cast<int>(blockDim.x) < n) v += in[i + blockDim.x];
  sdata[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sdata[t] += sdata[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = sdata[0];
}

cudaError_t reduce_sum_first_add(const float* d_in, int n, float* d_out, float* d_workspace, int block_size) {
  return reduce_in_passes(d_in, n, d_out, d_workspace, 2 * block_size,
                          [&](const float* in, int count, float* out, int blocks) {
                            reduce_first_add_kernel<<<blocks, block_size, block_size * sizeof(float)>>>(in, count, out);
                          });
}

// ---- Version 4: warp-shuffle tail ----------------------------------------------------------------

// The sum of the 32 lanes' values lands in lane 0, in five shuffle steps.
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// What changed: the shared-memory tree stops at 64 values; warp 0 adds the two halves and
// finishes in registers. The last five tree steps each cost a __syncthreads() and three
// shared-memory requests for fewer than 32 useful lanes; shuffles need neither.
__global__ void reduce_warp_shuffle_kernel(const float* in, int n, float* out) {
  extern __shared__ float sdata[];
  const unsigned t = threadIdx.x;
  const int i = blockIdx.x * (2 * blockDim.x) + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  if (i + static_cast<int>(blockDim.x) < n) v += in[i + blockDim.x];
  sdata[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {
    if (t < s) sdata[t] += sdata[t + s];
    __syncthreads();
  }
  if (t < 32) {
    v = warp_sum(sdata[t] + sdata[t + 32]);  // blockDim.x >= 64
    if (t == 0) out[blockIdx.x] = v;
  }
}

cudaError_t reduce_sum_warp_shuffle(const float* d_in, int n, float* d_out, float* d_workspace, int block_size) {
  return reduce_in_passes(d_in, n, d_out, d_workspace, 2 * block_size,
                          [&](const float* in, int count, float* out, int blocks) {
                            reduce_warp_shuffle_kernel<<<blocks, block_size, block_size * sizeof(float)>>>(in, count, out);
                          });
}

// ---- Version 5: grid-stride loop, one atomic per block ----------------------------------------------

// The sum of the block's threads' values, valid in thread 0. blockDim.x is a multiple of 32.
__device__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_sum(lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f);
  return v;
}

// What changed: one pass. Any grid covers any n; each thread first sums its own elements
// sequentially (coalesced in every iteration), so the block's tree and its single atomic
// are paid once per block, not once per blockDim.x elements.
__global__ void reduce_grid_stride_kernel(const float* in, int n, float* out) {
  float v = 0.0f;
  const long long stride = static_cast<long long>(blockDim.x) * gridDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += stride) v += in[i];
  v = block_sum(v);
  if (threadIdx.x == 0) atomicAdd(out, v);
}

cudaError_t reduce_sum_grid_stride(const float* d_in, int n, float* d_out, int num_blocks, int block_size) {
  if (const cudaError_t err = cudaMemsetAsync(d_out, 0, sizeof(float)); err != cudaSuccess) return err;
  reduce_grid_stride_kernel<<<num_blocks, block_size>>>(d_in, n, d_out);
  return cudaGetLastError();
}

// ---- Final versions: sum, max, min ---------------------------------------------------------------------

namespace {

struct SumOp {
  __device__ static float identity() { return 0.0f; }
  __device__ static float combine(float a, float b) { return a + b; }
  __device__ static void atomic(float* address, float v) { atomicAdd(address, v); }
};

// Floats with the sign bit clear order like their bit patterns read as int; floats with it
// set order inversely to their bit patterns read as unsigned. So one integer atomic
// computes a float max or min (the result starts at -inf or +inf, never NaN).
struct MaxOp {
  __device__ static float identity() { return -INFINITY; }
  __device__ static float combine(float a, float b) { return fmaxf(a, b); }
  __device__ static void atomic(float* address, float v) {
    if (__float_as_int(v) >= 0) atomicMax(reinterpret_cast<int*>(address), __float_as_int(v));
    else atomicMin(reinterpret_cast<unsigned int*>(address), __float_as_uint(v));
  }
};

struct MinOp {
  __device__ static float identity() { return INFINITY; }
  __device__ static float combine(float a, float b) { return fminf(a, b); }
  __device__ static void atomic(float* address, float v) {
    if (__float_as_int(v) >= 0) atomicMin(reinterpret_cast<int*>(address), __float_as_int(v));
    else atomicMax(reinterpret_cast<unsigned int*>(address), __float_as_uint(v));
  }
};

constexpr int kFinalBlock = 512;
constexpr int kBlocksPerSM = 4;           // 4 x 512 threads: a full H100 multiprocessor
constexpr int kElementsPerThreadMin = 16; // fewer blocks for small n

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

template <class Op>
__device__ float warp_reduce(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, offset));
  return v;
}

template <class Op>
__device__ float block_reduce(float v) {
  __shared__ float warp_results[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce<Op>(v);
  if (lane == 0) warp_results[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_reduce<Op>(lane < blockDim.x / 32 ? warp_results[lane] : Op::identity());
  return v;
}

template <class Op>
__global__ void set_value_kernel(float* out) {
  *out = Op::identity();
}

// Version 5 with 16-byte loads: each thread issues four independent float4 loads per
// iteration (more bytes in flight), then the elements after the last full float4.
template <class Op>
__global__ void reduce_final_kernel(const float* in, int n, float* out) {
  const float4* in4 = reinterpret_cast<const float4*>(in);
  const int n4 = n / 4;
  const int stride = blockDim.x * gridDim.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = Op::identity();
  for (; i + 3 * stride < n4; i += 4 * stride) {
    const float4 a = in4[i], b = in4[i + stride], c = in4[i + 2 * stride], d = in4[i + 3 * stride];
    v = Op::combine(v, Op::combine(Op::combine(Op::combine(a.x, a.y), Op::combine(a.z, a.w)),
                                   Op::combine(Op::combine(b.x, b.y), Op::combine(b.z, b.w))));
    v = Op::combine(v, Op::combine(Op::combine(Op::combine(c.x, c.y), Op::combine(c.z, c.w)),
                                   Op::combine(Op::combine(d.x, d.y), Op::combine(d.z, d.w))));
  }
  for (; i < n4; i += stride) {
    const float4 a = in4[i];
    v = Op::combine(v, Op::combine(Op::combine(a.x, a.y), Op::combine(a.z, a.w)));
  }
  const int tail = 4 * n4 + blockIdx.x * blockDim.x + threadIdx.x;
  if (tail < n) v = Op::combine(v, in[tail]);
  v = block_reduce<Op>(v);
  if (threadIdx.x == 0) Op::atomic(out, v);
}

template <class Op>
cudaError_t reduce_final(const float* d_in, int n, float* d_out) {
  set_value_kernel<Op><<<1, 1>>>(d_out);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess || n <= 0) return err;
  const long long wanted = (static_cast<long long>(n) + kFinalBlock * kElementsPerThreadMin - 1) /
                           (kFinalBlock * kElementsPerThreadMin);
  const int blocks = static_cast<int>(std::min<long long>(wanted, kBlocksPerSM * multiprocessors()));
  reduce_final_kernel<Op><<<blocks, kFinalBlock>>>(d_in, n, d_out);
  return cudaGetLastError();
}

cudaError_t reduce_sum(const float* d_in, int n, float* d_out) { return reduce_final<SumOp>(d_in, n, d_out); }
cudaError_t reduce_max(const float* d_in, int n, float* d_out) { return reduce_final<MaxOp>(d_in, n, d_out); }
cudaError_t reduce_min(const float* d_in, int n, float* d_out) { return reduce_final<MinOp>(d_in, n, d_out); }
