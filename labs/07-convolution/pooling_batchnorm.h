/// @file
/// @brief Lab 07 interface, part 2: max and average pooling, and batch normalization (training
/// and inference), forward and backward.
///
/// The checker calls these functions; implement them in pooling_batchnorm.cu and do not change
/// this file. (Part 1, convolution, is convolution.h.)
///
/// Every tensor is fp32 NCHW and dense: x[n][c][h][w] = x[((n * C + c) * H + h) * W + w].
/// Pointers come from cudaMalloc (16-byte aligned); inputs are read only; every element of every
/// output is written (no accumulation into what was there). Every function returns the first CUDA
/// error it sees (cudaGetLastError() after a launch), else cudaSuccess.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

// ---- Pooling --------------------------------------------------------------------------------------------

/// The shape of a pooling (passed by value): windows of R x S pixels, moved by the stride, over
/// an image padded by pad_h rows and pad_w columns on each side. Valid when every size >= 1,
/// 0 <= pad_h < R, 0 <= pad_w < S (every window holds at least one pixel of the image) and
/// P, Q >= 1. Each of the N * C planes is pooled on its own.
struct PoolParams {
  int N, C, H, W;
  int R, S;
  int pad_h, pad_w;
  int stride_h, stride_w;
};

/// Output height P = (H + 2 pad_h - R) / stride_h + 1 (rounded down: a partial window at the end
/// is dropped).
inline int pool_out_h(const PoolParams& p) { return (p.H + 2 * p.pad_h - p.R) / p.stride_h + 1; }
/// Output width Q = (W + 2 pad_w - S) / stride_w + 1.
inline int pool_out_w(const PoolParams& p) { return (p.W + 2 * p.pad_w - p.S) / p.stride_w + 1; }

/// Max pooling: y[n][c][p][q] = the maximum of x[n][c] over the window's pixels that lie in the
/// image (padding never wins). argmax[n][c][p][q] = h * W + w of that pixel within its plane; on
/// a tie, the first in the window's row-major order (r, then s). y and argmax are N C P Q.
cudaError_t maxpool2d_forward(PoolParams p, const float* x, float* y, int* argmax);

/// Max pooling backward: dx[n][c][h][w] = the sum of dy[n][c][p][q] over the outputs whose
/// argmax is (h, w), 0 for pixels no window chose. Windows overlap when the stride is smaller
/// than the window (3 x 3, stride 2): one pixel can receive several gradients. Gather them (a
/// thread per input pixel visits the windows that contain it) rather than scatter with atomics,
/// so that the sum has a fixed order and two runs give the same bits.
cudaError_t maxpool2d_backward(PoolParams p, const float* dy, const int* argmax, float* dx);

/// Average pooling: y = the sum of the window's pixels in the image divided by R * S when
/// @p count_include_pad is nonzero (padding counts as zeros), else by the number of the window's
/// pixels that lie in the image (PyTorch's count_include_pad; cuDNN's
/// CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING / _EXCLUDE_PADDING).
cudaError_t avgpool2d_forward(PoolParams p, const float* x, float* y, int count_include_pad);

/// Average pooling backward: dx[h][w] = the sum over the windows containing (h, w) of
/// dy[p][q] / divisor(p, q), the divisor of the forward; gathered as for max pooling.
cudaError_t avgpool2d_backward(PoolParams p, const float* dy, float* dx, int count_include_pad);

// ---- Batch normalization ----------------------------------------------------------------------------------

/// Partial results the batch-norm kernels may keep in their workspace: at most this many
/// per-block partials per channel (a split of the N * H * W reduction across blocks, combined in
/// a fixed order after).
inline constexpr int kBatchNormSplits = 64;

/// Floats of the workspace batchnorm_forward_training() and batchnorm_backward() receive:
/// three values per channel for each of kBatchNormSplits partials.
inline std::size_t batchnorm_workspace_floats(int C) {
  return 3 * static_cast<std::size_t>(kBatchNormSplits) * static_cast<std::size_t>(C > 0 ? C : 0);
}

/// Batch normalization, training mode, over x of N x C x HW (HW = H * W pixels per plane). Per
/// channel c, over the M = N * HW values of the channel:
///
///     mean = sum x / M,  var = sum (x - mean)^2 / M            (biased: divided by M)
///     rstd = 1 / sqrt(var + eps)
///     y = (x - mean) * rstd * gamma[c] + beta[c]
///     save_mean[c] = mean, save_rstd[c] = rstd                  (for the backward)
///     running_mean[c] = (1 - momentum) running_mean[c] + momentum mean
///     running_var[c]  = (1 - momentum) running_var[c]  + momentum var * M / (M - 1)
///
/// The running variance takes the unbiased estimate (divided by M - 1), the normalization the
/// biased one: PyTorch's and cuDNN's convention. M >= 2. running_mean and running_var are read
/// and updated in place. Compute the variance without cancellation (two passes, or Welford's
/// algorithm with Chan's combination of partials): channels of mean 1e3 and standard deviation 1
/// occur. @p workspace holds batchnorm_workspace_floats(C) floats. No atomics: the same bits on
/// every run.
cudaError_t batchnorm_forward_training(int N, int C, int HW, const float* x, const float* gamma, const float* beta,
                                       float momentum, float eps, float* y, float* save_mean, float* save_rstd,
                                       float* running_mean, float* running_var, float* workspace);

/// Batch normalization, inference mode: the running statistics instead of the batch's,
/// y = (x - running_mean[c]) / sqrt(running_var[c] + eps) * gamma[c] + beta[c]. One read of x,
/// one write of y: an elementwise kernel.
cudaError_t batchnorm_forward_inference(int N, int C, int HW, const float* x, const float* gamma, const float* beta,
                                        const float* running_mean, const float* running_var, float eps, float* y);

/// Batch normalization backward (training mode), from the forward's save_mean and save_rstd.
/// With xhat = (x - mean) * rstd, per channel over its M values:
///
///     dbeta[c]  = sum dy
///     dgamma[c] = sum dy * xhat
///     dx = gamma[c] * rstd * (dy - dbeta[c] / M - xhat * dgamma[c] / M)
///
/// @p workspace holds batchnorm_workspace_floats(C) floats. No atomics.
cudaError_t batchnorm_backward(int N, int C, int HW, const float* dy, const float* x, const float* gamma,
                               const float* save_mean, const float* save_rstd, float* dx, float* dgamma, float* dbeta,
                               float* workspace);
