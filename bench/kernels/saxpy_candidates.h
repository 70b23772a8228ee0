/// @file
/// @brief Candidate kernels for lab 01's saxpy, timed by bench_kernels beside the reference and a
/// device-to-device copy (see saxpy_candidates.cu).
///
/// Each computes y[i] = a * x[i] + y[i] for 0 <= i < n, as saxpy() does (labs/01-saxpy/saxpy.h).
/// The lab's contract is one thread per element: the candidates that keep it differ from the
/// reference in their block size only; the one that breaks it (four elements per thread) shows
/// how much of the copy's bandwidth the contract itself gives up on a GPU.
#pragma once

#include <cuda_runtime.h>

namespace candidates {

/// One thread per element, blocks of @p block_size threads (a multiple of 32, at most 1024).
cudaError_t saxpy_one_per_thread(int n, float a, const float* x, float* y, int block_size);

/// Four consecutive elements per thread, as one float4 load of x and of y and one float4 store
/// (the scalar tail for n % 4 != 0); x and y 16-byte aligned, blocks of 256 threads.
cudaError_t saxpy_float4(int n, float a, const float* x, float* y);

}  // namespace candidates
