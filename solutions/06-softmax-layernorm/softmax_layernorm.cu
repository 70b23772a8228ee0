// Lab 06 reference solution: softmax, layer normalization and RMSNorm, forward and backward.
//
//   softmax_naive        1. one thread per row, three passes (max, sum, write)
//   softmax_block        2. a block per row: coalesced strided loops, warp shuffles + shared memory
//   softmax_online       3. running max and rescaled sum in one pass, then the normalizing pass
//   softmax_forward      4. the row read once, 16 bytes at a time (a scalar head and tail), into
//                           registers: a warp per row up to 1024 columns, a block per row up to
//                           8192 (kMaxCachedCols); beyond, the online pass and a second read
//   softmax_backward        dx = y * (dy - sum(dy * y)), y and dy rows in registers as in 4
//   layernorm_two_pass   1. a block per row: mean, then variance of (x - mean), then y
//   layernorm_forward       the row in registers as in softmax 4, two passes over the registers;
//                           Welford over global memory beyond 8192 columns
//   layernorm_backward      rows grid-strided over the resident blocks, the next row loaded while
//                           the current one is reduced; dgamma/dbeta partials per block in
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
constexpr int kMaxCachedCols = 8192;  // rows up to this many columns are read once (kept in registers)

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
// one element at a time.
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

// ---- 4. final softmax: the row in registers --------------------------------------------------------
//
// What changed: x is read once, 16 bytes at a time, into the registers of the threads that share
// the row, and max, exp, sum and the scaling all work on those registers. A row of up to
// 32 * kVecs 16-byte chunks goes to one warp (four rows per block: no shared memory and no
// __syncthreads()); a longer one, up to kMaxCachedCols columns, to a block. kVecs, the chunks a
// thread holds, is a template parameter, so the arrays are indexed by constants and stay in
// registers; all of a thread's loads are issued before the first is used, which keeps
// 16 * kVecs bytes per thread in flight. Rows beyond kMaxCachedCols are read twice (streaming).

// The threads that share a row: a warp (kWarpRows; blockDim.x / 32 rows per block) or the block.
template <bool kWarpRows>
struct RowTeam {
  int row;  // the row this thread works on
  int t;    // the thread's rank among the row's threads
  int n;    // threads per row
  __device__ RowTeam()
      : row(kWarpRows ? static_cast<int>(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32)
                      : static_cast<int>(blockIdx.x)),
        t(kWarpRows ? static_cast<int>(threadIdx.x % 32) : static_cast<int>(threadIdx.x)),
        n(kWarpRows ? 32 : static_cast<int>(blockDim.x)) {}
  // Every thread of the row gets the combination of the row's values.
  template <class V, class Combine>
  __device__ V reduce(V v, Combine combine, V identity) const {
    if constexpr (kWarpRows) {
      return warp_reduce(v, combine);
    } else {
      return block_reduce(v, combine, identity);
    }
  }
  __device__ float sum(float v) const { return reduce(v, Sum{}, 0.0f); }
  __device__ float max(float v) const { return reduce(v, Max{}, -INFINITY); }
};

// A thread's part of a row, as floats in registers: RowSplit's parts dealt out as for_each_chunk
// does, head element t, body chunks t, t + n, t + 2n, ... (at most kVecs of them) and tail element
// t (a head or a tail has fewer than 16 bytes, so at most one element each per thread).
template <class T, int kVecs_>
struct RowSlice {
  static constexpr int kVecs = kVecs_;
  float head, body[kVecs][kWidth<T>], tail;
};

// Calls f(c, Count<n>, v, ...) for each part of the row the thread owns: c its first column, n its
// element count, v its n floats in the slice @p s (and the same part of each of @p more).
template <class T, bool kWarpRows, class F, class Slice, class... More>
__device__ void for_each_owned(const RowSplit<T>& split, const RowTeam<kWarpRows>& team, F f, Slice& s,
                               More&... more) {
  if (team.t < split.head) f(team.t, Count<1>{}, &s.head, &more.head...);
#pragma unroll
  for (int j = 0; j < Slice::kVecs; ++j) {
    const int i = j * team.n + team.t;
    if (i < split.nvec) f(split.head + i * kWidth<T>, Count<kWidth<T>>{}, s.body[j], more.body[j]...);
  }
  if (split.tail + team.t < split.cols) f(split.tail + team.t, Count<1>{}, &s.tail, &more.tail...);
}

