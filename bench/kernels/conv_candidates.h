/// @file
/// @brief Candidate kernels for lab 07's conv2d_backward_data (dgrad) and conv2d_backward_filter
/// (wgrad), timed by bench_kernels beside the reference and cuDNN (see conv_candidates.cu).
///
/// Each computes what its reference computes (labs/07-convolution/convolution.h), in the same
/// layouts (NCHW x and dx, KCRS w and dw, NKPQ dy), every element of the output written.
#pragma once

#include <cuda_runtime.h>

#include "convolution.h"

namespace candidates {

/// The tile shapes of dgrad_taps_inner (pixels x channels per block, results per thread, filters
/// per step).
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
/// Handles filters of R * S = 9 taps (the 3 x 3 layers the lab's Performance.BackwardVsCudnn times;
/// any padding, stride and dilation); cudaErrorInvalidValue for others.
cudaError_t dgrad_taps_inner(ConvParams p, const float* dy, const float* w, float* dx, DgradTile tile);

/// The tile shapes of wgrad_split (filters x taps per block, results per thread).
enum class WgradTile {
  k128x64_8x8_bk16,  ///< the reference's tile where K > 64, 16 pixels a step
  k64x64_8x4_bk16,   ///< the reference's tile where K <= 64, 16 pixels a step
};

/// wgrad as the reference's split implicit GEMM (M = K, N = C R S, the N P Q sum split over blocks
/// into at most kWgradSplits slices of @p workspace, added in a fixed order by a second kernel) with
/// 16 pixels a step instead of 8 and the number of splits chosen for whole waves of blocks: the
/// most that w waves hold, for the fewest w whose blocks fill at least 95% of them, on the block
/// slots the compiled kernel has (cudaOccupancyMaxActiveBlocksPerMultiprocessor); each split at
/// least 256 pixels long.
/// Any shape.
cudaError_t wgrad_split(ConvParams p, const float* x, const float* dy, float* dw, float* workspace, WgradTile tile);

}  // namespace candidates
