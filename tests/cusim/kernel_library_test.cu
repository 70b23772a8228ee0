// The device library as kernels use it: atomics from many blocks at once (global and shared),
// math functions and intrinsics (checked against CUDA's documented ulp bounds), vector types,
// __ldg, device printf, and device assert surfacing as cudaErrorAssert.
#undef NDEBUG  // device assert must stay active in optimized builds
#include <cuda_runtime.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
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

namespace {
constexpr int kBlocks = 64, kThreads = 256, kN = kBlocks * kThreads;
}

// ---- atomics --------------------------------------------------------------------------------

struct Totals {
    int add_int;
    unsigned add_unsigned;
    unsigned long long add_ull;
    float add_float;
    double add_double;
    double cas_double;  // atomicAdd on double built from atomicCAS
    int max_int;
    int min_int;
    unsigned inc_wrap;
    unsigned dec_wrap;
    int sub_int;
    unsigned or_bits;
    unsigned and_bits;
    unsigned xor_bits;
    int exch_last;
};

__device__ double cas_add(double* address, double val) {
    auto* bits = reinterpret_cast<unsigned long long*>(address);
    unsigned long long old = *bits, assumed;
    do {
        assumed = old;
        old = atomicCAS(bits, assumed, __double_as_longlong(val + __longlong_as_double(assumed)));
    } while (assumed != old);
    return __longlong_as_double(old);
}

__device__ int scrambled(int i) { return static_cast<int>((static_cast<unsigned>(i) * 2654435761u) % 1000003u) - 500000; }

__global__ void many_atomics(Totals* t, int* add_olds, unsigned* inc_histogram, unsigned* dec_histogram) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    add_olds[i] = atomicAdd(&t->add_int, 1);
    atomicAdd(&t->add_unsigned, 3u);
    atomicAdd(&t->add_ull, 1ull << 33);
    atomicAdd(&t->add_float, 1.0f);
    atomicAdd(&t->add_double, 0.25);
    cas_add(&t->cas_double, 0.5);
    atomicMax(&t->max_int, scrambled(i));
    atomicMin(&t->min_int, scrambled(i));
    atomicAdd(&inc_histogram[atomicInc(&t->inc_wrap, 9u)], 1u);
    atomicAdd(&dec_histogram[atomicDec(&t->dec_wrap, 6u)], 1u);
    atomicSub(&t->sub_int, 2);
    atomicOr(&t->or_bits, 1u << (i % 32));
    atomicAnd(&t->and_bits, ~(1u << (i % 32)));
    atomicXor(&t->xor_bits, 1u << (i % 5));
    atomicExch(&t->exch_last, 1);
}

