// Candidate kernels for lab 03's reduce_sum (see reduction_candidates.h): each changes one thing
// of the reference's reduce_final_kernel (solutions/03-reduction/reduction.cu).
#include "reduction_candidates.h"

#include <algorithm>

namespace candidates {
namespace {

constexpr int kMaxBlocks = 8 * 256;  // the most blocks any candidate launches (8 per SM, 256 SMs)

int multiprocessors() {
  int device = 0, value = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || value <= 0) {
    (void)cudaGetLastError();
    return 80;
  }
  return value;
}

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// The block's sum in thread 0 (blockDim.x a multiple of 32).
__device__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_sum(lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f);
  return v;
}

__device__ float sum4(float4 a) { return (a.x + a.y) + (a.z + a.w); }

// LOADS independent float4 loads per thread per iteration, then the remaining float4s one at a
// time, then the floats after the last whole float4. The block's sum goes to *out (atomically),
// or to partials[blockIdx.x].
template <int LOADS>
__global__ void reduce_kernel(const float* in, int n, float* out, float* partials) {
  const float4* in4 = reinterpret_cast<const float4*>(in);
  const int n4 = n / 4;
  const int stride = blockDim.x * gridDim.x;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = 0.0f;
  for (; i + (LOADS - 1) * stride < n4; i += LOADS * stride) {
    float4 a[LOADS];
#pragma unroll
    for (int k = 0; k < LOADS; ++k) a[k] = in4[i + k * stride];
#pragma unroll
    for (int k = 0; k < LOADS; ++k) v += sum4(a[k]);
  }
  for (; i < n4; i += stride) v += sum4(in4[i]);
  const int tail = 4 * n4 + blockIdx.x * blockDim.x + threadIdx.x;
  if (tail < n) v += in[tail];
  v = block_sum(v);
  if (threadIdx.x == 0) {
    if (partials != nullptr) partials[blockIdx.x] = v;
    else atomicAdd(out, v);
  }
}

// One block adds the partial sums in index order.
__global__ void add_partials_kernel(const float* partials, int count, float* out) {
  float v = 0.0f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) v += partials[i];
  v = block_sum(v);
  if (threadIdx.x == 0) *out = v;
}

// Every float read with the reference's loads; what is kept is one bit per thread (the XOR of the
// bit patterns), stored only when it cannot be (so the loads are not optimized away).
__global__ void read_kernel(const float* in, int n, float* out) {
  const float4* in4 = reinterpret_cast<const float4*>(in);
  const int n4 = n / 4;
  const int stride = blockDim.x * gridDim.x;
  unsigned bits = 0;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    const float4 a = in4[i], b = in4[i + stride], c = in4[i + 2 * stride], d = in4[i + 3 * stride];
    bits ^= __float_as_uint(a.x) ^ __float_as_uint(a.y) ^ __float_as_uint(a.z) ^ __float_as_uint(a.w) ^
            __float_as_uint(b.x) ^ __float_as_uint(b.y) ^ __float_as_uint(b.z) ^ __float_as_uint(b.w) ^
            __float_as_uint(c.x) ^ __float_as_uint(c.y) ^ __float_as_uint(c.z) ^ __float_as_uint(c.w) ^
            __float_as_uint(d.x) ^ __float_as_uint(d.y) ^ __float_as_uint(d.z) ^ __float_as_uint(d.w);
  }
  for (; i < n4; i += stride) {
    const float4 a = in4[i];
    bits ^= __float_as_uint(a.x) ^ __float_as_uint(a.y) ^ __float_as_uint(a.z) ^ __float_as_uint(a.w);
  }
  if (bits == 0x7fc00001u) *out = 1.0f;  // a NaN payload no input here has
}

constexpr int kThreads = 512;
constexpr int kBlocksPerSM = 4;
constexpr int kElementsPerThreadMin = 16;

int blocks_for(int n, int blocks_per_sm, int threads) {
  const long long wanted = (static_cast<long long>(n) + static_cast<long long>(threads) * kElementsPerThreadMin - 1) /
                           (static_cast<long long>(threads) * kElementsPerThreadMin);
  return static_cast<int>(std::max<long long>(1, std::min<long long>(
      {wanted, static_cast<long long>(blocks_per_sm) * multiprocessors(), static_cast<long long>(kMaxBlocks)})));
}

template <int LOADS>
cudaError_t atomic_reduce(const float* d_in, int n, float* d_out, int blocks_per_sm, int threads) {
  if (const cudaError_t err = cudaMemsetAsync(d_out, 0, sizeof(float)); err != cudaSuccess || n <= 0) return err;
  reduce_kernel<LOADS><<<blocks_for(n, blocks_per_sm, threads), threads>>>(d_in, n, d_out, nullptr);
  return cudaGetLastError();
}

}  // namespace

cudaError_t reduce_memset_init(const float* d_in, int n, float* d_out) {
  return atomic_reduce<4>(d_in, n, d_out, kBlocksPerSM, kThreads);
}

cudaError_t reduce_grid(const float* d_in, int n, float* d_out, int blocks_per_sm, int threads) {
  return atomic_reduce<4>(d_in, n, d_out, blocks_per_sm, threads);
}

cudaError_t reduce_one_load(const float* d_in, int n, float* d_out) {
  return atomic_reduce<1>(d_in, n, d_out, kBlocksPerSM, kThreads);
}

cudaError_t reduce_eight_loads(const float* d_in, int n, float* d_out) {
  return atomic_reduce<8>(d_in, n, d_out, kBlocksPerSM, kThreads);
}

std::size_t partial_floats() { return kMaxBlocks; }

cudaError_t reduce_two_pass(const float* d_in, int n, float* d_out, float* d_partials) {
  if (n <= 0) return cudaMemsetAsync(d_out, 0, sizeof(float));
  const int blocks = blocks_for(n, kBlocksPerSM, kThreads);
  reduce_kernel<4><<<blocks, kThreads>>>(d_in, n, nullptr, d_partials);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  add_partials_kernel<<<1, 1024>>>(d_partials, blocks, d_out);
  return cudaGetLastError();
}

cudaError_t read_ceiling(const float* d_in, int n, float* d_out) {
  if (n <= 0) return cudaSuccess;
  read_kernel<<<blocks_for(n, kBlocksPerSM, kThreads), kThreads>>>(d_in, n, d_out);
  return cudaGetLastError();
}

}  // namespace candidates
