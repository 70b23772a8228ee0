// Lab 07 reference solution, part 1: 2-D convolution (cross-correlation), forward and backward.
//
// The ladder (labs/07-convolution/README.md):
//   1 conv2d_direct          a thread per output y[n][k][p][q], the C R S sum in a loop
//   2 conv2d_im2col          per image, an im2col kernel writes the (C R S) x (P Q) matrix into the
//                            workspace, then the lab-05 sgemm() multiplies the filters by it
//   3 conv2d_implicit_gemm   the same GEMM (M = N P Q pixels, N = K filters, K = C R S taps) with
//                            the im2col tile gathered from x into shared memory while loading:
//                            no workspace, each element of x fetched by a block a bounded number
//                            of times
//   final conv2d_forward     NHWC / KRSC / NPQK: along the GEMM's K dimension channels are
//                            contiguous in both x and w, so both tiles load as float4 (C % 4 == 0),
//                            128 x 128 (or 128 x 64) block tiles, 8 x 8 results per thread,
//                            double-buffered shared memory
// Backward, NCHW, both with the final forward's register blocking (8 x 8 or 8 x 4 results per
// thread, float4 shared-memory loads, double-buffered tiles): conv2d_backward_data (dgrad: M = N H W,
// N = C, K = K R S; a tap contributes where the output position it comes from is a whole number
// inside the output; the tile size chosen so the blocks spread evenly over the multiprocessors) and
// conv2d_backward_filter (wgrad: M = K, N = C R S, K = N P Q, split across enough blocks to fill the
// GPU into workspace partials added in a fixed order). conv2d_bn_relu_inference is the final
// forward with a per-filter scale, shift and ReLU applied to the accumulators before the store.
#include "convolution.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "gemm.h"  // lab 05: sgemm(), the GEMM of version 2

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }
int ceil_div(std::size_t a, int b) { return static_cast<int>((a + b - 1) / b); }

// The shape with P and Q, as the kernels use it.
struct Shape {
  int N, C, H, W, K, R, S, P, Q;
  int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
};

Shape shape_of(const ConvParams& c) {
  return {c.N, c.C, c.H, c.W, c.K, c.R, c.S, conv_out_h(c), conv_out_w(c),
          c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w};
}

bool valid(const ConvParams& c) {
  return c.N >= 1 && c.C >= 1 && c.H >= 1 && c.W >= 1 && c.K >= 1 && c.R >= 1 && c.S >= 1 && c.pad_h >= 0 &&
         c.pad_w >= 0 && c.stride_h >= 1 && c.stride_w >= 1 && c.dilation_h >= 1 && c.dilation_w >= 1 &&
         conv_out_h(c) >= 1 && conv_out_w(c) >= 1;
}

}  // namespace

// ---- Version 1: direct ------------------------------------------------------------------------------

__global__ void conv2d_direct_kernel(Shape s, const float* x, const float* w, float* y) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t total = static_cast<std::size_t>(s.N) * s.K * s.P * s.Q;
  if (i >= total) return;
  const int q = static_cast<int>(i % s.Q);
  const int p = static_cast<int>(i / s.Q % s.P);
  const int k = static_cast<int>(i / (static_cast<std::size_t>(s.Q) * s.P) % s.K);
  const int n = static_cast<int>(i / (static_cast<std::size_t>(s.Q) * s.P * s.K));
  float acc = 0.0f;
  for (int c = 0; c < s.C; ++c) {
    const float* plane = x + (static_cast<std::size_t>(n) * s.C + c) * s.H * s.W;
    const float* filter = w + (static_cast<std::size_t>(k) * s.C + c) * s.R * s.S;
    for (int r = 0; r < s.R; ++r) {
      const int h = p * s.stride_h - s.pad_h + r * s.dil_h;
      if (h < 0 || h >= s.H) continue;
      for (int t = 0; t < s.S; ++t) {
        const int ww = q * s.stride_w - s.pad_w + t * s.dil_w;
        if (ww < 0 || ww >= s.W) continue;
        acc += plane[h * s.W + ww] * filter[r * s.S + t];
      }
    }
  }
  y[i] = acc;
}

cudaError_t conv2d_direct(ConvParams p, const float* x, const float* w, float* y) {
  if (!valid(p)) return cudaErrorInvalidValue;
  const Shape s = shape_of(p);
  const std::size_t total = static_cast<std::size_t>(s.N) * s.K * s.P * s.Q;
  conv2d_direct_kernel<<<ceil_div(total, 256), 256>>>(s, x, w, y);
  return cudaGetLastError();
}

// ---- Version 2: im2col + GEMM -------------------------------------------------------------------------

// col[(c R + r) S + s][p Q + q] = x[n][c][h][w], 0 in the padding: a thread per element of col,
// consecutive threads on consecutive (p, q), so both the reads (stride 1) and the writes coalesce.
__global__ void im2col_kernel(Shape s, const float* image, float* col) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t pq_count = static_cast<std::size_t>(s.P) * s.Q;
  if (i >= pq_count * s.C * s.R * s.S) return;
  const int pq = static_cast<int>(i % pq_count);
  const int crs = static_cast<int>(i / pq_count);
  const int t = crs % s.S, r = crs / s.S % s.R, c = crs / (s.S * s.R);
  const int h = pq / s.Q * s.stride_h - s.pad_h + r * s.dil_h;
  const int ww = pq % s.Q * s.stride_w - s.pad_w + t * s.dil_w;
  col[i] = (h >= 0 && h < s.H && ww >= 0 && ww < s.W) ? image[(static_cast<std::size_t>(c) * s.H + h) * s.W + ww]
                                                       : 0.0f;
}

