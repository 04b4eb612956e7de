// hcomm/codec/none.hpp: the identity codec (payload = raw little-endian values).
//
// Also the smallest example of a codec (the concepts are in codec/traits.hpp). It is the
// list's identity codec: the collectives send uncompressed messages as its frames.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/codec/id.hpp"
#include "hcomm/codec/traits.hpp"

namespace hcomm::codec {

template <element T>
struct none_codec {
  static constexpr codec_id id = codec_id::none;
  static constexpr std::string_view name = "none";
  static constexpr bool lossy = false;
  static constexpr bool identity = true;
  static constexpr param_use parameter = param_use::none;
  static constexpr std::string_view usage = "none";
  static constexpr std::string_view param_help = "none takes no parameter";
  using value_type = T;

  static constexpr bool valid_param(unsigned p) noexcept { return p == 0; }
  static constexpr std::size_t max_payload_bytes(std::size_t n, unsigned) noexcept { return n * sizeof(T); }
  // The least payload of n values (n <= max_count): exactly the raw values.
  static constexpr std::size_t min_payload_bytes(std::size_t n, unsigned) noexcept { return n * sizeof(T); }
  static constexpr std::size_t workspace_bytes(std::size_t, unsigned) noexcept { return 0; }

  struct set_size_kernel {
    std::uint64_t* size;
    std::uint64_t value;
    HCOMM_HOST_DEVICE void operator()(std::size_t) const { *size = value; }
  };

  template <class Exec>
  static void encode(const Exec& ex, const T* in, std::size_t n, unsigned, std::byte* payload,
                     std::uint64_t* payload_bytes, std::byte*) {
    ex.copy(payload, in, n * sizeof(T));
    ex.for_each(1, set_size_kernel{payload_bytes, n * sizeof(T)});
  }

  template <class Exec>
  static void decode(const Exec& ex, const std::byte* payload, std::size_t payload_bytes, std::size_t n, unsigned,
                     T* out, std::byte*) {
    if (payload_bytes != n * sizeof(T))
      fail(errc::corrupt_frame, "raw payload has " + std::to_string(payload_bytes) + " bytes, expected " +
                                    std::to_string(n * sizeof(T)));
    ex.copy(out, payload, payload_bytes);
  }
};

}  // namespace hcomm::codec
