/// @file
/// @brief Candidate kernels for lab 07's conv2d_backward_data (dgrad), timed by bench_kernels beside
/// the reference and cuDNN (see conv_candidates.cu).
///
/// Each computes what conv2d_backward_data computes (labs/07-convolution/convolution.h): NCHW dy,
/// KCRS w, NCHW dx, every element of dx written. They handle filters of R * S = 9 taps (the 3 x 3
/// layers the lab's Performance.BackwardVsCudnn times; any padding, stride and dilation) and return
/// cudaErrorInvalidValue for others.
#pragma once

#include <cuda_runtime.h>

#include "convolution.h"

namespace candidates {

/// The tile shapes of dgrad_taps_inner (pixels x channels per block, results per thread, filters per step).
enum class DgradTile {
  k64x64_8x4_bk8,   ///< the reference's conv4_x tile: 128 threads
  k128x64_8x4_bk8,  ///< 256 threads, half the blocks
  k64x128_8x8_bk8,  ///< 128 threads of 8 x 8 results, half the blocks
  k64x64_8x4_bk16,  ///< 16 filters a step: half the steps and barriers
};

/// dgrad as the reference's implicit GEMM (M = N H W pixels, N = C channels, register-blocked,
/// double-buffered) with the reduction in another order: filters in chunks of BK, and for each
/// chunk the R S taps in turn, so that every tap of a step shares one (r, s): each pixel's source
/// position in dy and its bounds test are computed once a step (not once a tap), and a step's A
/// tile is dy of BK consecutive filters at one shift. The filters' B tile of a whole chunk
/// (BK filters x BN channels x R S taps) is one contiguous run of w per filter, read with 16-byte
/// loads (C % 4 == 0), a ninth of it per step, into the other of two shared buffers.
cudaError_t dgrad_taps_inner(ConvParams p, const float* dy, const float* w, float* dx, DgradTile tile);

}  // namespace candidates