cudaError_t conv2d_im2col(ConvParams p, const float* x, const float* w, float* y, float* workspace) {
  if (!valid(p)) return cudaErrorInvalidValue;
  const Shape s = shape_of(p);
  const int crs = s.C * s.R * s.S, pq = s.P * s.Q;
  for (int n = 0; n < s.N; ++n) {
    im2col_kernel<<<ceil_div(conv2d_im2col_workspace_floats(p), 256), 256>>>(
        s, x + static_cast<std::size_t>(n) * s.C * s.H * s.W, workspace);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    // y[n] (K x PQ) = w (K x CRS) * col (CRS x PQ), row-major.
    const cudaError_t e = sgemm(s.K, pq, crs, 1.0f, w, crs, workspace, pq, 0.0f,
                                y + static_cast<std::size_t>(n) * s.K * pq, pq);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// ---- Version 3: implicit GEMM (NCHW) --------------------------------------------------------------------
//
// GEMM rows m = (n, p, q), columns k (filters), reduction over kk = (c, r, s). A block computes a
// 64 x 64 tile of outputs (64 pixels x 64 filters) with 256 threads of 4 x 4 each; per step of 8
// taps it gathers the 64 x 8 tile of the virtual im2col matrix from x (lanes along m: consecutive
// q, coalesced at stride 1) and the 8 x 64 tile of the filters, both into shared memory.

constexpr int kIgBM = 64, kIgBN = 64, kIgBK = 8;

// The 64 x 64 tile step of version 3: thread (tm, tn) adds the products of rows
// tm + 16 i of As and columns tn * 4 + j of Bs, over the tile's kIgBK taps. (kBRow: the row length
// of Bs, kIgBN and its padding.)
template <int kBRow>
__device__ void multiply_tiles(const float (&As)[kIgBK][kIgBM], const float (&Bs)[kIgBK][kBRow], int tm, int tn,
                               float (&acc)[4][4]) {
#pragma unroll
  for (int d = 0; d < kIgBK; ++d) {
    float a[4], b[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = As[d][tm + 16 * i];
#pragma unroll
    for (int j = 0; j < 4; ++j) b[j] = Bs[d][tn * 4 + j];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
  }
}

// Stores thread (tm, tn)'s 4 x 4 results into an NCHW-shaped output: row m = (n, pixel) of M rows
// of `plane` pixels, column ch0 + tn * 4 + j of `channels`; lanes 0-15 store 16 consecutive pixels.
__device__ void store_tile(const float (&acc)[4][4], float* out, int m0, int tm, int M, int plane, int ch0, int tn,
                           int channels) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + tm + 16 * i;
    if (m >= M) continue;
    const int n = m / plane, pixel = m % plane;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int ch = ch0 + tn * 4 + j;
      if (ch < channels) out[(static_cast<std::size_t>(n) * channels + ch) * plane + pixel] = acc[i][j];
    }
  }
}

__global__ void __launch_bounds__(256) conv2d_implicit_gemm_kernel(Shape s, const float* x, const float* w, float* y) {
  __shared__ float As[kIgBK][kIgBM];      // As[kk][m]
  __shared__ float Bs[kIgBK][kIgBN + 4];  // Bs[kk][k]; padded: the stores along kk hit distinct banks
  const int tid = threadIdx.x;
  const int pq_count = s.P * s.Q, crs_count = s.C * s.R * s.S, rs_count = s.R * s.S;
  const int M = s.N * pq_count;
  const int m0 = blockIdx.x * kIgBM, k0 = blockIdx.y * kIgBN;

  // This thread's row of the A tile (fixed over the loop): m = m0 + tid % 64, taps tid / 64 + 4 j.
  const int a_m = m0 + tid % kIgBM;
  const bool a_row = a_m < M;
  const int a_n = a_row ? a_m / pq_count : 0, a_pq = a_row ? a_m % pq_count : 0;
  const int a_h0 = a_pq / s.Q * s.stride_h - s.pad_h, a_w0 = a_pq % s.Q * s.stride_w - s.pad_w;
  const float* a_image = x + static_cast<std::size_t>(a_n) * s.C * s.H * s.W;
  // The B tile: filter k = k0 + tid / 8 (+ 32), tap tid % 8: eight consecutive floats of a filter.
  const int b_kk = tid % kIgBK;

  const int tm = tid % 16, tn = tid / 16;  // outputs m = tm + 16 i, k = tn * 4 + j
  float acc[4][4] = {};
  for (int kk0 = 0; kk0 < crs_count; kk0 += kIgBK) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int kk_local = tid / kIgBM + 4 * j;
      const int kk = kk0 + kk_local;
      float v = 0.0f;
      if (a_row && kk < crs_count) {
        const int c = kk / rs_count, rs = kk % rs_count;
        const int h = a_h0 + rs / s.S * s.dil_h, ww = a_w0 + rs % s.S * s.dil_w;
        if (h >= 0 && h < s.H && ww >= 0 && ww < s.W) v = a_image[(static_cast<std::size_t>(c) * s.H + h) * s.W + ww];
      }
      As[kk_local][tid % kIgBM] = v;
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int k_local = tid / kIgBK + 32 * j, k = k0 + k_local, kk = kk0 + b_kk;
      Bs[b_kk][k_local] = (k < s.K && kk < crs_count) ? w[static_cast<std::size_t>(k) * crs_count + kk] : 0.0f;
    }
    __syncthreads();
    multiply_tiles(As, Bs, tm, tn, acc);
    __syncthreads();
  }
  store_tile(acc, y, m0, tm, M, pq_count, k0, tn, s.K);  // y[n][k][p][q]
}

