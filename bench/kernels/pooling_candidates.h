/// @file
/// @brief Candidate kernels for lab 07's maxpool2d_forward and maxpool2d_backward, timed by
/// bench_kernels beside the reference (see pooling_candidates.cu).
///
/// Each computes what its lab function computes (labs/07-convolution/pooling_batchnorm.h), with the
/// same bits: the forward y and argmax (the first maximum in the window's row-major order wins),
/// the backward dx[h][w] = the sum of dy over the windows containing (h, w) whose argmax is (h, w).
/// They handle the windows the lab's Performance check times, R = S = 3 and stride 2, and return
/// cudaErrorInvalidValue for others.
#pragma once

#include <cuda_runtime.h>

#include "pooling_batchnorm.h"

namespace candidates {

/// A thread per 2 x 2 block of dx between window starts (rows 2p - pad + 1 .. 2p - pad + 2): the
/// 2 x 2 windows that cover the block are read once for its four pixels (one argmax and at most
/// one dy per pixel instead of up to four), @p planes_per_thread planes (1, 2 or 4) per thread
/// with all their argmax loads in flight at once, then each row's two values as one 8-byte store
/// where aligned.
cudaError_t maxpool_backward_blocks(PoolParams p, const float* dy, const int* argmax, float* dx,
                                    int planes_per_thread);

/// How a maxpool2d_forward candidate splits the work (see maxpool_forward_tiles).
struct PoolForwardShape {
  int rows = 1;           ///< output rows per thread (2 rows + 1 input rows loaded)
  bool shuffle = false;   ///< the column a thread needs beside its float4 comes from the neighbour lane
  int items = 1;          ///< tiles per thread per iteration, all their loads in flight
  bool one_wave = false;  ///< false: a thread per `items` tiles; true: the blocks the GPU holds at once, grid-stride
};

/// A thread per tile of @p shape.rows output rows x 2 output columns (q = 2k, 2k + 1): the 2 rows
/// + 1 input rows the tile's windows cover, each as one 16-byte load of columns 4k .. 4k + 3 (where
/// W % 4 == 0; else four guarded scalar loads) plus the one column beyond it the windows need
/// (4k - 1 with pad_w = 1, 4k + 4 with pad_w = 0) by a scalar load or a shuffle; then every
/// window scanned as the reference scans it; y and argmax stored as 8-byte pairs where Q is even.
/// pad_w is 0 or 1 (pad_h any valid value); the outputs' tiles, N C ceil(P / rows) ceil(Q / 2),
/// below 2^31. Built shapes (rows, shuffle, items): (1, no, 1), (2, no, 1), (2, yes, 1), (2, no, 2),
/// either grid; cudaErrorInvalidValue for others.
cudaError_t maxpool_forward_tiles(PoolParams p, const float* x, float* y, int* argmax, PoolForwardShape shape);

}  // namespace candidates
