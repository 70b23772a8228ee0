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
// Backward: conv2d_backward_data (dgrad: M = N H W, N = C, K = K R S; a tap contributes where the
// output position it comes from is a whole number inside the output) and conv2d_backward_filter
// (wgrad: M = K, N = C R S, K = N P Q, split across blocks into workspace partials added in a
// fixed order). conv2d_bn_relu_inference is the final forward with a per-filter scale, shift and
// ReLU applied to the accumulators before the store.
#include "convolution.h"

#include <cuda_runtime.h>

#include <algorithm>
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

// The 64 x 64 tile step of version 3 and of dgrad: thread (tm, tn) adds the products of rows
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

// ---- Backward data (dgrad), NCHW ------------------------------------------------------------------------------
//
// GEMM rows m = (n, h, w) (input pixels), columns c, reduction over kk = (k, r, s):
// dx[n][c][h][w] = sum dy[n][k][p][q] w[k][c][r][s] where h + pad_h - r dil_h = p stride_h with
// 0 <= p < P (and likewise for w, s, q). Other taps are zeros of the virtual matrix. Same tiling as
// version 3.

__global__ void __launch_bounds__(256) conv2d_dgrad_kernel(Shape s, const float* dy, const float* w, float* dx) {
  __shared__ float As[kIgBK][kIgBM];      // As[kk][m]: dy gathered
  __shared__ float Bs[kIgBK][kIgBN + 4];  // Bs[kk][c]: w[k][c][r][s]
  const int tid = threadIdx.x;
  const int hw_count = s.H * s.W, rs_count = s.R * s.S, krs_count = s.K * rs_count;
  const int M = s.N * hw_count;
  const int m0 = blockIdx.x * kIgBM, c0 = blockIdx.y * kIgBN;

  const int a_m = m0 + tid % kIgBM;
  const bool a_row = a_m < M;
  const int a_n = a_row ? a_m / hw_count : 0, a_hw = a_row ? a_m % hw_count : 0;
  const int a_h = a_hw / s.W + s.pad_h, a_w = a_hw % s.W + s.pad_w;
  const float* a_grad = dy + static_cast<std::size_t>(a_n) * s.K * s.P * s.Q;
  const int b_kk = tid % kIgBK;

  const int tm = tid % 16, tn = tid / 16;
  float acc[4][4] = {};
  for (int kk0 = 0; kk0 < krs_count; kk0 += kIgBK) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int kk_local = tid / kIgBM + 4 * j, kk = kk0 + kk_local;
      float v = 0.0f;
      if (a_row && kk < krs_count) {
        const int k = kk / rs_count, rs = kk % rs_count;
        const int ph = a_h - rs / s.S * s.dil_h, pw = a_w - rs % s.S * s.dil_w;
        if (ph >= 0 && pw >= 0 && ph % s.stride_h == 0 && pw % s.stride_w == 0) {
          const int p = ph / s.stride_h, q = pw / s.stride_w;
          if (p < s.P && q < s.Q) v = a_grad[(static_cast<std::size_t>(k) * s.P + p) * s.Q + q];
        }
      }
      As[kk_local][tid % kIgBM] = v;
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int c_local = tid / kIgBK + 32 * j, c = c0 + c_local, kk = kk0 + b_kk;
      float v = 0.0f;
      if (c < s.C && kk < krs_count) {
        const int k = kk / rs_count, rs = kk % rs_count;
        v = w[(static_cast<std::size_t>(k) * s.C + c) * rs_count + rs];
      }
      Bs[b_kk][c_local] = v;
    }
    __syncthreads();
    multiply_tiles(As, Bs, tm, tn, acc);
    __syncthreads();
  }
  store_tile(acc, dx, m0, tm, M, hw_count, c0, tn, s.C);  // dx[n][c][h][w]
}

cudaError_t conv2d_backward_data(ConvParams p, const float* dy, const float* w, float* dx) {
  if (!valid(p)) return cudaErrorInvalidValue;
  const Shape s = shape_of(p);
  const dim3 grid(ceil_div(s.N * s.H * s.W, kIgBM), ceil_div(s.C, kIgBN));
  conv2d_dgrad_kernel<<<grid, 256>>>(s, dy, w, dx);
  return cudaGetLastError();
}

// ---- Backward filter (wgrad), NCHW -----------------------------------------------------------------------------
//
// GEMM rows k (filters), columns kk = (c, r, s), reduction over j = (n, p, q). The reduction is long
// (N P Q) and the output small (K C R S), so blockIdx.z splits it: split z sums its contiguous range
// of j into workspace slice z, and a second kernel adds the slices in order z = 0, 1, ...

