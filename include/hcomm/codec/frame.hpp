// hcomm/codec/frame.hpp: the self-describing frame every hcomm codec writes.
//
//   [64-byte header][payload]
//   header (little-endian): magic "HCF1", version, codec, dtype, param, flags, element
//   count, payload bytes, payload checksum, two reserved words (zero), header checksum.
//
//   hcomm::codec::frame_info info = hcomm::codec::read_header(bytes, n);  // throws on bad input
//   auto mine = hcomm::codec::read_header<my_codecs>(bytes, n);        // a list of one's own
//
// A codec byte that no codec of the list carries makes the frame foreign. The header has its own checksum so that a flipped bit in a size field is caught before the
// size is trusted; the payload checksum can be switched off (flags bit 0) for speed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "hcomm/codec/id.hpp"
#include "hcomm/codec/list.hpp"
#include "hcomm/codec/registry.hpp"
#include "hcomm/core/checksum.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"

namespace hcomm::codec {

inline constexpr std::uint32_t frame_magic = 0x31464348u;  // "HCF1" little-endian
// Version 2: the payload blocks are hashed with block_hash64 (version 1 used hash64, XXH64).
inline constexpr std::uint16_t frame_version = 2;
inline constexpr std::size_t header_bytes = 64;
inline constexpr std::uint32_t flag_checksum = 1u;

struct frame_info {
  codec_id codec = codec_id::none;
  dtype type = dtype::f32;
  std::uint32_t param = 0;
  std::uint32_t flags = 0;
  std::uint64_t count = 0;          // elements
  std::uint64_t payload_bytes = 0;
  std::uint64_t payload_checksum = 0;
  bool has_checksum() const noexcept { return (flags & flag_checksum) != 0; }
  std::uint64_t frame_bytes() const noexcept { return header_bytes + payload_bytes; }
};

// The name of the codec with this id in the list, or "codec#N".
template <codec_list_type Codecs = registered_codecs>
std::string codec_name(codec_id c) {
  return list_name<Codecs>(c);
}

namespace detail {
HCOMM_HOST_DEVICE void put16(unsigned char* p, std::uint16_t v) { std::memcpy(p, &v, 2); }
HCOMM_HOST_DEVICE void put32(unsigned char* p, std::uint32_t v) { std::memcpy(p, &v, 4); }
HCOMM_HOST_DEVICE void put64(unsigned char* p, std::uint64_t v) { std::memcpy(p, &v, 8); }
inline std::uint16_t get16(const unsigned char* p) { std::uint16_t v; std::memcpy(&v, p, 2); return v; }
inline std::uint32_t get32(const unsigned char* p) { std::uint32_t v; std::memcpy(&v, p, 4); return v; }
inline std::uint64_t get64(const unsigned char* p) { std::uint64_t v; std::memcpy(&v, p, 8); return v; }
}  // namespace detail

// Writes the header on the executor, reading the payload size and checksum from executor
// memory (one work item). Used by the engine so CUDA compression needs no host round trip.
struct write_header_kernel {
  unsigned char* out;
  std::uint8_t codec;
  std::uint8_t type;
  std::uint32_t param;
  std::uint32_t flags;
  std::uint64_t count;
  const std::uint64_t* payload_bytes;  // executor memory
  const std::uint64_t* checksum;       // executor memory (ignored without flag_checksum)
  std::uint64_t* frame_bytes_out;      // executor memory, may be null
  HCOMM_HOST_DEVICE void operator()(std::size_t) const {
    using namespace detail;
    for (int i = 0; i < 64; ++i) out[i] = 0;
    put32(out + 0, frame_magic);
    put16(out + 4, frame_version);
    out[6] = codec;
    out[7] = type;
    put32(out + 8, param);
    put32(out + 12, flags);
    put64(out + 16, count);
    put64(out + 24, *payload_bytes);
    put64(out + 32, (flags & flag_checksum) ? *checksum : 0);
    put64(out + 56, hash64(out, 56, 0));
    if (frame_bytes_out) *frame_bytes_out = header_bytes + *payload_bytes;
  }
};

// Validates a header held in host memory and returns what it says. `available` is how many
// bytes the caller has (header + payload); a frame longer than that is truncated.
template <codec_list_type Codecs = registered_codecs>
frame_info read_header(const void* host_bytes, std::size_t available) {
  using namespace detail;
  if (available < header_bytes)
    fail(errc::truncated_frame, "frame has " + std::to_string(available) + " bytes, the header alone needs 64");
  const auto* p = static_cast<const unsigned char*>(host_bytes);
  if (get32(p) != frame_magic) fail(errc::foreign_frame, "not an hcomm frame (bad magic)");
  if (get64(p + 56) != hash64(p, 56, 0)) fail(errc::corrupt_frame, "header checksum mismatch");
  const std::uint16_t version = get16(p + 4);
  if (version != frame_version)
    fail(errc::foreign_frame, "frame version " + std::to_string(version) + " is not supported (this build reads version " +
                                  std::to_string(frame_version) + ")");
  frame_info f;
  const unsigned c = p[6];
  f.codec = static_cast<codec_id>(c);
  if (!list_contains<Codecs>(f.codec)) fail(errc::foreign_frame, "unknown codec id " + std::to_string(c));
  f.type = static_cast<dtype>(p[7]);
  if (!is_valid(f.type)) fail(errc::foreign_frame, "unknown dtype id " + std::to_string(p[7]));
  f.param = get32(p + 8);
  f.flags = get32(p + 12);
  if (f.flags & ~flag_checksum) fail(errc::foreign_frame, "unknown flags " + std::to_string(f.flags));
  f.count = get64(p + 16);
  f.payload_bytes = get64(p + 24);
  f.payload_checksum = get64(p + 32);
  if (get64(p + 40) != 0 || get64(p + 48) != 0) fail(errc::corrupt_frame, "reserved header words are not zero");
  if (f.payload_bytes > available - header_bytes)
    fail(errc::truncated_frame, "frame announces " + std::to_string(f.payload_bytes) + " payload bytes, only " +
                                    std::to_string(available - header_bytes) + " present");
  return f;
}

}  // namespace hcomm::codec
