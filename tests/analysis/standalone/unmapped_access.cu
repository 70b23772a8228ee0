// A standalone CUDA program whose kernel writes into the part of a virtual address reservation
// where no memory is mapped (the driver API's cuMemAddressReserve, cuMemMap, cuMemSetAccess):
// `workbook sanitize` must report the write and say what the address is.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>

__global__ void touch(int* p) { p[threadIdx.x] = 1; }

int main() {
    cudaFree(0);
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t g = 0;
    cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    CUdeviceptr base = 0;
    CUmemGenericAllocationHandle h = 0;
    cuMemAddressReserve(&base, 2 * g, 0, 0, 0);
    cuMemCreate(&h, g, &prop, 0);
    cuMemMap(base, g, 0, h, 0);
    cuMemRelease(h);
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cuMemSetAccess(base, g, &access, 1);
    touch<<<1, 32>>>(reinterpret_cast<int*>(base));  // the mapped half: fine
    std::printf("mapped: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    touch<<<1, 32>>>(reinterpret_cast<int*>(base + g));  // the other half: nothing mapped
    std::printf("reserved only: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
