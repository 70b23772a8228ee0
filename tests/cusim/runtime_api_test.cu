// The CUDA runtime API subset cusim provides, with CUDA's results: memory, copies of every
// kind, memsets, pinned memory, streams, events, devices and their properties, kernel
// attributes, and the last-error functions. Device faults and sticky errors: faults_test.cu.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "cusim_test.h"

using cusim_test::DeviceBuffer;
using cusim_test::launch_result;

template <class T>
static std::vector<T> download_ok(const DeviceBuffer<T>& d) {
    cudaError_t err = cudaSuccess;
    std::vector<T> h = d.download(&err);
    EXPECT_CUDA_OK(err);
    return h;
}

__global__ void iota(int* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = i;
}
__global__ void times_two_plus_one(int* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2 * out[i] + 1;
}

// ---- memory and copies ----------------------------------------------------------------------

TEST(RuntimeMemory, MallocFreeAndEveryMemcpyKind) {
    constexpr int n = 1000;
    std::vector<int> src(n), dst(n, -1), host_copy(n, -1);
    std::iota(src.begin(), src.end(), 5);
    int *a = nullptr, *b = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&a, n * sizeof(int)));
    ASSERT_CUDA_OK(cudaMalloc(&b, n * sizeof(int)));
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u) << "cudaMalloc returns 256-byte aligned memory";

    ASSERT_CUDA_OK(cudaMemcpy(a, src.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    ASSERT_CUDA_OK(cudaMemcpy(b, a, n * sizeof(int), cudaMemcpyDeviceToDevice));
    ASSERT_CUDA_OK(cudaMemcpy(dst.data(), b, n * sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT_EQ(dst, src);
    ASSERT_CUDA_OK(cudaMemcpy(host_copy.data(), dst.data(), n * sizeof(int), cudaMemcpyHostToHost));
    EXPECT_EQ(host_copy, src);

    // cudaMemcpyDefault infers the direction from the pointers (unified addressing).
    std::vector<int> other(n);
    std::iota(other.begin(), other.end(), -300);
    ASSERT_CUDA_OK(cudaMemcpy(a, other.data(), n * sizeof(int), cudaMemcpyDefault));
    ASSERT_CUDA_OK(cudaMemcpy(b + 10, a + 20, 100 * sizeof(int), cudaMemcpyDefault));
    ASSERT_CUDA_OK(cudaMemcpy(dst.data(), b, n * sizeof(int), cudaMemcpyDefault));
    for (int i = 0; i < n; ++i) {
        const int expect = (i >= 10 && i < 110) ? other[i + 10] : src[i];
        ASSERT_EQ(dst[i], expect) << "i=" << i;
    }
    // Zero-byte copies are valid no-ops.
    EXPECT_CUDA_OK(cudaMemcpy(a, src.data(), 0, cudaMemcpyHostToDevice));

    EXPECT_CUDA_OK(cudaFree(a));
    EXPECT_CUDA_OK(cudaFree(b));
    EXPECT_CUDA_OK(cudaFree(nullptr));  // freeing NULL is allowed
}

TEST(RuntimeMemory, MemcpyAsyncEveryKindInAStream) {
    constexpr int n = 4096;
    cudaStream_t s;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    std::vector<float> src(n), back(n, 0.0f);
    for (int i = 0; i < n; ++i) src[i] = 0.5f * i;
    DeviceBuffer<float> a(n), b(n);
    ASSERT_CUDA_OK(a.status());
    ASSERT_CUDA_OK(b.status());
    ASSERT_CUDA_OK(cudaMemcpyAsync(a.get(), src.data(), a.bytes(), cudaMemcpyHostToDevice, s));
    ASSERT_CUDA_OK(cudaMemcpyAsync(b.get(), a.get(), a.bytes(), cudaMemcpyDeviceToDevice, s));
    ASSERT_CUDA_OK(cudaMemcpyAsync(back.data(), b.get(), b.bytes(), cudaMemcpyDeviceToHost, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(back, src);
    std::vector<float> again(n, 0.0f);
    ASSERT_CUDA_OK(cudaMemcpyAsync(again.data(), back.data(), n * sizeof(float), cudaMemcpyHostToHost, s));
    ASSERT_CUDA_OK(cudaMemcpyAsync(a.get(), again.data(), n * sizeof(float), cudaMemcpyDefault, s));
    ASSERT_CUDA_OK(cudaMemcpyAsync(back.data(), a.get(), n * sizeof(float), cudaMemcpyDefault));  // default stream
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(back, src);
    EXPECT_CUDA_OK(cudaStreamDestroy(s));
}

TEST(RuntimeMemory, MemsetAndMemsetAsync) {
    constexpr int n = 777;
    DeviceBuffer<unsigned char> d(n);
    ASSERT_CUDA_OK(d.status());
    ASSERT_CUDA_OK(cudaMemset(d.get(), 0xab, n));
    ASSERT_CUDA_OK(cudaMemset(d.get() + 100, 0x1234, 50));  // only the low byte of the value counts
    cudaStream_t s;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    ASSERT_CUDA_OK(cudaMemsetAsync(d.get() + 700, 0, 77, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), size_t(n));
    for (int i = 0; i < n; ++i) {
        const unsigned expect = (i >= 100 && i < 150) ? 0x34u : (i >= 700 ? 0u : 0xabu);
        ASSERT_EQ(h[i], expect) << "byte " << i;
    }
    EXPECT_CUDA_OK(cudaStreamDestroy(s));
}

// A GPU's cudaMalloc does not clear memory: a kernel that adds into a buffer nobody zeroed may
// read anything there. cusim's fresh device memory is all-ones bytes (NaN as float, -1 as int), so
// such a kernel gives a visibly wrong result on sim too, not the right one by luck of zeroed pages.
// (cusim's own choice: a GPU's fresh memory may hold anything, zeros included, so not on cuda.)
#ifdef CUSIM
__global__ void add_one(float* acc, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc[i] += 1.0f;
}

TEST(RuntimeMemory, FreshDeviceMemoryIsNotZero) {
    constexpr int n = 300;
    DeviceBuffer<int> ints(n);
    ASSERT_CUDA_OK(ints.status());
    for (int v : download_ok(ints)) ASSERT_EQ(v, -1);
    DeviceBuffer<float> acc(n);
    ASSERT_CUDA_OK(acc.status());
    add_one<<<(n + 127) / 128, 128>>>(acc.get(), n);
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    for (float v : download_ok(acc)) ASSERT_TRUE(std::isnan(v)) << v;
    // Cleared memory is what the program wrote.
    ASSERT_CUDA_OK(cudaMemset(acc.get(), 0, n * sizeof(float)));
    add_one<<<(n + 127) / 128, 128>>>(acc.get(), n);
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    for (float v : download_ok(acc)) ASSERT_EQ(v, 1.0f);
}
#endif

TEST(RuntimeMemory, PinnedHostMemory) {
    constexpr int n = 2048;
    int* pinned = nullptr;
    ASSERT_CUDA_OK(cudaMallocHost(&pinned, n * sizeof(int)));
    ASSERT_NE(pinned, nullptr);
    for (int i = 0; i < n; ++i) pinned[i] = 3 * i;  // host-accessible
    DeviceBuffer<int> d(n);
    ASSERT_CUDA_OK(d.status());
    ASSERT_CUDA_OK(cudaMemcpy(d.get(), pinned, n * sizeof(int), cudaMemcpyHostToDevice));
    times_two_plus_one<<<(n + 255) / 256, 256>>>(d.get(), n);
    ASSERT_CUDA_OK(cudaGetLastError());
    ASSERT_CUDA_OK(cudaMemcpy(pinned, d.get(), n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) ASSERT_EQ(pinned[i], 6 * i + 1);
    EXPECT_CUDA_OK(cudaFreeHost(pinned));

    void* other = nullptr;
    ASSERT_CUDA_OK(cudaHostAlloc(&other, 100, cudaHostAllocDefault));
    std::memset(other, 7, 100);
    EXPECT_CUDA_OK(cudaFreeHost(other));
}

TEST(RuntimeMemory, MemGetInfo) {
    size_t free_before = 0, total = 0;
    ASSERT_CUDA_OK(cudaMemGetInfo(&free_before, &total));
    EXPECT_GT(total, 0u);
    EXPECT_LE(free_before, total);
    constexpr size_t kBytes = 64 << 20;
    DeviceBuffer<char> big(kBytes);
    ASSERT_CUDA_OK(big.status());
    size_t free_after = 0;
    ASSERT_CUDA_OK(cudaMemGetInfo(&free_after, &total));
    EXPECT_LE(free_after + kBytes, free_before) << "a 64 MiB allocation must reduce the free memory";
}

// A negative count converted to size_t asks for close to 2^64 bytes: an error, never a wrap-around
// (with memory already allocated, the total would wrap).
TEST(RuntimeMemory, HugeAllocationsFail) {
    DeviceBuffer<float> held(64);
    ASSERT_CUDA_OK(held.status());
    void* p = nullptr;
    EXPECT_CUDA(cudaErrorMemoryAllocation, cudaMalloc(&p, static_cast<size_t>(-4)));
    EXPECT_CUDA(cudaErrorMemoryAllocation, cudaGetLastError());
    void* h = nullptr;
    EXPECT_CUDA(cudaErrorMemoryAllocation, cudaMallocHost(&h, static_cast<size_t>(-4)));
    EXPECT_CUDA(cudaErrorMemoryAllocation, cudaGetLastError());
}

// A host buffer may reuse the addresses of device memory that was freed (cusim's device memory
// comes from the host heap). It is still host memory, and copies to and from it must work.
TEST(RuntimeMemory, HostBufferAtAddressOfFreedDeviceMemory) {
    constexpr size_t kBytes = 4096;
    void* d = nullptr;
    ASSERT_CUDA_OK(cudaMalloc(&d, kBytes));
    const uintptr_t lo = reinterpret_cast<uintptr_t>(d), hi = lo + kBytes;
    ASSERT_CUDA_OK(cudaFree(d));
    // Find a host block that overlaps the freed range (the allocator usually hands it out at once).
    std::vector<void*> tries;
    void* host = nullptr;
    for (int k = 0; k < 64 && !host; ++k) {
        void* p = std::malloc(kBytes);
        const uintptr_t a = reinterpret_cast<uintptr_t>(p);
        if (a < hi && a + kBytes > lo)
            host = p;
        else
            tries.push_back(p);
    }
    for (void* p : tries) std::free(p);
    if (!host) GTEST_SKIP() << "the host allocator did not reuse the freed range; nothing to check";
    std::memset(host, 0x5a, kBytes);
    DeviceBuffer<unsigned char> dev(kBytes);
    ASSERT_CUDA_OK(dev.status());
    EXPECT_CUDA_OK(cudaMemcpy(dev.get(), host, kBytes, cudaMemcpyHostToDevice));
    EXPECT_CUDA_OK(cudaMemcpy(host, dev.get(), kBytes, cudaMemcpyDeviceToHost));
    EXPECT_CUDA_OK(cudaMemcpy(dev.get(), host, kBytes, cudaMemcpyDefault));
    std::free(host);
}

// ---- streams --------------------------------------------------------------------------------

TEST(RuntimeMemory, PitchedAllocationsAndTwoDimensionalCopies) {
    constexpr int width = 37, height = 5;  // floats per row, rows
    const size_t row_bytes = width * sizeof(float);
    float* d = nullptr;
    size_t pitch = 0;
    ASSERT_CUDA_OK(cudaMallocPitch(&d, &pitch, row_bytes, height));
    ASSERT_GE(pitch, row_bytes);
    std::vector<float> h(width * height), back(width * height, -1.0f);
    std::iota(h.begin(), h.end(), 1.0f);
    // Rows padded with 0x7f bytes: the padding must never reach the host copy.
    ASSERT_CUDA_OK(cudaMemset2D(d, pitch, 0x7f, pitch, height));
    ASSERT_CUDA_OK(cudaMemcpy2D(d, pitch, h.data(), row_bytes, row_bytes, height, cudaMemcpyHostToDevice));
    cudaStream_t s;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    ASSERT_CUDA_OK(cudaMemcpy2DAsync(back.data(), row_bytes, d, pitch, row_bytes, height, cudaMemcpyDeviceToHost, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(back, h);
    // cudaMemset2D touches width bytes of each row only.
    ASSERT_CUDA_OK(cudaMemset2D(d, pitch, 0, 2 * sizeof(float), height));
    ASSERT_CUDA_OK(cudaMemcpy2D(back.data(), row_bytes, d, pitch, row_bytes, height, cudaMemcpyDeviceToHost));
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) ASSERT_EQ(back[y * width + x], x < 2 ? 0.0f : h[y * width + x]);
    EXPECT_CUDA_OK(cudaStreamDestroy(s));
    EXPECT_CUDA_OK(cudaFree(d));
#ifdef CUSIM
    cusim_test::StderrCapture quiet;
    int host = 0;
    EXPECT_CUDA(cudaErrorInvalidValue, cudaMemset2D(&host, 4, 0, 4, 1));  // not device memory
    EXPECT_CUDA(cudaErrorInvalidPitchValue, cudaMemset2D(d, 4, 0, 8, 1));  // width > pitch
#endif
}

__device__ int symbol_array[8];
__device__ unsigned int symbol_counter;
__global__ void count_into_symbol() { atomicAdd(&symbol_counter, 1u); }

TEST(RuntimeMemory, DeviceSymbolsAddressSizeAndAsyncCopies) {
    size_t size = 0;
    ASSERT_CUDA_OK(cudaGetSymbolSize(&size, symbol_array));
    EXPECT_EQ(size, sizeof(int) * 8);
    void* addr = nullptr;
    ASSERT_CUDA_OK(cudaGetSymbolAddress(&addr, symbol_counter));
    ASSERT_NE(addr, nullptr);
    // The address is device memory for memsets and copies, and a kernel sees the same variable.
    ASSERT_CUDA_OK(cudaMemset(addr, 0, sizeof(unsigned int)));
    count_into_symbol<<<3, 32>>>();
    ASSERT_CUDA_OK(cudaGetLastError());
    unsigned int count = 0;
    ASSERT_CUDA_OK(cudaMemcpy(&count, addr, sizeof count, cudaMemcpyDeviceToHost));
    EXPECT_EQ(count, 96u);

    cudaStream_t s;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    const int values[3] = {5, 6, 7};
    ASSERT_CUDA_OK(cudaMemcpyToSymbolAsync(symbol_array, values, sizeof values, 2 * sizeof(int),
                                           cudaMemcpyHostToDevice, s));
    int back[4] = {0, 0, 0, 0};
    ASSERT_CUDA_OK(cudaMemcpyFromSymbolAsync(back, symbol_array, sizeof back, sizeof(int), cudaMemcpyDeviceToHost, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(back[1], 5);
    EXPECT_EQ(back[3], 7);
    EXPECT_CUDA_OK(cudaStreamDestroy(s));
#ifdef CUSIM
    cusim_test::StderrCapture quiet;
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGetSymbolAddress(nullptr, symbol_counter));
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGetSymbolSize(nullptr, symbol_counter));
    EXPECT_CUDA(cudaErrorInvalidValue, cudaMemcpyToSymbolAsync(symbol_array, values, sizeof values, 6 * sizeof(int)));
#endif
}

TEST(RuntimeStreams, WorkRunsInStreamOrder) {
    constexpr int n = 10000;
    cudaStream_t s1, s2;
    ASSERT_CUDA_OK(cudaStreamCreate(&s1));
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    DeviceBuffer<int> d1(n), d2(n);
    ASSERT_CUDA_OK(d1.status());
    ASSERT_CUDA_OK(d2.status());
    int* result = nullptr;
    ASSERT_CUDA_OK(cudaMallocHost(&result, 2 * n * sizeof(int)));
    const int blocks = (n + 255) / 256;
    // s1: iota, then x -> 2x+1 twice; s2: memset to 0, then x -> 2x+1 once. Any reordering
    // inside a stream changes the results.
    iota<<<blocks, 256, 0, s1>>>(d1.get(), n);
    ASSERT_CUDA_OK(cudaMemsetAsync(d2.get(), 0, d2.bytes(), s2));
    times_two_plus_one<<<blocks, 256, 0, s1>>>(d1.get(), n);
    times_two_plus_one<<<blocks, 256, 0, s2>>>(d2.get(), n);
    times_two_plus_one<<<blocks, 256, 0, s1>>>(d1.get(), n);
    ASSERT_CUDA_OK(cudaGetLastError());
    ASSERT_CUDA_OK(cudaMemcpyAsync(result, d1.get(), d1.bytes(), cudaMemcpyDeviceToHost, s1));
    ASSERT_CUDA_OK(cudaMemcpyAsync(result + n, d2.get(), d2.bytes(), cudaMemcpyDeviceToHost, s2));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s1));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s2));
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(result[i], 4 * i + 3) << "stream 1, i=" << i;
        ASSERT_EQ(result[n + i], 1) << "stream 2, i=" << i;
    }
    EXPECT_CUDA_OK(cudaStreamQuery(s1));  // all work done
    EXPECT_CUDA_OK(cudaStreamDestroy(s1));
    EXPECT_CUDA_OK(cudaStreamDestroy(s2));
    EXPECT_CUDA_OK(cudaFreeHost(result));
}

TEST(RuntimeStreams, DefaultStreamHandles) {
    DeviceBuffer<int> d(64);
    ASSERT_CUDA_OK(d.status());
    iota<<<1, 64, 0, 0>>>(d.get(), 64);
    ASSERT_CUDA_OK(cudaGetLastError());
    times_two_plus_one<<<1, 64, 0, cudaStreamLegacy>>>(d.get(), 64);
    ASSERT_CUDA_OK(cudaGetLastError());
    times_two_plus_one<<<1, 64, 0, cudaStreamPerThread>>>(d.get(), 64);
    ASSERT_CUDA_OK(cudaGetLastError());
    EXPECT_CUDA_OK(cudaStreamSynchronize(0));
    EXPECT_CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 64u);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(h[i], 4 * i + 3);
}

TEST(RuntimeStreams, PrioritiesAndFlags) {
    int least = 1, greatest = 1;
    ASSERT_CUDA_OK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    EXPECT_LE(greatest, least);
    cudaStream_t hi, lo, clamped;
    ASSERT_CUDA_OK(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest));
    ASSERT_CUDA_OK(cudaStreamCreateWithPriority(&lo, cudaStreamDefault, least));
    ASSERT_CUDA_OK(cudaStreamCreateWithPriority(&clamped, cudaStreamDefault, greatest - 100));
    int p = 1;
    unsigned int flags = 99;
    ASSERT_CUDA_OK(cudaStreamGetPriority(hi, &p));
    EXPECT_EQ(p, greatest);
    ASSERT_CUDA_OK(cudaStreamGetPriority(lo, &p));
    EXPECT_EQ(p, least);
    ASSERT_CUDA_OK(cudaStreamGetPriority(clamped, &p));
    EXPECT_EQ(p, greatest);  // outside the range: clamped
    ASSERT_CUDA_OK(cudaStreamGetFlags(hi, &flags));
    EXPECT_EQ(flags, unsigned(cudaStreamNonBlocking));
    ASSERT_CUDA_OK(cudaStreamGetFlags(lo, &flags));
    EXPECT_EQ(flags, unsigned(cudaStreamDefault));
    for (cudaStream_t s : {hi, lo, clamped}) EXPECT_CUDA_OK(cudaStreamDestroy(s));
}

