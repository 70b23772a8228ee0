// CUDA's error semantics: configuration errors from cudaGetLastError (not sticky), the error of
// an invalid memcpy, cudaPeekAtLastError versus cudaGetLastError, and error names and strings.
#include <cstdio>

__global__ void noop() {}

int main() {
    noop<<<1, 2048>>>();  // more threads per block than allowed: cudaErrorInvalidValue on CUDA 13 (H100, 2026-11-28)
    printf("peek: %s\n", cudaGetErrorName(cudaPeekAtLastError()));
    printf("get: %s\n", cudaGetErrorName(cudaGetLastError()));
    printf("after get: %s\n", cudaGetErrorName(cudaGetLastError()));
    noop<<<dim3(1, 70000), 1>>>();  // gridDim.y over 65535: cudaErrorInvalidValue on CUDA 13 (H200, 2026-11-27)
    printf("grid y too large: %s\n", cudaGetErrorName(cudaGetLastError()));
    noop<<<1, 0>>>();  // cudaErrorInvalidValue on CUDA 13 (H100, 2026-11-28): see launch_errors.cu
    printf("zero threads: %s\n", cudaGetErrorName(cudaGetLastError()));
    int* d;
    cudaMalloc(&d, 16);
    const cudaError_t first = cudaFree(d);
    const cudaError_t second = cudaFree(d);
    printf("free twice: %s, %s\n", cudaGetErrorName(first), cudaGetErrorName(second));
    printf("string: %s\n", cudaGetErrorString(cudaErrorInvalidConfiguration));
    noop<<<1, 32>>>();
    printf("good launch: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
