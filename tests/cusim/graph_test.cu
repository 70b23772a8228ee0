// CUDA graphs: the errors of stream capture and graph use that a program meets (conformance
// cuda_graphs covers what graphs compute). cusim's report texts are checked on sim only.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "cusim_test.h"

using cusim_test::report_contains;
using cusim_test::StderrCapture;

__global__ void bump(int* p) { *p += 1; }

// Non-blocking streams: the legacy stream's copies that read results never wait for them, which a
// capture would forbid.
struct Streams : ::testing::Test {
    cudaStream_t a = nullptr, b = nullptr;
    cudaEvent_t e = nullptr;
    int* d = nullptr;
    void SetUp() override {
        ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
        ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
        ASSERT_CUDA_OK(cudaEventCreate(&e));
        ASSERT_CUDA_OK(cudaMalloc(&d, sizeof(int)));
        ASSERT_CUDA_OK(cudaMemset(d, 0, sizeof(int)));
    }
    void TearDown() override {
        cudaFree(d);
        cudaEventDestroy(e);
        cudaStreamDestroy(b);
        cudaStreamDestroy(a);
        (void)cudaGetLastError();
    }
    int value() {
        int v = -1;
        EXPECT_CUDA_OK(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost));
        return v;
    }
};

// Work issued to a captured stream is recorded, not run; the graph runs it at each launch.
TEST_F(Streams, CapturedWorkRunsOnlyWhenTheGraphIsLaunched) {
    ASSERT_CUDA_OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    bump<<<1, 1, 0, a>>>(d);
    EXPECT_EQ(0, [&] {
        // Read on the host through another path than the captured stream.
        int v = -1;
        cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        cudaThreadExchangeStreamCaptureMode(&mode);
        cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost);
        cudaThreadExchangeStreamCaptureMode(&mode);
        return v;
    }());
    cudaGraph_t g = nullptr;
    ASSERT_CUDA_OK(cudaStreamEndCapture(a, &g));
    cudaGraphExec_t x = nullptr;
    ASSERT_CUDA_OK(cudaGraphInstantiate(&x, g, 0));
    ASSERT_CUDA_OK(cudaGraphLaunch(x, a));
    ASSERT_CUDA_OK(cudaGraphLaunch(x, a));
    ASSERT_CUDA_OK(cudaStreamSynchronize(a));
    EXPECT_EQ(2, value());
    EXPECT_CUDA_OK(cudaGraphExecDestroy(x));
    EXPECT_CUDA_OK(cudaGraphDestroy(g));
}

#ifdef CUSIM
TEST_F(Streams, WorkOfAForkedStreamThatNeverJoinsIsUnjoined) {
    ASSERT_CUDA_OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    ASSERT_CUDA_OK(cudaEventRecord(e, a));
    ASSERT_CUDA_OK(cudaStreamWaitEvent(b, e, 0));
    bump<<<1, 1, 0, b>>>(d);  // b never joins a again
    cudaGraph_t g = nullptr;
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorStreamCaptureUnjoined, cudaStreamEndCapture(a, &g));
        report = capture.take();
    }
    EXPECT_EQ(nullptr, g);
    (void)cudaGetLastError();
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"cudaStreamEndCapture", "kernel 'bump'", "never joined back",
                                         "cudaStreamWaitEvent"}));
}

TEST_F(Streams, WaitingForACapturedStreamInvalidatesTheCapture) {
    ASSERT_CUDA_OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    bump<<<1, 1, 0, a>>>(d);
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorStreamCaptureUnsupported, cudaStreamSynchronize(a));
        report = capture.take();
    }
    cudaStreamCaptureStatus status;
    ASSERT_CUDA_OK(cudaStreamIsCapturing(a, &status));
    EXPECT_EQ(cudaStreamCaptureStatusInvalidated, status);
    cudaGraph_t g = nullptr;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(a, &g));
    }
    (void)cudaGetLastError();
    EXPECT_EQ(0, value());
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"cudaStreamSynchronize", "being captured", "cudaStreamEndCapture"}));
}

TEST_F(Streams, TheLegacyStreamCannotBeCaptured) {
    StderrCapture capture;
    EXPECT_CUDA(cudaErrorStreamCaptureUnsupported, cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal));
    (void)cudaGetLastError();
}

TEST(Graphs, ACycleCannotBeInstantiated) {
    cudaGraph_t g = nullptr;
    ASSERT_CUDA_OK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t n1, n2;
    ASSERT_CUDA_OK(cudaGraphAddEmptyNode(&n1, g, nullptr, 0));
    ASSERT_CUDA_OK(cudaGraphAddEmptyNode(&n2, g, &n1, 1));
    ASSERT_CUDA_OK(cudaGraphAddDependencies(g, &n2, &n1, nullptr, 1));
    cudaGraphExec_t x = nullptr;
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaGraphInstantiate(&x, g, 0));
        report = capture.take();
    }
    (void)cudaGetLastError();
    EXPECT_CUDA_OK(cudaGraphDestroy(g));
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"cudaGraphInstantiate", "cycle"}));
}

TEST(Graphs, UpdateRefusesAnotherTopology) {
    cudaGraph_t g1 = nullptr, g2 = nullptr;
    ASSERT_CUDA_OK(cudaGraphCreate(&g1, 0));
    ASSERT_CUDA_OK(cudaGraphCreate(&g2, 0));
    cudaGraphNode_t n;
    ASSERT_CUDA_OK(cudaGraphAddEmptyNode(&n, g1, nullptr, 0));
    ASSERT_CUDA_OK(cudaGraphAddEmptyNode(&n, g2, nullptr, 0));
    ASSERT_CUDA_OK(cudaGraphAddEmptyNode(&n, g2, &n, 1));
    cudaGraphExec_t x = nullptr;
    ASSERT_CUDA_OK(cudaGraphInstantiate(&x, g1, 0));
    cudaGraphExecUpdateResultInfo info{};
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorGraphExecUpdateFailure, cudaGraphExecUpdate(x, g2, &info));
    }
    (void)cudaGetLastError();
    EXPECT_EQ(cudaGraphExecUpdateErrorTopologyChanged, info.result);
    EXPECT_CUDA_OK(cudaGraphExecDestroy(x));
    EXPECT_CUDA_OK(cudaGraphDestroy(g1));
    EXPECT_CUDA_OK(cudaGraphDestroy(g2));
}

TEST(Graphs, AKernelNodeNeedsAKernelCusimCanLaunch) {
    cudaGraph_t g = nullptr;
    ASSERT_CUDA_OK(cudaGraphCreate(&g, 0));
    int not_a_kernel = 0;
    cudaKernelNodeParams p = {};
    p.func = &not_a_kernel;
    p.gridDim = p.blockDim = dim3(1);
    cudaGraphNode_t n;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidDeviceFunction, cudaGraphAddKernelNode(&n, g, nullptr, 0, &p));
    }
    (void)cudaGetLastError();
    EXPECT_CUDA_OK(cudaGraphDestroy(g));
}
#endif
