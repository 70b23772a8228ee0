// CUDA arrays, texture objects and surface objects: the errors and faults a program meets (what
// conformance texture_objects and surface_objects print covers the values). cusim's report texts,
// and the faults whose error a GPU may name differently, are checked on sim only.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "cusim_test.h"

using cusim_test::LaunchResult;
using cusim_test::launch_result;
using cusim_test::report_contains;
using cusim_test::StderrCapture;


TEST(Arrays, CopiesAreCheckedAgainstTheArraysExtent) {
    cudaChannelFormatDesc f32 = cudaCreateChannelDesc<float>();
    cudaArray_t a = nullptr;
    ASSERT_CUDA_OK(cudaMallocArray(&a, &f32, 4, 2));
    float host[3][4] = {};
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpy2DToArray(a, 0, 0, host, sizeof host[0], sizeof host[0], 3,
                                                               cudaMemcpyHostToDevice));
        report = capture.take();
    }
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGetLastError());
#ifdef CUSIM
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"cudaMemcpy2DToArray", "3 rows", "runs past the array", "2 rows"}));
#endif
    ASSERT_CUDA_OK(cudaFreeArray(a));
}

TEST(Arrays, InfoAndChannelDescribeTheAllocation) {
    cudaChannelFormatDesc u8x4 = cudaCreateChannelDesc<uchar4>();
    EXPECT_EQ(8, u8x4.x);
    EXPECT_EQ(8, u8x4.w);
    EXPECT_EQ(cudaChannelFormatKindUnsigned, u8x4.f);
    cudaArray_t a = nullptr;
    ASSERT_CUDA_OK(cudaMalloc3DArray(&a, &u8x4, make_cudaExtent(5, 3, 2), cudaArrayLayered));
    cudaChannelFormatDesc desc = {};
    cudaExtent extent = {};
    unsigned int flags = 0;
    ASSERT_CUDA_OK(cudaArrayGetInfo(&desc, &extent, &flags, a));
    EXPECT_EQ(5u, extent.width);
    EXPECT_EQ(3u, extent.height);
    EXPECT_EQ(2u, extent.depth);
    EXPECT_EQ(unsigned(cudaArrayLayered), flags);
    EXPECT_EQ(cudaChannelFormatKindUnsigned, desc.f);
    ASSERT_CUDA_OK(cudaGetChannelDesc(&desc, a));
    EXPECT_EQ(8, desc.y);
    ASSERT_CUDA_OK(cudaFreeArray(a));
}

#ifdef CUSIM
namespace {

cudaResourceDesc on_array(cudaArray_t array) {
    cudaResourceDesc r = {};
    r.resType = cudaResourceTypeArray;
    r.res.array.array = array;
    return r;
}

__global__ void store_at(cudaSurfaceObject_t surf, int x_bytes, int y) { surf2Dwrite(1.0f, surf, x_bytes, y); }

__global__ void fetch_one(cudaTextureObject_t tex, float* out) { *out = tex2D<float>(tex, 0.5f, 0.5f); }

}  // namespace

TEST(Arrays, FreedTwiceIsAnError) {
    cudaChannelFormatDesc f32 = cudaCreateChannelDesc<float>();
    cudaArray_t a = nullptr;
    ASSERT_CUDA_OK(cudaMallocArray(&a, &f32, 8));
    ASSERT_CUDA_OK(cudaFreeArray(a));
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaFreeArray(a));
        report = capture.take();
    }
    (void)cudaGetLastError();
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"cudaFreeArray", "not a live CUDA array"}));
}

TEST(Textures, PitchMustMeetTheTexturePitchAlignment) {
    float* d = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&d, 64 * 40));
    cudaResourceDesc r = {};
    r.resType = cudaResourceTypePitch2D;
    r.res.pitch2D.devPtr = d;
    r.res.pitch2D.desc = cudaCreateChannelDesc<float>();
    r.res.pitch2D.width = 10;
    r.res.pitch2D.height = 4;
    r.res.pitch2D.pitchInBytes = 40;  // not a multiple of 32
    cudaTextureDesc td = {};
    cudaTextureObject_t t = 0;
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaCreateTextureObject(&t, &r, &td, nullptr));
        report = capture.take();
    }
    (void)cudaGetLastError();
    ASSERT_CUDA_OK(cudaFree(d));
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"pitchInBytes 40", "texturePitchAlignment", "cudaMallocPitch"}));
}

TEST(Surfaces, NeedAnArrayAllocatedForLoadStore) {
    cudaChannelFormatDesc f32 = cudaCreateChannelDesc<float>();
    cudaArray_t a = nullptr;
    ASSERT_CUDA_OK(cudaMallocArray(&a, &f32, 4, 4));  // no cudaArraySurfaceLoadStore
    cudaResourceDesc r = on_array(a);
    cudaSurfaceObject_t s = 0;
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaCreateSurfaceObject(&s, &r));
        report = capture.take();
    }
    (void)cudaGetLastError();
    ASSERT_CUDA_OK(cudaFreeArray(a));
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"cudaCreateSurfaceObject", "cudaArraySurfaceLoadStore"}));
}

// A store outside the surface in the default (trap) boundary mode faults the kernel, and the
// report says where and that x is in bytes: the usual mistake is an element index as x.
TEST(Surfaces, TrapModeStoreOutsideFaults) {
    cudaChannelFormatDesc f32 = cudaCreateChannelDesc<float>();
    cudaArray_t a = nullptr;
    ASSERT_CUDA_OK(cudaMallocArray(&a, &f32, 4, 2, cudaArraySurfaceLoadStore));
    cudaResourceDesc r = on_array(a);
    cudaSurfaceObject_t s = 0;
    ASSERT_CUDA_OK(cudaCreateSurfaceObject(&s, &r));
    std::string report;
    LaunchResult result;
    {
        StderrCapture capture;
        store_at<<<1, 1>>>(s, 4 * 4, 1);  // element 4 of a row of 4: one past the end
        result = launch_result();
        report = capture.take();
    }
    EXPECT_CUDA(cudaErrorIllegalAddress, result.sync);
    ASSERT_CUDA_OK(cudaDeviceReset());
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"surf2Dwrite", "x = 16", "y = 1", "outside the surface", "4 elements of 4 bytes",
                                         "x is in bytes"}));
}

TEST(Textures, FetchThroughADestroyedObjectFaults) {
    cudaChannelFormatDesc f32 = cudaCreateChannelDesc<float>();
    cudaArray_t a = nullptr;
    ASSERT_CUDA_OK(cudaMallocArray(&a, &f32, 2, 2));
    cudaResourceDesc r = on_array(a);
    cudaTextureDesc td = {};
    cudaTextureObject_t t = 0;
    ASSERT_CUDA_OK(cudaCreateTextureObject(&t, &r, &td, nullptr));
    ASSERT_CUDA_OK(cudaDestroyTextureObject(t));
    float* out = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&out, sizeof(float)));
    std::string report;
    LaunchResult result;
    {
        StderrCapture capture;
        fetch_one<<<1, 1>>>(t, out);
        result = launch_result();
        report = capture.take();
    }
    EXPECT_CUDA(cudaErrorIllegalAddress, result.sync);
    ASSERT_CUDA_OK(cudaDeviceReset());
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"tex2D on texture object", "not a live texture object"}));
}
#endif
