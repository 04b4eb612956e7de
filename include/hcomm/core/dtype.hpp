// hcomm/core/dtype.hpp: the element types hcomm moves and compresses, and their frame byte.
//
//   float, double            floating_element: arithmetic types (the collectives add them)
//   hcomm::bf16, hcomm::f16  half_element: 16-bit storage (core/half.hpp)
//   any of the four          element: what codecs, frames and the engine take
//
// The dtype byte of a frame is fixed per type (f32 = 1, f64 = 2, bf16 = 3, f16 = 4): frames
// written by one build are read by another.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "hcomm/core/half.hpp"

namespace hcomm {

enum class dtype : std::uint8_t { f32 = 1, f64 = 2, bf16 = 3, f16 = 4 };

template <class T>
concept floating_element = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
concept element = floating_element<T> || half_element<T>;

template <element T>
inline constexpr dtype dtype_of = std::is_same_v<T, float>    ? dtype::f32
                                  : std::is_same_v<T, double> ? dtype::f64
                                  : std::is_same_v<T, bf16>   ? dtype::bf16
                                                              : dtype::f16;

constexpr bool is_valid(dtype t) noexcept {
  return t == dtype::f32 || t == dtype::f64 || t == dtype::bf16 || t == dtype::f16;
}
// Bytes per value (0 for a byte that is no dtype).
constexpr std::size_t size_of(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return 4;
    case dtype::f64: return 8;
    case dtype::bf16:
    case dtype::f16: return 2;
  }
  return 0;
}
constexpr std::string_view to_string(dtype t) noexcept {
  switch (t) {
    case dtype::f32: return "f32";
    case dtype::f64: return "f64";
    case dtype::bf16: return "bf16";
    case dtype::f16: return "f16";
  }
  return "dtype?";
}

// Unsigned word of the same width: MPC and ZFP work on the bit patterns.
template <element T>
using word_of = std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                   std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;

// The type a value is computed in: float for the 16-bit types (widened exactly), else itself.
template <element T>
using compute_of = std::conditional_t<half_element<T>, float, T>;

}  // namespace hcomm
