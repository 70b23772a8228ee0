// CUDA's <cuda_fp16.h> for the cusim backend: the IEEE binary16 types __half and __half2 with
// CUDA's constructors, conversion operators, arithmetic/comparison operators and intrinsic
// functions (__float2half, __hadd, __hfma2, __heq, hexp, ...).
//
// Values are 16-bit storage; every operation computes the exact result in double precision
// (with an exact error term where needed) and rounds once, so __hadd, __hmul, __hdiv, __hfma,
// hsqrt and all conversions are correctly rounded in the named mode, including subnormals,
// overflow and ties to even. NaN results are the canonical NaN 0x7fff, as on the GPU.
// Transcendental functions (hexp, hsin, ...) round the libm result; the GPU's may differ by an
// ulp. __CUDA_NO_HALF_CONVERSIONS__ and __CUDA_NO_HALF_OPERATORS__ work as in CUDA.
//
// The function set is shared with cuda_bf16.h through CUSIM_DEFINE_FLOAT16_API below.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cusim/atomics.h"
#include "cusim/device_functions.h"
#include "cusim/vector_types.h"

struct alignas(2) __half_raw {
    unsigned short x;
};

struct alignas(4) __half2_raw {
    unsigned short x;
    unsigned short y;
};

struct __nv_bfloat16;

struct alignas(2) __half {
protected:
    unsigned short __x;

public:
    __half() = default;
    constexpr __half(const __half_raw& hr) : __x(hr.x) {}
    __half& operator=(const __half_raw& hr) {
        __x = hr.x;
        return *this;
    }
    volatile __half& operator=(const __half_raw& hr) volatile {
        __x = hr.x;
        return *this;
    }
    volatile __half& operator=(const volatile __half_raw& hr) volatile {
        __x = hr.x;
        return *this;
    }
    operator __half_raw() const { return __half_raw{__x}; }
    operator __half_raw() const volatile { return __half_raw{__x}; }

#if !defined(__CUDA_NO_HALF_CONVERSIONS__)
    explicit __half(const __nv_bfloat16 f);  // defined in cuda_bf16.h
    __half(const float f);
    __half(const double f);
    operator float() const;
    __half& operator=(const float f);
    __half& operator=(const double f);

    __half(const short val);
    __half(const unsigned short val);
    __half(const int val);
    __half(const unsigned int val);
    __half(const long val);
    __half(const unsigned long val);
    __half(const long long val);
    __half(const unsigned long long val);
    operator signed char() const;
    operator unsigned char() const;
    operator char() const;
    operator short() const;
    operator unsigned short() const;
    operator int() const;
    operator unsigned int() const;
    operator long() const;
    operator unsigned long() const;
    operator long long() const;
    operator unsigned long long() const;
    __half& operator=(const short val);
    __half& operator=(const unsigned short val);
    __half& operator=(const int val);
    __half& operator=(const unsigned int val);
    __half& operator=(const long long val);
    __half& operator=(const unsigned long long val);
    constexpr operator bool() const { return (__x & 0x7FFFU) != 0U; }
#endif
};

struct alignas(4) __half2 {
    __half x;
    __half y;

    __half2() = default;
    constexpr __half2(const __half& a, const __half& b) : x(a), y(b) {}
    __half2(const __half2_raw& h2r) : x(__half_raw{h2r.x}), y(__half_raw{h2r.y}) {}
    __half2& operator=(const __half2_raw& h2r) {
        x = __half_raw{h2r.x};
        y = __half_raw{h2r.y};
        return *this;
    }
    operator __half2_raw() const {
        return __half2_raw{static_cast<__half_raw>(x).x, static_cast<__half_raw>(y).x};
    }
};