// Loads the thread's part of @p row into @p s (converted to float).
template <class T, bool kWarpRows, class Slice, class U>
__device__ void load_owned(const RowSplit<T>& split, const RowTeam<kWarpRows>& team, const U* row, Slice& s) {
  for_each_owned(split, team, [&](int c, auto n, float* v) { load_n<decltype(n)::value>(row + c, v); }, s);
}

template <class T, int kVecs, bool kWarpRows>
__global__ void softmax_rows_kernel(const T* x, T* y, int rows, int cols) {
  const RowTeam<kWarpRows> team;
  if (team.row >= rows) return;  // whole warps: only warp rows can run past the last row
  const std::size_t offset = static_cast<std::size_t>(team.row) * cols;
  const RowSplit<T> split(x + offset, cols);
  RowSlice<T, kVecs> v;
  load_owned(split, team, x + offset, v);
  float m = -INFINITY;
  for_each_owned(split, team, [&](int, auto n, float* e) {
#pragma unroll
    for (int k = 0; k < decltype(n)::value; ++k) m = fmaxf(m, e[k]);
  }, v);
  m = team.max(m);
  float s = 0.0f;
  for_each_owned(split, team, [&](int, auto n, float* e) {
#pragma unroll
    for (int k = 0; k < decltype(n)::value; ++k) {
      e[k] = m == -INFINITY ? 0.0f : __expf(e[k] - m);  // a fully masked row gets zeros
      s += e[k];
    }
  }, v);
  s = team.sum(s);
  const float inv = m == -INFINITY ? 0.0f : 1.0f / s;
  for_each_owned(split, team, [&](int c, auto n, float* e) {
    constexpr int N = decltype(n)::value;
#pragma unroll
    for (int k = 0; k < N; ++k) e[k] *= inv;
    store_n<N>(y + offset + c, e);
  }, v);
}

// Rows longer than kMaxCachedCols: the online pass, then a second read of x.
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

// How a row-in-registers kernel is launched for rows of @p cols elements of @p width per 16 bytes,
// with at most @p max_vecs 16-byte chunks per thread: a warp per row when 32 threads suffice,
// else a block per row of just enough warps. vecs bounds a thread's chunks (the body of a row has
// at most cols / width, whatever its head).
struct RowLaunch {
  bool warp_rows;
  int vecs, threads, blocks;
};

RowLaunch row_launch(int rows, int cols, int width, int max_vecs) {
  const int chunks = cols / width;
  if (chunks <= 32 * max_vecs) {
    constexpr int kWarpsPerBlock = 4;
    return {true, std::max(1, (chunks + 31) / 32), 32 * kWarpsPerBlock, (rows + kWarpsPerBlock - 1) / kWarpsPerBlock};
  }
  const int threads = round_up((chunks + max_vecs - 1) / max_vecs, 32);
  return {false, (chunks + threads - 1) / threads, threads, rows};
}

// Calls launch(Count<V>{}, std::bool_constant<warp_rows>{}) with V = l.vecs as a compile-time
// constant (V0 <= V <= kMax), so launch can name the kernel instance.
template <int V0, int kMax, class Launch>
void with_row_kernel(const RowLaunch& l, Launch launch) {
  if constexpr (V0 <= kMax) {
    if (l.vecs != V0) {
      with_row_kernel<V0 + 1, kMax>(l, launch);
    } else if (l.warp_rows) {
      launch(Count<V0>{}, std::true_type{});
    } else {
      launch(Count<V0>{}, std::false_type{});
    }
  }
}

// At most 32 floats of a row per thread (8 float4s, or 4 chunks of 8 bf16): with the rest of the
// kernel's registers that leaves several blocks per multiprocessor.
constexpr int kRowFloatsPerThread = 32;

template <class T>
cudaError_t softmax_final(const T* x, T* y, int rows, int cols) {
  if (rows <= 0) return cudaSuccess;
  if (cols <= kMaxCachedCols) {
    constexpr int kMaxVecs = kRowFloatsPerThread / kWidth<T>;
    const RowLaunch l = row_launch(rows, cols, kWidth<T>, kMaxVecs);
    with_row_kernel<1, kMaxVecs>(l, [&](auto vecs, auto warp_rows) {
      softmax_rows_kernel<T, decltype(vecs)::value, decltype(warp_rows)::value><<<l.blocks, l.threads>>>(x, y, rows,
                                                                                                          cols);
    });
  } else {
    softmax_streaming_kernel<T><<<rows, block_threads(cols, 4 * kWidth<T>)>>>(x, y, cols);
  }
  return cudaGetLastError();
}

