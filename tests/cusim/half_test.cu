// Tests of cusim's cuda_fp16.h / cuda_bf16.h against independent references: a table of every
// finite value of the format with exact midpoint comparisons, and exact integer (rational)
// arithmetic for the operations. Host code only; it also compiles with nvcc against CUDA's own
// headers (C++17), where the functions CUDA declares device-only are left out.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

__extension__ typedef __int128 i128;

enum class Mode { rn, rz, ru, rd };

struct Format {
    int exp_bits;
    int mant_bits;
    unsigned inf_bits() const { return ((1u << exp_bits) - 1u) << mant_bits; }
    unsigned sign_bit() const { return 1u << (exp_bits + mant_bits); }
};
const Format kHalf{5, 10};
const Format kBf16{8, 7};

unsigned short half_bits(__half h) { return static_cast<__half_raw>(h).x; }
__half half_from_bits(unsigned short b) {
    __half_raw r;
    r.x = b;
    return __half(r);
}
unsigned short bf16_bits(__nv_bfloat16 h) { return static_cast<__nv_bfloat16_raw>(h).x; }
__nv_bfloat16 bf16_from_bits(unsigned short b) {
    __nv_bfloat16_raw r;
    r.x = b;
    return __nv_bfloat16(r);
}
unsigned float_bits(float f) {
    unsigned u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
float float_from_bits(unsigned u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

bool is_nan_bits(unsigned bits, const Format& f) {
    return (bits & (f.sign_bit() - 1)) > f.inf_bits();
}

/// Value of a bit pattern straight from the IEEE definition.
long double decode(unsigned bits, const Format& f) {
    const int bias = (1 << (f.exp_bits - 1)) - 1;
    const unsigned e = (bits >> f.mant_bits) & ((1u << f.exp_bits) - 1);
    const unsigned m = bits & ((1u << f.mant_bits) - 1);
    long double v;
    if (e == (1u << f.exp_bits) - 1) {
        v = m ? std::numeric_limits<long double>::quiet_NaN() : std::numeric_limits<long double>::infinity();
    } else if (e == 0) {
        v = std::ldexp(static_cast<long double>(m) / (1u << f.mant_bits), 1 - bias);
    } else {
        v = std::ldexp(1.0L + static_cast<long double>(m) / (1u << f.mant_bits), static_cast<int>(e) - bias);
    }
    return (bits & f.sign_bit()) ? -v : v;
}

/// All non-negative finite values in increasing order (index == bit pattern), followed by the
/// first value past the largest finite one (index == the infinity pattern).
std::vector<long double> positive_values(const Format& f) {
    std::vector<long double> t;
    for (unsigned b = 0; b < f.inf_bits(); ++b) t.push_back(decode(b, f));
    const int emax = (1 << (f.exp_bits - 1)) - 1;
    t.push_back(std::ldexp(1.0L, emax + 1));
    return t;
}

const std::vector<long double>& table(const Format& f) {
    static const std::vector<long double> half_table = positive_values(kHalf);
    static const std::vector<long double> bf16_table = positive_values(kBf16);
    return f.exp_bits == 5 ? half_table : bf16_table;
}

/// Reference rounding of a non-NaN long double to the format.
unsigned ref_round(long double v, const Format& f, Mode mode) {
    const std::vector<long double>& t = table(f);
    const bool neg = std::signbit(v);
    const long double a = std::fabs(v);
    const unsigned sign = neg ? f.sign_bit() : 0u;
    const unsigned n = f.inf_bits();
    if (std::isinf(a)) return sign | n;
    if (a >= t[n]) {  // finite but at least 2^(emax+1): overflows in every mode
        const bool to_inf = mode == Mode::rn || (mode == Mode::ru && !neg) || (mode == Mode::rd && neg);
        return sign | (to_inf ? n : n - 1);
    }
    const unsigned i = static_cast<unsigned>(std::upper_bound(t.begin(), t.end(), a) - t.begin()) - 1;
    if (t[i] == a) return sign | i;
    switch (mode) {
        case Mode::rz: return sign | i;
        case Mode::ru: return sign | (neg ? i : i + 1);
        case Mode::rd: return sign | (neg ? i + 1 : i);
        case Mode::rn: break;
    }
    const long double mid = (t[i] + t[i + 1]) / 2;  // exact: the neighbours differ in their last bits
    if (a < mid) return sign | i;
    if (a > mid) return sign | (i + 1);
    return sign | ((i % 2 == 0) ? i : i + 1);
}

/// Exact rounding to half of |value| = num / (den * 2^24), num >= 0, den > 0: every half is an
/// integer multiple of 2^-24, so the table in those units is integral and comparisons are exact.
unsigned short ref_round_rational_half(bool neg, i128 num, i128 den) {
    static const std::vector<i128> units = [] {
        std::vector<i128> u;
        for (long double v : table(kHalf)) u.push_back(static_cast<i128>(std::ldexp(v, 24)));
        return u;
    }();
    const unsigned n = kHalf.inf_bits();
    const unsigned sign = neg ? kHalf.sign_bit() : 0u;
    unsigned lo = 0, hi = n + 1;  // largest i with units[i] * den <= num
    while (hi - lo > 1) {
        const unsigned mid = (lo + hi) / 2;
        if (units[mid] * den <= num) lo = mid;
        else hi = mid;
    }
    if (lo == n) return static_cast<unsigned short>(sign | n);
    if (units[lo] * den == num) return static_cast<unsigned short>(sign | lo);
    const i128 twice = 2 * num, mid2 = (units[lo] + units[lo + 1]) * den;
    if (twice < mid2) return static_cast<unsigned short>(sign | lo);
    if (twice > mid2) return static_cast<unsigned short>(sign | (lo + 1));
    return static_cast<unsigned short>(sign | (lo % 2 == 0 ? lo : lo + 1));
}

/// A half as a signed integer count of 2^-24.
i128 half_units(unsigned short bits) {
    const long double v = decode(bits, kHalf);
    return static_cast<i128>(std::ldexp(v, 24));
}

std::vector<unsigned short> random_finite_halves(std::size_t count, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<unsigned short> out;
    while (out.size() < count) {
        const unsigned short b = static_cast<unsigned short>(rng());
        if ((b & 0x7c00u) != 0x7c00u) out.push_back(b);
    }
    return out;
}

/// Floats around every rounding boundary of the format: each finite value, each midpoint
/// between neighbours, and the floats just below and above those.
std::vector<float> boundary_floats(const Format& f) {
    const std::vector<long double>& t = table(f);
    std::vector<float> out;
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
        for (long double v : {t[i], (t[i] + t[i + 1]) / 2}) {
            const float x = static_cast<float>(v);
            if (static_cast<long double>(x) != v || std::isinf(x)) continue;
            for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, std::numeric_limits<float>::infinity())}) {
                out.push_back(y);
                out.push_back(-y);
            }
        }
    }
    return out;
}

