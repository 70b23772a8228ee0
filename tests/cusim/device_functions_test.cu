// Tests of cusim's device function headers: math functions libm lacks, explicitly rounded
// arithmetic and conversions (checked against the host FPU in the same rounding mode), integer
// intrinsics against brute-force definitions, CUDA's min/max overload set, cache-hinted
// loads/stores, vector types and math constants. Host code, compiled as C++.
#include <gtest/gtest.h>

// These tests exercise cusim's implementations from host code; CUDA declares the functions
// device-only, so with nvcc the file compiles to an empty test binary.
#if defined(CUSIM)  // cusim only (nvcc and cusim both define __CUDACC__)

#include "cusim/device_functions.h"
#include "cusim/vector_types.h"
#include "math_constants.h"

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

// Lab code often defines its own lerp; the global namespace must leave the name free.
inline float lerp(float a, float b, float t) { return a + t * (b - a); }

namespace {

constexpr int kRoundingModes[] = {FE_TONEAREST, FE_TOWARDZERO, FE_UPWARD, FE_DOWNWARD};

/// Evaluates f with the host FPU in the given rounding mode. The operands are read through
/// volatile inside f, so the operation happens between the two mode switches.
template <class F>
auto in_rounding_mode(int mode, F f) {
    const int saved = std::fegetround();
    std::fesetround(mode);
    volatile auto r = f();
    std::fesetround(saved);
    return r;
}

unsigned bits_of(float f) { return std::bit_cast<unsigned>(f); }
std::uint64_t bits_of(double d) { return std::bit_cast<std::uint64_t>(d); }

/// Random floats over the whole finite range, with a bias towards ordinary magnitudes.
float random_float(std::mt19937& rng) {
    const unsigned exponent = (rng() % 4 == 0) ? rng() % 255 : 100 + rng() % 56;
    return std::bit_cast<float>(static_cast<std::uint32_t>((rng() & 0x807fffffu) | (exponent << 23)));
}

double random_double(std::mt19937_64& rng) {
    const std::uint64_t exponent = (rng() % 4 == 0) ? rng() % 2047 : 1000 + rng() % 48;
    return std::bit_cast<double>((rng() & 0x800fffffffffffffull) | (exponent << 52));
}

// ---------------------------------------------------------------------------------------------
// Explicitly rounded arithmetic

TEST(RoundedArithmetic, FloatOperationsMatchTheFpuInEachRoundingMode) {
    using Op = float (*)(float, float);
    const Op add[] = {__fadd_rn, __fadd_rz, __fadd_ru, __fadd_rd};
    const Op sub[] = {__fsub_rn, __fsub_rz, __fsub_ru, __fsub_rd};
    const Op mul[] = {__fmul_rn, __fmul_rz, __fmul_ru, __fmul_rd};
    const Op div[] = {__fdiv_rn, __fdiv_rz, __fdiv_ru, __fdiv_rd};
    using Op3 = float (*)(float, float, float);
    const Op3 fma[] = {__fmaf_rn, __fmaf_rz, __fmaf_ru, __fmaf_rd};
    using Op1 = float (*)(float);
    const Op1 sqrt[] = {__fsqrt_rn, __fsqrt_rz, __fsqrt_ru, __fsqrt_rd};
    const Op1 rcp[] = {__frcp_rn, __frcp_rz, __frcp_ru, __frcp_rd};
    std::mt19937 rng(42);
    std::vector<float> xs;
    for (int i = 0; i < 100000; ++i) xs.push_back(random_float(rng));
    const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                              std::numeric_limits<float>::min(), std::numeric_limits<float>::infinity(), 3.0f, 1e-40f};
    for (float a : specials)
        for (float b : specials) {
            xs.push_back(a);
            xs.push_back(b);
            xs.push_back(-b);
        }
    for (int m = 0; m < 4; ++m) {
        const int mode = kRoundingModes[m];
        for (std::size_t i = 0; i + 2 < xs.size(); ++i) {
            const float a = xs[i], b = xs[i + 1], c = xs[i + 2];
            const volatile float va = a, vb = b, vc = c;
            const float e_add = in_rounding_mode(mode, [&] { return va + vb; });
            const float e_sub = in_rounding_mode(mode, [&] { return va - vb; });
            const float e_mul = in_rounding_mode(mode, [&] { return va * vb; });
            const float e_div = in_rounding_mode(mode, [&] { return va / vb; });
            const float e_fma = in_rounding_mode(mode, [&] { return std::fma(float{va}, float{vb}, float{vc}); });
            const float e_sqrt = in_rounding_mode(mode, [&] { return std::sqrt(float{va}); });
            const float e_rcp = in_rounding_mode(mode, [&] { return 1.0f / vb; });
            auto same = [](float x, float y) { return (std::isnan(x) && std::isnan(y)) || bits_of(x) == bits_of(y); };
            ASSERT_PRED2(same, add[m](a, b), e_add) << a << " + " << b << " mode " << m;
            ASSERT_PRED2(same, sub[m](a, b), e_sub) << a << " - " << b << " mode " << m;
            ASSERT_PRED2(same, mul[m](a, b), e_mul) << a << " * " << b << " mode " << m;
            ASSERT_PRED2(same, div[m](a, b), e_div) << a << " / " << b << " mode " << m;
            ASSERT_PRED2(same, fma[m](a, b, c), e_fma) << a << " * " << b << " + " << c << " mode " << m;
            ASSERT_PRED2(same, sqrt[m](a), e_sqrt) << "sqrt " << a << " mode " << m;
            ASSERT_PRED2(same, rcp[m](b), e_rcp) << "1 / " << b << " mode " << m;
        }
    }
}

