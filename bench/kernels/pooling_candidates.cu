// Candidate kernels for lab 07's maxpool2d_forward and maxpool2d_backward (see
// pooling_candidates.h).
//
// Forward: the window of output q (stride 2) covers columns 2q - pad_w .. 2q - pad_w + 2, so the
// two outputs q = 2k, 2k + 1 of a tile cover columns 4k - pad_w .. 4k - pad_w + 4: the 16-byte
// chunk of columns 4k .. 4k + 3 and one column beside it. Rows likewise: output rows p0 .. p0 +
// rows - 1 cover input rows 2 p0 - pad_h .. 2 (p0 + rows) - pad_h, neighbouring windows sharing a
// row. Each window is then scanned over its in-image pixels in row-major order with the reference's
// strict >, from the reference's start (-inf at the first in-image pixel): the same y and argmax
// bits, NaN and -inf included.
//
// Backward: window p covers image rows 2p - pad .. 2p - pad + 2. The image's rows pair up as
// (2b - pad + 1, 2b - pad + 2): the first is covered by window b alone (its middle row), the
// second by windows b and b + 1 (the last row of one, the first of the next). So the 2 x 2 block of dx at block (b, c) needs exactly the windows (b, c), (b, c + 1),
// (b + 1, c), (b + 1, c + 1): one thread reads those four argmax and dy values once, for four
// pixels, and adds them in the reference's (p, q) order (bit-identical results).
#include "pooling_candidates.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace candidates {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxGridY = 65535;

int floor_div2(int v) { return v >= 0 ? v / 2 : -((1 - v) / 2); }

template <int PLANES>
__global__ void __launch_bounds__(kThreads)
    backward_blocks_kernel(PoolParams s, int P, int Q, int planes, int b_min, int c_min, int B, int C,
                           const float* __restrict__ dy, const int* __restrict__ argmax, float* __restrict__ dx) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= B * C) return;
  const int b = b_min + j / C, c = c_min + j % C;
  const int r0 = 2 * b - s.pad_h + 1, c0 = 2 * c - s.pad_w + 1;  // the block's first row and column
  bool win[2][2];  // window (b + a, c + e) exists
#pragma unroll
  for (int a = 0; a < 2; ++a) {
#pragma unroll
    for (int e = 0; e < 2; ++e) win[a][e] = b + a >= 0 && b + a < P && c + e >= 0 && c + e < Q;
  }
  const bool row_ok[2] = {r0 >= 0 && r0 < s.H, r0 + 1 >= 0 && r0 + 1 < s.H};
  const bool col_ok[2] = {c0 >= 0 && c0 < s.W, c0 + 1 >= 0 && c0 + 1 < s.W};
  const std::size_t plane_out = static_cast<std::size_t>(P) * Q, plane_in = static_cast<std::size_t>(s.H) * s.W;
  for (int n0 = blockIdx.y; n0 < planes; n0 += PLANES * gridDim.y) {
    int chosen[PLANES][2][2];
    float grad[PLANES][2][2];
    // Every load of the thread's planes first (argmax and dy together: no dependent round trip).
#pragma unroll
    for (int i = 0; i < PLANES; ++i) {
      const int n = n0 + i * gridDim.y;
#pragma unroll
      for (int a = 0; a < 2; ++a) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const bool ok = n < planes && win[a][e];
          const std::size_t o = static_cast<std::size_t>(n) * plane_out + static_cast<std::size_t>(b + a) * Q + (c + e);
          chosen[i][a][e] = ok ? argmax[o] : -1;
          grad[i][a][e] = ok ? dy[o] : 0.0f;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < PLANES; ++i) {
      const int n = n0 + i * gridDim.y;
      if (n >= planes) break;
      float* out = dx + static_cast<std::size_t>(n) * plane_in;
#pragma unroll
      for (int u = 0; u < 2; ++u) {  // row r0 + u: window b covers both rows, b + 1 only the second
        if (!row_ok[u]) continue;
        const int r = r0 + u;
        float v[2];
#pragma unroll
        for (int t = 0; t < 2; ++t) {  // column c0 + t: window c covers both, c + 1 only the second
          const int at = r * s.W + c0 + t;
          float sum = 0.0f;
#pragma unroll
          for (int a = 0; a <= u; ++a) {
#pragma unroll
            for (int e = 0; e <= t; ++e) {
              if (chosen[i][a][e] == at) sum += grad[i][a][e];
            }
          }
          v[t] = sum;
        }
        const std::size_t first = static_cast<std::size_t>(r) * s.W + c0;
        if (col_ok[0] && col_ok[1] && ((static_cast<std::size_t>(n) * plane_in + first) & 1) == 0) {
          *reinterpret_cast<float2*>(out + first) = make_float2(v[0], v[1]);
        } else {
          if (col_ok[0]) out[first] = v[0];
          if (col_ok[1]) out[first + 1] = v[1];
        }
      }
    }
  }
}