std::vector<float> edge_floats() {
    const float inf = std::numeric_limits<float>::infinity();
    return {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
            std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
            65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e-8f, 2.9802322e-8f, 5.9604645e-8f, 1.0f / 3.0f, 0.1f,
            3.3895314e38f, 3.3961775e38f, 1e38f, 1e-38f, 9.2e-41f};
}

constexpr Mode kModes[] = {Mode::rn, Mode::rz, Mode::ru, Mode::rd};

__half convert_float_to_half(float x, Mode m) {
    switch (m) {
        case Mode::rz: return __float2half_rz(x);
        case Mode::ru: return __float2half_ru(x);
        case Mode::rd: return __float2half_rd(x);
        case Mode::rn: break;
    }
    return __float2half_rn(x);
}

__nv_bfloat16 convert_float_to_bf16(float x, Mode m) {
    switch (m) {
        case Mode::rz: return __float2bfloat16_rz(x);
        case Mode::ru: return __float2bfloat16_ru(x);
        case Mode::rd: return __float2bfloat16_rd(x);
        case Mode::rn: break;
    }
    return __float2bfloat16_rn(x);
}

// ---------------------------------------------------------------------------------------------
// __half conversions

TEST(HalfConversion, EveryBitPatternConvertsToItsExactFloatValue) {
    for (unsigned b = 0; b < 65536; ++b) {
        const float f = __half2float(half_from_bits(static_cast<unsigned short>(b)));
        const long double expected = decode(b, kHalf);
        if (std::isnan(expected)) {
            EXPECT_TRUE(std::isnan(f)) << std::hex << b;
        } else {
            ASSERT_EQ(static_cast<long double>(f), expected) << "bits 0x" << std::hex << b;
            ASSERT_EQ(std::signbit(f), std::signbit(expected)) << "bits 0x" << std::hex << b;
        }
    }
}

TEST(HalfConversion, EveryBitPatternSurvivesTheRoundTripThroughFloat) {
    for (unsigned b = 0; b < 65536; ++b) {
        const __half h = half_from_bits(static_cast<unsigned short>(b));
        const __half back = __float2half(__half2float(h));
        if (is_nan_bits(b, kHalf)) {
            EXPECT_TRUE(__hisnan(back)) << std::hex << b;
        } else {
            ASSERT_EQ(half_bits(back), b) << "bits 0x" << std::hex << b;
        }
    }
}

TEST(HalfConversion, FloatToHalfMatchesReferenceAtEveryRoundingBoundaryInEveryMode) {
    std::vector<float> inputs = boundary_floats(kHalf);
    const std::vector<float> edges = edge_floats();
    inputs.insert(inputs.end(), edges.begin(), edges.end());
    for (Mode m : kModes) {
        for (float x : inputs) {
            const unsigned expected = ref_round(x, kHalf, m);
            ASSERT_EQ(half_bits(convert_float_to_half(x, m)), expected)
                << "x=" << x << " (0x" << std::hex << float_bits(x) << ") mode " << static_cast<int>(m);
        }
    }
}

TEST(HalfConversion, RandomFloatsMatchReference) {
    std::mt19937 rng(1234);
    for (int i = 0; i < 1 << 20; ++i) {
        // Exponents from far below the subnormal range to past the overflow threshold.
        const unsigned exponent = 95 + rng() % 50;
        const unsigned bits = (rng() & 0x807fffffu) | (exponent << 23);
        const float x = float_from_bits(bits);
        for (Mode m : kModes) {
            ASSERT_EQ(half_bits(convert_float_to_half(x, m)), ref_round(x, kHalf, m))
                << "x=" << x << " (0x" << std::hex << bits << ") mode " << static_cast<int>(m);
        }
    }
}