TEST(RoundedArithmetic, DoubleOperationsMatchTheFpuInEachRoundingMode) {
    using Op = double (*)(double, double);
    const Op add[] = {__dadd_rn, __dadd_rz, __dadd_ru, __dadd_rd};
    const Op sub[] = {__dsub_rn, __dsub_rz, __dsub_ru, __dsub_rd};
    const Op mul[] = {__dmul_rn, __dmul_rz, __dmul_ru, __dmul_rd};
    const Op div[] = {__ddiv_rn, __ddiv_rz, __ddiv_ru, __ddiv_rd};
    using Op3 = double (*)(double, double, double);
    const Op3 fma[] = {__fma_rn, __fma_rz, __fma_ru, __fma_rd};
    using Op1 = double (*)(double);
    const Op1 sqrt[] = {__dsqrt_rn, __dsqrt_rz, __dsqrt_ru, __dsqrt_rd};
    const Op1 rcp[] = {__drcp_rn, __drcp_rz, __drcp_ru, __drcp_rd};
    std::mt19937_64 rng(43);
    std::vector<double> xs;
    for (int i = 0; i < 100000; ++i) xs.push_back(random_double(rng));
    const double specials[] = {0.0, -0.0, 1.0, 3.0, std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity()};
    for (double a : specials)
        for (double b : specials) {
            xs.push_back(a);
            xs.push_back(-b);
        }
    auto normal_or_zero = [](double v) { return v == 0 || std::isinf(v) || std::isnan(v) || std::fabs(v) >= std::numeric_limits<double>::min(); };
    for (int m = 0; m < 4; ++m) {
        const int mode = kRoundingModes[m];
        for (std::size_t i = 0; i + 2 < xs.size(); ++i) {
            const double a = xs[i], b = xs[i + 1], c = xs[i + 2];
            const volatile double va = a, vb = b, vc = c;
            auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || bits_of(x) == bits_of(y); };
            // Subnormal results are outside the documented exactness of the double variants.
            const double e_add = in_rounding_mode(mode, [&] { return va + vb; });
            if (normal_or_zero(e_add)) {
                ASSERT_PRED2(same, add[m](a, b), e_add) << a << " + " << b << " mode " << m;
                ASSERT_PRED2(same, sub[m](a, -b), e_add) << a << " - " << -b << " mode " << m;
            }
            const double e_mul = in_rounding_mode(mode, [&] { return va * vb; });
            if (normal_or_zero(e_mul) && (e_mul != 0 || a == 0 || b == 0)) {
                ASSERT_PRED2(same, mul[m](a, b), e_mul) << a << " * " << b << " mode " << m;
            }
            const double e_div = in_rounding_mode(mode, [&] { return va / vb; });
            if (normal_or_zero(e_div) && (e_div != 0 || a == 0 || std::isinf(b))) {
                ASSERT_PRED2(same, div[m](a, b), e_div) << a << " / " << b << " mode " << m;
            }
            const double e_fma = in_rounding_mode(mode, [&] { return std::fma(double{va}, double{vb}, double{vc}); });
            const double product = a * b;
            if (normal_or_zero(e_fma) && (product == 0 || std::fabs(product) >= 0x1p-900) && (e_fma != 0 || c == 0 || product == -c)) {
                ASSERT_PRED2(same, fma[m](a, b, c), e_fma) << a << " * " << b << " + " << c << " mode " << m;
            }
            const double e_sqrt = in_rounding_mode(mode, [&] { return std::sqrt(double{va}); });
            ASSERT_PRED2(same, sqrt[m](a), e_sqrt) << "sqrt " << a << " mode " << m;
            const double e_rcp = in_rounding_mode(mode, [&] { return 1.0 / vb; });
            if (normal_or_zero(e_rcp) && (e_rcp != 0 || std::isinf(b))) {
                ASSERT_PRED2(same, rcp[m](b), e_rcp) << "1 / " << b << " mode " << m;
            }
        }
    }
}

TEST(RoundedArithmetic, SignOfExactZeroDependsOnTheMode) {
    EXPECT_FALSE(std::signbit(__fadd_rn(1.0f, -1.0f)));
    EXPECT_FALSE(std::signbit(__fadd_ru(1.0f, -1.0f)));
    EXPECT_TRUE(std::signbit(__fadd_rd(1.0f, -1.0f)));
    EXPECT_TRUE(std::signbit(__fadd_rz(-0.0f, -0.0f)));
    EXPECT_TRUE(std::signbit(__dsub_rd(2.0, 2.0)));
    EXPECT_FALSE(std::signbit(__dsub_rz(2.0, 2.0)));
    EXPECT_TRUE(std::signbit(__fmaf_rd(2.0f, 3.0f, -6.0f)));
    EXPECT_FALSE(std::signbit(__fmaf_rn(2.0f, 3.0f, -6.0f)));
}

TEST(RoundedArithmetic, OverflowFollowsTheMode) {
    const float big = std::numeric_limits<float>::max();
    EXPECT_TRUE(std::isinf(__fmul_rn(big, 2.0f)));
    EXPECT_EQ(__fmul_rz(big, 2.0f), big);
    EXPECT_EQ(__fmul_rd(big, 2.0f), big);
    EXPECT_TRUE(std::isinf(__fmul_ru(big, 2.0f)));
    EXPECT_EQ(__fmul_ru(-big, 2.0f), -big);
    const double dbig = std::numeric_limits<double>::max();
    EXPECT_EQ(__dadd_rz(dbig, dbig), dbig);
    EXPECT_TRUE(std::isinf(__dadd_rn(dbig, dbig)));
    EXPECT_EQ(__dmul_ru(-dbig, 2.0), -dbig);
    EXPECT_TRUE(std::isinf(__dmul_rd(-dbig, 2.0)));
}

// ---------------------------------------------------------------------------------------------
// Conversions