constexpr int kWgBM = 64, kWgBN = 64, kWgBK = 16;

__global__ void __launch_bounds__(256)
    conv2d_wgrad_kernel(Shape s, const float* x, const float* dy, float* partial, int j_per_split) {
  __shared__ float As[kWgBK][kWgBM + 4];  // As[j][k]: dy
  __shared__ float Bs[kWgBK][kWgBN + 4];  // Bs[j][kk]: x gathered
  const int tid = threadIdx.x;
  const int pq_count = s.P * s.Q, rs_count = s.R * s.S, crs_count = s.C * rs_count;
  const int J = s.N * pq_count;
  const int k0 = blockIdx.y * kWgBM, kk0 = blockIdx.x * kWgBN;
  const int j_begin = blockIdx.z * j_per_split, j_end = min(J, j_begin + j_per_split);

  // Loads: lanes along j (consecutive pixels: coalesced in dy, and in x at stride 1).
  const int l_j = tid % kWgBK, l_col = tid / kWgBK;  // column l_col + 16 i, i < 4
  // The B columns this thread gathers, decomposed once.
  int b_c[4], b_r[4], b_s[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int kk = kk0 + l_col + 16 * i;
    b_c[i] = kk < crs_count ? kk / rs_count : -1;
    b_r[i] = kk % rs_count / s.S * s.dil_h - s.pad_h;
    b_s[i] = kk % s.S * s.dil_w - s.pad_w;
  }

  const int tm = tid / 16, tn = tid % 16;  // outputs k = tm * 4 + i, kk = tn + 16 jj
  float acc[4][4] = {};
  for (int jt = j_begin; jt < j_end; jt += kWgBK) {
    const int j = jt + l_j;
    const bool in = j < j_end;
    const int n = in ? j / pq_count : 0, pq = in ? j % pq_count : 0;
    const int h0 = pq / s.Q * s.stride_h, w0 = pq % s.Q * s.stride_w;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = k0 + l_col + 16 * i;
      As[l_j][l_col + 16 * i] = (in && k < s.K) ? dy[(static_cast<std::size_t>(n) * s.K + k) * pq_count + pq] : 0.0f;
      float v = 0.0f;
      if (in && b_c[i] >= 0) {
        const int h = h0 + b_r[i], ww = w0 + b_s[i];
        if (h >= 0 && h < s.H && ww >= 0 && ww < s.W) {
          v = x[((static_cast<std::size_t>(n) * s.C + b_c[i]) * s.H + h) * s.W + ww];
        }
      }
      Bs[l_j][l_col + 16 * i] = v;
    }
    __syncthreads();
#pragma unroll
    for (int d = 0; d < kWgBK; ++d) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[d][tm * 4 + i];
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) b[jj] = Bs[d][tn + 16 * jj];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) acc[i][jj] += a[i] * b[jj];
      }
    }
    __syncthreads();
  }
  float* slice = partial + static_cast<std::size_t>(blockIdx.z) * s.K * crs_count;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int k = k0 + tm * 4 + i;
    if (k >= s.K) continue;
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const int kk = kk0 + tn + 16 * jj;
      if (kk < crs_count) slice[static_cast<std::size_t>(k) * crs_count + kk] = acc[i][jj];
    }
  }
}

// dw[i] = sum over z < splits of partial[z][i], in order z = 0, 1, ...
__global__ void sum_slices_kernel(const float* partial, int splits, std::size_t count, float* dw) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  float sum = 0.0f;
  for (int z = 0; z < splits; ++z) sum += partial[static_cast<std::size_t>(z) * count + i];
  dw[i] = sum;
}

cudaError_t conv2d_backward_filter(ConvParams p, const float* x, const float* dy, float* dw, float* workspace) {
  if (!valid(p)) return cudaErrorInvalidValue;
  const Shape s = shape_of(p);
  const int crs_count = s.C * s.R * s.S, J = s.N * s.P * s.Q;
  const dim3 tiles(ceil_div(crs_count, kWgBN), ceil_div(s.K, kWgBM));
  // Enough splits for about 264 blocks (two waves on 132 multiprocessors), each at least 256
  // pixels long, at most kWgradSplits.
  const int by_blocks = std::max(1, 264 / static_cast<int>(tiles.x * tiles.y));
  const int by_length = std::max(1, J / 256);
  const int splits = std::min({kWgradSplits, by_blocks, by_length});
  const int j_per_split = ceil_div(ceil_div(J, splits), kWgBK) * kWgBK;
  const int used = ceil_div(J, j_per_split);
  conv2d_wgrad_kernel<<<dim3(tiles.x, tiles.y, used), 256>>>(s, x, dy, workspace, j_per_split);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
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
