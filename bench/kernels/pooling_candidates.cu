// Candidate kernels for lab 07's maxpool2d_backward (see pooling_candidates.h).
//
// The 3 x 3, stride 2 windows of a row: window p covers image rows 2p - pad .. 2p - pad + 2. The
// image's rows pair up as (2b - pad + 1, 2b - pad + 2): the first is covered by window b alone (its
// middle row), the second by windows b and b + 1 (the last row of one, the first of the next).
// So the 2 x 2 block of dx at block (b, c) needs exactly the windows (b, c), (b, c + 1),
// (b + 1, c), (b + 1, c + 1): one thread reads those four argmax and dy values once, for four
// pixels, and adds them in the reference's (p, q) order (bit-identical results).
#include "pooling_candidates.h"

#include <algorithm>
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
cudaError_t launch(const PoolParams& p, const float* dy, const int* argmax, float* dx) {
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

}  // namespace

cudaError_t maxpool_backward_blocks(PoolParams p, const float* dy, const int* argmax, float* dx,
                                    int planes_per_thread) {
  if (p.R != 3 || p.S != 3 || p.stride_h != 2 || p.stride_w != 2) return cudaErrorInvalidValue;
  switch (planes_per_thread) {
    case 1: return launch<1>(p, dy, argmax, dx);
    case 2: return launch<2>(p, dy, argmax, dx);
    case 4: return launch<4>(p, dy, argmax, dx);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace candidates
