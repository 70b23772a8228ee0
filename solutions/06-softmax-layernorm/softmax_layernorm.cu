// Lab 06 reference solution: softmax, layer normalization and RMSNorm, forward and backward.
//
//   softmax_naive        1. one thread per row, three passes (max, sum, write)
//   softmax_block        2. a block per row: coalesced strided loops, warp shuffles + shared memory
//   softmax_online       3. running max and rescaled sum in one pass, then the normalizing pass
//   softmax_forward      4. 16-byte loads with a scalar head and tail, the row cached in shared
//                           memory (cols <= 8192): x read once
//   softmax_backward        dx = y * (dy - sum(dy * y)), vectorized
//   layernorm_two_pass   1. a block per row: mean, then variance of (x - mean), then y
//   layernorm_forward       the row cached in shared memory, two passes over the cache; Welford
//                           over global memory beyond 8192 columns
//   layernorm_backward      rows grid-strided over a few blocks; dgamma/dbeta partials per block in
//                           registers, added up by a second kernel in a fixed order (no atomics)
//   rmsnorm_*               the layer-norm kernels without centering (template parameter)
//   *_bf16                  the final forward kernels on bf16 rows, fp32 arithmetic
//
// Every block-wide reduction goes through block_reduce(): warp shuffles, one value per warp in
// shared memory, then every warp reduces those values itself (so all threads get the result and
// no second barrier is needed). Block sizes are multiples of 32.
#include "softmax_layernorm.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kMaxCachedCols = 8192;  // rows up to this many columns are read once (32 KiB cached)

int round_up(int v, int m) { return (v + m - 1) / m * m; }

// Threads per block for a row of @p cols elements: about @p per_thread elements each, a multiple
// of 32 between 32 and 1024.
int block_threads(int cols, int per_thread) {
  return std::clamp(round_up((cols + per_thread - 1) / per_thread, 32), 32, 1024);
}

// ---- reductions ------------------------------------------------------------------------------

struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

__device__ float shfl_xor(float v, int offset) { return __shfl_xor_sync(kFullMask, v, offset); }
__device__ float2 shfl_xor(float2 v, int offset) { return {shfl_xor(v.x, offset), shfl_xor(v.y, offset)}; }

// Combines the values of the 32 lanes; every lane gets the result. shfl_xor() of a struct moves
// each of its fields.
template <class V, class Combine>
__device__ V warp_reduce(V v, Combine combine) {
  for (int offset = 16; offset > 0; offset >>= 1) v = combine(v, shfl_xor(v, offset));
  return v;
}

// Reduces one value per thread over the block; every thread gets the result. `identity` stands in
// for the warps the block does not have.
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

__device__ float block_sum(float v) { return block_reduce(v, Sum{}, 0.0f); }
__device__ float block_max(float v) { return block_reduce(v, Max{}, -INFINITY); }
__device__ float2 block_sum(float2 v) {
  return block_reduce(v, [](float2 a, float2 b) { return float2{a.x + b.x, a.y + b.y}; }, float2{0.0f, 0.0f});
}

// Online softmax state: the maximum m of the values seen and the sum of exp(v - m).
struct MaxSum {
  float m = -INFINITY;
  float s = 0.0f;
};

__device__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};  // both empty or fully masked
  return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

// Adds one value: when it raises the maximum, the sum so far is rescaled to the new maximum.
__device__ void add(MaxSum& st, float v) {
  if (v > st.m) {
    st.s = st.s * __expf(st.m - v) + 1.0f;
    st.m = v;
  } else if (v != -INFINITY) {
    st.s += __expf(v - st.m);
  }
}

__device__ MaxSum shfl_xor(MaxSum st, int offset) { return {shfl_xor(st.m, offset), shfl_xor(st.s, offset)}; }

__device__ MaxSum block_reduce(MaxSum st) {
  return block_reduce(st, [](MaxSum a, MaxSum b) { return combine(a, b); }, MaxSum{});
}

