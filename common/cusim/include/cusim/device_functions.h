// CUDA's device-side function set for the cusim backend: the math library names that libm lacks
// (rsqrtf, sinpif, erfinvf, normcdff, ...), the fast-math and explicitly rounded intrinsics
// (__expf, __fadd_rz, __fmaf_rn, ...), type conversions with CUDA's rounding and saturation
// (__float2int_rn, __ll2float_rd, __double2float_ru, ...), bit and integer intrinsics (__popc,
// __clz, __brev, __byte_perm, __mulhi, __dp4a, ...), CUDA's min/max overload set, cache-hinted
// loads and stores (__ldg, __ldcs, __stwt, ...), memory fences, clock64 and __nanosleep.
//
// Everything is a plain inline C++ function, callable from host and kernel code alike. The
// libm functions CUDA shares with C (expf, logf, sqrtf, fmaxf, ...) come from <cmath> in the
// global namespace; the C++ overloads (sqrt(float), abs(float), isnan(x), ...) are brought into
// the global namespace below, as CUDA offers them in device code. std::lerp is deliberately not
// (lab code often defines its own lerp).
//
// Accuracy: the "_rn/_rz/_ru/_rd" arithmetic and conversion intrinsics are exact (correctly
// rounded in the named mode; for double arithmetic except when the result is subnormal). The
// fast-math intrinsics (__expf, __sinf, ...) return the libm result, which is at least as
// accurate as the GPU's approximation: code must not depend on the GPU's exact error.
// Float-to-integer conversions saturate and map NaN to 0 (0x8000000000000000 for 64-bit
// results), as the GPU's conversion instructions do.
#pragma once

#include <stdlib.h>

#include <bit>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "cusim/int_types.h"
#include "cusim/vector_types.h"

// Newer glibc declares some C23 functions CUDA also has: sinpi/cospi (2.41) and rsqrt (2.42),
// with their f variants. Where it does, those declarations are used instead of ours.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 41))
#define CUSIM_LIBC_HAS_C23_PI_FUNCTIONS 1
#else
#define CUSIM_LIBC_HAS_C23_PI_FUNCTIONS 0
#endif
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 42))
#define CUSIM_LIBC_HAS_C23_RSQRT 1
#else
#define CUSIM_LIBC_HAS_C23_RSQRT 0
#endif

// The float/double/integer overloads of the C++ math library in the global namespace, as
// libstdc++'s <math.h> provides them, minus C++20's std::lerp.
using std::abs;
using std::acos;
using std::acosh;
using std::asin;
using std::asinh;
using std::atan;
using std::atan2;
using std::atanh;
using std::cbrt;
using std::ceil;
using std::copysign;
using std::cos;
using std::cosh;
using std::erf;
using std::erfc;
using std::exp;
using std::exp2;
using std::expm1;
using std::fabs;
using std::fdim;
using std::floor;
using std::fma;
using std::fmax;
using std::fmin;
using std::fmod;
using std::fpclassify;
using std::frexp;
using std::hypot;
using std::ilogb;
using std::isfinite;
using std::isgreater;
using std::isgreaterequal;
using std::isinf;
using std::isless;
using std::islessequal;
using std::islessgreater;
using std::isnan;
using std::isnormal;
using std::isunordered;
using std::ldexp;
using std::lgamma;
using std::llrint;
using std::llround;
using std::log;
using std::log10;
using std::log1p;
using std::log2;
using std::logb;
using std::lrint;
using std::lround;
using std::modf;
using std::nearbyint;
using std::nextafter;
using std::nexttoward;
using std::pow;
using std::remainder;
using std::remquo;
using std::rint;
using std::round;
using std::scalbln;
using std::scalbn;
using std::signbit;
using std::sin;
using std::sinh;
using std::sqrt;
using std::tan;
using std::tanh;
using std::tgamma;
using std::trunc;