TEST(KernelAtomics, ManyBlocksAtOnce) {
    DeviceBuffer<Totals> t(1);
    DeviceBuffer<int> olds(kN);
    DeviceBuffer<unsigned> inc_hist(10), dec_hist(7);
    ASSERT_CUDA_OK(t.status());
    ASSERT_CUDA_OK(olds.status());
    ASSERT_CUDA_OK(inc_hist.status());
    ASSERT_CUDA_OK(dec_hist.status());
    Totals init{};
    init.max_int = INT32_MIN;
    init.min_int = INT32_MAX;
    init.and_bits = 0xffffffffu;
    init.dec_wrap = 0;
    ASSERT_CUDA_OK(t.upload({init}));
    ASSERT_CUDA_OK(inc_hist.fill_bytes(0));
    ASSERT_CUDA_OK(dec_hist.fill_bytes(0));
    many_atomics<<<kBlocks, kThreads>>>(t.get(), olds.get(), inc_hist.get(), dec_hist.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);

    const auto ht = download_ok(t);
    ASSERT_EQ(ht.size(), 1u);
    const Totals& got = ht[0];
    int max_expect = INT32_MIN, min_expect = INT32_MAX;
    for (int i = 0; i < kN; ++i) {
        const int s = static_cast<int>((static_cast<unsigned>(i) * 2654435761u) % 1000003u) - 500000;
        max_expect = std::max(max_expect, s);
        min_expect = std::min(min_expect, s);
    }
    EXPECT_EQ(got.add_int, kN);
    EXPECT_EQ(got.add_unsigned, 3u * kN);
    EXPECT_EQ(got.add_ull, static_cast<unsigned long long>(kN) << 33);
    EXPECT_EQ(got.add_float, static_cast<float>(kN));  // integer steps below 2^24: exact
    EXPECT_EQ(got.add_double, 0.25 * kN);
    EXPECT_EQ(got.cas_double, 0.5 * kN);
    EXPECT_EQ(got.max_int, max_expect);
    EXPECT_EQ(got.min_int, min_expect);
    EXPECT_EQ(got.inc_wrap, static_cast<unsigned>(kN % 10));  // atomicInc wraps to 0 after 9
    // atomicDec from 0 with limit 6: 0 -> 6 -> 5 ... -> 0 -> 6: the value after kN steps.
    EXPECT_EQ(got.dec_wrap, static_cast<unsigned>((7 - kN % 7) % 7));
    EXPECT_EQ(got.sub_int, -2 * kN);
    EXPECT_EQ(got.or_bits, 0xffffffffu);
    EXPECT_EQ(got.and_bits, 0u);
    unsigned xor_expect = 0;
    for (int i = 0; i < kN; ++i) xor_expect ^= 1u << (i % 5);
    EXPECT_EQ(got.xor_bits, xor_expect);
    EXPECT_EQ(got.exch_last, 1);

    // Every value 0..kN-1 was returned by exactly one atomicAdd.
    auto ho = download_ok(olds);
    ASSERT_EQ(ho.size(), size_t(kN));
    std::sort(ho.begin(), ho.end());
    for (int i = 0; i < kN; ++i) ASSERT_EQ(ho[i], i) << "atomicAdd old values are not a permutation";
    // atomicInc(…, 9) returned each of 0..9 equally often; atomicDec(…, 6) each of 0..6.
    const auto hi = download_ok(inc_hist);
    ASSERT_EQ(hi.size(), 10u);
    for (unsigned k = 0; k < 10; ++k) EXPECT_EQ(hi[k], static_cast<unsigned>(kN / 10 + (k < kN % 10))) << "value " << k;
    // The k-th atomicDec(…, 6) from 0 returns (7 - k % 7) % 7.
    std::vector<unsigned> dec_expect(7, 0);
    for (int k = 0; k < kN; ++k) ++dec_expect[(7 - k % 7) % 7];
    EXPECT_EQ(download_ok(dec_hist), dec_expect);
}

// Block-local histogram in shared memory, merged into global memory with one atomic per bin.
__global__ void shared_histogram(const int* values, int n, unsigned* global_bins) {
    __shared__ unsigned bins[16];
    if (threadIdx.x < 16) bins[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[values[i] & 15], 1u);
    __syncthreads();
    if (threadIdx.x < 16) atomicAdd(&global_bins[threadIdx.x], bins[threadIdx.x]);
}

