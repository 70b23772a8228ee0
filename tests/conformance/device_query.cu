// The start of every sample, after NVIDIA's deviceQuery: cudaGetDeviceCount, cudaSetDevice,
// cudaGetDeviceProperties and cudaDeviceGetAttribute, printing only what every GPU since
// compute capability 5.0 reports alike (never the name, memory size or SM count), and checking
// that the two query paths agree.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)
template <typename T>
void check(T result, char const* const func, const char* const file, int const line) {
    if (result) {
        fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \"%s\" \n", file, line, static_cast<unsigned int>(result),
                cudaGetErrorName(result), func);
        exit(EXIT_FAILURE);
    }
}

int main() {
    printf(" CUDA Device Query (Runtime API) version (CUDART static linking)\n\n");
    int deviceCount = 0;
    cudaError_t error_id = cudaGetDeviceCount(&deviceCount);
    if (error_id != cudaSuccess) {
        printf("cudaGetDeviceCount returned %d\n-> %s\n", (int)error_id, cudaGetErrorString(error_id));
        printf("Result = FAIL\n");
        exit(EXIT_FAILURE);
    }
    printf("At least one CUDA capable device: %s\n", deviceCount >= 1 ? "yes" : "no");
    const int dev = 0;
    checkCudaErrors(cudaSetDevice(dev));
    int current = -1;
    checkCudaErrors(cudaGetDevice(&current));
    printf("Current device: %d\n", current);

    int driverVersion = 0, runtimeVersion = 0;
    checkCudaErrors(cudaDriverGetVersion(&driverVersion));
    checkCudaErrors(cudaRuntimeGetVersion(&runtimeVersion));
    printf("Runtime version matches CUDART_VERSION: %s, driver version reported: %s\n",
           runtimeVersion == CUDART_VERSION ? "yes" : "no", driverVersion > 0 ? "yes" : "no");

    cudaDeviceProp deviceProp;
    checkCudaErrors(cudaGetDeviceProperties(&deviceProp, dev));
    printf("  Compute capability at least 5.0:               %s\n", deviceProp.major >= 5 ? "yes" : "no");
    printf("  Warp size:                                     %d\n", deviceProp.warpSize);
    printf("  Maximum number of threads per block:           %d\n", deviceProp.maxThreadsPerBlock);
    printf("  Max dimension size of a thread block (x,y,z): (%d, %d, %d)\n", deviceProp.maxThreadsDim[0],
           deviceProp.maxThreadsDim[1], deviceProp.maxThreadsDim[2]);
    printf("  Max dimension size of a grid size    (x,y,z): (%d, %d, %d)\n", deviceProp.maxGridSize[0],
           deviceProp.maxGridSize[1], deviceProp.maxGridSize[2]);
    printf("  Total amount of constant memory:               %zu bytes\n", deviceProp.totalConstMem);
    printf("  Total amount of shared memory per block:       %zu bytes\n", deviceProp.sharedMemPerBlock);
    printf("  Maximum memory pitch:                          %zu bytes\n", deviceProp.memPitch);
    printf("  Texture alignment:                             %zu bytes\n", deviceProp.textureAlignment);
    printf("  Device supports Unified Addressing (UVA):      %s\n", deviceProp.unifiedAddressing ? "Yes" : "No");
    printf("  Device supports Managed Memory:                %s\n", deviceProp.managedMemory ? "Yes" : "No");
    printf("  Concurrent kernel execution:                   %s\n", deviceProp.concurrentKernels ? "Yes" : "No");

    // The attribute API reports the same values as the properties.
    struct {
        cudaDeviceAttr attr;
        int prop;
        const char* name;
    } pairs[] = {
        {cudaDevAttrWarpSize, deviceProp.warpSize, "warp size"},
        {cudaDevAttrMaxThreadsPerBlock, deviceProp.maxThreadsPerBlock, "threads per block"},
        {cudaDevAttrMaxBlockDimZ, deviceProp.maxThreadsDim[2], "block z"},
        {cudaDevAttrMaxGridDimX, deviceProp.maxGridSize[0], "grid x"},
        {cudaDevAttrMaxSharedMemoryPerBlock, (int)deviceProp.sharedMemPerBlock, "shared memory per block"},
        {cudaDevAttrMultiProcessorCount, deviceProp.multiProcessorCount, "multiprocessors"},
        {cudaDevAttrComputeCapabilityMajor, deviceProp.major, "major"},
        {cudaDevAttrComputeCapabilityMinor, deviceProp.minor, "minor"},
    };
    int mismatches = 0;
    for (const auto& p : pairs) {
        int value = -1;
        checkCudaErrors(cudaDeviceGetAttribute(&value, p.attr, dev));
        if (value != p.prop) {
            printf("  cudaDeviceGetAttribute(%s) = %d, cudaDeviceProp says %d\n", p.name, value, p.prop);
            ++mismatches;
        }
    }
    printf("cudaDeviceGetAttribute agrees with cudaGetDeviceProperties: %s\n", mismatches == 0 ? "yes" : "no");
    // An invalid device is an error, not a crash.
    cudaDeviceProp none;
    cudaError_t bad = cudaGetDeviceProperties(&none, deviceCount);
    printf("cudaGetDeviceProperties(device %s): %s\n", "count", cudaGetErrorName(bad));
    const bool ok = mismatches == 0 && deviceCount >= 1 && current == dev && bad == cudaErrorInvalidDevice;
    printf("Result = %s\n", ok ? "PASS" : "FAIL");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