namespace cusim::detail {

/// IEEE rounding direction of a conversion or operation.
enum class round_mode { rn, rz, ru, rd };

/// Rounds the exact value (-1)^neg * sig * 2^exp2 to a binary floating-point format with E
/// exponent bits and M stored mantissa bits (half: 5/10, bfloat16: 8/7, float: 8/23,
/// double: 11/52) and returns its bit pattern, sign at bit E + M. Handles subnormal results,
/// overflow (to infinity or the largest finite value, as the mode demands) and ties to even.
template <int E, int M>
constexpr ::cusim::uint64_t round_to_format(bool neg, ::cusim::uint64_t sig, int exp2, round_mode mode) {
    const ::cusim::uint64_t sign = neg ? (::cusim::uint64_t{1} << (E + M)) : 0;
    if (sig == 0) return sign;
    constexpr int emax = (1 << (E - 1)) - 1;
    constexpr int emin = 1 - emax;
    constexpr ::cusim::uint64_t inf_bits = ((::cusim::uint64_t{1} << E) - 1) << M;
    const bool away_to_inf = mode == round_mode::rn || (mode == round_mode::ru && !neg) ||
                             (mode == round_mode::rd && neg);
    const ::cusim::uint64_t overflow = sign | (away_to_inf ? inf_bits : inf_bits - 1);
    const int lead = exp2 + 63 - std::countl_zero(sig);  // exponent of the leading 1 bit
    if (lead > emax) return overflow;
    const int qexp = (lead < emin ? emin : lead) - M;  // exponent of the result's last bit
    const int shift = qexp - exp2;
    ::cusim::uint64_t n = 0;
    int vs_half = -1;  // discarded part compared with half a unit of the last place
    bool inexact = false;
    if (shift <= 0) {
        n = sig << -shift;
    } else if (shift < 64) {
        n = sig >> shift;
        const ::cusim::uint64_t rem = sig & ((::cusim::uint64_t{1} << shift) - 1);
        const ::cusim::uint64_t half = ::cusim::uint64_t{1} << (shift - 1);
        inexact = rem != 0;
        vs_half = rem < half ? -1 : (rem > half ? 1 : 0);
    } else {
        inexact = true;
        const ::cusim::uint64_t half = ::cusim::uint64_t{1} << 63;
        vs_half = shift > 64 || sig < half ? -1 : (sig > half ? 1 : 0);
    }
    bool round_up = false;
    switch (mode) {
        case round_mode::rn: round_up = vs_half > 0 || (vs_half == 0 && (n & 1) != 0); break;
        case round_mode::rz: round_up = false; break;
        case round_mode::ru: round_up = inexact && !neg; break;
        case round_mode::rd: round_up = inexact && neg; break;
    }
    n += round_up ? 1 : 0;
    // Biased exponent and mantissa in one addition: a carry out of the mantissa bumps the exponent.
    const ::cusim::uint64_t bits = (static_cast<::cusim::uint64_t>(qexp - (emin - M)) << M) + n;
    if (bits >= inf_bits) return overflow;
    return sign | bits;
}

/// A finite double as sign, integer significand and binary exponent.
struct unpacked_double {
    bool neg;
    ::cusim::uint64_t sig;
    int exp2;
};

constexpr unpacked_double unpack(double d) {
    const auto u = std::bit_cast<::cusim::uint64_t>(d);
    const bool neg = (u >> 63) != 0;
    const int biased = static_cast<int>((u >> 52) & 0x7ff);
    const ::cusim::uint64_t frac = u & ((::cusim::uint64_t{1} << 52) - 1);
    if (biased == 0) return {neg, frac, -1074};
    return {neg, frac | (::cusim::uint64_t{1} << 52), biased - 1075};
}

/// Rounds the exact value s + t to the format, where s is a finite double and t is a residual
/// known only by its sign `dir` (-1, 0, +1) and |t| < half an ulp of s. Two extra bits below s's
/// last bit stand for the residual: no boundary of a format with at most double's precision
/// falls strictly between s and s + t, so the rounding comes out as for the exact value.
template <int E, int M>
constexpr ::cusim::uint64_t round_with_residual(double s, int dir, round_mode mode) {
    unpacked_double u = unpack(s);
    if (dir != 0) {
        if (u.sig == 0) {  // the double result underflowed to zero: a tiny value of sign dir
            u = {dir < 0, 1, -1080};
        } else {
            u.sig <<= 2;
            u.exp2 -= 2;
            const bool larger_magnitude = (dir > 0) != u.neg;
            u.sig = larger_magnitude ? u.sig + 1 : u.sig - 1;
        }
    }
    return round_to_format<E, M>(u.neg, u.sig, u.exp2, mode);
}

constexpr int sign_of(double v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }

inline float to_float(double s, int dir, round_mode mode) {
    if (!std::isfinite(s)) return static_cast<float>(s);
    return std::bit_cast<float>(static_cast<::cusim::uint32_t>(round_with_residual<8, 23>(s, dir, mode)));
}

inline double to_double(double s, int dir, round_mode mode) {
    return std::bit_cast<double>(round_with_residual<11, 52>(s, dir, mode));
}

/// Below this magnitude the exact error terms of double operations can fall into the subnormal
/// range, so the operations rescale by a power of two first.
constexpr double tiny_residual_bound = 0x1p-900;

/// Result of an operation on finite operands whose round-to-nearest double result overflowed.
inline double double_overflow(bool neg, round_mode mode) {
    const bool to_inf = mode == round_mode::rn || (mode == round_mode::ru && !neg) ||
                        (mode == round_mode::rd && neg);
    const double v = to_inf ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::max();
    return neg ? -v : v;
}

/// IEEE sign of an exact zero sum x + y: the common sign if both are zeros of one sign,
/// else +0 (-0 when rounding down).
inline double exact_zero_sum(bool x_neg, bool y_neg, round_mode mode) {
    if (x_neg == y_neg) return x_neg ? -0.0 : 0.0;
    return mode == round_mode::rd ? -0.0 : 0.0;
}

/// s = RN(x + y) and the exact error x + y - s (Knuth's TwoSum).
inline double two_sum_error(double x, double y, double s) {
    const double yv = s - x;
    return (x - (s - yv)) + (y - yv);
}

// Float arithmetic in a given rounding mode: each is done in double with an exact residual.
inline float fadd(float a, float b, round_mode mode) {
    const double x = a, y = b, s = x + y;
    if (!std::isfinite(s)) return static_cast<float>(s);
    if (s == 0) return static_cast<float>(exact_zero_sum(std::signbit(a), std::signbit(b), mode));
    return to_float(s, sign_of(two_sum_error(x, y, s)), mode);
}

inline float fmul(float a, float b, round_mode mode) {
    const double p = static_cast<double>(a) * static_cast<double>(b);  // exact
    return to_float(p, 0, mode);
}

inline float ffma(float a, float b, float c, round_mode mode) {
    const double p = static_cast<double>(a) * static_cast<double>(b);  // exact
    const double z = c, s = p + z;
    if (!std::isfinite(s)) return static_cast<float>(s);
    if (s == 0) return static_cast<float>(exact_zero_sum(std::signbit(p), std::signbit(z), mode));
    return to_float(s, sign_of(two_sum_error(p, z, s)), mode);
}

inline float fdiv(float a, float b, round_mode mode) {
    const double x = a, y = b, q = x / y;
    if (!std::isfinite(q) || q == 0) return static_cast<float>(q);
    const double r = std::fma(-q, y, x);  // exact remainder x - q*y
    return to_float(q, sign_of(r) * sign_of(y), mode);
}

inline float fsqrt(float a, round_mode mode) {
    const double x = a, s = std::sqrt(x);
    if (!std::isfinite(s) || s == 0) return static_cast<float>(s);
    return to_float(s, sign_of(std::fma(-s, s, x)), mode);
}

// Double arithmetic in a given rounding mode: the round-to-nearest result plus the sign of the
// exact error, from error-free transformations (exact unless intermediate results underflow).
inline double dadd(double a, double b, round_mode mode) {
    const double s = a + b;
    if (std::isinf(s) && std::isfinite(a) && std::isfinite(b)) return double_overflow(s < 0, mode);
    if (!std::isfinite(s)) return s;
    if (s == 0) return exact_zero_sum(std::signbit(a), std::signbit(b), mode);
    return to_double(s, sign_of(two_sum_error(a, b, s)), mode);
}

inline double dmul(double a, double b, round_mode mode) {
    const double p = a * b;
    if (std::isinf(p) && std::isfinite(a) && std::isfinite(b)) return double_overflow(p < 0, mode);
    if (!std::isfinite(p) || a == 0 || b == 0) return p;
    if (p == 0) return to_double(p, (std::signbit(a) != std::signbit(b)) ? -1 : 1, mode);
    if (std::fabs(p) < tiny_residual_bound) {  // scale so that the error term cannot underflow
        const double sa = std::fabs(a) < 0x1p400 ? a * 0x1p600 : a;
        const double sb = sa == a ? b * 0x1p600 : b;
        return to_double(p, sign_of(std::fma(sa, sb, -p * 0x1p600)), mode);
    }
    return to_double(p, sign_of(std::fma(a, b, -p)), mode);
}

inline double ddiv(double a, double b, round_mode mode) {
    const double q = a / b;
    if (std::isinf(q) && std::isfinite(a) && b != 0) return double_overflow(q < 0, mode);
    if (!std::isfinite(q) || a == 0 || std::isinf(b)) return q;
    if (std::fabs(a) < tiny_residual_bound && std::fabs(b) < 0x1p400)  // keep the remainder out of the subnormals
        return to_double(q, sign_of(std::fma(-q, b * 0x1p600, a * 0x1p600)) * sign_of(b), mode);
    return to_double(q, sign_of(std::fma(-q, b, a)) * sign_of(b), mode);
}

inline double dsqrt(double a, round_mode mode) {
    const double s = std::sqrt(a);
    if (!std::isfinite(s) || s == 0) return s;
    if (a < tiny_residual_bound) return to_double(s, sign_of(std::fma(-s * 0x1p300, s * 0x1p300, a * 0x1p600)), mode);
    return to_double(s, sign_of(std::fma(-s, s, a)), mode);
}

/// Sign of the exact error a*b + c - r1 for r1 = RN(a*b + c), from Boldo and Muller's ErrFma
/// (a*b + c = r1 + r2 + r3 exactly when no intermediate underflows).
inline int fma_error_sign(double a, double b, double c, double r1) {
    const double u1 = a * b;
    const double u2 = std::fma(a, b, -u1);
    const double alpha1 = c + u2;
    const double alpha2 = two_sum_error(c, u2, alpha1);
    const double beta1 = u1 + alpha1;
    const double beta2 = two_sum_error(u1, alpha1, beta1);
    const double gamma = (beta1 - r1) + beta2;
    const double r2 = gamma + alpha2;
    const double r3 = alpha2 - (r2 - gamma);
    return r2 != 0 ? sign_of(r2) : sign_of(r3);
}

inline double dfma(double a, double b, double c, round_mode mode) {
    const double r1 = std::fma(a, b, c);
    if (std::isinf(r1) && std::isfinite(a) && std::isfinite(b) && std::isfinite(c))
        return double_overflow(r1 < 0, mode);
    if (!std::isfinite(r1)) return r1;
    if (a != 0 && b != 0 && c != 0 && std::ilogb(a) + std::ilogb(b) < std::ilogb(c) - 60) {
        // a*b is far below half an ulp of c (it may even underflow): the result is c nudged
        // towards the product's sign.
        return to_double(c, (std::signbit(a) != std::signbit(b)) ? -1 : 1, mode);
    }
    const bool all_tiny = (c == 0 || std::ilogb(c) < -400) && (a == 0 || b == 0 || std::ilogb(a) + std::ilogb(b) < -400);
    if (all_tiny && r1 != 0) {  // rescale so the error terms stay normal
        if (std::fabs(a) < 0x1p400) return to_double(r1, fma_error_sign(a * 0x1p600, b, c * 0x1p600, r1 * 0x1p600), mode);
        return to_double(r1, fma_error_sign(a, b * 0x1p600, c * 0x1p600, r1 * 0x1p600), mode);
    }
    const int dir = fma_error_sign(a, b, c, r1);
    if (r1 == 0 && dir == 0) return exact_zero_sum(std::signbit(a) != std::signbit(b), std::signbit(c), mode);
    return to_double(r1, dir, mode);
}

/// Rounds v to an integral double in the given mode without depending on the FP environment.
inline double round_integral(double v, round_mode mode) {
    switch (mode) {
        case round_mode::rz: return std::trunc(v);
        case round_mode::ru: return std::ceil(v);
        case round_mode::rd: return std::floor(v);
        case round_mode::rn: break;
    }
    double f = std::floor(v);
    const double frac = v - f;  // exact: v and f share the binade or v is integral
    if (frac > 0.5 || (frac == 0.5 && std::fmod(f, 2.0) != 0)) f += 1.0;
    return f;
}

/// Floating-point to integer conversion as the GPU does it: round in `mode`, saturate to the
/// destination range, NaN to 0 for 32-bit and to 0x8000000000000000 for 64-bit results.
template <class I>
inline I to_integer(double v, round_mode mode) {
    if (std::isnan(v)) return sizeof(I) == 8 ? static_cast<I>(::cusim::uint64_t{1} << 63) : I{0};
    const double r = round_integral(v, mode);
    constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<I>::max());  // 2^63 / 2^64 for 64-bit
    if (r <= lo) return std::numeric_limits<I>::min();
    if (r >= hi) return std::numeric_limits<I>::max();
    return static_cast<I>(r);
}

