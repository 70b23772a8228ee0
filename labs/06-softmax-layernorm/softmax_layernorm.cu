// Lab 06: softmax, layer normalization and RMSNorm. Your file: implement the TODOs, then run
//   ./workbook check 06
// The handout is labs/06-softmax-layernorm/README.md; the interface is softmax_layernorm.h (do not
// edit it).
#include "softmax_layernorm.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

// ---- Provided -----------------------------------------------------------------------------------------

[[maybe_unused]] constexpr unsigned kFullMask = 0xffffffffu;

// Threads per block for a row of `cols` elements, about `per_thread` elements each: a multiple of
// 32 from 32 to 1024 (block reductions with warp shuffles need whole warps).
[[maybe_unused]] int block_threads(int cols, int per_thread) {
  const int wanted = (cols + per_thread - 1) / per_thread;
  return std::clamp((wanted + 31) / 32 * 32, 32, 1024);
}

[[maybe_unused]] __device__ float to_float(float v) { return v; }
[[maybe_unused]] __device__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

// ---- TODO(1): the lab's reductions, used by every version from 2 on ----------------------------------------
//
//   a. warp_sum(v) and warp_max(v): five __shfl_xor_sync(kFullMask, v, offset) steps, offsets 16, 8,
//      4, 2, 1; every lane ends with the warp's result.
//   b. block_sum(v) and block_max(v): reduce in each warp; lane 0 of each warp stores its value in a
//      __shared__ float partial[32]; __syncthreads(); every warp then reduces partial[0 ..
//      blockDim.x / 32) itself (lanes past the last warp use the identity: 0 or -INFINITY), so all
//      threads get the result. Start with a __syncthreads() too: the previous call's readers must be
//      done with partial[] before it is written again.

}  // namespace

// ---- Softmax forward -------------------------------------------------------------------------------------

// TODO(2): version 1, one thread per row r = blockIdx.x * blockDim.x + threadIdx.x (r < rows):
//   m = the row's maximum; if m == -INFINITY (a fully masked row) write zeros; else
//   s = sum of expf(x - m), then y = expf(x - m) / s.
cudaError_t softmax_naive(const float* x, float* y, int rows, int cols) {
  (void)x; (void)y; (void)rows; (void)cols;
  return cudaErrorNotYetImplemented;
}

// TODO(3): version 2, a block per row (gridDim.x = rows; rows == 0 launches nothing): thread t
//   takes columns t, t + blockDim.x, ...; block_max, then block_sum of expf(x - m), then y.
cudaError_t softmax_block(const float* x, float* y, int rows, int cols) {
  (void)x; (void)y; (void)rows; (void)cols;
  return cudaErrorNotYetImplemented;
}

// TODO(4): version 3, online softmax. A running state (m, s): the maximum so far and the sum of
//   expf(v - m) so far. Adding v > m: s = s * expf(m - v) + 1, m = v; else s += expf(v - m)
//   (skip v == -INFINITY: exp(-inf - (-inf)) is NaN). Two states combine to
//   m = max(m1, m2), s = s1 * expf(m1 - m) + s2 * expf(m2 - m). One pass over the row, a block
//   reduction of states (shuffle both fields), then one pass that writes y.
cudaError_t softmax_online(const float* x, float* y, int rows, int cols) {
  (void)x; (void)y; (void)rows; (void)cols;
  return cudaErrorNotYetImplemented;
}

// TODO(5): the final version. Version 3 with:
//   - 16-byte loads and stores (float4). Row r starts at x + r * cols, 16-byte aligned only when
//     cols % 4 == 0: handle the elements before the first 16-byte boundary (the head) and after the
//     last full float4 (the tail) one at a time;
//   - for cols <= 8192, the row kept in shared memory (extern __shared__, cols floats plus a few
//     for alignment) after the first read, so that the second pass reads the cache, not x.
cudaError_t softmax_forward(const float* x, float* y, int rows, int cols) {
  (void)x; (void)y; (void)rows; (void)cols;
  return cudaErrorNotYetImplemented;
}

// TODO(6): per row, dot = block_sum of dy * y, then dx = y * (dy - dot).
cudaError_t softmax_backward(const float* y, const float* dy, float* dx, int rows, int cols) {
  (void)y; (void)dy; (void)dx; (void)rows; (void)cols;
  return cudaErrorNotYetImplemented;
}

