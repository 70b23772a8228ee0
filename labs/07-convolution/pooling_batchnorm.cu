// Lab 07, part 2: max and average pooling, batch normalization. Your file: implement the TODOs,
// then run
//   ./workbook check 07
// The handout is labs/07-convolution/README.md (part 2); the interface is pooling_batchnorm.h (do
// not edit it). Every tensor is fp32 NCHW: x[((n * C + c) * H + h) * W + w].
#include "pooling_batchnorm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace {

// ---- Provided -----------------------------------------------------------------------------------------

[[maybe_unused]] constexpr unsigned kFullMask = 0xffffffffu;
[[maybe_unused]] constexpr int kThreads = 256;

// Blocks of kThreads threads for @p total threads (one per output, or per input pixel).
[[maybe_unused]] int blocks_for(std::size_t total) { return static_cast<int>((total + kThreads - 1) / kThreads); }

// Reduces one value per thread over the block with @p combine; every thread gets the result.
// `identity` stands in for the warps the block does not have. V needs a shfl_xor(V, int) overload.
[[maybe_unused]] __device__ float shfl_xor(float v, int offset) { return __shfl_xor_sync(kFullMask, v, offset); }
[[maybe_unused]] __device__ float2 shfl_xor(float2 v, int offset) {
  return {shfl_xor(v.x, offset), shfl_xor(v.y, offset)};
}

template <class V, class Combine>
__device__ V block_reduce(V v, Combine combine, V identity) {
  __shared__ V partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) v = combine(v, shfl_xor(v, offset));
  __syncthreads();  // the previous call's readers are done with partial[]
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : identity;
  for (int offset = 16; offset > 0; offset >>= 1) v = combine(v, shfl_xor(v, offset));
  return v;
}

}  // namespace

// ---- Pooling ------------------------------------------------------------------------------------------------

// TODO(1): a thread per output i = ((n * C + c) * P + p) * Q + q (q fastest: a warp reads one row's
//   windows, consecutive outputs stride_w pixels apart). The window starts at hs = p * stride_h - pad_h,
//   ws = q * stride_w - pad_w; clip it to the image: rows max(hs, 0) .. min(hs + R, H) - 1, the same
//   for columns. Padding never wins: only pixels inside the image are candidates. Start from
//   best = -INFINITY and argmax = the first pixel of the clipped window, scan rows then columns,
//   and replace on v > best (strict: on a tie the first pixel stays). Read each pixel once.
//   argmax[i] = h * W + w within the plane.
cudaError_t maxpool2d_forward(PoolParams p, const float* x, float* y, int* argmax) {
  (void)p; (void)x; (void)y; (void)argmax;
  return cudaErrorNotYetImplemented;
}

// TODO(2): gather, no atomics. A thread per input pixel (n, c, h, w). The outputs whose windows
//   contain row h are p0 .. p1 with
//     p0 = (h + pad_h < R) ? 0 : (h + pad_h - R) / stride_h + 1,   p1 = min((h + pad_h) / stride_h, P - 1)
//   (empty when p0 > p1: a stride larger than the window skips the pixel), the same for columns.
//   dx = the sum, in (p, q) order, of dy[p][q] over those outputs whose argmax[p][q] == h * W + w;
//   read dy only where it matches. Every pixel writes dx, 0 when no window chose it.
cudaError_t maxpool2d_backward(PoolParams p, const float* dy, const int* argmax, float* dx) {
  (void)p; (void)dy; (void)argmax; (void)dx;
  return cudaErrorNotYetImplemented;
}

// TODO(3): as TODO(1) and TODO(2) with sums. The divisor of output (p, q) is R * S when
//   count_include_pad is nonzero (padding counts as zeros), else the number of pixels of its clipped
//   window. The backward adds dy[p][q] / divisor(p, q) over every window containing the pixel.
cudaError_t avgpool2d_forward(PoolParams p, const float* x, float* y, int count_include_pad) {
  (void)p; (void)x; (void)y; (void)count_include_pad;
  return cudaErrorNotYetImplemented;
}

cudaError_t avgpool2d_backward(PoolParams p, const float* dy, float* dx, int count_include_pad) {
  (void)p; (void)dy; (void)dx; (void)count_include_pad;
  return cudaErrorNotYetImplemented;
}