cudaError_t conv2d_implicit_gemm(ConvParams p, const float* x, const float* w, float* y) {
  if (!valid(p)) return cudaErrorInvalidValue;
  const Shape s = shape_of(p);
  const dim3 grid(ceil_div(s.N * s.P * s.Q, kIgBM), ceil_div(s.K, kIgBN));
  conv2d_implicit_gemm_kernel<<<grid, 256>>>(s, x, w, y);
  return cudaGetLastError();
}

// ---- Final version: NHWC implicit GEMM, float4 tiles, double buffering -------------------------------------
//
// A[m][kk] = x[n][h][w][c] with kk = (r, s, c), c fastest; B[kk][k] = w[k][kk] (KRSC: the filter
// k is a contiguous row of R S C floats); C[m][k] = y[m * K + k] (NPQK). Both tiles are loaded as
// rows of four consecutive kk (one float4 when C % 4 == 0: the four taps share (r, s) and are
// adjacent channels), stored transposed in shared memory (As[kk][m], Bs[kk][k]; rows padded by 4
// floats so the transposing stores do not conflict), and read back as float4s by the inner loop.

enum class Epilogue { kStore, kBnRelu };

// The batch norm folded into the epilogue: y = max(0, acc * scale + shift) with, per filter k,
// scale = gamma / sqrt(var + eps) and shift = beta - mean * scale.
struct BnRelu {
  const float *gamma, *beta, *mean, *var;
  float eps;
};

// Four consecutive kk of row (image, h0, w0) of the virtual im2col matrix; zeros outside the
// image and past the last tap.
__device__ inline float4 gather4(const Shape& s, const float* image, int h0, int w0, int kk, int crs_count, bool vec) {
  if (vec) {  // C % 4 == 0: kk .. kk + 3 are channels c .. c + 3 of one tap
    if (kk >= crs_count) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const int c = kk % s.C, rs = kk / s.C;
    const int h = h0 + rs / s.S * s.dil_h, ww = w0 + rs % s.S * s.dil_w;
    if (h < 0 || h >= s.H || ww < 0 || ww >= s.W) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    return *reinterpret_cast<const float4*>(image + (static_cast<std::size_t>(h) * s.W + ww) * s.C + c);
  }
  float v[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[j] = 0.0f;
    const int t = kk + j;
    if (t < crs_count) {
      const int c = t % s.C, rs = t / s.C;
      const int h = h0 + rs / s.S * s.dil_h, ww = w0 + rs % s.S * s.dil_w;
      if (h >= 0 && h < s.H && ww >= 0 && ww < s.W) v[j] = image[(static_cast<std::size_t>(h) * s.W + ww) * s.C + c];
    }
  }
  return make_float4(v[0], v[1], v[2], v[3]);
}

// Four consecutive floats of filter row k (kk .. kk + 3), zeros past the end.
__device__ inline float4 filter4(const float* w, int k, int K, int kk, int crs_count, bool vec) {
  if (k >= K) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const float* row = w + static_cast<std::size_t>(k) * crs_count;
  if (vec && kk + 3 < crs_count) return *reinterpret_cast<const float4*>(row + kk);
  return make_float4(kk < crs_count ? row[kk] : 0.0f, kk + 1 < crs_count ? row[kk + 1] : 0.0f,
                     kk + 2 < crs_count ? row[kk + 2] : 0.0f, kk + 3 < crs_count ? row[kk + 3] : 0.0f);
}