/// Integer to floating-point format with E/M bits, rounded in `mode`.
template <int E, int M>
constexpr ::cusim::uint64_t integer_to_format(bool neg, ::cusim::uint64_t magnitude, round_mode mode) {
    return round_to_format<E, M>(neg, magnitude, 0, mode);
}

inline float int_to_float(bool neg, ::cusim::uint64_t magnitude, round_mode mode) {
    return std::bit_cast<float>(static_cast<::cusim::uint32_t>(integer_to_format<8, 23>(neg, magnitude, mode)));
}

inline double int_to_double(bool neg, ::cusim::uint64_t magnitude, round_mode mode) {
    return std::bit_cast<double>(integer_to_format<11, 52>(neg, magnitude, mode));
}

constexpr ::cusim::uint64_t magnitude_of(long long v) {
    return v < 0 ? ::cusim::uint64_t{0} - static_cast<::cusim::uint64_t>(v) : static_cast<::cusim::uint64_t>(v);
}

inline float double_to_float(double v, round_mode mode) {
    if (!std::isfinite(v)) return static_cast<float>(v);
    return to_float(v, 0, mode);
}

// Special functions libm does not have.
constexpr double pi = 3.14159265358979323846;
constexpr double two_over_sqrt_pi = 1.12837916709551257390;
constexpr double inv_sqrt_pi = 0.56418958354775628695;
constexpr double sqrt2 = 1.41421356237309504880;

/// exp(x*x) with x*x split into an exact sum hi + lo, so large x keeps full relative accuracy.
inline double exp_square(double x) {
    const double hi = x * x;
    const double lo = std::fma(x, x, -hi);
    return std::exp(hi) * (1.0 + lo);
}

/// Scaled complementary error function exp(x^2) * erfc(x).
inline double erfcx(double x) {
    if (std::isnan(x)) return x;
    if (x < 0) {
        if (x < -26.7) return std::numeric_limits<double>::infinity();
        return 2.0 * exp_square(x) - erfcx(-x);
    }
    if (x < 10.0) return exp_square(x) * std::erfc(x);
    if (std::isinf(x)) return 0.0;
    // Continued fraction erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))),
    // evaluated from the tail; 60 terms are far more than double precision needs for x >= 10.
    double t = x;
    for (int k = 60; k >= 1; --k) t = x + (0.5 * k) / t;
    return inv_sqrt_pi / t;
}

/// Single-precision approximation of erfinv(1 - c) from w = -log(c * (2 - c)) (M. Giles,
/// "Approximating the erfinv function", GPU Computing Gems), used as the starting point for the
/// Newton iterations below.
inline double erfinv_start(double w) {
    double p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = std::sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    return p;
}

/// Solves erf(x) = y for |y| <= 0.5 by Newton's method from Giles' approximation.
inline double erfinv_central(double y) {
    double x = erfinv_start(-std::log((1.0 - y) * (1.0 + y))) * y;
    for (int i = 0; i < 4; ++i) {
        const double f = std::erf(x) - y;
        x -= f / (two_over_sqrt_pi * std::exp(-x * x));
    }
    return x;
}

/// Solves erfc(x) = c for 0 < c < 0.5 by Newton's method on log(erfc(x)) - log(c), written with
/// erfcx so that nothing underflows even for the smallest subnormal c. Giles' approximation is
/// only valid down to c of about 1e-7; below that the start comes from the asymptotic
/// erfc(x) ~ exp(-x^2) / (x sqrt(pi)).
inline double erfcinv_tail(double c) {
    const double w = -std::log(c * (2.0 - c));
    double x;
    if (w < 16.0) {
        x = erfinv_start(w);
    } else {
        const double log_c = std::log(c);
        x = std::sqrt(-log_c);
        x = std::sqrt(-log_c - std::log(x / inv_sqrt_pi));
    }
    const double log_c = std::log(c);
    for (int i = 0; i < 60; ++i) {
        const double g = erfcx(x);
        const double f = std::log(g) - x * x - log_c;
        const double step = f * g / two_over_sqrt_pi;  // -f / f', f' = -2/(sqrt(pi) erfcx(x))
        x += step;
        if (std::fabs(step) <= 1e-17 * x) break;
    }
    return x;
}

inline double erfinv(double y) {
    if (std::isnan(y) || y < -1.0 || y > 1.0) return std::numeric_limits<double>::quiet_NaN();
    if (y == 1.0) return std::numeric_limits<double>::infinity();
    if (y == -1.0) return -std::numeric_limits<double>::infinity();
    if (y == 0.0) return y;
    if (std::fabs(y) <= 0.5) return erfinv_central(y);
    const double x = erfcinv_tail(1.0 - std::fabs(y));  // 1 - |y| is exact here
    return y < 0 ? -x : x;
}

inline double erfcinv(double c) {
    if (std::isnan(c) || c < 0.0 || c > 2.0) return std::numeric_limits<double>::quiet_NaN();
    if (c == 0.0) return std::numeric_limits<double>::infinity();
    if (c == 2.0) return -std::numeric_limits<double>::infinity();
    if (c > 1.0) return -erfcinv(2.0 - c);  // exact by Sterbenz
    if (c >= 0.5) return erfinv_central(1.0 - c);
    return erfcinv_tail(c);
}

