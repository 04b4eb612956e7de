// hcomm/core/bfloat16.hpp: conversions between float32/float64 and bfloat16 bit patterns
// (1 sign, 8 exponent, 7 mantissa bits: the top half of a float32), on host and device.
//
//   std::uint16_t h = hcomm::to_bf16_bits(1.0f);          // 0x3F80
//   float f  = hcomm::bf16_bits_to_float(h);               // 1.0f, exactly
//   double d = hcomm::bf16_bits_to_double(hcomm::to_bf16_bits(0.1));  // 0.10009765625
//
// Narrowing rounds to nearest, ties to even, as an IEEE conversion does: a value at or past
// the midpoint between the largest finite bfloat16 (0x7F7F, about 3.39e38) and 2^128 becomes
// ±Inf; values below half the smallest subnormal (2^-133) become ±0; float64 input is rounded
// once, straight to bfloat16 (not through float32, which would round twice). ±Inf stays ±Inf.
// A NaN stays a NaN with its sign and the top 7 bits of its payload, quiet bit set (what
// x86's VCVTNEPS2BF16 and Arm's BFCVT write; PyTorch's c10::BFloat16 writes 0x7FC0 instead).
// Widening is exact. Everything here is integer arithmetic on the bit patterns, so the result
// does not depend on the compiler's or the GPU's floating-point modes (FTZ, fast math).
#pragma once
#include <cstdint>
#include <cstring>

#include "hcomm/core/macros.hpp"

namespace hcomm {

namespace bfloat16_detail {
// round(sig / 2^sh) to nearest, ties to even, for 1 <= sh <= 63.
HCOMM_HOST_DEVICE constexpr std::uint64_t shift_rne(std::uint64_t sig, unsigned sh) {
  const std::uint64_t q = sig >> sh;
  const std::uint64_t rem = sig & ((std::uint64_t{1} << sh) - 1);
  const std::uint64_t half = std::uint64_t{1} << (sh - 1);
  return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}
}  // namespace bfloat16_detail

// float32 bit pattern -> bfloat16 bit pattern (round to nearest even; NaN kept quiet).
HCOMM_HOST_DEVICE constexpr std::uint16_t to_bf16_bits_from_f32(std::uint32_t u) {
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  // The low 16 bits round into the high 16; a carry moves into the exponent, and out of the
  // largest finite exponent into Inf's pattern, exactly as the IEEE rule gives. (Inf itself
  // has zero low bits and stays.)
  const std::uint32_t low = u & 0xFFFFu, high = u >> 16;
  const std::uint32_t up = (low > 0x8000u || (low == 0x8000u && (high & 1u))) ? 1u : 0u;
  return static_cast<std::uint16_t>(high + up);
}

// float64 bit pattern -> bfloat16 bit pattern, rounded once.
HCOMM_HOST_DEVICE constexpr std::uint16_t to_bf16_bits_from_f64(std::uint64_t u) {
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 48) & 0x8000u);
  const int e = static_cast<int>((u >> 52) & 0x7FFu);
  const std::uint64_t m = u & 0xFFFFFFFFFFFFFull;
  if (e == 0x7FF) {
    if (m == 0) return static_cast<std::uint16_t>(sign | 0x7F80u);
    return static_cast<std::uint16_t>(sign | 0x7FC0u | static_cast<std::uint16_t>(m >> 45));
  }
  // bfloat16's biased exponent of the value (e - 1023 + 127); float64 subnormals (e == 0)
  // lie far below bfloat16's smallest subnormal and round to zero through the shift below.
  const int E = e - 896;
  if (E >= 255) return static_cast<std::uint16_t>(sign | 0x7F80u);
  const std::uint64_t sig = e == 0 ? m : (m | (std::uint64_t{1} << 52));
  // A normal result keeps 8 significant bits (shift 45); below the smallest normal exponent
  // the unit of the last place stays 2^-133, so the shift grows. Beyond 54 nothing is left
  // but a value below half that unit: zero.
  const int sh = E >= 1 ? 45 : 46 - E;
  if (sh > 54) return sign;
  const std::uint64_t r = bfloat16_detail::shift_rne(sig, static_cast<unsigned>(sh));
  // r holds the implicit bit for normal results (0x80..0x100); adding (E-1) << 7 places the
  // exponent, and a carry to 0x100 moves it up by one (into Inf from the largest finite).
  const std::uint64_t bits = E >= 1 ? (static_cast<std::uint64_t>(E - 1) << 7) + r : r;
  return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(bits));
}

