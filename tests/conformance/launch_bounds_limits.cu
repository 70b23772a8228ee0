// __launch_bounds__(N) caps the block size: cudaFuncGetAttributes reports N as the kernel's
// maxThreadsPerBlock, and a launch with more threads than N does not run
// (CUDA 13: cudaErrorInvalidValue, "invalid argument", on an H100 on 2026-11-28; older toolkits:
// cudaErrorLaunchOutOfResources; not sticky).
#include <cstdio>

__global__ void __launch_bounds__(256, 2) bounded(int* out) { out[blockIdx.x * blockDim.x + threadIdx.x] = 1; }

__global__ void __launch_bounds__(64) small_blocks(int* out, int n);  // bound on the declaration
__global__ void __launch_bounds__(64) small_blocks(int* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2;
}

__global__ void unbounded(int* out) { out[threadIdx.x] = 3; }

int main() {
    cudaFuncAttributes a;
    cudaFuncGetAttributes(&a, bounded);
    printf("bounded: maxThreadsPerBlock %d\n", a.maxThreadsPerBlock);
    cudaFuncGetAttributes(&a, small_blocks);
    printf("small_blocks: maxThreadsPerBlock %d\n", a.maxThreadsPerBlock);
    cudaFuncGetAttributes(&a, unbounded);
    printf("unbounded: maxThreadsPerBlock %d\n", a.maxThreadsPerBlock);

    int* out;
    cudaMalloc(&out, 1024 * sizeof(int));
    bounded<<<2, 256>>>(out);
    printf("bounded<<<2, 256>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    cudaMemset(out, 0, 1024 * sizeof(int));
    bounded<<<1, 512>>>(out);
    cudaError_t err = cudaGetLastError();
    printf("bounded<<<1, 512>>>: %s (%s)\n", cudaGetErrorName(err), cudaGetErrorString(err));
    int h = -1;
    cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost);
    printf("it did not run: %s; then: %s\n", h == 0 ? "yes" : "no", cudaGetErrorName(cudaGetLastError()));
    small_blocks<<<1, 128>>>(out, 128);
    printf("small_blocks<<<1, 128>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    small_blocks<<<2, 64>>>(out, 128);
    printf("small_blocks<<<2, 64>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    unbounded<<<1, 1024>>>(out);
    printf("unbounded<<<1, 1024>>>: %s\n", cudaGetErrorName(cudaGetLastError()));
    cudaDeviceSynchronize();
    return 0;
}