TEST(Conversions, FloatToIntegerRoundsSaturatesAndMapsNaN) {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(__float2int_rn(2.5f), 2);
    EXPECT_EQ(__float2int_rn(3.5f), 4);
    EXPECT_EQ(__float2int_rn(-2.5f), -2);
    EXPECT_EQ(__float2int_rz(-2.7f), -2);
    EXPECT_EQ(__float2int_rd(-2.1f), -3);
    EXPECT_EQ(__float2int_ru(2.1f), 3);
    EXPECT_EQ(__float2int_rn(3e9f), 2147483647);
    EXPECT_EQ(__float2int_rn(-3e9f), -2147483647 - 1);
    EXPECT_EQ(__float2int_rn(nan), 0);
    EXPECT_EQ(__float2int_rz(inf), 2147483647);
    EXPECT_EQ(__float2uint_rn(-1.0f), 0u);
    EXPECT_EQ(__float2uint_ru(-0.5f), 0u);
    EXPECT_EQ(__float2uint_rn(5e9f), 4294967295u);
    EXPECT_EQ(__float2uint_rn(nan), 0u);
    EXPECT_EQ(__float2ll_rn(1e19f), std::numeric_limits<long long>::max());
    EXPECT_EQ(__float2ll_rd(-1e19f), std::numeric_limits<long long>::min());
    EXPECT_EQ(__float2ll_rn(nan), std::numeric_limits<long long>::min());
    EXPECT_EQ(__float2ull_rn(nan), 0x8000000000000000ull);
    EXPECT_EQ(__float2ull_rz(2e19f), 18446744073709551615ull);
    EXPECT_EQ(__float2ll_rn(-16777217.0f), -16777216);
    EXPECT_EQ(__double2int_rn(-1.5), -2);
    EXPECT_EQ(__double2int_rz(2147483647.9), 2147483647);
    EXPECT_EQ(__double2uint_rd(4294967295.7), 4294967295u);
    EXPECT_EQ(__double2ll_ru(9.3e18), std::numeric_limits<long long>::max());
    EXPECT_EQ(__double2ll_rn(-4503599627370497.0), -4503599627370497ll);
    EXPECT_EQ(__double2ull_rn(0.5), 0ull);
    EXPECT_EQ(__double2ull_rn(1.5), 2ull);
}

TEST(Conversions, IntegerToFloatMatchesTheFpuInEachRoundingMode) {
    std::mt19937_64 rng(77);
    for (int i = 0; i < 200000; ++i) {
        const long long ll = static_cast<long long>(rng()) >> (rng() % 64);
        const unsigned long long ull = rng() >> (rng() % 64);
        const int ii = static_cast<int>(rng());
        const unsigned ui = static_cast<unsigned>(rng());
        const volatile long long vll = ll;
        const volatile unsigned long long vull = ull;
        const volatile int vi = ii;
        const volatile unsigned vui = ui;
        const float f_ll[] = {__ll2float_rn(ll), __ll2float_rz(ll), __ll2float_ru(ll), __ll2float_rd(ll)};
        const float f_ull[] = {__ull2float_rn(ull), __ull2float_rz(ull), __ull2float_ru(ull), __ull2float_rd(ull)};
        const float f_i[] = {__int2float_rn(ii), __int2float_rz(ii), __int2float_ru(ii), __int2float_rd(ii)};
        const float f_ui[] = {__uint2float_rn(ui), __uint2float_rz(ui), __uint2float_ru(ui), __uint2float_rd(ui)};
        const double d_ll[] = {__ll2double_rn(ll), __ll2double_rz(ll), __ll2double_ru(ll), __ll2double_rd(ll)};
        const double d_ull[] = {__ull2double_rn(ull), __ull2double_rz(ull), __ull2double_ru(ull), __ull2double_rd(ull)};
        for (int m = 0; m < 4; ++m) {
            const int mode = kRoundingModes[m];
            ASSERT_EQ(f_ll[m], in_rounding_mode(mode, [&] { return static_cast<float>(vll); })) << ll << " mode " << m;
            ASSERT_EQ(f_ull[m], in_rounding_mode(mode, [&] { return static_cast<float>(vull); })) << ull << " mode " << m;
            ASSERT_EQ(f_i[m], in_rounding_mode(mode, [&] { return static_cast<float>(vi); })) << ii << " mode " << m;
            ASSERT_EQ(f_ui[m], in_rounding_mode(mode, [&] { return static_cast<float>(vui); })) << ui << " mode " << m;
            ASSERT_EQ(d_ll[m], in_rounding_mode(mode, [&] { return static_cast<double>(vll); })) << ll << " mode " << m;
            ASSERT_EQ(d_ull[m], in_rounding_mode(mode, [&] { return static_cast<double>(vull); })) << ull << " mode " << m;
        }
    }
    EXPECT_EQ(__int2double_rn(-7), -7.0);
    EXPECT_EQ(__uint2double_rn(4294967295u), 4294967295.0);
}

TEST(Conversions, DoubleToFloatMatchesTheFpuInEachRoundingMode) {
    using Op = float (*)(double);
    const Op cvt[] = {__double2float_rn, __double2float_rz, __double2float_ru, __double2float_rd};
    std::mt19937_64 rng(78);
    for (int i = 0; i < 200000; ++i) {
        const double d = random_double(rng);
        const volatile double vd = d;
        for (int m = 0; m < 4; ++m) {
            const float expected = in_rounding_mode(kRoundingModes[m], [&] { return static_cast<float>(vd); });
            const float got = cvt[m](d);
            ASSERT_TRUE((std::isnan(expected) && std::isnan(got)) || bits_of(expected) == bits_of(got)) << d << " mode " << m;
        }
    }
}