struct HostLog {
    const int* host;
    std::vector<int> seen;
};

TEST(RuntimeStreams, HostFunctionsAndCallbacksRunInStreamOrder) {
    constexpr int n = 64;
    DeviceBuffer<int> d(n);
    ASSERT_CUDA_OK(d.status());
    int* pinned = nullptr;
    ASSERT_CUDA_OK(cudaMallocHost(&pinned, n * sizeof(int)));
    HostLog log{pinned, {}};
    cudaStream_t s;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    // Each host function sees the copy before it complete; the callback comes last, with cudaSuccess.
    iota<<<1, n, 0, s>>>(d.get(), n);
    for (int round = 0; round < 2; ++round) {
        times_two_plus_one<<<1, n, 0, s>>>(d.get(), n);
        ASSERT_CUDA_OK(cudaMemcpyAsync(pinned, d.get(), n * sizeof(int), cudaMemcpyDeviceToHost, s));
        ASSERT_CUDA_OK(cudaLaunchHostFunc(
            s, [](void* p) { auto* l = static_cast<HostLog*>(p); l->seen.push_back(l->host[n - 1]); }, &log));
    }
    ASSERT_CUDA_OK(cudaStreamAddCallback(
        s,
        [](cudaStream_t, cudaError_t status, void* p) {
            static_cast<HostLog*>(p)->seen.push_back(status == cudaSuccess ? -1 : -2);
        },
        &log, 0));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_EQ(log.seen, (std::vector<int>{2 * (n - 1) + 1, 4 * (n - 1) + 3, -1}));
    EXPECT_CUDA_OK(cudaStreamDestroy(s));
    EXPECT_CUDA_OK(cudaFreeHost(pinned));
}