/// Normal cumulative distribution 0.5 * erfc(-x / sqrt(2)). The argument is carried as a
/// double-double and its low part applied as a first-order correction, so the far tail
/// (x near -37) keeps full relative accuracy.
inline double normcdf(double x) {
    constexpr double inv_sqrt2_hi = 7.0710678118654757e-1, inv_sqrt2_lo = -4.8336466567264567e-17;
    const double t = -x * inv_sqrt2_hi;
    const double t_lo = std::fma(-x, inv_sqrt2_hi, -t) + (-x) * inv_sqrt2_lo;
    const double e = std::erfc(t);
    if (!std::isfinite(t)) return 0.5 * e;
    const double hi = t * t, lo = std::fma(t, t, -hi);  // exp(-t^2) with t^2 split exactly
    return 0.5 * (e - t_lo * two_over_sqrt_pi * std::exp(-hi) * (1.0 - lo));
}

/// sin(pi x) with exact argument reduction.
inline double sinpi(double x) {
    if (!std::isfinite(x)) return x - x;
    const double r = std::fmod(std::fabs(x), 2.0);
    double s;
    if (r <= 0.25) s = std::sin(pi * r);
    else if (r <= 0.75) s = std::cos(pi * (r - 0.5));
    else if (r <= 1.25) s = std::sin(pi * (1.0 - r));
    else if (r <= 1.75) s = -std::cos(pi * (r - 1.5));
    else s = -std::sin(pi * (2.0 - r));
    return std::signbit(x) ? -s : s;
}

/// cos(pi x) with exact argument reduction; cospi(n + 1/2) is +0.
inline double cospi(double x) {
    if (!std::isfinite(x)) return x - x;
    const double r = std::fmod(std::fabs(x), 2.0);
    double c;
    if (r <= 0.25) c = std::cos(pi * r);
    else if (r <= 0.75) c = -std::sin(pi * (r - 0.5));
    else if (r <= 1.25) c = -std::cos(pi * (1.0 - r));
    else if (r <= 1.75) c = std::sin(pi * (r - 1.5));
    else c = std::cos(pi * (2.0 - r));
    return c == 0 ? 0.0 : c;
}

inline double bessel_i0(double x) { return std::cyl_bessel_i(0.0, std::fabs(x)); }
inline double bessel_i1(double x) {
    const double v = std::cyl_bessel_i(1.0, std::fabs(x));
    return x < 0 ? -v : v;
}

// Native bit-width helpers for the integer intrinsics.
__extension__ typedef __int128 int128;
__extension__ typedef unsigned __int128 uint128;
constexpr ::cusim::uint32_t u32(int v) { return static_cast<::cusim::uint32_t>(v); }
constexpr ::cusim::uint64_t u64(long long v) { return static_cast<::cusim::uint64_t>(v); }

}  // namespace cusim::detail

// ---------------------------------------------------------------------------------------------
// Single- and double-precision math functions that CUDA has and libm lacks.

#if !CUSIM_LIBC_HAS_C23_RSQRT
inline float rsqrtf(float x) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x))); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
#endif
inline float rcbrtf(float x) { return static_cast<float>(1.0 / std::cbrt(static_cast<double>(x))); }
inline double rcbrt(double x) { return 1.0 / std::cbrt(x); }
#if !CUSIM_LIBC_HAS_C23_PI_FUNCTIONS
inline float sinpif(float x) { return static_cast<float>(cusim::detail::sinpi(x)); }
inline double sinpi(double x) { return cusim::detail::sinpi(x); }
inline float cospif(float x) { return static_cast<float>(cusim::detail::cospi(x)); }
inline double cospi(double x) { return cusim::detail::cospi(x); }
#endif
inline void sincospif(float x, float* s, float* c) {
    *s = static_cast<float>(cusim::detail::sinpi(x));
    *c = static_cast<float>(cusim::detail::cospi(x));
}
inline void sincospi(double x, double* s, double* c) {
    *s = cusim::detail::sinpi(x);
    *c = cusim::detail::cospi(x);
}
inline float erfinvf(float y) { return static_cast<float>(cusim::detail::erfinv(y)); }
inline double erfinv(double y) { return cusim::detail::erfinv(y); }
inline float erfcinvf(float c) { return static_cast<float>(cusim::detail::erfcinv(c)); }
inline double erfcinv(double c) { return cusim::detail::erfcinv(c); }
inline float erfcxf(float x) { return static_cast<float>(cusim::detail::erfcx(x)); }
inline double erfcx(double x) { return cusim::detail::erfcx(x); }
inline float normcdff(float x) { return static_cast<float>(cusim::detail::normcdf(x)); }
inline double normcdf(double x) { return cusim::detail::normcdf(x); }
inline float normcdfinvf(float p) { return static_cast<float>(-cusim::detail::sqrt2 * cusim::detail::erfcinv(2.0 * p)); }
inline double normcdfinv(double p) { return -cusim::detail::sqrt2 * cusim::detail::erfcinv(2.0 * p); }
inline float rhypotf(float x, float y) { return static_cast<float>(1.0 / std::hypot(static_cast<double>(x), static_cast<double>(y))); }
inline double rhypot(double x, double y) { return 1.0 / std::hypot(x, y); }
inline float norm3df(float a, float b, float c) { return static_cast<float>(std::hypot(double{a}, double{b}, double{c})); }
inline double norm3d(double a, double b, double c) { return std::hypot(a, b, c); }
inline float rnorm3df(float a, float b, float c) { return static_cast<float>(1.0 / std::hypot(double{a}, double{b}, double{c})); }
inline double rnorm3d(double a, double b, double c) { return 1.0 / std::hypot(a, b, c); }
inline float norm4df(float a, float b, float c, float d) {
    return static_cast<float>(std::hypot(std::hypot(double{a}, double{b}), std::hypot(double{c}, double{d})));
}
inline double norm4d(double a, double b, double c, double d) { return std::hypot(std::hypot(a, b), std::hypot(c, d)); }
inline float rnorm4df(float a, float b, float c, float d) { return 1.0f / norm4df(a, b, c, d); }
inline double rnorm4d(double a, double b, double c, double d) { return 1.0 / norm4d(a, b, c, d); }
inline float normf(int dim, const float* p) {
    double r = 0;
    for (int i = 0; i < dim; ++i) r = std::hypot(r, double{p[i]});
    return static_cast<float>(r);
}
inline double norm(int dim, const double* p) {
    double r = 0;
    for (int i = 0; i < dim; ++i) r = std::hypot(r, p[i]);
    return r;
}
inline float rnormf(int dim, const float* p) { return 1.0f / normf(dim, p); }
inline double rnorm(int dim, const double* p) { return 1.0 / norm(dim, p); }
inline float cyl_bessel_i0f(float x) { return static_cast<float>(cusim::detail::bessel_i0(x)); }
inline double cyl_bessel_i0(double x) { return cusim::detail::bessel_i0(x); }
inline float cyl_bessel_i1f(float x) { return static_cast<float>(cusim::detail::bessel_i1(x)); }
inline double cyl_bessel_i1(double x) { return cusim::detail::bessel_i1(x); }
inline float fdividef(float x, float y) { return x / y; }
inline double fdivide(double x, double y) { return x / y; }

// Float overloads CUDA adds to the C names (the C++ library already has sqrt(float), exp2(float), ...).
inline float exp10(float x) { return exp10f(x); }
inline float rsqrt(float x) { return rsqrtf(x); }
inline float rcbrt(float x) { return rcbrtf(x); }
inline float sinpi(float x) { return static_cast<float>(cusim::detail::sinpi(x)); }
inline float cospi(float x) { return static_cast<float>(cusim::detail::cospi(x)); }
inline void sincospi(float x, float* s, float* c) { sincospif(x, s, c); }
inline void sincos(float x, float* s, float* c) { sincosf(x, s, c); }
inline float erfinv(float y) { return erfinvf(y); }
inline float erfcinv(float c) { return erfcinvf(c); }
inline float erfcx(float x) { return erfcxf(x); }
inline float normcdf(float x) { return normcdff(x); }
inline float normcdfinv(float p) { return normcdfinvf(p); }
inline float rhypot(float x, float y) { return rhypotf(x, y); }
inline float j0(float x) { return j0f(x); }
inline float j1(float x) { return j1f(x); }
inline float jn(int n, float x) { return jnf(n, x); }
inline float y0(float x) { return y0f(x); }
inline float y1(float x) { return y1f(x); }
inline float yn(int n, float x) { return ynf(n, x); }

