// Faults become the CUDA error a GPU would give, never a crash or a silent pass: invalid launch
// configurations, shared-memory limits, stack overflow, illegal addresses, bad pointers passed
// to the runtime, invalid streams; and device faults are sticky until cudaDeviceReset().
// On the sim backend each fault's report (stderr) is checked too. Barrier and warp
// synchronization faults: sync_faults_test.cu.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cusim_test.h"

using cusim_test::DeviceBuffer;
using cusim_test::LaunchResult;
using cusim_test::launch_result;
using cusim_test::report_contains;
using cusim_test::StderrCapture;

// Every test resets the device afterwards: device faults poison the context (sticky errors).
// cusim clears them on cudaDeviceReset(); on a real GPU the process would have to restart.
class Faults : public ::testing::Test {
protected:
    void TearDown() override { EXPECT_CUDA_OK(cudaDeviceReset()); }
};


__global__ void mark(int* flag) { *flag = 1; }

// ---- launch configuration -------------------------------------------------------------------

TEST_F(Faults, InvalidBlockAndGridDimensions) {
    DeviceBuffer<int> flag(1);
    ASSERT_CUDA_OK(flag.status());
    ASSERT_CUDA_OK(flag.fill_bytes(0));
    struct Config {
        dim3 grid, block;
        const char* what;
        cudaError_t code;  // CUDA 13's (tests/conformance/launch_errors.cu)
    };
    const Config bad[] = {
        {dim3(1), dim3(1025), "1025 threads", cudaErrorInvalidValue},
        {dim3(1), dim3(1024, 2, 1), "2048 threads", cudaErrorInvalidValue},
        {dim3(1), dim3(1, 1, 65), "blockDim.z 65", cudaErrorInvalidValue},
        {dim3(1), dim3(0, 1, 1), "blockDim.x 0", cudaErrorInvalidValue},
        {dim3(1), dim3(32, 0, 1), "blockDim.y 0", cudaErrorInvalidValue},
        {dim3(0), dim3(32), "gridDim.x 0", cudaErrorInvalidValue},
        {dim3(1, 65536, 1), dim3(32), "gridDim.y 65536", cudaErrorInvalidValue},
        {dim3(1, 1, 65536), dim3(32), "gridDim.z 65536", cudaErrorInvalidValue},
        {dim3(2147483648u, 1, 1), dim3(32), "gridDim.x 2^31", cudaErrorInvalidValue},
    };
    for (const Config& c : bad) {
        SCOPED_TRACE(c.what);
        std::string report;
        {
            StderrCapture capture;
            mark<<<c.grid, c.block>>>(flag.get());  // @bad-config
            EXPECT_CUDA(c.code, cudaGetLastError());
            report = capture.take();
        }
        // A configuration error is not sticky: the context stays usable.
        EXPECT_CUDA_OK(cudaDeviceSynchronize());
#ifdef CUSIM
        if (!cusim_test::reports_silenced())
            EXPECT_TRUE(report_contains(report, {"mark", FILE_LINE("bad-config"), cudaGetErrorName(c.code)}));
#endif
    }
    const auto h = flag.download();
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0], 0) << "a kernel with an invalid configuration must not run";
    // The limits themselves are accepted.
    for (const Config& c : {Config{dim3(1), dim3(1024), "1024 threads"}, Config{dim3(1), dim3(1, 1, 64), "z 64"},
                            Config{dim3(1), dim3(32, 32, 1), "32x32"}, Config{dim3(1, 65535, 1), dim3(1), "y 65535"}}) {
        SCOPED_TRACE(c.what);
        mark<<<c.grid, c.block>>>(flag.get());
        const LaunchResult r = launch_result();
        EXPECT_CUDA_OK(r.launch);
        EXPECT_CUDA_OK(r.sync);
    }
    const auto after = flag.download();
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0], 1);
}

// ---- shared memory limits -------------------------------------------------------------------

__global__ void uses_dynamic_shared(int* out) {
    extern __shared__ int dyn[];
    dyn[threadIdx.x] = 1;
    __syncthreads();
    out[threadIdx.x] = dyn[0];
}