TEST(HalfConversion, KnownValues) {
    EXPECT_EQ(half_bits(__float2half(1.0f)), 0x3c00);
    EXPECT_EQ(half_bits(__float2half(-2.0f)), 0xc000);
    EXPECT_EQ(half_bits(__float2half(65504.0f)), 0x7bff);
    EXPECT_EQ(half_bits(__float2half(65519.99f)), 0x7bff);
    EXPECT_EQ(half_bits(__float2half(65520.0f)), 0x7c00);  // tie between 65504 and 2^16 goes to even: inf
    EXPECT_EQ(half_bits(__float2half(std::ldexp(1.0f, -24))), 0x0001);  // 2^-24, smallest subnormal
    EXPECT_EQ(half_bits(__float2half(std::ldexp(1.0f, -25))), 0x0000);  // 2^-25 ties to even zero
    EXPECT_EQ(half_bits(__float2half(std::nextafter(std::ldexp(1.0f, -25), 1.0f))), 0x0001);
    EXPECT_EQ(half_bits(__float2half(std::ldexp(1.5f, -24))), 0x0002);  // 1.5 * 2^-24 ties to even 2
    EXPECT_EQ(half_bits(__float2half(-0.0f)), 0x8000);
    EXPECT_EQ(half_bits(__float2half(std::numeric_limits<float>::infinity())), 0x7c00);
    EXPECT_EQ(half_bits(__float2half(-std::numeric_limits<float>::infinity())), 0xfc00);
    EXPECT_TRUE(__hisnan(__float2half(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(half_bits(__float2half(1.0f / 3.0f)), 0x3555);
    EXPECT_EQ(half_bits(__float2half(0.1f)), 0x2e66);
    EXPECT_EQ(half_bits(__float2half_rz(65536.0f)), 0x7bff);
    EXPECT_EQ(half_bits(__float2half_ru(1e-30f)), 0x0001);
    EXPECT_EQ(half_bits(__float2half_rd(-1e-30f)), 0x8001);
    EXPECT_EQ(half_bits(__float2half_rd(1e-30f)), 0x0000);
}

TEST(HalfConversion, DoubleToHalfRoundsOnceNotThroughFloat) {
    // 1 + 2^-11 + 2^-40 lies just above a tie; via float it would become the tie and round down.
    EXPECT_EQ(half_bits(__double2half(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))), 0x3c01);
    EXPECT_EQ(half_bits(__double2half(1.0 + std::ldexp(1.0, -11))), 0x3c00);
    std::mt19937_64 rng(99);
    for (int i = 0; i < 1 << 18; ++i) {
        const std::uint64_t exponent = 1023 - 30 + rng() % 50;
        const std::uint64_t bits = (rng() & 0x800fffffffffffffull) | (exponent << 52);
        double x;
        std::memcpy(&x, &bits, sizeof x);
        ASSERT_EQ(half_bits(__double2half(x)), ref_round(x, kHalf, Mode::rn)) << x;
    }
}

TEST(HalfConversion, IntegersToHalfInEveryMode) {
    for (int i = -70000; i <= 70000; ++i) {
        ASSERT_EQ(half_bits(__int2half_rn(i)), ref_round(i, kHalf, Mode::rn)) << i;
        ASSERT_EQ(half_bits(__int2half_rz(i)), ref_round(i, kHalf, Mode::rz)) << i;
        ASSERT_EQ(half_bits(__int2half_ru(i)), ref_round(i, kHalf, Mode::ru)) << i;
        ASSERT_EQ(half_bits(__int2half_rd(i)), ref_round(i, kHalf, Mode::rd)) << i;
    }
    std::mt19937_64 rng(5);
    for (int k = 0; k < 100000; ++k) {
        const long long v = static_cast<long long>(rng()) >> (rng() % 64);
        ASSERT_EQ(half_bits(__ll2half_rn(v)), ref_round(static_cast<long double>(v), kHalf, Mode::rn)) << v;
        ASSERT_EQ(half_bits(__ll2half_rd(v)), ref_round(static_cast<long double>(v), kHalf, Mode::rd)) << v;
        const unsigned long long u = rng() >> (rng() % 64);
        ASSERT_EQ(half_bits(__ull2half_ru(u)), ref_round(static_cast<long double>(u), kHalf, Mode::ru)) << u;
    }
    EXPECT_EQ(half_bits(__uint2half_rn(4294967295u)), 0x7c00);
    EXPECT_EQ(half_bits(__uint2half_rz(4294967295u)), 0x7bff);
    EXPECT_EQ(half_bits(__short2half_rn(-32768)), 0xf800);
    EXPECT_EQ(half_bits(__ushort2half_rn(2049)), 0x6800);  // 2049 ties to even 2048
    EXPECT_EQ(half_bits(__ushort2half_rn(2051)), 0x6802);  // 2051 ties to even 2052
}

TEST(HalfConversion, HalfToIntegerTruncatesAndSaturates) {
    EXPECT_EQ(__half2int_rz(__float2half(2.75f)), 2);
    EXPECT_EQ(__half2int_rz(__float2half(-2.75f)), -2);
    EXPECT_EQ(__half2int_rz(half_from_bits(0x7c00)), 2147483647);
    EXPECT_EQ(__half2int_rz(half_from_bits(0xfc00)), -2147483647 - 1);
    EXPECT_EQ(__half2int_rz(half_from_bits(0x7e00)), 0);
    EXPECT_EQ(__half2short_rz(__float2half(40000.0f)), 32767);
    EXPECT_EQ(__half2short_rz(__float2half(-40000.0f)), -32768);
    EXPECT_EQ(__half2uint_rz(__float2half(-3.0f)), 0u);
    EXPECT_EQ(__half2ushort_rz(__float2half(65504.0f)), 65504);
    EXPECT_EQ(__half2ll_rz(half_from_bits(0x7e00)), static_cast<long long>(0x8000000000000000ull));
    EXPECT_EQ(__half2ull_rz(half_from_bits(0x7c00)), 0xffffffffffffffffull);
    EXPECT_EQ(__half2char_rz(__float2half(200.0f)), 127);
    EXPECT_EQ(__half2char_rz(__float2half(-200.0f)), -128);
    EXPECT_EQ(__half2uchar_rz(__float2half(300.0f)), 255);
    EXPECT_EQ(__half2uchar_rz(__float2half(-3.0f)), 0);
}

#if defined(CUSIM)  // CUDA declares these conversions device-only
TEST(HalfConversion, HalfToIntegerRoundingModes) {
    const float values[] = {2.5f, 3.5f, -2.5f, -3.5f, 2.25f, -2.25f, 0.5f, -0.5f, 1000.5f};
    const int rn[] = {2, 4, -2, -4, 2, -2, 0, 0, 1000};
    const int rd[] = {2, 3, -3, -4, 2, -3, 0, -1, 1000};
    const int ru[] = {3, 4, -2, -3, 3, -2, 1, 0, 1001};
    for (int i = 0; i < 9; ++i) {
        const __half h = __float2half(values[i]);
        EXPECT_EQ(__half2int_rn(h), rn[i]) << values[i];
        EXPECT_EQ(__half2int_rd(h), rd[i]) << values[i];
        EXPECT_EQ(__half2int_ru(h), ru[i]) << values[i];
        EXPECT_EQ(__half2ll_rn(h), rn[i]) << values[i];
        EXPECT_EQ(__half2short_rd(h), rd[i]) << values[i];
    }
    EXPECT_EQ(__half2uint_rn(__float2half(-0.75f)), 0u);
    EXPECT_EQ(__half2uint_ru(half_from_bits(0x7c00)), 0xffffffffu);
    EXPECT_EQ(__half2int_rn(half_from_bits(0x7e00)), 0);
    EXPECT_EQ(__half2ull_rn(half_from_bits(0x7e00)), 0x8000000000000000ull);
}
#endif

// ---------------------------------------------------------------------------------------------
// __half arithmetic against exact integer arithmetic

TEST(HalfArithmetic, AddSubMulDivAreCorrectlyRoundedOnRandomOperands) {
    const std::vector<unsigned short> a = random_finite_halves(400000, 17);
    const std::vector<unsigned short> b = random_finite_halves(400000, 18);
    for (std::size_t i = 0; i < a.size(); ++i) {
        const i128 A = half_units(a[i]), B = half_units(b[i]);
        const __half ha = half_from_bits(a[i]), hb = half_from_bits(b[i]);
        const i128 sum = A + B, diff = A - B, prod = A * B;
        if (sum != 0) {
            ASSERT_EQ(half_bits(__hadd(ha, hb)), ref_round_rational_half(sum < 0, sum < 0 ? -sum : sum, 1)) << std::hex << a[i] << " + " << b[i];
        }
        if (diff != 0) {
            ASSERT_EQ(half_bits(__hsub(ha, hb)), ref_round_rational_half(diff < 0, diff < 0 ? -diff : diff, 1)) << std::hex << a[i] << " - " << b[i];
        }
        if (prod != 0) {
            ASSERT_EQ(half_bits(__hmul(ha, hb)), ref_round_rational_half(prod < 0, prod < 0 ? -prod : prod, i128(1) << 24)) << std::hex << a[i] << " * " << b[i];
        }
        if (A != 0 && B != 0) {
            const bool neg = (A < 0) != (B < 0);
            ASSERT_EQ(half_bits(__hdiv(ha, hb)), ref_round_rational_half(neg, (A < 0 ? -A : A) << 24, B < 0 ? -B : B)) << std::hex << a[i] << " / " << b[i];
        }
    }
}

TEST(HalfArithmetic, SpecialValuesFollowIeee) {
    const __half inf = half_from_bits(0x7c00), ninf = half_from_bits(0xfc00), nan = half_from_bits(0x7e00);
    const __half one = __float2half(1.0f), zero = half_from_bits(0), nzero = half_from_bits(0x8000);
    EXPECT_EQ(half_bits(__hadd(inf, one)), 0x7c00);
    EXPECT_TRUE(__hisnan(__hadd(inf, ninf)));
    EXPECT_TRUE(__hisnan(__hmul(inf, zero)));
    EXPECT_TRUE(__hisnan(__hadd(nan, one)));
    EXPECT_EQ(half_bits(__hadd(nan, one)), 0x7fff);  // canonical NaN
    EXPECT_EQ(half_bits(__hdiv(one, zero)), 0x7c00);
    EXPECT_EQ(half_bits(__hdiv(one, nzero)), 0xfc00);
    EXPECT_EQ(half_bits(__hadd(one, __hneg(one))), 0x0000);
    EXPECT_EQ(half_bits(__hadd(nzero, nzero)), 0x8000);
    EXPECT_EQ(half_bits(__hmul(__float2half(300.0f), __float2half(300.0f))), 0x7c00);  // overflow
    EXPECT_EQ(half_bits(__hmul(half_from_bits(0x0001), __float2half(0.5f))), 0x0000);  // ties to even zero
    EXPECT_EQ(half_bits(__hmul(half_from_bits(0x0003), __float2half(0.5f))), 0x0002);  // 1.5 ulp ties to 2
    EXPECT_EQ(half_bits(__hneg(nzero)), 0x0000);
    EXPECT_EQ(half_bits(__habs(half_from_bits(0xbc00))), 0x3c00);
    EXPECT_EQ(half_bits(__hadd_sat(__float2half(0.75f), __float2half(0.5f))), 0x3c00);
    EXPECT_EQ(half_bits(__hsub_sat(__float2half(0.25f), __float2half(0.5f))), 0x0000);
    EXPECT_EQ(half_bits(__hadd_sat(nan, one)), 0x0000);
    EXPECT_EQ(half_bits(__hmul_sat(__float2half(0.5f), __float2half(0.5f))), 0x3400);
}

#if defined(CUSIM)  // CUDA declares __hfma and hsqrt device-only
TEST(HalfArithmetic, FmaRoundsOnceOnRandomOperands) {
    const std::vector<unsigned short> a = random_finite_halves(300000, 31);
    const std::vector<unsigned short> b = random_finite_halves(300000, 32);
    const std::vector<unsigned short> c = random_finite_halves(300000, 33);
    for (std::size_t i = 0; i < a.size(); ++i) {
        const i128 exact = half_units(a[i]) * half_units(b[i]) + (half_units(c[i]) << 24);  // units of 2^-48
        if (exact == 0) continue;
        const unsigned short expected = ref_round_rational_half(exact < 0, exact < 0 ? -exact : exact, i128(1) << 24);
        ASSERT_EQ(half_bits(__hfma(half_from_bits(a[i]), half_from_bits(b[i]), half_from_bits(c[i]))), expected)
            << std::hex << a[i] << " * " << b[i] << " + " << c[i];
    }
}

TEST(HalfArithmetic, FmaRoundsOnceWhereMultiplyThenAddWouldNot) {
    // 3 * (1 + 2^-10) = 3 + 1.5 * 2^-9 lies exactly halfway between 0x4201 and 0x4202.
    const __half three = __float2half(3.0f), a = half_from_bits(0x3c01);
    const __half tiny = half_from_bits(0x0001), ntiny = half_from_bits(0x8001);  // +-2^-24
    EXPECT_EQ(half_bits(__hmul(three, a)), 0x4202);                  // the tie goes to even
    EXPECT_EQ(half_bits(__hadd(__hmul(three, a), ntiny)), 0x4202);   // rounding first loses -2^-24
    EXPECT_EQ(half_bits(__hfma(three, a, ntiny)), 0x4201);           // one rounding: below the tie
    EXPECT_EQ(half_bits(__hfma(three, a, tiny)), 0x4202);            // one rounding: above the tie
}

TEST(HalfArithmetic, SqrtIsCorrectlyRoundedForEveryNonNegativeHalf) {
    for (unsigned b = 0; b < 0x7c00; ++b) {
        const unsigned short r = half_bits(hsqrt(half_from_bits(static_cast<unsigned short>(b))));
        ASSERT_LT(r, 0x7c00u) << std::hex << b;
        const i128 a4 = 4 * (half_units(static_cast<unsigned short>(b)) << 24);  // 4 * a in units of 2^-48
        const i128 R = half_units(r);
        const i128 below = r == 0 ? 0 : (half_units(static_cast<unsigned short>(r - 1)) + R);
        const i128 above = R + half_units(static_cast<unsigned short>(r + 1));
        ASSERT_LE(below * below, a4) << "sqrt of 0x" << std::hex << b << " gave 0x" << r;
        ASSERT_GE(above * above, a4) << "sqrt of 0x" << std::hex << b << " gave 0x" << r;
    }
    EXPECT_TRUE(__hisnan(hsqrt(__float2half(-1.0f))));
    EXPECT_EQ(half_bits(hsqrt(half_from_bits(0x8000))), 0x8000);
    EXPECT_EQ(half_bits(hsqrt(half_from_bits(0x7c00))), 0x7c00);
}

TEST(HalfArithmetic, FmaSaturationAndRelu) {
    const __half two = __float2half(2.0f), half_ = __float2half(0.5f), m1 = __float2half(-1.0f);
    EXPECT_EQ(half_bits(__hfma_sat(two, two, m1)), 0x3c00);
    EXPECT_EQ(half_bits(__hfma_sat(m1, two, half_)), 0x0000);
    EXPECT_EQ(half_bits(__hfma_relu(m1, two, half_)), 0x0000);
    EXPECT_EQ(half_bits(__hfma_relu(two, two, m1)), 0x4200);
    EXPECT_EQ(half_bits(__hfma_relu(half_from_bits(0x7e00), two, m1)), 0x7fff);
}

TEST(HalfMath, TranscendentalsAreWithinOneUlpOfTheExactValue) {
    for (unsigned b = 0; b < 0x10000; b += 3) {
        if ((b & 0x7c00u) == 0x7c00u) continue;  // finite inputs only
        const __half h = half_from_bits(static_cast<unsigned short>(b));
        const long double x = decode(b, kHalf);
        const struct {
            const char* name;
            __half got;
            long double exact;
        } cases[] = {
            {"hexp", hexp(h), std::exp(x)},       {"hexp2", hexp2(h), std::exp2(x)},   {"hlog", hlog(h), std::log(x)},
            {"hlog2", hlog2(h), std::log2(x)},    {"hlog10", hlog10(h), std::log10(x)}, {"hsin", hsin(h), std::sin(x)},
            {"hcos", hcos(h), std::cos(x)},       {"htanh", htanh(h), std::tanh(x)},    {"hrcp", hrcp(h), 1.0L / x},
            {"hrsqrt", hrsqrt(h), 1.0L / std::sqrt(x)},
        };
        for (const auto& c : cases) {
            if (std::isnan(c.exact)) {
                ASSERT_TRUE(__hisnan(c.got)) << c.name << "(0x" << std::hex << b << ")";
                continue;
            }
            const int expected = static_cast<int>(ref_round(c.exact, kHalf, Mode::rn));
            const int got = half_bits(c.got);
            ASSERT_LE(std::abs(got - expected), 1) << c.name << "(0x" << std::hex << b << ") = 0x" << got << ", expected 0x" << expected;
        }
    }
    EXPECT_EQ(half_bits(hceil(__float2half(1.25f))), 0x4000);
    EXPECT_EQ(half_bits(hfloor(__float2half(-1.25f))), 0xc000);
    EXPECT_EQ(half_bits(htrunc(__float2half(-1.75f))), 0xbc00);
    EXPECT_EQ(half_bits(hrint(__float2half(2.5f))), 0x4000);
    EXPECT_EQ(half_bits(hrint(__float2half(3.5f))), 0x4400);
    const __half2 v = h2exp(__floats2half2_rn(0.0f, 1.0f));
    EXPECT_EQ(half_bits(v.x), 0x3c00);
    EXPECT_EQ(half_bits(v.y), half_bits(__float2half(2.718281828f)));
}
#endif

// ---------------------------------------------------------------------------------------------
// Comparisons, min/max, classification

TEST(HalfCompare, OrderedAndUnorderedComparisonsWithNaN) {
    const __half one = __float2half(1.0f), two = __float2half(2.0f), nan = half_from_bits(0x7e00);
    EXPECT_TRUE(__hlt(one, two));
    EXPECT_TRUE(__hle(one, one));
    EXPECT_TRUE(__hgt(two, one));
    EXPECT_TRUE(__hge(two, two));
    EXPECT_TRUE(__heq(half_from_bits(0x0000), half_from_bits(0x8000)));
    EXPECT_TRUE(__hne(one, two));
    EXPECT_FALSE(__heq(nan, nan));
    EXPECT_FALSE(__hne(nan, one));
    EXPECT_FALSE(__hlt(nan, one));
    EXPECT_TRUE(__hequ(nan, one));
    EXPECT_TRUE(__hneu(nan, nan));
    EXPECT_TRUE(__hltu(nan, one));
    EXPECT_FALSE(__hltu(two, one));
    EXPECT_TRUE(__hisnan(nan));
    EXPECT_FALSE(__hisnan(one));
    EXPECT_EQ(__hisinf(half_from_bits(0x7c00)), 1);
    EXPECT_EQ(__hisinf(half_from_bits(0xfc00)), -1);
    EXPECT_EQ(__hisinf(one), 0);
}

TEST(HalfCompare, MaxMinFollowCudaNaNAndSignedZeroRules) {
    const __half one = __float2half(1.0f), two = __float2half(2.0f), nan = half_from_bits(0x7e01);
    const __half pz = half_from_bits(0x0000), nz = half_from_bits(0x8000);
    EXPECT_EQ(half_bits(__hmax(one, two)), half_bits(two));
    EXPECT_EQ(half_bits(__hmin(one, two)), half_bits(one));
    EXPECT_EQ(half_bits(__hmax(nan, one)), half_bits(one));
    EXPECT_EQ(half_bits(__hmin(one, nan)), half_bits(one));
    EXPECT_EQ(half_bits(__hmax(nan, nan)), 0x7fff);
    EXPECT_EQ(half_bits(__hmax_nan(nan, one)), 0x7fff);
    EXPECT_EQ(half_bits(__hmin_nan(one, nan)), 0x7fff);
    EXPECT_EQ(half_bits(__hmax(nz, pz)), 0x0000);
    EXPECT_EQ(half_bits(__hmax(pz, nz)), 0x0000);
    EXPECT_EQ(half_bits(__hmin(pz, nz)), 0x8000);
    EXPECT_EQ(half_bits(__hmin(nz, pz)), 0x8000);
}

TEST(HalfCompare, PairComparisons) {
    const __half2 a = __floats2half2_rn(1.0f, 5.0f), b = __floats2half2_rn(2.0f, 5.0f);
    EXPECT_EQ(__heq2_mask(a, b), 0xffff0000u);
    EXPECT_EQ(__hlt2_mask(a, b), 0x0000ffffu);
    EXPECT_EQ(__hle2_mask(a, b), 0xffffffffu);
    const __half2 eq = __heq2(a, b);
    EXPECT_EQ(half_bits(eq.x), 0x0000);
    EXPECT_EQ(half_bits(eq.y), 0x3c00);
    EXPECT_FALSE(__hbeq2(a, b));
    EXPECT_TRUE(__hble2(a, b));
    EXPECT_TRUE(__hbne2(a, __floats2half2_rn(3.0f, 4.0f)));
    const __half2 n = __halves2half2(half_from_bits(0x7e00), __float2half(1.0f));
    EXPECT_EQ(__hequ2_mask(n, n), 0xffffffffu);
    EXPECT_EQ(__heq2_mask(n, n), 0xffff0000u);
    const __half2 isnan2 = __hisnan2(n);
    EXPECT_EQ(half_bits(isnan2.x), 0x3c00);
    EXPECT_EQ(half_bits(isnan2.y), 0x0000);
}

// ---------------------------------------------------------------------------------------------
// Types, operators and packing

TEST(HalfTypes, LayoutMatchesCuda) {
    EXPECT_EQ(sizeof(__half), 2u);
    EXPECT_EQ(alignof(__half), 2u);
    EXPECT_EQ(sizeof(__half2), 4u);
    EXPECT_EQ(alignof(__half2), 4u);
    EXPECT_EQ(sizeof(__nv_bfloat16), 2u);
    EXPECT_EQ(sizeof(__nv_bfloat162), 4u);
    EXPECT_EQ(alignof(__nv_bfloat162), 4u);
}

TEST(HalfTypes, OperatorsAndImplicitConversions) {
    __half a = 1.5f;
    __half b = __float2half(2.0f);
    const float f = a;
    EXPECT_EQ(f, 1.5f);
    EXPECT_EQ(static_cast<float>(a + b), 3.5f);
    EXPECT_EQ(static_cast<float>(a - b), -0.5f);
    EXPECT_EQ(static_cast<float>(a * b), 3.0f);
    EXPECT_EQ(static_cast<float>(b / a), static_cast<float>(__hdiv(b, a)));
    EXPECT_EQ(static_cast<float>(-a), -1.5f);
    EXPECT_TRUE(a < b);
    EXPECT_TRUE(b >= a);
    EXPECT_TRUE(a != b);
    EXPECT_FALSE(a == b);
    a += b;
    EXPECT_EQ(static_cast<float>(a), 3.5f);
    a *= b;
    EXPECT_EQ(static_cast<float>(a), 7.0f);
    ++a;
    EXPECT_EQ(static_cast<float>(a), 8.0f);
    const __half old = a--;
    EXPECT_EQ(static_cast<float>(old), 8.0f);
    EXPECT_EQ(static_cast<float>(a), 7.0f);
    const __half from_int = 3;
    EXPECT_EQ(static_cast<float>(from_int), 3.0f);
    const __half from_double = 0.1;
    EXPECT_EQ(half_bits(from_double), 0x2e66);
    EXPECT_EQ(static_cast<int>(__float2half(2.75f)), 2);
    const __half_raw raw = __float2half(1.0f);
    EXPECT_EQ(raw.x, 0x3c00);
    __half2 p = __floats2half2_rn(1.0f, 2.0f);
    __half2 q = __float2half2_rn(0.5f);
    const __half2 s = p * q + p;
    EXPECT_EQ(__low2float(s), 1.5f);
    EXPECT_EQ(__high2float(s), 3.0f);
    p += q;
    EXPECT_EQ(__low2float(p), 1.5f);
    EXPECT_TRUE(p == __floats2half2_rn(1.5f, 2.5f));
    EXPECT_TRUE(__floats2half2_rn(1.0f, 1.0f) < p);
}

TEST(HalfTypes, PackingFunctions) {
    const __half a = __float2half(1.0f), b = __float2half(2.0f);
    const __half2 ab = __halves2half2(a, b);
    EXPECT_EQ(half_bits(__low2half(ab)), 0x3c00);
    EXPECT_EQ(half_bits(__high2half(ab)), 0x4000);
    const __half2 swapped = __lowhigh2highlow(ab);
    EXPECT_EQ(half_bits(swapped.x), 0x4000);
    EXPECT_EQ(half_bits(swapped.y), 0x3c00);
    const __half2 lows = __lows2half2(ab, swapped);
    EXPECT_EQ(half_bits(lows.x), 0x3c00);
    EXPECT_EQ(half_bits(lows.y), 0x4000);
    const __half2 highs = __highs2half2(ab, swapped);
    EXPECT_EQ(half_bits(highs.x), 0x4000);
    EXPECT_EQ(half_bits(highs.y), 0x3c00);
    EXPECT_EQ(half_bits(__low2half2(ab).y), 0x3c00);
    EXPECT_EQ(half_bits(__high2half2(ab).x), 0x4000);
    EXPECT_EQ(half_bits(__half2half2(b).x), 0x4000);
    const float2 f2 = __half22float2(ab);
    EXPECT_EQ(f2.x, 1.0f);
    EXPECT_EQ(f2.y, 2.0f);
    float2 in;
    in.x = 0.1f;
    in.y = 65520.0f;
    const __half2 h2 = __float22half2_rn(in);
    EXPECT_EQ(half_bits(h2.x), 0x2e66);
    EXPECT_EQ(half_bits(h2.y), 0x7c00);
    EXPECT_EQ(__half_as_ushort(a), 0x3c00);
    EXPECT_EQ(__half_as_short(__float2half(-2.0f)), static_cast<short>(0xc000));
    EXPECT_EQ(half_bits(__ushort_as_half(0x3555)), 0x3555);
    EXPECT_EQ(half_bits(__short_as_half(static_cast<short>(0xc000))), 0xc000);
    EXPECT_EQ(half_bits(CUDART_ONE_FP16), 0x3c00);
    EXPECT_EQ(half_bits(CUDART_INF_FP16), 0x7c00);
}

TEST(HalfTypes, PairArithmeticIsPerLane) {
    const __half2 a = __floats2half2_rn(1.0f, -3.0f), b = __floats2half2_rn(0.5f, 2.0f);
    EXPECT_EQ(__low2float(__hadd2(a, b)), 1.5f);
    EXPECT_EQ(__high2float(__hadd2(a, b)), -1.0f);
    EXPECT_EQ(__high2float(__hsub2(a, b)), -5.0f);
    EXPECT_EQ(__high2float(__hmul2(a, b)), -6.0f);
    EXPECT_EQ(__low2float(__h2div(a, b)), 2.0f);
    EXPECT_EQ(__high2float(__hneg2(a)), 3.0f);
    EXPECT_EQ(__high2float(__habs2(a)), 3.0f);
    EXPECT_EQ(__high2float(__hmax2(a, b)), 2.0f);
    EXPECT_EQ(__low2float(__hmin2(a, b)), 0.5f);
    EXPECT_EQ(__low2float(__hadd2_sat(a, b)), 1.0f);
    EXPECT_EQ(__high2float(__hadd2_sat(a, b)), 0.0f);
}

#if defined(CUSIM)  // device-only in CUDA
TEST(HalfTypes, PairFmaAndComplexMultiplyAccumulate) {
    const __half2 a = __floats2half2_rn(1.0f, 2.0f), b = __floats2half2_rn(3.0f, 4.0f), c = __floats2half2_rn(0.5f, 0.25f);
    const __half2 f = __hfma2(a, b, c);
    EXPECT_EQ(__low2float(f), 3.5f);
    EXPECT_EQ(__high2float(f), 8.25f);
    // (1 + 2i)(3 + 4i) + (0.5 + 0.25i) = (3 - 8 + 0.5) + (4 + 6 + 0.25)i
    const __half2 z = __hcmadd(a, b, c);
    EXPECT_EQ(__low2float(z), -4.5f);
    EXPECT_EQ(__high2float(z), 10.25f);
    const __half h = __float2half(1.25f);
    EXPECT_EQ(half_bits(__ldg(&h)), half_bits(h));
    __half stored;
    __stcs(&stored, h);
    EXPECT_EQ(half_bits(stored), half_bits(h));
}
#endif

// ---------------------------------------------------------------------------------------------
// bfloat16

TEST(Bfloat16Conversion, EveryBitPatternIsTheUpperHalfOfAFloat) {
    for (unsigned b = 0; b < 65536; ++b) {
        const float f = __bfloat162float(bf16_from_bits(static_cast<unsigned short>(b)));
        if (is_nan_bits(b, kBf16)) {
            EXPECT_TRUE(std::isnan(f));
        } else {
            ASSERT_EQ(float_bits(f), b << 16) << std::hex << b;
            ASSERT_EQ(bf16_bits(__float2bfloat16(f)), b) << std::hex << b;
        }
    }
}

TEST(Bfloat16Conversion, FloatToBfloat16MatchesReference) {
    std::vector<float> inputs = boundary_floats(kBf16);
    const std::vector<float> edges = edge_floats();
    inputs.insert(inputs.end(), edges.begin(), edges.end());
    // A stride through every float pattern, all exponents and signs.
    for (std::uint64_t u = 0; u < (1ull << 32); u += 65521) inputs.push_back(float_from_bits(static_cast<unsigned>(u)));
    for (Mode m : kModes) {
        for (float x : inputs) {
            if (std::isnan(x)) {
                EXPECT_EQ(bf16_bits(convert_float_to_bf16(x, m)), 0x7fff);
                continue;
            }
            ASSERT_EQ(bf16_bits(convert_float_to_bf16(x, m)), ref_round(x, kBf16, m))
                << "x=" << x << " (0x" << std::hex << float_bits(x) << ") mode " << static_cast<int>(m);
        }
    }
    // The classic bit trick for round-to-nearest-even, on random patterns.
    std::mt19937 rng(7);
    for (int i = 0; i < 1 << 20; ++i) {
        const unsigned u = rng();
        if (std::isnan(float_from_bits(u))) continue;
        const unsigned expected = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        ASSERT_EQ(bf16_bits(__float2bfloat16(float_from_bits(u))), expected) << std::hex << u;
    }
}

TEST(Bfloat16Conversion, DoubleAndIntegerConversions) {
    EXPECT_EQ(bf16_bits(__double2bfloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40))), 0x3f81);
    EXPECT_EQ(bf16_bits(__double2bfloat16(1.0 + std::ldexp(1.0, -8))), 0x3f80);
    EXPECT_EQ(bf16_bits(__int2bfloat16_rn(257)), 0x4380);  // 257 ties to even 256
    EXPECT_EQ(bf16_bits(__int2bfloat16_rn(259)), 0x4382);  // 259 ties to even 260
    EXPECT_EQ(bf16_bits(__ull2bfloat16_rn(0xffffffffffffffffull)), 0x5f80);  // 2^64
    EXPECT_EQ(__bfloat162int_rz(__float2bfloat16(-3.75f)), -3);
    EXPECT_EQ(__bfloat162int_rz(bf16_from_bits(0x7f80)), 2147483647);
    EXPECT_EQ(__bfloat162uint_rz(__float2bfloat16(-1.0f)), 0u);
    EXPECT_EQ(__bfloat162ll_rz(__float2bfloat16(1e30f)), 0x7fffffffffffffffll);
    EXPECT_EQ(__bfloat162ull_rz(bf16_from_bits(0x7fc0)), 0x8000000000000000ull);
}