// bfloat16 bit pattern -> float32 bit pattern (exact).
HCOMM_HOST_DEVICE constexpr std::uint32_t bf16_bits_to_f32_bits(std::uint16_t h) {
  return static_cast<std::uint32_t>(h) << 16;
}

// bfloat16 bit pattern -> float64 bit pattern (exact; NaN payload bits kept in place).
HCOMM_HOST_DEVICE constexpr std::uint64_t bf16_bits_to_f64_bits(std::uint16_t h) {
  const std::uint64_t sign = static_cast<std::uint64_t>(h & 0x8000u) << 48;
  const unsigned e = (h >> 7) & 0xFFu;
  std::uint64_t m = h & 0x7Fu;
  if (e == 0xFF) return sign | (std::uint64_t{0x7FF} << 52) | (m << 45);
  if (e != 0) return sign | (static_cast<std::uint64_t>(e + 896) << 52) | (m << 45);
  if (m == 0) return sign;
  // Subnormal m * 2^-133: normalise so that the leading bit becomes the implicit one.
  int k = 0;  // leading-bit position of m (0..6)
  for (std::uint64_t t = m; t > 1; t >>= 1) ++k;
  m = (m << (52 - k)) & 0xFFFFFFFFFFFFFull;
  return sign | (static_cast<std::uint64_t>(k - 133 + 1023) << 52) | m;
}

HCOMM_HOST_DEVICE std::uint16_t to_bf16_bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return to_bf16_bits_from_f32(u);
}
HCOMM_HOST_DEVICE std::uint16_t to_bf16_bits(double v) {
  std::uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return to_bf16_bits_from_f64(u);
}
HCOMM_HOST_DEVICE float bf16_bits_to_float(std::uint16_t h) {
  const std::uint32_t u = bf16_bits_to_f32_bits(h);
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
HCOMM_HOST_DEVICE double bf16_bits_to_double(std::uint16_t h) {
  const std::uint64_t u = bf16_bits_to_f64_bits(h);
  double v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

// v rounded to the nearest bfloat16 (ties to even; a NaN stays a NaN, quiet, as to_bf16_bits
// keeps it), kept in float32: bf16_bits_to_float(to_bf16_bits(v)) with a select instead of
// branches, so that a loop over an array vectorises. Adding 0x7FFF plus the kept part's lowest
// bit carries into the kept part exactly when the dropped half is above the midpoint, or at it
// with the kept part odd.
HCOMM_HOST_DEVICE float round_to_bf16(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  const std::uint32_t nearest = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  const std::uint32_t quiet_nan = (u | 0x00400000u) & 0xFFFF0000u;
  const std::uint32_t r = (u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : nearest;
  float f;
  std::memcpy(&f, &r, sizeof f);
  return f;
}

// The element-type-generic spelling: from_bf16_bits<T>(h).
template <class T>
HCOMM_HOST_DEVICE T from_bf16_bits(std::uint16_t h) {
  if constexpr (sizeof(T) == 4) return bf16_bits_to_float(h);
  else return bf16_bits_to_double(h);
}

static_assert(to_bf16_bits_from_f32(0x3F800000u) == 0x3F80 && to_bf16_bits_from_f64(0x3FF0000000000000ull) == 0x3F80);
static_assert(to_bf16_bits_from_f32(0x7F7FFFFFu) == 0x7F80, "FLT_MAX rounds to Inf");

}  // namespace hcomm
