// Lab 07 reference solution, part 2: max and average pooling, batch normalization (NCHW, fp32).
//
//   Pooling kernels: a thread per position of a plane (an output (p, q), or an input pixel (h, w)
//   for the backward) over several planes: blockIdx.x picks the positions, blockIdx.y the first
//   plane, and the thread steps by gridDim.y planes. The position's window (or the outputs that
//   cover the pixel) is worked out once per thread, not once per element: the divisions it takes
//   would otherwise cost more than the memory traffic.
//   maxpool2d_forward       the window clipped to the image (padding never wins), strict > in
//                           row-major order (the first maximum wins ties); windows up to 3 x 3 in
//                           fully unrolled loops, so that all the window's loads issue at once
//   maxpool2d_backward      a thread per input pixel gathers dy from the windows that contain it
//                           and chose it: a fixed order, no atomics; where at most 2 x 2 windows
//                           contain a pixel (R <= 2 stride_h, S <= 2 stride_w), unrolled
//   avgpool2d_forward/back  the same two shapes; divisor R * S or the window's pixels in the image
//   batchnorm_forward_training
//                           1. bn_stats_kernel: a (split, channel) grid; each thread loads
//                              kBatch float4 chunks at once, takes their mean and M2 from
//                              registers, and Chan-combines; one (count, mean, M2) partial per
//                              block in the workspace
//                           2. bn_finalize_kernel: a thread per channel combines its partials in
//                              split order; mean, rstd, saved and running statistics
//                           3. bn_normalize_kernel: y = (x - mean) * rstd * gamma + beta, over the
//                              channels in the reverse order: the x that pass 1 read last is still
//                              in L2 when pass 3 starts
//                           x is read twice (the least without keeping it on chip), y written once
//   batchnorm_forward_inference
//                           the normalizing pass of training with the running statistics
//   Batch-norm blocks read their channel's parameters once (thread 0, shared with the block), and
//   use float4 loads where planes are 16-byte aligned (HW % 4 == 0).
//   batchnorm_backward      the same split: partial sums of dy and dy * (x - mean) per block, summed
//                           in split order per channel (dbeta, dgamma), then dx (channels reversed):
//                           x and dy read twice
//
// Every block-wide reduction goes through block_reduce(): warp shuffles, one value per warp in
// shared memory, then every warp reduces those values itself. Block sizes are multiples of 32.
#include "pooling_batchnorm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kThreads = 256;
// gridDim.y is at most 65535.
constexpr int kMaxGridY = 65535;

// ---- pooling ----------------------------------------------------------------------------------------

// Planes a pooling thread takes. The forward's per-thread setup is one division and its loads
// need no other loads first, so 2 planes (many short blocks: no long tail while the last ones
// run). The backward's setup is three divisions and its dy loads wait for its argmax loads, so 8
// planes, whose argmax loads the 2 x 2 kernel issues all at once.
constexpr int kForwardPlanes = 2, kBackwardPlanes = 8;

// Blocks of kThreads positions of a plane along x; along y, one block per @p per_thread planes:
// block row b takes planes b, b + gridDim.y, b + 2 gridDim.y, ...
dim3 pool_grid(int positions, long long planes, int per_thread) {
  const long long rows = (planes + per_thread - 1) / per_thread;
  return dim3((positions + kThreads - 1) / kThreads, static_cast<unsigned>(std::min<long long>(rows, kMaxGridY)));
}

// The window of output (p, q) clipped to the image: rows [h0, h1), columns [w0, w1).
struct Window {
  int h0, h1, w0, w1;
  __device__ Window(const PoolParams& s, int p, int q) {
    const int hs = p * s.stride_h - s.pad_h, ws = q * s.stride_w - s.pad_w;
    h0 = max(hs, 0);
    h1 = min(hs + s.R, s.H);
    w0 = max(ws, 0);
    w1 = min(ws + s.S, s.W);
  }
  __device__ int pixels() const { return (h1 - h0) * (w1 - w0); }
};

