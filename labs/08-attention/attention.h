/// @file
/// @brief Lab 08 interface: scaled dot-product attention, from an unfused version that builds the
/// T x T score matrix to a fused, FlashAttention-style kernel on tensor cores, forward and backward.
///
/// The checker calls these functions; implement them in attention.cu and do not change this file.
///
/// For every batch b < B and head h < H, with queries Q (Tq x D), keys K and values V (Tk x D):
///
///     S = scale * Q K^T                   (Tq x Tk scores), scale = 1 / sqrt(D)
///     P = softmax of each row of S        (masked entries count as -infinity)
///     O = P V                             (Tq x D)
///     L[i] = log(sum_j exp(S[i][j]))      (natural logarithm, over the unmasked j of row i)
///
/// L, the per-row logsumexp, is what the backward pass needs to recompute P = exp(S - L) without
/// storing it. Layouts are row-major and dense: Q[b][h][i][c] = Q[((b * H + h) * Tq + i) * D + c],
/// K and V likewise with Tk rows, O like Q, L[b][h][i] = L[(b * H + h) * Tq + i].
///
/// Causal mask (causal != 0), aligned to the bottom right as FlashAttention 2 does it: query i
/// sees the keys j <= i + (Tk - Tq). With Tq == Tk that is j <= i; with Tq < Tk (new queries
/// after a cache of keys) every query also sees the earlier keys; with Tq > Tk the first
/// Tq - Tk queries see no key at all. A row that sees no key has O = 0 and L = -infinity.
///
/// Shapes: B, H, Tq, Tk >= 1, D in {32, 64, 128}; every array has fewer than 2^31 elements.
/// Lengths need not be multiples of any tile (1, 17, 1023 are all valid). Pointers come from
/// cudaMalloc (16-byte aligned). Inputs are read only; every element of every output is
/// written. Every function returns the first CUDA error it sees (cudaGetLastError() after a
/// launch), else cudaSuccess.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

/// The shape of one attention call (passed by value).
struct AttentionShape {
  int batch;   ///< B
  int heads;   ///< H
  int tq;      ///< query length Tq
  int tk;      ///< key and value length Tk
  int d;       ///< head dimension D: 32, 64 or 128
  int causal;  ///< 0: every query sees every key; 1: the causal mask above
};

/// Elements of Q (and O): B * H * Tq * D.
inline std::size_t attention_q_elements(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch) * s.heads * s.tq * s.d;
}
/// Elements of K (and V): B * H * Tk * D.
inline std::size_t attention_kv_elements(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch) * s.heads * s.tk * s.d;
}
/// Elements of L: B * H * Tq.
inline std::size_t attention_rows(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch) * s.heads * s.tq;
}

/// Floats of one Tq x Tk matrix of attention_unfused()'s workspace, rounded up to a multiple of 4 so
/// that the array after it starts at a 16-byte boundary.
inline std::size_t attention_unfused_scores_floats(const AttentionShape& s) {
  return (static_cast<std::size_t>(s.tq) * s.tk + 3) / 4 * 4;
}

/// Floats of the workspace attention_unfused() receives: the scores and the probabilities of
/// one head (Tq x Tk each) and K^T of one head (D x Tk), each starting at a 16-byte boundary
/// (UnfusedWorkspace). Heads are processed one after another.
inline std::size_t attention_unfused_workspace_floats(const AttentionShape& s) {
  return 2 * attention_unfused_scores_floats(s) + static_cast<std::size_t>(s.d) * s.tk;
}

/// attention_unfused()'s workspace split into its three arrays. Each starts 16-byte aligned, as
/// lab 06 promises every pointer its functions receive: probs = scores + Tq * Tk would not be
/// when Tq * Tk is not a multiple of 4, and a softmax_forward() that relies on the promise (16-byte
/// loads from its first element) would fault there.
struct UnfusedWorkspace {
  float* scores;  ///< Tq x Tk
  float* probs;   ///< Tq x Tk
  float* kt;      ///< D x Tk
};

/// The arrays of attention_unfused()'s @p workspace for @p s.
inline UnfusedWorkspace unfused_workspace(float* workspace, const AttentionShape& s) {
  const std::size_t tt = attention_unfused_scores_floats(s);
  return {workspace, workspace + tt, workspace + 2 * tt};
}

/// Floats of the workspace attention_backward() receives: one per query row (for
/// Delta[i] = sum_c dO[i][c] * O[i][c]).
inline std::size_t attention_backward_workspace_floats(const AttentionShape& s) { return attention_rows(s); }

// ---- Forward: the ladder. fp32 unless the name says otherwise. ------------------------------------

/// Version 1: unfused. For each (b, h) in turn: K^T written to the workspace, S = scale * Q K^T
/// with your lab-05 sgemm(), the causal mask applied to S and L computed from each row of S,
/// P = softmax(S) with your lab-06 softmax_forward(), O = P V with sgemm(). The workspace holds
/// S and P, Tq x Tk each: the T x T traffic the fused versions remove.
cudaError_t attention_unfused(const float* q, const float* k, const float* v, float* o, float* lse,
                              AttentionShape shape, float* workspace);

/// Versions 2 and 3: fused. One block per (b, h, tile of query rows); K and V tiles stream
/// through shared memory; each row keeps a running maximum and sum (online softmax, rescaling the
/// output accumulator when the maximum grows), so no T x T buffer exists anywhere. Causal: key
/// tiles entirely above the diagonal are skipped, and only tiles that straddle it are masked.
cudaError_t attention_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                              AttentionShape shape);

/// Version 4: the fused forward on tensor cores (nvcuda::wmma, <mma.h>): bf16 Q, K, V and O,
/// products accumulated in fp32, softmax statistics and L in fp32.
cudaError_t attention_forward_bf16(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                   __nv_bfloat16* o, float* lse, AttentionShape shape);

/// Version 4 with fp16 (__half) Q, K, V and O.
cudaError_t attention_forward_fp16(const __half* q, const __half* k, const __half* v, __half* o, float* lse,
                                   AttentionShape shape);

// ---- Backward ----------------------------------------------------------------------------------------

/// Version 5: the fused backward (FlashAttention 2), fp32. From Q, K, V, the forward's O and L
/// and the output gradient dO, with Delta[i] = sum_c dO[i][c] O[i][c] and P recomputed tile by
/// tile as exp(S - L):
///
///     dV = P^T dO,   dP = dO V^T,   dS = P * (dP - Delta) (elementwise, by row),
///     dQ = scale * dS K,   dK = scale * dS^T Q.
///
/// No T x T buffer; @p workspace holds attention_backward_workspace_floats() floats (Delta).
/// dQ, dK and dV are written, not accumulated into. Two runs give bitwise identical results (no
/// floating-point atomics).
cudaError_t attention_backward(const float* q, const float* k, const float* v, const float* o, const float* dout,
                               const float* lse, float* dq, float* dk, float* dv, AttentionShape shape,
                               float* workspace);
