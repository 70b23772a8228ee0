/// @file
/// @brief Candidate kernels for lab 07's maxpool2d_backward, timed by bench_kernels beside the
/// reference (see pooling_candidates.cu).
///
/// Each computes what maxpool2d_backward computes (labs/07-convolution/pooling_batchnorm.h): dx[h][w]
/// = the sum of dy over the windows containing (h, w) whose argmax is (h, w). They handle the
/// windows the lab's Performance check times: R = S = 3, stride 2 (any padding), and return
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

}  // namespace candidates
