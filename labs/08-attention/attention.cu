// Lab 08: attention. Your file: implement the TODOs, then run
//   ./workbook check 08
// The handout is labs/08-attention/README.md; the interface is attention.h (do not edit it).
// Version 1 calls your lab-05 sgemm() and lab-06 softmax_forward(): finish those labs first.
#include "attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstdint>

#include "gemm.h"               // lab 05: sgemm()
#include "softmax_layernorm.h"  // lab 06: softmax_forward()

namespace {

// ---- Provided -----------------------------------------------------------------------------------------

[[maybe_unused]] constexpr unsigned kFullMask = 0xffffffffu;
[[maybe_unused]] constexpr float kLog2e = 1.4426950408889634f;  // exp(x) = exp2(x * log2(e))
[[maybe_unused]] constexpr float kLn2 = 0.6931471805599453f;

// The shapes the interface allows.
[[maybe_unused]] bool valid(const AttentionShape& s) {
  return s.batch >= 1 && s.heads >= 1 && s.tq >= 1 && s.tk >= 1 && (s.d == 32 || s.d == 64 || s.d == 128) &&
         (s.causal == 0 || s.causal == 1);
}

// The keys [0, key_end(...)) that query rows [0, row_end) may see: all of them without the causal
// mask; with it, row i sees keys j <= i + (tk - tq).
[[maybe_unused]] __host__ __device__ inline int key_end(int row_end, int tq, int tk, int causal) {
  if (!causal) return tk;
  const int end = row_end + (tk - tq);
  return end < 0 ? 0 : (end < tk ? end : tk);
}

}  // namespace

// ---- Version 1: unfused ---------------------------------------------------------------------------------

// TODO(1): for each bh < B * H in turn, with the head's Q (Tq x D), K, V (Tk x D) and O at offsets
//   bh * Tq * D and bh * Tk * D, and the workspace split into scores (Tq x Tk), probs (Tq x Tk) and
//   kt (D x Tk) by unfused_workspace(workspace, shape) (attention.h: each array 16-byte aligned, as
//   lab 06's functions are promised):
//   a. a transpose kernel: kt[c][j] = K[j][c] (a 32 x 33 shared tile, as in lab 02);
//   b. sgemm(Tq, Tk, D, 1 / sqrt(D), Q, D, kt, Tk, 0, scores, Tk);
//   c. a kernel with one warp per row i: scores[i][j] = -INFINITY for j >= key_end(i + 1, ...); then
//      the row's maximum m and L[bh * Tq + i] = m + logf(sum of expf(s - m)) (-INFINITY when m is);
//   d. softmax_forward(scores, probs, Tq, Tk);
//   e. sgemm(Tq, D, Tk, 1, probs, Tk, V, D, 0, O, D).
cudaError_t attention_unfused(const float* q, const float* k, const float* v, float* o, float* lse,
                              AttentionShape shape, float* workspace) {
  (void)q; (void)k; (void)v; (void)o; (void)lse; (void)shape; (void)workspace;
  return cudaErrorNotYetImplemented;
}

// ---- Versions 2 and 3: fused, fp32 --------------------------------------------------------------------------

// TODO(2): one block per (tile of Br >= 32 query rows, bh): grid (ceil(Tq / Br), B * H).
//   a. Load the block's Q rows into shared memory (rows past Tq as zeros), multiplied by
//      scale * kLog2e so that exp2f() can replace expf().
//   b. Per row: m = -INFINITY, l = 0, an output accumulator of D floats (spread over the threads
//      that share the row), all zero.
//   c. For each tile of Bc keys: __syncthreads(); load K and V rows (zeros past Tk); __syncthreads();
//      s_j = q . k_j; mask (s_j = -INFINITY) keys j >= Tk; m_new = max(m, max_j s_j);
//      p_j = exp2f(s_j - m_new) (0 when m_new is -INFINITY); alpha = exp2f(m - m_new) (0 when m is
//      -INFINITY); l = l * alpha + sum_j p_j; acc = acc * alpha + sum_j p_j v_j; m = m_new.
//   d. O = acc / l (0 when l == 0); L = (m + log2f(l)) * kLn2 (-INFINITY when m is).
// TODO(3): causal. End the key loop at key_end(q0 + Br, ...): later tiles are all masked. Inside,
//   mask j > i + (Tk - Tq) only in tiles that straddle the diagonal.
//   More shared memory than 48 KB needs cudaFuncSetAttribute(kernel,
//   cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) before the launch.
cudaError_t attention_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                              AttentionShape shape) {
  (void)q; (void)k; (void)v; (void)o; (void)lse; (void)shape;
  return cudaErrorNotYetImplemented;
}

// ---- Version 4: tensor cores ------------------------------------------------------------------------------

// TODO(4): the fused forward with nvcuda::wmma (16 x 16 x 16 fragments), one template over the
//   element type T (__nv_bfloat16 or __half) serving both functions. A block of 4 warps takes 64
//   query rows (16 per warp) and tiles of 64 keys. In shared memory, rows padded by 8 elements (so
//   every tile pointer is 32-byte aligned and ldm a multiple of 8): Q, K, V tiles; per warp its
//   16 x 64 scores (float), probabilities (T) and 16 x D output accumulator (float).
//   Per key tile: S = Q K^T (matrix_a row_major from Q; matrix_b col_major from K, which stored
//   [key][d] is K^T in column-major order); store_matrix_sync to the warp's scores; __syncwarp();
//   the online softmax on the warp's rows (two lanes per row), writing P as T and rescaling the
//   output rows by alpha; __syncwarp(); O += P V (load the accumulator from shared memory, mma over
//   the 4 key blocks, store it back).
cudaError_t attention_forward_bf16(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                   __nv_bfloat16* o, float* lse, AttentionShape shape) {
  (void)q; (void)k; (void)v; (void)o; (void)lse; (void)shape;
  return cudaErrorNotYetImplemented;
}

cudaError_t attention_forward_fp16(const __half* q, const __half* k, const __half* v, __half* o, float* lse,
                                   AttentionShape shape) {
  (void)q; (void)k; (void)v; (void)o; (void)lse; (void)shape;
  return cudaErrorNotYetImplemented;
}

// ---- Version 5: backward ----------------------------------------------------------------------------------

// TODO(5): three kernels, no atomics.
//   a. Delta[row] = sum_c dO[row][c] * O[row][c] into the workspace (one warp per row).
//   b. dK, dV: one block per (tile of keys, bh), looping over the query tiles that see them (causal:
//      from the first query i with i + (Tk - Tq) >= the tile's first key): recompute
//      p = exp2f(q . k * scale * kLog2e - L * kLog2e) (0 where masked), dp = dO . v,
//      ds = p * (dp - Delta); dV += p dO; dK += ds q. Write dK * scale and dV.
//   c. dQ: one block per (tile of query rows, bh), looping over key tiles up to key_end: the same p
//      and ds; dQ += ds k. Write dQ * scale.
cudaError_t attention_backward(const float* q, const float* k, const float* v, const float* o, const float* dout,
                               const float* lse, float* dq, float* dk, float* dv, AttentionShape shape,
                               float* workspace) {
  (void)q; (void)k; (void)v; (void)o; (void)dout; (void)lse; (void)dq; (void)dk; (void)dv; (void)shape;
  (void)workspace;
  return cudaErrorNotYetImplemented;
}
