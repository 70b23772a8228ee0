// The error code of every kind of invalid launch, from cudaGetLastError() right after it (each is
// a launch error, not sticky: the next launch works). These are CUDA 13's codes, which differ from
// older toolkits' (a block over 1024 threads was cudaErrorInvalidConfiguration there, a block over
// the kernel's __launch_bounds__ cudaErrorLaunchOutOfResources): on CUDA 13 every invalid
// configuration is cudaErrorInvalidValue. Every case was answered on a GPU: an H100 with CUDA 13.0
// and driver 580.159.04 on 2026-11-28 printed launch_errors.expected (the grid cases also on an
// H200 on 2026-11-27).
//
//   case                                      CUDA 13 on a GPU
//   block of 0 threads (x, then y)            cudaErrorInvalidValue
//   block of 1025 threads                     cudaErrorInvalidValue
//   block (1, 1, 65): over (1024, 1024, 64)   cudaErrorInvalidValue
//   block (2048, 1, 1)                        cudaErrorInvalidValue
//   grid of 0 blocks (x)                      cudaErrorInvalidValue
//   grid (1, 0, 1)                            cudaErrorInvalidValue
//   gridDim.x 2^31                            cudaErrorInvalidValue
//   gridDim.y 65536                           cudaErrorInvalidValue
//   gridDim.z 65536                           cudaErrorInvalidValue
//   dynamic shared memory 64 KiB, no opt-in   cudaErrorInvalidValue
//   dynamic shared memory over the opt-in     cudaErrorInvalidValue
//   more threads than __launch_bounds__(64)   cudaErrorInvalidValue
#include <cstdio>

__global__ void noop() {}

__global__ void uses_shared() {
    extern __shared__ int s[];
    s[threadIdx.x] = 0;
}

__global__ void __launch_bounds__(64) bounded() {}

static void report(const char* what) {
    const cudaError_t e = cudaGetLastError();
    printf("%-44s %s\n", what, cudaGetErrorName(e));
}

int main() {
    noop<<<1, 0>>>();
    report("block of 0 threads:");
    noop<<<1, dim3(32, 0, 1)>>>();
    report("block (32, 0, 1):");
    noop<<<1, 1025>>>();
    report("block of 1025 threads:");
    noop<<<1, dim3(1, 1, 65)>>>();
    report("block (1, 1, 65):");
    noop<<<1, dim3(2048, 1, 1)>>>();
    report("block (2048, 1, 1):");
    noop<<<0, 32>>>();
    report("grid of 0 blocks:");
    noop<<<dim3(1, 0, 1), 32>>>();
    report("grid (1, 0, 1):");
    noop<<<dim3(2147483648u, 1, 1), 32>>>();
    report("gridDim.x 2^31:");
    noop<<<dim3(1, 65536, 1), 32>>>();
    report("gridDim.y 65536:");
    noop<<<dim3(1, 1, 65536), 32>>>();
    report("gridDim.z 65536:");
    uses_shared<<<1, 32, 64 * 1024>>>();
    report("64 KiB dynamic shared memory, no opt-in:");
    int optin = 0;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
    cudaFuncSetAttribute(uses_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
    uses_shared<<<1, 32, optin + 1024>>>();
    report("opt-in limit + 1 KiB dynamic shared memory:");
    bounded<<<1, 128>>>();
    report("128 threads, __launch_bounds__(64):");
    noop<<<1, 32>>>();
    report("then a valid launch:");
    printf("synchronize: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
