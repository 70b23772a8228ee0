// Dynamic shared memory sized at launch, including above 48 KiB after cudaFuncSetAttribute.
#include <cstdio>

__global__ void reverse(int* d, int n) {
    extern __shared__ int s[];
    const int t = threadIdx.x;
    for (int i = t; i < n; i += blockDim.x) s[i] = d[i];
    __syncthreads();
    for (int i = t; i < n; i += blockDim.x) d[i] = s[n - 1 - i];
}

int main() {
    const int small = 100, big = 16384;  // 400 bytes and 64 KiB
    int h[big];
    int* d;
    cudaMalloc(&d, sizeof h);
    for (int i = 0; i < big; ++i) h[i] = i;
    cudaMemcpy(d, h, small * sizeof(int), cudaMemcpyHostToDevice);
    reverse<<<1, 64, small * sizeof(int)>>>(d, small);
    cudaMemcpy(h, d, small * sizeof(int), cudaMemcpyDeviceToHost);
    printf("small: %d %d ... %d (%s)\n", h[0], h[1], h[small - 1], cudaGetErrorName(cudaGetLastError()));
    for (int i = 0; i < big; ++i) h[i] = i;
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    reverse<<<1, 256, big * sizeof(int)>>>(d, big);
    printf("64 KiB without opt-in: %s\n", cudaGetErrorName(cudaGetLastError()));
    cudaFuncSetAttribute(reverse, cudaFuncAttributeMaxDynamicSharedMemorySize, big * sizeof(int));
    reverse<<<1, 256, big * sizeof(int)>>>(d, big);
    printf("64 KiB with opt-in: %s\n", cudaGetErrorName(cudaGetLastError()));
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("big: %d %d ... %d\n", h[0], h[1], h[big - 1]);
    cudaFree(d);
    return h[0] == big - 1 ? 0 : 1;
}
