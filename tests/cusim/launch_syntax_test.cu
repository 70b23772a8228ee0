// Kernel launch syntax. Every launch below is plain CUDA that nvcc compiles as written; on the
// sim backend cusim's source rewriter turns each one into a runtime call. Each test checks
// what the kernel actually received and computed, not only that the launch returned.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cusim_test.h"
#ifdef CUSIM
#include <cusim/checker.h>
#endif

using cusim_test::DeviceBuffer;
using cusim_test::launch_result;

// ---- kernels --------------------------------------------------------------------------------

__global__ void fill_value(int* out, int value) { out[blockIdx.x * blockDim.x + threadIdx.x] = value; }

template <class T>
__global__ void scale(T* data, T factor) {
    data[threadIdx.x] *= factor;
}

template <int N>
struct Tile {
    static constexpr int size = N;
};
template <class A, class B>
struct Product {
    static constexpr int size = A::size * B::size;
};

template <class T, class TileT>
__global__ void tile_fill(T* out) {
    out[threadIdx.x] = static_cast<T>(TileT::size * 100 + static_cast<int>(threadIdx.x));
}

__global__ void overloaded(int* out, int v) { out[threadIdx.x] = v + 1; }
__global__ void overloaded(float* out, float v) { out[threadIdx.x] = v * 2.0f; }

namespace outer {
__global__ void which(int* out) { *out = 1; }
namespace inner {
__global__ void which(int* out) { *out = 2; }
}  // namespace inner
// An unqualified launch inside the namespace finds outer::which, as C++ lookup does.
inline void launch_unqualified(int* out) { which<<<1, 1>>>(out); }
}  // namespace outer
__global__ void which(int* out) { *out = 3; }

__global__ void reverse_in_dynamic_shared(int* data) {
    extern __shared__ int buf[];
    buf[threadIdx.x] = data[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    data[blockIdx.x * blockDim.x + threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}

extern __shared__ float file_scope_dynamic[];

__global__ void rotate_in_file_scope_dynamic(float* out) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    file_scope_dynamic[threadIdx.x] = static_cast<float>(blockIdx.x * 1000 + threadIdx.x);
    __syncthreads();
    out[i] = file_scope_dynamic[(threadIdx.x + 1) % blockDim.x];
}

struct Params {
    int a;
    double b;
    char c;
};
enum class Mode : int { Fast = 3, Exact = 7 };

struct Received {
    double from_float;
    double from_int;
    size_t from_small_int;
    size_t from_negative_int;
    long long from_short;
    unsigned from_negative;
    float from_double;
    int params_a;
    double params_b;
    char params_c;
    int mode;
    int via_const_pointer;
};

__global__ void record_args(double from_float, double from_int, size_t from_small_int, size_t from_negative_int,
                            long long from_short, unsigned from_negative, float from_double, Params p, Mode m,
                            const int* cp, Received* out) {
    out->from_float = from_float;
    out->from_int = from_int;
    out->from_small_int = from_small_int;
    out->from_negative_int = from_negative_int;
    out->from_short = from_short;
    out->from_negative = from_negative;
    out->from_double = from_double;
    out->params_a = p.a;
    out->params_b = p.b;
    out->params_c = p.c;
    out->mode = static_cast<int>(m);
    out->via_const_pointer = *cp;
}

// Checks its size_t parameter against a value computed in the kernel from an unconverted copy.
__global__ void size_t_param(size_t n, long long expected, int* ok) { *ok = n == static_cast<size_t>(expected); }

__noinline__ __device__ int collatz_steps(int x) {
    int steps = 0;
    while (x != 1) {
        x = (x % 2) ? 3 * x + 1 : x / 2;
        ++steps;
    }
    return steps;
}
__global__ void noinline_user(int* out) { out[threadIdx.x] = collatz_steps(static_cast<int>(threadIdx.x) + 1); }

__forceinline__ __device__ int square(int x) { return x * x; }
__global__ void __launch_bounds__(128) bounded_squares(int* out) { out[threadIdx.x] = square(threadIdx.x); }
__global__ void __launch_bounds__(256, 2) bounded_two(int* out) { out[threadIdx.x] = 2 * static_cast<int>(threadIdx.x); }

__device__ int no_args_flag;
__global__ void no_args() { no_args_flag = 1234; }

template <class T>
cudaError_t scale_on_device(T* data, T factor, int n) {
    scale<T><<<1, n>>>(data, factor);
    return cudaGetLastError();
}

static int grid_for(int* calls) {
    ++*calls;
    return 2;
}

// ---- tests ----------------------------------------------------------------------------------

template <class T>
static std::vector<T> download_ok(const DeviceBuffer<T>& d) {
    cudaError_t err = cudaSuccess;
    std::vector<T> h = d.download(&err);
    EXPECT_CUDA_OK(err);
    return h;
}

TEST(LaunchSyntax, MultiLineLaunchWithComments) {
    DeviceBuffer<int> d(64);
    ASSERT_CUDA_OK(d.status());
    fill_value<<<
        dim3(2),  // two blocks
        dim3(32)  /* of one warp each */
        >>>(d.get(),
            7);
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 64u);
    for (int v : h) EXPECT_EQ(v, 7);
}