// CUDA's min/max overload set (crt/math_functions.hpp), including its mixed signed/unsigned
// forms, which compare in the unsigned type exactly as CUDA does.
inline int min(const int a, const int b) { return a < b ? a : b; }
inline unsigned int umin(const unsigned int a, const unsigned int b) { return a < b ? a : b; }
inline long long int llmin(const long long int a, const long long int b) { return a < b ? a : b; }
inline unsigned long long int ullmin(const unsigned long long int a, const unsigned long long int b) { return a < b ? a : b; }
inline int max(const int a, const int b) { return a > b ? a : b; }
inline unsigned int umax(const unsigned int a, const unsigned int b) { return a > b ? a : b; }
inline long long int llmax(const long long int a, const long long int b) { return a > b ? a : b; }
inline unsigned long long int ullmax(const unsigned long long int a, const unsigned long long int b) { return a > b ? a : b; }
inline unsigned int min(const unsigned int a, const unsigned int b) { return umin(a, b); }
inline unsigned int min(const int a, const unsigned int b) { return umin(static_cast<unsigned int>(a), b); }
inline unsigned int min(const unsigned int a, const int b) { return umin(a, static_cast<unsigned int>(b)); }
inline long int min(const long int a, const long int b) { return a < b ? a : b; }
inline unsigned long int min(const unsigned long int a, const unsigned long int b) { return a < b ? a : b; }
inline unsigned long int min(const long int a, const unsigned long int b) { return min(static_cast<unsigned long int>(a), b); }
inline unsigned long int min(const unsigned long int a, const long int b) { return min(a, static_cast<unsigned long int>(b)); }
inline long long int min(const long long int a, const long long int b) { return llmin(a, b); }
inline unsigned long long int min(const unsigned long long int a, const unsigned long long int b) { return ullmin(a, b); }
inline unsigned long long int min(const long long int a, const unsigned long long int b) { return ullmin(static_cast<unsigned long long int>(a), b); }
inline unsigned long long int min(const unsigned long long int a, const long long int b) { return ullmin(a, static_cast<unsigned long long int>(b)); }
inline float min(const float a, const float b) { return fminf(a, b); }
inline double min(const double a, const double b) { return fmin(a, b); }
inline double min(const float a, const double b) { return fmin(static_cast<double>(a), b); }
inline double min(const double a, const float b) { return fmin(a, static_cast<double>(b)); }
inline unsigned int max(const unsigned int a, const unsigned int b) { return umax(a, b); }
inline unsigned int max(const int a, const unsigned int b) { return umax(static_cast<unsigned int>(a), b); }
inline unsigned int max(const unsigned int a, const int b) { return umax(a, static_cast<unsigned int>(b)); }
inline long int max(const long int a, const long int b) { return a > b ? a : b; }
inline unsigned long int max(const unsigned long int a, const unsigned long int b) { return a > b ? a : b; }
inline unsigned long int max(const long int a, const unsigned long int b) { return max(static_cast<unsigned long int>(a), b); }
inline unsigned long int max(const unsigned long int a, const long int b) { return max(a, static_cast<unsigned long int>(b)); }
inline long long int max(const long long int a, const long long int b) { return llmax(a, b); }
inline unsigned long long int max(const unsigned long long int a, const unsigned long long int b) { return ullmax(a, b); }
inline unsigned long long int max(const long long int a, const unsigned long long int b) { return ullmax(static_cast<unsigned long long int>(a), b); }
inline unsigned long long int max(const unsigned long long int a, const long long int b) { return ullmax(a, static_cast<unsigned long long int>(b)); }
inline float max(const float a, const float b) { return fmaxf(a, b); }
inline double max(const double a, const double b) { return fmax(a, b); }
inline double max(const float a, const double b) { return fmax(static_cast<double>(a), b); }
inline double max(const double a, const float b) { return fmax(a, static_cast<double>(b)); }

// ---------------------------------------------------------------------------------------------
// Fast-math intrinsics. glibc already declares these names (as C functions without a
// definition it exports), so they are defined here with the same C linkage and noexcept.
extern "C" {
inline float __expf(float x) noexcept { return expf(x); }
inline float __exp10f(float x) noexcept { return exp10f(x); }
inline float __logf(float x) noexcept { return logf(x); }
inline float __log2f(float x) noexcept { return log2f(x); }
inline float __log10f(float x) noexcept { return log10f(x); }
inline float __powf(float x, float y) noexcept { return powf(x, y); }
inline float __sinf(float x) noexcept { return sinf(x); }
inline float __cosf(float x) noexcept { return cosf(x); }
inline float __tanf(float x) noexcept { return tanf(x); }
inline float __tanhf(float x) noexcept { return tanhf(x); }
inline void __sincosf(float x, float* s, float* c) noexcept { sincosf(x, s, c); }
}
inline float __fdividef(float x, float y) { return x / y; }
/// Clamps to [0, 1]; NaN gives +0.
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }

// Explicitly rounded single-precision arithmetic (never contracted into other operations).
inline float __fadd_rn(float x, float y) { return cusim::detail::fadd(x, y, cusim::detail::round_mode::rn); }
inline float __fadd_rz(float x, float y) { return cusim::detail::fadd(x, y, cusim::detail::round_mode::rz); }
inline float __fadd_ru(float x, float y) { return cusim::detail::fadd(x, y, cusim::detail::round_mode::ru); }
inline float __fadd_rd(float x, float y) { return cusim::detail::fadd(x, y, cusim::detail::round_mode::rd); }
inline float __fsub_rn(float x, float y) { return cusim::detail::fadd(x, -y, cusim::detail::round_mode::rn); }
inline float __fsub_rz(float x, float y) { return cusim::detail::fadd(x, -y, cusim::detail::round_mode::rz); }
inline float __fsub_ru(float x, float y) { return cusim::detail::fadd(x, -y, cusim::detail::round_mode::ru); }
inline float __fsub_rd(float x, float y) { return cusim::detail::fadd(x, -y, cusim::detail::round_mode::rd); }
inline float __fmul_rn(float x, float y) { return cusim::detail::fmul(x, y, cusim::detail::round_mode::rn); }
inline float __fmul_rz(float x, float y) { return cusim::detail::fmul(x, y, cusim::detail::round_mode::rz); }
inline float __fmul_ru(float x, float y) { return cusim::detail::fmul(x, y, cusim::detail::round_mode::ru); }
inline float __fmul_rd(float x, float y) { return cusim::detail::fmul(x, y, cusim::detail::round_mode::rd); }
inline float __fmaf_rn(float x, float y, float z) { return cusim::detail::ffma(x, y, z, cusim::detail::round_mode::rn); }
inline float __fmaf_rz(float x, float y, float z) { return cusim::detail::ffma(x, y, z, cusim::detail::round_mode::rz); }
inline float __fmaf_ru(float x, float y, float z) { return cusim::detail::ffma(x, y, z, cusim::detail::round_mode::ru); }
inline float __fmaf_rd(float x, float y, float z) { return cusim::detail::ffma(x, y, z, cusim::detail::round_mode::rd); }
inline float __fmaf_ieee_rn(float x, float y, float z) { return __fmaf_rn(x, y, z); }
inline float __fmaf_ieee_rz(float x, float y, float z) { return __fmaf_rz(x, y, z); }
inline float __fmaf_ieee_ru(float x, float y, float z) { return __fmaf_ru(x, y, z); }
inline float __fmaf_ieee_rd(float x, float y, float z) { return __fmaf_rd(x, y, z); }
inline float __fdiv_rn(float x, float y) { return cusim::detail::fdiv(x, y, cusim::detail::round_mode::rn); }
inline float __fdiv_rz(float x, float y) { return cusim::detail::fdiv(x, y, cusim::detail::round_mode::rz); }
inline float __fdiv_ru(float x, float y) { return cusim::detail::fdiv(x, y, cusim::detail::round_mode::ru); }
inline float __fdiv_rd(float x, float y) { return cusim::detail::fdiv(x, y, cusim::detail::round_mode::rd); }
inline float __frcp_rn(float x) { return __fdiv_rn(1.0f, x); }
inline float __frcp_rz(float x) { return __fdiv_rz(1.0f, x); }
inline float __frcp_ru(float x) { return __fdiv_ru(1.0f, x); }
inline float __frcp_rd(float x) { return __fdiv_rd(1.0f, x); }
inline float __fsqrt_rn(float x) { return cusim::detail::fsqrt(x, cusim::detail::round_mode::rn); }
inline float __fsqrt_rz(float x) { return cusim::detail::fsqrt(x, cusim::detail::round_mode::rz); }
inline float __fsqrt_ru(float x) { return cusim::detail::fsqrt(x, cusim::detail::round_mode::ru); }
inline float __fsqrt_rd(float x) { return cusim::detail::fsqrt(x, cusim::detail::round_mode::rd); }
inline float __frsqrt_rn(float x) { return rsqrtf(x); }

