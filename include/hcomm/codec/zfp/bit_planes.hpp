// hcomm/codec/zfp/bit_planes.hpp: the bit permutations that move a block's four
// coefficients to and from bit planes, 16 planes per 64-bit word (nibble j = one plane, bit i
// of the nibble = coefficient i), and the packing of quiet planes.
//
// The plane coder (plane_coder.hpp) moves the planes after all four coefficients are
// significant in bulk, through the 4x16 bit transpose below, and the runs of quiet planes
// (no new significant coefficient) through compact / expand.
#pragma once
#include <cstdint>

#include "hcomm/codec/zfp/traits.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec::zfp_detail {

HCOMM_HOST_DEVICE u64 low_mask(unsigned len) { return len >= 64 ? ~u64{0} : ((u64{1} << len) - 1); }

// Exchanges index bits p > q of a 64-bit word (s = 2^p - 2^q, m = positions with bit q set
// and bit p clear).
HCOMM_HOST_DEVICE u64 delta_swap(u64 x, unsigned s, u64 m) {
  const u64 t = ((x >> s) ^ x) & m;
  return x ^ t ^ (t << s);
}
// Reverses the order of the 16 nibbles of x.
HCOMM_HOST_DEVICE u64 nibble_reverse(u64 x) {
  x = bswap64(x);
  return ((x >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((x & 0x0F0F0F0F0F0F0F0Full) << 4);
}
// Four 16-bit fields (f_i in bits 16i..16i+15) -> 16 nibbles, nibble j holding bit 15-j of
// every field (field i in bit i of the nibble): a 4x16 bit transpose (index bits i1 i0 b3..b0
// -> b3..b0 i1 i0 by four index-bit swaps) followed by a nibble reversal so that nibble 0 is
// the most significant plane, which is the order the coder writes planes in.
HCOMM_HOST_DEVICE u64 fields_to_planes(u64 x) {
  x = delta_swap(x, 24, 0x00000000FF00FF00ull);  // index bits 5 <-> 3
  x = delta_swap(x, 12, 0x0000F0F00000F0F0ull);  // 4 <-> 2
  x = delta_swap(x, 6, 0x00CC00CC00CC00CCull);   // 3 <-> 1
  x = delta_swap(x, 3, 0x0A0A0A0A0A0A0A0Aull);   // 2 <-> 0
  return nibble_reverse(x);
}
HCOMM_HOST_DEVICE u64 planes_to_fields(u64 x) {  // inverse of fields_to_planes
  x = nibble_reverse(x);
  x = delta_swap(x, 3, 0x0A0A0A0A0A0A0A0Aull);
  x = delta_swap(x, 6, 0x00CC00CC00CC00CCull);
  x = delta_swap(x, 12, 0x0000F0F00000F0F0ull);
  return delta_swap(x, 24, 0x00000000FF00FF00ull);
}

// Quiet planes (no new significant coefficient) cost n verbatim bits and one 0 bit: the low
// n+1 bits of the plane's nibble. compact<n> packs the low n+1 bits of each of 16 nibbles
// densely (order kept); expand<n> is its inverse (high nibble bits come back 0).
template <unsigned N>
HCOMM_HOST_DEVICE u64 compact(u64 x) {
  if constexpr (N == 1) {
    x &= 0x3333333333333333ull;
    x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0Full;
    x = (x | (x >> 4)) & 0x00FF00FF00FF00FFull;
    x = (x | (x >> 8)) & 0x0000FFFF0000FFFFull;
    return (x | (x >> 16)) & 0x00000000FFFFFFFFull;
  } else if constexpr (N == 2) {
    x &= 0x7777777777777777ull;
    x = (x & 0x0707070707070707ull) | ((x >> 1) & 0x3838383838383838ull);
    x = (x & 0x003F003F003F003Full) | ((x >> 2) & 0x0FC00FC00FC00FC0ull);
    x = (x & 0x00000FFF00000FFFull) | ((x >> 4) & 0x00FFF00000FFF000ull);
    return (x & 0x0000000000FFFFFFull) | ((x >> 8) & 0x0000FFFFFF000000ull);
  } else {
    return x;
  }
}
template <unsigned N>
HCOMM_HOST_DEVICE u64 expand(u64 x) {
  if constexpr (N == 1) {
    x &= 0x00000000FFFFFFFFull;
    x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
    x = (x | (x << 8)) & 0x00FF00FF00FF00FFull;
    x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0Full;
    return (x | (x << 2)) & 0x3333333333333333ull;
  } else if constexpr (N == 2) {
    x &= 0x0000FFFFFFFFFFFFull;
    x = (x & 0x0000000000FFFFFFull) | ((x & 0x0000FFFFFF000000ull) << 8);
    x = (x & 0x00000FFF00000FFFull) | ((x & 0x00FFF00000FFF000ull) << 4);
    x = (x & 0x003F003F003F003Full) | ((x & 0x0FC00FC00FC00FC0ull) << 2);
    return (x & 0x0707070707070707ull) | ((x & 0x3838383838383838ull) << 1);
  } else {
    return x;
  }
}
HCOMM_HOST_DEVICE u64 compact_n(u64 x, unsigned n) {  // n = 0: quiet planes are single 0 bits
  return n == 0 ? 0 : n == 1 ? compact<1>(x) : n == 2 ? compact<2>(x) : x;
}
HCOMM_HOST_DEVICE u64 expand_n(u64 x, unsigned n) {
  return n == 0 ? 0 : n == 1 ? expand<1>(x) : n == 2 ? expand<2>(x) : x;
}
// Positions of the group-test bits of consecutive quiet planes coded with n significant.
HCOMM_HOST_DEVICE u64 group_test_bits(unsigned n) {
  return n == 1 ? 0xAAAAAAAAAAAAAAAAull : n == 2 ? 0x4924924924924924ull : 0x8888888888888888ull;
}

// The 16 planes k, k-1, ..., k-15 of the four coefficients, nibble j = plane k-j.
template <class U>
HCOMM_HOST_DEVICE u64 plane_window(const U* u, int k) {
  constexpr int P = static_cast<int>(sizeof(U) * 8);
  const int sh = P - 1 - k;
  const u64 f0 = static_cast<u64>(static_cast<U>(u[0] << sh) >> (P - 16));
  const u64 f1 = static_cast<u64>(static_cast<U>(u[1] << sh) >> (P - 16));
  const u64 f2 = static_cast<u64>(static_cast<U>(u[2] << sh) >> (P - 16));
  const u64 f3 = static_cast<u64>(static_cast<U>(u[3] << sh) >> (P - 16));
  return fields_to_planes(f0 | f1 << 16 | f2 << 32 | f3 << 48);
}

template <class U>
HCOMM_HOST_DEVICE u64 plane_window(U u0, U u1, U u2, U u3, unsigned k) {
  constexpr unsigned P = sizeof(U) * 8;
  const unsigned sh = P - 1 - k;
  const u64 f0 = static_cast<u64>(static_cast<U>(u0 << sh) >> (P - 16));
  const u64 f1 = static_cast<u64>(static_cast<U>(u1 << sh) >> (P - 16));
  const u64 f2 = static_cast<u64>(static_cast<U>(u2 << sh) >> (P - 16));
  const u64 f3 = static_cast<u64>(static_cast<U>(u3 << sh) >> (P - 16));
  return fields_to_planes(f0 | f1 << 16 | f2 << 32 | f3 << 48);
}
}  // namespace hcomm::codec::zfp_detail
