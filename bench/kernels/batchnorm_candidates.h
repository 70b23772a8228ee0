/// @file
/// @brief Candidate kernels for lab 07's batchnorm_forward_training, timed by bench_kernels beside
/// the reference (see batchnorm_candidates.cu).
///
/// Each computes what batchnorm_forward_training computes (labs/07-convolution/pooling_batchnorm.h):
/// per channel the batch's mean and biased variance, y = (x - mean) rstd gamma + beta, save_mean,
/// save_rstd and the running statistics (the unbiased variance), with the same workspace and no
/// atomics (the same bits on every run). The statistics differ from the reference's in the last
/// bits (another order of adding); bench_kernels holds them to the check's allowances.
/// Limits beyond the contract's: C <= 65535 and M / 4 (HW % 4 == 0) or M below 2^31; else
/// cudaErrorInvalidValue.
#pragma once

#include <cuda_runtime.h>

namespace candidates {

/// The arguments of batchnorm_forward_training, in one place.
struct BatchNormTraining {
  int N, C, HW;
  const float *x, *gamma, *beta;
  float momentum, eps;
  float *y, *save_mean, *save_rstd, *running_mean, *running_var, *workspace;
};

/// The reference's passes less its third kernel: the statistics pass on a (splits, C) grid of one
/// wave (splits = the blocks the GPU holds at once / C, at most kBatchNormSplits), then the
/// normalizing pass, whose blocks each combine their channel's partials themselves (the same code
/// and order in every block: the same bits); the channel's first block writes the saved and
/// running statistics. Welford and Chan as the reference.
cudaError_t batchnorm_training_two_kernels(const BatchNormTraining& a);

/// How the cooperative candidate takes a channel's statistics.
enum class BatchNormStats {
  welford,      ///< Welford per batch of loads, Chan's combination (as the reference)
  shifted_sums  ///< sum and sum of squares of x - K, K = the channel's first value (no division)
};

/// One cooperative kernel on the blocks the GPU holds at once: the channel-major sequence of the
/// tensor's 16-byte chunks is cut into one contiguous slice per block (equal work, each slice
/// within one or a few channels); a block stores a partial per channel its slice meets, waits at
/// grid.sync(), combines its channels' partials in a fixed order and normalizes its slice back to
/// front, so that it first reads what it read last (still in L2).
cudaError_t batchnorm_training_cooperative(const BatchNormTraining& a, BatchNormStats stats);

/// A block of 768 threads per channel (two blocks fit on an SM: 256 channels on 132 SMs all at
/// once): the channel's statistics by a block reduction (no workspace, no second kernel), then
/// the channel normalized back to front.
cudaError_t batchnorm_training_block_per_channel(const BatchNormTraining& a);

}  // namespace candidates
