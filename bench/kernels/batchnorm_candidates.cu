// Candidate kernels for lab 07's batchnorm_forward_training (see batchnorm_candidates.h).
//
// Channel c of x is N planes of HW values, cut into chunks of V values (V = 4, one 16-byte load,
// where HW % 4 == 0; else 1): chunk k of the channel is chunk k % (HW / V) of plane k / (HW / V).
// A thread loads kBatch of its chunks before it uses any (64 bytes in flight per thread with
// float4), as the reference does. Every candidate takes a channel's statistics in one fixed order,
// so two runs give the same bits.
#include "batchnorm_candidates.h"

#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "pooling_batchnorm.h"

namespace candidates {
namespace {

namespace cg = cooperative_groups;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kThreads = 256;
constexpr int kBatch = 4;
constexpr int kMaxGridY = 65535;

// ---- shared pieces --------------------------------------------------------------------------------------

template <int V>
struct Layout {
  int C, HW;
  unsigned per_plane;  // chunks in a plane
  unsigned count;      // chunks in a channel
  __device__ std::size_t offset(int c, unsigned k) const {
    const unsigned n = k / per_plane;
    return (static_cast<std::size_t>(n) * C + c) * HW + static_cast<std::size_t>(k - n * per_plane) * V;
  }
};

template <int V>
__device__ void load(const float* p, float (&v)[V]) {
  if constexpr (V == 4) {
    const float4 r = *reinterpret_cast<const float4*>(p);
    v[0] = r.x, v[1] = r.y, v[2] = r.z, v[3] = r.w;
  } else {
    v[0] = *p;
  }
}

template <int V>
__device__ void store(float* p, const float (&v)[V]) {
  if constexpr (V == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    *p = v[0];
  }
}

// Calls f(k, in) for the thread's chunks of [lo, hi), kBatch at a time: chunks lo + t, lo + t +
// step, ... (front to back), or hi - 1 - t, hi - 1 - t - step, ... (back to front); in[u] says
// whether k[u] is one of them.
template <class F>
__device__ void for_each_batch(unsigned lo, unsigned hi, unsigned t, unsigned step, bool back, F f) {
  const unsigned n = hi - lo;
  for (unsigned s = t; s < n; s += kBatch * step) {
    unsigned k[kBatch];
    bool in[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const unsigned d = s + u * step;
      in[u] = d < n;
      k[u] = back ? hi - 1 - d : lo + d;
    }
    f(k, in);
  }
}

// Welford's count, mean and M2; Chan et al.'s combination of two.
struct Welford {
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
};

__device__ Welford combine(Welford a, Welford b) {
  if (b.n == 0.0f) return a;
  if (a.n == 0.0f) return b;
  const float n = a.n + b.n, d = b.mean - a.mean;
  return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n)};
}

// The batch's own mean and M2 from registers (one division), combined into w.
template <int V>
__device__ Welford add_batch(Welford w, const float (&v)[kBatch][V], const bool (&in)[kBatch]) {
  float n = 0.0f, s = 0.0f;
#pragma unroll
  for (int u = 0; u < kBatch; ++u) {
    if (!in[u]) continue;
    n += V;
#pragma unroll
    for (int j = 0; j < V; ++j) s += v[u][j];
  }
  if (n == 0.0f) return w;
  Welford batch{n, s / n, 0.0f};
#pragma unroll
  for (int u = 0; u < kBatch; ++u) {
    if (!in[u]) continue;
#pragma unroll
    for (int j = 0; j < V; ++j) batch.m2 += (v[u][j] - batch.mean) * (v[u][j] - batch.mean);
  }
  return combine(w, batch);
}

__device__ float shfl_xor(float v, int offset) { return __shfl_xor_sync(kFullMask, v, offset); }
__device__ float2 shfl_xor(float2 v, int offset) { return {shfl_xor(v.x, offset), shfl_xor(v.y, offset)}; }
__device__ Welford shfl_xor(Welford w, int offset) {
  return {shfl_xor(w.n, offset), shfl_xor(w.mean, offset), shfl_xor(w.m2, offset)};
}
__device__ Welford combine_values(Welford a, Welford b) { return combine(a, b); }
__device__ float2 combine_values(float2 a, float2 b) { return {a.x + b.x, a.y + b.y}; }

