/// @file
/// @brief Candidate kernels for lab 08's attention_forward_bf16, timed by bench_kernels beside the
/// reference and a cuBLAS bf16 GEMM (see attention_candidates.cu).
///
/// Each computes what attention_forward_bf16 computes (labs/08-attention/attention.h): O and L for
/// every shape the lab accepts (D in {32, 64, 128}, any lengths, causal or not), bf16 in and out,
/// products accumulated in fp32. They differ from the reference's WMMA kernel in how the
/// tensor cores are fed: PTX mma.sync m16n8k16, whose documented fragment layout lets the scores'
/// accumulators become the next product's A operand in registers (no shared scratch per tile),
/// ldmatrix fragment loads and cp.async double buffering. On sim, where PTX does not exist, mma.sync
/// and ldmatrix are emulated lane by lane from the same documented layouts (warp shuffles), so the
/// sim validation checks every fragment index the GPU code uses; only the asm statements are not
/// exercised there.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "attention.h"

namespace candidates {

/// The shapes of the candidates: a block of @p warps warps, each owning @p row_tiles tiles of 16
/// query rows, and @p keys keys per K/V tile.
struct FlashConfig {
  int warps;      ///< 4 or 8
  int row_tiles;  ///< 1 (Q fragments kept in registers) or 2 (Q reloaded from shared memory per tile)
  int keys;       ///< 32 or 64
};

/// attention_forward_bf16 through mma.sync with @p config; cudaErrorInvalidValue for a shape the
/// lab refuses or a configuration not built. Built: {4, 1, 64}, {8, 1, 64}, {4, 2, 64}, {4, 2, 32}.
cudaError_t attention_forward_mma(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                                  __nv_bfloat16* o, float* lse, AttentionShape shape, FlashConfig config);

}  // namespace candidates