TEST(RuntimeStreams, DestroyedStreamIsAnInvalidHandle) {
#ifdef CUSIM
    // On a GPU, using a destroyed stream is undefined behaviour (it may crash); cusim checks it.
    cudaStream_t s;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    ASSERT_CUDA_OK(cudaStreamDestroy(s));
    cusim_test::StderrCapture quiet;
    EXPECT_CUDA(cudaErrorInvalidResourceHandle, cudaStreamSynchronize(s));
    EXPECT_CUDA(cudaErrorInvalidResourceHandle, cudaStreamDestroy(s));
    int x = 0;
    DeviceBuffer<int> d(1);
    EXPECT_CUDA(cudaErrorInvalidResourceHandle, cudaMemcpyAsync(d.get(), &x, sizeof x, cudaMemcpyHostToDevice, s));
    EXPECT_CUDA(cudaErrorInvalidResourceHandle, cudaMemsetAsync(d.get(), 0, sizeof x, s));
    // Not sticky: the next call works.
    EXPECT_CUDA_OK(cudaMemcpy(d.get(), &x, sizeof x, cudaMemcpyHostToDevice));
#else
    GTEST_SKIP() << "using a destroyed stream is undefined behaviour on a GPU";
#endif
}


// ---- events ---------------------------------------------------------------------------------

