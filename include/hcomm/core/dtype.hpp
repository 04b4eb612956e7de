// hcomm/core/dtype.hpp: the element types hcomm moves and compresses.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace hcomm {

enum class dtype : std::uint8_t { f32 = 1, f64 = 2 };

template <class T>
concept floating_element = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <floating_element T>
inline constexpr dtype dtype_of = std::is_same_v<T, float> ? dtype::f32 : dtype::f64;

constexpr std::size_t size_of(dtype t) noexcept { return t == dtype::f32 ? 4 : 8; }
constexpr std::string_view to_string(dtype t) noexcept { return t == dtype::f32 ? "f32" : "f64"; }
constexpr bool is_valid(dtype t) noexcept { return t == dtype::f32 || t == dtype::f64; }

// Unsigned word of the same width: MPC and ZFP work on the bit patterns.
template <floating_element T>
using word_of = std::conditional_t<std::is_same_v<T, float>, std::uint32_t, std::uint64_t>;

}  // namespace hcomm
