// CUDA's <cuda_bf16.h> for the cusim backend: the bfloat16 types __nv_bfloat16 and
// __nv_bfloat162 (8 exponent bits, 7 mantissa bits: the upper half of a float) with CUDA's
// constructors, conversion operators, operators and intrinsic functions.
//
// Same implementation as cuda_fp16.h (which this header includes, as CUDA's does): exact
// double-precision evaluation with one correct rounding per operation, canonical NaN 0x7fff.
// __nv_bfloat162float is exact (a shift); __float2bfloat16 rounds to nearest even.
// __CUDA_NO_BFLOAT16_CONVERSIONS__ and __CUDA_NO_BFLOAT16_OPERATORS__ work as in CUDA.
#pragma once

#include "cuda_fp16.h"

struct alignas(2) __nv_bfloat16_raw {
    unsigned short x;
};

struct alignas(4) __nv_bfloat162_raw {
    unsigned short x;
    unsigned short y;
};

struct alignas(2) __nv_bfloat16 {
protected:
    unsigned short __x;

public:
    __nv_bfloat16() = default;
    constexpr __nv_bfloat16(const __nv_bfloat16_raw& hr) : __x(hr.x) {}
    __nv_bfloat16& operator=(const __nv_bfloat16_raw& hr) {
        __x = hr.x;
        return *this;
    }
    volatile __nv_bfloat16& operator=(const __nv_bfloat16_raw& hr) volatile {
        __x = hr.x;
        return *this;
    }
    volatile __nv_bfloat16& operator=(const volatile __nv_bfloat16_raw& hr) volatile {
        __x = hr.x;
        return *this;
    }
    operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
    operator __nv_bfloat16_raw() const volatile { return __nv_bfloat16_raw{__x}; }

#if !defined(__CUDA_NO_BFLOAT16_CONVERSIONS__)
    explicit __nv_bfloat16(const __half f);
    __nv_bfloat16(const float f);
    __nv_bfloat16(const double f);
    operator float() const;
    __nv_bfloat16& operator=(const float f);
    __nv_bfloat16& operator=(const double f);

    __nv_bfloat16(short val);
    __nv_bfloat16(unsigned short val);
    __nv_bfloat16(int val);
    __nv_bfloat16(unsigned int val);
    __nv_bfloat16(const long val);
    __nv_bfloat16(const unsigned long val);
    __nv_bfloat16(long long val);
    __nv_bfloat16(unsigned long long val);
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
    __nv_bfloat16& operator=(const short val);
    __nv_bfloat16& operator=(const unsigned short val);
    __nv_bfloat16& operator=(const int val);
    __nv_bfloat16& operator=(const unsigned int val);
    __nv_bfloat16& operator=(const long long val);
    __nv_bfloat16& operator=(const unsigned long long val);
    constexpr operator bool() const { return (__x & 0x7FFFU) != 0U; }
#endif
};

struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x;
    __nv_bfloat16 y;

    __nv_bfloat162() = default;
    constexpr __nv_bfloat162(const __nv_bfloat16& a, const __nv_bfloat16& b) : x(a), y(b) {}
    __nv_bfloat162(const __nv_bfloat162_raw& h2r) : x(__nv_bfloat16_raw{h2r.x}), y(__nv_bfloat16_raw{h2r.y}) {}
    __nv_bfloat162& operator=(const __nv_bfloat162_raw& h2r) {
        x = __nv_bfloat16_raw{h2r.x};
        y = __nv_bfloat16_raw{h2r.y};
        return *this;
    }
    operator __nv_bfloat162_raw() const {
        return __nv_bfloat162_raw{static_cast<__nv_bfloat16_raw>(x).x, static_cast<__nv_bfloat16_raw>(y).x};
    }
};

template <>
struct cusim::detail::float16_format<__nv_bfloat16> {
    static constexpr int exp_bits = 8;
    static constexpr int mant_bits = 7;
};

CUSIM_DEFINE_FLOAT16_API(__nv_bfloat16, __nv_bfloat162, bfloat16, bfloat162)

#if !defined(__CUDA_NO_BFLOAT16_OPERATORS__)
CUSIM_DEFINE_FLOAT16_OPERATORS(__nv_bfloat16)
#endif
#if !defined(__CUDA_NO_BFLOAT162_OPERATORS__)
CUSIM_DEFINE_FLOAT162_OPERATORS(__nv_bfloat16, __nv_bfloat162)
#endif