TEST_F(Faults, DynamicSharedMemoryOverTheLimit) {
    DeviceBuffer<int> out(32);
    ASSERT_CUDA_OK(out.status());
    std::string report;
    {
        StderrCapture capture;
        uses_dynamic_shared<<<1, 32, 48 * 1024 + 1>>>(out.get());  // @dyn-over
        EXPECT_CUDA(cudaErrorInvalidValue, cudaGetLastError());
        report = capture.take();
    }
    EXPECT_CUDA_OK(cudaDeviceSynchronize());  // not sticky
    // Even with the opt-in at its maximum, more than 227 KiB is refused.
    ASSERT_CUDA_OK(cudaFuncSetAttribute(uses_dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 232448));
    {
        StderrCapture capture;
        uses_dynamic_shared<<<1, 32, 232448 + 1>>>(out.get());
        EXPECT_CUDA(cudaErrorInvalidValue, cudaGetLastError());
    }
    uses_dynamic_shared<<<1, 32, 232448>>>(out.get());
    EXPECT_CUDA_OK(cudaGetLastError());
#ifdef CUSIM
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"uses_dynamic_shared", FILE_LINE("dyn-over"), "49153",
                                         "cudaFuncAttributeMaxDynamicSharedMemorySize", "cudaErrorInvalidValue"}));
#endif
}

#ifdef CUSIM
// nvcc rejects more than 48 KiB of static shared memory at compile time (ptxas: "uses too much
// shared data"), so this kernel exists only on the sim backend, where the limit is enforced
// when the declarations execute.
__global__ void too_much_static_shared(float* out) {
    __shared__ float a[8192];  // 32 KiB
    __shared__ float b[4097];  // 16 KiB + 4 bytes: 48 KiB + 4 in all
    a[threadIdx.x] = 1.0f;
    b[threadIdx.x] = 2.0f;
    __syncthreads();
    out[threadIdx.x] = a[threadIdx.x] + b[threadIdx.x];
}

TEST_F(Faults, StaticSharedMemoryOver48KiB) {
    DeviceBuffer<float> out(32);
    ASSERT_CUDA_OK(out.status());
    std::string report;
    LaunchResult r;
    {
        StderrCapture capture;
        too_much_static_shared<<<2, 32>>>(out.get());
        r = launch_result();
        report = capture.take();
    }
    EXPECT_TRUE(r.launch == cudaErrorLaunchOutOfResources || r.launch == cudaSuccess) << cudaGetErrorName(r.launch);
    EXPECT_CUDA(cudaErrorLaunchOutOfResources, r.sync);
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"too_much_static_shared", "49152", "cudaErrorLaunchOutOfResources"}));
}
#endif

// ---- stack overflow -------------------------------------------------------------------------

// An 8 MiB local array, far beyond a fiber stack (256 KiB unless CUSIM_STACK_KB says otherwise).
__noinline__ __device__ int big_frame(int seed) {
    volatile char big[8 << 20];
    big[0] = static_cast<char>(seed);
    big[sizeof(big) - 1] = static_cast<char>(seed + 1);
    return big[0] + big[sizeof(big) - 1];
}

__global__ void overflow_in_one_thread(int* out) {
    int v = static_cast<int>(threadIdx.x);
    if (blockIdx.x == 2 && threadIdx.x == 7) v = big_frame(v);
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

TEST_F(Faults, StackOverflowFromLargeLocalArray) {
    DeviceBuffer<int> out(4 * 32);
    ASSERT_CUDA_OK(out.status());
    std::string report;
    const LaunchResult r = cusim_test::finish_within(
        std::chrono::seconds(30), "stack overflow launch", [&] { overflow_in_one_thread<<<4, 32>>>(out.get()); }, &report);
    EXPECT_TRUE(r.launch == cudaErrorHardwareStackError || r.launch == cudaSuccess) << cudaGetErrorName(r.launch);
    EXPECT_CUDA(cudaErrorHardwareStackError, r.sync);
#ifdef CUSIM
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"Stack overflow", "overflow_in_one_thread", "thread (7,0,0)",
                                         "block (2,0,0)", "cudaErrorHardwareStackError"}));
#endif
}

// Unbounded recursion: every frame keeps a 1 KiB array alive across the call.
__noinline__ __device__ int recurse(int n) {
    volatile char pad[1024];
    pad[n % 1024] = static_cast<char>(n);
    if (n == 0) return pad[0];
    const int below = recurse(n - 1);
    return below + pad[(n * 7) % 1024];
}

