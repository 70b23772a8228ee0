// Functions the tests of wb::check::timed_and_verified time (timed_kernels.cu).
#pragma once

#include <cuda_runtime.h>

/// out[i] = in[i] + 1 for i < n, on every call.
cudaError_t add_one(const int* in, int* out, int n);
/// The same, but a call with the arguments of the previous call returns at once (a replayed result).
cudaError_t add_one_replaying(const int* in, int* out, int n);
/// The same, but the work is done only on the 1st and the 7th call (the validation call and the last
/// timed run of 1 warm-up and 5 timed runs): the other calls return at once.
cudaError_t add_one_skipping(const int* in, int* out, int n);
/// out[i] = in[i] + 1 after @p iterations of arithmetic per element: work that takes long enough on
/// sim for a timing to be compared with a clock.
cudaError_t busy_add_one(const int* in, int* out, int n, int iterations);