namespace cusim::detail {

/// Exponent and stored-mantissa widths of a 16-bit float type.
template <class H>
struct float16_format;

template <>
struct float16_format<__half> {
    static constexpr int exp_bits = 5;
    static constexpr int mant_bits = 10;
};

constexpr std::uint16_t float16_canonical_nan = 0x7fff;

template <class H>
inline std::uint16_t f16_bits(H h) { return std::bit_cast<std::uint16_t>(h); }

template <class H>
inline H f16_make(std::uint16_t bits) { return std::bit_cast<H>(bits); }

/// Exact value of a 16-bit float as a double.
template <class H>
inline double f16_value(H h) {
    constexpr int E = float16_format<H>::exp_bits, M = float16_format<H>::mant_bits;
    constexpr int bias = (1 << (E - 1)) - 1;
    const std::uint16_t b = f16_bits(h);
    const unsigned e = (b >> M) & ((1u << E) - 1);
    const std::uint64_t m = b & ((1u << M) - 1);
    const bool negative = (b >> (E + M)) != 0;
    if (e == (1u << E) - 1) {
        const double v = m != 0 ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
        return negative ? -v : v;
    }
    if (e == 0) {  // subnormal or zero: m units of 2^(1 - bias - M), a normal double
        const double v = static_cast<double>(m) * std::bit_cast<double>(std::uint64_t(1023 + 1 - bias - M) << 52);
        return negative ? -v : v;
    }
    // A normal value is a normal double with the same significand bits: built from its fields.
    return std::bit_cast<double>(std::uint64_t(negative) << 63 | std::uint64_t(int(e) - bias + 1023) << 52 | m << (52 - M));
}

/// Rounds s + t to the 16-bit type, t a residual of sign dir (see round_with_residual).
template <class H>
inline H f16_round(double s, int dir = 0, round_mode mode = round_mode::rn) {
    constexpr int E = float16_format<H>::exp_bits, M = float16_format<H>::mant_bits;
    if (std::isnan(s)) return f16_make<H>(float16_canonical_nan);
    if (std::isinf(s)) {
        const std::uint16_t inf = static_cast<std::uint16_t>(((1u << E) - 1) << M);
        return f16_make<H>(static_cast<std::uint16_t>(s < 0 ? inf | (1u << (E + M)) : inf));
    }
    return f16_make<H>(static_cast<std::uint16_t>(round_with_residual<E, M>(s, dir, mode)));
}

template <class H>
inline H f16_from_integer(bool neg, std::uint64_t magnitude, round_mode mode) {
    constexpr int E = float16_format<H>::exp_bits, M = float16_format<H>::mant_bits;
    return f16_make<H>(static_cast<std::uint16_t>(integer_to_format<E, M>(neg, magnitude, mode)));
}

template <class H>
inline float f16_to_float(H h) {
    if constexpr (float16_format<H>::exp_bits == 8) {
        return std::bit_cast<float>(static_cast<std::uint32_t>(f16_bits(h)) << 16);  // bfloat16: the upper half of a float
    } else {
        const double v = f16_value(h);
        return std::isnan(v) ? std::bit_cast<float>(0x7fffffffu) : static_cast<float>(v);
    }
}

template <class H>
inline H f16_add(H a, H b) {
    const double x = f16_value(a), y = f16_value(b), s = x + y;
    if (!std::isfinite(s)) return f16_round<H>(s);
    return f16_round<H>(s, sign_of(two_sum_error(x, y, s)));
}

template <class H>
inline H f16_mul(H a, H b) { return f16_round<H>(f16_value(a) * f16_value(b)); }  // exact product

template <class H>
inline H f16_div(H a, H b) {
    const double x = f16_value(a), y = f16_value(b), q = x / y;
    if (!std::isfinite(q) || q == 0) return f16_round<H>(q);
    return f16_round<H>(q, sign_of(std::fma(-q, y, x)) * sign_of(y));
}

template <class H>
inline H f16_fma(H a, H b, H c) {
    const double p = f16_value(a) * f16_value(b), z = f16_value(c), s = p + z;  // p is exact
    if (!std::isfinite(s)) return f16_round<H>(s);
    return f16_round<H>(s, sign_of(two_sum_error(p, z, s)));
}

template <class H>
inline H f16_sqrt(H a) {
    const double x = f16_value(a), s = std::sqrt(x);
    if (!std::isfinite(s) || s == 0) return f16_round<H>(s);
    return f16_round<H>(s, sign_of(std::fma(-s, s, x)));
}

/// Sign flip and sign clear; a NaN becomes the canonical NaN, as CUDA's implementation does.
template <class H>
inline H f16_neg(H a) {
    if (std::isnan(f16_value(a))) return f16_make<H>(float16_canonical_nan);
    return f16_make<H>(static_cast<std::uint16_t>(f16_bits(a) ^ 0x8000u));
}

template <class H>
inline H f16_abs(H a) {
    if (std::isnan(f16_value(a))) return f16_make<H>(float16_canonical_nan);
    return f16_make<H>(static_cast<std::uint16_t>(f16_bits(a) & 0x7fffu));
}

/// Clamp to [0, 1] with NaN to +0 (the _sat variants).
template <class H>
inline H f16_saturate(H a) {
    const double v = f16_value(a);
    if (std::isnan(v) || v <= 0) return f16_make<H>(0);
    return v >= 1.0 ? f16_round<H>(1.0) : a;
}

/// Negative results to +0, NaN to the canonical NaN (the _relu variants).
template <class H>
inline H f16_relu(H a) {
    const double v = f16_value(a);
    if (std::isnan(v)) return f16_make<H>(float16_canonical_nan);
    return v < 0 ? f16_make<H>(0) : a;
}

/// max/min with CUDA's rules: +0 > -0; a NaN operand yields the other one (both NaN: canonical
/// NaN), or with propagate_nan any NaN operand yields the canonical NaN.
template <class H>
inline H f16_max(H a, H b, bool propagate_nan) {
    const double x = f16_value(a), y = f16_value(b);
    if (std::isnan(x) || std::isnan(y)) {
        if (propagate_nan || (std::isnan(x) && std::isnan(y))) return f16_make<H>(float16_canonical_nan);
        return std::isnan(x) ? b : a;
    }
    if (x == y) return std::signbit(x) ? b : a;
    return x > y ? a : b;
}

template <class H>
inline H f16_min(H a, H b, bool propagate_nan) {
    const double x = f16_value(a), y = f16_value(b);
    if (std::isnan(x) || std::isnan(y)) {
        if (propagate_nan || (std::isnan(x) && std::isnan(y))) return f16_make<H>(float16_canonical_nan);
        return std::isnan(x) ? b : a;
    }
    if (x == y) return std::signbit(x) ? a : b;
    return x < y ? a : b;
}

enum class f16_compare { eq, ne, lt, le, gt, ge };

/// Ordered comparison (false if either is NaN), or unordered (true if either is NaN).
template <class H>
inline bool f16_cmp(H a, H b, f16_compare op, bool unordered) {
    const double x = f16_value(a), y = f16_value(b);
    if (std::isnan(x) || std::isnan(y)) return unordered;
    switch (op) {
        case f16_compare::eq: return x == y;
        case f16_compare::ne: return x != y;
        case f16_compare::lt: return x < y;
        case f16_compare::le: return x <= y;
        case f16_compare::gt: return x > y;
        case f16_compare::ge: return x >= y;
    }
    return false;
}

/// A transcendental function evaluated in double precision and rounded once.
template <class H, class F>
inline H f16_apply(H a, F f) { return f16_round<H>(f(f16_value(a))); }

template <class H2, class F>
inline H2 f16_lanes(H2 a, F f) { return H2(f(a.x), f(a.y)); }

template <class H2, class F>
inline H2 f16_lanes(H2 a, H2 b, F f) { return H2(f(a.x, b.x), f(a.y, b.y)); }

template <class H2, class F>
inline H2 f16_lanes(H2 a, H2 b, H2 c, F f) { return H2(f(a.x, b.x, c.x), f(a.y, b.y, c.y)); }

}  // namespace cusim::detail