// Normalized softmax value of v for a row with state st; 0 for a fully masked row.
__device__ float softmax_value(float v, MaxSum st, float inv_sum) {
  return st.m == -INFINITY ? 0.0f : __expf(v - st.m) * inv_sum;
}

// ---- element types and 16-byte vectors ------------------------------------------------------------

__device__ float to_float(float v) { return v; }
__device__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) { return v; }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

// Elements of T in 16 bytes.
template <class T>
constexpr int kWidth = 16 / static_cast<int>(sizeof(T));

// One 16-byte load of kWidth<T> elements at p (16-byte aligned), converted to float.
__device__ void load16(const float* p, float* v) {
  const float4 raw = *reinterpret_cast<const float4*>(p);
  v[0] = raw.x;
  v[1] = raw.y;
  v[2] = raw.z;
  v[3] = raw.w;
}
__device__ void load16(const __nv_bfloat16* p, float* v) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
  for (int k = 0; k < 4; ++k) {
    const float2 f = __bfloat1622float2(h[k]);
    v[2 * k] = f.x;
    v[2 * k + 1] = f.y;
  }
}


__device__ void store16(float* p, const float* v) { *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]); }
__device__ void store16(__nv_bfloat16* p, const float* v) {
  uint4 raw;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&raw);
  for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(v[2 * k], v[2 * k + 1]);
  *reinterpret_cast<uint4*>(p) = raw;
}

template <class T>
__device__ bool aligned16(const T* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// N consecutive elements at p as floats: 16-byte loads when p is aligned and N fills them, else
// one element at a time. (T = float also serves the shared-memory row cache.)
template <int N, class T>
__device__ void load_n(const T* p, float* v) {
  if (N % kWidth<T> == 0 && aligned16(p)) {
#pragma unroll
    for (int k = 0; k < N; k += kWidth<T>) load16(p + k, v + k);
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = to_float(p[k]);
  }
}

template <int N, class T>
__device__ void store_n(T* p, const float* v) {
  if (N % kWidth<T> == 0 && aligned16(p)) {
#pragma unroll
    for (int k = 0; k < N; k += kWidth<T>) store16(p + k, v + k);
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) p[k] = from_float<T>(v[k]);
  }
}

// A row split for 16-byte accesses: `head` single elements up to the first 16-byte boundary,
// `nvec` chunks of kWidth<T> elements, then single elements from `tail` to cols. A row starts
// 16-byte aligned only when cols is a multiple of kWidth<T>; any other row may have a head.
template <class T>
struct RowSplit {
  int cols, head, nvec, tail;
  __device__ RowSplit(const T* row, int n) : cols(n) {
    const int misaligned = static_cast<int>((reinterpret_cast<std::uintptr_t>(row) % 16) / sizeof(T));
    head = min(cols, (kWidth<T> - misaligned) % kWidth<T>);
    nvec = (cols - head) / kWidth<T>;
    tail = head + nvec * kWidth<T>;
  }
  // Offset that makes a float cache of the row 16-byte aligned where the row's chunks are.
  __device__ int cache_shift() const { return (4 - head % 4) % 4; }
};

template <int N>
using Count = std::integral_constant<int, N>;

// Calls f(c, Count<n>) for every chunk of the row that this thread owns: single elements of the
// head and the tail (n = 1) and 16-byte chunks of the body (n = kWidth<T>), consecutive threads
// on consecutive chunks. Every call with the same split and block size gives a thread the same
// columns, so a thread can cache its elements and find them again.
template <class T, class F>
__device__ void for_each_chunk(const RowSplit<T>& split, F f) {
  for (int c = threadIdx.x; c < split.head; c += blockDim.x) f(c, Count<1>{});
  for (int i = threadIdx.x; i < split.nvec; i += blockDim.x) f(split.head + i * kWidth<T>, Count<kWidth<T>>{});
  for (int c = split.tail + threadIdx.x; c < split.cols; c += blockDim.x) f(c, Count<1>{});
}