TEST(Conversions, Reinterpretation) {
    EXPECT_EQ(__float_as_int(1.0f), 0x3f800000);
    EXPECT_EQ(__int_as_float(0x40490fdb), 3.14159274f);
    EXPECT_EQ(__float_as_uint(-0.0f), 0x80000000u);
    EXPECT_EQ(__uint_as_float(0x7f800000u), std::numeric_limits<float>::infinity());
    EXPECT_EQ(__double_as_longlong(1.0), 0x3ff0000000000000ll);
    EXPECT_EQ(__longlong_as_double(0x4000000000000000ll), 2.0);
    EXPECT_EQ(__double2hiint(-2.0), static_cast<int>(0xc0000000u));
    EXPECT_EQ(__double2loint(__longlong_as_double(0x123456789abcdef0ll)), static_cast<int>(0x9abcdef0u));
    EXPECT_EQ(__hiloint2double(0x3ff00000, 0), 1.0);
}

// ---------------------------------------------------------------------------------------------
// Math functions

TEST(MathFunctions, GlobalNamespaceOverloadsAreCudas) {
    static_assert(std::is_same_v<decltype(sqrt(2.0f)), float>);
    static_assert(std::is_same_v<decltype(exp(1.0f)), float>);
    static_assert(std::is_same_v<decltype(rsqrt(4.0f)), float>);
    static_assert(std::is_same_v<decltype(max(1, 2u)), unsigned int>);
    static_assert(std::is_same_v<decltype(min(1.0f, 2.0)), double>);
    static_assert(std::is_same_v<decltype(max(1ll, 2ull)), unsigned long long>);
    static_assert(std::is_same_v<decltype(abs(-1.5f)), float>);  // not abs(int)
    EXPECT_EQ(abs(-1.5f), 1.5f);
    EXPECT_EQ(lerp(1.0f, 3.0f, 0.25f), 1.5f);
    EXPECT_TRUE(isnan(nanf("")));
    EXPECT_TRUE(isinf(-HUGE_VALF));
    EXPECT_TRUE(isfinite(1.0));
    EXPECT_TRUE(signbit(-0.0f));
    EXPECT_EQ(expf(0.0f), 1.0f);
    EXPECT_FLOAT_EQ(exp10f(2.0f), 100.0f);
    EXPECT_EQ(fmaxf(1.0f, nanf("")), 1.0f);
    EXPECT_EQ(copysignf(2.0f, -1.0f), -2.0f);
    float s, c;
    sincosf(0.0f, &s, &c);
    EXPECT_EQ(s, 0.0f);
    EXPECT_EQ(c, 1.0f);
}

TEST(MathFunctions, MinMaxFollowCudaOverloads) {
    EXPECT_EQ(max(-1, 1u), 0xffffffffu);  // CUDA converts the int operand to unsigned
    EXPECT_EQ(min(-1, 1), -1);
    EXPECT_EQ(max(-5ll, 3ll), 3ll);
    EXPECT_EQ(min(7ul, 3ul), 3ul);
    EXPECT_EQ(max(2.0f, nanf("")), 2.0f);
    EXPECT_EQ(min(2.0, -3.0f), -3.0);
    EXPECT_EQ(umin(3u, 9u), 3u);
    EXPECT_EQ(llmax(-2ll, -9ll), -2ll);
    EXPECT_EQ(ullmin(5ull, 9ull), 5ull);
}

TEST(MathFunctions, ReciprocalAndPiScaledFunctions) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(1e-3f, 1e3f);
    for (int i = 0; i < 100000; ++i) {
        const float x = dist(rng);
        const long double rs = 1.0L / std::sqrt(static_cast<long double>(x));
        EXPECT_NEAR(rsqrtf(x), rs, 1.2e-7 * rs) << x;
        const long double rc = 1.0L / std::cbrt(static_cast<long double>(x));
        EXPECT_NEAR(rcbrtf(x), rc, 1.2e-7 * rc) << x;
    }
    EXPECT_EQ(rsqrt(4.0), 0.5);
    EXPECT_EQ(rsqrtf(0.0f), std::numeric_limits<float>::infinity());
    // sinpi/cospi are exact at integers and half-integers, with IEEE signs of zero.
    for (int k = -8; k <= 8; ++k) {
        EXPECT_EQ(sinpi(static_cast<double>(k)), 0.0) << k;
        EXPECT_EQ(std::signbit(sinpi(static_cast<double>(k))), k < 0) << k;
        EXPECT_EQ(cospi(static_cast<double>(k)), (k % 2 == 0) ? 1.0 : -1.0) << k;
        EXPECT_EQ(cospi(k + 0.5), 0.0) << k;
        EXPECT_FALSE(std::signbit(cospi(k + 0.5))) << k;
        EXPECT_EQ(sinpi(k + 0.5), (((k % 2) + 2) % 2 == 0) ? 1.0 : -1.0) << k;
    }
    std::uniform_real_distribution<double> wide(-1e6, 1e6);
    std::mt19937_64 rng64(6);
    const long double pi = 3.14159265358979323846264338327950288L;
    for (int i = 0; i < 100000; ++i) {
        const double x = wide(rng64);
        const long double r = std::fmod(static_cast<long double>(x), 2.0L);  // exact
        EXPECT_NEAR(sinpi(x), std::sin(pi * r), 4e-16) << x;
        EXPECT_NEAR(cospi(x), std::cos(pi * r), 4e-16) << x;
        float s, c;
        sincospif(static_cast<float>(x), &s, &c);
        const long double rf = std::fmod(static_cast<long double>(static_cast<float>(x)), 2.0L);
        EXPECT_NEAR(s, std::sin(pi * rf), 1.2e-7) << x;
        EXPECT_NEAR(c, std::cos(pi * rf), 1.2e-7) << x;
    }
}

