// hcomm/core/block_hash_lanes.hpp: the eight lanes of block_hash64 (core/checksum.hpp) and
// their portable stripe, the reference for the AVX2 one (core/avx2/block_hash_lanes.hpp).
//
// Each 8-byte word d of a 64-byte stripe is xored with a key that changes with the stripe,
// the lane adds lo32 * hi32 of that, and its neighbour lane adds d itself. A flipped bit
// always changes one lane's sum, a moved stripe meets another key, and the lanes go through
// an avalanche at the end.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/core/hash64.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::detail::bh {
inline constexpr std::size_t stripe_bytes = 64;
// Lane constants (functions, not arrays: device code cannot read host constexpr arrays).
HCOMM_HOST_DEVICE constexpr std::uint64_t init(int i) {
  constexpr std::uint64_t v[8] = {0x00000000C2B2AE3Dull, 0x9E3779B185EBCA87ull, 0xC2B2AE3D27D4EB4Full,
                                  0x165667B19E3779F9ull, 0x85EBCA77C2B2AE63ull, 0x0000000085EBCA77ull,
                                  0x27D4EB2F165667C5ull, 0x000000009E3779B1ull};
  return v[i];
}
HCOMM_HOST_DEVICE constexpr std::uint64_t key(int i) {
  constexpr std::uint64_t v[8] = {0xBE4BA423396CFEB8ull, 0x1CAD21F72C81017Cull, 0xDB979083E96DD4DEull,
                                  0x1F67B3B7A4A44072ull, 0x78E5C0CC4EE679CBull, 0x2172FFCC7DD05A82ull,
                                  0x8E2443F7744608B8ull, 0x4C263A81E69035E0ull};
  return v[i];
}
inline constexpr std::uint64_t key_step = 0x9E3779B97F4A7C15ull;  // added to every key per stripe

HCOMM_HOST_DEVICE std::uint64_t avalanche(std::uint64_t h) {
  h ^= h >> 33;
  h *= h64::p2;
  h ^= h >> 29;
  h *= h64::p3;
  h ^= h >> 32;
  return h;
}

// The eight lanes and the index of the next stripe.
struct lanes {
  std::uint64_t acc[8];
  std::uint64_t stripe = 0;
  HCOMM_HOST_DEVICE explicit lanes(std::uint64_t seed) {
    for (int i = 0; i < 8; ++i) acc[i] = init(i) + seed;
  }
  // The portable stripe (every executor; the reference for the AVX2 one).
  HCOMM_HOST_DEVICE void add_stripe(const unsigned char* p) {
    const std::uint64_t shift = stripe * key_step;
    std::uint64_t d[8];
    for (int i = 0; i < 8; ++i) d[i] = h64::load64(p + 8 * i);
    for (int i = 0; i < 8; ++i) {
      const std::uint64_t x = d[i] ^ (key(i) + shift);
      acc[i] += (x & 0xFFFFFFFFull) * (x >> 32);
    }
    for (int i = 0; i < 8; ++i) acc[i ^ 1] += d[i];
    ++stripe;
  }
  // The last len % 64 bytes (zero-padded to a stripe), the length and the avalanche.
  HCOMM_HOST_DEVICE std::uint64_t finish(const unsigned char* tail, std::size_t tail_len, std::uint64_t len,
                                         std::uint64_t seed) {
    if (tail_len > 0) {
      unsigned char last[stripe_bytes] = {};
      std::memcpy(last, tail, tail_len);
      add_stripe(last);
    }
    std::uint64_t h = seed ^ (len * h64::p1);
    for (int i = 0; i < 8; ++i) h = h64::rotl(h ^ avalanche(acc[i]), 27) * h64::p1 + h64::p4;
    return avalanche(h);
  }
};

// count whole stripes from p into l, the portable way (the dispatch point of the AVX2
// variant: add_stripes in core/checksum.hpp).
struct stripes {
  lanes& l;
  HCOMM_HOST_DEVICE void body(const unsigned char* p, std::size_t count) const {
    for (std::size_t s = 0; s < count; ++s) l.add_stripe(p + s * stripe_bytes);
  }
};
}  // namespace hcomm::detail::bh
