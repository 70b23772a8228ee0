// The error code of every kind of invalid launch, from cudaGetLastError() right after it (each is
// a launch error, not sticky: the next launch works). These are CUDA 13's codes, which differ from
// older toolkits' (a grid of 0 blocks was cudaErrorInvalidConfiguration there). Each case says
// whether a GPU has answered it; the run of this program on a GPU (the cuda build's
// conformance.launch_errors) settles the rest, and this file and launch_errors.expected then
// record what it printed.
//
//   case                                      CUDA 13 on a GPU
//   block of 0 threads (x, then y)            not yet answered (cusim: cudaErrorInvalidValue)
//   block of 1025 threads                     not yet answered (cusim: cudaErrorInvalidConfiguration)
//   block (1, 1, 65): over (1024, 1024, 64)   not yet answered (cusim: cudaErrorInvalidConfiguration)
//   block (2048, 1, 1)                        not yet answered (cusim: cudaErrorInvalidConfiguration)
//   grid of 0 blocks (x)                      cudaErrorInvalidValue (H200, CUDA 13.0, 2026-11-27)
//   grid (1, 0, 1)                            not yet answered (cusim: cudaErrorInvalidValue)
//   gridDim.x 2^31                            not yet answered (cusim: cudaErrorInvalidValue)
//   gridDim.y 65536                           cudaErrorInvalidValue (H200 and H100, CUDA 13.0, 2026-11)
//   gridDim.z 65536                           not yet answered (cusim: cudaErrorInvalidValue)
//   dynamic shared memory 64 KiB, no opt-in   not yet answered (cusim: cudaErrorInvalidValue)
//   dynamic shared memory over the opt-in     not yet answered (cusim: cudaErrorInvalidValue)
//   more threads than __launch_bounds__(64)   not yet answered (cusim: cudaErrorLaunchOutOfResources)
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
