// The driver API's virtual memory management, beyond what the conformance program
// (tests/conformance/virtual_memory.cu) prints: what a GPU does with memory that is reserved,
// mapped but not yet accessible, read-only, or released (a kernel faults, copies are refused), how
// physical memory outlives its handle while mapped and keeps its contents across mappings, and
// how cusim accounts for it and explains misuse. Assertions on cusim's own reports and
// accounting are guarded by `#ifdef CUSIM`.
#include <cuda.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "cusim_test.h"

using cusim_test::launch_result;
using cusim_test::LaunchResult;
using cusim_test::report_contains;
using cusim_test::StderrCapture;

#define EXPECT_CU(expected, expr) EXPECT_EQ(static_cast<int>(expected), static_cast<int>(expr)) << #expr
#define ASSERT_CU_OK(expr) ASSERT_EQ(static_cast<int>(CUDA_SUCCESS), static_cast<int>(expr)) << #expr

__global__ void write_index(int* data, size_t n) {
    const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
    if (i < n) data[i] = static_cast<int>(i);
}

// Device 0's pinned allocations, and read-write access for it.
class VirtualMemory : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_CUDA_OK(cudaFree(0));
        prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop_.location.id = 0;
        ASSERT_CU_OK(cuMemGetAllocationGranularity(&g_, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        access_.location = prop_.location;
        access_.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    // Device faults are sticky: every test ends with a fresh context.
    void TearDown() override { EXPECT_CUDA_OK(cudaDeviceReset()); }

    CUmemAllocationProp prop_ = {};
    CUmemAccessDesc access_ = {};
    size_t g_ = 0;
};

TEST_F(VirtualMemory, KernelFaultsOnMappedMemoryBeforeAccessIsGranted) {
    CUdeviceptr base = 0;
    CUmemGenericAllocationHandle h = 0;
    ASSERT_CU_OK(cuMemAddressReserve(&base, g_, 0, 0, 0));
    ASSERT_CU_OK(cuMemCreate(&h, g_, &prop_, 0));
    ASSERT_CU_OK(cuMemMap(base, g_, 0, h, 0));
    std::string report;
    LaunchResult r;
    {
        StderrCapture capture;
        write_index<<<1, 32>>>(reinterpret_cast<int*>(base), 32);
        r = launch_result();
        report = capture.take();
    }
    EXPECT_CUDA(cudaErrorIllegalAddress, r.sync);
    // The context is poisoned for the driver API too.
    CUmemGenericAllocationHandle other = 0;
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemCreate(&other, g_, &prop_, 0));
#ifdef CUSIM
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"write_index", "cudaErrorIllegalAddress"}));
#endif
}

#ifdef CUSIM
// Copies into an address that a GPU has no access to: cusim refuses them and says why (on a GPU
// the runtime's answer depends on the copy's kind and is not documented).
TEST_F(VirtualMemory, CopiesAreRefusedUntilAccessIsGrantedAndAfterUnmap) {
    CUdeviceptr base = 0;
    CUmemGenericAllocationHandle h = 0;
    ASSERT_CU_OK(cuMemAddressReserve(&base, g_, 0, 0, 0));
    void* p = reinterpret_cast<void*>(base);
    std::vector<int> host(256, 7);
    std::string reserved, mapped, unmapped, freed;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpy(p, host.data(), 1024, cudaMemcpyHostToDevice));
        reserved = capture.take();
    }
    ASSERT_CU_OK(cuMemCreate(&h, g_, &prop_, 0));
    ASSERT_CU_OK(cuMemMap(base, g_, 0, h, 0));
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemset(p, 0, 1024));
        mapped = capture.take();
    }
    ASSERT_CU_OK(cuMemSetAccess(base, g_, &access_, 1));
    EXPECT_CUDA_OK(cudaMemcpy(p, host.data(), 1024, cudaMemcpyHostToDevice));
    EXPECT_CUDA_OK(cudaMemset(p, 0, 1024));
    ASSERT_CU_OK(cuMemUnmap(base, g_));
    ASSERT_CU_OK(cuMemRelease(h));
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpy(host.data(), p, 1024, cudaMemcpyDeviceToHost));
        unmapped = capture.take();
    }
    ASSERT_CU_OK(cuMemAddressFree(base, g_));
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpy(host.data(), p, 1024, cudaMemcpyDefault));
        freed = capture.take();
    }
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(reserved, {"cudaMemcpy", "reserved by cuMemAddressReserve", "cuMemSetAccess"}));
    EXPECT_TRUE(report_contains(mapped, {"cudaMemset", "reserved by cuMemAddressReserve"}));
    EXPECT_TRUE(report_contains(unmapped, {"reserved by cuMemAddressReserve"}));
    EXPECT_TRUE(report_contains(freed, {"released by cuMemAddressFree"}));
}
#endif