TEST(Bfloat16Arithmetic, MatchesExactReferenceOnRandomOperands) {
    std::mt19937 rng(11);
    auto random_bf16 = [&rng]() {
        // Exponents within [-20, 20] keep sums, products and fmas exact in long double.
        const unsigned exponent = 127 - 20 + rng() % 41;
        return static_cast<unsigned short>(((rng() & 1u) << 15) | (exponent << 7) | (rng() & 0x7fu));
    };
    for (int i = 0; i < 300000; ++i) {
        const unsigned short a = random_bf16(), b = random_bf16(), c = random_bf16();
        const long double x = decode(a, kBf16), y = decode(b, kBf16), z = decode(c, kBf16);
        const __nv_bfloat16 ha = bf16_from_bits(a), hb = bf16_from_bits(b);
        if (x + y != 0) {
            ASSERT_EQ(bf16_bits(__hadd(ha, hb)), ref_round(x + y, kBf16, Mode::rn)) << std::hex << a << " + " << b;
        }
        if (x - y != 0) {
            ASSERT_EQ(bf16_bits(__hsub(ha, hb)), ref_round(x - y, kBf16, Mode::rn)) << std::hex << a << " - " << b;
        }
        ASSERT_EQ(bf16_bits(__hmul(ha, hb)), ref_round(x * y, kBf16, Mode::rn)) << std::hex << a << " * " << b;
        // Division: the result r is correctly rounded iff x/y lies between the midpoints to its
        // neighbours; m*y is exact in long double, so compare x with it.
        const unsigned short r = bf16_bits(__hdiv(ha, hb));
        const long double rv = std::fabs(decode(r, kBf16));
        const long double below = (rv + std::fabs(decode(static_cast<unsigned short>((r & 0x7fffu) - 1u), kBf16))) / 2;
        const long double above = (rv + std::fabs(decode(static_cast<unsigned short>((r & 0x7fffu) + 1u), kBf16))) / 2;
        ASSERT_LE(below * std::fabs(y), std::fabs(x)) << std::hex << a << " / " << b;
        ASSERT_GE(above * std::fabs(y), std::fabs(x)) << std::hex << a << " / " << b;
#if defined(CUSIM)  // cusim only (nvcc and cusim both define __CUDACC__)
        if (x * y + z != 0) {
            ASSERT_EQ(bf16_bits(__hfma(ha, hb, bf16_from_bits(c))), ref_round(x * y + z, kBf16, Mode::rn))
                << std::hex << a << " * " << b << " + " << c;
        }
#endif
    }
}

