// The driver API's virtual memory management as NVIDIA's samples (cudaCompressibleMemory,
// vectorAddMMAP) and growable allocators use it: reserve an address range, create two physical
// chunks of the granularity, map them side by side, grant access, then use the range as one
// buffer (a kernel writes across the seam, cudaMemset and cudaMemcpy cross it), unmap, release,
// free; and the documented errors of misuse. What is printed holds on any CUDA 13 GPU with
// virtual memory management: sizes derive from the device's granularity, and every value is
// checked against the program's own arithmetic.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CU(what, call)                               \
    do {                                             \
        const char* name_ = nullptr;                 \
        cuGetErrorName((call), &name_);              \
        printf("%s: %s\n", what, name_ ? name_ : "?"); \
    } while (0)

__device__ __host__ int pattern(size_t i) { return static_cast<int>(i % 1000003) * 3 + 1; }

__global__ void fill(int* data, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        data[i] = pattern(i);
}

// Each element adds its right neighbour: threads at the seam read one chunk and write the other.
__global__ void add_next(const int* in, int* out, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i + 1 < n; i += size_t(gridDim.x) * blockDim.x)
        out[i] = in[i] + in[i + 1];
}

static const char* yes(bool b) { return b ? "yes" : "no"; }

int main() {
    cudaFree(0);  // the runtime makes the primary context current: the driver API uses it
    CUdevice dev = -1;
    CU("cuCtxGetDevice", cuCtxGetDevice(&dev));
    int vmm = 0, compression = 0;
    CU("cuDeviceGetAttribute(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)",
       cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
    CU("cuDeviceGetAttribute(GENERIC_COMPRESSION_SUPPORTED)",
       cuDeviceGetAttribute(&compression, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, dev));
    printf("virtual memory management supported: %s\n", yes(vmm == 1));
    const char* text = nullptr;
    cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &text);
    printf("cuGetErrorString(CUDA_ERROR_INVALID_VALUE): %s\n", text ? text : "?");

    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t g = 0, recommended = 0;
    CU("cuMemGetAllocationGranularity(minimum)", cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CU("cuMemGetAllocationGranularity(recommended)",
       cuMemGetAllocationGranularity(&recommended, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    printf("granularity a power of two of at least 64 KiB: %s; recommended a multiple of it: %s\n",
           yes(g >= 65536 && (g & (g - 1)) == 0), yes(recommended >= g && recommended % g == 0));
    CU("cuMemGetAllocationGranularity(NULL)", cuMemGetAllocationGranularity(nullptr, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));

    // Two chunks of one granule each, mapped side by side in a reservation of two granules.
    CUdeviceptr base = 0;
    CU("cuMemAddressReserve", cuMemAddressReserve(&base, 2 * g, 0, 0, 0));
    printf("reservation aligned to the granularity: %s\n", yes(base != 0 && base % g == 0));
    CUmemGenericAllocationHandle chunk[2] = {0, 0}, not_created = 0;
    CU("cuMemCreate(half a granule)", cuMemCreate(&not_created, g / 2, &prop, 0));
    CU("cuMemCreate(chunk 0)", cuMemCreate(&chunk[0], g, &prop, 0));
    CU("cuMemCreate(chunk 1)", cuMemCreate(&chunk[1], g, &prop, 0));
    CUmemAllocationProp got = {};
    CU("cuMemGetAllocationPropertiesFromHandle", cuMemGetAllocationPropertiesFromHandle(&got, chunk[1]));
    printf("chunk 1: pinned on this device, not compressible: %s\n",
           yes(got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
               got.location.id == dev && got.allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_NONE));

    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU("cuMemSetAccess(nothing mapped yet)", cuMemSetAccess(base, 2 * g, &access, 1));
    CU("cuMemMap(half a granule into the reservation)", cuMemMap(base + g / 2, g, 0, chunk[0], 0));
    CU("cuMemMap(chunk 0 at the start)", cuMemMap(base, g, 0, chunk[0], 0));
    CU("cuMemMap(chunk 1 over chunk 0)", cuMemMap(base, g, 0, chunk[1], 0));
    CU("cuMemMap(chunk 1 after chunk 0)", cuMemMap(base + g, g, 0, chunk[1], 0));
    // The mappings keep the memory: the handles can go now, as cudaCompressibleMemory does.
    CU("cuMemRelease(chunk 0)", cuMemRelease(chunk[0]));
    CU("cuMemRelease(chunk 1)", cuMemRelease(chunk[1]));

    CU("cuMemSetAccess(both chunks)", cuMemSetAccess(base, 2 * g, &access, 1));
    unsigned long long flags = 0;
    CU("cuMemGetAccess(chunk 1)", cuMemGetAccess(&flags, &prop.location, base + g + 4096));
    printf("chunk 1 read-write: %s\n", yes(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    CUmemGenericAllocationHandle retained = 0;
    CU("cuMemRetainAllocationHandle(inside chunk 1)",
       cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(base + g + 100)));
    printf("the handle cuMemCreate gave chunk 1: %s\n", yes(retained == chunk[1]));
    CU("cuMemRelease(the retained handle)", cuMemRelease(retained));

    // The range is one buffer: kernels, cudaMemset and cudaMemcpy cross the seam.
    const size_t n = 2 * g / sizeof(int), seam = g / sizeof(int);
    int* data = reinterpret_cast<int*>(base);
    fill<<<64, 256>>>(data, n);
    printf("fill across the seam: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    std::vector<int> host(n);
    printf("cudaMemcpy of both chunks: %s\n", cudaGetErrorName(cudaMemcpy(host.data(), data, 2 * g, cudaMemcpyDeviceToHost)));
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += host[i] != pattern(i);
    printf("values wrong: %zu of %zu\n", wrong, n);

    int* sums = nullptr;
    cudaMalloc(&sums, 2 * g);
    add_next<<<64, 256>>>(data, sums, n);
    printf("add_next reading across the seam: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    printf("cudaMemcpy device to device into both chunks: %s\n",
           cudaGetErrorName(cudaMemcpy(data, sums, 2 * g - sizeof(int), cudaMemcpyDeviceToDevice)));
    printf("cudaMemset of 4 ints across the seam: %s\n",
           cudaGetErrorName(cudaMemset(data + seam - 2, 0, 4 * sizeof(int))));
    cudaMemcpy(host.data(), data, 2 * g, cudaMemcpyDeviceToHost);
    wrong = 0;
    for (size_t i = 0; i + 1 < n; ++i) {
        const int want = i + 2 >= seam && i < seam + 2 ? 0 : pattern(i) + pattern(i + 1);
        wrong += host[i] != want;
    }
    printf("values wrong after add_next, the copy and the memset: %zu of %zu\n", wrong, n - 1);
    cudaFree(sums);

    CU("cuMemUnmap(part of chunk 0)", cuMemUnmap(base, g / 2));
    CU("cuMemUnmap(both chunks)", cuMemUnmap(base, 2 * g));
    CU("cuMemAddressFree(the wrong size)", cuMemAddressFree(base, g));
    CU("cuMemAddressFree", cuMemAddressFree(base, 2 * g));

    // A compressible allocation where the device has them, used as cudaCompressibleMemory does.
    bool compressible_ok = true;
    if (compression) {
        CUmemAllocationProp cprop = prop;
        cprop.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
        size_t cg = 0;
        CUdeviceptr cbase = 0;
        CUmemGenericAllocationHandle h = 0;
        compressible_ok = cuMemGetAllocationGranularity(&cg, &cprop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS &&
                          cuMemAddressReserve(&cbase, cg, 0, 0, 0) == CUDA_SUCCESS &&
                          cuMemCreate(&h, cg, &cprop, 0) == CUDA_SUCCESS &&
                          cuMemMap(cbase, cg, 0, h, 0) == CUDA_SUCCESS && cuMemRelease(h) == CUDA_SUCCESS &&
                          cuMemSetAccess(cbase, cg, &access, 1) == CUDA_SUCCESS;
        if (compressible_ok) {
            const size_t cn = cg / sizeof(int);
            std::vector<int> back(cn);
            fill<<<64, 256>>>(reinterpret_cast<int*>(cbase), cn);
            compressible_ok = cudaMemcpy(back.data(), reinterpret_cast<void*>(cbase), cg, cudaMemcpyDeviceToHost) == cudaSuccess;
            for (size_t i = 0; i < cn; ++i) compressible_ok = compressible_ok && back[i] == pattern(i);
            compressible_ok = compressible_ok && cuMemUnmap(cbase, cg) == CUDA_SUCCESS &&
                              cuMemAddressFree(cbase, cg) == CUDA_SUCCESS;
        }
    }
    printf("compressible memory (where the device has it) holds what a kernel wrote: %s\n", yes(compressible_ok));
    printf("last error: %s\n", cudaGetErrorName(cudaGetLastError()));
    return 0;
}