template <int BM, int BN, int BK, int TM, int TN, Epilogue kEpilogue>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    conv2d_nhwc_kernel(Shape s, const float* x, const float* w, float* y, BnRelu bn) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  constexpr int kALoads = BM * BK / 4 / kThreads, kBLoads = (BN * BK / 4 + kThreads - 1) / kThreads;
  static_assert(BM * BK / 4 % kThreads == 0 && TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 tiles");
  __shared__ __align__(16) float As[2][BK][BM + 4];
  __shared__ __align__(16) float Bs[2][BK][BN + 4];
  const int tid = threadIdx.x;
  const int pq_count = s.P * s.Q, crs_count = s.R * s.S * s.C;
  const int M = s.N * pq_count;
  const int m0 = blockIdx.x * BM, k0 = blockIdx.y * BN;
  const bool vec = s.C % 4 == 0;

  // Rows of the A tile this thread loads (fixed over the loop): m = f / (BK / 4), f = tid + i kThreads.
  const float* a_image[kALoads];
  int a_h0[kALoads], a_w0[kALoads];
#pragma unroll
  for (int i = 0; i < kALoads; ++i) {
    const int m = m0 + (tid + i * kThreads) / (BK / 4);
    if (m < M) {
      const int n = m / pq_count, pq = m % pq_count;
      a_image[i] = x + static_cast<std::size_t>(n) * s.H * s.W * s.C;
      a_h0[i] = pq / s.Q * s.stride_h - s.pad_h;
      a_w0[i] = pq % s.Q * s.stride_w - s.pad_w;
    } else {
      a_image[i] = x;
      a_h0[i] = -(1 << 28);  // every tap falls outside: zeros
      a_w0[i] = 0;
    }
  }

  float4 a_next[kALoads], b_next[kBLoads];
  auto fetch = [&](int kk0) {
#pragma unroll
    for (int i = 0; i < kALoads; ++i) {
      const int kk = kk0 + (tid + i * kThreads) % (BK / 4) * 4;
      a_next[i] = gather4(s, a_image[i], a_h0[i], a_w0[i], kk, crs_count, vec);
    }
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) {
      const int f = tid + i * kThreads;
      if (f < BN * BK / 4) b_next[i] = filter4(w, k0 + f / (BK / 4), s.K, kk0 + f % (BK / 4) * 4, crs_count, vec);
    }
  };
  auto stash = [&](int buffer) {
#pragma unroll
    for (int i = 0; i < kALoads; ++i) {
      const int f = tid + i * kThreads, m = f / (BK / 4), kk = f % (BK / 4) * 4;
      As[buffer][kk + 0][m] = a_next[i].x;
      As[buffer][kk + 1][m] = a_next[i].y;
      As[buffer][kk + 2][m] = a_next[i].z;
      As[buffer][kk + 3][m] = a_next[i].w;
    }
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) {
      const int f = tid + i * kThreads, k = f / (BK / 4), kk = f % (BK / 4) * 4;
      if (f < BN * BK / 4) {
        Bs[buffer][kk + 0][k] = b_next[i].x;
        Bs[buffer][kk + 1][k] = b_next[i].y;
        Bs[buffer][kk + 2][k] = b_next[i].z;
        Bs[buffer][kk + 3][k] = b_next[i].w;
      }
    }
  };

  const int thread_m = tid / (BN / TN), thread_n = tid % (BN / TN);
  float acc[TM][TN] = {};
  fetch(0);
  stash(0);
  __syncthreads();
  int buffer = 0;
  for (int kk0 = 0; kk0 < crs_count; kk0 += BK) {
    const bool more = kk0 + BK < crs_count;
    if (more) fetch(kk0 + BK);  // global loads in flight while this tile is used
#pragma unroll
    for (int d = 0; d < BK; ++d) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&As[buffer][d][thread_m * TM + i]);
        a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[buffer][d][thread_n * TN + j]);
        b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    if (more) {
      stash(buffer ^ 1);  // the other buffer: its last readers passed the previous barrier
      __syncthreads();
      buffer ^= 1;
    }
  }

  const bool vec_out = s.K % 4 == 0;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + thread_m * TM + i;
    if (m >= M) break;
    float* row = y + static_cast<std::size_t>(m) * s.K;
#pragma unroll
    for (int j = 0; j < TN; j += 4) {
      const int k = k0 + thread_n * TN + j;
      float v[4] = {acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]};
      if constexpr (kEpilogue == Epilogue::kBnRelu) {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          if (k + jj >= s.K) continue;
          const float scale = bn.gamma[k + jj] * rsqrtf(bn.var[k + jj] + bn.eps);
          v[jj] = fmaxf(0.0f, fmaf(v[jj], scale, bn.beta[k + jj] - bn.mean[k + jj] * scale));
        }
      }
      if (vec_out && k + 3 < s.K) {
        *reinterpret_cast<float4*>(row + k) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          if (k + jj < s.K) row[k + jj] = v[jj];
        }
      }
    }
  }
}

