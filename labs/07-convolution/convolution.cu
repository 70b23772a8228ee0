// Lab 07, part 1: convolution. Your file: implement the TODOs, then run
//   ./workbook check 07
// The handout is labs/07-convolution/README.md; the interface is convolution.h (do not edit it).
// Version 2 calls your lab-05 sgemm() (labs/05-gemm/gemm.cu): finish lab 05 first.
#include "convolution.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "gemm.h"  // lab 05: sgemm()

namespace {

// ---- Provided -----------------------------------------------------------------------------------------------

[[maybe_unused]] int ceil_div(int a, int b) { return (a + b - 1) / b; }
[[maybe_unused]] int ceil_div(std::size_t a, int b) { return static_cast<int>((a + b - 1) / b); }

// The shape with the output size P x Q, passed to kernels by value.
struct Shape {
  int N, C, H, W, K, R, S, P, Q;
  int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
};

[[maybe_unused]] Shape shape_of(const ConvParams& c) {
  return {c.N, c.C, c.H, c.W, c.K, c.R, c.S, conv_out_h(c), conv_out_w(c),
          c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w};
}

// The input pixel that output (p, q) reads at tap (r, s) is
//   h = p * stride_h - pad_h + r * dil_h,   w = q * stride_w - pad_w + s * dil_w,
// and counts as 0 unless 0 <= h < H and 0 <= w < W (the zero padding).

}  // namespace

// ---- TODO(1): version 1, direct ---------------------------------------------------------------------------------
//
// A thread per output element: i = blockIdx.x * blockDim.x + threadIdx.x over N * K * P * Q (a
// std::size_t; return when i is past the end), decomposed with q fastest (q = i % Q, p = i / Q % P,
// k = ..., n = ...) so that consecutive threads write consecutive y and read consecutive x. Sum over
// c, r, s of x[n][c][h][w] * w[k][c][r][s], skipping taps outside the image; write y[i] once.
cudaError_t conv2d_direct(ConvParams p, const float* x, const float* w, float* y) {
  (void)p; (void)x; (void)w; (void)y;
  return cudaErrorNotYetImplemented;
}

// ---- TODO(2): version 2, im2col + your lab-05 sgemm ------------------------------------------------------------
//
// a. An im2col kernel for one image: a thread per element of col, (C R S) rows of (P Q) columns,
//    col[row * P Q + col] with row = (c R + r) S + s and col = p Q + q (consecutive threads on
//    consecutive columns); the pixel (h, w) of channel c, or 0 in the padding.
// b. For each image n: the im2col kernel into workspace, then
//      sgemm(K, P Q, C R S, 1.0f, w, C R S, workspace, P Q, 0.0f, y + n K P Q, P Q)
//    (y[n] is the K x P Q matrix w * col: NKPQ is already the right layout). Return the first error.
cudaError_t conv2d_im2col(ConvParams p, const float* x, const float* w, float* y, float* workspace) {
  (void)p; (void)x; (void)w; (void)y; (void)workspace;
  return cudaErrorNotYetImplemented;
}

// ---- TODO(3): version 3, implicit GEMM ------------------------------------------------------------------------
//
// The GEMM of version 2 without the workspace: rows m = (n, p, q) of N P Q, columns k of K, sum
// over kk = (c, r, s) of C R S. A block of 256 threads computes a 64 x 64 tile (64 pixels x 64
// filters), each thread 4 x 4 of them. For each step of 8 along kk:
//   a. gather the 64 x 8 tile A[m][kk] into __shared__ float As[8][64]: thread t takes pixel
//      m = m0 + t % 64 (decompose m into n, p, q once, before the loop) and taps t / 64 and
//      t / 64 + 4; decompose kk into (c, r, s) and load x[n][c][h][w] or 0 (padding, kk >= C R S,
//      m >= N P Q). Consecutive lanes on consecutive pixels: coalesced loads at stride 1.
//   b. load the 8 x 64 tile B[kk][k] = w[k * C R S + kk] into __shared__ float Bs[8][64 + 4]:
//      thread t takes tap t % 8 of filters t / 8 and t / 8 + 32 (8 lanes read 8 consecutive floats
//      of one filter). The + 4: the lanes storing one column of Bs would otherwise share a bank.
//   c. __syncthreads(); accumulate acc[i][j] += As[d][tm + 16 i] * Bs[d][tn * 4 + j] for d < 8
//      (tm = t % 16, tn = t / 16); __syncthreads() before the next step overwrites the tiles.
// Then store y[n][k][p][q] for m < N P Q and k < K. No workspace, no cudaMalloc: write only y.
cudaError_t conv2d_implicit_gemm(ConvParams p, const float* x, const float* w, float* y) {
  (void)p; (void)x; (void)w; (void)y;
  return cudaErrorNotYetImplemented;
}