// ---- softmax backward ------------------------------------------------------------------------------

// dx = y * (dy - dot), dot = sum(dy * y): the rows of y and dy in registers (the forward's
// RowTeam and RowSlice, half the chunks per thread for two rows), read once.
template <int kVecs, bool kWarpRows>
__global__ void softmax_backward_rows_kernel(const float* y, const float* dy, float* dx, int rows, int cols) {
  const RowTeam<kWarpRows> team;
  if (team.row >= rows) return;
  const std::size_t offset = static_cast<std::size_t>(team.row) * cols;
  const RowSplit<float> split(y + offset, cols);
  RowSlice<float, kVecs> a, b;
  load_owned(split, team, y + offset, a);
  load_owned(split, team, dy + offset, b);
  float dot = 0.0f;
  for_each_owned(split, team, [&](int, auto n, float* p, float* q) {
#pragma unroll
    for (int k = 0; k < decltype(n)::value; ++k) dot += p[k] * q[k];
  }, a, b);
  dot = team.sum(dot);
  for_each_owned(split, team, [&](int c, auto n, float* p, float* q) {
    constexpr int N = decltype(n)::value;
#pragma unroll
    for (int k = 0; k < N; ++k) p[k] *= q[k] - dot;
    store_n<N>(dx + offset + c, p);
  }, a, b);
}

// Rows longer than kMaxCachedCols: dot in one pass, dx in a second (whose reads of the block's own
// row mostly hit the cache on a GPU).
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