TEST(MathFunctions, InverseErrorFunctionsInvertTheErrorFunctions) {
    for (double x = -5.9; x <= 5.9; x += 0.0137) {
        const double y = std::erf(x);
        if (std::fabs(y) < 1.0 - 1e-15) {
            // Conditioning: dx = dy / erf'(x); allow a few ulps of y propagated through that.
            const double slope = 2.0 / std::sqrt(3.14159265358979323846) * std::exp(-x * x);
            EXPECT_NEAR(erfinv(y), x, 4e-16 / slope + 4e-16 * std::fabs(x)) << "erfinv(erf(" << x << "))";
        }
    }
    for (double x = -1.5; x <= 26.5; x += 0.0173) {
        const double c = std::erfc(x);
        if (c > 0 && c < 2) {
            EXPECT_NEAR(erfcinv(c), x, 1e-13 * std::max(1.0, std::fabs(x))) << "erfcinv(erfc(" << x << "))";
        }
    }
    EXPECT_EQ(erfinv(0.0), 0.0);
    EXPECT_EQ(erfinv(1.0), std::numeric_limits<double>::infinity());
    EXPECT_EQ(erfinv(-1.0), -std::numeric_limits<double>::infinity());
    EXPECT_TRUE(std::isnan(erfinv(1.5)));
    EXPECT_EQ(erfcinv(0.0), std::numeric_limits<double>::infinity());
    EXPECT_EQ(erfcinv(2.0), -std::numeric_limits<double>::infinity());
    EXPECT_TRUE(std::isnan(erfcinv(-0.1)));
    EXPECT_GT(erfcinv(std::numeric_limits<double>::denorm_min()), 27.0);
    for (float y = -0.999f; y < 1.0f; y += 0.0137f) EXPECT_NEAR(std::erf(erfinvf(y)), y, 3e-7f) << y;
}

TEST(MathFunctions, ScaledComplementaryErrorFunction) {
    for (double x = -20.0; x <= 100.0; x += 0.0731) {
        const long double lx = x;
        const long double expected = std::exp(lx * lx) * std::erfc(lx);  // long double: no overflow or underflow here
        EXPECT_NEAR(erfcx(x), static_cast<double>(expected), 2e-14 * static_cast<double>(expected)) << x;
        const float xf = static_cast<float>(x);
        const long double expected_f = std::exp(static_cast<long double>(xf) * xf) * std::erfc(static_cast<long double>(xf));
        if (expected_f > std::numeric_limits<float>::max()) {
            EXPECT_TRUE(std::isinf(erfcxf(xf))) << x;
        } else {
            EXPECT_NEAR(erfcxf(xf), static_cast<double>(expected_f), 1.2e-7 * static_cast<double>(expected_f)) << x;
        }
    }
    EXPECT_NEAR(erfcx(1e10), 1.0 / (1e10 * std::sqrt(3.14159265358979323846)), 1e-26);
    EXPECT_EQ(erfcx(std::numeric_limits<double>::infinity()), 0.0);
}

TEST(MathFunctions, NormalDistribution) {
    for (double x = -37.0; x <= 8.0; x += 0.0457) {
        const long double expected = 0.5L * std::erfc(-static_cast<long double>(x) / std::sqrt(2.0L));
        EXPECT_NEAR(normcdf(x), static_cast<double>(expected), 1e-13 * static_cast<double>(expected)) << x;
        if (expected < 1.0L - 1e-15L) {
            // Conditioning: an ulp of p moves the inverse by ulp(p) / pdf(x).
            const double p = static_cast<double>(expected);
            const double pdf = std::exp(-x * x / 2) / std::sqrt(2 * 3.14159265358979323846);
            const double ulp = std::nextafter(p, 2.0) - p;
            EXPECT_NEAR(normcdfinv(p), x, 2 * ulp / pdf + 1e-13 * std::max(1.0, std::fabs(x))) << x;
        }
    }
    EXPECT_EQ(normcdfinv(0.5), 0.0);
    EXPECT_NEAR(normcdff(1.0f), 0.841344746f, 1e-7f);
    EXPECT_NEAR(normcdfinvf(0.975f), 1.95996398f, 2e-6f);
}

TEST(MathFunctions, NormsAndHypot) {
    EXPECT_EQ(norm3d(2.0, 3.0, 6.0), 7.0);
    EXPECT_EQ(rnorm3d(2.0, 3.0, 6.0), 1.0 / 7.0);
    EXPECT_EQ(norm4d(1.0, 1.0, 1.0, 1.0), 2.0);
    EXPECT_EQ(norm3df(2.0f, 3.0f, 6.0f), 7.0f);
    EXPECT_EQ(rnorm4df(2.0f, 2.0f, 2.0f, 2.0f), 0.25f);
    EXPECT_EQ(rhypot(3.0, 4.0), 0.2);
    EXPECT_EQ(rhypotf(3.0f, 4.0f), 0.2f);
    EXPECT_EQ(norm3d(1e300, 1e300, 1e300), std::sqrt(3.0) * 1e300);  // no overflow
    const double v[] = {1.0, 2.0, 2.0, 4.0};
    EXPECT_EQ(norm(4, v), 5.0);
    EXPECT_EQ(rnorm(4, v), 0.2);
    const float vf[] = {3.0f, 4.0f};
    EXPECT_EQ(normf(2, vf), 5.0f);
    EXPECT_NEAR(cyl_bessel_i0(1.0), 1.2660658777520082, 1e-15);
    EXPECT_NEAR(cyl_bessel_i1(-1.0), -0.5651591039924851, 1e-15);
}