template <class T>
__device__ T warp_reduce(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = combine_values(v, shfl_xor(v, offset));
  return v;
}

// One value per thread reduced over the block (blockDim.x a multiple of 32); every thread gets the
// result. Called by every thread of the block.
template <class T>
__device__ T block_reduce(T v, T identity) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce(v);
  __syncthreads();  // the previous call's readers are done with partial[]
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  return warp_reduce(lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : identity);
}

// A value thread 0 holds, given to the whole block.
template <int K>
__device__ void share(float (&v)[K]) {
  __shared__ float shared[K];
  __syncthreads();  // the previous call's readers are done with shared[]
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) shared[k] = v[k];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = shared[k];
}

// The channel's statistics from its whole (count, mean, M2): save_mean and save_rstd, the running
// statistics, and the (mean, scale, shift) of its normalization.
struct Normalization {
  float mean, scale, shift;
};

__device__ Normalization finish_channel(const BatchNormTraining& a, int c, Welford w, bool writes) {
  const float rstd = 1.0f / sqrtf(w.m2 / w.n + a.eps);  // the biased variance normalizes the batch
  if (writes) {
    a.save_mean[c] = w.mean;
    a.save_rstd[c] = rstd;
    a.running_mean[c] = (1.0f - a.momentum) * a.running_mean[c] + a.momentum * w.mean;
    a.running_var[c] = (1.0f - a.momentum) * a.running_var[c] + a.momentum * (w.m2 / (w.n - 1.0f));  // unbiased
  }
  return {w.mean, rstd * a.gamma[c], a.beta[c]};
}

// y = (x - mean) * scale + shift over the thread's chunks of [lo, hi) of channel c.
template <int V>
__device__ void normalize(const BatchNormTraining& a, const Layout<V>& L, int c, Normalization z, unsigned lo,
                          unsigned hi, unsigned t, unsigned step, bool back) {
  for_each_batch(lo, hi, t, step, back, [&](const unsigned (&k)[kBatch], const bool (&in)[kBatch]) {
    float v[kBatch][V];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (in[u]) load<V>(a.x + L.offset(c, k[u]), v[u]);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (!in[u]) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) v[u][j] = (v[u][j] - z.mean) * z.scale + z.shift;
      store<V>(a.y + L.offset(c, k[u]), v[u]);
    }
  });
}

// The thread's Welford state over its chunks of [lo, hi) of channel c.
template <int V>
__device__ Welford welford_over(const BatchNormTraining& a, const Layout<V>& L, int c, unsigned lo, unsigned hi,
                                unsigned t, unsigned step) {
  Welford w;
  for_each_batch(lo, hi, t, step, false, [&](const unsigned (&k)[kBatch], const bool (&in)[kBatch]) {
    float v[kBatch][V];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (in[u]) load<V>(a.x + L.offset(c, k[u]), v[u]);
    }
    w = add_batch<V>(w, v, in);
  });
  return w;
}

// The slot of partial j of channel c in the workspace (3 floats, as the reference's).
__device__ std::size_t partial_at(int c, int j) { return (static_cast<std::size_t>(c) * kBatchNormSplits + j) * 3; }

template <int V>
Layout<V> layout_of(int N, int C, int HW) {
  const auto per_plane = static_cast<unsigned>(HW / V);
  return {C, HW, per_plane, static_cast<unsigned>(N) * per_plane};
}

int multiprocessors() {
  int device = 0, sms = 1;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  return sms;
}

// Blocks of @p kernel with @p threads each that the GPU holds at once (at least 1). The callers
// keep it in a static: the process's device does not change, and a query per call would be timed
// with the kernels.
template <class Kernel>
int resident_blocks(Kernel* kernel, int threads) {
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    per_sm = 1;
  }
  return std::max(1, per_sm) * multiprocessors();
}