cudaError_t softmax_backward_final(const float* y, const float* dy, float* dx, int rows, int cols) {
  if (rows <= 0) return cudaSuccess;
  if (cols <= kMaxCachedCols) {
    constexpr int kMaxVecs = kRowFloatsPerThread / 4 / 2;  // two rows: 4 float4s of each
    const RowLaunch l = row_launch(rows, cols, 4, kMaxVecs);
    with_row_kernel<1, kMaxVecs>(l, [&](auto vecs, auto warp_rows) {
      softmax_backward_rows_kernel<decltype(vecs)::value, decltype(warp_rows)::value><<<l.blocks, l.threads>>>(
          y, dy, dx, rows, cols);
    });
  } else {
    softmax_backward_kernel<<<rows, block_threads(cols, 16)>>>(y, dy, dx, cols);
  }
  return cudaGetLastError();
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

// The normalizing pass of the streaming forward: y = (v - mean) * rstd * gamma (+ beta), where
// load(c, n, v) gives the row's values (read from x again).
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

// Final forward, layer norm (kCentered) or RMSNorm, rows up to kMaxCachedCols: the row read once
// into registers (softmax_rows_kernel's RowTeam and RowSlice), then the mean and the variance as
// two passes over the registers: exact two-pass statistics for one read of x. For RMSNorm, beta
// and mean_out are unused and rstd_out gets rrms.
template <bool kCentered, class T, int kVecs, bool kWarpRows>
__global__ void norm_rows_kernel(const T* x, const T* gamma, const T* beta, T* y, float* mean_out, float* rstd_out,
                                 int rows, int cols, float eps) {
  const RowTeam<kWarpRows> team;
  if (team.row >= rows) return;
  const std::size_t offset = static_cast<std::size_t>(team.row) * cols;
  const RowSplit<T> split(x + offset, cols);
  RowSlice<T, kVecs> v;
  load_owned(split, team, x + offset, v);
  float s = 0.0f;
  for_each_owned(split, team, [&](int, auto n, float* e) {
#pragma unroll
    for (int k = 0; k < decltype(n)::value; ++k) s += kCentered ? e[k] : e[k] * e[k];
  }, v);
  float mean = 0.0f, rstd;
  if constexpr (kCentered) {
    mean = team.sum(s) / cols;
    float q = 0.0f;
    for_each_owned(split, team, [&](int, auto n, float* e) {
#pragma unroll
      for (int k = 0; k < decltype(n)::value; ++k) q += (e[k] - mean) * (e[k] - mean);
    }, v);
    rstd = rsqrtf(team.sum(q) / cols + eps);
  } else {
    rstd = rsqrtf(team.sum(s) / cols + eps);
  }
  if (team.t == 0) {
    if constexpr (kCentered) mean_out[team.row] = mean;
    rstd_out[team.row] = rstd;
  }
  for_each_owned(split, team, [&](int c, auto n, float* e) {
    constexpr int N = decltype(n)::value;
    float g[N], b[N] = {};
    load_n<N>(gamma + c, g);
    if constexpr (kCentered) load_n<N>(beta + c, b);
#pragma unroll
    for (int k = 0; k < N; ++k) e[k] = (e[k] - mean) * rstd * g[k] + b[k];
    store_n<N>(y + offset + c, e);
  }, v);
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

// Rows longer than kMaxCachedCols: Welford statistics (layer norm) or the sum of squares (RMSNorm) in
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
  if (cols <= kMaxCachedCols) {
    constexpr int kMaxVecs = kRowFloatsPerThread / kWidth<T>;
    const RowLaunch l = row_launch(rows, cols, kWidth<T>, kMaxVecs);
    with_row_kernel<1, kMaxVecs>(l, [&](auto vecs, auto warp_rows) {
      norm_rows_kernel<kCentered, T, decltype(vecs)::value, decltype(warp_rows)::value><<<l.blocks, l.threads>>>(
          x, gamma, beta, y, mean, rstd, rows, cols, eps);
    });
  } else {
    norm_streaming_kernel<kCentered, T><<<rows, block_threads(cols, 4 * kWidth<T>)>>>(x, gamma, beta, y, mean, rstd,
                                                                                      cols, eps);
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

// Rows whose length is a multiple of 4, up to kVecs (<= 4) float4 chunks per thread and at most
// kNormBackwardThreads threads: the thread's partial gradients and row chunks live in registers.
// The loop is software-pipelined: the block's next row of x and dy (and its mean and rstd) is
// loaded before the current row is reduced and written, so the block has a row's loads in flight
// also across its __syncthreads(), and x and dy are read once. gamma is read per row (an L1 hit)
// rather than held: __launch_bounds__ caps the registers at 128, so that at 256 threads two blocks
// share a multiprocessor and two rows are in flight there.
constexpr int kNormBackwardThreads = 512;
constexpr int kNormBackwardVecs = 4;

template <bool kCentered, int kVecs>
__global__ void __launch_bounds__(kNormBackwardThreads)
    norm_backward_vec_kernel(const float* dy, const float* x, const float* gamma, const float* mean,
                             const float* rstd, float* dx, float* part_g, float* part_b, int rows, int cols) {
  const int nvec = cols / 4;
  float pg[kVecs][4] = {}, pb[kVecs][4] = {};
  float xs[kVecs][4] = {}, ds[kVecs][4] = {}, mu = 0.0f, rs = 0.0f;  // the row being loaded
  auto load_chunks = [&](const float* p, float (*v)[4]) {
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int i = j * blockDim.x + threadIdx.x;
      if (i < nvec) load16(p + 4 * i, v[j]);
    }
  };
  auto load_row = [&](int r) {
    load_chunks(x + static_cast<std::size_t>(r) * cols, xs);
    load_chunks(dy + static_cast<std::size_t>(r) * cols, ds);
    mu = kCentered ? mean[r] : 0.0f;
    rs = rstd[r];
  };
  if (blockIdx.x < rows) load_row(blockIdx.x);
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    float xh[kVecs][4], g[kVecs][4] = {};
    load_chunks(gamma, g);
    const float mu_r = mu, rs_r = rs;
    float2 sums{0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        xh[j][k] = (xs[j][k] - mu_r) * rs_r;
        g[j][k] *= ds[j][k];
        if (j * blockDim.x + threadIdx.x < nvec) {
          sums.x += g[j][k];
          sums.y += g[j][k] * xh[j][k];
          pg[j][k] += ds[j][k] * xh[j][k];
          pb[j][k] += ds[j][k];
        }
      }
    }
    if (r + gridDim.x < rows) load_row(r + gridDim.x);  // xs and ds are free again: fetch the next row
    sums = block_sum(sums);
    const float a = kCentered ? sums.x / cols : 0.0f, b = sums.y / cols;
    float* dxr = dx + static_cast<std::size_t>(r) * cols;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      const int i = j * blockDim.x + threadIdx.x;
      if (i < nvec) {
        float d[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) d[k] = rs_r * (g[j][k] - a - xh[j][k] * b);
        store16(dxr + 4 * i, d);
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

// dgamma[c] = sum over the partial rows p of part_g[p][c] (and dbeta from part_b), in a fixed
// order. A block takes 32 columns: its kParamGradSlices warps each add every kParamGradSlices-th
// partial row (p = warp, warp + kParamGradSlices, ...), a warp reading 32 consecutive floats of a
// row, and one warp adds the slices' sums in slice order. Many columns and slices at once keep
// enough loads in flight that this pass costs a few microseconds, not a long serial loop per column.
constexpr int kParamGradSlices = 8;

__global__ void norm_param_grad_kernel(const float* part_g, const float* part_b, float* dgamma, float* dbeta,
                                       int parts, int cols) {
  __shared__ float slice_g[kParamGradSlices][32], slice_b[kParamGradSlices][32];
  const int lane = threadIdx.x % 32, slice = threadIdx.x / 32;
  const int c = blockIdx.x * 32 + lane;
  float g = 0.0f, b = 0.0f;
  if (c < cols) {
    for (int p = slice; p < parts; p += kParamGradSlices) {
      g += part_g[static_cast<std::size_t>(p) * cols + c];
      if (dbeta != nullptr) b += part_b[static_cast<std::size_t>(p) * cols + c];
    }
  }
  slice_g[slice][lane] = g;
  slice_b[slice][lane] = b;
  __syncthreads();
  if (slice == 0 && c < cols) {
    for (int s = 1; s < kParamGradSlices; ++s) {
      g += slice_g[s][lane];
      b += slice_b[s][lane];
    }
    dgamma[c] = g;
    if (dbeta != nullptr) dbeta[c] = b;
  }
}

// Blocks of @p kernel with @p threads each that the GPU holds at once. A grid-strided backward
// launches no more than that: a second wave of blocks would double its time.
template <class Kernel>
int resident_blocks(Kernel* kernel, int threads) {
  int device = 0, sms = 0, per_sm = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess || sms * per_sm <= 0) {
    (void)cudaGetLastError();
    return kNormPartialRows;
  }
  return sms * per_sm;
}

// Launches norm_backward_vec_kernel<kCentered, vecs> (vecs = V .. kNormBackwardVecs, a compile-time
// constant) on as many blocks as are resident at once, at most kNormPartialRows and rows; returns
// that count.
template <bool kCentered, int V>
int launch_norm_backward_vec(int vecs, int threads, const float* dy, const float* x, const float* gamma,
                             const float* mean, const float* rstd, float* dx, float* part_g, float* part_b, int rows,
                             int cols) {
  if constexpr (V <= kNormBackwardVecs) {
    if (vecs == V) {
      static const int resident = resident_blocks(norm_backward_vec_kernel<kCentered, V>, threads);
      const int parts = std::min({rows, kNormPartialRows, resident});
      norm_backward_vec_kernel<kCentered, V><<<parts, threads>>>(dy, x, gamma, mean, rstd, dx, part_g, part_b, rows, cols);
      return parts;
    }
    return launch_norm_backward_vec<kCentered, V + 1>(vecs, threads, dy, x, gamma, mean, rstd, dx, part_g, part_b,
                                                      rows, cols);
  }
  return 0;
}

template <bool kCentered>
cudaError_t norm_backward(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                          float* dx, float* dgamma, float* dbeta, int rows, int cols, float* workspace) {
  int parts = std::min(std::max(rows, 0), kNormPartialRows);
  float* part_g = workspace;
  float* part_b = workspace + static_cast<std::size_t>(kNormPartialRows) * cols;
  if (parts > 0) {
    const int threads = block_threads(cols, 16);
    const int vecs = (cols / 4 + threads - 1) / threads;
    if (cols % 4 == 0 && vecs <= kNormBackwardVecs && threads <= kNormBackwardThreads) {
      parts = launch_norm_backward_vec<kCentered, 1>(vecs, threads, dy, x, gamma, mean, rstd, dx, part_g, part_b, rows,
                                                     cols);
    } else {
      norm_backward_kernel<kCentered><<<parts, threads>>>(dy, x, gamma, mean, rstd, dx, part_g, part_b, rows, cols);
    }
    if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) return err;
  }
  norm_param_grad_kernel<<<(cols + 31) / 32, 32 * kParamGradSlices>>>(part_g, part_b, dgamma,
                                                                       kCentered ? dbeta : nullptr, parts, cols);
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
  return softmax_backward_final(y, dy, dx, rows, cols);
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
