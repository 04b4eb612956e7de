// tests/codec/toy/toy_codec.hpp: a codec from outside the library, to prove that one joins
// by its traits and a list of one's own (no library header edited).
//
//   using toy_codecs = hcomm::codec::registered_codecs::with<toy::toy_codec>;
//   hcomm::codec::engine<hcomm::exec::host, toy_codecs> eng;
//   auto frame = eng.compress(hcomm::codec::parse_config<toy_codecs>("toy:4"), std::span<const float>(x));
//
// "toy:K" (K = 0..16) is lossy: it clears the K lowest bits of every value's bit pattern
// (NaN payloads aside, the value moves by at most K bits of its mantissa). Payload: the magic
// "TOY1", K as a u32, then the values. It codes pairs (block_values = 2), so the collectives
// keep their segments a multiple of 4 (ZFP's 4 and this 2).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "hcomm/codec/traits.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"

namespace toy {

inline constexpr std::uint32_t magic = 0x31594f54u;  // "TOY1"
inline constexpr std::size_t head = 8;

template <hcomm::floating_element T>
struct toy_codec {
  static constexpr hcomm::codec_id id{200};
  static constexpr std::string_view name = "toy";
  static constexpr bool lossy = true;
  static constexpr hcomm::codec::param_use parameter = hcomm::codec::param_use::required;
  static constexpr std::string_view usage = "toy:K";
  static constexpr std::string_view param_help = "toy takes K = 0..16 cleared bits";
  static constexpr std::size_t block_values = 2;
  using value_type = T;
  using word = hcomm::word_of<T>;

  static constexpr bool valid_param(unsigned k) noexcept { return k <= 16; }
  static constexpr std::size_t max_payload_bytes(std::size_t n, unsigned) noexcept { return head + n * sizeof(T); }
  static constexpr std::size_t min_payload_bytes(std::size_t n, unsigned) noexcept { return head + n * sizeof(T); }
  static constexpr std::size_t workspace_bytes(std::size_t, unsigned) noexcept { return 0; }

  struct encode_kernel {
    const T* in;
    unsigned char* out;  // the values' place in the payload
    unsigned k;
    HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
      word w;
      std::memcpy(&w, in + i, sizeof w);
      w &= static_cast<word>(~word{0} << k);
      std::memcpy(out + i * sizeof w, &w, sizeof w);
    }
  };
  struct head_kernel {
    unsigned char* payload;
    unsigned k;
    std::uint64_t* size;
    std::uint64_t value;
    HCOMM_HOST_DEVICE void operator()(std::size_t) const {
      const std::uint32_t h[2] = {magic, k};
      std::memcpy(payload, h, head);
      *size = value;
    }
  };
  struct decode_kernel {
    const unsigned char* in;
    T* out;
    HCOMM_HOST_DEVICE void operator()(std::size_t i) const { std::memcpy(out + i, in + i * sizeof(T), sizeof(T)); }
  };

  template <class Exec>
  static void encode(const Exec& ex, const T* in, std::size_t n, unsigned k, std::byte* payload,
                     std::uint64_t* payload_bytes, std::byte*) {
    auto* p = reinterpret_cast<unsigned char*>(payload);
    if (n > 0) ex.for_each(n, encode_kernel{in, p + head, k});
    ex.for_each(1, head_kernel{p, k, payload_bytes, head + n * sizeof(T)});
  }

  template <class Exec>
  static void decode(const Exec& ex, const std::byte* payload, std::size_t payload_bytes, std::size_t n, unsigned k,
                     T* out, std::byte*) {
    if (payload_bytes != head + n * sizeof(T))
      hcomm::fail(hcomm::errc::corrupt_frame, "toy payload of " + std::to_string(payload_bytes) + " bytes, expected " +
                                                  std::to_string(head + n * sizeof(T)));
    std::uint32_t h[2];
    ex.to_host(h, payload, head);
    if (h[0] != magic || h[1] != k) hcomm::fail(hcomm::errc::corrupt_frame, "toy payload header is not TOY1 with K");
    if (n > 0) ex.for_each(n, decode_kernel{reinterpret_cast<const unsigned char*>(payload) + head, out});
  }
};

}  // namespace toy
