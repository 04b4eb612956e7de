// hcomm/codec/bf16.hpp: the bfloat16 cast, a baseline to compare hcomm's schemes with (what
// PyTorch DDP's bf16_compress_hook does to gradients): every float32 or float64 value is sent
// as its bfloat16 rounding and decoded by widening.
//
//   auto cfg   = hcomm::codec::parse_config("bf16", hcomm::dtype::f32);
//   auto frame = hcomm::codec::engine<>{}.compress(cfg, std::span<const float>(x));  // 2 bytes a value
//
// Payload: n little-endian u16, value i's bfloat16 bit pattern at bytes [2i, 2i+2); nothing
// else, so every payload of the right size decodes (2n bytes exactly, or corrupt_frame).
// Rounding (core/bfloat16.hpp): to nearest, ties to even; ±Inf stays ±Inf, NaN stays a quiet
// NaN (sign and top payload bits kept), and finite values at or past the midpoint between
// bfloat16's largest finite value (about 3.39e38) and 2^128 become ±Inf, as the IEEE
// conversion gives (hcomm-codec stats counts them: finite_to_nonfinite). Relative error of
// finite values in the normal range: at most 2^-8 (8 significant bits).
// One work item per value on every executor; the same bytes everywhere.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "hcomm/codec/id.hpp"
#include "hcomm/codec/traits.hpp"
#include "hcomm/core/bfloat16.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec {

namespace bf16_detail {
template <class T>
struct narrow_kernel {
  const T* in;
  unsigned char* out;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const std::uint16_t h = to_bf16_bits(in[i]);
    out[2 * i] = static_cast<unsigned char>(h & 0xFFu);
    out[2 * i + 1] = static_cast<unsigned char>(h >> 8);
  }
};
template <class T>
struct widen_kernel {
  const unsigned char* in;
  T* out;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const std::uint16_t h = static_cast<std::uint16_t>(in[2 * i] | (static_cast<unsigned>(in[2 * i + 1]) << 8));
    out[i] = from_bf16_bits<T>(h);
  }
};
struct set_size_kernel {
  std::uint64_t* size;
  std::uint64_t value;
  HCOMM_HOST_DEVICE void operator()(std::size_t) const { *size = value; }
};
}  // namespace bf16_detail

template <floating_element T>
struct bf16_codec {
  static constexpr codec_id id = codec_id::bf16;
  static constexpr std::string_view name = "bf16";
  static constexpr bool lossy = true;
  static constexpr param_use parameter = param_use::none;
  static constexpr std::string_view usage = "bf16";
  static constexpr std::string_view param_help = "bf16 takes no parameter";
  using value_type = T;

  static constexpr bool valid_param(unsigned p) noexcept { return p == 0; }
  static constexpr std::size_t max_payload_bytes(std::size_t n, unsigned) noexcept { return 2 * n; }
  static constexpr std::size_t min_payload_bytes(std::size_t n, unsigned) noexcept { return 2 * n; }
  static constexpr std::size_t workspace_bytes(std::size_t, unsigned) noexcept { return 0; }

  template <class Exec>
  static void encode(const Exec& ex, const T* in, std::size_t n, unsigned p, std::byte* payload,
                     std::uint64_t* payload_bytes, std::byte*) {
    if (!valid_param(p)) fail(errc::invalid_argument, "bf16 takes no parameter");
    if (n > 0) ex.for_each(n, bf16_detail::narrow_kernel<T>{in, reinterpret_cast<unsigned char*>(payload)});
    ex.for_each(1, bf16_detail::set_size_kernel{payload_bytes, 2 * static_cast<std::uint64_t>(n)});
  }

  template <class Exec>
  static void decode(const Exec& ex, const std::byte* payload, std::size_t payload_bytes, std::size_t n, unsigned p,
                     T* out, std::byte*) {
    if (!valid_param(p)) fail(errc::corrupt_frame, "bf16 takes no parameter, the frame says " + std::to_string(p));
    if (payload_bytes != 2 * n)
      fail(errc::corrupt_frame, "bf16 payload has " + std::to_string(payload_bytes) + " bytes, " + std::to_string(n) +
                                    " values need " + std::to_string(2 * n));
    if (n > 0) ex.for_each(n, bf16_detail::widen_kernel<T>{reinterpret_cast<const unsigned char*>(payload), out});
  }
};

}  // namespace hcomm::codec
