// A standalone CUDA program with an off-by-one store: `workbook sanitize` must report it.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

__global__ void scale(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) x[i] *= 2.0f;  // off by one: touches x[n]
}

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 100;
    float* d = nullptr;
    cudaMalloc(&d, n * sizeof(float));
    cudaMemset(d, 0, n * sizeof(float));
    scale<<<(n + 127) / 128, 128>>>(d, n);
    std::printf("scale: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    cudaFree(d);
    return 0;
}