namespace {

template <Epilogue kEpilogue>
cudaError_t launch_nhwc(const ConvParams& p, const float* x, const float* w, float* y, BnRelu bn) {
  const Shape s = shape_of(p);
  const int M = s.N * s.P * s.Q;
  if (s.K <= 64) {  // a 128-wide tile of filters would idle half its threads
    constexpr int BM = 128, BN = 64, BK = 8, TM = 8, TN = 4;
    conv2d_nhwc_kernel<BM, BN, BK, TM, TN, kEpilogue>
        <<<dim3(ceil_div(M, BM), ceil_div(s.K, BN)), (BM / TM) * (BN / TN)>>>(s, x, w, y, bn);
  } else {
    constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
    conv2d_nhwc_kernel<BM, BN, BK, TM, TN, kEpilogue>
        <<<dim3(ceil_div(M, BM), ceil_div(s.K, BN)), (BM / TM) * (BN / TN)>>>(s, x, w, y, bn);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t conv2d_forward(ConvParams p, const float* x, const float* w, float* y) {
  if (!valid(p)) return cudaErrorInvalidValue;
  return launch_nhwc<Epilogue::kStore>(p, x, w, y, BnRelu{});
}

// ---- Backward: shared pieces ------------------------------------------------------------------------------------
//
// Both backward passes are implicit GEMMs with the final forward's register blocking: a block owns
// a BM x BN tile of the GEMM's output, steps through the reduction kBwdBK at a time with the two
// operand tiles in double-buffered shared memory (the next step's global loads are in flight, in
// registers, while this step is multiplied), and each thread accumulates TM x TN results from
// float4 shared-memory loads. In NCHW the gathers cannot be float4 (a tap shifts the pixel row by
// one float), so each thread loads scalars, consecutive lanes on consecutive floats of memory.

constexpr int kBwdBK = 8;

namespace {

// The number of multiprocessors (cached): the launchers size their grids to it.
int multiprocessor_count() {
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

// How evenly `blocks` spread over the multiprocessors: the average number per multiprocessor over
// the largest (1 when every one gets the same). 98 blocks on 132 SMs: 0.74, a quarter of the GPU idle.
double spread(long long blocks) {
  const double per_sm = static_cast<double>(blocks) / multiprocessor_count();
  return per_sm / std::ceil(per_sm);
}

}  // namespace

// One step of the register-blocked tile product. The threads form a (BM / TM) x (BN / TN) grid;
// thread (tm, tn) owns rows g * 4 (BM / TM) + tm * 4 + e (g < TM / 4, e < 4) and likewise columns:
// the tile is cut into TM / 4 slices, and in each slice thread tm owns 4 rows at tm * 4, so that the
// lanes of a warp read consecutive float4s of a tile row (no bank conflicts) and later store
// consecutive float4s of the output.
template <int BM, int BN, int TM, int TN>
__device__ __forceinline__ void multiply_blocked(const float (&As)[kBwdBK][BM + 4], const float (&Bs)[kBwdBK][BN + 4],
                                                 int tm, int tn, float (&acc)[TM][TN]) {
#pragma unroll
  for (int d = 0; d < kBwdBK; ++d) {
    float a[TM], b[TN];
#pragma unroll
    for (int g = 0; g < TM / 4; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(&As[d][g * 4 * (BM / TM) + tm * 4]);
      a[g * 4] = v.x, a[g * 4 + 1] = v.y, a[g * 4 + 2] = v.z, a[g * 4 + 3] = v.w;
    }
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(&Bs[d][g * 4 * (BN / TN) + tn * 4]);
      b[g * 4] = v.x, b[g * 4 + 1] = v.y, b[g * 4 + 2] = v.z, b[g * 4 + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
  }
}

// The tile-local row (or column) of result i of a thread at position t along a dimension of
// `tile` values split into groups of 4 among tile / per_thread threads (see multiply_blocked).
template <int kTile, int kPerThread>
__device__ __forceinline__ int blocked_index(int t, int i) {
  return i / 4 * 4 * (kTile / kPerThread) + t * 4 + i % 4;
}

// ---- Backward data (dgrad), NCHW ------------------------------------------------------------------------------
//
// GEMM rows m = (n, h, w) (input pixels), columns c, reduction over kk = (k, r, s):
// dx[n][c][h][w] = sum dy[n][k][p][q] w[k][c][r][s] where h + pad_h - r dil_h = p stride_h with
// 0 <= p < P (and likewise for w, s, q). Other taps are zeros of the virtual matrix.
//
// The A tile (kBwdBK taps x BM pixels of dy) is gathered with the lanes of a warp on 32 consecutive
// pixels of one tap: consecutive q of dy (coalesced), stored unchanged into As[kk][m]. Each warp
// keeps its taps' (k, r, s) and steps them by kBwdBK per tile with additions, not divisions. The B
// tile (kBwdBK taps x BN channels of w) is read with 8 lanes along kk: in KCRS the taps (k, r, s)
// of one (k, c) are R S consecutive floats, so a warp reads 4 runs of 8; stored transposed into
// Bs[kk][c], rows padded by 4 so those 32 stores hit 32 banks.

// A tap (k, r, s), advanced through the reduction by counting, not dividing.
struct Tap {
  int k, r, s;
};

__device__ inline Tap tap_of(int kk, int R, int S) { return {kk / (R * S), kk / S % R, kk % S}; }

__device__ inline void advance(Tap& t, int step, int R, int S) {
  t.s += step;
  while (t.s >= S) {
    t.s -= S;
    if (++t.r == R) t.r = 0, ++t.k;
  }
}

template <int BM, int BN, int TM, int TN, int kMinBlocks>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), kMinBlocks)
    conv2d_dgrad_kernel(Shape s, const float* dy, const float* w, float* dx) {
  constexpr int BK = kBwdBK, kThreads = (BM / TM) * (BN / TN), kWarps = kThreads / 32;
  constexpr int kARows = BK / kWarps, kAPixels = BM / 32;  // per thread: taps x pixels of the A tile
  constexpr int kBLoads = BN * BK / kThreads, kBStride = kThreads / BK;
  static_assert(BK % kWarps == 0 && BM % 32 == 0 && BN * BK % kThreads == 0 && TM % 4 == 0 && TN % 4 == 0,
                "tile shape");
  __shared__ __align__(16) float As[2][BK][BM + 4];  // As[kk][m]: dy gathered
  __shared__ __align__(16) float Bs[2][BK][BN + 4];  // Bs[kk][c]: w[k][c][r][s], transposed
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int hw_count = s.H * s.W, pq_count = s.P * s.Q, rs_count = s.R * s.S, krs_count = s.K * rs_count;
  const int M = s.N * hw_count;
  const int m0 = blockIdx.x * BM, c0 = blockIdx.y * BN;
  const bool unit_stride = s.stride_h == 1 && s.stride_w == 1;

  // A: this thread's pixels m0 + lane + 32 i, as (h + pad_h, w + pad_w) and the offset in dy of
  // (n, 0, h + pad_h, w + pad_w), from which a tap (k, r, s) at stride 1 reads at one fixed
  // distance, k P Q - r dil_h Q - s dil_w (int offsets: dy has fewer than 2^31 elements, and
  // half the registers of pointers); and its taps kk0 + warp + kWarps ii.
  int a_pixel[kAPixels], a_h[kAPixels], a_w[kAPixels];
#pragma unroll
  for (int i = 0; i < kAPixels; ++i) {
    const int m = m0 + lane + 32 * i;
    const int n = m < M ? m / hw_count : 0, hw = m % hw_count;
    a_h[i] = m < M ? hw / s.W + s.pad_h : -(1 << 28);  // past M: every tap misses, zeros
    a_w[i] = hw % s.W + s.pad_w;
    a_pixel[i] = m < M ? n * s.K * pq_count + a_h[i] * s.Q + a_w[i] : 0;
  }
  Tap a_tap[kARows];
#pragma unroll
  for (int ii = 0; ii < kARows; ++ii) a_tap[ii] = tap_of(warp + kWarps * ii, s.R, s.S);
  // B: tap kk0 + tid % BK as (k, r S + s), channels c0 + tid / BK + kBStride j.
  int b_k = (tid % BK) / rs_count, b_rs = (tid % BK) % rs_count;

  float a_next[kARows][kAPixels], b_next[kBLoads];
  auto fetch = [&] {
#pragma unroll
    for (int ii = 0; ii < kARows; ++ii) {
      const Tap t = a_tap[ii];
      const int dh = t.r * s.dil_h, dw = t.s * s.dil_w, k_offset = t.k * pq_count;
      const int tap_offset = k_offset - dh * s.Q - dw;
#pragma unroll
      for (int i = 0; i < kAPixels; ++i) {
        const int ph = a_h[i] - dh, pw = a_w[i] - dw;  // p stride_h, q stride_w
        float v = 0.0f;
        if (unit_stride) {  // p = ph, q = pw: one add for the address, two compares for the test
          if (t.k < s.K && static_cast<unsigned>(ph) < static_cast<unsigned>(s.P) &&
              static_cast<unsigned>(pw) < static_cast<unsigned>(s.Q)) {
            v = dy[a_pixel[i] + tap_offset];
          }
        } else if (t.k < s.K && ph >= 0 && pw >= 0 && ph % s.stride_h == 0 && pw % s.stride_w == 0) {
          const int p = ph / s.stride_h, q = pw / s.stride_w;
          const int image = a_pixel[i] - a_h[i] * s.Q - a_w[i];  // (n, 0, 0, 0)
          if (p < s.P && q < s.Q) v = dy[image + k_offset + p * s.Q + q];
        }
        a_next[ii][i] = v;
      }
    }
#pragma unroll
    for (int j = 0; j < kBLoads; ++j) {
      const int c = c0 + tid / BK + kBStride * j;
      b_next[j] = (b_k < s.K && c < s.C) ? w[(static_cast<std::size_t>(b_k) * s.C + c) * rs_count + b_rs] : 0.0f;
    }
  };
  auto stash = [&](int buffer) {
#pragma unroll
    for (int ii = 0; ii < kARows; ++ii) {
#pragma unroll
      for (int i = 0; i < kAPixels; ++i) As[buffer][warp + kWarps * ii][lane + 32 * i] = a_next[ii][i];
    }
#pragma unroll
    for (int j = 0; j < kBLoads; ++j) Bs[buffer][tid % BK][tid / BK + kBStride * j] = b_next[j];
  };
  auto step_taps = [&] {
#pragma unroll
    for (int ii = 0; ii < kARows; ++ii) advance(a_tap[ii], BK, s.R, s.S);
    for (b_rs += BK; b_rs >= rs_count; b_rs -= rs_count) ++b_k;
  };

  // Lanes along m: the float4 stores of one channel by a warp's BM / TM first lanes cover
  // 4 (BM / TM) consecutive pixels.
  const int tm = tid % (BM / TM), tn = tid / (BM / TM);
  float acc[TM][TN] = {};
  fetch();
  stash(0);
  __syncthreads();
  int buffer = 0;
  for (int kk0 = 0; kk0 < krs_count; kk0 += BK) {
    const bool more = kk0 + BK < krs_count;
    if (more) {
      step_taps();
      fetch();  // global loads in flight while this tile is multiplied
    }
    multiply_blocked<BM, BN, TM, TN>(As[buffer], Bs[buffer], tm, tn, acc);
    if (more) {
      stash(buffer ^ 1);  // the other buffer: its last readers passed the previous barrier
      __syncthreads();
      buffer ^= 1;
    }
  }

  // dx[n][c][h][w]: float4s of 4 consecutive pixels when H W % 4 == 0 (then 4 aligned pixels never
  // straddle two images).
  const bool vec_out = hw_count % 4 == 0;
#pragma unroll
  for (int i = 0; i < TM; i += 4) {
    const int m = m0 + blocked_index<BM, TM>(tm, i);
    if (m >= M) continue;
    if (vec_out) {
      float* out = dx + static_cast<std::size_t>(m / hw_count) * s.C * hw_count + m % hw_count;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int c = c0 + blocked_index<BN, TN>(tn, j);
        if (c < s.C) {
          *reinterpret_cast<float4*>(out + static_cast<std::size_t>(c) * hw_count) =
              make_float4(acc[i][j], acc[i + 1][j], acc[i + 2][j], acc[i + 3][j]);
        }
      }
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (m + e >= M) break;
        float* out = dx + static_cast<std::size_t>((m + e) / hw_count) * s.C * hw_count + (m + e) % hw_count;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          const int c = c0 + blocked_index<BN, TN>(tn, j);
          if (c < s.C) out[static_cast<std::size_t>(c) * hw_count] = acc[i + e][j];
        }
      }
    }
  }
}