TEST(MathFunctions, FastIntrinsics) {
    for (float x = -10.0f; x < 10.0f; x += 0.37f) {
        EXPECT_NEAR(__expf(x), std::exp(static_cast<double>(x)), 2e-7 * std::exp(static_cast<double>(x))) << x;
        EXPECT_NEAR(__sinf(x), std::sin(static_cast<double>(x)), 1e-6) << x;
        EXPECT_NEAR(__cosf(x), std::cos(static_cast<double>(x)), 1e-6) << x;
        EXPECT_NEAR(__tanhf(x), std::tanh(static_cast<double>(x)), 1e-6) << x;
        if (x > 0) {
            EXPECT_NEAR(__logf(x), std::log(static_cast<double>(x)), 1e-6) << x;
            EXPECT_NEAR(__log2f(x), std::log2(static_cast<double>(x)), 1e-6) << x;
            EXPECT_NEAR(__log10f(x), std::log10(static_cast<double>(x)), 1e-6) << x;
            EXPECT_NEAR(__powf(x, 1.5f), std::pow(static_cast<double>(x), 1.5), 2e-6 * std::pow(static_cast<double>(x), 1.5)) << x;
        }
    }
    float s, c;
    __sincosf(1.0f, &s, &c);
    EXPECT_NEAR(s, 0.841470985f, 1e-7f);
    EXPECT_NEAR(c, 0.540302306f, 1e-7f);
    EXPECT_FLOAT_EQ(__exp10f(3.0f), 1000.0f);
    EXPECT_EQ(__tanf(0.0f), 0.0f);
    EXPECT_EQ(__fdividef(1.0f, 4.0f), 0.25f);
    EXPECT_EQ(fdividef(3.0f, 4.0f), 0.75f);
    EXPECT_EQ(__saturatef(1.5f), 1.0f);
    EXPECT_EQ(__saturatef(-0.5f), 0.0f);
    EXPECT_EQ(__saturatef(0.25f), 0.25f);
    EXPECT_EQ(__saturatef(nanf("")), 0.0f);
    EXPECT_EQ(__frsqrt_rn(0.25f), 2.0f);
}

// ---------------------------------------------------------------------------------------------
// Integer intrinsics against brute-force definitions

TEST(IntegerIntrinsics, BitCounting) {
    std::mt19937_64 rng(9);
    for (int i = 0; i < 200000; ++i) {
        std::uint64_t v = rng() >> (rng() % 64);
        if (i % 7 == 0) v = 0;
        const auto v32 = static_cast<std::uint32_t>(v);
        int pop = 0, clz32 = 32, clz64 = 64, ffs32 = 0, ffs64 = 0;
        for (int b = 0; b < 64; ++b) {
            if ((v >> b) & 1) {
                ++pop;
                clz64 = 63 - b;
                if (!ffs64) ffs64 = b + 1;
            }
            if (b < 32 && ((v32 >> b) & 1)) {
                clz32 = 31 - b;
                if (!ffs32) ffs32 = b + 1;
            }
        }
        std::uint32_t rev32 = 0;
        std::uint64_t rev64 = 0;
        for (int b = 0; b < 64; ++b) rev64 |= ((v >> b) & 1) << (63 - b);
        for (int b = 0; b < 32; ++b) rev32 |= ((v32 >> b) & 1u) << (31 - b);
        ASSERT_EQ(__popcll(v), pop);
        ASSERT_EQ(__popc(v32), std::popcount(v32));
        ASSERT_EQ(__clzll(static_cast<long long>(v)), clz64);
        ASSERT_EQ(__clz(static_cast<int>(v32)), clz32);
        ASSERT_EQ(__ffsll(static_cast<long long>(v)), ffs64);
        ASSERT_EQ(__ffs(static_cast<int>(v32)), ffs32);
        ASSERT_EQ(__brevll(v), rev64);
        ASSERT_EQ(__brev(v32), rev32);
    }
}

TEST(IntegerIntrinsics, BytePermAndFunnelShifts) {
    std::mt19937 rng(10);
    for (int i = 0; i < 200000; ++i) {
        const std::uint32_t x = rng(), y = rng(), s = rng();
        unsigned char bytes[8];
        for (int b = 0; b < 4; ++b) {
            bytes[b] = static_cast<unsigned char>(x >> (8 * b));
            bytes[b + 4] = static_cast<unsigned char>(y >> (8 * b));
        }
        std::uint32_t expected = 0;
        for (int n = 0; n < 4; ++n) expected |= static_cast<std::uint32_t>(bytes[(s >> (4 * n)) & 7]) << (8 * n);
        ASSERT_EQ(__byte_perm(x, y, s), expected) << std::hex << x << " " << y << " " << s;
        const std::uint64_t hilo = (static_cast<std::uint64_t>(y) << 32) | x;
        const unsigned shift = rng() % 40;
        ASSERT_EQ(__funnelshift_l(x, y, shift), static_cast<std::uint32_t>((hilo << (shift % 32)) >> 32));
        ASSERT_EQ(__funnelshift_r(x, y, shift), static_cast<std::uint32_t>(hilo >> (shift % 32)));
        ASSERT_EQ(__funnelshift_lc(x, y, shift), static_cast<std::uint32_t>((hilo << std::min(shift, 32u)) >> 32));
        ASSERT_EQ(__funnelshift_rc(x, y, shift), static_cast<std::uint32_t>(hilo >> std::min(shift, 32u)));
    }
    EXPECT_EQ(__byte_perm(0x33221100u, 0x77665544u, 0x0123u), 0x00112233u);
    EXPECT_EQ(__byte_perm(0x33221100u, 0x77665544u, 0x7654u), 0x77665544u);
    EXPECT_EQ(__byte_perm(0x33221100u, 0x77665544u, 0x8888u), 0x00000000u);  // bit 3 of a selector is ignored
}