// The function set common to __half and __nv_bfloat16. NAME/NAME2 are the spellings inside the
// conversion names (half/half2 or bfloat16/bfloat162), H/H2 the scalar and pair types.
#define CUSIM_FLOAT16_TO_INTEGER(H, NAME, INAME, I, MODE) \
    inline I __##NAME##2##INAME##_##MODE(const H h) { return ::cusim::detail::to_integer<I>(::cusim::detail::f16_value(h), ::cusim::detail::round_mode::MODE); }
#define CUSIM_FLOAT16_FROM_INTEGER(H, NAME, INAME, I, MODE)                                                             \
    inline H __##INAME##2##NAME##_##MODE(const I i) {                                                                  \
        return ::cusim::detail::f16_from_integer<H>(i < 0, ::cusim::detail::magnitude_of(static_cast<long long>(i)), \
                                                    ::cusim::detail::round_mode::MODE);                                \
    }
#define CUSIM_FLOAT16_FROM_UNSIGNED(H, NAME, INAME, I, MODE)                                                           \
    inline H __##INAME##2##NAME##_##MODE(const I i) {                                                                  \
        return ::cusim::detail::f16_from_integer<H>(false, static_cast<std::uint64_t>(i), ::cusim::detail::round_mode::MODE); \
    }
#define CUSIM_FLOAT16_INTEGER_CONVERSIONS(H, NAME, INAME, I, FROM)                     \
    CUSIM_FLOAT16_TO_INTEGER(H, NAME, INAME, I, rn) CUSIM_FLOAT16_TO_INTEGER(H, NAME, INAME, I, rz) \
    CUSIM_FLOAT16_TO_INTEGER(H, NAME, INAME, I, rd) CUSIM_FLOAT16_TO_INTEGER(H, NAME, INAME, I, ru) \
    FROM(H, NAME, INAME, I, rn) FROM(H, NAME, INAME, I, rz) FROM(H, NAME, INAME, I, rd) FROM(H, NAME, INAME, I, ru)

#define CUSIM_FLOAT16_COMPARISON(H, H2, NAME, OP, UNORDERED)                                                         \
    inline bool NAME(const H a, const H b) { return ::cusim::detail::f16_cmp(a, b, ::cusim::detail::f16_compare::OP, UNORDERED); } \
    inline H2 NAME##2(const H2 a, const H2 b) {                                                                       \
        const H one = ::cusim::detail::f16_round<H>(1.0), zero = ::cusim::detail::f16_make<H>(0);                     \
        return H2(NAME(a.x, b.x) ? one : zero, NAME(a.y, b.y) ? one : zero);                                          \
    }                                                                                                                 \
    inline unsigned int NAME##2_mask(const H2 a, const H2 b) {                                                        \
        return (NAME(a.x, b.x) ? 0xFFFFu : 0u) | (NAME(a.y, b.y) ? 0xFFFF0000u : 0u);                                  \
    }