namespace {

template <int BM, int BN, int TM, int TN, int kMinBlocks>
cudaError_t launch_dgrad(const Shape& s, const float* dy, const float* w, float* dx) {
  const dim3 grid(ceil_div(s.N * s.H * s.W, BM), ceil_div(s.C, BN));
  conv2d_dgrad_kernel<BM, BN, TM, TN, kMinBlocks><<<grid, (BM / TM) * (BN / TN)>>>(s, dy, w, dx);
  return cudaGetLastError();
}

}  // namespace

cudaError_t conv2d_backward_data(ConvParams p, const float* dy, const float* w, float* dx) {
  if (!valid(p)) return cudaErrorInvalidValue;
  const Shape s = shape_of(p);
  // The largest tile whose blocks spread evenly over the multiprocessors (no split of the reduction:
  // dgrad has no workspace): 8 x 8 results per thread where C fills 128-wide tiles of channels,
  // else 8 x 4. At N = 32: conv2_x (C = 64) 784 blocks of 128 x 64; conv3_x 392 of 64 x 128;
  // conv4_x 392 of 64 x 64 (64 x 128 would give 196 blocks, 1.5 per SM: a quarter of the GPU idle).
  const long long M = static_cast<long long>(s.N) * s.H * s.W;
  const long long tiles_64 = (M + 63) / 64, tiles_128 = (M + 127) / 128;
  if (s.C >= 128 && spread(tiles_64 * ceil_div(s.C, 128)) >= 0.9) return launch_dgrad<64, 128, 8, 8, 3>(s, dy, w, dx);
  if (spread(tiles_128 * ceil_div(s.C, 64)) >= 0.9) return launch_dgrad<128, 64, 8, 4, 2>(s, dy, w, dx);
  return launch_dgrad<64, 64, 8, 4, 4>(s, dy, w, dx);
}