// The outputs whose windows contain pixel (h, w): rows [p0, p1], columns [q0, q1] (empty when a
// stride larger than the window skips the pixel, or the floored output size drops it). At most
// ceil(R / stride_h) rows and ceil(S / stride_w) columns.
struct Covering {
  int p0, p1, q0, q1;
  __device__ Covering(const PoolParams& s, int P, int Q, int h, int w) {
    p0 = h + s.pad_h < s.R ? 0 : (h + s.pad_h - s.R) / s.stride_h + 1;
    p1 = min((h + s.pad_h) / s.stride_h, P - 1);
    q0 = w + s.pad_w < s.S ? 0 : (w + s.pad_w - s.S) / s.stride_w + 1;
    q1 = min((w + s.pad_w) / s.stride_w, Q - 1);
  }
};

// One step of the max-pooling scan, in row-major window order. Strict: on a tie the first pixel
// stays.
__device__ void consider(float v, int at, float& best, int& best_at) {
  if (v > best) {
    best = v;
    best_at = at;
  }
}

// Max pooling, any window: output j = p * Q + q of planes blockIdx.y, blockIdx.y + gridDim.y, ...
// Consecutive threads take consecutive outputs of a row: a warp's loads of one window offset
// (r, s) lie within 32 * stride_w consecutive floats, its stores are 32 consecutive floats.
__global__ void __launch_bounds__(kThreads)
    maxpool_forward_kernel(PoolParams s, int P, int Q, int planes, const float* __restrict__ x,
                           float* __restrict__ y, int* __restrict__ argmax) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= P * Q) return;
  const Window win(s, j / Q, j % Q);
  for (int n = blockIdx.y; n < planes; n += gridDim.y) {
    const float* plane = x + static_cast<std::size_t>(n) * s.H * s.W;
    float best = -INFINITY;
    int best_at = win.h0 * s.W + win.w0;  // also the answer for a window of -inf only
    for (int h = win.h0; h < win.h1; ++h) {
      for (int w = win.w0; w < win.w1; ++w) consider(plane[h * s.W + w], h * s.W + w, best, best_at);
    }
    const std::size_t o = static_cast<std::size_t>(n) * P * Q + j;
    y[o] = best;
    argmax[o] = best_at;
  }
}

// Max pooling, windows of at most kR x kS (3 x 3: ResNet's and VGG's): the same outputs, but each
// window is first loaded into registers (all its loads in flight at once; pixels outside the
// clipped window are not read), then scanned.
template <int kR, int kS>
__global__ void __launch_bounds__(kThreads)
    maxpool_forward_small_kernel(PoolParams s, int P, int Q, int planes, const float* __restrict__ x,
                                 float* __restrict__ y, int* __restrict__ argmax) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= P * Q) return;
  const Window win(s, j / Q, j % Q);
  for (int n = blockIdx.y; n < planes; n += gridDim.y) {
    const float* plane = x + static_cast<std::size_t>(n) * s.H * s.W;
    float v[kR][kS];
#pragma unroll
    for (int r = 0; r < kR; ++r) {
#pragma unroll
      for (int t = 0; t < kS; ++t) {
        const int h = win.h0 + r, w = win.w0 + t;
        if (h < win.h1 && w < win.w1) v[r][t] = plane[h * s.W + w];
      }
    }
    float best = -INFINITY;
    int best_at = win.h0 * s.W + win.w0;  // also the answer for a window of -inf only
#pragma unroll
    for (int r = 0; r < kR; ++r) {
#pragma unroll
      for (int t = 0; t < kS; ++t) {
        const int h = win.h0 + r, w = win.w0 + t;
        if (h < win.h1 && w < win.w1) consider(v[r][t], h * s.W + w, best, best_at);
      }
    }
    const std::size_t o = static_cast<std::size_t>(n) * P * Q + j;
    y[o] = best;
    argmax[o] = best_at;
  }
}

// dx[h][w] = the sum of dy over the windows containing (h, w) whose argmax is (h, w), in (p, q)
// order; pixel j = h * W + w of planes blockIdx.y, blockIdx.y + gridDim.y, ... dy is read only
// where the argmax matches: once per output in all. Any window.
__global__ void __launch_bounds__(kThreads)
    maxpool_backward_kernel(PoolParams s, int P, int Q, int planes, const float* __restrict__ dy,
                            const int* __restrict__ argmax, float* __restrict__ dx) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= s.H * s.W) return;
  const Covering cov(s, P, Q, j / s.W, j % s.W);
  for (int n = blockIdx.y; n < planes; n += gridDim.y) {
    const std::size_t plane = static_cast<std::size_t>(n) * P * Q;
    float sum = 0.0f;
    for (int p = cov.p0; p <= cov.p1; ++p) {
      for (int q = cov.q0; q <= cov.q1; ++q) {
        const std::size_t o = plane + static_cast<std::size_t>(p) * Q + q;
        if (argmax[o] == j) sum += dy[o];
      }
    }
    dx[static_cast<std::size_t>(n) * s.H * s.W + j] = sum;
  }
}

