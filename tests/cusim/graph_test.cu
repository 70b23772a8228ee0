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
// Conditional nodes: the arguments cudaGraphConditionalHandleCreate and cudaGraphAddNode refuse, and
// the rules on the graphs that hold them (their bodies take only the node types CUDA allows, belong
// to the node, and such a graph is neither cloned nor made a child).
struct Conditional : ::testing::Test {
    cudaGraph_t g = nullptr;
    cudaGraphConditionalHandle h = 0;
    void SetUp() override {
        ASSERT_CUDA_OK(cudaGraphCreate(&g, 0));
        ASSERT_CUDA_OK(cudaGraphConditionalHandleCreate(&h, g));
    }
    void TearDown() override {
        cudaGraphDestroy(g);
        (void)cudaGetLastError();
    }
    cudaError_t add(cudaGraphNode_t* n, cudaGraph_t graph, cudaGraphConditionalHandle handle,
                    cudaGraphConditionalNodeType type, unsigned size, cudaGraph_t* body = nullptr) {
        cudaGraphNodeParams p = {cudaGraphNodeTypeConditional};
        p.conditional.handle = handle;
        p.conditional.type = type;
        p.conditional.size = size;
        StderrCapture capture;
        const cudaError_t e = cudaGraphAddNode(n, graph, nullptr, nullptr, 0, &p);
        if (e == cudaSuccess && body) *body = p.conditional.phGraph_out[0];
        (void)cudaGetLastError();
        return e;
    }
};

TEST_F(Conditional, SizesOutsideWhatTheTypeAllowsAreInvalid) {
    cudaGraphNode_t n;
    EXPECT_CUDA(cudaErrorInvalidValue, add(&n, g, h, cudaGraphCondTypeIf, 3));
    EXPECT_CUDA(cudaErrorInvalidValue, add(&n, g, h, cudaGraphCondTypeIf, 0));
    EXPECT_CUDA(cudaErrorInvalidValue, add(&n, g, h, cudaGraphCondTypeWhile, 2));
    EXPECT_CUDA(cudaErrorInvalidValue, add(&n, g, h, cudaGraphCondTypeSwitch, 0));
    EXPECT_CUDA(cudaErrorInvalidValue, add(&n, g, h, cudaGraphConditionalNodeType(7), 1));
    EXPECT_CUDA_OK(add(&n, g, h, cudaGraphCondTypeSwitch, 9));
    size_t nodes = 0;
    ASSERT_CUDA_OK(cudaGraphGetNodes(g, nullptr, &nodes));
    EXPECT_EQ(1u, nodes);  // the refused ones left nothing behind
}

TEST_F(Conditional, AHandleOfAnotherGraphOrNoneIsInvalid) {
    cudaGraph_t other = nullptr;
    ASSERT_CUDA_OK(cudaGraphCreate(&other, 0));
    cudaGraphNode_t n;
    EXPECT_CUDA(cudaErrorInvalidValue, add(&n, other, h, cudaGraphCondTypeIf, 1));
    EXPECT_CUDA(cudaErrorInvalidValue, add(&n, g, 0, cudaGraphCondTypeIf, 1));
    EXPECT_CUDA(cudaErrorInvalidValue, add(&n, g, ~0ull, cudaGraphCondTypeIf, 1));
    // A body may use the handle of the graph that holds it.
    cudaGraph_t body = nullptr;
    ASSERT_CUDA_OK(add(&n, g, h, cudaGraphCondTypeIf, 1, &body));
    EXPECT_CUDA_OK(add(&n, body, h, cudaGraphCondTypeWhile, 1));
    EXPECT_CUDA_OK(cudaGraphDestroy(other));
}

TEST_F(Conditional, HandleFlagsAreZeroOrAssignDefault) {
    cudaGraphConditionalHandle x = 0;
    StderrCapture capture;
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGraphConditionalHandleCreate(&x, g, 0, 2));
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGraphConditionalHandleCreate(nullptr, g, 0, 0));
    (void)cudaGetLastError();
    EXPECT_CUDA_OK(cudaGraphConditionalHandleCreate(&x, g, 5, cudaGraphCondAssignDefault));
    EXPECT_NE(h, x);
}

TEST_F(Conditional, ABodyHoldsOnlyTheNodeTypesCudaAllows) {
    cudaGraphNode_t n, empty;
    cudaGraph_t body = nullptr;
    ASSERT_CUDA_OK(add(&n, g, h, cudaGraphCondTypeIf, 1, &body));
    EXPECT_CUDA_OK(cudaGraphAddEmptyNode(&empty, body, nullptr, 0));
    cudaHostNodeParams host = {[](void*) {}, nullptr};
    StderrCapture capture;
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGraphAddHostNode(&n, body, nullptr, 0, &host));
    // The node owns its bodies: they go with the graph, not on their own.
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGraphDestroy(body));
    (void)cudaGetLastError();
}