// Physical memory lives while a mapping holds it, and keeps its contents when mapped elsewhere.
TEST_F(VirtualMemory, MemoryOutlivesItsHandleAndKeepsItsContents) {
    CUdeviceptr a = 0, b = 0;
    CUmemGenericAllocationHandle h = 0, retained = 0;
    ASSERT_CU_OK(cuMemAddressReserve(&a, g_, 0, 0, 0));
    ASSERT_CU_OK(cuMemAddressReserve(&b, 2 * g_, 0, 0, 0));
    ASSERT_CU_OK(cuMemCreate(&h, g_, &prop_, 0));
    ASSERT_CU_OK(cuMemMap(a, g_, 0, h, 0));
    ASSERT_CU_OK(cuMemRelease(h));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(b, g_, 0, h, 0));  // the handle is gone, the memory is not
    ASSERT_CU_OK(cuMemSetAccess(a, g_, &access_, 1));
    const size_t n = g_ / sizeof(int);
    write_index<<<static_cast<unsigned>((n + 255) / 256), 256>>>(reinterpret_cast<int*>(a), n);
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    ASSERT_CU_OK(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(a + 12345)));
    EXPECT_EQ(retained, h);
    ASSERT_CU_OK(cuMemUnmap(a, g_));
    // Mapped a second time, in the second granule of another reservation.
    ASSERT_CU_OK(cuMemMap(b + g_, g_, 0, retained, 0));
    ASSERT_CU_OK(cuMemRelease(retained));
    ASSERT_CU_OK(cuMemSetAccess(b + g_, g_, &access_, 1));
    std::vector<int> back(n);
    ASSERT_CUDA_OK(cudaMemcpy(back.data(), reinterpret_cast<void*>(b + g_), g_, cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += back[i] != static_cast<int>(i);
    EXPECT_EQ(wrong, 0u);
    ASSERT_CU_OK(cuMemUnmap(b + g_, g_));
    ASSERT_CU_OK(cuMemAddressFree(a, g_));
    ASSERT_CU_OK(cuMemAddressFree(b, 2 * g_));
}

TEST_F(VirtualMemory, ReadOnlyAccess) {
    CUdeviceptr base = 0;
    CUmemGenericAllocationHandle h = 0;
    ASSERT_CU_OK(cuMemAddressReserve(&base, g_, 0, 0, 0));
    ASSERT_CU_OK(cuMemCreate(&h, g_, &prop_, 0));
    ASSERT_CU_OK(cuMemMap(base, g_, 0, h, 0));
    ASSERT_CU_OK(cuMemSetAccess(base, g_, &access_, 1));
    std::vector<int> host(64, 5), back(64, 0);
    ASSERT_CUDA_OK(cudaMemcpy(reinterpret_cast<void*>(base), host.data(), 256, cudaMemcpyHostToDevice));
    CUmemAccessDesc read_only = access_;
    read_only.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
    ASSERT_CU_OK(cuMemSetAccess(base, g_, &read_only, 1));
    unsigned long long flags = 0;
    ASSERT_CU_OK(cuMemGetAccess(&flags, &prop_.location, base));
    EXPECT_EQ(flags, static_cast<unsigned long long>(CU_MEM_ACCESS_FLAGS_PROT_READ));
    EXPECT_CUDA_OK(cudaMemcpy(back.data(), reinterpret_cast<void*>(base), 256, cudaMemcpyDeviceToHost));
    EXPECT_EQ(back, host);
#ifdef CUSIM
    // A GPU's answer to a copy into read-only memory is not documented; cusim refuses it.
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpy(reinterpret_cast<void*>(base), host.data(), 256,
                                                      cudaMemcpyHostToDevice));
        report = capture.take();
    }
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"read-only", "CU_MEM_ACCESS_FLAGS_PROT_READ"}));
#endif
    ASSERT_CU_OK(cuMemUnmap(base, g_));
    ASSERT_CU_OK(cuMemRelease(h));
    ASSERT_CU_OK(cuMemAddressFree(base, g_));
}