// ---- two kernels: one-wave statistics, finalize folded into the normalization ---------------------------

// Block (b, c) of a (splits, C) grid: chunks b * blockDim.x + t, stepping by splits * blockDim.x.
template <int V>
__global__ void __launch_bounds__(kThreads) two_stats_kernel(BatchNormTraining a, Layout<V> L) {
  const int c = blockIdx.y;
  const unsigned step = gridDim.x * blockDim.x;
  Welford w = welford_over(a, L, c, 0, L.count, blockIdx.x * blockDim.x + threadIdx.x, step);
  w = block_reduce(w, Welford{});
  if (threadIdx.x == 0) {
    float* out = a.workspace + partial_at(c, blockIdx.x);
    out[0] = w.n, out[1] = w.mean, out[2] = w.m2;
  }
}

// Channels last to first (the x the statistics read last is still in L2). Thread 0 combines the
// channel's partials in split order; block 0 of the channel writes the saved and running
// statistics.
template <int V>
__global__ void __launch_bounds__(kThreads) two_normalize_kernel(BatchNormTraining a, Layout<V> L, int splits) {
  const int c = static_cast<int>(gridDim.y - 1 - blockIdx.y);
  float p[3] = {};
  if (threadIdx.x == 0) {
    Welford w;
#pragma unroll 8
    for (int b = 0; b < splits; ++b) {
      const float* in = a.workspace + partial_at(c, b);
      w = combine(w, Welford{in[0], in[1], in[2]});
    }
    const Normalization z = finish_channel(a, c, w, blockIdx.x == 0);
    p[0] = z.mean, p[1] = z.scale, p[2] = z.shift;
  }
  share(p);
  normalize<V>(a, L, c, {p[0], p[1], p[2]}, 0, L.count, blockIdx.x * blockDim.x + threadIdx.x,
               gridDim.x * blockDim.x, false);
}

template <int V>
cudaError_t two_kernels(const BatchNormTraining& a) {
  const Layout<V> L = layout_of<V>(a.N, a.C, a.HW);
  // One wave: as many splits per channel as the blocks the GPU holds allow, none without chunks.
  static const int resident = resident_blocks(two_stats_kernel<V>, kThreads);
  const long long useful = (static_cast<long long>(L.count) + kThreads - 1) / kThreads;
  const int splits = static_cast<int>(std::clamp<long long>(std::min<long long>(resident / a.C, useful), 1,
                                                            kBatchNormSplits));
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(a.C));
  two_stats_kernel<V><<<grid, kThreads>>>(a, L);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  two_normalize_kernel<V><<<grid, kThreads>>>(a, L, splits);
  return cudaGetLastError();
}

// ---- one cooperative kernel ------------------------------------------------------------------------------

// The channel-major chunks (channel c's chunk k is c * count + k) cut into G slices: block b takes
// [b total / G, (b + 1) total / G).
struct Slices {
  long long count, total;
  int G;
  __device__ long long begin(long long b) const { return b * total / G; }
  // The block whose slice holds @p chunk: the largest b with b total / G <= chunk (rounded down).
  __device__ int block_of(long long chunk) const { return static_cast<int>(((chunk + 1) * G - 1) / total); }
};

// The statistics of a slice's part of a channel, as stored in the workspace, and their combination.
template <BatchNormStats S>
struct Partial;

template <>
struct Partial<BatchNormStats::welford> {
  template <int V>
  __device__ static void store(const BatchNormTraining& a, const Layout<V>& L, int c, unsigned lo, unsigned hi,
                               int j) {
    Welford w = welford_over(a, L, c, lo, hi, threadIdx.x, blockDim.x);
    w = block_reduce(w, Welford{});
    if (threadIdx.x == 0) {
      float* out = a.workspace + partial_at(c, j);
      out[0] = w.n, out[1] = w.mean, out[2] = w.m2;
    }
  }
  template <int V>
  __device__ static Welford combined(const BatchNormTraining& a, const Layout<V>&, int c, int parts) {
    Welford w;
#pragma unroll 4
    for (int j = 0; j < parts; ++j) {
      const float* in = a.workspace + partial_at(c, j);
      w = combine(w, Welford{in[0], in[1], in[2]});
    }
    return w;
  }
};