// ---- TODO(4): the final version, NHWC ---------------------------------------------------------------------------
//
// Version 3 in channels-last layouts (x NHWC, w KRSC, y NPQK) and lab 05's register blocking:
//   - kk = (r, s, c) with c fastest: when C % 4 == 0, kk .. kk + 3 are four adjacent channels of
//     one pixel in x and four adjacent floats of filter k in w: one float4 load each (keep a scalar
//     path with bounds tests for C % 4 != 0, such as C = 3).
//   - 128 x 128 block tiles (128 x 64 when K <= 64), 8 x 8 (or 8 x 4) results per thread, both
//     tiles stored transposed in shared memory (As[kk][m], Bs[kk][k], rows padded by 4 floats) and
//     read back as float4s in the inner loop.
//   - Double buffering: two copies of each tile; load the next step's float4s into registers
//     before computing on this step's tiles, store them into the other copy after, one
//     __syncthreads() per step.
//   - Store y[m * K + k] with float4 stores when K % 4 == 0.
// Write the kernel as a template on the tile sizes and on an epilogue (TODO(7) reuses it).
cudaError_t conv2d_forward(ConvParams p, const float* x, const float* w, float* y) {
  (void)p; (void)x; (void)w; (void)y;
  return cudaErrorNotYetImplemented;
}

// ---- TODO(5): backward data (dgrad) ----------------------------------------------------------------------------
//
// Version 3's kernel with rows m = (n, h, w) of N H W, columns c of C, and a sum over kk = (k, r, s):
// the tap (r, s) of input pixel (h, w) comes from output (p, q) with
//   p * stride_h = h + pad_h - r * dil_h   (and likewise q),
// which exists only when the right side is >= 0, divisible by the stride, and p < P. Gather
// dy[n][k][p][q] (or 0) into As, w[k][c][r][s] into Bs. Note which filter element goes with which
// tap: writing dgrad as a convolution of dy flips the filter; gathering as above does not need to.
cudaError_t conv2d_backward_data(ConvParams p, const float* dy, const float* w, float* dx) {
  (void)p; (void)dy; (void)w; (void)dx;
  return cudaErrorNotYetImplemented;
}

// ---- TODO(6): backward filter (wgrad) --------------------------------------------------------------------------
//
// dw[k][(c, r, s)] = sum over j = (n, p, q) of dy[n][k][p][q] * x[n][c][h][w]: a GEMM with M = K,
// N = C R S and a long reduction over N P Q. Split the reduction: blockIdx.z = split z sums its
// contiguous range of j (tiles of 64 x 64 outputs, steps of 16 along j, lanes along j so that dy
// and x load coalesced) and stores its partial tile into workspace slice z (K C R S floats each,
// at most kWgradSplits slices). A second kernel sums the slices in order z = 0, 1, ... into dw:
// no atomics, the same bits every run. Choose the number of splits from the GPU's size (a few
// hundred blocks in all) and the reduction's length; read only the slices this call wrote.
cudaError_t conv2d_backward_filter(ConvParams p, const float* x, const float* dy, float* dw, float* workspace) {
  (void)p; (void)x; (void)dy; (void)dw; (void)workspace;
  return cudaErrorNotYetImplemented;
}

// ---- TODO(7): fused convolution + batch norm + ReLU (inference, NHWC) --------------------------------------------
//
// Your final kernel with an epilogue: before storing, each accumulator of filter k becomes
//   max(0, acc * scale + shift),  scale = gamma[k] / sqrt(running_var[k] + eps),
//                                 shift = beta[k] - running_mean[k] * scale.
// y is written once; nothing else goes to memory.
cudaError_t conv2d_bn_relu_inference(ConvParams p, const float* x, const float* w, const float* gamma,
                                     const float* beta, const float* running_mean, const float* running_var, float eps,
                                     float* y) {
  (void)p; (void)x; (void)w; (void)gamma; (void)beta; (void)running_mean; (void)running_var; (void)eps; (void)y;
  return cudaErrorNotYetImplemented;
}
