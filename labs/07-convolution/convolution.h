/// @file
/// @brief Lab 07 interface, part 1: 2-D convolution, forward and backward, from a thread per
/// output to an implicit GEMM; a fused convolution + batch norm + ReLU for inference.
///
/// The checker calls these functions; implement them in convolution.cu and do not change this
/// file. (Part 2, pooling and batch normalization, is pooling_batchnorm.h.)
///
/// The convolution of deep learning is a cross-correlation: the filter is not flipped. For an
/// input x of N images of C channels of H x W pixels and K filters w of C x R x S:
///
///     y[n][k][p][q] = sum over c < C, r < R, s < S of
///                     x[n][c][p * stride_h - pad_h + r * dilation_h][q * stride_w - pad_w + s * dilation_w]
///                     * w[k][c][r][s]
///
/// where a pixel outside the image (the zero padding) counts as 0. The output has P x Q pixels,
///
///     P = (H + 2 pad_h - dilation_h (R - 1) - 1) / stride_h + 1      (conv_out_h())
///     Q = (W + 2 pad_w - dilation_w (S - 1) - 1) / stride_w + 1      (conv_out_w())
///
/// Layouts are fp32 and dense (no padding between rows): NCHW x[n][c][h][w] = x[((n * C + c) * H
/// + h) * W + w], filters KCRS w[k][c][r][s], outputs NKPQ y[n][k][p][q] (NCHW with K channels);
/// the final forward version uses NHWC, KRSC and NPQK instead. Shapes are valid when every size
/// is >= 1, pad >= 0, stride >= 1, dilation >= 1, P >= 1 and Q >= 1, and every array has fewer
/// than 2^31 elements: C = 3, K = 1, 1 x 1 filters, 7 x 7 stride-2 stems, H and W that are not
/// multiples of any tile. Pointers come from cudaMalloc (16-byte aligned). Inputs are read only;
/// every element of the output is written (no accumulation into what was there). Every function
/// returns the first CUDA error it sees (cudaGetLastError() after a launch), else cudaSuccess.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

/// The shape of a convolution (passed by value).
struct ConvParams {
  int N, C, H, W;  ///< input: N images, C channels, H x W pixels
  int K, R, S;     ///< K filters of C x R x S
  int pad_h, pad_w;
  int stride_h, stride_w;
  int dilation_h, dilation_w;
};

/// Output height P.
inline int conv_out_h(const ConvParams& p) {
  return (p.H + 2 * p.pad_h - p.dilation_h * (p.R - 1) - 1) / p.stride_h + 1;
}
/// Output width Q.
inline int conv_out_w(const ConvParams& p) {
  return (p.W + 2 * p.pad_w - p.dilation_w * (p.S - 1) - 1) / p.stride_w + 1;
}

/// Floats of the workspace conv2d_im2col() receives: the im2col matrix of one image,
/// (C * R * S) rows of (P * Q) columns: R * S times the image when the stride is 1.
inline std::size_t conv2d_im2col_workspace_floats(const ConvParams& p) {
  return static_cast<std::size_t>(p.C) * p.R * p.S * static_cast<std::size_t>(conv_out_h(p)) * conv_out_w(p);
}

// ---- Forward: the ladder. NCHW input, KCRS filters, NKPQ output. -----------------------------------

/// Version 1: direct convolution, one thread per output element y[n][k][p][q] (consecutive
/// threads on consecutive q), the C x R x S sum in a loop, padding tested per tap.
cudaError_t conv2d_direct(ConvParams p, const float* x, const float* w, float* y);

/// Version 2: explicit im2col, then a GEMM. For each image n: an im2col kernel writes the
/// (C R S) x (P Q) matrix col[(c R + r) S + s][p Q + q] = x[n][c][h][w] (0 in the padding) into
/// @p workspace (conv2d_im2col_workspace_floats() floats), then your lab-05 sgemm() computes
/// y[n] (K x P Q) = w (K x C R S) * col. The workspace is R * S times the image: the cost the
/// next version removes.
cudaError_t conv2d_im2col(ConvParams p, const float* x, const float* w, float* y, float* workspace);