template <int PLANES>
cudaError_t launch_backward(const PoolParams& p, const float* dy, const int* argmax, float* dx) {
  const int P = pool_out_h(p), Q = pool_out_w(p);
  const long long planes = static_cast<long long>(p.N) * p.C;
  if (planes == 0 || p.H == 0 || p.W == 0) return cudaSuccess;
  // Blocks b whose rows 2b - pad + 1, 2b - pad + 2 meet the image [0, H).
  const int b_min = floor_div2(p.pad_h - 1), b_max = floor_div2(p.H + p.pad_h - 2);
  const int c_min = floor_div2(p.pad_w - 1), c_max = floor_div2(p.W + p.pad_w - 2);
  const int B = b_max - b_min + 1, C = c_max - c_min + 1;
  const long long rows = (planes + PLANES - 1) / PLANES;
  const dim3 grid((B * C + kThreads - 1) / kThreads, static_cast<unsigned>(std::min<long long>(rows, kMaxGridY)));
  backward_blocks_kernel<PLANES><<<grid, kThreads>>>(p, P, Q, static_cast<int>(planes), b_min, c_min, B, C, dy,
                                                      argmax, dx);
  return cudaGetLastError();
}

// ---- maxpool2d_forward ------------------------------------------------------------------------------

constexpr unsigned kFullMask = 0xffffffffu;

// A tile's columns 4k - 1 .. 4k + 4 are kept as v[.][r][0 .. 5]; window column t of output 2k + e
// is v[.][r][2e + t + 1 - PADW], an index known at compile time (registers, not local memory).
constexpr int kCols = 6;

__device__ void consider(float v, int at, float& best, int& best_at) {
  if (v > best) {  // strict: on a tie the first pixel in row-major order stays
    best = v;
    best_at = at;
  }
}