TEST(RuntimeEvents, RecordSynchronizeElapsed) {
    cudaEvent_t start, stop;
    ASSERT_CUDA_OK(cudaEventCreate(&start));
    ASSERT_CUDA_OK(cudaEventCreate(&stop));
    cudaStream_t s;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    DeviceBuffer<int> d(1 << 16);
    ASSERT_CUDA_OK(d.status());
    ASSERT_CUDA_OK(cudaEventRecord(start, s));
    iota<<<256, 256, 0, s>>>(d.get(), 1 << 16);
    ASSERT_CUDA_OK(cudaGetLastError());
    ASSERT_CUDA_OK(cudaEventRecord(stop, s));
    ASSERT_CUDA_OK(cudaEventSynchronize(stop));
    EXPECT_CUDA_OK(cudaEventQuery(stop));
    float ms = -1.0f;
    ASSERT_CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
    EXPECT_GE(ms, 0.0f);
    // An event recorded in the default stream, and a stream waiting on an event.
    ASSERT_CUDA_OK(cudaEventRecord(start));
    ASSERT_CUDA_OK(cudaStreamWaitEvent(s, start, 0));
    ASSERT_CUDA_OK(cudaEventSynchronize(start));
    EXPECT_CUDA_OK(cudaEventDestroy(start));
    EXPECT_CUDA_OK(cudaEventDestroy(stop));
    EXPECT_CUDA_OK(cudaStreamDestroy(s));
}

TEST(RuntimeEvents, UnrecordedAndUntimedEventsHaveNoElapsedTime) {
    cudaEvent_t recorded, never, untimed;
    ASSERT_CUDA_OK(cudaEventCreate(&recorded));
    ASSERT_CUDA_OK(cudaEventCreate(&never));
    ASSERT_CUDA_OK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
    ASSERT_CUDA_OK(cudaEventRecord(recorded));
    ASSERT_CUDA_OK(cudaEventRecord(untimed));
    ASSERT_CUDA_OK(cudaEventSynchronize(untimed));
    // CUDA: an event never recorded is complete for queries, but has no timestamp.
    EXPECT_CUDA_OK(cudaEventQuery(never));
    float ms = 0;
    {
        cusim_test::StderrCapture quiet;
        EXPECT_CUDA(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, recorded, never));
        EXPECT_CUDA(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, never, recorded));
        EXPECT_CUDA(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, recorded, untimed));
    }
    // These errors are not sticky.
    EXPECT_CUDA_OK(cudaEventElapsedTime(&ms, recorded, recorded));
    EXPECT_EQ(ms, 0.0f);
    EXPECT_CUDA_OK(cudaEventDestroy(recorded));
    EXPECT_CUDA_OK(cudaEventDestroy(never));
    EXPECT_CUDA_OK(cudaEventDestroy(untimed));
}

// ---- devices --------------------------------------------------------------------------------