#define CUSIM_FLOAT16_BOTH_COMPARISON(H2, BNAME, NAME) \
    inline bool BNAME(const H2 a, const H2 b) { return NAME(a.x, b.x) && NAME(a.y, b.y); }

#define CUSIM_FLOAT16_MATH(H, H2, NAME, NAME2, EXPR)                                                  \
    inline H NAME(const H a) { return ::cusim::detail::f16_apply(a, [](double x) { return EXPR; }); } \
    inline H2 NAME2(const H2 a) { return ::cusim::detail::f16_lanes(a, [](H v) { return NAME(v); }); }

#define CUSIM_FLOAT16_CACHE_HINTS(T)                  \
    inline T __ldg(const T* p) { return *p; }         \
    inline T __ldcg(const T* p) { return *p; }        \
    inline T __ldca(const T* p) { return *p; }        \
    inline T __ldcs(const T* p) { return *p; }        \
    inline T __ldlu(const T* p) { return *p; }        \
    inline T __ldcv(const T* p) { return *p; }        \
    inline void __stwb(T* p, const T v) { *p = v; }   \
    inline void __stcg(T* p, const T v) { *p = v; }   \
    inline void __stcs(T* p, const T v) { *p = v; }   \
    inline void __stwt(T* p, const T v) { *p = v; }

