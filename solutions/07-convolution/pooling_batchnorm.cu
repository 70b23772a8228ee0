// Lab 07 reference solution, part 2: max and average pooling, batch normalization (NCHW, fp32).
//
//   maxpool2d_forward       a thread per output: the window clipped to the image (padding never
//                           wins), strict > in row-major order (the first maximum wins ties)
//   maxpool2d_backward      a thread per input pixel gathers dy from the windows that contain it
//                           and chose it: a fixed order, no atomics
//   avgpool2d_forward/back  the same two shapes; divisor R * S or the window's pixels in the image
//   batchnorm_forward_training
//                           1. bn_stats_kernel: a (split, channel) grid; Welford over float4
//                              chunks, Chan's combination across the block; one (count, mean, M2)
//                              partial per block in the workspace
//                           2. bn_finalize_kernel: a thread per channel combines its partials in
//                              split order; mean, rstd, saved and running statistics
//                           3. bn_normalize_kernel: y = (x - mean) * rstd * gamma + beta
//                           x is read twice (the least without keeping it on chip), y written once
//   batchnorm_forward_inference
//                           the normalizing pass of training with the running statistics
//   Batch-norm blocks read their channel's parameters once (thread 0, shared with the block), and
//   use float4 loads where planes are 16-byte aligned (HW % 4 == 0).
//   batchnorm_backward      the same split: partial sums of dy and dy * (x - mean) per block, summed
//                           in split order per channel (dbeta, dgamma), then dx: x and dy read twice
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
// A batch-norm block takes about this many values of its channel: enough work per block, and
// (splits x C) blocks to fill the GPU.
constexpr long long kValuesPerBlock = 2048;

// ---- pooling ----------------------------------------------------------------------------------------

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
// stride larger than the window skips the pixel, or the floored output size drops it).
struct Covering {
  int p0, p1, q0, q1;
  __device__ Covering(const PoolParams& s, int P, int Q, int h, int w) {
    p0 = h + s.pad_h < s.R ? 0 : (h + s.pad_h - s.R) / s.stride_h + 1;
    p1 = min((h + s.pad_h) / s.stride_h, P - 1);
    q0 = w + s.pad_w < s.S ? 0 : (w + s.pad_w - s.S) / s.stride_w + 1;
    q1 = min((w + s.pad_w) / s.stride_w, Q - 1);
  }
};

// Consecutive threads take consecutive outputs of a row: a warp's loads of one window offset
// (r, s) lie within 32 * stride_w consecutive floats, its stores are 32 consecutive floats.
__global__ void maxpool_forward_kernel(PoolParams s, int P, int Q, const float* x, float* y, int* argmax,
                                       std::size_t total) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int q = static_cast<int>(i % Q), p = static_cast<int>(i / Q % P);
  const float* plane = x + i / (static_cast<std::size_t>(P) * Q) * s.H * s.W;
  const Window win(s, p, q);
  float best = -INFINITY;
  int best_at = win.h0 * s.W + win.w0;  // also the answer for a window of -inf only
  for (int h = win.h0; h < win.h1; ++h) {
    for (int w = win.w0; w < win.w1; ++w) {
      const float v = plane[h * s.W + w];
      if (v > best) {  // strict: on a tie the first pixel in row-major order stays
        best = v;
        best_at = h * s.W + w;
      }
    }
  }
  y[i] = best;
  argmax[i] = best_at;
}

// dx[h][w] = the sum of dy over the windows containing (h, w) whose argmax is (h, w), in (p, q)
// order. dy is read only where the argmax matches: once per output in all.
__global__ void maxpool_backward_kernel(PoolParams s, int P, int Q, const float* dy, const int* argmax, float* dx,
                                        std::size_t total) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int w = static_cast<int>(i % s.W), h = static_cast<int>(i / s.W % s.H);
  const std::size_t plane = i / (static_cast<std::size_t>(s.H) * s.W) * P * Q;
  const Covering cov(s, P, Q, h, w);
  const int me = h * s.W + w;
  float sum = 0.0f;
  for (int p = cov.p0; p <= cov.p1; ++p) {
    for (int q = cov.q0; q <= cov.q1; ++q) {
      const std::size_t o = plane + static_cast<std::size_t>(p) * Q + q;
      if (argmax[o] == me) sum += dy[o];
    }
  }
  dx[i] = sum;
}