// Explicitly rounded double-precision arithmetic.
inline double __dadd_rn(double x, double y) { return cusim::detail::dadd(x, y, cusim::detail::round_mode::rn); }
inline double __dadd_rz(double x, double y) { return cusim::detail::dadd(x, y, cusim::detail::round_mode::rz); }
inline double __dadd_ru(double x, double y) { return cusim::detail::dadd(x, y, cusim::detail::round_mode::ru); }
inline double __dadd_rd(double x, double y) { return cusim::detail::dadd(x, y, cusim::detail::round_mode::rd); }
inline double __dsub_rn(double x, double y) { return cusim::detail::dadd(x, -y, cusim::detail::round_mode::rn); }
inline double __dsub_rz(double x, double y) { return cusim::detail::dadd(x, -y, cusim::detail::round_mode::rz); }
inline double __dsub_ru(double x, double y) { return cusim::detail::dadd(x, -y, cusim::detail::round_mode::ru); }
inline double __dsub_rd(double x, double y) { return cusim::detail::dadd(x, -y, cusim::detail::round_mode::rd); }
inline double __dmul_rn(double x, double y) { return cusim::detail::dmul(x, y, cusim::detail::round_mode::rn); }
inline double __dmul_rz(double x, double y) { return cusim::detail::dmul(x, y, cusim::detail::round_mode::rz); }
inline double __dmul_ru(double x, double y) { return cusim::detail::dmul(x, y, cusim::detail::round_mode::ru); }
inline double __dmul_rd(double x, double y) { return cusim::detail::dmul(x, y, cusim::detail::round_mode::rd); }
inline double __fma_rn(double x, double y, double z) { return std::fma(x, y, z); }
inline double __fma_rz(double x, double y, double z) { return cusim::detail::dfma(x, y, z, cusim::detail::round_mode::rz); }
inline double __fma_ru(double x, double y, double z) { return cusim::detail::dfma(x, y, z, cusim::detail::round_mode::ru); }
inline double __fma_rd(double x, double y, double z) { return cusim::detail::dfma(x, y, z, cusim::detail::round_mode::rd); }
inline double __ddiv_rn(double x, double y) { return cusim::detail::ddiv(x, y, cusim::detail::round_mode::rn); }
inline double __ddiv_rz(double x, double y) { return cusim::detail::ddiv(x, y, cusim::detail::round_mode::rz); }
inline double __ddiv_ru(double x, double y) { return cusim::detail::ddiv(x, y, cusim::detail::round_mode::ru); }
inline double __ddiv_rd(double x, double y) { return cusim::detail::ddiv(x, y, cusim::detail::round_mode::rd); }
inline double __drcp_rn(double x) { return __ddiv_rn(1.0, x); }
inline double __drcp_rz(double x) { return __ddiv_rz(1.0, x); }
inline double __drcp_ru(double x) { return __ddiv_ru(1.0, x); }
inline double __drcp_rd(double x) { return __ddiv_rd(1.0, x); }
inline double __dsqrt_rn(double x) { return cusim::detail::dsqrt(x, cusim::detail::round_mode::rn); }
inline double __dsqrt_rz(double x) { return cusim::detail::dsqrt(x, cusim::detail::round_mode::rz); }
inline double __dsqrt_ru(double x) { return cusim::detail::dsqrt(x, cusim::detail::round_mode::ru); }
inline double __dsqrt_rd(double x) { return cusim::detail::dsqrt(x, cusim::detail::round_mode::rd); }

// ---------------------------------------------------------------------------------------------
// Reinterpretation and conversion intrinsics.
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __uint_as_float(unsigned int x) { return std::bit_cast<float>(x); }
inline unsigned int __float_as_uint(float x) { return std::bit_cast<unsigned int>(x); }
inline double __longlong_as_double(long long int x) { return std::bit_cast<double>(x); }
inline long long int __double_as_longlong(double x) { return std::bit_cast<long long int>(x); }
inline int __double2hiint(double x) { return static_cast<int>(std::bit_cast<::cusim::uint64_t>(x) >> 32); }
inline int __double2loint(double x) { return static_cast<int>(std::bit_cast<::cusim::uint64_t>(x) & 0xffffffffu); }
inline double __hiloint2double(int hi, int lo) {
    return std::bit_cast<double>((static_cast<::cusim::uint64_t>(cusim::detail::u32(hi)) << 32) | cusim::detail::u32(lo));
}

#define CUSIM_DEFINE_TO_INTEGER(NAME, FROM, TO)                                                              \
    inline TO NAME##_rn(FROM x) { return cusim::detail::to_integer<TO>(x, cusim::detail::round_mode::rn); } \
    inline TO NAME##_rz(FROM x) { return cusim::detail::to_integer<TO>(x, cusim::detail::round_mode::rz); } \
    inline TO NAME##_ru(FROM x) { return cusim::detail::to_integer<TO>(x, cusim::detail::round_mode::ru); } \
    inline TO NAME##_rd(FROM x) { return cusim::detail::to_integer<TO>(x, cusim::detail::round_mode::rd); }
CUSIM_DEFINE_TO_INTEGER(__float2int, float, int)
CUSIM_DEFINE_TO_INTEGER(__float2uint, float, unsigned int)
CUSIM_DEFINE_TO_INTEGER(__float2ll, float, long long int)
CUSIM_DEFINE_TO_INTEGER(__float2ull, float, unsigned long long int)
CUSIM_DEFINE_TO_INTEGER(__double2int, double, int)
CUSIM_DEFINE_TO_INTEGER(__double2uint, double, unsigned int)
CUSIM_DEFINE_TO_INTEGER(__double2ll, double, long long int)
CUSIM_DEFINE_TO_INTEGER(__double2ull, double, unsigned long long int)
#undef CUSIM_DEFINE_TO_INTEGER