// ---- 1. softmax, one thread per row ---------------------------------------------------------------

__global__ void softmax_naive_kernel(const float* x, float* y, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + static_cast<std::size_t>(r) * cols;
  float* yr = y + static_cast<std::size_t>(r) * cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
  if (m == -INFINITY) {  // fully masked row
    for (int c = 0; c < cols; ++c) yr[c] = 0.0f;
    return;
  }
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += __expf(xr[c] - m);
  const float inv = 1.0f / s;
  for (int c = 0; c < cols; ++c) yr[c] = __expf(xr[c] - m) * inv;
}

// ---- 2. softmax, a block per row -----------------------------------------------------------------

// What changed: blockDim.x threads share a row; thread t handles columns t, t + blockDim.x, ...
// (a warp reads 32 consecutive floats), and block_reduce() combines their maxima and sums.
__global__ void softmax_block_kernel(const float* x, float* y, int cols) {
  const float* xr = x + static_cast<std::size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<std::size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  m = block_max(m);
  float s = 0.0f;
  if (m != -INFINITY) {
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(xr[c] - m);
  }
  s = block_sum(s);
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = m == -INFINITY ? 0.0f : __expf(xr[c] - m) * inv;
}

// ---- 3. online softmax -------------------------------------------------------------------------

// What changed: the max and the sum come from one pass (add() rescales the running sum when the
// maximum grows, block_reduce() combines (max, sum) pairs); x is read twice instead of three times.
__global__ void softmax_online_kernel(const float* x, float* y, int cols) {
  const float* xr = x + static_cast<std::size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<std::size_t>(blockIdx.x) * cols;
  MaxSum st;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) add(st, xr[c]);
  st = block_reduce(st);
  const float inv = 1.0f / st.s;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = softmax_value(xr[c], st, inv);
}

// ---- 4. final softmax ----------------------------------------------------------------------------

// What changed: 16-byte loads and stores (for_each_chunk), and for cols <= kMaxCachedCols the row
// is kept in shared memory between the two passes, so x is read once. Each thread reads back only
// the elements it cached itself: the cache needs no barrier.
template <class T>
__global__ void softmax_cached_kernel(const T* x, T* y, int cols) {
  extern __shared__ float4 cache4[];
  const T* xr = x + static_cast<std::size_t>(blockIdx.x) * cols;
  T* yr = y + static_cast<std::size_t>(blockIdx.x) * cols;
  const RowSplit<T> split(xr, cols);
  float* cache = reinterpret_cast<float*>(cache4) + split.cache_shift();
  MaxSum st;
  for_each_chunk(split, [&](int c, auto n) {
    constexpr int N = decltype(n)::value;
    float v[N];
    load_n<N>(xr + c, v);
    store_n<N>(cache + c, v);
#pragma unroll
    for (int k = 0; k < N; ++k) add(st, v[k]);
  });
  st = block_reduce(st);
  const float inv = 1.0f / st.s;
  for_each_chunk(split, [&](int c, auto n) {
    constexpr int N = decltype(n)::value;
    float v[N];
    load_n<N>(cache + c, v);
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = softmax_value(v[k], st, inv);
    store_n<N>(yr + c, v);
  });
}

// Rows longer than the cache: the online pass, then a second read of x.
template <class T>
__global__ void softmax_streaming_kernel(const T* x, T* y, int cols) {
  const T* xr = x + static_cast<std::size_t>(blockIdx.x) * cols;
  T* yr = y + static_cast<std::size_t>(blockIdx.x) * cols;
  const RowSplit<T> split(xr, cols);
  MaxSum st;
  for_each_chunk(split, [&](int c, auto n) {
    constexpr int N = decltype(n)::value;
    float v[N];
    load_n<N>(xr + c, v);
#pragma unroll
    for (int k = 0; k < N; ++k) add(st, v[k]);
  });
  st = block_reduce(st);
  const float inv = 1.0f / st.s;
  for_each_chunk(split, [&](int c, auto n) {
    constexpr int N = decltype(n)::value;
    float v[N];
    load_n<N>(xr + c, v);
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = softmax_value(v[k], st, inv);
    store_n<N>(yr + c, v);
  });
}