#define CUSIM_DEFINE_FLOAT16_API(H, H2, NAME, NAME2)                                                                   \
    /* float and double conversions */                                                                                 \
    inline H __float2##NAME(const float a) { return ::cusim::detail::f16_round<H>(a); }                               \
    inline H __float2##NAME##_rn(const float a) { return ::cusim::detail::f16_round<H>(a); }                          \
    inline H __float2##NAME##_rz(const float a) { return ::cusim::detail::f16_round<H>(a, 0, ::cusim::detail::round_mode::rz); } \
    inline H __float2##NAME##_rd(const float a) { return ::cusim::detail::f16_round<H>(a, 0, ::cusim::detail::round_mode::rd); } \
    inline H __float2##NAME##_ru(const float a) { return ::cusim::detail::f16_round<H>(a, 0, ::cusim::detail::round_mode::ru); } \
    inline H __double2##NAME(const double a) { return ::cusim::detail::f16_round<H>(a); }                             \
    inline float __##NAME##2float(const H a) { return ::cusim::detail::f16_to_float(a); }                             \
    inline H2 __float2##NAME2##_rn(const float a) { const H h = __float2##NAME##_rn(a); return H2(h, h); }            \
    inline H2 __floats2##NAME2##_rn(const float a, const float b) { return H2(__float2##NAME##_rn(a), __float2##NAME##_rn(b)); } \
    inline H2 __float22##NAME2##_rn(const float2 a) { return H2(__float2##NAME##_rn(a.x), __float2##NAME##_rn(a.y)); } \
    inline float2 __##NAME2##2float2(const H2 a) { return float2{__##NAME##2float(a.x), __##NAME##2float(a.y)}; }   \
    inline float __low2float(const H2 a) { return __##NAME##2float(a.x); }                                           \
    inline float __high2float(const H2 a) { return __##NAME##2float(a.y); }                                          \
    /* packing */                                                                                                      \
    inline H2 __halves2##NAME2(const H a, const H b) { return H2(a, b); }                                             \
    inline H2 make_##NAME2(const H x, const H y) { return H2(x, y); }                                                 \
    inline H __low2##NAME(const H2 a) { return a.x; }                                                                 \
    inline H __high2##NAME(const H2 a) { return a.y; }                                                                \
    inline H2 __##NAME##2##NAME2(const H a) { return H2(a, a); }                                                      \
    inline H2 __lows2##NAME2(const H2 a, const H2 b) { return H2(a.x, b.x); }                                         \
    inline H2 __highs2##NAME2(const H2 a, const H2 b) { return H2(a.y, b.y); }                                        \
    inline H2 __low2##NAME2(const H2 a) { return H2(a.x, a.x); }                                                      \
    inline H2 __high2##NAME2(const H2 a) { return H2(a.y, a.y); }                                                     \
    inline H2 __lowhigh2highlow(const H2 a) { return H2(a.y, a.x); }                                                  \
    /* reinterpretation */                                                                                             \
    inline short int __##NAME##_as_short(const H h) { return static_cast<short int>(::cusim::detail::f16_bits(h)); } \
    inline unsigned short int __##NAME##_as_ushort(const H h) { return ::cusim::detail::f16_bits(h); }              \
    inline H __short_as_##NAME(const short int i) { return ::cusim::detail::f16_make<H>(static_cast<std::uint16_t>(i)); } \
    inline H __ushort_as_##NAME(const unsigned short int i) { return ::cusim::detail::f16_make<H>(i); }             \
    /* integer conversions */                                                                                          \
    CUSIM_FLOAT16_INTEGER_CONVERSIONS(H, NAME, int, int, CUSIM_FLOAT16_FROM_INTEGER)                                  \
    CUSIM_FLOAT16_INTEGER_CONVERSIONS(H, NAME, short, short int, CUSIM_FLOAT16_FROM_INTEGER)                          \
    CUSIM_FLOAT16_INTEGER_CONVERSIONS(H, NAME, ll, long long int, CUSIM_FLOAT16_FROM_INTEGER)                         \
    CUSIM_FLOAT16_INTEGER_CONVERSIONS(H, NAME, uint, unsigned int, CUSIM_FLOAT16_FROM_UNSIGNED)                       \
    CUSIM_FLOAT16_INTEGER_CONVERSIONS(H, NAME, ushort, unsigned short int, CUSIM_FLOAT16_FROM_UNSIGNED)              \
    CUSIM_FLOAT16_INTEGER_CONVERSIONS(H, NAME, ull, unsigned long long int, CUSIM_FLOAT16_FROM_UNSIGNED)             \
    CUSIM_FLOAT16_TO_INTEGER(H, NAME, char, signed char, rz)                                                          \
    CUSIM_FLOAT16_TO_INTEGER(H, NAME, uchar, unsigned char, rz)                                                       \
    /* arithmetic */                                                                                                   \
    inline H __hadd(const H a, const H b) { return ::cusim::detail::f16_add(a, b); }                                  \
    inline H __hsub(const H a, const H b) { return ::cusim::detail::f16_add(a, ::cusim::detail::f16_neg(b)); }       \
    inline H __hmul(const H a, const H b) { return ::cusim::detail::f16_mul(a, b); }                                  \
    inline H __hdiv(const H a, const H b) { return ::cusim::detail::f16_div(a, b); }                                  \
    inline H __hadd_rn(const H a, const H b) { return __hadd(a, b); }                                                 \
    inline H __hsub_rn(const H a, const H b) { return __hsub(a, b); }                                                 \
    inline H __hmul_rn(const H a, const H b) { return __hmul(a, b); }                                                 \
    inline H __hadd_sat(const H a, const H b) { return ::cusim::detail::f16_saturate(__hadd(a, b)); }                 \
    inline H __hsub_sat(const H a, const H b) { return ::cusim::detail::f16_saturate(__hsub(a, b)); }                 \
    inline H __hmul_sat(const H a, const H b) { return ::cusim::detail::f16_saturate(__hmul(a, b)); }                 \
    inline H __hfma(const H a, const H b, const H c) { return ::cusim::detail::f16_fma(a, b, c); }                    \
    inline H __hfma_sat(const H a, const H b, const H c) { return ::cusim::detail::f16_saturate(__hfma(a, b, c)); }   \
    inline H __hfma_relu(const H a, const H b, const H c) { return ::cusim::detail::f16_relu(__hfma(a, b, c)); }      \
    inline H __hneg(const H a) { return ::cusim::detail::f16_neg(a); }                                                \
    inline H __habs(const H a) { return ::cusim::detail::f16_abs(a); }                                                \
    inline H __hmax(const H a, const H b) { return ::cusim::detail::f16_max(a, b, false); }                           \
    inline H __hmin(const H a, const H b) { return ::cusim::detail::f16_min(a, b, false); }                           \
    inline H __hmax_nan(const H a, const H b) { return ::cusim::detail::f16_max(a, b, true); }                        \
    inline H __hmin_nan(const H a, const H b) { return ::cusim::detail::f16_min(a, b, true); }                        \
    inline H2 __hadd2(const H2 a, const H2 b) { return ::cusim::detail::f16_lanes(a, b, [](H x, H y) { return __hadd(x, y); }); } \
    inline H2 __hsub2(const H2 a, const H2 b) { return ::cusim::detail::f16_lanes(a, b, [](H x, H y) { return __hsub(x, y); }); } \
    inline H2 __hmul2(const H2 a, const H2 b) { return ::cusim::detail::f16_lanes(a, b, [](H x, H y) { return __hmul(x, y); }); } \
    inline H2 __h2div(const H2 a, const H2 b) { return ::cusim::detail::f16_lanes(a, b, [](H x, H y) { return __hdiv(x, y); }); } \
    inline H2 __hadd2_rn(const H2 a, const H2 b) { return __hadd2(a, b); }                                            \
    inline H2 __hsub2_rn(const H2 a, const H2 b) { return __hsub2(a, b); }                                            \
    inline H2 __hmul2_rn(const H2 a, const H2 b) { return __hmul2(a, b); }                                            \
    inline H2 __hadd2_sat(const H2 a, const H2 b) { return ::cusim::detail::f16_lanes(a, b, [](H x, H y) { return __hadd_sat(x, y); }); } \
    inline H2 __hsub2_sat(const H2 a, const H2 b) { return ::cusim::detail::f16_lanes(a, b, [](H x, H y) { return __hsub_sat(x, y); }); } \
    inline H2 __hmul2_sat(const H2 a, const H2 b) { return ::cusim::detail::f16_lanes(a, b, [](H x, H y) { return __hmul_sat(x, y); }); } \
    inline H2 __hfma2(const H2 a, const H2 b, const H2 c) { return ::cusim::detail::f16_lanes(a, b, c, [](H x, H y, H z) { return __hfma(x, y, z); }); } \
    inline H2 __hfma2_sat(const H2 a, const H2 b, const H2 c) { return ::cusim::detail::f16_lanes(a, b, c, [](H x, H y, H z) { return __hfma_sat(x, y, z); }); } \
    inline H2 __hfma2_relu(const H2 a, const H2 b, const H2 c) { return ::cusim::detail::f16_lanes(a, b, c, [](H x, H y, H z) { return __hfma_relu(x, y, z); }); } \
    inline H2 __hneg2(const H2 a) { return H2(__hneg(a.x), __hneg(a.y)); }                                            \
    inline H2 __habs2(const H2 a) { return H2(__habs(a.x), __habs(a.y)); }                                            \
    inline H2 __hmax2(const H2 a, const H2 b) { return H2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }                      \
    inline H2 __hmin2(const H2 a, const H2 b) { return H2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }                      \
    inline H2 __hmax2_nan(const H2 a, const H2 b) { return H2(__hmax_nan(a.x, b.x), __hmax_nan(a.y, b.y)); }          \
    inline H2 __hmin2_nan(const H2 a, const H2 b) { return H2(__hmin_nan(a.x, b.x), __hmin_nan(a.y, b.y)); }          \
    /* complex multiply-accumulate: (a.x + i a.y) * (b.x + i b.y) + (c.x + i c.y) */                                  \
    inline H2 __hcmadd(const H2 a, const H2 b, const H2 c) {                                                          \
        return H2(__hfma(__hneg(a.y), b.y, __hfma(a.x, b.x, c.x)), __hfma(a.y, b.x, __hfma(a.x, b.y, c.y)));         \
    }                                                                                                                  \
    /* comparisons */                                                                                                  \
    CUSIM_FLOAT16_COMPARISON(H, H2, __heq, eq, false)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hne, ne, false)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hlt, lt, false)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hle, le, false)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hgt, gt, false)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hge, ge, false)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hequ, eq, true)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hneu, ne, true)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hltu, lt, true)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hleu, le, true)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hgtu, gt, true)                                                                 \
    CUSIM_FLOAT16_COMPARISON(H, H2, __hgeu, ge, true)                                                                 \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hbeq2, __heq)                                                                 \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hbne2, __hne)                                                                 \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hblt2, __hlt)                                                                 \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hble2, __hle)                                                                 \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hbgt2, __hgt)                                                                 \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hbge2, __hge)                                                                 \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hbequ2, __hequ)                                                               \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hbneu2, __hneu)                                                               \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hbltu2, __hltu)                                                               \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hbleu2, __hleu)                                                               \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hbgtu2, __hgtu)                                                               \
    CUSIM_FLOAT16_BOTH_COMPARISON(H2, __hbgeu2, __hgeu)                                                               \
    inline bool __hisnan(const H a) { return std::isnan(::cusim::detail::f16_value(a)); }                            \
    inline H2 __hisnan2(const H2 a) {                                                                                 \
        const H one = ::cusim::detail::f16_round<H>(1.0), zero = ::cusim::detail::f16_make<H>(0);                     \
        return H2(__hisnan(a.x) ? one : zero, __hisnan(a.y) ? one : zero);                                            \
    }                                                                                                                  \
    /* -1 for -inf, 1 for +inf, else 0 */                                                                              \
    inline int __hisinf(const H a) {                                                                                  \
        const double v = ::cusim::detail::f16_value(a);                                                               \
        return std::isinf(v) ? (v < 0 ? -1 : 1) : 0;                                                                  \
    }                                                                                                                  \
    /* math functions */                                                                                               \
    inline H hsqrt(const H a) { return ::cusim::detail::f16_sqrt(a); }                                                \
    inline H2 h2sqrt(const H2 a) { return H2(hsqrt(a.x), hsqrt(a.y)); }                                               \
    inline H hrcp(const H a) { return __hdiv(::cusim::detail::f16_round<H>(1.0), a); }                                \
    inline H2 h2rcp(const H2 a) { return H2(hrcp(a.x), hrcp(a.y)); }                                                  \
    CUSIM_FLOAT16_MATH(H, H2, hrsqrt, h2rsqrt, 1.0 / std::sqrt(x))                                                    \
    CUSIM_FLOAT16_MATH(H, H2, hceil, h2ceil, std::ceil(x))                                                            \
    CUSIM_FLOAT16_MATH(H, H2, hfloor, h2floor, std::floor(x))                                                         \
    CUSIM_FLOAT16_MATH(H, H2, htrunc, h2trunc, std::trunc(x))                                                         \
    CUSIM_FLOAT16_MATH(H, H2, hrint, h2rint, ::cusim::detail::round_integral(x, ::cusim::detail::round_mode::rn))    \
    CUSIM_FLOAT16_MATH(H, H2, hexp, h2exp, std::exp(x))                                                               \
    CUSIM_FLOAT16_MATH(H, H2, hexp2, h2exp2, std::exp2(x))                                                            \
    CUSIM_FLOAT16_MATH(H, H2, hexp10, h2exp10, std::pow(10.0, x))                                                     \
    CUSIM_FLOAT16_MATH(H, H2, hlog, h2log, std::log(x))                                                               \
    CUSIM_FLOAT16_MATH(H, H2, hlog2, h2log2, std::log2(x))                                                            \
    CUSIM_FLOAT16_MATH(H, H2, hlog10, h2log10, std::log10(x))                                                         \
    CUSIM_FLOAT16_MATH(H, H2, hsin, h2sin, std::sin(x))                                                               \
    CUSIM_FLOAT16_MATH(H, H2, hcos, h2cos, std::cos(x))                                                               \
    CUSIM_FLOAT16_MATH(H, H2, htanh, h2tanh, std::tanh(x))                                                            \
    CUSIM_FLOAT16_MATH(H, H2, htanh_approx, h2tanh_approx, std::tanh(x))                                              \
    /* cache-hinted loads and stores */                                                                                \
    CUSIM_FLOAT16_CACHE_HINTS(H)                                                                                      \
    CUSIM_FLOAT16_CACHE_HINTS(H2)                                                                                     \
    /* atomics (each half of a pair is atomic; here the whole pair is) */                                             \
    inline H atomicAdd(H* const address, const H val) {                                                               \
        return ::cusim::detail::atomic_update(address, [val](H old) { return __hadd(old, val); });                     \
    }                                                                                                                  \
    inline H2 atomicAdd(H2* const address, const H2 val) {                                                            \
        return ::cusim::detail::atomic_update(address, [val](H2 old) { return __hadd2(old, val); });                   \
    }

