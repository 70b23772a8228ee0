/// @file
/// @brief Lab 06 interface: softmax, layer normalization and RMSNorm, forward and backward, over
/// the rows of a matrix.
///
/// The checker calls these functions; implement them in softmax_layernorm.cu and do not change
/// this file.
///
/// Every matrix is row-major fp32 (bf16 in the last step) with @p rows rows of @p cols columns,
/// stored without padding: element (r, c) is at index r * cols + c. rows >= 0 (0 means nothing
/// to do) and 1 <= cols <= 65536. Every pointer is a device pointer whose first element is
/// 16-byte aligned, as cudaMalloc memory is (labs 08 and 12, which call softmax_forward(), keep
/// this promise too); a row starts 16-byte aligned only when cols is a multiple of 4 (of 8 for
/// bf16). Each operation works on every row independently, except the
/// parameter gradients (dgamma, dbeta), which sum over the rows. Every function returns the
/// first CUDA error it sees (cudaGetLastError() after a launch), else cudaSuccess.
///
/// Conventions (the checker tests each of them):
/// - softmax(x)_c = exp(x_c - m) / sum_k exp(x_k - m) with m = max_k x_k: subtracting the row's
///   maximum keeps exp() from overflowing for logits of 1e4. A row whose elements are all
///   -infinity (a fully masked row) gives all zeros, not NaN.
/// - Layer normalization: mean = sum_c x_c / cols; var = sum_c (x_c - mean)^2 / cols (the
///   biased variance, divided by cols, not cols - 1); rstd = 1 / sqrt(var + eps), epsilon
///   inside the square root; y_c = (x_c - mean) * rstd * gamma_c + beta_c. The forward stores
///   mean and rstd per row for the backward.
/// - RMSNorm: rrms = 1 / sqrt(sum_c x_c^2 / cols + eps); y_c = x_c * rrms * gamma_c. The
///   forward stores rrms per row.
/// - Backward passes receive the forward's saved statistics (mean, rstd, rrms) and the output
///   gradient dy; they produce dx and the parameter gradients. The final backward versions use
///   no floating-point atomics: two runs give bitwise identical results.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>

/// Rows of partial parameter gradients the backward passes may store in their workspace:
/// at most this many per-block partial rows of dgamma (and as many of dbeta).
inline constexpr int kNormPartialRows = 256;

/// Floats of device workspace that layernorm_backward() and rmsnorm_backward() receive: room
/// for kNormPartialRows partial rows of dgamma and kNormPartialRows partial rows of dbeta.
inline std::size_t norm_backward_workspace_floats(int cols) {
  return 2 * static_cast<std::size_t>(kNormPartialRows) * static_cast<std::size_t>(cols > 0 ? cols : 0);
}

// ---- Softmax forward: the ladder. y = softmax(x) row by row. ------------------------------------

/// Version 1: one thread per row, three passes over the row (max, sum of exponentials, write).
cudaError_t softmax_naive(const float* x, float* y, int rows, int cols);

/// Version 2: a block (or a warp) per row; the threads stride over the row's columns (each warp
/// reads consecutive elements) and combine their maxima and sums with warp shuffles and shared
/// memory. Still three passes over the row.
cudaError_t softmax_block(const float* x, float* y, int rows, int cols);

/// Version 3: online softmax (Milakov and Gimelshein, 2018). One pass computes the maximum and
/// the sum of exponentials together (a running maximum, the running sum rescaled whenever the
/// maximum grows); a second pass writes y. Reads x twice.
cudaError_t softmax_online(const float* x, float* y, int rows, int cols);

/// Final version: your fastest. Vectorized 16-byte loads and stores with a scalar tail, the row
/// kept in registers or shared memory when it fits so that x is read once (for cols <= 8192).
cudaError_t softmax_forward(const float* x, float* y, int rows, int cols);

/// Softmax backward from the forward's output y and the gradient dy:
/// dx_c = y_c * (dy_c - sum_k dy_k * y_k).
cudaError_t softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols);

// ---- Layer normalization -----------------------------------------------------------------------

/// Version 1: two passes over the row for the statistics (the mean, then the variance as the mean
/// of (x - mean)^2), then a third that writes y. Stores mean[r] and rstd[r].
cudaError_t layernorm_two_pass(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                               float* rstd, int rows, int cols, float eps);

/// Final version: reads x once for cols <= 8192 (the row cached in registers or shared memory,
/// two passes over the cache; or Welford's algorithm), vectorized. Same outputs as version 1.
cudaError_t layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                              float* rstd, int rows, int cols, float eps);

/// Layer normalization backward. With xhat = (x - mean) * rstd and g = dy * gamma:
/// dx_c = rstd * (g_c - mean_k(g_k) - xhat_c * mean_k(g_k * xhat_k));
/// dgamma_c = sum_r dy_rc * xhat_rc; dbeta_c = sum_r dy_rc. @p workspace holds
/// norm_backward_workspace_floats(cols) floats for per-block partial sums of dgamma and dbeta,
/// which a second kernel adds up in a fixed order (no atomics: bitwise reproducible).
cudaError_t layernorm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                               const float* rstd, float* dx, float* dgamma, float* dbeta, int rows, int cols,
                               float* workspace);

// ---- RMSNorm -----------------------------------------------------------------------------------

/// RMSNorm forward: y = x * rrms * gamma, rrms = 1 / sqrt(mean(x^2) + eps); stores rrms[r].
cudaError_t rmsnorm_forward(const float* x, const float* gamma, float* y, float* rrms, int rows, int cols, float eps);

/// RMSNorm backward. With g = dy * gamma:
/// dx_c = rrms * (g_c - x_c * rrms^2 * mean_k(g_k * x_k)); dgamma_c = sum_r dy_rc * x_rc * rrms_r.
/// Same workspace and reproducibility rule as layernorm_backward().
cudaError_t rmsnorm_backward(const float* dy, const float* x, const float* gamma, const float* rrms, float* dx,
                             float* dgamma, int rows, int cols, float* workspace);

// ---- bf16 ------------------------------------------------------------------------------------------

/// softmax_forward() with bf16 input and output; max, sum and exponentials in fp32.
cudaError_t softmax_forward_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols);

/// layernorm_forward() with bf16 x, gamma, beta and y; statistics in fp32 (mean and rstd stay
/// fp32 outputs).
cudaError_t layernorm_forward_bf16(const __nv_bfloat16* x, const __nv_bfloat16* gamma, const __nv_bfloat16* beta,
                                   __nv_bfloat16* y, float* mean, float* rstd, int rows, int cols, float eps);
