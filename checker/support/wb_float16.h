/// @file
/// @brief The 16-bit floating-point formats on the host, as the GPU rounds to them: bf16 and IEEE
/// fp16 (binary16) bit patterns from float (round to nearest even, as __float2bfloat16 and
/// __float2half) and back. Checks use them to build 16-bit inputs and read 16-bit outputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace wb::check {

/// float -> bf16 bits, round to nearest even (NaN stays NaN).
inline std::uint16_t to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f)) return 0x7FC0;
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

/// bf16 bits -> float (exact).
inline float from_bf16(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// float -> fp16 bits, round to nearest even, with subnormals and overflow to infinity.
inline std::uint16_t to_fp16(float f) {
  if (std::isnan(f)) return 0x7E00;
  const double a = std::fabs(static_cast<double>(f));
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (a >= 65520.0) return sign | 0x7C00;
  if (a <= std::ldexp(1.0, -25)) return sign;  // half the smallest subnormal rounds to even: 0
  int e = std::max(std::ilogb(a), -14);
  double q = std::nearbyint(a / std::ldexp(1.0, e - 10));  // significand in units of the ulp
  if (q >= 2048.0) q /= 2.0, ++e;
  if (e == -14 && q < 1024.0) return sign | static_cast<std::uint16_t>(q);  // subnormal
  return sign | static_cast<std::uint16_t>(((e + 15) << 10) | (static_cast<int>(q) - 1024));
}

/// fp16 bits -> float (exact).
inline float from_fp16(std::uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(1024 + m, e - 25);
  return static_cast<float>((h & 0x8000) ? -v : v);
}

}  // namespace wb::check