#define CUSIM_DEFINE_FROM_INTEGER(NAME, FROM, TO, CONVERT, NEG)                                                      \
    inline TO NAME##_rn(FROM x) { return cusim::detail::CONVERT(NEG, cusim::detail::magnitude_of(x), cusim::detail::round_mode::rn); } \
    inline TO NAME##_rz(FROM x) { return cusim::detail::CONVERT(NEG, cusim::detail::magnitude_of(x), cusim::detail::round_mode::rz); } \
    inline TO NAME##_ru(FROM x) { return cusim::detail::CONVERT(NEG, cusim::detail::magnitude_of(x), cusim::detail::round_mode::ru); } \
    inline TO NAME##_rd(FROM x) { return cusim::detail::CONVERT(NEG, cusim::detail::magnitude_of(x), cusim::detail::round_mode::rd); }
CUSIM_DEFINE_FROM_INTEGER(__int2float, int, float, int_to_float, x < 0)
CUSIM_DEFINE_FROM_INTEGER(__ll2float, long long int, float, int_to_float, x < 0)
CUSIM_DEFINE_FROM_INTEGER(__ll2double, long long int, double, int_to_double, x < 0)
#undef CUSIM_DEFINE_FROM_INTEGER

#define CUSIM_DEFINE_FROM_UNSIGNED(NAME, FROM, TO, CONVERT)                                                  \
    inline TO NAME##_rn(FROM x) { return cusim::detail::CONVERT(false, x, cusim::detail::round_mode::rn); } \
    inline TO NAME##_rz(FROM x) { return cusim::detail::CONVERT(false, x, cusim::detail::round_mode::rz); } \
    inline TO NAME##_ru(FROM x) { return cusim::detail::CONVERT(false, x, cusim::detail::round_mode::ru); } \
    inline TO NAME##_rd(FROM x) { return cusim::detail::CONVERT(false, x, cusim::detail::round_mode::rd); }
CUSIM_DEFINE_FROM_UNSIGNED(__uint2float, unsigned int, float, int_to_float)
CUSIM_DEFINE_FROM_UNSIGNED(__ull2float, unsigned long long int, float, int_to_float)
CUSIM_DEFINE_FROM_UNSIGNED(__ull2double, unsigned long long int, double, int_to_double)
#undef CUSIM_DEFINE_FROM_UNSIGNED

inline double __int2double_rn(int x) { return static_cast<double>(x); }
inline double __uint2double_rn(unsigned int x) { return static_cast<double>(x); }
inline float __double2float_rn(double x) { return cusim::detail::double_to_float(x, cusim::detail::round_mode::rn); }
inline float __double2float_rz(double x) { return cusim::detail::double_to_float(x, cusim::detail::round_mode::rz); }
inline float __double2float_ru(double x) { return cusim::detail::double_to_float(x, cusim::detail::round_mode::ru); }
inline float __double2float_rd(double x) { return cusim::detail::double_to_float(x, cusim::detail::round_mode::rd); }

// ---------------------------------------------------------------------------------------------
// Integer and bit intrinsics.
inline int __popc(unsigned int x) { return std::popcount(x); }
inline int __popcll(unsigned long long int x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(cusim::detail::u32(x)); }
inline int __clzll(long long int x) { return std::countl_zero(cusim::detail::u64(x)); }
/// Position (1-based) of the least significant set bit, 0 for 0.
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(cusim::detail::u32(x)) + 1; }
inline int __ffsll(long long int x) { return x == 0 ? 0 : std::countr_zero(cusim::detail::u64(x)) + 1; }
inline unsigned int __brev(unsigned int x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}
inline unsigned long long int __brevll(unsigned long long int x) {
    return (static_cast<unsigned long long int>(__brev(static_cast<unsigned int>(x))) << 32) |
           __brev(static_cast<unsigned int>(x >> 32));
}
/// Byte n of the result is byte (s >> 4n) & 7 of the 8-byte value {y, x} (x the low bytes);
/// bit 3 of each selector nibble and the upper 16 bits of s are ignored, as in CUDA.
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    const ::cusim::uint64_t bytes = (static_cast<::cusim::uint64_t>(y) << 32) | x;
    unsigned int r = 0;
    for (int n = 0; n < 4; ++n) {
        const unsigned int sel = (s >> (4 * n)) & 7u;
        r |= (static_cast<unsigned int>(bytes >> (8 * sel)) & 0xffu) << (8 * n);
    }
    return r;
}
inline unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
    const ::cusim::uint64_t v = (static_cast<::cusim::uint64_t>(hi) << 32) | lo;
    return static_cast<unsigned int>((v << (shift & 31u)) >> 32);
}
inline unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift) {
    const ::cusim::uint64_t v = (static_cast<::cusim::uint64_t>(hi) << 32) | lo;
    return static_cast<unsigned int>((v << (shift < 32u ? shift : 32u)) >> 32);
}
inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
    const ::cusim::uint64_t v = (static_cast<::cusim::uint64_t>(hi) << 32) | lo;
    return static_cast<unsigned int>(v >> (shift & 31u));
}
inline unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift) {
    const ::cusim::uint64_t v = (static_cast<::cusim::uint64_t>(hi) << 32) | lo;
    return static_cast<unsigned int>(v >> (shift < 32u ? shift : 32u));
}
/// Product of the low 24 bits of x and y (sign-extended), low 32 bits of the result.
inline int __mul24(int x, int y) {
    const auto sx = static_cast<::cusim::int64_t>(static_cast<::cusim::int32_t>(cusim::detail::u32(x) << 8) >> 8);
    const auto sy = static_cast<::cusim::int64_t>(static_cast<::cusim::int32_t>(cusim::detail::u32(y) << 8) >> 8);
    return static_cast<int>(static_cast<::cusim::uint32_t>(sx * sy));
}
inline unsigned int __umul24(unsigned int x, unsigned int y) {
    return static_cast<unsigned int>(static_cast<::cusim::uint64_t>(x & 0xffffffu) * (y & 0xffffffu));
}
inline int __mulhi(int x, int y) { return static_cast<int>((static_cast<::cusim::int64_t>(x) * y) >> 32); }
inline unsigned int __umulhi(unsigned int x, unsigned int y) {
    return static_cast<unsigned int>((static_cast<::cusim::uint64_t>(x) * y) >> 32);
}
inline long long int __mul64hi(long long int x, long long int y) {
    return static_cast<long long int>((static_cast<cusim::detail::int128>(x) * y) >> 64);
}
inline unsigned long long int __umul64hi(unsigned long long int x, unsigned long long int y) {
    return static_cast<unsigned long long int>((static_cast<cusim::detail::uint128>(x) * y) >> 64);
}
/// |x - y| + z.
inline unsigned int __sad(int x, int y, unsigned int z) {
    const ::cusim::int64_t d = static_cast<::cusim::int64_t>(x) - y;
    return static_cast<unsigned int>(d < 0 ? -d : d) + z;
}
inline unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) { return (x > y ? x - y : y - x) + z; }
/// (x + y) >> 1 and (x + y + 1) >> 1 without intermediate overflow.
inline int __hadd(int x, int y) { return static_cast<int>((static_cast<::cusim::int64_t>(x) + y) >> 1); }
inline int __rhadd(int x, int y) { return static_cast<int>((static_cast<::cusim::int64_t>(x) + y + 1) >> 1); }
inline unsigned int __uhadd(unsigned int x, unsigned int y) {
    return static_cast<unsigned int>((static_cast<::cusim::uint64_t>(x) + y) >> 1);
}
inline unsigned int __urhadd(unsigned int x, unsigned int y) {
    return static_cast<unsigned int>((static_cast<::cusim::uint64_t>(x) + y + 1) >> 1);
}