// Shared memory of a cached row: cols floats and up to 3 more for the alignment shift.
std::size_t cache_bytes(int cols) { return (static_cast<std::size_t>(cols) + 3) * sizeof(float); }

template <class T>
cudaError_t softmax_final(const T* x, T* y, int rows, int cols) {
  if (rows <= 0) return cudaSuccess;
  const int threads = block_threads(cols, 4 * kWidth<T>);
  if (cols <= kMaxCachedCols) {
    softmax_cached_kernel<T><<<rows, threads, cache_bytes(cols)>>>(x, y, cols);
  } else {
    softmax_streaming_kernel<T><<<rows, threads>>>(x, y, cols);
  }
  return cudaGetLastError();
}

// ---- softmax backward ------------------------------------------------------------------------------

// dot = sum(dy * y) in one pass, then dx = y * (dy - dot) in a second (whose reads of the block's
// own row mostly hit the cache on a GPU).
__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, int cols) {
  const std::size_t offset = static_cast<std::size_t>(blockIdx.x) * cols;
  const float *yr = y + offset, *dyr = dy + offset;
  float* dxr = dx + offset;
  const RowSplit<float> split(yr, cols);
  float dot = 0.0f;
  for_each_chunk(split, [&](int c, auto n) {
    constexpr int N = decltype(n)::value;
    float a[N], b[N];
    load_n<N>(yr + c, a);
    load_n<N>(dyr + c, b);
#pragma unroll
    for (int k = 0; k < N; ++k) dot += a[k] * b[k];
  });
  dot = block_sum(dot);
  for_each_chunk(split, [&](int c, auto n) {
    constexpr int N = decltype(n)::value;
    float a[N], b[N];
    load_n<N>(yr + c, a);
    load_n<N>(dyr + c, b);
#pragma unroll
    for (int k = 0; k < N; ++k) a[k] *= b[k] - dot;
    store_n<N>(dxr + c, a);
  });
}

// ---- layer normalization and RMSNorm, forward ------------------------------------------------------

// Version 1: three passes over x in global memory.
__global__ void layernorm_two_pass_kernel(const float* x, const float* gamma, const float* beta, float* y,
                                          float* mean_out, float* rstd_out, int cols, float eps) {
  const float* xr = x + static_cast<std::size_t>(blockIdx.x) * cols;
  float* yr = y + static_cast<std::size_t>(blockIdx.x) * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
  const float mean = block_sum(s) / cols;
  float q = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = xr[c] - mean;
    q += d * d;
  }
  const float rstd = rsqrtf(block_sum(q) / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
  if (threadIdx.x == 0) {
    mean_out[blockIdx.x] = mean;
    rstd_out[blockIdx.x] = rstd;
  }
}

// The normalizing pass of every final forward: y = (v - mean) * rstd * gamma (+ beta), where
// load(c, v) gives the row's values (from the cache or from x).
template <bool kCentered, class T, class Load>
__device__ void write_normalized(const RowSplit<T>& split, Load load, const T* gamma, const T* beta, T* yr,
                                 float mean, float rstd) {
  for_each_chunk(split, [&](int c, auto n) {
    constexpr int N = decltype(n)::value;
    float v[N], g[N], b[N] = {};
    load(c, n, v);
    load_n<N>(gamma + c, g);
    if constexpr (kCentered) load_n<N>(beta + c, b);
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = (v[k] - mean) * rstd * g[k] + b[k];
    store_n<N>(yr + c, v);
  });
}

