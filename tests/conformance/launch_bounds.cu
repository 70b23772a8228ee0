// __launch_bounds__, __forceinline__, __restrict__ and __noinline__ qualifiers on kernels and
// device functions.
#include <cstdio>

__device__ __forceinline__ float twice(float x) { return 2.0f * x; }
__device__ __noinline__ float plus_one(float x) { return x + 1.0f; }

__global__ void __launch_bounds__(256, 2) axpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = plus_one(twice(a * x[i]) + y[i]);
}

int main() {
    const int n = 1000;
    float hx[n], hy[n];
    for (int i = 0; i < n; ++i) hx[i] = float(i), hy[i] = 1.0f;
    float *x, *y;
    cudaMalloc(&x, sizeof hx);
    cudaMalloc(&y, sizeof hy);
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    cudaMemcpy(y, hy, sizeof hy, cudaMemcpyHostToDevice);
    axpy<<<(n + 255) / 256, 256>>>(n, 0.5f, x, y);
    cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost);
    printf("y[0] %.0f y[999] %.0f, launch: %s\n", hy[0], hy[999], cudaGetErrorName(cudaGetLastError()));
    return hy[999] == 1001.0f ? 0 : 1;
}