namespace cusim::detail {
/// c + sum of N lane products: a holds N lanes of 32/N bits, b holds bytes from b_first_lane on.
/// Signed lanes for the int overloads, unsigned for the unsigned ones; the sum wraps mod 2^32.
template <bool Signed, int N>
inline ::cusim::uint32_t dot_lanes(::cusim::uint32_t a, ::cusim::uint32_t b, int b_first_lane, ::cusim::uint32_t c) {
    constexpr int a_bits = 32 / N;
    ::cusim::uint32_t sum = c;
    for (int i = 0; i < N; ++i) {
        const ::cusim::uint32_t a_raw = (a >> (a_bits * i)) & ((1u << a_bits) - 1);
        const ::cusim::uint32_t b_raw = (b >> (8 * (b_first_lane + i))) & 0xffu;
        ::cusim::int64_t av = a_raw, bv = b_raw;
        if (Signed) {
            if (a_raw >> (a_bits - 1)) av -= ::cusim::int64_t{1} << a_bits;
            if (b_raw >> 7) bv -= 256;
        }
        sum += static_cast<::cusim::uint32_t>(av * bv);
    }
    return sum;
}
}  // namespace cusim::detail

/// Four-way byte dot product with 32-bit accumulate; two-way 16x8-bit products for __dp2a.
inline int __dp4a(int a, int b, int c) {
    return static_cast<int>(cusim::detail::dot_lanes<true, 4>(cusim::detail::u32(a), cusim::detail::u32(b), 0, cusim::detail::u32(c)));
}
inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) { return cusim::detail::dot_lanes<false, 4>(a, b, 0, c); }
inline int __dp4a(char4 a, char4 b, int c) { return __dp4a(std::bit_cast<int>(a), std::bit_cast<int>(b), c); }
inline unsigned int __dp4a(uchar4 a, uchar4 b, unsigned int c) { return __dp4a(std::bit_cast<unsigned int>(a), std::bit_cast<unsigned int>(b), c); }
inline int __dp2a_lo(int a, int b, int c) {
    return static_cast<int>(cusim::detail::dot_lanes<true, 2>(cusim::detail::u32(a), cusim::detail::u32(b), 0, cusim::detail::u32(c)));
}
inline unsigned int __dp2a_lo(unsigned int a, unsigned int b, unsigned int c) { return cusim::detail::dot_lanes<false, 2>(a, b, 0, c); }
inline int __dp2a_lo(short2 a, char4 b, int c) { return __dp2a_lo(std::bit_cast<int>(a), std::bit_cast<int>(b), c); }
inline unsigned int __dp2a_lo(ushort2 a, uchar4 b, unsigned int c) { return __dp2a_lo(std::bit_cast<unsigned int>(a), std::bit_cast<unsigned int>(b), c); }
inline int __dp2a_hi(int a, int b, int c) {
    return static_cast<int>(cusim::detail::dot_lanes<true, 2>(cusim::detail::u32(a), cusim::detail::u32(b), 2, cusim::detail::u32(c)));
}
inline unsigned int __dp2a_hi(unsigned int a, unsigned int b, unsigned int c) { return cusim::detail::dot_lanes<false, 2>(a, b, 2, c); }
inline int __dp2a_hi(short2 a, char4 b, int c) { return __dp2a_hi(std::bit_cast<int>(a), std::bit_cast<int>(b), c); }
inline unsigned int __dp2a_hi(ushort2 a, uchar4 b, unsigned int c) { return __dp2a_hi(std::bit_cast<unsigned int>(a), std::bit_cast<unsigned int>(b), c); }

// ---------------------------------------------------------------------------------------------
// Cache-hinted loads and stores: on the CPU every hint is an ordinary access. The overload set
// is CUDA's (sm_32_intrinsics.h); cuda_fp16.h / cuda_bf16.h add the 16-bit float types.
#define CUSIM_DEFINE_CACHE_HINTS(T)                   \
    inline T __ldg(const T* p) { return *p; }         \
    inline T __ldcg(const T* p) { return *p; }        \
    inline T __ldca(const T* p) { return *p; }        \
    inline T __ldcs(const T* p) { return *p; }        \
    inline T __ldlu(const T* p) { return *p; }        \
    inline T __ldcv(const T* p) { return *p; }        \
    inline void __stwb(T* p, T v) { *p = v; }         \
    inline void __stcg(T* p, T v) { *p = v; }         \
    inline void __stcs(T* p, T v) { *p = v; }         \
    inline void __stwt(T* p, T v) { *p = v; }
CUSIM_DEFINE_CACHE_HINTS(char)
CUSIM_DEFINE_CACHE_HINTS(signed char)
CUSIM_DEFINE_CACHE_HINTS(short)
CUSIM_DEFINE_CACHE_HINTS(int)
CUSIM_DEFINE_CACHE_HINTS(long)
CUSIM_DEFINE_CACHE_HINTS(long long)
CUSIM_DEFINE_CACHE_HINTS(unsigned char)
CUSIM_DEFINE_CACHE_HINTS(unsigned short)
CUSIM_DEFINE_CACHE_HINTS(unsigned int)
CUSIM_DEFINE_CACHE_HINTS(unsigned long)
CUSIM_DEFINE_CACHE_HINTS(unsigned long long)
CUSIM_DEFINE_CACHE_HINTS(char2)
CUSIM_DEFINE_CACHE_HINTS(char4)
CUSIM_DEFINE_CACHE_HINTS(short2)
CUSIM_DEFINE_CACHE_HINTS(short4)
CUSIM_DEFINE_CACHE_HINTS(int2)
CUSIM_DEFINE_CACHE_HINTS(int4)
CUSIM_DEFINE_CACHE_HINTS(longlong2)
CUSIM_DEFINE_CACHE_HINTS(uchar2)
CUSIM_DEFINE_CACHE_HINTS(uchar4)
CUSIM_DEFINE_CACHE_HINTS(ushort2)
CUSIM_DEFINE_CACHE_HINTS(ushort4)
CUSIM_DEFINE_CACHE_HINTS(uint2)
CUSIM_DEFINE_CACHE_HINTS(uint4)
CUSIM_DEFINE_CACHE_HINTS(ulonglong2)
CUSIM_DEFINE_CACHE_HINTS(float)
CUSIM_DEFINE_CACHE_HINTS(float2)
CUSIM_DEFINE_CACHE_HINTS(float4)
CUSIM_DEFINE_CACHE_HINTS(double)
CUSIM_DEFINE_CACHE_HINTS(double2)
#undef CUSIM_DEFINE_CACHE_HINTS

// ---------------------------------------------------------------------------------------------
// Fences, clocks, sleep. Blocks run on parallel OS threads, so __threadfence() is a real CPU fence.
// The threads of a block run on one OS thread, so __threadfence_block() needs only the compiler's
// ordering; it is a signal fence, which also tells analysis that it orders nothing for other blocks.
// (The compiler's builtins rather than <atomic>, which nvcc's implicit headers do not declare.)
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

namespace cusim::detail {
long long steady_clock_ns();     // the host's steady clock, in nanoseconds (scheduler.cpp)
void sleep_ns(unsigned int ns);  // suspends the calling worker thread (scheduler.cpp)
}  // namespace cusim::detail

/// The host's steady clock in nanoseconds; in device-only code the rewriter makes a call count cycles.
inline long long int clock64() { return cusim::detail::steady_clock_ns(); }

/// Sleeps about ns nanoseconds (the GPU caps a sleep at one millisecond). It suspends the
/// whole worker thread, not only the calling simulated thread.
inline void __nanosleep(unsigned int ns) { cusim::detail::sleep_ns(ns < 1000000u ? ns : 1000000u); }