// Final forward, layer norm (kCentered) or RMSNorm, rows up to kMaxCachedCols: the row cached in
// shared memory, then the mean and the variance as two passes over the cache: exact two-pass
// statistics for one read of x. For RMSNorm, beta and mean_out are unused and rstd_out gets rrms.
template <bool kCentered, class T>
__global__ void norm_cached_kernel(const T* x, const T* gamma, const T* beta, T* y, float* mean_out,
                                   float* rstd_out, int cols, float eps) {
  extern __shared__ float4 cache4[];
  const T* xr = x + static_cast<std::size_t>(blockIdx.x) * cols;
  const RowSplit<T> split(xr, cols);
  float* cache = reinterpret_cast<float*>(cache4) + split.cache_shift();
  float s = 0.0f;
  for_each_chunk(split, [&](int c, auto n) {
    constexpr int N = decltype(n)::value;
    float v[N];
    load_n<N>(xr + c, v);
    store_n<N>(cache + c, v);
#pragma unroll
    for (int k = 0; k < N; ++k) s += kCentered ? v[k] : v[k] * v[k];
  });
  auto cached = [&](int c, auto n, float* v) { load_n<decltype(n)::value>(cache + c, v); };
  float mean = 0.0f, rstd;
  if constexpr (kCentered) {
    mean = block_sum(s) / cols;
    float q = 0.0f;
    for_each_chunk(split, [&](int c, auto n) {
      constexpr int N = decltype(n)::value;
      float v[N];
      cached(c, n, v);
#pragma unroll
      for (int k = 0; k < N; ++k) q += (v[k] - mean) * (v[k] - mean);
    });
    rstd = rsqrtf(block_sum(q) / cols + eps);
  } else {
    rstd = rsqrtf(block_sum(s) / cols + eps);
  }
  if (threadIdx.x == 0) {
    if constexpr (kCentered) mean_out[blockIdx.x] = mean;
    rstd_out[blockIdx.x] = rstd;
  }
  write_normalized<kCentered>(split, cached, gamma, beta, y + static_cast<std::size_t>(blockIdx.x) * cols, mean,
                              rstd);
}

// Welford's running mean and sum of squared deviations (m2), and Chan et al.'s combination of two.
struct Welford {
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
};

__device__ void add(Welford& w, float v) {
  w.n += 1.0f;
  const float d = v - w.mean;
  w.mean += d / w.n;
  w.m2 += d * (v - w.mean);
}

__device__ Welford combine(Welford a, Welford b) {
  if (b.n == 0.0f) return a;
  if (a.n == 0.0f) return b;
  const float n = a.n + b.n, d = b.mean - a.mean;
  return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n)};
}

__device__ Welford shfl_xor(Welford w, int offset) {
  return {shfl_xor(w.n, offset), shfl_xor(w.mean, offset), shfl_xor(w.m2, offset)};
}

__device__ Welford block_reduce(Welford w) {
  return block_reduce(w, [](Welford a, Welford b) { return combine(a, b); }, Welford{});
}

// Rows longer than the cache: Welford statistics (layer norm) or the sum of squares (RMSNorm) in
// one read, then a second read of x for y.
template <bool kCentered, class T>
__global__ void norm_streaming_kernel(const T* x, const T* gamma, const T* beta, T* y, float* mean_out,
                                      float* rstd_out, int cols, float eps) {
  const T* xr = x + static_cast<std::size_t>(blockIdx.x) * cols;
  const RowSplit<T> split(xr, cols);
  Welford w;
  float s = 0.0f;
  for_each_chunk(split, [&](int c, auto n) {
    constexpr int N = decltype(n)::value;
    float v[N];
    load_n<N>(xr + c, v);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if constexpr (kCentered) {
        add(w, v[k]);
      } else {
        s += v[k] * v[k];
      }
    }
  });
  float mean = 0.0f, rstd;
  if constexpr (kCentered) {
    w = block_reduce(w);
    mean = w.mean;
    rstd = rsqrtf(w.m2 / cols + eps);
  } else {
    rstd = rsqrtf(block_sum(s) / cols + eps);
  }
  if (threadIdx.x == 0) {
    if constexpr (kCentered) mean_out[blockIdx.x] = mean;
    rstd_out[blockIdx.x] = rstd;
  }
  auto from_x = [&](int c, auto n, float* v) { load_n<decltype(n)::value>(xr + c, v); };
  write_normalized<kCentered>(split, from_x, gamma, beta, y + static_cast<std::size_t>(blockIdx.x) * cols, mean,
                              rstd);
}