// The same where at most 2 x 2 windows contain a pixel (R <= 2 stride_h and S <= 2 stride_w: 3 x 3
// stride 2, 2 x 2 stride 2). The windows that may contain row h are p1 = (h + pad_h) / stride_h,
// the last one starting at or above it, and p1 - 1; each does if it exists (0 <= p < P) and
// reaches down to h: one division per axis instead of Covering's two. The thread loads the
// argmax of every (plane, window) pair of its kBackwardPlanes planes at once, then dy where it
// matches: two round trips to memory for all of them instead of two per window.
__global__ void __launch_bounds__(kThreads)
    maxpool_backward_2x2_kernel(PoolParams s, int P, int Q, int planes, const float* __restrict__ dy,
                                const int* __restrict__ argmax, float* __restrict__ dx) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= s.H * s.W) return;
  const int h = j / s.W, w = j % s.W;
  const int p1 = (h + s.pad_h) / s.stride_h, q1 = (w + s.pad_w) / s.stride_w;
  bool row[2], col[2];  // row[a]: window p1 - 1 + a contains row h; col[b]: window q1 - 1 + b column w
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int p = p1 - 1 + k, q = q1 - 1 + k;
    row[k] = p >= 0 && p < P && p * s.stride_h - s.pad_h + s.R > h;
    col[k] = q >= 0 && q < Q && q * s.stride_w - s.pad_w + s.S > w;
  }
  for (int n0 = blockIdx.y; n0 < planes; n0 += kBackwardPlanes * gridDim.y) {
    int chosen[kBackwardPlanes][2][2];  // argmax[p][q], or -1 (no such window: matches no pixel)
#pragma unroll
    for (int i = 0; i < kBackwardPlanes; ++i) {
      const int n = n0 + i * gridDim.y;
      const int* plane = argmax + static_cast<std::size_t>(n) * P * Q;
#pragma unroll
      for (int a = 0; a < 2; ++a) {
#pragma unroll
        for (int b = 0; b < 2; ++b) {
          chosen[i][a][b] = n < planes && row[a] && col[b] ? plane[(p1 - 1 + a) * Q + q1 - 1 + b] : -1;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kBackwardPlanes; ++i) {
      const int n = n0 + i * gridDim.y;
      if (n >= planes) break;
      const float* plane = dy + static_cast<std::size_t>(n) * P * Q;
      float sum = 0.0f;
#pragma unroll
      for (int a = 0; a < 2; ++a) {
#pragma unroll
        for (int b = 0; b < 2; ++b) {
          if (chosen[i][a][b] == j) sum += plane[(p1 - 1 + a) * Q + q1 - 1 + b];
        }
      }
      dx[static_cast<std::size_t>(n) * s.H * s.W + j] = sum;
    }
  }
}

__device__ float avg_divisor(const PoolParams& s, const Window& win, int count_include_pad) {
  return static_cast<float>(count_include_pad ? s.R * s.S : win.pixels());
}

// Output j = p * Q + q of each of the thread's planes, as the max-pooling forward (runtime loops).
__global__ void __launch_bounds__(kThreads)
    avgpool_forward_kernel(PoolParams s, int P, int Q, int planes, const float* __restrict__ x,
                           float* __restrict__ y, int count_include_pad) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= P * Q) return;
  const Window win(s, j / Q, j % Q);
  const float divisor = avg_divisor(s, win, count_include_pad);
  for (int n = blockIdx.y; n < planes; n += gridDim.y) {
    const float* plane = x + static_cast<std::size_t>(n) * s.H * s.W;
    float sum = 0.0f;
    for (int h = win.h0; h < win.h1; ++h) {
      for (int w = win.w0; w < win.w1; ++w) sum += plane[h * s.W + w];
    }
    y[static_cast<std::size_t>(n) * P * Q + j] = sum / divisor;
  }
}