namespace {

// Welford's state: the count n, the mean and M2 = sum (x - mean)^2 of the values seen.
struct Welford {
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
};

[[maybe_unused]] __device__ Welford shfl_xor(Welford w, int offset) {
  return {shfl_xor(w.n, offset), shfl_xor(w.mean, offset), shfl_xor(w.m2, offset)};
}

// ---- TODO(4): Chan's combination of two Welford states --------------------------------------------------------
//
//   An empty state (n == 0) returns the other. Else n = a.n + b.n, d = b.mean - a.mean,
//   mean = a.mean + d * b.n / n, m2 = a.m2 + b.m2 + d * d * a.n * b.n / n. Adding one value v is
//   combining with {1, v, 0}; a float4 chunk is {4, its mean, its own sum of squared deviations}.
[[maybe_unused]] __device__ Welford combine(Welford a, Welford b) {
  (void)b;
  return a;  // replace
}

}  // namespace

// ---- Batch normalization ----------------------------------------------------------------------------------
//
// Channel c is N planes of HW values: value k of the channel (k < M = N * HW) is
// x[(k / HW * C + c) * HW + k % HW]. Where HW % 4 == 0 every plane is 16-byte aligned, so chunks of
// 4 consecutive values are float4 loads; make the chunk width a template parameter V (4 or 1).
// A grid of (splits, C) blocks, splits = min(kBatchNormSplits, about M / 8192): block (b, c) takes
// chunks b * blockDim.x + threadIdx.x, stepping by splits * blockDim.x (consecutive threads on
// consecutive chunks; on a GPU, load a few of them before using any, so that many bytes are in
// flight). A value a whole block needs (mean[c], gamma[c], ...) is best read by one
// thread and shared through __shared__ memory (one load instead of one per thread).

// TODO(5): training, three kernels, no atomics:
//   a. statistics: each thread keeps a Welford state over its chunks (per float4 chunk: its mean
//      and M2 from the four registers, then combine() once); block_reduce() the states; thread 0
//      stores (n, mean, m2) at workspace[(c * kBatchNormSplits + b) * 3 ...].
//   b. a thread per channel combines its splits' partials in order b = 0, 1, ...; var = m2 / M
//      (biased) normalizes: save_mean = mean, save_rstd = 1 / sqrtf(var + eps); the running
//      statistics take momentum * mean and momentum * m2 / (M - 1) (unbiased).
//   c. y = (x - mean) * rstd * gamma[c] + beta[c], the same grid as a: x is read twice in all.
cudaError_t batchnorm_forward_training(int N, int C, int HW, const float* x, const float* gamma, const float* beta,
                                       float momentum, float eps, float* y, float* save_mean, float* save_rstd,
                                       float* running_mean, float* running_var, float* workspace) {
  (void)N; (void)C; (void)HW; (void)x; (void)gamma; (void)beta; (void)momentum; (void)eps; (void)y;
  (void)save_mean; (void)save_rstd; (void)running_mean; (void)running_var; (void)workspace;
  return cudaErrorNotYetImplemented;
}

// TODO(6): TODO(5) c. with the running statistics: y = (x - running_mean[c]) * gamma[c] /
//   sqrt(running_var[c] + eps) + beta[c]. One read of x, one write of y.
cudaError_t batchnorm_forward_inference(int N, int C, int HW, const float* x, const float* gamma, const float* beta,
                                        const float* running_mean, const float* running_var, float eps, float* y) {
  (void)N; (void)C; (void)HW; (void)x; (void)gamma; (void)beta; (void)running_mean; (void)running_var; (void)eps;
  (void)y;
  return cudaErrorNotYetImplemented;
}

// TODO(7): backward, three kernels with the split of TODO(5):
//   a. per block, the sums of dy and of dy * (x - mean) over its chunks (block_reduce of a float2),
//      stored in the block's slot of the workspace;
//   b. a thread per channel adds its partials in split order: dbeta = sum dy, dgamma = rstd * sum
//      dy (x - mean);
//   c. dx = gamma * rstd * (dy - dbeta / M - xhat * dgamma / M), xhat = (x - mean) * rstd.
cudaError_t batchnorm_backward(int N, int C, int HW, const float* dy, const float* x, const float* gamma,
                               const float* save_mean, const float* save_rstd, float* dx, float* dgamma, float* dbeta,
                               float* workspace) {
  (void)N; (void)C; (void)HW; (void)dy; (void)x; (void)gamma; (void)save_mean; (void)save_rstd; (void)dx;
  (void)dgamma; (void)dbeta; (void)workspace;
  return cudaErrorNotYetImplemented;
}
