// hcomm/core/float16.hpp: conversions between float32 and IEEE binary16 (fp16: 1 sign,
// 5 exponent, 10 mantissa bits) bit patterns, on host and device.
//
//   std::uint16_t h = hcomm::to_f16_bits_from_f32(0x3F800000u);   // 1.0f -> 0x3C00
//   std::uint32_t u = hcomm::f16_bits_to_f32_bits(0x0001);         // 2^-24, exactly
//
// Narrowing rounds to nearest, ties to even, as an IEEE conversion does: at or past 65520
// (the midpoint between the largest finite fp16, 65504, and 2^16) a value becomes ±Inf;
// below 2^-14 results are subnormal (unit 2^-24), and at or below 2^-25 they become ±0.
// ±Inf stays ±Inf; a NaN stays a NaN with its sign and the top 10 bits of its payload, quiet
// bit set (what x86's VCVTPS2PH and Arm's FCVT write). Widening is exact, NaN payloads
// included (a signalling NaN is not quieted: the bits come back as they went). Integer
// arithmetic on the bit patterns only, so the result does not depend on floating-point modes.
#pragma once
#include <cstdint>

#include "hcomm/core/macros.hpp"

namespace hcomm {

// float32 bit pattern -> fp16 bit pattern (round to nearest even; NaN kept quiet).
HCOMM_HOST_DEVICE constexpr std::uint16_t to_f16_bits_from_f32(std::uint32_t u) {
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu));
  if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520, and Inf
  if (a >= 0x38800000u) {
    // Normal result (>= 2^-14): rebias the exponent (127 -> 15) and round the low 13 bits
    // into the kept ones; a carry moves into the exponent, as the IEEE rule gives.
    const std::uint32_t m = a - (112u << 23);
    const std::uint32_t r = m + 0x0FFFu + ((m >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (r >> 13));
  }
  if (a <= 0x33000000u) return static_cast<std::uint16_t>(sign);  // <= 2^-25: ties to even, zero
  // Subnormal result: the value is sig * 2^(e - 150) and the unit 2^-24, so the result is
  // sig / 2^(126 - e) rounded (14..24 bits shifted out); rounding up from the largest
  // subnormal gives 0x0400, the smallest normal, as it should.
  const std::uint32_t e = a >> 23;  // 102..112
  const std::uint32_t sig = (a & 0x007FFFFFu) | 0x00800000u;
  const unsigned sh = 126u - e;
  const std::uint32_t q = sig >> sh, rem = sig & ((1u << sh) - 1u), half = 1u << (sh - 1u);
  const std::uint32_t up = (rem > half || (rem == half && (q & 1u))) ? 1u : 0u;
  return static_cast<std::uint16_t>(sign | (q + up));
}

// fp16 bit pattern -> float32 bit pattern (exact; NaN payload bits kept in place).
HCOMM_HOST_DEVICE constexpr std::uint32_t f16_bits_to_f32_bits(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu;
  const std::uint32_t m = h & 0x03FFu;
  if (e == 0x1Fu) return sign | 0x7F800000u | (m << 13);
  if (e != 0) return sign | ((e + 112u) << 23) | (m << 13);
  if (m == 0) return sign;
  // Subnormal m * 2^-24: the leading bit of m becomes the implicit one.
  unsigned k = 0;  // leading-bit position of m (0..9)
  for (std::uint32_t t = m; t > 1; t >>= 1) ++k;
  return sign | ((k + 103u) << 23) | ((m << (23u - k)) & 0x007FFFFFu);
}

static_assert(to_f16_bits_from_f32(0x3F800000u) == 0x3C00 && f16_bits_to_f32_bits(0x3C00) == 0x3F800000u);
static_assert(to_f16_bits_from_f32(0x477FEFFFu) == 0x7BFF && to_f16_bits_from_f32(0x477FF000u) == 0x7C00,
              "65520 rounds to Inf, just below it to 65504");
static_assert(f16_bits_to_f32_bits(0x0001) == 0x33800000u && to_f16_bits_from_f32(0x33800000u) == 0x0001);

}  // namespace hcomm