// Operators, as CUDA defines them for the scalar and the pair type.
#define CUSIM_DEFINE_FLOAT16_OPERATORS(H)                                                            \
    inline H operator+(const H& lh, const H& rh) { return __hadd(lh, rh); }                          \
    inline H operator-(const H& lh, const H& rh) { return __hsub(lh, rh); }                          \
    inline H operator*(const H& lh, const H& rh) { return __hmul(lh, rh); }                          \
    inline H operator/(const H& lh, const H& rh) { return __hdiv(lh, rh); }                          \
    inline H& operator+=(H& lh, const H& rh) { return lh = __hadd(lh, rh); }                         \
    inline H& operator-=(H& lh, const H& rh) { return lh = __hsub(lh, rh); }                         \
    inline H& operator*=(H& lh, const H& rh) { return lh = __hmul(lh, rh); }                         \
    inline H& operator/=(H& lh, const H& rh) { return lh = __hdiv(lh, rh); }                         \
    inline H& operator++(H& h) { return h = __hadd(h, ::cusim::detail::f16_round<H>(1.0)); }        \
    inline H& operator--(H& h) { return h = __hsub(h, ::cusim::detail::f16_round<H>(1.0)); }        \
    inline H operator++(H& h, const int) { const H old = h; ++h; return old; }                       \
    inline H operator--(H& h, const int) { const H old = h; --h; return old; }                       \
    inline H operator+(const H& h) { return h; }                                                     \
    inline H operator-(const H& h) { return __hneg(h); }                                             \
    inline bool operator==(const H& lh, const H& rh) { return __heq(lh, rh); }                       \
    inline bool operator!=(const H& lh, const H& rh) { return __hneu(lh, rh); }                      \
    inline bool operator>(const H& lh, const H& rh) { return __hgt(lh, rh); }                        \
    inline bool operator<(const H& lh, const H& rh) { return __hlt(lh, rh); }                        \
    inline bool operator>=(const H& lh, const H& rh) { return __hge(lh, rh); }                       \
    inline bool operator<=(const H& lh, const H& rh) { return __hle(lh, rh); }