__device__ float avg_divisor(const PoolParams& s, const Window& win, int count_include_pad) {
  return static_cast<float>(count_include_pad ? s.R * s.S : win.pixels());
}

__global__ void avgpool_forward_kernel(PoolParams s, int P, int Q, const float* x, float* y, int count_include_pad,
                                       std::size_t total) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int q = static_cast<int>(i % Q), p = static_cast<int>(i / Q % P);
  const float* plane = x + i / (static_cast<std::size_t>(P) * Q) * s.H * s.W;
  const Window win(s, p, q);
  float sum = 0.0f;
  for (int h = win.h0; h < win.h1; ++h) {
    for (int w = win.w0; w < win.w1; ++w) sum += plane[h * s.W + w];
  }
  y[i] = sum / avg_divisor(s, win, count_include_pad);
}

__global__ void avgpool_backward_kernel(PoolParams s, int P, int Q, const float* dy, float* dx,
                                        int count_include_pad, std::size_t total) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int w = static_cast<int>(i % s.W), h = static_cast<int>(i / s.W % s.H);
  const std::size_t plane = i / (static_cast<std::size_t>(s.H) * s.W) * P * Q;
  const Covering cov(s, P, Q, h, w);
  float sum = 0.0f;
  for (int p = cov.p0; p <= cov.p1; ++p) {
    for (int q = cov.q0; q <= cov.q1; ++q) {
      sum += dy[plane + static_cast<std::size_t>(p) * Q + q] / avg_divisor(s, Window(s, p, q), count_include_pad);
    }
  }
  dx[i] = sum;
}

int blocks_for(std::size_t total) { return static_cast<int>((total + kThreads - 1) / kThreads); }

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
// threadIdx.x, stepping by splits * blockDim.x: consecutive threads on consecutive chunks.

template <int V>
struct Chunks {
  int C, HW, per_plane;
  long long count;  // chunks in a channel
  int c0 = 0;       // the channel of blockIdx.y == 0 (a grid holds at most 65535 channels: see slice_grid)
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
__global__ void bn_stats_kernel(Chunks<V> ch, const float* x, float* workspace) {
  const int c = ch.c0 + static_cast<int>(blockIdx.y);
  Welford w;
  for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < ch.count;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    float v[V];
    load<V>(x + ch.offset(c, k), v);
    // The chunk's own mean and M2 (two passes over V registers), then Chan's combination: one
    // division per chunk instead of one per value.
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < V; ++j) s += v[j];
    Welford chunk{static_cast<float>(V), s / V, 0.0f};
#pragma unroll
    for (int j = 0; j < V; ++j) chunk.m2 += (v[j] - chunk.mean) * (v[j] - chunk.mean);
    w = combine(w, chunk);
  }
  w = block_reduce(w, [](Welford a, Welford b) { return combine(a, b); }, Welford{});
  if (threadIdx.x == 0) {
    float* out = workspace + partial_at(c, blockIdx.x);
    out[0] = w.n;
    out[1] = w.mean;
    out[2] = w.m2;
  }
}

// A thread per channel: the partials combined in split order (the same bits every run).
__global__ void bn_finalize_kernel(int C, int splits, float momentum, float eps, const float* workspace,
                                   float* save_mean, float* save_rstd, float* running_mean, float* running_var) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  Welford w;
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

template <int V>
__global__ void bn_normalize_kernel(Chunks<V> ch, const float* x, const float* gamma, const float* beta,
                                    const float* mean, const float* rstd, float* y) {
  const int c = ch.c0 + static_cast<int>(blockIdx.y);
  float p[3] = {};
  if (threadIdx.x == 0) p[0] = mean[c], p[1] = rstd[c] * gamma[c], p[2] = beta[c];
  share(p);
  const float mu = p[0], scale = p[1], shift = p[2];
  for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < ch.count;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    const std::size_t o = ch.offset(c, k);
    float v[V];
    load<V>(x + o, v);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = (v[j] - mu) * scale + shift;
    store<V>(y + o, v);
  }
}

