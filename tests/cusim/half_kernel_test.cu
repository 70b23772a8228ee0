// __half and __nv_bfloat16 inside kernels: float conversions (round to nearest even, overflow
// to infinity, subnormals, signed zero) and basic arithmetic intrinsics. Expected values come
// from the IEEE definition of each format, computed independently on the host.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <limits>
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

__global__ void convert(const float* in, float* half_value, unsigned short* half_bits, float* bf16_value,
                        unsigned short* bf16_bits, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const __half h = __float2half(in[i]);
    half_value[i] = __half2float(h);
    half_bits[i] = __half_as_ushort(h);
    const __nv_bfloat16 b = __float2bfloat16(in[i]);
    bf16_value[i] = __bfloat162float(b);
    bf16_bits[i] = __bfloat16_as_ushort(b);
}

// The value of `f` rounded to a binary format with `mantissa_bits` stored bits, minimum normal
// exponent `min_exp` and largest finite value `max_finite` (round to nearest, ties to even).
static double round_to_format(double f, int mantissa_bits, int min_exp, double max_finite) {
    if (f == 0 || std::isinf(f) || std::isnan(f)) return f;
    const double a = std::fabs(f);
    const int e = std::max(std::ilogb(a), min_exp);
    const double ulp = std::ldexp(1.0, e - mantissa_bits);
    double q = std::nearbyint(a / ulp) * ulp;  // a / ulp is exact: ulp is a power of two
    if (q > max_finite) q = std::numeric_limits<double>::infinity();
    return std::copysign(q, f);
}

TEST(HalfInKernel, FloatConversionsRoundToNearestEven) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> in = {0.0f,     -0.0f,  1.0f,    0.1f,  1.0f / 3.0f, -2.5f,  65504.0f, 65519.0f,
                                   65520.0f, 1e-8f,  3e-8f,   6.1e-5f, 1e10f,    3.0e38f, -inf,     1.00048828125f,
                                   1.00146484375f, 257.5f, 1.00390625f, 1.01171875f, std::nanf("")};
    const int n = static_cast<int>(in.size());
    DeviceBuffer<float> din(n), hv(n), bv(n);
    DeviceBuffer<unsigned short> hb(n), bb(n);
    ASSERT_CUDA_OK(din.status());
    ASSERT_CUDA_OK(din.upload(in));
    convert<<<1, 32>>>(din.get(), hv.get(), hb.get(), bv.get(), bb.get(), n);
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto half_value = download_ok(hv);
    const auto half_bits = download_ok(hb);
    const auto bf16_value = download_ok(bv);
    const auto bf16_bits = download_ok(bb);
    ASSERT_EQ(half_value.size(), size_t(n));
    ASSERT_EQ(bf16_value.size(), size_t(n));
    for (int i = 0; i < n; ++i) {
        SCOPED_TRACE(::testing::Message() << "input " << in[i]);
        const double half_ref = round_to_format(in[i], 10, -14, 65504.0);
        const double bf16_ref = round_to_format(in[i], 7, -126, std::ldexp(255.0, 120));
        if (std::isnan(in[i])) {
            EXPECT_TRUE(std::isnan(half_value[i]));
            EXPECT_TRUE(std::isnan(bf16_value[i]));
            continue;
        }
        EXPECT_EQ(half_value[i], half_ref);
        EXPECT_EQ(bf16_value[i], bf16_ref);
        // The sign bit survives, zero included.
        EXPECT_EQ((half_bits[i] >> 15) != 0, std::signbit(in[i]));
        EXPECT_EQ((bf16_bits[i] >> 15) != 0, std::signbit(in[i]));
    }
    // Spot checks of the encodings themselves.
    EXPECT_EQ(half_bits[2], 0x3C00u);  // 1.0
    EXPECT_EQ(bf16_bits[2], 0x3F80u);
    EXPECT_EQ(half_bits[8], 0x7C00u);  // 65520 rounds up to +inf
    EXPECT_EQ(half_bits[1], 0x8000u);  // -0
}

__global__ void arithmetic(float* out) {
    const __half a = __float2half(1.5f), b = __float2half(2.25f);
    out[0] = __half2float(__hadd(a, b));
    out[1] = __half2float(__hmul(a, b));
    out[2] = __half2float(__hsub(a, b));
    out[3] = __half2float(__hfma(a, b, __float2half(-0.375f)));
    const __half2 pair = __floats2half2_rn(1.25f, -2.5f);
    const __half2 twice = __hadd2(pair, pair);
    out[4] = __low2float(twice);
    out[5] = __high2float(twice);
    const __nv_bfloat16 c = __float2bfloat16(1.5f), d = __float2bfloat16(2.25f);
    out[6] = __bfloat162float(__hadd(c, d));
    out[7] = __bfloat162float(__hmul(c, d));
    // 2048 + 1 is not representable in half (11 significant bits): the tie rounds to even.
    out[8] = __half2float(__hadd(__float2half(2048.0f), __float2half(1.0f)));
    out[9] = __half2float(__hadd(__float2half(2050.0f), __float2half(1.0f)));
}

TEST(HalfInKernel, ArithmeticIntrinsics) {
    DeviceBuffer<float> d(10);
    ASSERT_CUDA_OK(d.status());
    arithmetic<<<1, 1>>>(d.get());
    auto r = launch_result();
    ASSERT_CUDA_OK(r.launch);
    ASSERT_CUDA_OK(r.sync);
    const auto h = download_ok(d);
    ASSERT_EQ(h.size(), 10u);
    EXPECT_EQ(h[0], 3.75f);
    EXPECT_EQ(h[1], 3.375f);
    EXPECT_EQ(h[2], -0.75f);
    EXPECT_EQ(h[3], 3.0f);
    EXPECT_EQ(h[4], 2.5f);
    EXPECT_EQ(h[5], -5.0f);
    EXPECT_EQ(h[6], 3.75f);
    EXPECT_EQ(h[7], 3.375f);
    EXPECT_EQ(h[8], 2048.0f);
    EXPECT_EQ(h[9], 2052.0f);
}