TEST(LaunchSyntax, SpacingAndConfigExpressions) {
    DeviceBuffer<int> d(64);
    ASSERT_CUDA_OK(d.status());
    const int n = 64;
    fill_value <<< 1 , 32 >>> ( d.get() , 1 ) ;
    ASSERT_CUDA_OK(cudaGetLastError());
    // Template arguments, commas and comparisons inside the configuration.
    fill_value<<<std::max<int>(1, n / 32), std::min(32, n)>>>(d.get(), 2);
    ASSERT_CUDA_OK(cudaGetLastError());
    auto h = download_ok(d);
    ASSERT_EQ(h.size(), 64u);
    for (int v : h) EXPECT_EQ(v, 2);
    fill_value<<<n < 64 ? 1 : 2, 32>>>(d.get(), 3);
    ASSERT_CUDA_OK(cudaGetLastError());
    h = download_ok(d);
    ASSERT_EQ(h.size(), 64u);
    for (int v : h) EXPECT_EQ(v, 3);
}

TEST(LaunchSyntax, ConfigAndArgumentsAreEvaluatedOnce) {
    DeviceBuffer<int> d(64);
    ASSERT_CUDA_OK(d.status());
    int calls = 0, counter = 10;
    fill_value<<<grid_for(&calls), 32>>>(d.get(), ++counter);
    ASSERT_CUDA_OK(cudaGetLastError());
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(counter, 11);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 64u);
    for (int v : h) EXPECT_EQ(v, 11);
}

TEST(LaunchSyntax, TemplateKernelExplicitAndDeduced) {
    DeviceBuffer<float> f(32);
    DeviceBuffer<double> g(32);
    ASSERT_CUDA_OK(f.status());
    ASSERT_CUDA_OK(g.status());
    std::vector<float> hf(32);
    std::vector<double> hg(32);
    for (int i = 0; i < 32; ++i) hf[i] = hg[i] = i;
    ASSERT_CUDA_OK(f.upload(hf));
    ASSERT_CUDA_OK(g.upload(hg));

    scale<float><<<1, 32>>>(f.get(), 2.0f);  // explicit
    ASSERT_CUDA_OK(cudaGetLastError());
    scale<<<1, 32>>>(g.get(), 3.0);  // deduced: T = double
    ASSERT_CUDA_OK(cudaGetLastError());
    scale<double><<<1, 32>>>(g.get(), 2);  // explicit, the int converts to double
    ASSERT_CUDA_OK(cudaGetLastError());
    ASSERT_CUDA_OK(scale_on_device<float>(f.get(), 0.5f, 32));  // launch inside a template

    hf = download_ok(f);
    hg = download_ok(g);
    ASSERT_EQ(hf.size(), 32u);
    ASSERT_EQ(hg.size(), 32u);
    for (int i = 0; i < 32; ++i) {
        EXPECT_EQ(hf[i], static_cast<float>(i)) << "i=" << i;
        EXPECT_EQ(hg[i], 6.0 * i) << "i=" << i;
    }
}