// Inference: the training's normalizing pass with the running statistics.
template <int V>
__global__ void bn_inference_kernel(Chunks<V> ch, const float* x, const float* gamma, const float* beta,
                                    const float* running_mean, const float* running_var, float eps, float* y) {
  const int c = ch.c0 + static_cast<int>(blockIdx.y);
  float p[3] = {};
  if (threadIdx.x == 0) p[0] = running_mean[c], p[1] = gamma[c] * rsqrtf(running_var[c] + eps), p[2] = beta[c];
  share(p);
  const float mu = p[0], scale = p[1], shift = p[2];
  for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < ch.count;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    const std::size_t o = ch.offset(c, k);
    float v[V];
    load<V>(x + o, v);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = (v[j] - mu) * scale + shift;
    store<V>(y + o, v);
  }
}

// Backward, pass 1: per block, the sums of dy and dy * (x - mean) over its chunks.
template <int V>
__global__ void bn_backward_sums_kernel(Chunks<V> ch, const float* dy, const float* x, const float* mean,
                                        float* workspace) {
  const int c = ch.c0 + static_cast<int>(blockIdx.y);
  float p[1] = {};
  if (threadIdx.x == 0) p[0] = mean[c];
  share(p);
  const float mu = p[0];
  float2 s{0.0f, 0.0f};
  for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < ch.count;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    const std::size_t o = ch.offset(c, k);
    float d[V], v[V];
    load<V>(dy + o, d);
    load<V>(x + o, v);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      s.x += d[j];
      s.y += d[j] * (v[j] - mu);
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
__global__ void bn_backward_dx_kernel(Chunks<V> ch, float inv_m, const float* dy, const float* x, const float* gamma,
                                      const float* mean, const float* rstd, const float* dgamma, const float* dbeta,
                                      float* dx) {
  const int c = ch.c0 + static_cast<int>(blockIdx.y);
  float p[5] = {};
  if (threadIdx.x == 0) p[0] = mean[c], p[1] = rstd[c], p[2] = gamma[c] * rstd[c], p[3] = dbeta[c] * inv_m,
                        p[4] = dgamma[c] * inv_m;
  share(p);
  const float mu = p[0], rs = p[1], a = p[2], mean_dy = p[3], mean_dyxhat = p[4];
  for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < ch.count;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    const std::size_t o = ch.offset(c, k);
    float d[V], v[V];
    load<V>(dy + o, d);
    load<V>(x + o, v);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = a * (d[j] - mean_dy - (v[j] - mu) * rs * mean_dyxhat);
    store<V>(dx + o, v);
  }
}

// gridDim.y is at most 65535: the channels go in slices of that many, one launch each.
constexpr int kMaxGridY = 65535;

// The grid of the slice of channels starting at c0 (set ch.c0 = c0 before the launch).
dim3 slice_grid(int splits, int C, int c0) { return dim3(splits, std::min(C - c0, kMaxGridY)); }

// Splits of a channel of M values: about kValuesPerBlock each, at most kBatchNormSplits.
int splits_for(long long m) {
  return static_cast<int>(std::clamp((m + kValuesPerBlock - 1) / kValuesPerBlock, 1LL,
                                     static_cast<long long>(kBatchNormSplits)));
}