/// Version 3: implicit GEMM. The same GEMM, M = N P Q (output pixels), N = K (filters),
/// K = C R S (taps), with no workspace: each block loads its tile of the im2col matrix into
/// shared memory straight from x (the index arithmetic of version 2, done while loading), and a
/// tile of the filters, and accumulates a tile of outputs in registers, as lab 05's shared-memory
/// tiled GEMM does. Allocates nothing and writes nothing to global memory but y.
cudaError_t conv2d_implicit_gemm(ConvParams p, const float* x, const float* w, float* y);

/// Final version: your fastest forward, channels-last: x is NHWC (x[((n H + h) W + w) C + c]),
/// w is KRSC (w[((k R + r) S + s) C + c]), y is NPQK (y[((n P + p) Q + q) K + k]). Along the
/// GEMM's K dimension the channels are contiguous in both x and w, so a tile loads with 16-byte
/// vectors where C is a multiple of 4; register blocking as in lab 05. The checker times it
/// against cuDNN on ResNet-50 shapes.
cudaError_t conv2d_forward(ConvParams p, const float* x, const float* w, float* y);

// ---- Backward (NCHW, KCRS, NKPQ), each an implicit GEMM --------------------------------------------

/// Gradient of the input (dgrad): dx[n][c][h][w] = sum over k, r, s of dy[n][k][p][q] *
/// w[k][c][r][s] over the (p, q) with p * stride_h - pad_h + r * dilation_h = h (and likewise
/// q): a convolution of dy with the filters flipped in r and s and transposed in k and c. As an
/// implicit GEMM: M = N H W, N = C, K = K R S, where a tap (r, s) contributes only where
/// h + pad_h - r * dilation_h is a non-negative multiple of stride_h (and likewise for w).
/// Every element of dx is written (0 where no output used the pixel).
cudaError_t conv2d_backward_data(ConvParams p, const float* dy, const float* w, float* dx);

/// Partial results conv2d_backward_filter() may keep in its workspace: at most this many
/// K x C x R x S slices (a split of the N P Q sum across blocks, added in a fixed order after).
inline constexpr int kWgradSplits = 64;

/// Floats of the workspace conv2d_backward_filter() receives: kWgradSplits filter-sized slices.
inline std::size_t conv2d_backward_filter_workspace_floats(const ConvParams& p) {
  return static_cast<std::size_t>(kWgradSplits) * p.K * p.C * p.R * p.S;
}

/// Gradient of the filters (wgrad): dw[k][c][r][s] = sum over n, p, q of dy[n][k][p][q] *
/// x[n][c][p * stride_h - pad_h + r * dilation_h][q * stride_w - pad_w + s * dilation_w]. As an
/// implicit GEMM: M = K, N = C R S, K = N P Q: a long sum over few outputs, so split it across
/// blocks into partial sums in @p workspace (conv2d_backward_filter_workspace_floats() floats) and
/// add them in a second kernel, in a fixed order: no atomics, the same bits on every run.
cudaError_t conv2d_backward_filter(ConvParams p, const float* x, const float* dy, float* dw, float* workspace);

// ---- Fused inference block ---------------------------------------------------------------------------

/// Convolution + batch normalization (inference: running statistics) + ReLU in one kernel, in the
/// final version's layouts (NHWC x, KRSC w, NPQK y):
///
///     y = max(0, (conv(x, w) - running_mean[k]) / sqrt(running_var[k] + eps) * gamma[k] + beta[k])
///
/// Fold the batch norm into a per-filter scale and shift applied to the GEMM's accumulator
/// before it is stored: y is written once, and no intermediate goes to memory.
cudaError_t conv2d_bn_relu_inference(ConvParams p, const float* x, const float* w, const float* gamma,
                                     const float* beta, const float* running_mean, const float* running_var, float eps,
                                     float* y);