TEST(Bfloat16Types, OperatorsPackingAndCrossConversions) {
    __nv_bfloat16 a = 1.5f;
    const __nv_bfloat16 b = __float2bfloat16(2.0f);
    EXPECT_EQ(static_cast<float>(a + b), 3.5f);
    EXPECT_EQ(static_cast<float>(a * b), 3.0f);
    EXPECT_TRUE(a < b);
    a += b;
    EXPECT_EQ(static_cast<float>(a), 3.5f);
    const __nv_bfloat162 p = __floats2bfloat162_rn(1.0f, 2.0f);
    const __nv_bfloat162 s = p * p + p;
    EXPECT_EQ(__low2float(s), 2.0f);
    EXPECT_EQ(__high2float(s), 6.0f);
    const float2 f2 = __bfloat1622float2(__halves2bfloat162(b, a));
    EXPECT_EQ(f2.x, 2.0f);
    EXPECT_EQ(f2.y, 3.5f);
    EXPECT_EQ(bf16_bits(__low2bfloat16(p)), 0x3f80);
    EXPECT_EQ(bf16_bits(__high2bfloat16(p)), 0x4000);
    EXPECT_EQ(bf16_bits(CUDART_INF_BF16), 0x7f80);
    EXPECT_TRUE(__hisnan(CUDART_NAN_BF16));
    // half <-> bfloat16: through float, rounding to nearest even.
    const __half h = __float2half(1.0f + 1.0f / 1024);  // not representable in bfloat16
    EXPECT_EQ(bf16_bits(__nv_bfloat16(h)), 0x3f80);
    const __nv_bfloat16 big = __float2bfloat16(1e10f);
    EXPECT_EQ(half_bits(__half(big)), 0x7c00);
    EXPECT_EQ(half_bits(__hmax(__float2half(1.0f), __float2half(2.0f))), 0x4000);
    EXPECT_EQ(bf16_bits(__hmax(__float2bfloat16(1.0f), __float2bfloat16(2.0f))), 0x4000);
}

}  // namespace