TEST(LaunchSyntax, NestedTemplateArguments) {
    DeviceBuffer<int> a(8);
    DeviceBuffer<long long> b(8);
    DeviceBuffer<int> c(8);
    ASSERT_CUDA_OK(a.status());
    ASSERT_CUDA_OK(b.status());
    ASSERT_CUDA_OK(c.status());
    tile_fill<int, Tile<4>><<<1, 8>>>(a.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    tile_fill<long long, Product<Tile<2>, Tile<3>>><<<1, 8>>>(b.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    tile_fill<int, Tile<(3 > 2) ? 5 : 7>><<<1, 8>>>(c.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    const auto ha = download_ok(a);
    const auto hb = download_ok(b);
    const auto hc = download_ok(c);
    ASSERT_EQ(ha.size(), 8u);
    ASSERT_EQ(hb.size(), 8u);
    ASSERT_EQ(hc.size(), 8u);
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(ha[i], 400 + i);
        EXPECT_EQ(hb[i], 600 + i);
        EXPECT_EQ(hc[i], 500 + i);
    }
}

TEST(LaunchSyntax, OverloadedKernelsResolveByArgumentType) {
    DeviceBuffer<int> i(4);
    DeviceBuffer<float> f(4);
    ASSERT_CUDA_OK(i.status());
    ASSERT_CUDA_OK(f.status());
    overloaded<<<1, 4>>>(i.get(), 41);
    ASSERT_CUDA_OK(cudaGetLastError());
    overloaded<<<1, 4>>>(f.get(), 1.25f);
    ASSERT_CUDA_OK(cudaGetLastError());
    for (int v : download_ok(i)) EXPECT_EQ(v, 42);
    for (float v : download_ok(f)) EXPECT_EQ(v, 2.5f);
}

TEST(LaunchSyntax, KernelsInNamespaces) {
    DeviceBuffer<int> d(4);
    ASSERT_CUDA_OK(d.status());
    auto one = [&]() {
        auto h = download_ok(d);
        return h.empty() ? -1 : h[0];
    };
    outer::which<<<1, 1>>>(d.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    EXPECT_EQ(one(), 1);
    outer::inner::which<<<1, 1>>>(d.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    EXPECT_EQ(one(), 2);
    ::which<<<1, 1>>>(d.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    EXPECT_EQ(one(), 3);
    outer::launch_unqualified(d.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    EXPECT_EQ(one(), 1);
}

TEST(LaunchSyntax, ThreeArgumentConfigGivesDynamicSharedMemory) {
    constexpr int kThreads = 64, kBlocks = 4;
    DeviceBuffer<int> d(kThreads * kBlocks);
    ASSERT_CUDA_OK(d.status());
    std::vector<int> h(kThreads * kBlocks);
    for (int i = 0; i < kThreads * kBlocks; ++i) h[i] = i;
    ASSERT_CUDA_OK(d.upload(h));
    reverse_in_dynamic_shared<<<kBlocks, kThreads, kThreads * sizeof(int)>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    h = download_ok(d);
    ASSERT_EQ(h.size(), size_t(kThreads * kBlocks));
    for (int b = 0; b < kBlocks; ++b)
        for (int t = 0; t < kThreads; ++t) EXPECT_EQ(h[b * kThreads + t], b * kThreads + (kThreads - 1 - t));
}

TEST(LaunchSyntax, FourArgumentConfigRunsInTheStream) {
    constexpr int kThreads = 32;
    DeviceBuffer<int> d(kThreads);
    ASSERT_CUDA_OK(d.status());
    cudaStream_t stream;
    ASSERT_CUDA_OK(cudaStreamCreate(&stream));
    fill_value<<<1, kThreads, 0, stream>>>(d.get(), 5);
    ASSERT_CUDA_OK(cudaGetLastError());
    std::vector<int> ramp(kThreads);
    for (int i = 0; i < kThreads; ++i) ramp[i] = i;
    ASSERT_CUDA_OK(cudaMemcpyAsync(d.get(), ramp.data(), d.bytes(), cudaMemcpyHostToDevice, stream));
    reverse_in_dynamic_shared<<<1, kThreads, kThreads * sizeof(int), stream>>>(d.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    ASSERT_CUDA_OK(cudaStreamSynchronize(stream));
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), size_t(kThreads));
    for (int i = 0; i < kThreads; ++i) EXPECT_EQ(h[i], kThreads - 1 - i);
    EXPECT_CUDA_OK(cudaStreamDestroy(stream));
}

TEST(LaunchSyntax, FileScopeExternSharedIsPerBlock) {
    constexpr int kThreads = 96, kBlocks = 16;
    DeviceBuffer<float> d(kThreads * kBlocks);
    ASSERT_CUDA_OK(d.status());
    rotate_in_file_scope_dynamic<<<kBlocks, kThreads, kThreads * sizeof(float)>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), size_t(kThreads * kBlocks));
    for (int b = 0; b < kBlocks; ++b)
        for (int t = 0; t < kThreads; ++t)
            EXPECT_EQ(h[b * kThreads + t], static_cast<float>(b * 1000 + (t + 1) % kThreads)) << "block " << b;
}

TEST(LaunchSyntax, ArgumentsConvertAsInCuda) {
    DeviceBuffer<Received> out(1);
    DeviceBuffer<int> value(1);
    ASSERT_CUDA_OK(out.status());
    ASSERT_CUDA_OK(value.status());
    ASSERT_CUDA_OK(value.upload({77}));
    const float f = 0.1f;
    int small = 42, negative = -1;  // not constants: the conversion is what is under test
    const short sh = -300;
    const double third = 1.0 / 3.0;
    int* mutable_pointer = value.get();  // int* -> const int*
    record_args<<<1, 1>>>(f, small, small, negative, sh, negative, third, Params{5, 2.5, 'q'}, Mode::Exact,
                          mutable_pointer, out.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(out);
    ASSERT_EQ(h.size(), 1u);
    const Received& got = h[0];
    // float -> double keeps the float's value (0.1f is not 0.1).
    EXPECT_EQ(got.from_float, static_cast<double>(0.1f));
    EXPECT_NE(got.from_float, 0.1);
    EXPECT_EQ(got.from_int, 42.0);
    EXPECT_EQ(got.from_small_int, size_t{42});
    EXPECT_EQ(got.from_negative_int, SIZE_MAX);  // int -1 -> size_t wraps, as in C++
    EXPECT_EQ(got.from_short, -300);
    EXPECT_EQ(got.from_negative, UINT_MAX);
    EXPECT_EQ(got.from_double, static_cast<float>(1.0 / 3.0));
    EXPECT_EQ(got.params_a, 5);
    EXPECT_EQ(got.params_b, 2.5);
    EXPECT_EQ(got.params_c, 'q');
    EXPECT_EQ(got.mode, 7);
    EXPECT_EQ(got.via_const_pointer, 77);
}

TEST(LaunchSyntax, IntToSizeTCheckedInsideTheKernel) {
    DeviceBuffer<int> ok(1);
    ASSERT_CUDA_OK(ok.status());
    const int n = 1 << 20;
    size_t_param<<<1, 1>>>(n, static_cast<long long>(n), ok.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    auto h = download_ok(ok);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0], 1);
    const unsigned u = 4000000000u;  // unsigned -> size_t keeps the value (no sign extension)
    size_t_param<<<1, 1>>>(u, 4000000000LL, ok.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    h = download_ok(ok);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0], 1);
}

TEST(LaunchSyntax, NoinlineForceinlineAndLaunchBounds) {
    DeviceBuffer<int> d(128);
    ASSERT_CUDA_OK(d.status());
    noinline_user<<<1, 27>>>(d.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    auto h = download_ok(d);
    ASSERT_EQ(h.size(), 128u);
    for (int i = 0; i < 27; ++i) {
        int x = i + 1, steps = 0;
        for (; x != 1; ++steps) x = (x % 2) ? 3 * x + 1 : x / 2;
        EXPECT_EQ(h[i], steps) << "collatz steps of " << i + 1;
    }

    bounded_squares<<<1, 128>>>(d.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    h = download_ok(d);
    ASSERT_EQ(h.size(), 128u);
    for (int i = 0; i < 128; ++i) EXPECT_EQ(h[i], i * i);
    bounded_two<<<1, 128>>>(d.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    h = download_ok(d);
    ASSERT_EQ(h.size(), 128u);
    for (int i = 0; i < 128; ++i) EXPECT_EQ(h[i], 2 * i);
}

TEST(LaunchSyntax, ZeroArgumentKernelWritesDeviceVariable) {
    const int zero = 0;
    ASSERT_CUDA_OK(cudaMemcpyToSymbol(no_args_flag, &zero, sizeof(int)));
    no_args<<<1, 1>>>();
    ASSERT_CUDA_OK(cudaGetLastError());
    int got = 0;
    ASSERT_CUDA_OK(cudaMemcpyFromSymbol(&got, no_args_flag, sizeof(int)));
    EXPECT_EQ(got, 1234);
}

// NVIDIA's samples pass the kernel as (void *)kernel and its arguments as an array of pointers.
TEST(LaunchSyntax, RuntimeApiLaunchThroughVoidPointer) {
    DeviceBuffer<int> d(64);
    ASSERT_CUDA_OK(d.status());
    int* ptr = d.get();
    int value = 21;
    void* args[] = {&ptr, &value};
    ASSERT_CUDA_OK(cudaLaunchKernel((void*)fill_value, dim3(2), dim3(32), args, 0, 0));
    for (int v : download_ok(d)) EXPECT_EQ(v, 21);
    value = 22;
    ASSERT_CUDA_OK(cudaLaunchCooperativeKernel((const void*)&fill_value, dim3(1), dim3(64), args, 0, NULL));
    for (int v : download_ok(d)) EXPECT_EQ(v, 22);
    // A template specialization, cast with reinterpret_cast, launched in a stream.
    int factor = 3;
    void* scale_args[] = {&ptr, &factor};
    cudaStream_t s;
    ASSERT_CUDA_OK(cudaStreamCreate(&s));
    ASSERT_CUDA_OK(cudaLaunchKernel(reinterpret_cast<const void*>(scale<int>), dim3(1), dim3(64), scale_args, 0, s));
    ASSERT_CUDA_OK(cudaStreamSynchronize(s));
    EXPECT_CUDA_OK(cudaStreamDestroy(s));
    for (int v : download_ok(d)) EXPECT_EQ(v, 66);
    // The pointer kept in a variable; a kernel in a namespace.
    void* fn = (void*)outer::inner::which;
    void* which_args[] = {&ptr};
    ASSERT_CUDA_OK(cudaLaunchKernel(fn, dim3(1), dim3(1), which_args));
    EXPECT_EQ(download_ok(d)[0], 2);
}

#ifdef CUSIM
// cudaLaunchKernel / cudaLaunchCooperativeKernel given the kernel itself (the template forms) carry
// the kernel's own name into reports and metrics, the instantiation's for a template kernel.
TEST(LaunchSyntax, RuntimeApiLaunchOfTheKernelItselfKeepsItsName) {
    DeviceBuffer<int> d(64);
    ASSERT_CUDA_OK(d.status());
    int* ptr = d.get();
    int value = 4;
    void* args[] = {&ptr, &value};
    cusim::checker::clear_launches();
    ASSERT_CUDA_OK(cudaLaunchKernel(fill_value, dim3(1), dim3(64), args));
    ASSERT_CUDA_OK(cudaLaunchCooperativeKernel(fill_value, dim3(1), dim3(32), args));
    int factor = 2;
    void* scale_args[] = {&ptr, &factor};
    ASSERT_CUDA_OK(cudaLaunchKernel(scale<int>, dim3(1), dim3(64), scale_args));
    for (int v : download_ok(d)) EXPECT_EQ(v, 8);
    const std::vector<cusim::checker::LaunchRecord> launches = cusim::checker::launches();
    ASSERT_EQ(launches.size(), 3u);
    EXPECT_EQ(launches[0].kernel, "fill_value");
    EXPECT_EQ(launches[1].kernel, "fill_value");
    EXPECT_EQ(launches[2].kernel, "scale<int>");
}
#endif

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) bounded_fill(int* out) { out[threadIdx.x] = BLOCK; }

// Each instantiation of a template kernel has the bound its template arguments give.
TEST(LaunchSyntax, LaunchBoundsOfTemplateInstantiations) {
    cudaFuncAttributes a;
    ASSERT_CUDA_OK(cudaFuncGetAttributes(&a, bounded_fill<32>));
    EXPECT_EQ(a.maxThreadsPerBlock, 32);
    ASSERT_CUDA_OK(cudaFuncGetAttributes(&a, bounded_fill<512>));
    EXPECT_EQ(a.maxThreadsPerBlock, 512);
    DeviceBuffer<int> d(64);
    ASSERT_CUDA_OK(d.status());
    bounded_fill<32><<<1, 64>>>(d.get());
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);  // CUDA 13 (tests/conformance/launch_errors.cu)
    bounded_fill<512><<<1, 64>>>(d.get());
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// The rewriter takes every (void*)NAME with a kernel's name for a kernel; a variable that shadows
// the kernel must still cast as written.
TEST(LaunchSyntax, VoidCastOfAVariableNamedLikeAKernel) {
    int x = 0;
    const int* fill_value = &x;
    EXPECT_EQ((void*)fill_value, static_cast<void*>(&x));
}

static void not_a_kernel(int*) {}

TEST(LaunchSyntax, RuntimeApiLaunchOfAPointerThatIsNoKernel) {
    int* ptr = nullptr;
    void* args[] = {&ptr};
    cusim_test::StderrCapture quiet;
    EXPECT_CUDA(cudaErrorInvalidDeviceFunction,
                cudaLaunchKernel(reinterpret_cast<const void*>(&not_a_kernel), dim3(1), dim3(1), args));
    EXPECT_CUDA(cudaErrorInvalidDeviceFunction, cudaGetLastError());
    EXPECT_CUDA_OK(cudaGetLastError());  // not sticky
#ifdef CUSIM
    EXPECT_NE(quiet.take().find("is not a kernel cusim has seen cast to void*"), std::string::npos);
#endif
}

TEST(LaunchSyntax, LaunchThroughFunctionPointerAndLambda) {
    DeviceBuffer<int> d(32);
    ASSERT_CUDA_OK(d.status());
    void (*kernel)(int*, int) = fill_value;
    kernel<<<1, 32>>>(d.get(), 9);
    ASSERT_CUDA_OK(cudaGetLastError());
    for (int v : download_ok(d)) EXPECT_EQ(v, 9);
    auto go = [&](int v) { fill_value<<<1, 32>>>(d.get(), v); };
    go(10);
    ASSERT_CUDA_OK(cudaGetLastError());
    for (int v : download_ok(d)) EXPECT_EQ(v, 10);
    for (int round = 0; round < 3; ++round)
        if (round == 2) fill_value<<<1, 32>>>(d.get(), 100 + round);  // launch as an unbraced statement
    ASSERT_CUDA_OK(cudaGetLastError());
    for (int v : download_ok(d)) EXPECT_EQ(v, 102);
}
