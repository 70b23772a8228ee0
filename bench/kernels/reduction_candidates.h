/// @file
/// @brief Candidate kernels for lab 03's reduce_sum, timed by bench_kernels beside the reference.
///
/// Each candidate computes the same sum as reduce_sum (d_out receives the sum of d_in[0..n)),
/// differing in one thing from the reference, so that a figure says what that one thing costs:
/// the launch that clears d_out, the grid's shape, the loads in flight, atomics against a second
/// pass. read_ceiling is not a reduction: it reads every byte once and does nothing else (its d_out
/// is meaningless), the most any reduction can reach.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace candidates {

/// The reference's kernel (4 float4 loads per thread per iteration, one atomic per block) with
/// d_out cleared by cudaMemsetAsync instead of a one-thread kernel.
cudaError_t reduce_memset_init(const float* d_in, int n, float* d_out);
/// The reference's kernel with @p blocks_per_sm blocks of @p threads threads per multiprocessor.
cudaError_t reduce_grid(const float* d_in, int n, float* d_out, int blocks_per_sm, int threads);
/// One float4 load per thread per iteration (the reference issues four).
cudaError_t reduce_one_load(const float* d_in, int n, float* d_out);
/// Eight float4 loads per thread per iteration.
cudaError_t reduce_eight_loads(const float* d_in, int n, float* d_out);
/// No atomics: each block writes its partial sum to @p d_partials (blocks floats, at least
/// partial_floats()), and a second one-block launch adds them in order (deterministic).
cudaError_t reduce_two_pass(const float* d_in, int n, float* d_out, float* d_partials);
/// Floats of d_partials that reduce_two_pass needs.
std::size_t partial_floats();
/// Reads all n floats with the reference's loads and keeps only a bit of them: the read ceiling.
cudaError_t read_ceiling(const float* d_in, int n, float* d_out);

}  // namespace candidates
