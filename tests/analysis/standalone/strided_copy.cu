// A correct standalone CUDA program with one coalesced and one strided copy: `workbook sanitize`
// finds nothing and `workbook profile` shows 4 and 32 sectors per request.
#include <cuda_runtime.h>
#include <cstdio>

__global__ void copy_coalesced(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

__global__ void copy_strided(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = (i % 32) * 32 + i / 32;  // lane k of a warp touches element 32*k
    if (i < n) out[j] = in[j];
}

int main() {
    const int n = 1 << 12;
    float *in = nullptr, *out = nullptr;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    cudaMemset(in, 0, n * sizeof(float));
    copy_coalesced<<<n / 256, 256>>>(in, out, n);
    copy_strided<<<n / 256, 256>>>(in, out, n);
    std::printf("copies: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    cudaFree(in);
    cudaFree(out);
    return 0;
}