TEST(IntegerIntrinsics, MultiplyHighAnd24Bit) {
    std::mt19937_64 rng(11);
    __extension__ typedef __int128 i128;
    __extension__ typedef unsigned __int128 u128;
    for (int i = 0; i < 200000; ++i) {
        const std::uint64_t a = rng(), b = rng();
        const auto ia = static_cast<std::int32_t>(a), ib = static_cast<std::int32_t>(b);
        const auto ua = static_cast<std::uint32_t>(a), ub = static_cast<std::uint32_t>(b);
        ASSERT_EQ(__mulhi(ia, ib), static_cast<std::int32_t>((static_cast<std::int64_t>(ia) * ib) >> 32));
        ASSERT_EQ(__umulhi(ua, ub), static_cast<std::uint32_t>((static_cast<std::uint64_t>(ua) * ub) >> 32));
        ASSERT_EQ(__mul64hi(static_cast<long long>(a), static_cast<long long>(b)),
                  static_cast<long long>((static_cast<i128>(static_cast<long long>(a)) * static_cast<long long>(b)) >> 64));
        ASSERT_EQ(__umul64hi(a, b), static_cast<unsigned long long>((static_cast<u128>(a) * b) >> 64));
        // 24-bit multiplies: the operands' low 24 bits (sign-extended for __mul24).
        const std::int64_t sa = (ua & 0x800000u) ? static_cast<std::int64_t>(ua & 0xffffffu) - 0x1000000 : (ua & 0xffffffu);
        const std::int64_t sb = (ub & 0x800000u) ? static_cast<std::int64_t>(ub & 0xffffffu) - 0x1000000 : (ub & 0xffffffu);
        ASSERT_EQ(__mul24(ia, ib), static_cast<std::int32_t>(static_cast<std::uint32_t>(sa * sb)));
        ASSERT_EQ(__umul24(ua, ub), static_cast<std::uint32_t>(static_cast<std::uint64_t>(ua & 0xffffffu) * (ub & 0xffffffu)));
    }
}

TEST(IntegerIntrinsics, AveragesAbsoluteDifferencesAndDotProducts) {
    std::mt19937 rng(12);
    for (int i = 0; i < 200000; ++i) {
        const auto x = static_cast<std::int32_t>(rng()), y = static_cast<std::int32_t>(rng());
        const std::uint32_t ux = rng(), uy = rng(), z = rng();
        const std::int64_t sum = static_cast<std::int64_t>(x) + y;
        ASSERT_EQ(__hadd(x, y), static_cast<int>(sum >= 0 ? sum / 2 : (sum - 1) / 2));  // floor
        ASSERT_EQ(__rhadd(x, y), static_cast<int>((sum + 1) >= 0 ? (sum + 1) / 2 : sum / 2));
        ASSERT_EQ(__uhadd(ux, uy), static_cast<std::uint32_t>((static_cast<std::uint64_t>(ux) + uy) / 2));
        ASSERT_EQ(__urhadd(ux, uy), static_cast<std::uint32_t>((static_cast<std::uint64_t>(ux) + uy + 1) / 2));
        const std::int64_t d = static_cast<std::int64_t>(x) - y;
        ASSERT_EQ(__sad(x, y, z), static_cast<std::uint32_t>(static_cast<std::uint64_t>(d < 0 ? -d : d) + z));
        ASSERT_EQ(__usad(ux, uy, z), (ux > uy ? ux - uy : uy - ux) + z);
        std::int64_t dp4 = static_cast<std::int32_t>(z);
        std::uint64_t udp4 = z;
        std::int64_t dp2lo = static_cast<std::int32_t>(z), dp2hi = static_cast<std::int32_t>(z);
        for (int k = 0; k < 4; ++k) {
            dp4 += static_cast<std::int64_t>(static_cast<std::int8_t>(ux >> (8 * k))) * static_cast<std::int8_t>(uy >> (8 * k));
            udp4 += static_cast<std::uint64_t>(static_cast<std::uint8_t>(ux >> (8 * k))) * static_cast<std::uint8_t>(uy >> (8 * k));
        }
        for (int k = 0; k < 2; ++k) {
            dp2lo += static_cast<std::int64_t>(static_cast<std::int16_t>(ux >> (16 * k))) * static_cast<std::int8_t>(uy >> (8 * k));
            dp2hi += static_cast<std::int64_t>(static_cast<std::int16_t>(ux >> (16 * k))) * static_cast<std::int8_t>(uy >> (8 * (k + 2)));
        }
        ASSERT_EQ(__dp4a(static_cast<int>(ux), static_cast<int>(uy), static_cast<int>(z)), static_cast<int>(static_cast<std::uint32_t>(dp4)));
        ASSERT_EQ(__dp4a(ux, uy, z), static_cast<std::uint32_t>(udp4));
        ASSERT_EQ(__dp2a_lo(static_cast<int>(ux), static_cast<int>(uy), static_cast<int>(z)), static_cast<int>(static_cast<std::uint32_t>(dp2lo)));
        ASSERT_EQ(__dp2a_hi(static_cast<int>(ux), static_cast<int>(uy), static_cast<int>(z)), static_cast<int>(static_cast<std::uint32_t>(dp2hi)));
    }
    EXPECT_EQ(__dp4a(make_char4(1, -2, 3, -4), make_char4(5, 6, 7, 8), 100), 100 + 5 - 12 + 21 - 32);
    EXPECT_EQ(__dp2a_lo(make_short2(-300, 2), make_char4(3, 4, 100, 100), 0), -900 + 8);
    EXPECT_EQ(__dp2a_hi(make_ushort2(300, 2), make_uchar4(100, 100, 3, 4), 1u), 901u + 8u);
}

// ---------------------------------------------------------------------------------------------
// Loads, stores, fences, clocks

