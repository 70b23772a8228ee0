// A program that marks its profiled region with cuda_profiler_api.h.
#include <cstdio>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

__global__ void fill(int* v, int value, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = value + i;
}

int main() {
    const int n = 1000;
    int* d;
    cudaMalloc(&d, n * sizeof(int));
    printf("cudaProfilerStart: %s\n", cudaGetErrorString(cudaProfilerStart()));
    fill<<<(n + 127) / 128, 128>>>(d, 7, n);
    printf("cudaProfilerStop: %s\n", cudaGetErrorString(cudaProfilerStop()));
    int h[n];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    long long sum = 0;
    for (int i = 0; i < n; ++i) sum += h[i];
    printf("sum %lld\n", sum);
    cudaFree(d);
    return sum == 7 * 1000 + 999 * 1000 / 2 ? 0 : 1;
}
