// No #include at all: nvcc includes cuda_runtime.h (and with it printf) in every .cu file.
__global__ void square(int* v) { v[threadIdx.x] = static_cast<int>(threadIdx.x * threadIdx.x); }

int main() {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return 1;
    printf("warpSize %d, maxThreadsPerBlock %d, major >= 7: %s\n", prop.warpSize, prop.maxThreadsPerBlock,
           prop.major >= 7 ? "yes" : "no");
    int* d = nullptr;
    if (cudaMalloc(&d, 8 * sizeof(int)) != cudaSuccess) return 1;
    square<<<1, 8>>>(d);
    int h[8];
    if (cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
    for (int i = 0; i < 8; ++i) printf("%d%s", h[i], i < 7 ? " " : "\n");
    cudaFree(d);
    return h[7] == 49 ? 0 : 1;
}