TEST(KernelAtomics, SharedMemoryHistogram) {
    constexpr int n = 100003;
    std::vector<int> values(n);
    std::vector<unsigned> expect(16, 0);
    for (int i = 0; i < n; ++i) {
        values[i] = static_cast<int>((static_cast<unsigned>(i) * 40503u) >> 3);
        ++expect[values[i] & 15];
    }
    DeviceBuffer<int> dv(n);
    DeviceBuffer<unsigned> bins(16);
    ASSERT_CUDA_OK(dv.status());
    ASSERT_CUDA_OK(bins.status());
    ASSERT_CUDA_OK(dv.upload(values));
    ASSERT_CUDA_OK(bins.fill_bytes(0));
    shared_histogram<<<37, 128>>>(dv.get(), n, bins.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    EXPECT_EQ(download_ok(bins), expect);
}

// ---- math -----------------------------------------------------------------------------------

enum MathFn {
    kExpf, kLogf, kSqrtf, kRsqrtf, kSinf, kCosf, kTanhf, kPowf, kExp2f, kLog2f, kErff, kCbrtf,
    kAtan2f, kHypotf, kFastExp, kFastDivide, kFmaf, kFmaxf, kFminf, kFloorf, kCeilf, kTruncf, kRoundf, kFabsf,
    kNumFns
};

// x: any sign; y: |y| in [0.75, 4.25], either sign; p: positive.
__global__ void math_functions(const float* x, const float* y, const float* p, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float a = x[i], b = y[i], c = p[i];
    float* o = out + i;
    o[kExpf * n] = expf(a);
    o[kLogf * n] = logf(c);
    o[kSqrtf * n] = sqrtf(c);
    o[kRsqrtf * n] = rsqrtf(c);
    o[kSinf * n] = sinf(a);
    o[kCosf * n] = cosf(a);
    o[kTanhf * n] = tanhf(a);
    o[kPowf * n] = powf(c, b);
    o[kExp2f * n] = exp2f(a);
    o[kLog2f * n] = log2f(c);
    o[kErff * n] = erff(a);
    o[kCbrtf * n] = cbrtf(a);
    o[kAtan2f * n] = atan2f(a, b);
    o[kHypotf * n] = hypotf(a, b);
    o[kFastExp * n] = __expf(a);
    o[kFastDivide * n] = __fdividef(a, b);
    o[kFmaf * n] = fmaf(a, b, 0.25f);
    o[kFmaxf * n] = fmaxf(a, b);
    o[kFminf * n] = fminf(a, b);
    o[kFloorf * n] = floorf(a);
    o[kCeilf * n] = ceilf(a);
    o[kTruncf * n] = truncf(a);
    o[kRoundf * n] = roundf(a);
    o[kFabsf * n] = fabsf(a);
}

// Distance of `got` from `ref` in units of the float ulp at `ref`.
static double ulp_error(float got, double ref) {
    if (std::isnan(ref)) return std::isnan(got) ? 0.0 : 1e30;
    if (std::isinf(ref)) return got == ref ? 0.0 : 1e30;
    const double mag = std::fabs(ref);
    const double ulp = mag < 1.1754943508222875e-38 ? std::ldexp(1.0, -149) : std::ldexp(1.0, std::ilogb(mag) - 23);
    return std::fabs(static_cast<double>(got) - ref) / ulp;
}

TEST(KernelMath, FunctionsWithinCudaUlpBounds) {
    constexpr int n = 512;
    std::vector<float> x(n), y(n), p(n);
    for (int i = 0; i < n; ++i) {
        x[i] = -9.5f + 19.0f * static_cast<float>(i) / (n - 1) + 0.0037f * static_cast<float>(i % 7);
        y[i] = 0.75f + 3.5f * static_cast<float>((i * 37) % n) / n;
        if (i % 3 == 0) y[i] = -y[i];
        p[i] = std::fabs(x[i]) + 0.001f;
    }
    DeviceBuffer<float> dx(n), dy(n), dp(n), out(size_t(kNumFns) * n);
    ASSERT_CUDA_OK(dx.status());
    ASSERT_CUDA_OK(dy.status());
    ASSERT_CUDA_OK(dp.status());
    ASSERT_CUDA_OK(out.status());
    ASSERT_CUDA_OK(dx.upload(x));
    ASSERT_CUDA_OK(dy.upload(y));
    ASSERT_CUDA_OK(dp.upload(p));
    math_functions<<<(n + 127) / 128, 128>>>(dx.get(), dy.get(), dp.get(), out.get(), n);
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(out);
    ASSERT_EQ(h.size(), size_t(kNumFns) * n);

    // Maximum ulp errors from the CUDA C++ Programming Guide (mathematical functions appendix),
    // measured as there against the correctly rounded float result; __fdividef: 2 ulp for |y| in
    // [2^-126, 2^126]; __expf: 2 + floor(|1.173 x|) ulp (below). References are computed in
    // double from the same float inputs.
    struct Fn {
        MathFn id;
        const char* name;
        double max_ulp;
        double (*ref)(double a, double b, double c);
    };
    const Fn fns[] = {
        {kExpf, "expf", 2, [](double a, double, double) { return std::exp(a); }},
        {kLogf, "logf", 1, [](double, double, double c) { return std::log(c); }},
        {kSqrtf, "sqrtf", 0, [](double, double, double c) { return std::sqrt(c); }},
        {kRsqrtf, "rsqrtf", 2, [](double, double, double c) { return 1.0 / std::sqrt(c); }},
        {kSinf, "sinf", 2, [](double a, double, double) { return std::sin(a); }},
        {kCosf, "cosf", 2, [](double a, double, double) { return std::cos(a); }},
        {kTanhf, "tanhf", 2, [](double a, double, double) { return std::tanh(a); }},
        {kPowf, "powf", 4, [](double, double b, double c) { return std::pow(c, b); }},
        {kExp2f, "exp2f", 2, [](double a, double, double) { return std::exp2(a); }},
        {kLog2f, "log2f", 1, [](double, double, double c) { return std::log2(c); }},
        {kErff, "erff", 2, [](double a, double, double) { return std::erf(a); }},
        {kCbrtf, "cbrtf", 1, [](double a, double, double) { return std::cbrt(a); }},
        {kAtan2f, "atan2f", 3, [](double a, double b, double) { return std::atan2(a, b); }},
        {kHypotf, "hypotf", 3, [](double a, double b, double) { return std::hypot(a, b); }},
        {kFastDivide, "__fdividef", 2, [](double a, double b, double) { return a / b; }},
        // fmaf rounds a*b+c once: the reference is the correctly rounded single-precision fma.
        {kFmaf, "fmaf", 0, [](double a, double b, double) { return double(std::fmaf(float(a), float(b), 0.25f)); }},
        {kFmaxf, "fmaxf", 0, [](double a, double b, double) { return std::fmax(a, b); }},
        {kFminf, "fminf", 0, [](double a, double b, double) { return std::fmin(a, b); }},
        {kFloorf, "floorf", 0, [](double a, double, double) { return std::floor(a); }},
        {kCeilf, "ceilf", 0, [](double a, double, double) { return std::ceil(a); }},
        {kTruncf, "truncf", 0, [](double a, double, double) { return std::trunc(a); }},
        {kRoundf, "roundf", 0, [](double a, double, double) { return std::round(a); }},
        {kFabsf, "fabsf", 0, [](double a, double, double) { return std::fabs(a); }},
    };
    for (const Fn& f : fns) {
        int bad = 0;
        for (int i = 0; i < n && bad < 3; ++i) {
            const double ref = f.ref(x[i], y[i], p[i]);
            const float got = h[size_t(f.id) * n + i];
            const double err = ulp_error(got, static_cast<float>(ref));
            if (err > f.max_ulp) {
                ++bad;
                ADD_FAILURE() << f.name << " at x=" << x[i] << " y=" << y[i] << " p=" << p[i] << ": got " << got
                              << ", exact " << ref << ", " << err << " ulp; CUDA's bound is " << f.max_ulp;
            }
        }
    }
    for (int i = 0; i < n; ++i) {
        const double bound = 2 + std::floor(std::fabs(1.173 * x[i]));
        const double err = ulp_error(h[size_t(kFastExp) * n + i], static_cast<float>(std::exp(double(x[i]))));
        ASSERT_LE(err, bound) << "__expf(" << x[i] << ")";
    }
}

__global__ void integer_intrinsics(const unsigned* in, unsigned* out) {
    const unsigned v = in[threadIdx.x];
    unsigned* o = out + 6 * threadIdx.x;
    o[0] = __popc(v);
    o[1] = __clz(static_cast<int>(v));
    o[2] = __ffs(static_cast<int>(v));
    o[3] = __brev(v);
    o[4] = __umulhi(v, 0x9e3779b9u);
    o[5] = static_cast<unsigned>(max(static_cast<int>(v), -5) + min(static_cast<int>(v), 7));
}

TEST(KernelMath, IntegerIntrinsics) {
    const std::vector<unsigned> in = {0u, 1u, 2u, 3u, 0x80000000u, 0xffffffffu, 0x12345678u, 0x00f0f000u};
    const int n = static_cast<int>(in.size());
    DeviceBuffer<unsigned> din(n), dout(6 * n);
    ASSERT_CUDA_OK(din.status());
    ASSERT_CUDA_OK(dout.status());
    ASSERT_CUDA_OK(din.upload(in));
    integer_intrinsics<<<1, n>>>(din.get(), dout.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    const auto h = download_ok(dout);
    ASSERT_EQ(h.size(), size_t(6 * n));
    for (int k = 0; k < n; ++k) {
        const unsigned v = in[k];
        unsigned popc = 0, clz = 32, ffs = 0, brev = 0;
        for (int b = 0; b < 32; ++b) {
            if ((v >> b) & 1u) {
                ++popc;
                if (!ffs) ffs = b + 1;
                brev |= 1u << (31 - b);
            }
        }
        for (int b = 31; b >= 0; --b)
            if ((v >> b) & 1u) {
                clz = 31 - b;
                break;
            }
        SCOPED_TRACE(::testing::Message() << "v=0x" << std::hex << v);
        EXPECT_EQ(h[6 * k + 0], popc);
        EXPECT_EQ(h[6 * k + 1], clz);
        EXPECT_EQ(h[6 * k + 2], ffs);
        EXPECT_EQ(h[6 * k + 3], brev);
        EXPECT_EQ(h[6 * k + 4], static_cast<unsigned>((uint64_t(v) * 0x9e3779b9ull) >> 32));
        const int s = static_cast<int>(v);
        EXPECT_EQ(h[6 * k + 5], static_cast<unsigned>(std::max(s, -5) + std::min(s, 7)));
    }
}

// ---- vector types and __ldg -----------------------------------------------------------------

static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4 is 16 bytes, 16-aligned as in CUDA");
static_assert(sizeof(float3) == 12 && alignof(float3) == 4, "float3 is 12 bytes, 4-aligned as in CUDA");
static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2 is 8-aligned as in CUDA");
static_assert(sizeof(double2) == 16 && alignof(double2) == 16, "double2 is 16-aligned as in CUDA");
static_assert(sizeof(int2) == 8 && alignof(int2) == 8, "int2 is 8-aligned as in CUDA");
static_assert(sizeof(uchar4) == 4 && alignof(uchar4) == 4, "uchar4 is 4-aligned as in CUDA");

__global__ void vectors(const float4* in4, float4* out4, int2* out_i2, double2* out_d2, uchar4* out_c4, float3* out_f3) {
    const int i = threadIdx.x;
    const float4 v = __ldg(&in4[i]);
    out4[i] = make_float4(v.w, v.z, v.y, v.x + 1.0f);
    out_i2[i] = make_int2(static_cast<int>(v.x), -static_cast<int>(v.y));
    out_d2[i] = make_double2(static_cast<double>(v.z) * 0.5, static_cast<double>(v.w) * 2.0);
    out_c4[i] = make_uchar4(static_cast<unsigned char>(i), 255, static_cast<unsigned char>(2 * i), 7);
    out_f3[i] = make_float3(v.x + v.y, v.y + v.z, v.z + v.w);
}

TEST(KernelVectors, MakeFunctionsAndLdg) {
    constexpr int n = 64;
    std::vector<float4> in(n);
    for (int i = 0; i < n; ++i) in[i] = make_float4(i, 2.0f * i, 3.0f * i, 4.0f * i);
    DeviceBuffer<float4> din(n), d4(n);
    DeviceBuffer<int2> di2(n);
    DeviceBuffer<double2> dd2(n);
    DeviceBuffer<uchar4> dc4(n);
    DeviceBuffer<float3> df3(n);
    ASSERT_CUDA_OK(din.status());
    ASSERT_CUDA_OK(din.upload(in));
    vectors<<<1, n>>>(din.get(), d4.get(), di2.get(), dd2.get(), dc4.get(), df3.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h4 = download_ok(d4);
    const auto hi2 = download_ok(di2);
    const auto hd2 = download_ok(dd2);
    const auto hc4 = download_ok(dc4);
    const auto hf3 = download_ok(df3);
    ASSERT_EQ(h4.size(), size_t(n));
    ASSERT_EQ(hf3.size(), size_t(n));
    for (int i = 0; i < n; ++i) {
        SCOPED_TRACE(::testing::Message() << "i=" << i);
        EXPECT_EQ(h4[i].x, 4.0f * i);
        EXPECT_EQ(h4[i].y, 3.0f * i);
        EXPECT_EQ(h4[i].z, 2.0f * i);
        EXPECT_EQ(h4[i].w, i + 1.0f);
        EXPECT_EQ(hi2[i].x, i);
        EXPECT_EQ(hi2[i].y, -2 * i);
        EXPECT_EQ(hd2[i].x, 1.5 * i);
        EXPECT_EQ(hd2[i].y, 8.0 * i);
        EXPECT_EQ(hc4[i].x, i);
        EXPECT_EQ(hc4[i].y, 255);
        EXPECT_EQ(hc4[i].z, 2 * i);
        EXPECT_EQ(hc4[i].w, 7);
        EXPECT_EQ(hf3[i].x, 3.0f * i);
        EXPECT_EQ(hf3[i].y, 5.0f * i);
        EXPECT_EQ(hf3[i].z, 7.0f * i);
    }
}

__global__ void ldg_scalars(const int* ints, const float* floats, const double* doubles, double* out) {
    const int i = threadIdx.x;
    out[i] = __ldg(&ints[i]) + __ldg(&floats[i]) + __ldg(&doubles[i]);
}

TEST(KernelVectors, LdgOnScalars) {
    constexpr int n = 40;
    std::vector<int> hi(n);
    std::vector<float> hf(n);
    std::vector<double> hd(n);
    for (int i = 0; i < n; ++i) {
        hi[i] = -i;
        hf[i] = 0.5f * i;
        hd[i] = 1e10 + i;
    }
    DeviceBuffer<int> di(n);
    DeviceBuffer<float> df(n);
    DeviceBuffer<double> dd(n), out(n);
    ASSERT_CUDA_OK(di.upload(hi));
    ASSERT_CUDA_OK(df.upload(hf));
    ASSERT_CUDA_OK(dd.upload(hd));
    ldg_scalars<<<1, n>>>(di.get(), df.get(), dd.get(), out.get());
    ASSERT_CUDA_OK(cudaGetLastError());
    const auto h = download_ok(out);
    ASSERT_EQ(h.size(), size_t(n));
    for (int i = 0; i < n; ++i) EXPECT_EQ(h[i], -i + 0.5 * i + (1e10 + i)) << "i=" << i;
}

// ---- device printf --------------------------------------------------------------------------

__global__ void say_hello(int base) {
    printf("hello from block %d thread %u: %d %s %.2f %llx\n", static_cast<int>(blockIdx.x), threadIdx.x,
           base + static_cast<int>(threadIdx.x), "ok", 0.25 * threadIdx.x, 0xabcdef0123ull);
}

TEST(KernelPrintf, EveryThreadPrintsOneLine) {
    cusim_test::StdoutCapture capture;
    say_hello<<<2, 3>>>(40);
    const auto r = launch_result();  // device printf output is flushed by synchronization
    const std::string out = capture.take();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    for (int b = 0; b < 2; ++b) {
        for (int t = 0; t < 3; ++t) {
            char line[128];
            std::snprintf(line, sizeof line, "hello from block %d thread %d: %d ok %.2f abcdef0123\n", b, t, 40 + t,
                          0.25 * t);
            size_t count = 0;
            for (size_t at = out.find(line); at != std::string::npos; at = out.find(line, at + 1)) ++count;
            EXPECT_EQ(count, 1u) << "line \"" << line << "\" in:\n" << out;
        }
    }
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 6) << out;
}

// ---- device assert --------------------------------------------------------------------------

__global__ void check_non_negative(const int* data, int* visited) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(data[i] >= 0);  // @device-assert
    visited[i] = 1;
}

TEST(KernelAssert, FailedAssertIsCudaErrorAssert) {
    constexpr int n = 128;
    cusim_test::LaunchResult r;
    std::string report;
    {
        std::vector<int> h(n, 1);
        h[37] = -1;  // block 1, thread 5 with 32-thread blocks
        DeviceBuffer<int> d(n), visited(n);
        ASSERT_CUDA_OK(d.status());
        ASSERT_CUDA_OK(visited.status());
        ASSERT_CUDA_OK(d.upload(h));
        cusim_test::StderrCapture capture;
        check_non_negative<<<n / 32, 32>>>(d.get(), visited.get());
        r = launch_result();
        report = capture.take();
    }
    // The assert may surface at the launch or at the synchronize; from then on the error is
    // sticky: every call reports it until the device is reset.
    EXPECT_TRUE(r.launch == cudaErrorAssert || r.launch == cudaSuccess) << cudaGetErrorName(r.launch);
    EXPECT_CUDA(cudaErrorAssert, r.sync);
    EXPECT_CUDA(cudaErrorAssert, cudaGetLastError());
    EXPECT_CUDA(cudaErrorAssert, cudaDeviceSynchronize());
    // cusim recovers on reset; on a GPU the context is lost and the process must restart.
    EXPECT_CUDA_OK(cudaDeviceReset());
    int* p = nullptr;
    EXPECT_CUDA_OK(cudaMalloc(&p, 64));
    EXPECT_CUDA_OK(cudaFree(p));
#ifdef CUSIM
    if (cusim_test::reports_silenced()) GTEST_SKIP() << "report text not checked: CUSIM_QUIET is set";
    EXPECT_TRUE(cusim_test::report_contains(
        report, {"block: [1,0,0], thread: [5,0,0]", "Assertion", "data[i] >= 0", FILE_LINE("device-assert"),
                 "cudaErrorAssert"}));
#endif
}
