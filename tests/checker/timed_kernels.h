// Functions the tests of wb::check::timed_and_verified time (timed_kernels.cu).
#pragma once

#include <cuda_runtime.h>

/// out[i] = in[i] + 1 for i < n, on every call.
cudaError_t add_one(const int* in, int* out, int n);
/// The same, but a call with the arguments of the previous call returns at once (a replayed result).
cudaError_t add_one_replaying(const int* in, int* out, int n);