// Pixel j = h * W + w of each of the thread's planes, as the max-pooling backward (runtime loops).
__global__ void __launch_bounds__(kThreads)
    avgpool_backward_kernel(PoolParams s, int P, int Q, int planes, const float* __restrict__ dy,
                            float* __restrict__ dx, int count_include_pad) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= s.H * s.W) return;
  const Covering cov(s, P, Q, j / s.W, j % s.W);
  for (int n = blockIdx.y; n < planes; n += gridDim.y) {
    const std::size_t plane = static_cast<std::size_t>(n) * P * Q;
    float sum = 0.0f;
    for (int p = cov.p0; p <= cov.p1; ++p) {
      for (int q = cov.q0; q <= cov.q1; ++q) {
        sum += dy[plane + static_cast<std::size_t>(p) * Q + q] / avg_divisor(s, Window(s, p, q), count_include_pad);
      }
    }
    dx[static_cast<std::size_t>(n) * s.H * s.W + j] = sum;
  }
}

// ---- block reductions -----------------------------------------------------------------------------

__device__ float shfl_xor(float v, int offset) { return __shfl_xor_sync(kFullMask, v, offset); }
__device__ float2 shfl_xor(float2 v, int offset) { return {shfl_xor(v.x, offset), shfl_xor(v.y, offset)}; }

template <class V, class Combine>
__device__ V warp_reduce(V v, Combine combine) {
  for (int offset = 16; offset > 0; offset >>= 1) v = combine(v, shfl_xor(v, offset));
  return v;
}

// Reduces one value per thread over the block; every thread gets the result.
template <class V, class Combine>
__device__ V block_reduce(V v, Combine combine, V identity) {
  __shared__ V partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce(v, combine);
  __syncthreads();  // the previous call's readers are done with partial[]
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  return warp_reduce(lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : identity, combine);
}

// Welford's count, mean and sum of squared deviations (M2); Chan et al.'s combination of two.
struct Welford {
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
};

__device__ Welford combine(Welford a, Welford b) {
  if (b.n == 0.0f) return a;
  if (a.n == 0.0f) return b;
  const float n = a.n + b.n, d = b.mean - a.mean;
  return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n)};
}

__device__ Welford shfl_xor(Welford w, int offset) {
  return {shfl_xor(w.n, offset), shfl_xor(w.mean, offset), shfl_xor(w.m2, offset)};
}

// ---- batch normalization: a channel's values in chunks ------------------------------------------------
//
// Channel c of x is N planes of HW values. Cut into chunks of V values (V = 4 where HW % 4 == 0,
// so that each chunk is one 16-byte load, else 1), chunk k of the channel is chunk k % (HW / V)
// of plane k / (HW / V). Block (b, c) of a (splits, C) grid takes chunks b * blockDim.x +
// threadIdx.x, stepping by splits * blockDim.x: consecutive threads on consecutive chunks. A
// thread loads kBatch of its chunks before it uses any, so that each thread has kBatch * 16 bytes
// in flight: a memory-bound kernel needs many bytes in flight per SM to cover DRAM's latency.

// A batch-norm block takes about this many values of its channel: a few batches per thread, so that
// the block's reduction and parameter loads are paid for by enough traffic, and still (splits x C)
// blocks to fill the GPU several times (32 x 56 x 56: 13 splits, 3328 blocks for C = 256).
constexpr long long kValuesPerBlock = 8192;
constexpr int kBatch = 4;

template <int V>
struct Chunks {
  int C, HW, per_plane;
  long long count;        // chunks in a channel
  int c0 = 0;             // the channel of the slice's first grid row (see for_each_slice)
  bool reversed = false;  // the grid's rows take the slice's channels last to first
  __device__ int channel() const {
    return c0 + static_cast<int>(reversed ? gridDim.y - 1 - blockIdx.y : blockIdx.y);
  }
  // The thread's first chunk and its stride.
  __device__ long long first() const { return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; }
  __device__ long long step() const { return static_cast<long long>(gridDim.x) * blockDim.x; }
  __device__ std::size_t offset(int c, long long k) const {
    const long long n = k / per_plane;
    return (static_cast<std::size_t>(n) * C + c) * HW + static_cast<std::size_t>(k - n * per_plane) * V;
  }
};

template <int V>
Chunks<V> chunks_of(int N, int C, int HW) {
  return {C, HW, HW / V, static_cast<long long>(N) * (HW / V)};
}

