// NVIDIA-samples style: the error macro exists only where the runtime's headers were seen
// (helper_cuda.h tests __DRIVER_TYPES_H__), and checks every call.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#ifdef __DRIVER_TYPES_H__
#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)
template <typename T>
void check(T result, char const* const func, const char* const file, int const line) {
    if (result) {
        fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\" \n", file, line, static_cast<unsigned int>(result),
                cudaGetErrorName(result), func);
        exit(EXIT_FAILURE);
    }
}
#endif

__global__ void vectorAdd(const float* A, const float* B, float* C, int numElements) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < numElements) C[i] = A[i] + B[i] + 0.0f;
}

int main() {
    const int n = 50000;
    size_t size = n * sizeof(float);
    float *h_A = (float*)malloc(size), *h_B = (float*)malloc(size), *h_C = (float*)malloc(size);
    for (int i = 0; i < n; ++i) {
        h_A[i] = float(i % 1000);
        h_B[i] = float(2 * (i % 7));
    }
    float *d_A = NULL, *d_B = NULL, *d_C = NULL;
    checkCudaErrors(cudaMalloc((void**)&d_A, size));
    checkCudaErrors(cudaMalloc((void**)&d_B, size));
    checkCudaErrors(cudaMalloc((void**)&d_C, size));
    checkCudaErrors(cudaMemcpy(d_A, h_A, size, cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(d_B, h_B, size, cudaMemcpyHostToDevice));
    int threadsPerBlock = 256;
    int blocksPerGrid = (n + threadsPerBlock - 1) / threadsPerBlock;
    printf("CUDA kernel launch with %d blocks of %d threads\n", blocksPerGrid, threadsPerBlock);
    vectorAdd<<<blocksPerGrid, threadsPerBlock>>>(d_A, d_B, d_C, n);
    checkCudaErrors(cudaGetLastError());
    checkCudaErrors(cudaMemcpy(h_C, d_C, size, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
        if (h_C[i] != h_A[i] + h_B[i]) {
            fprintf(stderr, "Result verification failed at element %d!\n", i);
            return 1;
        }
    }
    printf("Test PASSED\n");
    checkCudaErrors(cudaFree(d_A));
    checkCudaErrors(cudaFree(d_B));
    checkCudaErrors(cudaFree(d_C));
    free(h_A);
    free(h_B);
    free(h_C);
    printf("Done\n");
    return 0;
}
