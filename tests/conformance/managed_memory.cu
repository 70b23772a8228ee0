// Unified memory: cudaMallocManaged and __managed__ variables, read and written by host and device.
#include <cstdio>

__device__ __managed__ int managed_total = 0;

__global__ void histogram(const int* values, int* bins, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&bins[values[i] % 4], 1);
        atomicAdd(&managed_total, values[i]);
    }
}

int main() {
    const int n = 4096;
    int *values, *bins;
    cudaMallocManaged(&values, n * sizeof(int));
    cudaMallocManaged(&bins, 4 * sizeof(int));
    for (int i = 0; i < n; ++i) values[i] = i % 10;
    for (int b = 0; b < 4; ++b) bins[b] = 0;
    histogram<<<n / 256, 256>>>(values, bins, n);
    cudaDeviceSynchronize();
    printf("bins %d %d %d %d, total %d\n", bins[0], bins[1], bins[2], bins[3], managed_total);
    const bool ok = bins[0] + bins[1] + bins[2] + bins[3] == n;
    cudaFree(values);
    cudaFree(bins);
    return ok ? 0 : 1;
}
