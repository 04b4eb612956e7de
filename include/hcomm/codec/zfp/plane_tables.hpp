// hcomm/codec/zfp/plane_tables.hpp: the codes of one bit plane while fewer than 4
// coefficients are significant, as constexpr functions (what device code evaluates) and as
// tables built from them at compile time (what the host looks up).
#pragma once
#include <cstdint>

#include "hcomm/core/macros.hpp"

namespace hcomm::codec::zfp_detail {

// libzfp writes plane k as: the bits of the n coefficients already significant, verbatim;
// then group tests ("is any remaining bit set?") each followed by a unary scan to the next set
// bit, the last coefficient's bit being implied. Such a plane is at most 7 bits long, and a
// budget cut keeps a prefix of the full sequence, so the encoder codes whole planes from a
// table and truncates at the end.
//
// enc_plane(n, x) = bits | len << 8 | n' << 12 for plane value x (bit i = coefficient i).
HCOMM_HOST_DEVICE constexpr std::uint16_t enc_plane(unsigned n, unsigned x) {
  unsigned bits = 0, len = 0;
  for (unsigned i = 0; i < n; ++i) bits |= ((x >> i) & 1u) << len++;
  x >>= n;
  while (n < 4) {
    const unsigned g = x != 0;
    bits |= g << len++;
    if (!g) break;
    for (; n < 3; x >>= 1, ++n) {
      const unsigned b = x & 1u;
      bits |= b << len++;
      if (b) break;
    }
    x >>= 1;
    ++n;
  }
  return static_cast<std::uint16_t>(bits | len << 8 | n << 12);
}
// dec_plane(n, s) for the next 7 stream bits s (bit 0 first), assuming the budget does not
// end inside the plane: = x | len << 4 | n' << 8.
HCOMM_HOST_DEVICE constexpr std::uint16_t dec_plane(unsigned n, unsigned s) {
  unsigned x = 0, pos = 0;
  for (unsigned i = 0; i < n; ++i) x |= ((s >> pos++) & 1u) << i;
  while (n < 4) {
    if (!((s >> pos++) & 1u)) break;
    while (n < 3 && !((s >> pos++) & 1u)) ++n;
    x |= 1u << n;
    ++n;
  }
  return static_cast<std::uint16_t>(x | pos << 4 | n << 8);
}

// dec_plane_cut(n, s, r): one plane as libzfp decodes it when only r <= 7 bits of the budget
// are left (r = 0: nothing is read), n <= 4, s = the next 7 stream bits (bits past the budget
// are ignored): = x | len << 4 | n' << 8.
HCOMM_HOST_DEVICE constexpr std::uint32_t dec_plane_cut(unsigned n, unsigned s, unsigned r) {
  unsigned bits = r, q = 0;
  const unsigned m = n < bits ? n : bits;
  unsigned x = s & ((1u << m) - 1);
  q = m;
  bits -= m;
  while (n < 4 && bits) {
    --bits;
    if (!((s >> q++) & 1u)) break;
    while (n < 3 && bits) {
      --bits;
      if ((s >> q++) & 1u) break;
      ++n;
    }
    x += 1u << n;
    ++n;
  }
  return x | q << 4 | n << 8;
}
struct enc_table_t {
  std::uint16_t v[64];
};
struct dec_table_t {
  std::uint16_t v[512];
};
constexpr enc_table_t make_enc_table() {
  enc_table_t t{};
  for (unsigned n = 0; n < 4; ++n)
    for (unsigned x = 0; x < 16; ++x) t.v[n * 16 + x] = enc_plane(n, x);
  return t;
}
constexpr dec_table_t make_dec_table() {
  dec_table_t t{};
  for (unsigned n = 0; n < 4; ++n)
    for (unsigned s = 0; s < 128; ++s) t.v[n * 128 + s] = dec_plane(n, s);
  return t;
}
inline constexpr enc_table_t enc_table = make_enc_table();
inline constexpr dec_table_t dec_table = make_dec_table();

HCOMM_HOST_DEVICE unsigned enc_lookup(unsigned n, unsigned x) {
#if defined(__CUDA_ARCH__)
  return enc_plane(n, x);
#else
  return enc_table.v[n * 16 + x];
#endif
}
HCOMM_HOST_DEVICE unsigned dec_lookup(unsigned n, unsigned s) {
#if defined(__CUDA_ARCH__)
  return dec_plane(n, s);
#else
  return dec_table.v[n * 128 + s];
#endif
}
}  // namespace hcomm::codec::zfp_detail