// ---- Layer normalization ----------------------------------------------------------------------------------

// TODO(7): version 1, a block per row: mean = block_sum(x) / cols; var = block_sum((x - mean)^2) /
//   cols; rstd = rsqrtf(var + eps); y = (x - mean) * rstd * gamma[c] + beta[c]; thread 0 stores
//   mean[r] and rstd[r].
cudaError_t layernorm_two_pass(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                               float* rstd, int rows, int cols, float eps) {
  (void)x; (void)gamma; (void)beta; (void)y; (void)mean; (void)rstd; (void)rows; (void)cols; (void)eps;
  return cudaErrorNotYetImplemented;
}

// TODO(8): the final version: x read once (cached row, the two passes over the cache; Welford's
//   algorithm beyond 8192 columns), 16-byte loads and stores.
cudaError_t layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                              float* rstd, int rows, int cols, float eps) {
  (void)x; (void)gamma; (void)beta; (void)y; (void)mean; (void)rstd; (void)rows; (void)cols; (void)eps;
  return cudaErrorNotYetImplemented;
}

// TODO(9): a few blocks (at most kNormPartialRows), each taking rows blockIdx.x, blockIdx.x +
//   gridDim.x, ...; per row: xhat = (x - mean) * rstd, g = dy * gamma, block sums of g and g * xhat,
//   dx = rstd * (g - sum(g) / cols - xhat * sum(g * xhat) / cols). Each thread adds dy * xhat and dy
//   of its columns into partial sums over its block's rows, stored at the end as the block's row of
//   the workspace (dgamma partials at workspace[0 ..], dbeta partials kNormPartialRows * cols
//   further). A second kernel adds the partial rows column by column, in order.
cudaError_t layernorm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                               const float* rstd, float* dx, float* dgamma, float* dbeta, int rows, int cols,
                               float* workspace) {
  (void)dy; (void)x; (void)gamma; (void)mean; (void)rstd; (void)dx; (void)dgamma; (void)dbeta; (void)rows;
  (void)cols; (void)workspace;
  return cudaErrorNotYetImplemented;
}

// ---- RMSNorm -------------------------------------------------------------------------------------------------

// TODO(10): the layer-norm kernels without the mean (a template parameter `bool kCentered` lets one
//   kernel do both): rrms = rsqrtf(sum(x^2) / cols + eps), y = x * rrms * gamma; the backward has no
//   mean(g) term and no dbeta.
cudaError_t rmsnorm_forward(const float* x, const float* gamma, float* y, float* rrms, int rows, int cols, float eps) {
  (void)x; (void)gamma; (void)y; (void)rrms; (void)rows; (void)cols; (void)eps;
  return cudaErrorNotYetImplemented;
}

cudaError_t rmsnorm_backward(const float* dy, const float* x, const float* gamma, const float* rrms, float* dx,
                             float* dgamma, int rows, int cols, float* workspace) {
  (void)dy; (void)x; (void)gamma; (void)rrms; (void)dx; (void)dgamma; (void)rows; (void)cols; (void)workspace;
  return cudaErrorNotYetImplemented;
}

// ---- bf16 ------------------------------------------------------------------------------------------------------

// TODO(11): your final softmax and layer norm as templates on the element type: convert with
//   to_float() on load and __float2bfloat16() on store, keep the arithmetic in float. 16 bytes hold
//   8 bf16 (a uint4 of __nv_bfloat162 pairs, __bfloat1622float2), so bf16 rows are 16-byte aligned
//   only when cols % 8 == 0.
cudaError_t softmax_forward_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols) {
  (void)x; (void)y; (void)rows; (void)cols;
  return cudaErrorNotYetImplemented;
}

cudaError_t layernorm_forward_bf16(const __nv_bfloat16* x, const __nv_bfloat16* gamma, const __nv_bfloat16* beta,
                                   __nv_bfloat16* y, float* mean, float* rstd, int rows, int cols, float eps) {
  (void)x; (void)gamma; (void)beta; (void)y; (void)mean; (void)rstd; (void)rows; (void)cols; (void)eps;
  return cudaErrorNotYetImplemented;
}