// ---- Backward filter (wgrad), NCHW -----------------------------------------------------------------------------
//
// GEMM rows k (filters), columns kk = (c, r, s), reduction over j = (n, p, q). The reduction is long
// (N P Q) and the output small (K C R S), so blockIdx.z splits it: split z sums its contiguous range
// of j into workspace slice z, and a second kernel adds the slices in order z = 0, 1, ...
//
// Both tiles are contiguous along j in NCHW (dy[n][k][p][q], and x at stride 1), so both load with
// 8 lanes on 8 consecutive pixels and 4 rows (filters, or taps) per warp, and are stored
// transposed, As[j][k] and Bs[j][kk], rows padded by 4 (32 banks for a warp's 32 stores). Each
// thread keeps its pixel as (n, p, q), stepped by kBwdBK pixels per tile with additions, and its
// taps' channel offset and (r, s) shifts, computed once.

template <int BM, int BN, int TM, int TN, int kMinBlocks>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), kMinBlocks)
    conv2d_wgrad_kernel(Shape s, const float* x, const float* dy, float* partial, int j_per_split) {
  constexpr int BK = kBwdBK, kThreads = (BM / TM) * (BN / TN);
  constexpr int kStride = kThreads / BK, kALoads = BM / kStride, kBLoads = BN / kStride;
  static_assert(kThreads % BK == 0 && BM % kStride == 0 && BN % kStride == 0 && TM % 4 == 0 && TN % 4 == 0,
                "tile shape");
  __shared__ __align__(16) float As[2][BK][BM + 4];  // As[j][k]: dy, transposed
  __shared__ __align__(16) float Bs[2][BK][BN + 4];  // Bs[j][kk]: x gathered, transposed
  const int tid = threadIdx.x;
  const int hw_count = s.H * s.W, pq_count = s.P * s.Q, rs_count = s.R * s.S, crs_count = s.C * rs_count;
  const int J = s.N * pq_count;
  const int k0 = blockIdx.y * BM, kk0 = blockIdx.x * BN;
  const int j_begin = blockIdx.z * j_per_split, j_end = min(J, j_begin + j_per_split);

  // Loads: pixel j = jt + tid % BK, rows (filters of A, taps of B) tid / BK + kStride i.
  const int l_j = tid % BK, l_row = tid / BK;
  const int a_k = k0 + l_row;  // filters a_k + kStride i
  int b_offset[kBLoads], b_dh[kBLoads], b_dw[kBLoads];  // c H W (or -1 past C R S), r dil_h - pad_h, ...
#pragma unroll
  for (int i = 0; i < kBLoads; ++i) {
    const int kk = kk0 + l_row + kStride * i;
    b_offset[i] = kk < crs_count ? kk / rs_count * hw_count : -1;
    b_dh[i] = kk % rs_count / s.S * s.dil_h - s.pad_h;
    b_dw[i] = kk % s.S * s.dil_w - s.pad_w;
  }
  int j = j_begin + l_j, n = j / pq_count, p = j % pq_count / s.Q, q = j % s.Q;

  float a_next[kALoads], b_next[kBLoads];
  auto fetch = [&] {
    const bool in = j < j_end;
    const float* grad = dy + static_cast<std::size_t>(n) * s.K * pq_count + p * s.Q + q;
    const float* image = x + static_cast<std::size_t>(n) * s.C * hw_count;
    const int h0 = p * s.stride_h, w0 = q * s.stride_w;
#pragma unroll
    for (int i = 0; i < kALoads; ++i) {
      const int k = a_k + kStride * i;
      a_next[i] = (in && k < s.K) ? grad[k * pq_count] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) {
      const int h = h0 + b_dh[i], ww = w0 + b_dw[i];
      b_next[i] = (in && b_offset[i] >= 0 && h >= 0 && h < s.H && ww >= 0 && ww < s.W)
                      ? image[b_offset[i] + h * s.W + ww]
                      : 0.0f;
    }
  };
  auto stash = [&](int buffer) {
#pragma unroll
    for (int i = 0; i < kALoads; ++i) As[buffer][l_j][l_row + kStride * i] = a_next[i];
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) Bs[buffer][l_j][l_row + kStride * i] = b_next[i];
  };
  auto step_pixel = [&] {
    j += BK;
    for (q += BK; q >= s.Q; q -= s.Q) {
      if (++p == s.P) p = 0, ++n;
    }
  };

  // Lanes along kk: the float4 stores of one filter by a warp's BN / TN first lanes cover
  // 4 (BN / TN) consecutive taps.
  const int tn = tid % (BN / TN), tm = tid / (BN / TN);
  float acc[TM][TN] = {};
  fetch();
  stash(0);
  __syncthreads();
  int buffer = 0;
  for (int jt = j_begin; jt < j_end; jt += BK) {
    const bool more = jt + BK < j_end;
    if (more) {
      step_pixel();
      fetch();  // global loads in flight while this tile is multiplied
    }
    multiply_blocked<BM, BN, TM, TN>(As[buffer], Bs[buffer], tm, tn, acc);
    if (more) {
      stash(buffer ^ 1);
      __syncthreads();
      buffer ^= 1;
    }
  }

  // This split's slice: every element of the block's tile is written (no accumulation).
  float* slice = partial + static_cast<std::size_t>(blockIdx.z) * s.K * crs_count;
  const bool vec_out = crs_count % 4 == 0;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int k = k0 + blocked_index<BM, TM>(tm, i);
    if (k >= s.K) continue;
    float* row = slice + static_cast<std::size_t>(k) * crs_count;