#if !defined(__CUDA_NO_BFLOAT16_CONVERSIONS__)
inline __nv_bfloat16::__nv_bfloat16(const __half f) : __x(__float2bfloat16(__half2float(f)).__x) {}
inline __nv_bfloat16::__nv_bfloat16(const float f) : __x(__float2bfloat16(f).__x) {}
inline __nv_bfloat16::__nv_bfloat16(const double f) : __x(__double2bfloat16(f).__x) {}
inline __nv_bfloat16::operator float() const { return __bfloat162float(*this); }
inline __nv_bfloat16& __nv_bfloat16::operator=(const float f) { return *this = __float2bfloat16(f); }
inline __nv_bfloat16& __nv_bfloat16::operator=(const double f) { return *this = __double2bfloat16(f); }
inline __nv_bfloat16::__nv_bfloat16(short val) : __x(__short2bfloat16_rn(val).__x) {}
inline __nv_bfloat16::__nv_bfloat16(unsigned short val) : __x(__ushort2bfloat16_rn(val).__x) {}
inline __nv_bfloat16::__nv_bfloat16(int val) : __x(__int2bfloat16_rn(val).__x) {}
inline __nv_bfloat16::__nv_bfloat16(unsigned int val) : __x(__uint2bfloat16_rn(val).__x) {}
inline __nv_bfloat16::__nv_bfloat16(const long val) : __x(__ll2bfloat16_rn(val).__x) {}
inline __nv_bfloat16::__nv_bfloat16(const unsigned long val) : __x(__ull2bfloat16_rn(val).__x) {}
inline __nv_bfloat16::__nv_bfloat16(long long val) : __x(__ll2bfloat16_rn(val).__x) {}
inline __nv_bfloat16::__nv_bfloat16(unsigned long long val) : __x(__ull2bfloat16_rn(val).__x) {}
inline __nv_bfloat16::operator signed char() const { return __bfloat162char_rz(*this); }
inline __nv_bfloat16::operator unsigned char() const { return __bfloat162uchar_rz(*this); }
inline __nv_bfloat16::operator char() const {
    return std::is_signed_v<char> ? static_cast<char>(__bfloat162char_rz(*this)) : static_cast<char>(__bfloat162uchar_rz(*this));
}
inline __nv_bfloat16::operator short() const { return __bfloat162short_rz(*this); }
inline __nv_bfloat16::operator unsigned short() const { return __bfloat162ushort_rz(*this); }
inline __nv_bfloat16::operator int() const { return __bfloat162int_rz(*this); }
inline __nv_bfloat16::operator unsigned int() const { return __bfloat162uint_rz(*this); }
inline __nv_bfloat16::operator long() const { return static_cast<long>(__bfloat162ll_rz(*this)); }
inline __nv_bfloat16::operator unsigned long() const { return static_cast<unsigned long>(__bfloat162ull_rz(*this)); }
inline __nv_bfloat16::operator long long() const { return __bfloat162ll_rz(*this); }
inline __nv_bfloat16::operator unsigned long long() const { return __bfloat162ull_rz(*this); }
inline __nv_bfloat16& __nv_bfloat16::operator=(const short val) { return *this = __short2bfloat16_rn(val); }
inline __nv_bfloat16& __nv_bfloat16::operator=(const unsigned short val) { return *this = __ushort2bfloat16_rn(val); }
inline __nv_bfloat16& __nv_bfloat16::operator=(const int val) { return *this = __int2bfloat16_rn(val); }
inline __nv_bfloat16& __nv_bfloat16::operator=(const unsigned int val) { return *this = __uint2bfloat16_rn(val); }
inline __nv_bfloat16& __nv_bfloat16::operator=(const long long val) { return *this = __ll2bfloat16_rn(val); }
inline __nv_bfloat16& __nv_bfloat16::operator=(const unsigned long long val) { return *this = __ull2bfloat16_rn(val); }
#endif

#if !defined(__CUDA_NO_HALF_CONVERSIONS__)
inline __half::__half(const __nv_bfloat16 f) : __x(__float2half(__bfloat162float(f)).__x) {}
#endif

#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)

typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