#define CUSIM_DEFINE_FLOAT162_OPERATORS(H, H2)                                                                      \
    inline H2 operator+(const H2& lh, const H2& rh) { return __hadd2(lh, rh); }                                     \
    inline H2 operator-(const H2& lh, const H2& rh) { return __hsub2(lh, rh); }                                     \
    inline H2 operator*(const H2& lh, const H2& rh) { return __hmul2(lh, rh); }                                     \
    inline H2 operator/(const H2& lh, const H2& rh) { return __h2div(lh, rh); }                                     \
    inline H2& operator+=(H2& lh, const H2& rh) { return lh = __hadd2(lh, rh); }                                    \
    inline H2& operator-=(H2& lh, const H2& rh) { return lh = __hsub2(lh, rh); }                                    \
    inline H2& operator*=(H2& lh, const H2& rh) { return lh = __hmul2(lh, rh); }                                    \
    inline H2& operator/=(H2& lh, const H2& rh) { return lh = __h2div(lh, rh); }                                    \
    inline H2& operator++(H2& h) { const H one = ::cusim::detail::f16_round<H>(1.0); return h = __hadd2(h, H2(one, one)); } \
    inline H2& operator--(H2& h) { const H one = ::cusim::detail::f16_round<H>(1.0); return h = __hsub2(h, H2(one, one)); } \
    inline H2 operator++(H2& h, const int) { const H2 old = h; ++h; return old; }                                   \
    inline H2 operator--(H2& h, const int) { const H2 old = h; --h; return old; }                                   \
    inline H2 operator+(const H2& h) { return h; }                                                                  \
    inline H2 operator-(const H2& h) { return __hneg2(h); }                                                         \
    inline bool operator==(const H2& lh, const H2& rh) { return __hbeq2(lh, rh); }                                  \
    inline bool operator!=(const H2& lh, const H2& rh) { return __hbneu2(lh, rh); }                                 \
    inline bool operator>(const H2& lh, const H2& rh) { return __hbgt2(lh, rh); }                                   \
    inline bool operator<(const H2& lh, const H2& rh) { return __hblt2(lh, rh); }                                   \
    inline bool operator>=(const H2& lh, const H2& rh) { return __hbge2(lh, rh); }                                  \
    inline bool operator<=(const H2& lh, const H2& rh) { return __hble2(lh, rh); }