// Tiles of ROWS x 2 outputs numbered plane by plane, row by row; a thread takes ITEMS of them per
// iteration (every load of all of them in flight at once), striding over the grid.
template <int ROWS, int ITEMS, bool SHUFFLE, int PADW>
__global__ void __launch_bounds__(kThreads)
    forward_tiles_kernel(PoolParams s, int P, int Q, int K, unsigned tiles_per_plane, unsigned total,
                         const float* __restrict__ x, float* __restrict__ y, int* __restrict__ argmax) {
  constexpr int kRows = 2 * ROWS + 1;
  const int lane = threadIdx.x % 32;
  const unsigned stride = gridDim.x * blockDim.x;
  const bool vector_rows = s.W % 4 == 0;  // every row's chunk 4k .. 4k + 3 is 16-byte aligned
  // The loop's condition is the same for the whole block: every lane takes part in the shuffles.
  for (unsigned base = blockIdx.x * blockDim.x; base < total; base += ITEMS * stride) {
    bool valid[ITEMS], from_lane[ITEMS];
    int plane[ITEMS], p0[ITEMS], k[ITEMS], rows_in[ITEMS];
    float v[ITEMS][kRows][kCols];
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      const unsigned i = base + threadIdx.x + u * stride;
      valid[u] = i < total;
      const unsigned pl = valid[u] ? i / tiles_per_plane : 0, j = i - pl * tiles_per_plane;
      plane[u] = static_cast<int>(pl);
      p0[u] = static_cast<int>(j / K) * ROWS;
      k[u] = static_cast<int>(j % K);
      rows_in[u] = 2 * min(ROWS, P - p0[u]) + 1;  // input rows the tile's existing outputs cover
      // The neighbour lane holds tile i - 1 (pad_w 1: its column 4k - 1) or i + 1 (pad_w 0: 4k + 4)
      // of the same output rows.
      from_lane[u] = SHUFFLE && valid[u] &&
                     (PADW == 1 ? lane > 0 && k[u] > 0 : lane < 31 && k[u] + 1 < K && i + 1 < total);
    }
    // Every load first: a float4 (or four scalars) per row, and the column beside it where no lane
    // brings it.
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      const int c4 = 4 * k[u], c_extra = PADW == 1 ? c4 - 1 : c4 + 4, extra = PADW == 1 ? 0 : 5;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int t = 0; t < kCols; ++t) v[u][r][t] = 0.0f;
        const int h = 2 * p0[u] - s.pad_h + r;
        if (!valid[u] || r >= rows_in[u] || h < 0 || h >= s.H) continue;
        const float* row = x + (static_cast<std::size_t>(plane[u]) * s.H + h) * s.W;
        if (vector_rows && c4 + 3 < s.W) {
          const float4 f = *reinterpret_cast<const float4*>(row + c4);
          v[u][r][1] = f.x, v[u][r][2] = f.y, v[u][r][3] = f.z, v[u][r][4] = f.w;
        } else {
#pragma unroll
          for (int t = 0; t < 4; ++t) {
            if (c4 + t < s.W) v[u][r][1 + t] = row[c4 + t];
          }
        }
        if (!from_lane[u] && c_extra >= 0 && c_extra < s.W) v[u][r][extra] = row[c_extra];
      }
    }
    if constexpr (SHUFFLE) {
#pragma unroll
      for (int u = 0; u < ITEMS; ++u) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const float got = PADW == 1 ? __shfl_up_sync(kFullMask, v[u][r][4], 1)
                                      : __shfl_down_sync(kFullMask, v[u][r][1], 1);
          if (from_lane[u]) v[u][r][PADW == 1 ? 0 : 5] = got;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < ITEMS; ++u) {
      if (!valid[u]) continue;
#pragma unroll
      for (int tp = 0; tp < ROWS; ++tp) {
        const int p = p0[u] + tp;
        if (p >= P) continue;
        const int hs = 2 * p - s.pad_h;
        float best[2];
        int best_at[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int ws = 2 * (2 * k[u] + e) - PADW;
          best[e] = -INFINITY;
          best_at[e] = max(hs, 0) * s.W + max(ws, 0);  // also the answer for a window of -inf only
#pragma unroll
          for (int r = 0; r < 3; ++r) {
            const int h = hs + r;
            if (h < 0 || h >= s.H) continue;
#pragma unroll
            for (int t = 0; t < 3; ++t) {
              const int w = ws + t;
              if (w >= 0 && w < s.W) consider(v[u][2 * tp + r][2 * e + t + 1 - PADW], h * s.W + w, best[e], best_at[e]);
            }
          }
        }
        const int q = 2 * k[u];
        const std::size_t o = (static_cast<std::size_t>(plane[u]) * P + p) * Q + q;
        if (q + 1 < Q && Q % 2 == 0) {  // o even: 8-byte aligned
          *reinterpret_cast<float2*>(y + o) = make_float2(best[0], best[1]);
          *reinterpret_cast<int2*>(argmax + o) = make_int2(best_at[0], best_at[1]);
        } else {
          y[o] = best[0];
          argmax[o] = best_at[0];
          if (q + 1 < Q) {
            y[o + 1] = best[1];
            argmax[o + 1] = best_at[1];
          }
        }
      }
    }
  }
}

struct Resident {
  cudaError_t error = cudaSuccess;
  long long blocks = 1;
};