template <bool kCentered, class T>
cudaError_t norm_forward(const T* x, const T* gamma, const T* beta, T* y, float* mean, float* rstd, int rows,
                         int cols, float eps) {
  if (rows <= 0) return cudaSuccess;
  const int threads = block_threads(cols, 4 * kWidth<T>);
  if (cols <= kMaxCachedCols) {
    norm_cached_kernel<kCentered, T><<<rows, threads, cache_bytes(cols)>>>(x, gamma, beta, y, mean, rstd, cols, eps);
  } else {
    norm_streaming_kernel<kCentered, T><<<rows, threads>>>(x, gamma, beta, y, mean, rstd, cols, eps);
  }
  return cudaGetLastError();
}

// ---- layer normalization and RMSNorm, backward --------------------------------------------------------
//
// A few blocks (at most kNormPartialRows) each take rows blockIdx.x, blockIdx.x + gridDim.x, ...;
// per row, one pass computes sum(g) and sum(g * xhat) (g = dy * gamma) and adds dy * xhat and dy
// into the block's partial dgamma and dbeta; after the block sums, a second pass writes dx. Each
// block stores its partial rows in the workspace, and norm_param_grad_kernel adds them up column
// by column in block order: the same result on every run.

// Rows whose length is a multiple of 4, up to kVecs float4 chunks per thread: the thread's
// gamma, partial gradients and current row chunks live in registers.
template <bool kCentered, int kVecs>
__global__ void norm_backward_vec_kernel(const float* dy, const float* x, const float* gamma, const float* mean,
                                         const float* rstd, float* dx, float* part_g, float* part_b, int rows,
                                         int cols) {
  const int nvec = cols / 4;
  const float4* gamma4 = reinterpret_cast<const float4*>(gamma);
  float gam[kVecs][4], pg[kVecs][4] = {}, pb[kVecs][4] = {};
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int i = j * blockDim.x + threadIdx.x;
    const float4 g = i < nvec ? gamma4[i] : float4{0.0f, 0.0f, 0.0f, 0.0f};
    gam[j][0] = g.x, gam[j][1] = g.y, gam[j][2] = g.z, gam[j][3] = g.w;
  }
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const float mu = kCentered ? mean[r] : 0.0f, rs = rstd[r];
    const float4* x4 = reinterpret_cast<const float4*>(x + static_cast<std::size_t>(r) * cols);
    const float4* dy4 = reinterpret_cast<const float4*>(dy + static_cast<std::size_t>(r) * cols);
    float xh[kVecs][4], g[kVecs][4];
    float2 sums{0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int i = j * blockDim.x + threadIdx.x;
      if (i < nvec) {
        const float4 xv = x4[i], dv = dy4[i];
        const float xs[4] = {xv.x, xv.y, xv.z, xv.w}, ds[4] = {dv.x, dv.y, dv.z, dv.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          xh[j][k] = (xs[k] - mu) * rs;
          g[j][k] = ds[k] * gam[j][k];
          sums.x += g[j][k];
          sums.y += g[j][k] * xh[j][k];
          pg[j][k] += ds[k] * xh[j][k];
          pb[j][k] += ds[k];
        }
      }
    }
    sums = block_sum(sums);
    const float a = kCentered ? sums.x / cols : 0.0f, b = sums.y / cols;
    float4* dx4 = reinterpret_cast<float4*>(dx + static_cast<std::size_t>(r) * cols);
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int i = j * blockDim.x + threadIdx.x;
      if (i < nvec) {
        dx4[i] = make_float4(rs * (g[j][0] - a - xh[j][0] * b), rs * (g[j][1] - a - xh[j][1] * b),
                             rs * (g[j][2] - a - xh[j][2] * b), rs * (g[j][3] - a - xh[j][3] * b));
      }
    }
  }
  float4* pg4 = reinterpret_cast<float4*>(part_g + static_cast<std::size_t>(blockIdx.x) * cols);
  float4* pb4 = reinterpret_cast<float4*>(part_b + static_cast<std::size_t>(blockIdx.x) * cols);
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int i = j * blockDim.x + threadIdx.x;
    if (i < nvec) {
      pg4[i] = make_float4(pg[j][0], pg[j][1], pg[j][2], pg[j][3]);
      if constexpr (kCentered) pb4[i] = make_float4(pb[j][0], pb[j][1], pb[j][2], pb[j][3]);
    }
  }
}