template <int V>
cudaError_t bn_training(int N, int C, int HW, const float* x, const float* gamma, const float* beta, float momentum,
                        float eps, float* y, float* save_mean, float* save_rstd, float* running_mean,
                        float* running_var, float* workspace) {
  Chunks<V> ch = chunks_of<V>(N, C, HW);
  const int splits = splits_for(static_cast<long long>(N) * HW);
  for (int c0 = 0; c0 < C; c0 += kMaxGridY) {
    ch.c0 = c0;
    bn_stats_kernel<V><<<slice_grid(splits, C, c0), kThreads>>>(ch, x, workspace);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  bn_finalize_kernel<<<(C + 127) / 128, 128>>>(C, splits, momentum, eps, workspace, save_mean, save_rstd,
                                               running_mean, running_var);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  for (int c0 = 0; c0 < C; c0 += kMaxGridY) {
    ch.c0 = c0;
    bn_normalize_kernel<V><<<slice_grid(splits, C, c0), kThreads>>>(ch, x, gamma, beta, save_mean, save_rstd, y);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

template <int V>
cudaError_t bn_backward(int N, int C, int HW, const float* dy, const float* x, const float* gamma,
                        const float* save_mean, const float* save_rstd, float* dx, float* dgamma, float* dbeta,
                        float* workspace) {
  Chunks<V> ch = chunks_of<V>(N, C, HW);
  const long long m = static_cast<long long>(N) * HW;
  const int splits = splits_for(m);
  for (int c0 = 0; c0 < C; c0 += kMaxGridY) {
    ch.c0 = c0;
    bn_backward_sums_kernel<V><<<slice_grid(splits, C, c0), kThreads>>>(ch, dy, x, save_mean, workspace);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  bn_backward_finalize_kernel<<<(C + 127) / 128, 128>>>(C, splits, workspace, save_rstd, dgamma, dbeta);
  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  const float inv_m = static_cast<float>(1.0 / static_cast<double>(m));
  for (int c0 = 0; c0 < C; c0 += kMaxGridY) {
    ch.c0 = c0;
    bn_backward_dx_kernel<V><<<slice_grid(splits, C, c0), kThreads>>>(ch, inv_m, dy, x, gamma, save_mean,
                                                                          save_rstd, dgamma, dbeta, dx);
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace

// ---- the interface ---------------------------------------------------------------------------------------

cudaError_t maxpool2d_forward(PoolParams p, const float* x, float* y, int* argmax) {
  const int P = pool_out_h(p), Q = pool_out_w(p);
  const std::size_t total = static_cast<std::size_t>(p.N) * p.C * P * Q;
  if (total == 0) return cudaSuccess;
  maxpool_forward_kernel<<<blocks_for(total), kThreads>>>(p, P, Q, x, y, argmax, total);
  return cudaGetLastError();
}

cudaError_t maxpool2d_backward(PoolParams p, const float* dy, const int* argmax, float* dx) {
  const std::size_t total = static_cast<std::size_t>(p.N) * p.C * p.H * p.W;
  if (total == 0) return cudaSuccess;
  maxpool_backward_kernel<<<blocks_for(total), kThreads>>>(p, pool_out_h(p), pool_out_w(p), dy, argmax, dx, total);
  return cudaGetLastError();
}

cudaError_t avgpool2d_forward(PoolParams p, const float* x, float* y, int count_include_pad) {
  const int P = pool_out_h(p), Q = pool_out_w(p);
  const std::size_t total = static_cast<std::size_t>(p.N) * p.C * P * Q;
  if (total == 0) return cudaSuccess;
  avgpool_forward_kernel<<<blocks_for(total), kThreads>>>(p, P, Q, x, y, count_include_pad, total);
  return cudaGetLastError();
}

cudaError_t avgpool2d_backward(PoolParams p, const float* dy, float* dx, int count_include_pad) {
  const std::size_t total = static_cast<std::size_t>(p.N) * p.C * p.H * p.W;
  if (total == 0) return cudaSuccess;
  avgpool_backward_kernel<<<blocks_for(total), kThreads>>>(p, pool_out_h(p), pool_out_w(p), dy, dx, count_include_pad,
                                                           total);
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
  const int splits = splits_for(static_cast<long long>(N) * HW);
  Chunks<4> ch4 = chunks_of<4>(N, C, HW);
  Chunks<1> ch1 = chunks_of<1>(N, C, HW);
  for (int c0 = 0; c0 < C; c0 += kMaxGridY) {
    if (HW % 4 == 0) {
      ch4.c0 = c0;
      bn_inference_kernel<4><<<slice_grid(splits, C, c0), kThreads>>>(ch4, x, gamma, beta, running_mean,
                                                                           running_var, eps, y);
    } else {
      ch1.c0 = c0;
      bn_inference_kernel<1><<<slice_grid(splits, C, c0), kThreads>>>(ch1, x, gamma, beta, running_mean,
                                                                           running_var, eps, y);
    }
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

cudaError_t batchnorm_backward(int N, int C, int HW, const float* dy, const float* x, const float* gamma,
                               const float* save_mean, const float* save_rstd, float* dx, float* dgamma, float* dbeta,
                               float* workspace) {
  if (N <= 0 || C <= 0 || HW <= 0) return cudaSuccess;
  return HW % 4 == 0
             ? bn_backward<4>(N, C, HW, dy, x, gamma, save_mean, save_rstd, dx, dgamma, dbeta, workspace)
             : bn_backward<1>(N, C, HW, dy, x, gamma, save_mean, save_rstd, dx, dgamma, dbeta, workspace);
}