template <int V>
__device__ void load(const float* p, float* v) {
  if constexpr (V == 4) {
    const float4 r = *reinterpret_cast<const float4*>(p);
    v[0] = r.x, v[1] = r.y, v[2] = r.z, v[3] = r.w;
  } else {
    v[0] = *p;
  }
}

template <int V>
__device__ void store(float* p, const float* v) {
  if constexpr (V == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    *p = v[0];
  }
}

// Partial (count, mean, M2) of block b of channel c, and the two partial sums of the backward.
__device__ std::size_t partial_at(int c, int b) { return (static_cast<std::size_t>(c) * kBatchNormSplits + b) * 3; }

template <int V>
__global__ void __launch_bounds__(kThreads) bn_stats_kernel(Chunks<V> ch, const float* __restrict__ x,
                                                            float* __restrict__ workspace) {
  const int c = ch.channel();
  const long long step = ch.step();
  Welford w;
  for (long long k = ch.first(); k < ch.count; k += kBatch * step) {
    float v[kBatch][V];
    bool in[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      in[u] = k + u * step < ch.count;
      if (in[u]) load<V>(x + ch.offset(c, k + u * step), v[u]);
    }
    // The batch's own mean and M2 (two passes over registers), then Chan's combination: one
    // division per batch instead of one per value.
    float n = 0.0f, s = 0.0f;
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (!in[u]) continue;
      n += V;
#pragma unroll
      for (int j = 0; j < V; ++j) s += v[u][j];
    }
    Welford batch{n, s / n, 0.0f};
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (!in[u]) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) batch.m2 += (v[u][j] - batch.mean) * (v[u][j] - batch.mean);
    }
    w = combine(w, batch);
  }
  w = block_reduce(w, [](Welford a, Welford b) { return combine(a, b); }, Welford{});
  if (threadIdx.x == 0) {
    float* out = workspace + partial_at(c, blockIdx.x);
    out[0] = w.n;
    out[1] = w.mean;
    out[2] = w.m2;
  }
}

// A thread per channel: the partials combined in split order (the same bits every run). Unrolled
// so that several partials' loads are in flight at once rather than one L2 round trip per split.
__global__ void bn_finalize_kernel(int C, int splits, float momentum, float eps, const float* workspace,
                                   float* save_mean, float* save_rstd, float* running_mean, float* running_var) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  Welford w;
#pragma unroll 8
  for (int b = 0; b < splits; ++b) {
    const float* in = workspace + partial_at(c, b);
    w = combine(w, Welford{in[0], in[1], in[2]});
  }
  const float var = w.m2 / w.n;  // biased: normalizes the batch
  save_mean[c] = w.mean;
  save_rstd[c] = 1.0f / sqrtf(var + eps);
  running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * w.mean;
  running_var[c] = (1.0f - momentum) * running_var[c] + momentum * (w.m2 / (w.n - 1.0f));  // unbiased
}

// The channel's parameters, read by thread 0 and shared with the block: one load each instead of
// one per thread.
template <int K>
__device__ void share(float (&v)[K]) {
  __shared__ float shared[K];
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < K; ++k) shared[k] = v[k];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < K; ++k) v[k] = shared[k];
}

// y = (x - mu) * scale + shift over the block's chunks of channel c, kBatch chunks loaded before
// any is stored.
template <int V>
__device__ void normalize_chunks(const Chunks<V>& ch, int c, const float* __restrict__ x, float mu, float scale,
                                 float shift, float* __restrict__ y) {
  const long long step = ch.step();
  for (long long k = ch.first(); k < ch.count; k += kBatch * step) {
    float v[kBatch][V];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (k + u * step < ch.count) load<V>(x + ch.offset(c, k + u * step), v[u]);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (k + u * step >= ch.count) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) v[u][j] = (v[u][j] - mu) * scale + shift;
      store<V>(y + ch.offset(c, k + u * step), v[u]);
    }
  }
}

template <int V>
__global__ void __launch_bounds__(kThreads)
    bn_normalize_kernel(Chunks<V> ch, const float* __restrict__ x, const float* gamma, const float* beta,
                        const float* mean, const float* rstd, float* __restrict__ y) {
  const int c = ch.channel();
  float p[3] = {};
  if (threadIdx.x == 0) p[0] = mean[c], p[1] = rstd[c] * gamma[c], p[2] = beta[c];
  share(p);
  normalize_chunks(ch, c, x, p[0], p[1], p[2], y);
}