TEST(RuntimeDevice, CountSetGet) {
    int count = 0;
    ASSERT_CUDA_OK(cudaGetDeviceCount(&count));
    ASSERT_GE(count, 1);
#ifdef CUSIM
    EXPECT_EQ(count, 1) << "cusim provides one virtual device";
#endif
    EXPECT_CUDA_OK(cudaSetDevice(0));
    {
        cusim_test::StderrCapture quiet;
        EXPECT_CUDA(cudaErrorInvalidDevice, cudaSetDevice(count));
        EXPECT_CUDA(cudaErrorInvalidDevice, cudaSetDevice(-1));
    }
    EXPECT_CUDA(cudaErrorInvalidDevice, cudaGetLastError());
    EXPECT_CUDA_OK(cudaGetLastError());  // read and cleared
    int device = -1;
    ASSERT_CUDA_OK(cudaGetDevice(&device));
    EXPECT_EQ(device, 0);
    EXPECT_CUDA_OK(cudaDeviceSynchronize());
}

TEST(RuntimeDevice, PropertiesOfTheVirtualDevice) {
    cudaDeviceProp p;
    ASSERT_CUDA_OK(cudaGetDeviceProperties(&p, 0));
    EXPECT_EQ(p.maxThreadsPerBlock, 1024);
    EXPECT_EQ(p.warpSize, 32);
    EXPECT_EQ(p.sharedMemPerBlock, size_t{48 * 1024});
    EXPECT_EQ(p.maxThreadsDim[0], 1024);
    EXPECT_EQ(p.maxThreadsDim[1], 1024);
    EXPECT_EQ(p.maxThreadsDim[2], 64);
    EXPECT_EQ(p.maxGridSize[0], 2147483647);
    EXPECT_EQ(p.maxGridSize[1], 65535);
    EXPECT_EQ(p.maxGridSize[2], 65535);
    EXPECT_GT(p.multiProcessorCount, 0);
    EXPECT_GT(p.totalGlobalMem, size_t{1} << 30);
    EXPECT_GT(std::strlen(p.name), 0u);
#ifdef CUSIM
    // cusim describes an sm_90 (H100-class) device.
    EXPECT_EQ(p.major, 9);
    EXPECT_EQ(p.minor, 0);
    EXPECT_EQ(p.sharedMemPerBlockOptin, size_t{232448});  // 227 KiB
#endif
    int v = 0;
    ASSERT_CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxThreadsPerBlock, 0));
    EXPECT_EQ(v, p.maxThreadsPerBlock);
    ASSERT_CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 0));
    EXPECT_EQ(v, 32);
    ASSERT_CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    EXPECT_EQ(static_cast<size_t>(v), p.sharedMemPerBlockOptin);
    ASSERT_CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0));
    EXPECT_EQ(v, p.major);
    ASSERT_CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
    EXPECT_EQ(v, p.multiProcessorCount);

    int count = 0;
    ASSERT_CUDA_OK(cudaGetDeviceCount(&count));
    cusim_test::StderrCapture quiet;
    EXPECT_CUDA(cudaErrorInvalidDevice, cudaGetDeviceProperties(&p, count));
}

// ---- kernel attributes: more than 48 KiB of dynamic shared memory ---------------------------

__device__ void fill_and_sum_shared(int* out, int words) {
    extern __shared__ int big[];
    for (int i = threadIdx.x; i < words; i += blockDim.x) big[i] = i ^ 0x5a5a;
    __syncthreads();
    if (threadIdx.x == 0) {
        long long s = 0;
        for (int i = 0; i < words; ++i) s += big[i];
        out[blockIdx.x] = static_cast<int>(s % 1000003);
    }
}
__global__ void big_shared_without_attribute(int* out, int words) { fill_and_sum_shared(out, words); }
__global__ void big_shared_with_attribute(int* out, int words) { fill_and_sum_shared(out, words); }

static int expected_shared_sum(int words) {
    long long s = 0;
    for (int i = 0; i < words; ++i) s += i ^ 0x5a5a;
    return static_cast<int>(s % 1000003);
}

TEST(RuntimeKernelAttributes, MaxDynamicSharedMemorySize) {
    constexpr int kBytes = 100 * 1024, kOptin = 232448;
    DeviceBuffer<int> out(4);
    ASSERT_CUDA_OK(out.status());

    // Over 48 KiB without the opt-in: the launch fails, and the error is not sticky.
    {
        cusim_test::StderrCapture quiet;
        big_shared_without_attribute<<<4, 256, kBytes>>>(out.get(), kBytes / 4);
        EXPECT_CUDA(cudaErrorInvalidValue, cudaGetLastError());
    }
    EXPECT_CUDA_OK(cudaDeviceSynchronize());

    // With the opt-in the same launch runs and the kernel can use all 100 KiB.
    ASSERT_CUDA_OK(cudaFuncSetAttribute(big_shared_with_attribute, cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes));
    ASSERT_CUDA_OK(out.fill_bytes(0));
    big_shared_with_attribute<<<4, 256, kBytes>>>(out.get(), kBytes / 4);
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    for (int v : download_ok(out)) EXPECT_EQ(v, expected_shared_sum(kBytes / 4));
    cudaFuncAttributes attr;
    ASSERT_CUDA_OK(cudaFuncGetAttributes(&attr, big_shared_with_attribute));
    EXPECT_EQ(attr.maxDynamicSharedSizeBytes, kBytes);

    // Still limited by the attribute's value.
    {
        cusim_test::StderrCapture quiet;
        big_shared_with_attribute<<<4, 256, kBytes + 4>>>(out.get(), kBytes / 4 + 1);
        EXPECT_CUDA(cudaErrorInvalidValue, cudaGetLastError());
    }
    // The opt-in maximum works; one byte more is rejected by cudaFuncSetAttribute.
    ASSERT_CUDA_OK(cudaFuncSetAttribute(big_shared_with_attribute, cudaFuncAttributeMaxDynamicSharedMemorySize, kOptin));
    big_shared_with_attribute<<<2, 128, kOptin>>>(out.get(), kOptin / 4);
    r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(out);
    ASSERT_EQ(h.size(), 4u);
    EXPECT_EQ(h[0], expected_shared_sum(kOptin / 4));
    EXPECT_EQ(h[1], expected_shared_sum(kOptin / 4));
    cusim_test::StderrCapture quiet;
    EXPECT_CUDA(cudaErrorInvalidValue,
                cudaFuncSetAttribute(big_shared_with_attribute, cudaFuncAttributeMaxDynamicSharedMemorySize, kOptin + 1));
}

// ---- last error -----------------------------------------------------------------------------