CUSIM_DEFINE_FLOAT16_API(__half, __half2, half, half2)

#if !defined(__CUDA_NO_HALF_OPERATORS__)
CUSIM_DEFINE_FLOAT16_OPERATORS(__half)
#endif
#if !defined(__CUDA_NO_HALF2_OPERATORS__)
CUSIM_DEFINE_FLOAT162_OPERATORS(__half, __half2)
#endif

#if !defined(__CUDA_NO_HALF_CONVERSIONS__)
inline __half::__half(const float f) : __x(__float2half(f).__x) {}
inline __half::__half(const double f) : __x(__double2half(f).__x) {}
inline __half::operator float() const { return __half2float(*this); }
inline __half& __half::operator=(const float f) { return *this = __float2half(f); }
inline __half& __half::operator=(const double f) { return *this = __double2half(f); }
inline __half::__half(const short val) : __x(__short2half_rn(val).__x) {}
inline __half::__half(const unsigned short val) : __x(__ushort2half_rn(val).__x) {}
inline __half::__half(const int val) : __x(__int2half_rn(val).__x) {}
inline __half::__half(const unsigned int val) : __x(__uint2half_rn(val).__x) {}
inline __half::__half(const long val) : __x(__ll2half_rn(val).__x) {}
inline __half::__half(const unsigned long val) : __x(__ull2half_rn(val).__x) {}
inline __half::__half(const long long val) : __x(__ll2half_rn(val).__x) {}
inline __half::__half(const unsigned long long val) : __x(__ull2half_rn(val).__x) {}
inline __half::operator signed char() const { return __half2char_rz(*this); }
inline __half::operator unsigned char() const { return __half2uchar_rz(*this); }
inline __half::operator char() const {
    return std::is_signed_v<char> ? static_cast<char>(__half2char_rz(*this)) : static_cast<char>(__half2uchar_rz(*this));
}
inline __half::operator short() const { return __half2short_rz(*this); }
inline __half::operator unsigned short() const { return __half2ushort_rz(*this); }
inline __half::operator int() const { return __half2int_rz(*this); }
inline __half::operator unsigned int() const { return __half2uint_rz(*this); }
inline __half::operator long() const { return static_cast<long>(__half2ll_rz(*this)); }
inline __half::operator unsigned long() const { return static_cast<unsigned long>(__half2ull_rz(*this)); }
inline __half::operator long long() const { return __half2ll_rz(*this); }
inline __half::operator unsigned long long() const { return __half2ull_rz(*this); }
inline __half& __half::operator=(const short val) { return *this = __short2half_rn(val); }
inline __half& __half::operator=(const unsigned short val) { return *this = __ushort2half_rn(val); }
inline __half& __half::operator=(const int val) { return *this = __int2half_rn(val); }
inline __half& __half::operator=(const unsigned int val) { return *this = __uint2half_rn(val); }
inline __half& __half::operator=(const long long val) { return *this = __ll2half_rn(val); }
inline __half& __half::operator=(const unsigned long long val) { return *this = __ull2half_rn(val); }
#endif

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)

#if !defined(CUDA_NO_HALF)
typedef __half half;
typedef __half2 half2;
typedef __half __nv_half;
typedef __half2 __nv_half2;
typedef __half_raw __nv_half_raw;
typedef __half2_raw __nv_half2_raw;
typedef __half nv_half;
typedef __half2 nv_half2;
#endif