// Inference: the training's normalizing pass with the running statistics.
template <int V>
__global__ void __launch_bounds__(kThreads)
    bn_inference_kernel(Chunks<V> ch, const float* __restrict__ x, const float* gamma, const float* beta,
                        const float* running_mean, const float* running_var, float eps, float* __restrict__ y) {
  const int c = ch.channel();
  float p[3] = {};
  if (threadIdx.x == 0) p[0] = running_mean[c], p[1] = gamma[c] * rsqrtf(running_var[c] + eps), p[2] = beta[c];
  share(p);
  normalize_chunks(ch, c, x, p[0], p[1], p[2], y);
}

// Backward, pass 1: per block, the sums of dy and dy * (x - mean) over its chunks.
template <int V>
__global__ void __launch_bounds__(kThreads)
    bn_backward_sums_kernel(Chunks<V> ch, const float* __restrict__ dy, const float* __restrict__ x,
                            const float* mean, float* __restrict__ workspace) {
  const int c = ch.channel();
  float p[1] = {};
  if (threadIdx.x == 0) p[0] = mean[c];
  share(p);
  const float mu = p[0];
  const long long step = ch.step();
  float2 s{0.0f, 0.0f};
  for (long long k = ch.first(); k < ch.count; k += kBatch * step) {
    float d[kBatch][V], v[kBatch][V];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (k + u * step >= ch.count) continue;
      const std::size_t o = ch.offset(c, k + u * step);
      load<V>(dy + o, d[u]);
      load<V>(x + o, v[u]);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (k + u * step >= ch.count) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        s.x += d[u][j];
        s.y += d[u][j] * (v[u][j] - mu);
      }
    }
  }
  s = block_reduce(s, [](float2 a, float2 b) { return float2{a.x + b.x, a.y + b.y}; }, float2{0.0f, 0.0f});
  if (threadIdx.x == 0) {
    float* out = workspace + partial_at(c, blockIdx.x);
    out[0] = s.x;
    out[1] = s.y;
  }
}

// A thread per channel: dbeta = sum dy, dgamma = rstd * sum dy (x - mean), partials in split order.
__global__ void bn_backward_finalize_kernel(int C, int splits, const float* workspace, const float* rstd,
                                            float* dgamma, float* dbeta) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float sdy = 0.0f, sdyx = 0.0f;
#pragma unroll 8
  for (int b = 0; b < splits; ++b) {
    const float* in = workspace + partial_at(c, b);
    sdy += in[0];
    sdyx += in[1];
  }
  dbeta[c] = sdy;
  dgamma[c] = sdyx * rstd[c];
}

// Backward, pass 2: dx = gamma rstd (dy - dbeta / M - xhat dgamma / M).
template <int V>
__global__ void __launch_bounds__(kThreads)
    bn_backward_dx_kernel(Chunks<V> ch, float inv_m, const float* __restrict__ dy, const float* __restrict__ x,
                          const float* gamma, const float* mean, const float* rstd, const float* dgamma,
                          const float* dbeta, float* __restrict__ dx) {
  const int c = ch.channel();
  float p[5] = {};
  if (threadIdx.x == 0) p[0] = mean[c], p[1] = rstd[c], p[2] = gamma[c] * rstd[c], p[3] = dbeta[c] * inv_m,
                        p[4] = dgamma[c] * inv_m;
  share(p);
  const float mu = p[0], rs = p[1], a = p[2], mean_dy = p[3], mean_dyxhat = p[4];
  const long long step = ch.step();
  for (long long k = ch.first(); k < ch.count; k += kBatch * step) {
    float d[kBatch][V], v[kBatch][V];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (k + u * step >= ch.count) continue;
      const std::size_t o = ch.offset(c, k + u * step);
      load<V>(dy + o, d[u]);
      load<V>(x + o, v[u]);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (k + u * step >= ch.count) continue;
#pragma unroll
      for (int j = 0; j < V; ++j) v[u][j] = a * (d[u][j] - mean_dy - (v[u][j] - mu) * rs * mean_dyxhat);
      store<V>(dx + ch.offset(c, k + u * step), v[u]);
    }
  }
}