// Any other row length: one element at a time, the block's partial gradients accumulated in its
// own rows of the workspace (each thread owns its columns, so no two threads touch one element).
template <bool kCentered>
__global__ void norm_backward_kernel(const float* dy, const float* x, const float* gamma, const float* mean,
                                     const float* rstd, float* dx, float* part_g, float* part_b, int rows, int cols) {
  float* pg = part_g + static_cast<std::size_t>(blockIdx.x) * cols;
  float* pb = part_b + static_cast<std::size_t>(blockIdx.x) * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    pg[c] = 0.0f;
    if constexpr (kCentered) pb[c] = 0.0f;
  }
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const float mu = kCentered ? mean[r] : 0.0f, rs = rstd[r];
    const float* xr = x + static_cast<std::size_t>(r) * cols;
    const float* dyr = dy + static_cast<std::size_t>(r) * cols;
    float2 sums{0.0f, 0.0f};
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      const float xh = (xr[c] - mu) * rs, g = dyr[c] * gamma[c];
      sums.x += g;
      sums.y += g * xh;
      pg[c] += dyr[c] * xh;
      if constexpr (kCentered) pb[c] += dyr[c];
    }
    sums = block_sum(sums);
    const float a = kCentered ? sums.x / cols : 0.0f, b = sums.y / cols;
    float* dxr = dx + static_cast<std::size_t>(r) * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      const float xh = (xr[c] - mu) * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - a - xh * b);
    }
  }
}

// dgamma[c] = sum over the partial rows p = 0, 1, ... of part_g[p][c] (and dbeta from part_b), in
// that order.
__global__ void norm_param_grad_kernel(const float* part_g, const float* part_b, float* dgamma, float* dbeta,
                                       int parts, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float g = 0.0f, b = 0.0f;
  for (int p = 0; p < parts; ++p) {
    g += part_g[static_cast<std::size_t>(p) * cols + c];
    if (dbeta != nullptr) b += part_b[static_cast<std::size_t>(p) * cols + c];
  }
  dgamma[c] = g;
  if (dbeta != nullptr) dbeta[c] = b;
}

// Launches norm_backward_vec_kernel<kCentered, vecs> (vecs = V .. 8, a compile-time constant).
template <bool kCentered, int V>
void launch_norm_backward_vec(int vecs, int parts, int threads, const float* dy, const float* x, const float* gamma,
                              const float* mean, const float* rstd, float* dx, float* part_g, float* part_b, int rows,
                              int cols) {
  if constexpr (V <= 8) {
    if (vecs == V) {
      norm_backward_vec_kernel<kCentered, V><<<parts, threads>>>(dy, x, gamma, mean, rstd, dx, part_g, part_b, rows, cols);
    } else {
      launch_norm_backward_vec<kCentered, V + 1>(vecs, parts, threads, dy, x, gamma, mean, rstd, dx, part_g, part_b,
                                                 rows, cols);
    }
  }
}