// Sums of d = x - K and d^2, K = x[n = 0][c][0]: without the shift the sum of squares of a
// channel of mean 1e3 and variance 1 would lose the variance to rounding (catastrophic
// cancellation); with it, the squares are of the size of (x - mean)^2 + (mean - K)^2.
template <>
struct Partial<BatchNormStats::shifted_sums> {
  template <int V>
  __device__ static void store(const BatchNormTraining& a, const Layout<V>& L, int c, unsigned lo, unsigned hi,
                               int j) {
    const float shift = a.x[static_cast<std::size_t>(c) * L.HW];
    float2 s{0.0f, 0.0f};
    for_each_batch(lo, hi, threadIdx.x, blockDim.x, false, [&](const unsigned (&k)[kBatch], const bool (&in)[kBatch]) {
      float v[kBatch][V];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        if (in[u]) load<V>(a.x + L.offset(c, k[u]), v[u]);
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        if (!in[u]) continue;
#pragma unroll
        for (int q = 0; q < V; ++q) {
          const float d = v[u][q] - shift;
          s.x += d;
          s.y += d * d;
        }
      }
    });
    s = block_reduce(s, float2{0.0f, 0.0f});
    if (threadIdx.x == 0) {
      float* out = a.workspace + partial_at(c, j);
      out[0] = s.x, out[1] = s.y;
    }
  }
  template <int V>
  __device__ static Welford combined(const BatchNormTraining& a, const Layout<V>& L, int c, int parts) {
    float s1 = 0.0f, s2 = 0.0f;
#pragma unroll 4
    for (int j = 0; j < parts; ++j) {
      const float* in = a.workspace + partial_at(c, j);
      s1 += in[0];
      s2 += in[1];
    }
    const float m = static_cast<float>(L.count) * V, d = s1 / m;
    return {m, a.x[static_cast<std::size_t>(c) * L.HW] + d, fmaxf(s2 - s1 * d, 0.0f)};
  }
};

template <int V, BatchNormStats S>
__global__ void __launch_bounds__(kThreads) cooperative_kernel(BatchNormTraining a, Layout<V> L, Slices sl) {
  const long long lo = sl.begin(blockIdx.x), hi = sl.begin(blockIdx.x + 1LL);
  // The slice's part of each channel it meets, front to back: a partial each, in the channel's
  // slot j = this block - the channel's first block.
  for (long long s0 = lo; s0 < hi;) {
    const int c = static_cast<int>(s0 / sl.count);
    const long long c0 = c * sl.count, s1 = hi < c0 + sl.count ? hi : c0 + sl.count;
    const int j = static_cast<int>(blockIdx.x) - sl.block_of(c0);
    Partial<S>::store(a, L, c, static_cast<unsigned>(s0 - c0), static_cast<unsigned>(s1 - c0), j);
    s0 = s1;
  }
  cg::this_grid().sync();
  // Back to front: the channels' statistics, then their parts of the slice normalized.
  for (long long s1 = hi; s1 > lo;) {
    const int c = static_cast<int>((s1 - 1) / sl.count);
    const long long c0 = c * sl.count, s0 = lo > c0 ? lo : c0;
    const int first = sl.block_of(c0);
    float p[3] = {};
    if (threadIdx.x == 0) {
      const Welford w = Partial<S>::combined(a, L, c, sl.block_of(c0 + sl.count - 1) - first + 1);
      const Normalization z = finish_channel(a, c, w, first == static_cast<int>(blockIdx.x));
      p[0] = z.mean, p[1] = z.scale, p[2] = z.shift;
    }
    share(p);
    normalize<V>(a, L, c, {p[0], p[1], p[2]}, static_cast<unsigned>(s0 - c0), static_cast<unsigned>(s1 - c0),
                 threadIdx.x, blockDim.x, true);
    s1 = s0;
  }
}