__global__ void deep_recursion(int* out, int depth) {
    if (threadIdx.x == 3) out[0] = recurse(depth);
}

TEST_F(Faults, StackOverflowFromDeepRecursion) {
    DeviceBuffer<int> out(1);
    ASSERT_CUDA_OK(out.status());
    std::string report;
    const LaunchResult r = cusim_test::finish_within(
        std::chrono::seconds(30), "deep recursion launch", [&] { deep_recursion<<<1, 8>>>(out.get(), 1 << 20); }, &report);
    EXPECT_CUDA(cudaErrorHardwareStackError, r.sync);
#ifdef CUSIM
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"Stack overflow", "deep_recursion", "thread (3,0,0)", "block (0,0,0)"}));
#endif
}

// ---- illegal addresses and sticky errors ----------------------------------------------------

__global__ void write_through(int* p, int* ok) {
    if (blockIdx.x == 1 && threadIdx.x == 3) *p = 42;  // p is NULL
    ok[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

TEST_F(Faults, NullPointerWriteIsStickyUntilReset) {
    int* ok = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&ok, 64 * sizeof(int)));
    std::string report;
    LaunchResult r;
    {
        StderrCapture capture;
        write_through<<<2, 32>>>(nullptr, ok);
        r = launch_result();
        report = capture.take();
    }
    EXPECT_TRUE(r.launch == cudaErrorIllegalAddress || r.launch == cudaSuccess) << cudaGetErrorName(r.launch);
    EXPECT_CUDA(cudaErrorIllegalAddress, r.sync);
    // Sticky: every later call fails with the same error, the last error is not cleared by
    // reading it, and new launches do not run.
    EXPECT_CUDA(cudaErrorIllegalAddress, cudaGetLastError());
    EXPECT_CUDA(cudaErrorIllegalAddress, cudaGetLastError());
    EXPECT_CUDA(cudaErrorIllegalAddress, cudaPeekAtLastError());
    int* other = nullptr;
    EXPECT_CUDA(cudaErrorIllegalAddress, cudaMalloc(&other, 16));
    int host[64] = {};
    EXPECT_CUDA(cudaErrorIllegalAddress, cudaMemcpy(host, ok, sizeof host, cudaMemcpyDeviceToHost));
    EXPECT_CUDA(cudaErrorIllegalAddress, cudaMemset(ok, 0, 16));
    {
        StderrCapture capture;
        mark<<<1, 1>>>(ok);
        EXPECT_CUDA(cudaErrorIllegalAddress, cudaGetLastError());
    }
    EXPECT_CUDA(cudaErrorIllegalAddress, cudaDeviceSynchronize());
    // cudaDeviceReset() ends the poisoned context (cusim: in-process; a GPU: restart the process).
    ASSERT_CUDA_OK(cudaDeviceReset());
    EXPECT_CUDA_OK(cudaGetLastError());
    DeviceBuffer<int> flag(1);
    ASSERT_CUDA_OK(flag.status());
    ASSERT_CUDA_OK(flag.fill_bytes(0));
    mark<<<1, 1>>>(flag.get());
    const LaunchResult again = launch_result();
    EXPECT_CUDA_OK(again.launch);
    EXPECT_CUDA_OK(again.sync);
    const auto h = flag.download();
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0], 1);
#ifdef CUSIM
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"write_through", "thread (3,0,0)", "block (1,0,0)", "cudaErrorIllegalAddress"}));
#endif
}

// ---- bad pointers given to the runtime ------------------------------------------------------

TEST_F(Faults, BadFreesAreInvalidValueWithTheCallSite) {
    void* d = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&d, 1024));
    ASSERT_CUDA_OK(cudaFree(d));
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaFree(d));  // @double-free
        report = capture.take();
    }
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGetLastError());
    EXPECT_CUDA_OK(cudaGetLastError());  // not sticky
#ifdef CUSIM
    if (!cusim_test::reports_silenced())
        EXPECT_TRUE(report_contains(report, {"cudaFree", FILE_LINE("double-free"), "already released"}));
