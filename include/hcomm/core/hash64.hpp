// hcomm/core/hash64.hpp: hash64, the XXH64-style 64-bit hash of hcomm's frame headers and
// of lists of block hashes (core/checksum.hpp): four multiply-rotate lanes over 8-byte
// words, then an avalanche.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/core/macros.hpp"

namespace hcomm {

namespace detail::h64 {
inline constexpr std::uint64_t p1 = 0x9E3779B185EBCA87ull;
inline constexpr std::uint64_t p2 = 0xC2B2AE3D27D4EB4Full;
inline constexpr std::uint64_t p3 = 0x165667B19E3779F9ull;
inline constexpr std::uint64_t p4 = 0x85EBCA77C2B2AE63ull;
inline constexpr std::uint64_t p5 = 0x27D4EB2F165667C5ull;

HCOMM_HOST_DEVICE std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
HCOMM_HOST_DEVICE std::uint64_t round(std::uint64_t acc, std::uint64_t in) {
  acc += in * p2;
  acc = rotl(acc, 31);
  return acc * p1;
}
HCOMM_HOST_DEVICE std::uint64_t merge(std::uint64_t acc, std::uint64_t v) {
  acc ^= round(0, v);
  return acc * p1 + p4;
}
// Unaligned little-endian loads (memcpy compiles to one mov on x86 and is legal in CUDA).
HCOMM_HOST_DEVICE std::uint64_t load64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
HCOMM_HOST_DEVICE std::uint32_t load32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
}  // namespace detail::h64

HCOMM_HOST_DEVICE std::uint64_t hash64(const void* data, std::size_t len, std::uint64_t seed) {
  using namespace detail::h64;
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + len;
  std::uint64_t h;
  if (len >= 32) {
    std::uint64_t v1 = seed + p1 + p2, v2 = seed + p2, v3 = seed, v4 = seed - p1;
    const unsigned char* const limit = end - 32;
    do {
      v1 = round(v1, load64(p));
      v2 = round(v2, load64(p + 8));
      v3 = round(v3, load64(p + 16));
      v4 = round(v4, load64(p + 24));
      p += 32;
    } while (p <= limit);
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    h = merge(h, v4);
  } else {
    h = seed + p5;
  }
  h += static_cast<std::uint64_t>(len);
  while (end - p >= 8) {  // (not p + 8 <= end: no pointer past the end)
    h ^= round(0, load64(p));
    h = rotl(h, 27) * p1 + p4;
    p += 8;
  }
  if (end - p >= 4) {
    h ^= static_cast<std::uint64_t>(load32(p)) * p1;
    h = rotl(h, 23) * p2 + p3;
    p += 4;
  }
  while (p < end) {
    h ^= (*p) * p5;
    h = rotl(h, 11) * p1;
    ++p;
  }
  h ^= h >> 33;
  h *= p2;
  h ^= h >> 29;
  h *= p3;
  h ^= h >> 32;
  return h;
}

}  // namespace hcomm