template <int V, BatchNormStats S>
cudaError_t cooperative(const BatchNormTraining& a) {
  const Layout<V> L = layout_of<V>(a.N, a.C, a.HW);
  const long long total = static_cast<long long>(a.C) * L.count;
  // Every block resident (grid.sync()); slices of at least count / 16 chunks, so that at most
  // 17 <= kBatchNormSplits blocks meet a channel; at least a chunk per block.
  static const int resident = resident_blocks(cooperative_kernel<V, S>, kThreads);
  const int G = static_cast<int>(std::min<long long>({resident, 16LL * a.C, total}));
  const Slices sl{L.count, total, G};
  void* args[] = {const_cast<BatchNormTraining*>(&a), const_cast<Layout<V>*>(&L), const_cast<Slices*>(&sl)};
  return cudaLaunchCooperativeKernel(cooperative_kernel<V, S>, dim3(static_cast<unsigned>(G)), dim3(kThreads), args);
}

// ---- a block per channel ---------------------------------------------------------------------------------

constexpr int kChannelThreads = 768;

template <int V>
__global__ void __launch_bounds__(kChannelThreads, 2) channel_kernel(BatchNormTraining a, Layout<V> L) {
  const int c = blockIdx.x;
  Welford w = welford_over(a, L, c, 0, L.count, threadIdx.x, blockDim.x);
  w = block_reduce(w, Welford{});
  float p[3] = {};
  if (threadIdx.x == 0) {
    const Normalization z = finish_channel(a, c, w, true);
    p[0] = z.mean, p[1] = z.scale, p[2] = z.shift;
  }
  share(p);
  normalize<V>(a, L, c, {p[0], p[1], p[2]}, 0, L.count, threadIdx.x, blockDim.x, true);
}

template <int V>
cudaError_t block_per_channel(const BatchNormTraining& a) {
  channel_kernel<V><<<static_cast<unsigned>(a.C), kChannelThreads>>>(a, layout_of<V>(a.N, a.C, a.HW));
  return cudaGetLastError();
}

// Within the candidates' limits (see the header)?
bool supported(const BatchNormTraining& a) {
  const long long chunks = static_cast<long long>(a.N) * (a.HW % 4 == 0 ? a.HW / 4 : a.HW);
  return a.C <= kMaxGridY && chunks < (1LL << 31);
}

bool empty(const BatchNormTraining& a) { return a.N <= 0 || a.C <= 0 || a.HW <= 0; }

}  // namespace

cudaError_t batchnorm_training_two_kernels(const BatchNormTraining& a) {
  if (empty(a)) return cudaSuccess;
  if (!supported(a)) return cudaErrorInvalidValue;
  return a.HW % 4 == 0 ? two_kernels<4>(a) : two_kernels<1>(a);
}

cudaError_t batchnorm_training_cooperative(const BatchNormTraining& a, BatchNormStats stats) {
  if (empty(a)) return cudaSuccess;
  if (!supported(a)) return cudaErrorInvalidValue;
  if (stats == BatchNormStats::welford) {
    return a.HW % 4 == 0 ? cooperative<4, BatchNormStats::welford>(a) : cooperative<1, BatchNormStats::welford>(a);
  }
  return a.HW % 4 == 0 ? cooperative<4, BatchNormStats::shifted_sums>(a)
                       : cooperative<1, BatchNormStats::shifted_sums>(a);
}

cudaError_t batchnorm_training_block_per_channel(const BatchNormTraining& a) {
  if (empty(a)) return cudaSuccess;
  if (!supported(a)) return cudaErrorInvalidValue;
  return a.HW % 4 == 0 ? block_per_channel<4>(a) : block_per_channel<1>(a);
}

}  // namespace candidates
