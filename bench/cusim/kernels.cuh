// The benchmark kernels, compiled twice (plain and with analysis instrumentation) into the
// namespace BENCH_NS, so one run can time both side by side.
#pragma once
#include <cuda_runtime.h>

namespace BENCH_NS {

constexpr int kBlock = 256;

// The classic shared-memory tree reduction of the CUDA samples: tree levels down to 64 partial
// sums (3 block barriers in all), then the first warp finishes with shuffles.
__global__ void reduce_smem(const float* in, float* out, int n) {
    __shared__ float s[kBlock];
    const unsigned t = threadIdx.x;
    const unsigned i = blockIdx.x * kBlock + t;
    s[t] = i < static_cast<unsigned>(n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = kBlock / 2; stride > 32; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t < 32) {
        float v = s[t] + s[t + 32];
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
        if (t == 0) out[blockIdx.x] = v;
    }
}

// Barrier-free: one fiber runs a block's threads back to back.
__global__ void saxpy(int n, float a, const float* x, float* y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

cudaError_t run_reduce(const float* in, float* out, int n) {
    reduce_smem<<<(n + kBlock - 1) / kBlock, kBlock>>>(in, out, n);
    return cudaGetLastError();
}

cudaError_t run_saxpy(int n, float a, const float* x, float* y) {
    saxpy<<<(n + kBlock - 1) / kBlock, kBlock>>>(n, a, x, y);
    return cudaGetLastError();
}

}  // namespace BENCH_NS
