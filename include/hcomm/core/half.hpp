// hcomm/core/half.hpp: the 16-bit element types hcomm moves and compresses, as storage:
// hcomm::bf16 (bfloat16) and hcomm::f16 (IEEE binary16), each a trivially copyable 16-bit
// bit pattern with conversions to and from float on host and device.
//
//   hcomm::bf16 g(0.1f);                         // rounded to nearest even: bits 0x3DCD
//   float x = static_cast<float>(g);             // 0.10009765625f, exactly the stored value
//   hcomm::f16 h = hcomm::f16::from_bits(0x3C00);  // 1.0
//   float y = hcomm::widen(h);                   // 1.0f; hcomm::narrow<hcomm::f16>(y) back
//
// They are storage, not arithmetic types: no operators, so nothing computes in 16 bits by
// accident. Code that computes widens to float (exact), works in float, and narrows once
// (round to nearest, ties to even; NaN, ±Inf, -0 and subnormals kept: core/bfloat16.hpp and
// core/float16.hpp say how). Codecs see their bit patterns as std::uint16_t words.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hcomm/core/bfloat16.hpp"
#include "hcomm/core/float16.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm {

namespace half_detail {
HCOMM_HOST_DEVICE std::uint32_t f32_bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
HCOMM_HOST_DEVICE float from_f32_bits(std::uint32_t u) {
  float v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
}  // namespace half_detail

// bfloat16: the top half of a float32.
struct bf16 {
  std::uint16_t bits;
  bf16() = default;
  HCOMM_HOST_DEVICE explicit bf16(float v) : bits(to_bf16_bits_from_f32(half_detail::f32_bits(v))) {}
  HCOMM_HOST_DEVICE explicit bf16(double v) : bits(to_bf16_bits(v)) {}
  HCOMM_HOST_DEVICE static constexpr bf16 from_bits(std::uint16_t b) {
    bf16 h{};
    h.bits = b;
    return h;
  }
  HCOMM_HOST_DEVICE explicit operator float() const { return half_detail::from_f32_bits(bf16_bits_to_f32_bits(bits)); }
};

// IEEE binary16.
struct f16 {
  std::uint16_t bits;
  f16() = default;
  HCOMM_HOST_DEVICE explicit f16(float v) : bits(to_f16_bits_from_f32(half_detail::f32_bits(v))) {}
  HCOMM_HOST_DEVICE static constexpr f16 from_bits(std::uint16_t b) {
    f16 h{};
    h.bits = b;
    return h;
  }
  HCOMM_HOST_DEVICE explicit operator float() const { return half_detail::from_f32_bits(f16_bits_to_f32_bits(bits)); }
};

template <class T>
concept half_element = std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

// Exact widening to float, and narrowing from float rounded to nearest even.
template <half_element H>
HCOMM_HOST_DEVICE float widen(H h) {
  return static_cast<float>(h);
}
template <half_element H>
HCOMM_HOST_DEVICE H narrow(float v) {
  return H(v);
}
// The same on bit patterns (what the codec kernels use).
template <half_element H>
HCOMM_HOST_DEVICE constexpr std::uint32_t widen_bits(std::uint16_t h) {
  if constexpr (std::is_same_v<H, bf16>) return bf16_bits_to_f32_bits(h);
  else return f16_bits_to_f32_bits(h);
}
template <half_element H>
HCOMM_HOST_DEVICE constexpr std::uint16_t narrow_bits(std::uint32_t u) {
  if constexpr (std::is_same_v<H, bf16>) return to_bf16_bits_from_f32(u);
  else return to_f16_bits_from_f32(u);
}

static_assert(sizeof(bf16) == 2 && sizeof(f16) == 2 && alignof(bf16) == 2 && alignof(f16) == 2);
static_assert(std::is_trivially_copyable_v<bf16> && std::is_trivially_copyable_v<f16> &&
              std::is_trivially_default_constructible_v<bf16> && std::is_trivially_default_constructible_v<f16> &&
              std::is_standard_layout_v<bf16> && std::is_standard_layout_v<f16>);

}  // namespace hcomm