TEST(MemoryIntrinsics, CacheHintedLoadsAndStoresAccessMemory) {
    const float f = 1.25f;
    const int4 v = make_int4(1, 2, 3, 4);
    const double2 d = make_double2(0.5, -0.5);
    const unsigned long long u = 0x123456789abcdefull;
    EXPECT_EQ(__ldg(&f), 1.25f);
    EXPECT_EQ(__ldcs(&v).w, 4);
    EXPECT_EQ(__ldca(&d).y, -0.5);
    EXPECT_EQ(__ldlu(&u), u);
    EXPECT_EQ(__ldcv(&u), u);
    EXPECT_EQ(__ldcg(&v).x, 1);
    float out = 0;
    __stwt(&out, 2.5f);
    EXPECT_EQ(out, 2.5f);
    float4 out4{};
    __stcs(&out4, make_float4(1, 2, 3, 4));
    EXPECT_EQ(out4.z, 3.0f);
    __stcg(&out, 3.5f);
    __stwb(&out4, make_float4(5, 6, 7, 8));
    EXPECT_EQ(out, 3.5f);
    EXPECT_EQ(out4.w, 8.0f);
}

TEST(MemoryIntrinsics, Clock64IsMonotonic) {
    long long previous = clock64();
    for (int i = 0; i < 1000; ++i) {
        __threadfence();
        __threadfence_block();
        __threadfence_system();
        if (i % 100 == 0) __nanosleep(100);
        const long long now = clock64();
        ASSERT_GE(now, previous);
        previous = now;
    }
}

// ---------------------------------------------------------------------------------------------
// Vector types and constants

TEST(VectorTypes, SizeAndAlignmentMatchCuda) {
    static_assert(sizeof(char1) == 1 && alignof(char1) == 1);
    static_assert(sizeof(char2) == 2 && alignof(char2) == 2);
    static_assert(sizeof(char3) == 3 && alignof(char3) == 1);
    static_assert(sizeof(uchar4) == 4 && alignof(uchar4) == 4);
    static_assert(sizeof(short2) == 4 && alignof(short2) == 4);
    static_assert(sizeof(ushort3) == 6 && alignof(ushort3) == 2);
    static_assert(sizeof(short4) == 8 && alignof(short4) == 8);
    static_assert(sizeof(int2) == 8 && alignof(int2) == 8);
    static_assert(sizeof(int3) == 12 && alignof(int3) == 4);
    static_assert(sizeof(uint4) == 16 && alignof(uint4) == 16);
    static_assert(sizeof(long2) == 16 && alignof(long2) == 16);
    static_assert(sizeof(ulong3) == 24 && alignof(ulong3) == 8);
    static_assert(sizeof(long4) == 32 && alignof(long4) == 16);
    static_assert(sizeof(longlong2) == 16 && alignof(longlong2) == 16);
    static_assert(sizeof(ulonglong4) == 32 && alignof(ulonglong4) == 16);
    static_assert(sizeof(float1) == 4 && alignof(float1) == 4);
    static_assert(sizeof(float2) == 8 && alignof(float2) == 8);
    static_assert(sizeof(float3) == 12 && alignof(float3) == 4);
    static_assert(sizeof(float4) == 16 && alignof(float4) == 16);
    static_assert(sizeof(double2) == 16 && alignof(double2) == 16);
    static_assert(sizeof(double3) == 24 && alignof(double3) == 8);
    static_assert(sizeof(double4) == 32 && alignof(double4) == 16);
    static_assert(alignof(double4_32a) == 32 && alignof(longlong4_16a) == 16 && alignof(ulong4_32a) == 32);
    static_assert(sizeof(uint3) == 12 && sizeof(dim3) == 12);
    static_assert(std::is_aggregate_v<float4> && std::is_trivially_copyable_v<float4>);
    SUCCEED();
}

TEST(VectorTypes, MakeFunctionsAndAggregateInit) {
    const float4 f = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
    EXPECT_EQ(f.x + f.y + f.z + f.w, 10.0f);
    const float2 g{5.0f, 6.0f};
    EXPECT_EQ(g.y, 6.0f);
    const char4 c = make_char4(-1, 2, -3, 4);
    EXPECT_EQ(c.x, -1);
    EXPECT_EQ(make_uchar3(1, 2, 250).z, 250);
    EXPECT_EQ(make_ulonglong2(1, 0xffffffffffffffffull).y, 0xffffffffffffffffull);
    EXPECT_EQ(make_double3(0.5, 1.5, 2.5).z, 2.5);
    EXPECT_EQ(make_long4_32a(1, 2, 3, 4).w, 4);
    const dim3 d(4, 2);
    EXPECT_EQ(d.x * d.y * d.z, 8u);
    const uint3 u = d;
    EXPECT_EQ(u.y, 2u);
    const dim3 back(make_uint3(7, 8, 9));
    EXPECT_EQ(back.z, 9u);
    int4 arr[2] = {};
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&arr[1]) - reinterpret_cast<std::uintptr_t>(&arr[0]), 16u);
}

TEST(MathConstants, ValuesAndSpecials) {
    EXPECT_EQ(CUDART_PI_F, static_cast<float>(3.14159265358979323846));
    EXPECT_EQ(CUDART_PI, 3.14159265358979323846);
    EXPECT_TRUE(std::isinf(CUDART_INF_F) && CUDART_INF_F > 0);
    EXPECT_TRUE(std::isnan(CUDART_NAN_F));
    EXPECT_TRUE(std::isinf(CUDART_INF));
    EXPECT_TRUE(std::isnan(CUDART_NAN));
    EXPECT_TRUE(std::signbit(CUDART_NEG_ZERO_F) && CUDART_NEG_ZERO_F == 0.0f);
    EXPECT_EQ(CUDART_MAX_NORMAL_F, std::numeric_limits<float>::max());
    EXPECT_EQ(CUDART_MIN_DENORM_F, std::numeric_limits<float>::denorm_min());
    EXPECT_EQ(CUDART_MIN_DENORM, std::numeric_limits<double>::denorm_min());
    EXPECT_EQ(CUDART_SQRT_TWO_F, std::sqrt(2.0f));
    EXPECT_EQ(CUDART_LN2, std::log(2.0));
}

}  // namespace

#endif  // defined(CUSIM)