#pragma unroll
    for (int jj = 0; jj < TN; jj += 4) {
      const int kk = kk0 + blocked_index<BN, TN>(tn, jj);
      if (vec_out && kk < crs_count) {
        *reinterpret_cast<float4*>(row + kk) = make_float4(acc[i][jj], acc[i][jj + 1], acc[i][jj + 2], acc[i][jj + 3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (kk + e < crs_count) row[kk + e] = acc[i][jj + e];
        }
      }
    }
  }
}

// dw[i] = sum over z < splits of partial[z][i], in order z = 0, 1, ... (Unrolled so that 8 loads
// are in flight before the first add waits: the additions are ordered, the loads need not be.)
__global__ void sum_slices_kernel(const float* partial, int splits, std::size_t count, float* dw) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  float sum = 0.0f;
#pragma unroll 8
  for (int z = 0; z < splits; ++z) sum += partial[static_cast<std::size_t>(z) * count + i];
  dw[i] = sum;
}

namespace {

// Launches the split GEMM and returns (in @p used) the number of slices it wrote. Enough splits
// for every block slot of the GPU to hold one block (kMinBlocks per multiprocessor), each at least
// 256 pixels long, at most kWgradSplits: at N = 32, conv2_x 9 tiles x 58 splits, conv3_x 18 x 22,
// conv4_x 72 x 5. More splits would add slices to write and sum without filling the GPU more.
template <int BM, int BN, int TM, int TN, int kMinBlocks>
cudaError_t launch_wgrad(const Shape& s, const float* x, const float* dy, float* workspace, int& used) {
  const int crs_count = s.C * s.R * s.S, J = s.N * s.P * s.Q;
  const dim3 tiles(ceil_div(crs_count, BN), ceil_div(s.K, BM));
  const int by_blocks = std::max(1, multiprocessor_count() * kMinBlocks / static_cast<int>(tiles.x * tiles.y));
  const int by_length = std::max(1, J / 256);
  const int splits = std::min({kWgradSplits, by_blocks, by_length});
  const int j_per_split = ceil_div(ceil_div(J, splits), kBwdBK) * kBwdBK;
  used = ceil_div(J, j_per_split);
  conv2d_wgrad_kernel<BM, BN, TM, TN, kMinBlocks>
      <<<dim3(tiles.x, tiles.y, used), (BM / TM) * (BN / TN)>>>(s, x, dy, workspace, j_per_split);
  return cudaGetLastError();
}

}  // namespace

cudaError_t conv2d_backward_filter(ConvParams p, const float* x, const float* dy, float* dw, float* workspace) {
  if (!valid(p)) return cudaErrorInvalidValue;
  const Shape s = shape_of(p);
  const int crs_count = s.C * s.R * s.S;
  int used = 0;
  // 128 filters x 64 taps, 8 x 8 results per thread, where K fills them; else 64 x 64, 8 x 4. (A
  // 128 x 128 tile at 8 x 8 needs more than 128 registers a thread: one 256-thread block per SM,
  // whose barriers nothing else covers, while three 128-thread blocks of 128 x 64 fit on an SM.)
  const cudaError_t e = s.K > 64 ? launch_wgrad<128, 64, 8, 8, 3>(s, x, dy, workspace, used)
                                 : launch_wgrad<64, 64, 8, 4, 4>(s, x, dy, workspace, used);
  if (e != cudaSuccess) return e;
  const std::size_t count = static_cast<std::size_t>(s.K) * crs_count;
  sum_slices_kernel<<<ceil_div(count, 256), 256>>>(workspace, used, count, dw);
  return cudaGetLastError();
}

// ---- Fused inference: convolution + batch norm + ReLU (NHWC) ----------------------------------------------------

cudaError_t conv2d_bn_relu_inference(ConvParams p, const float* x, const float* w, const float* gamma,
                                     const float* beta, const float* running_mean, const float* running_var, float eps,
                                     float* y) {
  if (!valid(p)) return cudaErrorInvalidValue;
  return launch_nhwc<Epilogue::kBnRelu>(p, x, w, y, BnRelu{gamma, beta, running_mean, running_var, eps});
}