#ifdef CUSIM
// cusim's own behaviour: cudaFree refuses mapped memory and says what releases it; physical
// memory counts against the device's (cudaMemGetInfo) from cuMemCreate until its last mapping and
// handle are gone; new memory holds all-ones bytes, as cudaMalloc's.
TEST_F(VirtualMemory, CusimAccountingAndMessages) {
    size_t free0 = 0, free1 = 0, free2 = 0, total = 0;
    ASSERT_CUDA_OK(cudaMemGetInfo(&free0, &total));
    CUdeviceptr base = 0;
    CUmemGenericAllocationHandle h = 0;
    ASSERT_CU_OK(cuMemAddressReserve(&base, g_, 0, 0, 0));
    ASSERT_CU_OK(cuMemCreate(&h, g_, &prop_, 0));
    ASSERT_CUDA_OK(cudaMemGetInfo(&free1, &total));
    EXPECT_EQ(free0 - free1, g_);
    ASSERT_CU_OK(cuMemMap(base, g_, 0, h, 0));
    ASSERT_CU_OK(cuMemRelease(h));
    ASSERT_CU_OK(cuMemSetAccess(base, g_, &access_, 1));
    unsigned fresh = 0;
    ASSERT_CUDA_OK(cudaMemcpy(&fresh, reinterpret_cast<void*>(base + 100), sizeof fresh, cudaMemcpyDeviceToHost));
    EXPECT_EQ(fresh, 0xFFFFFFFFu);
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaFree(reinterpret_cast<void*>(base)));
        report = capture.take();
    }
    // cuMemAddressFree with the mapping still there unmaps it; then the memory is free.
    ASSERT_CU_OK(cuMemAddressFree(base, g_));
    ASSERT_CUDA_OK(cudaMemGetInfo(&free2, &total));
    EXPECT_EQ(free2, free0);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(base, g_));
    // A reservation asked for at a released address gets it.
    CUdeviceptr again = 0;
    ASSERT_CU_OK(cuMemAddressReserve(&again, g_, 0, base, 0));
    EXPECT_EQ(again, base);
    ASSERT_CU_OK(cuMemAddressFree(again, g_));
    // Unsupported requests say so.
    CUmemAllocationProp host_prop = prop_;
    host_prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, g_, &host_prop, 0));
    CUmemAllocationProp other_device = prop_;
    other_device.location.id = 1;
    EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuMemCreate(&h, g_, &other_device, 0));
    const char* name = nullptr;
    EXPECT_CU(CUDA_SUCCESS, cuGetErrorName(CUDA_ERROR_NOT_SUPPORTED, &name));
    EXPECT_STREQ(name, "CUDA_ERROR_NOT_SUPPORTED");
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGetErrorName(static_cast<CUresult>(12345), &name));
    EXPECT_EQ(name, nullptr);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"cudaFree", "cuMemMap", "cuMemUnmap"}));
}
#endif