#endif

    std::vector<int> host(16);
    int local = 0;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaFree(host.data()));  // @free-host
        EXPECT_CUDA(cudaErrorInvalidValue, cudaFree(&local));
        report = capture.take();
    }
#ifdef CUSIM
    if (!cusim_test::reports_silenced())
        EXPECT_TRUE(report_contains(report, {FILE_LINE("free-host"), "not device memory"}));
#endif

    char* base = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&base, 4096));
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaFree(base + 256));  // @free-interior
        report = capture.take();
    }
#ifdef CUSIM
    if (!cusim_test::reports_silenced())
        EXPECT_TRUE(report_contains(report, {FILE_LINE("free-interior"), "inside an allocation"}));
#endif
    // The allocation survived the bad free.
    EXPECT_CUDA_OK(cudaMemset(base, 1, 4096));
    EXPECT_CUDA_OK(cudaFree(base));

    // Pinned and device memory are released by their own functions.
    void* pinned = nullptr;
    ASSERT_CUDA_OK(cudaMallocHost(&pinned, 64));
    void* dev = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&dev, 64));
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaFreeHost(dev));
    }
    EXPECT_CUDA_OK(cudaFreeHost(pinned));
    EXPECT_CUDA_OK(cudaFree(dev));
}

TEST_F(Faults, CopiesIntoFreedOrPastTheEndAreInvalidValue) {
    constexpr size_t kBytes = 1000;
    std::vector<char> host(2 * kBytes, 'x');
    char* d = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&d, kBytes));
    std::string report;
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpy(d, host.data(), kBytes + 1, cudaMemcpyHostToDevice));  // @past-end
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpy(d + 500, host.data(), 501, cudaMemcpyHostToDevice));
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpy(host.data(), d + 1, kBytes, cudaMemcpyDeviceToHost));
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemset(d, 0, kBytes + 8));
        report = capture.take();
    }
#ifdef CUSIM
    if (!cusim_test::reports_silenced())
        EXPECT_TRUE(report_contains(report, {"cudaMemcpy", FILE_LINE("past-end"), "past the end"}));
#endif
    // Exactly the allocation is fine.
    EXPECT_CUDA_OK(cudaMemcpy(d, host.data(), kBytes, cudaMemcpyHostToDevice));
    EXPECT_CUDA_OK(cudaMemcpy(d + 999, host.data(), 1, cudaMemcpyHostToDevice));
    ASSERT_CUDA_OK(cudaFree(d));
    {
        StderrCapture capture;
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpy(d, host.data(), 16, cudaMemcpyHostToDevice));  // @into-freed
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpy(host.data(), d, 16, cudaMemcpyDeviceToHost));
        EXPECT_CUDA(cudaErrorInvalidValue, cudaMemset(d, 0, 16));
        report = capture.take();
    }
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGetLastError());
    EXPECT_CUDA_OK(cudaDeviceSynchronize());  // not sticky
#ifdef CUSIM
    if (!cusim_test::reports_silenced())
        EXPECT_TRUE(report_contains(report, {FILE_LINE("into-freed"), "already released by cudaFree"}));
#endif
}

// ---- invalid stream handles -----------------------------------------------------------------

TEST_F(Faults, LaunchIntoDestroyedStream) {
#ifdef CUSIM
    // Undefined behaviour on a GPU (it may crash); cusim checks the handle.
    DeviceBuffer<int> flag(1);
    ASSERT_CUDA_OK(flag.status());
    ASSERT_CUDA_OK(flag.fill_bytes(0));
    cudaStream_t s;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    ASSERT_CUDA_OK(cudaStreamDestroy(s));
    std::string report;
    {
        StderrCapture capture;
        mark<<<1, 1, 0, s>>>(flag.get());  // @dead-stream
        EXPECT_CUDA(cudaErrorInvalidResourceHandle, cudaGetLastError());
        report = capture.take();
    }
    EXPECT_CUDA_OK(cudaDeviceSynchronize());
    const auto h = flag.download();
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0], 0) << "the kernel must not run";
    SKIP_IF_REPORTS_SILENCED();
    EXPECT_TRUE(report_contains(report, {"mark", FILE_LINE("dead-stream"), "stream"}));
#else
    GTEST_SKIP() << "using a destroyed stream is undefined behaviour on a GPU";
#endif
}