// Launches launch(ch, grid) for every slice of at most kMaxGridY channels (gridDim.y's limit), the
// grid (splits, channels of the slice). reversed: the slices, and the channels within each, last
// to first. The second pass over x runs reversed: it starts on the channels the first pass read
// last, which are still in L2 (50 MB on an H100), and ends on channel 0, where the next call's
// first pass starts.
template <int V, class Launch>
cudaError_t for_each_slice(Chunks<V> ch, int splits, bool reversed, Launch launch) {
  const int slices = (ch.C + kMaxGridY - 1) / kMaxGridY;
  for (int i = 0; i < slices; ++i) {
    ch.c0 = (reversed ? slices - 1 - i : i) * kMaxGridY;
    ch.reversed = reversed;
    launch(ch, dim3(splits, std::min(ch.C - ch.c0, kMaxGridY)));
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

// Splits of a channel of M values: about kValuesPerBlock each, at most kBatchNormSplits.
int splits_for(long long m) {
  return static_cast<int>(std::clamp((m + kValuesPerBlock - 1) / kValuesPerBlock, 1LL,
                                     static_cast<long long>(kBatchNormSplits)));
}

template <int V>
cudaError_t bn_training(int N, int C, int HW, const float* x, const float* gamma, const float* beta, float momentum,
                        float eps, float* y, float* save_mean, float* save_rstd, float* running_mean,
                        float* running_var, float* workspace) {
  const Chunks<V> ch = chunks_of<V>(N, C, HW);
  const int splits = splits_for(static_cast<long long>(N) * HW);
  cudaError_t err = for_each_slice(ch, splits, false, [&](Chunks<V> slice, dim3 grid) {
    bn_stats_kernel<V><<<grid, kThreads>>>(slice, x, workspace);
  });
  if (err != cudaSuccess) return err;
  bn_finalize_kernel<<<(C + 127) / 128, 128>>>(C, splits, momentum, eps, workspace, save_mean, save_rstd,
                                               running_mean, running_var);
  if (err = cudaGetLastError(); err != cudaSuccess) return err;
  return for_each_slice(ch, splits, true, [&](Chunks<V> slice, dim3 grid) {
    bn_normalize_kernel<V><<<grid, kThreads>>>(slice, x, gamma, beta, save_mean, save_rstd, y);
  });
}

template <int V>
cudaError_t bn_inference(int N, int C, int HW, const float* x, const float* gamma, const float* beta,
                         const float* running_mean, const float* running_var, float eps, float* y) {
  const Chunks<V> ch = chunks_of<V>(N, C, HW);
  return for_each_slice(ch, splits_for(static_cast<long long>(N) * HW), false, [&](Chunks<V> slice, dim3 grid) {
    bn_inference_kernel<V><<<grid, kThreads>>>(slice, x, gamma, beta, running_mean, running_var, eps, y);
  });
}

template <int V>
cudaError_t bn_backward(int N, int C, int HW, const float* dy, const float* x, const float* gamma,
                        const float* save_mean, const float* save_rstd, float* dx, float* dgamma, float* dbeta,
                        float* workspace) {
  const Chunks<V> ch = chunks_of<V>(N, C, HW);
  const long long m = static_cast<long long>(N) * HW;
  const int splits = splits_for(m);
  cudaError_t err = for_each_slice(ch, splits, false, [&](Chunks<V> slice, dim3 grid) {
    bn_backward_sums_kernel<V><<<grid, kThreads>>>(slice, dy, x, save_mean, workspace);
  });
  if (err != cudaSuccess) return err;
  bn_backward_finalize_kernel<<<(C + 127) / 128, 128>>>(C, splits, workspace, save_rstd, dgamma, dbeta);
  if (err = cudaGetLastError(); err != cudaSuccess) return err;
  const float inv_m = static_cast<float>(1.0 / static_cast<double>(m));
  return for_each_slice(ch, splits, true, [&](Chunks<V> slice, dim3 grid) {
    bn_backward_dx_kernel<V><<<grid, kThreads>>>(slice, inv_m, dy, x, gamma, save_mean, save_rstd, dgamma, dbeta, dx);
  });
}

}  // namespace

// ---- the interface ---------------------------------------------------------------------------------------

cudaError_t maxpool2d_forward(PoolParams p, const float* x, float* y, int* argmax) {
  const int P = pool_out_h(p), Q = pool_out_w(p);
  const long long planes = static_cast<long long>(p.N) * p.C;
  if (planes == 0) return cudaSuccess;
  const dim3 grid = pool_grid(P * Q, planes, kForwardPlanes);
  if (p.R <= 3 && p.S <= 3) {
    maxpool_forward_small_kernel<3, 3><<<grid, kThreads>>>(p, P, Q, static_cast<int>(planes), x, y, argmax);
  } else {
    maxpool_forward_kernel<<<grid, kThreads>>>(p, P, Q, static_cast<int>(planes), x, y, argmax);
  }
  return cudaGetLastError();
}

cudaError_t maxpool2d_backward(PoolParams p, const float* dy, const int* argmax, float* dx) {
  const int P = pool_out_h(p), Q = pool_out_w(p);
  const long long planes = static_cast<long long>(p.N) * p.C;
  if (planes == 0) return cudaSuccess;
  const dim3 grid = pool_grid(p.H * p.W, planes, kBackwardPlanes);
  if (p.R <= 2 * p.stride_h && p.S <= 2 * p.stride_w) {
    maxpool_backward_2x2_kernel<<<grid, kThreads>>>(p, P, Q, static_cast<int>(planes), dy, argmax, dx);
  } else {
    maxpool_backward_kernel<<<grid, kThreads>>>(p, P, Q, static_cast<int>(planes), dy, argmax, dx);
  }
  return cudaGetLastError();
}

cudaError_t avgpool2d_forward(PoolParams p, const float* x, float* y, int count_include_pad) {
  const int P = pool_out_h(p), Q = pool_out_w(p);
  const long long planes = static_cast<long long>(p.N) * p.C;
  if (planes == 0) return cudaSuccess;
  const dim3 grid = pool_grid(P * Q, planes, kForwardPlanes);
  avgpool_forward_kernel<<<grid, kThreads>>>(p, P, Q, static_cast<int>(planes), x, y, count_include_pad);
  return cudaGetLastError();
}

cudaError_t avgpool2d_backward(PoolParams p, const float* dy, float* dx, int count_include_pad) {
  const int P = pool_out_h(p), Q = pool_out_w(p);
  const long long planes = static_cast<long long>(p.N) * p.C;
  if (planes == 0) return cudaSuccess;
  const dim3 grid = pool_grid(p.H * p.W, planes, kBackwardPlanes);
  avgpool_backward_kernel<<<grid, kThreads>>>(p, P, Q, static_cast<int>(planes), dy, dx, count_include_pad);
  return cudaGetLastError();
}

cudaError_t batchnorm_forward_training(int N, int C, int HW, const float* x, const float* gamma, const float* beta,
                                       float momentum, float eps, float* y, float* save_mean, float* save_rstd,
                                       float* running_mean, float* running_var, float* workspace) {
  if (N <= 0 || C <= 0 || HW <= 0) return cudaSuccess;
  return HW % 4 == 0 ? bn_training<4>(N, C, HW, x, gamma, beta, momentum, eps, y, save_mean, save_rstd, running_mean,
                                      running_var, workspace)
                     : bn_training<1>(N, C, HW, x, gamma, beta, momentum, eps, y, save_mean, save_rstd, running_mean,
                                      running_var, workspace);
}

cudaError_t batchnorm_forward_inference(int N, int C, int HW, const float* x, const float* gamma, const float* beta,
                                        const float* running_mean, const float* running_var, float eps, float* y) {
  if (N <= 0 || C <= 0 || HW <= 0) return cudaSuccess;
  return HW % 4 == 0 ? bn_inference<4>(N, C, HW, x, gamma, beta, running_mean, running_var, eps, y)
                     : bn_inference<1>(N, C, HW, x, gamma, beta, running_mean, running_var, eps, y);
}

cudaError_t batchnorm_backward(int N, int C, int HW, const float* dy, const float* x, const float* gamma,
                               const float* save_mean, const float* save_rstd, float* dx, float* dgamma, float* dbeta,
                               float* workspace) {
  if (N <= 0 || C <= 0 || HW <= 0) return cudaSuccess;
  return HW % 4 == 0
             ? bn_backward<4>(N, C, HW, dy, x, gamma, save_mean, save_rstd, dx, dgamma, dbeta, workspace)
             : bn_backward<1>(N, C, HW, dy, x, gamma, save_mean, save_rstd, dx, dgamma, dbeta, workspace);
}
