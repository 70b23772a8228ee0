// No CUDA #include: nvcc includes cuda_runtime.h in every .cu file, so cudaDeviceProp, cudaMalloc
// and the launch need nothing. printf does: nvcc's implicit headers do not declare it, so the
// program includes <cstdio> itself (without it nvcc refuses the program, and so does cusim:
// refused_nvcc_implicit_printf.cu).
#include <cstdio>

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