template <int ROWS, int ITEMS, bool SHUFFLE, int PADW>
cudaError_t launch_forward_padded(const PoolParams& p, const float* x, float* y, int* argmax, bool one_wave) {
  const int P = pool_out_h(p), Q = pool_out_w(p), K = (Q + 1) / 2;
  const long long planes = static_cast<long long>(p.N) * p.C;
  const long long tiles_per_plane = static_cast<long long>((P + ROWS - 1) / ROWS) * K;
  const long long total = planes * tiles_per_plane;
  if (total == 0) return cudaSuccess;
  if (total >= (1LL << 31)) return cudaErrorInvalidValue;
  long long blocks = (total + ITEMS * kThreads - 1) / (ITEMS * kThreads);
  if (one_wave) {
    // As many blocks as the GPU holds at once (the kernel's registers decide how many), queried
    // once: the process's device does not change, and a query per call would be timed with the
    // kernel.
    static const Resident resident = [] {
      Resident r;
      int device = 0, sms = 1, per_sm = 1;
      r.error = cudaGetDevice(&device);
      if (r.error == cudaSuccess) r.error = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
      if (r.error == cudaSuccess) {
        r.error = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, forward_tiles_kernel<ROWS, ITEMS, SHUFFLE, PADW>, kThreads, 0);
      }
      r.blocks = static_cast<long long>(std::max(per_sm, 1)) * sms;
      return r;
    }();
    if (resident.error != cudaSuccess) return resident.error;
    blocks = std::min(blocks, resident.blocks);
  }
  forward_tiles_kernel<ROWS, ITEMS, SHUFFLE, PADW><<<static_cast<unsigned>(blocks), kThreads>>>(
      p, P, Q, K, static_cast<unsigned>(tiles_per_plane), static_cast<unsigned>(total), x, y, argmax);
  return cudaGetLastError();
}

template <int ROWS, int ITEMS, bool SHUFFLE>
cudaError_t launch_forward(const PoolParams& p, const float* x, float* y, int* argmax, bool one_wave) {
  return p.pad_w == 1 ? launch_forward_padded<ROWS, ITEMS, SHUFFLE, 1>(p, x, y, argmax, one_wave)
                      : launch_forward_padded<ROWS, ITEMS, SHUFFLE, 0>(p, x, y, argmax, one_wave);
}

}  // namespace

cudaError_t maxpool_forward_tiles(PoolParams p, const float* x, float* y, int* argmax, PoolForwardShape shape) {
  if (p.R != 3 || p.S != 3 || p.stride_h != 2 || p.stride_w != 2 || p.pad_w < 0 || p.pad_w > 1) {
    return cudaErrorInvalidValue;
  }
  const bool b = shape.one_wave;
  // The shapes bench_kernels times (each instantiation is a kernel of its own).
  if (shape.rows == 1 && shape.items == 1 && !shape.shuffle) return launch_forward<1, 1, false>(p, x, y, argmax, b);
  if (shape.rows == 2 && shape.items == 1 && !shape.shuffle) return launch_forward<2, 1, false>(p, x, y, argmax, b);
  if (shape.rows == 2 && shape.items == 1 && shape.shuffle) return launch_forward<2, 1, true>(p, x, y, argmax, b);
  if (shape.rows == 2 && shape.items == 2 && !shape.shuffle) return launch_forward<2, 2, false>(p, x, y, argmax, b);
  return cudaErrorInvalidValue;
}

cudaError_t maxpool_backward_blocks(PoolParams p, const float* dy, const int* argmax, float* dx,
                                    int planes_per_thread) {
  if (p.R != 3 || p.S != 3 || p.stride_h != 2 || p.stride_w != 2) return cudaErrorInvalidValue;
  switch (planes_per_thread) {
    case 1: return launch_backward<1>(p, dy, argmax, dx);
    case 2: return launch_backward<2>(p, dy, argmax, dx);
    case 4: return launch_backward<4>(p, dy, argmax, dx);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace candidates