template <bool kCentered>
cudaError_t norm_backward(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                          float* dx, float* dgamma, float* dbeta, int rows, int cols, float* workspace) {
  const int parts = std::min(std::max(rows, 0), kNormPartialRows);
  float* part_g = workspace;
  float* part_b = workspace + static_cast<std::size_t>(kNormPartialRows) * cols;
  if (parts > 0) {
    const int threads = block_threads(cols, 16);
    const int vecs = (cols / 4 + threads - 1) / threads;
    if (cols % 4 == 0 && vecs <= 8) {
      launch_norm_backward_vec<kCentered, 1>(vecs, parts, threads, dy, x, gamma, mean, rstd, dx, part_g, part_b, rows,
                                             cols);
    } else {
      norm_backward_kernel<kCentered><<<parts, threads>>>(dy, x, gamma, mean, rstd, dx, part_g, part_b, rows, cols);
    }
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  norm_param_grad_kernel<<<(cols + 255) / 256, 256>>>(part_g, part_b, dgamma, kCentered ? dbeta : nullptr, parts,
                                                        cols);
  return cudaGetLastError();
}

}  // namespace

// ---- the interface -----------------------------------------------------------------------------------

cudaError_t softmax_naive(const float* x, float* y, int rows, int cols) {
  if (rows <= 0) return cudaSuccess;
  softmax_naive_kernel<<<(rows + 127) / 128, 128>>>(x, y, rows, cols);
  return cudaGetLastError();
}

cudaError_t softmax_block(const float* x, float* y, int rows, int cols) {
  if (rows <= 0) return cudaSuccess;
  softmax_block_kernel<<<rows, std::min(block_threads(cols, 1), 256)>>>(x, y, cols);
  return cudaGetLastError();
}

cudaError_t softmax_online(const float* x, float* y, int rows, int cols) {
  if (rows <= 0) return cudaSuccess;
  softmax_online_kernel<<<rows, std::min(block_threads(cols, 1), 256)>>>(x, y, cols);
  return cudaGetLastError();
}

cudaError_t softmax_forward(const float* x, float* y, int rows, int cols) { return softmax_final(x, y, rows, cols); }

cudaError_t softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols) {
  if (rows <= 0) return cudaSuccess;
  softmax_backward_kernel<<<rows, block_threads(cols, 16)>>>(y, dy, dx, cols);
  return cudaGetLastError();
}

cudaError_t layernorm_two_pass(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                               float* rstd, int rows, int cols, float eps) {
  if (rows <= 0) return cudaSuccess;
  layernorm_two_pass_kernel<<<rows, std::min(block_threads(cols, 1), 256)>>>(x, gamma, beta, y, mean, rstd, cols, eps);
  return cudaGetLastError();
}

cudaError_t layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                              float* rstd, int rows, int cols, float eps) {
  return norm_forward<true>(x, gamma, beta, y, mean, rstd, rows, cols, eps);
}

cudaError_t layernorm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                               const float* rstd, float* dx, float* dgamma, float* dbeta, int rows, int cols,
                               float* workspace) {
  return norm_backward<true>(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, rows, cols, workspace);
}

cudaError_t rmsnorm_forward(const float* x, const float* gamma, float* y, float* rrms, int rows, int cols, float eps) {
  return norm_forward<false, float>(x, gamma, nullptr, y, nullptr, rrms, rows, cols, eps);
}

cudaError_t rmsnorm_backward(const float* dy, const float* x, const float* gamma, const float* rrms, float* dx,
                             float* dgamma, int rows, int cols, float* workspace) {
  return norm_backward<false>(dy, x, gamma, nullptr, rrms, dx, dgamma, nullptr, rows, cols, workspace);
}

cudaError_t softmax_forward_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols) {
  return softmax_final(x, y, rows, cols);
}

cudaError_t layernorm_forward_bf16(const __nv_bfloat16* x, const __nv_bfloat16* gamma, const __nv_bfloat16* beta,
                                   __nv_bfloat16* y, float* mean, float* rstd, int rows, int cols, float eps) {
  return norm_forward<true>(x, gamma, beta, y, mean, rstd, rows, cols, eps);
}