TEST(RuntimeErrors, GetLastErrorClearsPeekDoesNot) {
    DeviceBuffer<int> d(64);
    ASSERT_CUDA_OK(d.status());
    EXPECT_CUDA_OK(cudaPeekAtLastError());
    {
        cusim_test::StderrCapture quiet;
        iota<<<1, 1025>>>(d.get(), 64);  // too many threads: a launch configuration error
    }
    EXPECT_CUDA(cudaErrorInvalidValue, cudaPeekAtLastError());
    EXPECT_CUDA(cudaErrorInvalidValue, cudaPeekAtLastError());
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGetLastError());
    EXPECT_CUDA_OK(cudaGetLastError());
    EXPECT_CUDA_OK(cudaPeekAtLastError());
    // The failed launch did not poison the context.
    iota<<<1, 64>>>(d.get(), 64);
    auto r = launch_result();
    EXPECT_CUDA_OK(r.launch);
    EXPECT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 64u);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(h[i], i);
}

TEST(RuntimeErrors, LastErrorIsPerHostThread) {
    {
        cusim_test::StderrCapture quiet;
        EXPECT_CUDA(cudaErrorInvalidDevice, cudaSetDevice(-1));
    }
    cudaError_t seen_elsewhere = cudaErrorUnknown;
    std::thread([&] { seen_elsewhere = cudaGetLastError(); }).join();
    EXPECT_CUDA_OK(seen_elsewhere);
    EXPECT_CUDA(cudaErrorInvalidDevice, cudaGetLastError());
}