TEST_F(Conditional, AGraphWithOneIsNeitherClonedNorAChild) {
    cudaGraphNode_t n;
    ASSERT_CUDA_OK(add(&n, g, h, cudaGraphCondTypeWhile, 1));
    cudaGraph_t clone = nullptr, parent = nullptr;
    ASSERT_CUDA_OK(cudaGraphCreate(&parent, 0));
    StderrCapture capture;
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGraphClone(&clone, g));
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGraphAddChildGraphNode(&n, parent, nullptr, 0, g));
    (void)cudaGetLastError();
    EXPECT_CUDA_OK(cudaGraphDestroy(parent));
}

// A launch runs the bodies the graph had when it was instantiated.
__global__ void set_value(cudaGraphConditionalHandle h, unsigned v) { cudaGraphSetConditional(h, v); }

TEST_F(Conditional, AnExecutableGraphKeepsTheBodiesItWasMadeWith) {
    int* d = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&d, sizeof(int)));
    ASSERT_CUDA_OK(cudaMemset(d, 0, sizeof(int)));
    cudaStream_t s = nullptr;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    cudaGraphNode_t n;
    cudaGraph_t body = nullptr;
    ASSERT_CUDA_OK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
    ASSERT_CUDA_OK(add(&n, g, h, cudaGraphCondTypeIf, 1, &body));
    auto capture_bump = [&] {
        ASSERT_CUDA_OK(cudaStreamBeginCaptureToGraph(s, body, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
        bump<<<1, 1, 0, s>>>(d);
        ASSERT_CUDA_OK(cudaStreamEndCapture(s, nullptr));
    };
    capture_bump();
    cudaGraphExec_t x = nullptr;
    ASSERT_CUDA_OK(cudaGraphInstantiate(&x, g, 0));
    capture_bump();  // after instantiation: not in x
    ASSERT_CUDA_OK(cudaGraphLaunch(x, 0));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    int v = 0;
    ASSERT_CUDA_OK(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost));
    EXPECT_EQ(1, v);
    // Set on a plain launch, the value does not outlive the default each graph launch applies.
    set_value<<<1, 1>>>(h, 0);
    ASSERT_CUDA_OK(cudaGraphLaunch(x, 0));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    ASSERT_CUDA_OK(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost));
    EXPECT_EQ(2, v);
    EXPECT_CUDA_OK(cudaGraphExecDestroy(x));
    EXPECT_CUDA_OK(cudaStreamDestroy(s));
    EXPECT_CUDA_OK(cudaFree(d));
}

TEST_F(Streams, CaptureDependenciesNeedACaptureAndKnownFlags) {
    cudaGraphNode_t none = nullptr;
    StderrCapture capture;
    EXPECT_CUDA(cudaErrorIllegalState,
                cudaStreamUpdateCaptureDependencies(a, &none, nullptr, 0, cudaStreamSetCaptureDependencies));
    EXPECT_CUDA(cudaErrorInvalidValue, cudaStreamUpdateCaptureDependencies(a, &none, nullptr, 0, 7));
    ASSERT_CUDA_OK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    cudaGraph_t other = nullptr;
    ASSERT_CUDA_OK(cudaGraphCreate(&other, 0));
    cudaGraphNode_t foreign;
    ASSERT_CUDA_OK(cudaGraphAddEmptyNode(&foreign, other, nullptr, 0));
    EXPECT_CUDA(cudaErrorInvalidValue,
                cudaStreamUpdateCaptureDependencies(a, &foreign, nullptr, 1, cudaStreamAddCaptureDependencies));
    // Only a capture into the program's own graph may end without taking the graph.
    EXPECT_CUDA(cudaErrorInvalidValue, cudaStreamEndCapture(a, nullptr));
    cudaGraph_t g = nullptr;
    ASSERT_CUDA_OK(cudaStreamEndCapture(a, &g));
    ASSERT_CUDA_OK(cudaStreamBeginCaptureToGraph(a, other, &foreign, nullptr, 1, cudaStreamCaptureModeGlobal));
    bump<<<1, 1, 0, a>>>(d);
    EXPECT_CUDA_OK(cudaStreamEndCapture(a, nullptr));
    size_t nodes = 0;
    ASSERT_CUDA_OK(cudaGraphGetNodes(other, nullptr, &nodes));
    EXPECT_EQ(2u, nodes);
    (void)cudaGetLastError();
    EXPECT_CUDA_OK(cudaGraphDestroy(g));
    EXPECT_CUDA_OK(cudaGraphDestroy(other));
}
#endif