TEST(RuntimeErrors, ErrorNamesAndStringsAreCudas) {
    // Names and strings as CUDA 13's runtime returns them.
    struct Expect {
        cudaError_t code;
        const char* name;
        const char* text;
    };
    const Expect table[] = {
        {cudaSuccess, "cudaSuccess", "no error"},
        {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
        {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
        {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
        {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
        {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
        {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
        {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
        {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
        {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
        {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
        {cudaErrorHardwareStackError, "cudaErrorHardwareStackError", "hardware stack error"},
        {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
        {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
        {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
        {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
        {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
        {cudaErrorNotYetImplemented, "cudaErrorNotYetImplemented", "feature not yet implemented"},
        {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
        {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
    };
    for (const Expect& e : table) {
        EXPECT_STREQ(cudaGetErrorName(e.code), e.name) << "code " << static_cast<int>(e.code);
        EXPECT_STREQ(cudaGetErrorString(e.code), e.text) << e.name;
    }
    EXPECT_EQ(static_cast<int>(cudaErrorInvalidConfiguration), 9);
    EXPECT_EQ(static_cast<int>(cudaErrorIllegalAddress), 700);
    EXPECT_EQ(static_cast<int>(cudaErrorLaunchFailure), 719);
}

// ---- cusim/checker.h: device memory held, launch records, injected failures (cusim only) -------

#ifdef CUSIM
#include <cusim/checker.h>

// Work on a non-blocking stream is unsynchronized until something waits for it (what a GPU would
// still be running after the call that enqueued it): cusim::checker::unsynchronized_work().
TEST(RuntimeStreams, UnsynchronizedWorkOnNonBlockingStreams) {
    namespace ck = cusim::checker;
    ck::clear_unsynchronized_work();
    DeviceBuffer<int> d(64);
    cudaStream_t side, ordered;
    ASSERT_CUDA_OK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    ASSERT_CUDA_OK(cudaStreamCreate(&ordered));
    iota<<<1, 64, 0, ordered>>>(d.get(), 64);  // a blocking stream: the default stream waits for it
    EXPECT_TRUE(ck::unsynchronized_work().empty());
    iota<<<1, 64, 0, side>>>(d.get(), 64);
    ASSERT_CUDA_OK(cudaMemsetAsync(d.get(), 0, 4, side));
    std::vector<ck::UnsynchronizedWork> w = ck::unsynchronized_work();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].what, "the launch of iota");
    EXPECT_NE(w[0].site.find("runtime_api_test.cu:"), std::string::npos) << w[0].site;
    EXPECT_EQ(w[0].operations, 2u);
    ASSERT_CUDA_OK(cudaStreamSynchronize(side));
    EXPECT_TRUE(ck::unsynchronized_work().empty());
    // An event recorded after the work, synchronized: waited for. One recorded before: not.
    cudaEvent_t before, after;
    ASSERT_CUDA_OK(cudaEventCreate(&before));
    ASSERT_CUDA_OK(cudaEventCreate(&after));
    ASSERT_CUDA_OK(cudaEventRecord(before, side));
    iota<<<1, 64, 0, side>>>(d.get(), 64);
    ASSERT_CUDA_OK(cudaEventSynchronize(before));
    EXPECT_EQ(ck::unsynchronized_work().size(), 1u);
    ASSERT_CUDA_OK(cudaEventRecord(after, side));
    ASSERT_CUDA_OK(cudaStreamWaitEvent(side, after, 0));  // a non-blocking stream waiting orders nothing
    EXPECT_EQ(ck::unsynchronized_work().size(), 1u);
    ASSERT_CUDA_OK(cudaStreamWaitEvent(nullptr, after, 0));  // the default stream waits for it
    EXPECT_TRUE(ck::unsynchronized_work().empty());
    // A destroyed stream's work still runs on a GPU: reported until the device is synchronized.
    iota<<<1, 64, 0, side>>>(d.get(), 64);
    ASSERT_CUDA_OK(cudaStreamDestroy(side));
    EXPECT_EQ(ck::unsynchronized_work().size(), 1u);
    ASSERT_CUDA_OK(cudaDeviceSynchronize());
    EXPECT_TRUE(ck::unsynchronized_work().empty());
    EXPECT_CUDA_OK(cudaEventDestroy(before));
    EXPECT_CUDA_OK(cudaEventDestroy(after));
    EXPECT_CUDA_OK(cudaStreamDestroy(ordered));
    // The threads that ran those blocks are cusim's own.
    EXPECT_FALSE(ck::own_threads().empty());
}

namespace checker = cusim::checker;

TEST(CusimChecker, DeviceMemoryCountsLiveDeviceAllocations) {
    const checker::DeviceMemory before = checker::device_memory();
    void* pinned = nullptr;
    ASSERT_CUDA_OK(cudaMallocHost(&pinned, 1000));  // pinned host memory is not device memory
    {
        DeviceBuffer<float> a(10), b(33);
        ASSERT_CUDA_OK(a.status());
        ASSERT_CUDA_OK(b.status());
        const checker::DeviceMemory during = checker::device_memory();
        EXPECT_EQ(during.allocations, before.allocations + 2);
        EXPECT_EQ(during.bytes, before.bytes + 43 * sizeof(float));
    }
    EXPECT_CUDA_OK(cudaFreeHost(pinned));
    EXPECT_TRUE(checker::device_memory() == before);
}

TEST(CusimChecker, LaunchesRecordEachConfigurationThatRan) {
    DeviceBuffer<int> out(1000);
    ASSERT_CUDA_OK(out.status());
    checker::clear_launches();
    for (int i = 0; i < 2; ++i) iota<<<4, 256>>>(out.get(), 1000);  // @iota-launch
    times_two_plus_one<<<dim3(8), dim3(125)>>>(out.get(), 1000);
    iota<<<4, 0>>>(out.get(), 1000);  // rejected by the launch: not recorded
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGetLastError());
    const std::vector<checker::LaunchRecord> launches = checker::launches();
    ASSERT_EQ(launches.size(), 2u);
    EXPECT_EQ(launches[0].kernel, "iota");
    EXPECT_EQ(launches[0].launches, 2u);
    EXPECT_EQ(launches[0].grid[0], 4u);
    EXPECT_EQ(launches[0].threads_per_block(), 256u);
    EXPECT_EQ(launches[0].line, SOURCE_LINE("iota-launch"));
    EXPECT_NE(launches[0].file.find("runtime_api_test.cu"), std::string::npos) << launches[0].file;
    EXPECT_EQ(launches[1].kernel, "times_two_plus_one");
    EXPECT_EQ(launches[1].block[0], 125u);
    EXPECT_EQ(launches[1].launches, 1u);
    checker::clear_launches();
    EXPECT_TRUE(checker::launches().empty());
}

TEST(CusimChecker, InjectedFailureFiresOnceOnTheNthCall) {
    const std::vector<int> host(10, 1);
    DeviceBuffer<int> d(10);
    ASSERT_CUDA_OK(d.status());
    ASSERT_TRUE(checker::inject_failure("cudaMemcpy", 2, cudaErrorLaunchFailure));
    EXPECT_CUDA_OK(d.upload(host));
    EXPECT_CUDA(cudaErrorLaunchFailure, d.upload(host));
    EXPECT_CUDA(cudaErrorLaunchFailure, cudaGetLastError());  // reported like any error
    EXPECT_CUDA_OK(d.upload(host));                           // once, and never sticky
    const checker::InjectionOutcome outcome = checker::end_injected_failures();
    EXPECT_EQ(outcome.not_fired, 0u);
    EXPECT_EQ(outcome.work_after_failure, 1u);  // the third copy
    EXPECT_NE(outcome.first_work_after_failure.find("cudaMemcpy"), std::string::npos);
}

TEST(CusimChecker, InjectedAllocationFailureReturnsNull) {
    const checker::DeviceMemory before = checker::device_memory();
    ASSERT_TRUE(checker::inject_failure("cudaMalloc", 1, cudaErrorMemoryAllocation));
    int* p = reinterpret_cast<int*>(0x1000);
    EXPECT_CUDA(cudaErrorMemoryAllocation, cudaMalloc(&p, 100));
    EXPECT_EQ(p, nullptr);
    EXPECT_TRUE(checker::device_memory() == before);
    const checker::InjectionOutcome outcome = checker::end_injected_failures();
    EXPECT_EQ(outcome.not_fired, 0u);
    EXPECT_EQ(outcome.work_after_failure, 0u);
}

TEST(CusimChecker, UnfiredInjectionsAreCancelledAndLaunchesCountAsWork) {
    ASSERT_TRUE(checker::inject_failure("cudaMalloc", 3, cudaErrorMemoryAllocation));
    DeviceBuffer<int> a(10);
    ASSERT_CUDA_OK(a.status());
    EXPECT_EQ(checker::end_injected_failures().not_fired, 1u);  // only one cudaMalloc came
    DeviceBuffer<int> b(10), c(10);  // the injection is gone
    ASSERT_CUDA_OK(c.status());

    ASSERT_TRUE(checker::inject_failure("cudaMemset", 1, cudaErrorInvalidValue));
    EXPECT_CUDA(cudaErrorInvalidValue, a.fill_bytes(0));
    (void)cudaGetLastError();
    EXPECT_CUDA_OK(cudaDeviceSynchronize());  // waiting is not work
    iota<<<1, 32>>>(a.get(), 10);             // a launch after the failure is
    const checker::InjectionOutcome outcome = checker::end_injected_failures();
    EXPECT_EQ(outcome.work_after_failure, 1u);
    EXPECT_NE(outcome.first_work_after_failure.find("launch of iota"), std::string::npos)
        << outcome.first_work_after_failure;
}

TEST(CusimChecker, InjectedLaunchFailureSkipsTheKernelOnce) {
    DeviceBuffer<int> out(64);
    ASSERT_CUDA_OK(out.status());
    ASSERT_CUDA_OK(out.fill_bytes(0));
    ASSERT_TRUE(checker::inject_failure(checker::kKernelLaunch, 2, cudaErrorLaunchOutOfResources));
    iota<<<1, 64>>>(out.get(), 64);  // the 1st launch runs
    EXPECT_CUDA_OK(cudaGetLastError());
    times_two_plus_one<<<1, 64>>>(out.get(), 64);  // the 2nd does not
    EXPECT_CUDA(cudaErrorLaunchOutOfResources, cudaPeekAtLastError());
    EXPECT_CUDA(cudaErrorLaunchOutOfResources, cudaGetLastError());
    EXPECT_CUDA_OK(cudaGetLastError());  // not sticky
    EXPECT_CUDA_OK(cudaDeviceSynchronize());  // waiting is not work
    checker::InjectionOutcome outcome = checker::end_injected_failures();
    EXPECT_EQ(outcome.not_fired, 0u);
    EXPECT_EQ(outcome.work_after_failure, 0u);
    const std::vector<int> host = download_ok(out);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(host[i], i) << "the failed launch ran at element " << i;

    ASSERT_TRUE(checker::inject_failure(checker::kKernelLaunch, 1, cudaErrorLaunchOutOfResources));
    times_two_plus_one<<<1, 64>>>(out.get(), 64);
    iota<<<1, 64>>>(out.get(), 64);  // a launch after the failure is work
    outcome = checker::end_injected_failures();
    EXPECT_EQ(outcome.work_after_failure, 1u);
    EXPECT_NE(outcome.first_work_after_failure.find("launch of iota"), std::string::npos)
        << outcome.first_work_after_failure;
    EXPECT_CUDA(cudaErrorLaunchOutOfResources, cudaGetLastError());
    iota<<<1, 64>>>(out.get(), 64);  // the injection is gone
    EXPECT_CUDA_OK(cudaGetLastError());
}

TEST(CusimChecker, InjectedFuncSetAttributeFailure) {
    ASSERT_TRUE(checker::inject_failure("cudaFuncSetAttribute", 1, cudaErrorInvalidValue));
    EXPECT_CUDA(cudaErrorInvalidValue,
                cudaFuncSetAttribute(iota, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
    EXPECT_CUDA(cudaErrorInvalidValue, cudaGetLastError());
    const checker::InjectionOutcome outcome = checker::end_injected_failures();
    EXPECT_EQ(outcome.not_fired, 0u);
    EXPECT_EQ(outcome.work_after_failure, 0u);
    EXPECT_CUDA_OK(cudaFuncSetAttribute(iota, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
    EXPECT_CUDA_OK(cudaFuncSetAttribute(iota, cudaFuncAttributeMaxDynamicSharedMemorySize, 0));
}

TEST(CusimChecker, InjectionRefusesOtherFunctionsNoCallAndSuccess) {
    EXPECT_FALSE(checker::inject_failure("cudaFree", 1, cudaErrorInvalidValue));
    EXPECT_FALSE(checker::inject_failure("cudaMalloc", 0, cudaErrorMemoryAllocation));
    EXPECT_FALSE(checker::inject_failure("cudaMalloc", 1, cudaSuccess));
    EXPECT_EQ(checker::end_injected_failures().not_fired, 0u);
}
#endif

// Persisting L2 and stream attributes: cusim has no L2 for the hints to change, so what these
// check is CUDA's argument checking and that what was set is what is read back.
TEST(RuntimeL2, TheDeviceReportsASetAsideAndAWindowLimit) {
    cudaDeviceProp p;
    ASSERT_CUDA_OK(cudaGetDeviceProperties(&p, 0));
    EXPECT_GT(p.persistingL2CacheMaxSize, 0);
    EXPECT_LE(p.persistingL2CacheMaxSize, p.l2CacheSize);
    EXPECT_GT(p.accessPolicyMaxWindowSize, 0);
}

#ifdef CUSIM
TEST(RuntimeL2, TheLimitIsClampedToTheSetAsideMaximum) {
    cudaDeviceProp p;
    ASSERT_CUDA_OK(cudaGetDeviceProperties(&p, 0));
    size_t limit = 1;
    ASSERT_CUDA_OK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
    EXPECT_EQ(0u, limit);
    ASSERT_CUDA_OK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t(3) << 20));
    ASSERT_CUDA_OK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
    EXPECT_EQ(size_t(3) << 20, limit);
    // A hint that CUDA "can ignore or clamp": cusim clamps it.
    ASSERT_CUDA_OK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t(p.l2CacheSize) * 2));
    ASSERT_CUDA_OK(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
    EXPECT_EQ(size_t(p.persistingL2CacheMaxSize), limit);
    ASSERT_CUDA_OK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
}

TEST(RuntimeL2, StreamAttributesAreCheckedAndKept) {
    cudaDeviceProp p;
    ASSERT_CUDA_OK(cudaGetDeviceProperties(&p, 0));
    cudaStream_t s;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    cudaStreamAttrValue v = {};
    v.accessPolicyWindow.num_bytes = 256;
    v.accessPolicyWindow.hitRatio = 1.0f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    auto set = [&](const cudaStreamAttrValue& value, cudaStreamAttrID attr = cudaStreamAttributeAccessPolicyWindow) {
        cusim_test::StderrCapture capture;
        const cudaError_t e = cudaStreamSetAttribute(s, attr, &value);
        (void)cudaGetLastError();
        return e;
    };
    EXPECT_CUDA_OK(set(v));
    cudaStreamAttrValue bad = v;
    bad.accessPolicyWindow.hitRatio = -0.25f;
    EXPECT_CUDA(cudaErrorInvalidValue, set(bad));
    bad.accessPolicyWindow.hitRatio = std::nanf("");
    EXPECT_CUDA(cudaErrorInvalidValue, set(bad));
    bad = v;
    bad.accessPolicyWindow.num_bytes = size_t(p.accessPolicyMaxWindowSize) + 1;
    EXPECT_CUDA(cudaErrorInvalidValue, set(bad));
    bad = v;
    bad.accessPolicyWindow.hitProp = cudaAccessProperty(3);
    EXPECT_CUDA(cudaErrorInvalidValue, set(bad));
    cudaStreamAttrValue policy = {};
    EXPECT_CUDA(cudaErrorInvalidValue, set(policy, cudaStreamAttributeSynchronizationPolicy));  // 0 is no policy
    policy.syncPolicy = cudaSyncPolicyBlockingSync;
    EXPECT_CUDA_OK(set(policy, cudaStreamAttributeSynchronizationPolicy));
    cudaStreamAttrValue cooperative = {};
    cooperative.cooperative = 1;
    EXPECT_CUDA(cudaErrorInvalidValue, set(cooperative, cudaLaunchAttributeCooperative));  // a launch attribute

    cudaStreamAttrValue got = {};
    ASSERT_CUDA_OK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &got));
    EXPECT_EQ(256u, got.accessPolicyWindow.num_bytes);
    EXPECT_EQ(1.0f, got.accessPolicyWindow.hitRatio);
    EXPECT_EQ(cudaAccessPropertyPersisting, got.accessPolicyWindow.hitProp);
    ASSERT_CUDA_OK(cudaStreamGetAttribute(s, cudaStreamAttributeSynchronizationPolicy, &got));
    EXPECT_EQ(cudaSyncPolicyBlockingSync, got.syncPolicy);
    // The priority attribute is the stream's priority.
    int least = 0, greatest = 0;
    ASSERT_CUDA_OK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStreamAttrValue prio = {};
    prio.priority = greatest;
    EXPECT_CUDA_OK(set(prio, cudaStreamAttributePriority));
    int q = 0;
    ASSERT_CUDA_OK(cudaStreamGetPriority(s, &q));
    EXPECT_EQ(greatest, q);

    cusim_test::StderrCapture capture;
    EXPECT_CUDA(cudaErrorInvalidValue, cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, nullptr));
    EXPECT_CUDA(cudaErrorInvalidValue, cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, nullptr));
    ASSERT_CUDA_OK(cudaStreamDestroy(s));
    EXPECT_CUDA(cudaErrorInvalidResourceHandle, cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &got));
    (void)cudaGetLastError();
}
#endif
