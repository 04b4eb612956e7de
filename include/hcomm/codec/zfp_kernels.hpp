// hcomm/codec/zfp_kernels.hpp: the kernel bodies of the ZFP fixed-rate codec (codec/zfp.hpp).
//
// One block of 4 values is coded exactly as libzfp 1.0 codes a 1-D block in fixed-rate mode
// (maxbits = minbits = 4*rate, unlimited precision, no rounding); 64 consecutive blocks form
// a group whose 64*4*rate bits are a whole number (4*rate) of 64-bit words, so groups write
// disjoint words and run in parallel on any executor:
//
//   ex.for_each(groups, zfp_detail::encode_group_kernel<float>{...});
//
// Everything here is HCOMM_HOST_DEVICE and uses no library call that a GPU lacks (memcpy
// only). The bit-plane coder is table driven on the host (64- and 512-entry tables built at
// compile time from the same constexpr functions that the device path evaluates directly),
// and moves the planes after all four coefficients are significant in bulk, 16 planes per
// 64-bit word, through a 4x16 bit transpose.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hcomm/core/macros.hpp"

namespace hcomm::codec::zfp_detail {

using u64 = std::uint64_t;

template <class T>
struct traits;
template <>
struct traits<float> {
  using U = std::uint32_t;
  using I = std::int32_t;
  static constexpr int P = 32;          // integer precision (bit planes)
  static constexpr int ebits = 8;       // exponent bits in a block header
  static constexpr int ebias = 127;
  static constexpr int mbits = 23;      // stored mantissa bits
  static constexpr U absmask = 0x7fffffffu;
  static constexpr U expmask = 0x7f800000u;
  static constexpr U nbmask = 0xaaaaaaaau;  // negabinary mask
};
template <>
struct traits<double> {
  using U = std::uint64_t;
  using I = std::int64_t;
  static constexpr int P = 64;
  static constexpr int ebits = 11;
  static constexpr int ebias = 1023;
  static constexpr int mbits = 52;
  static constexpr U absmask = 0x7fffffffffffffffull;
  static constexpr U expmask = 0x7ff0000000000000ull;
  static constexpr U nbmask = 0xaaaaaaaaaaaaaaaaull;
};

// ---- small portable bit helpers ------------------------------------------------------------
HCOMM_HOST_DEVICE int clz64(u64 x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}
HCOMM_HOST_DEVICE int ctz64(u64 x) {  // x != 0
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(x)) - 1;
#else
  return __builtin_ctzll(x);
#endif
}
HCOMM_HOST_DEVICE int popcount32(unsigned x) {
#if defined(__CUDA_ARCH__)
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}
HCOMM_HOST_DEVICE u64 bswap64(u64 x) {
#if defined(__CUDA_ARCH__)
  const unsigned lo = static_cast<unsigned>(x), hi = static_cast<unsigned>(x >> 32);
  return (static_cast<u64>(__byte_perm(lo, 0, 0x0123)) << 32) | __byte_perm(hi, 0, 0x0123);
#else
  return __builtin_bswap64(x);
#endif
}
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

// ---- one bit plane while fewer than 4 coefficients are significant -------------------------
// libzfp writes plane k as: the bits of the n coefficients already significant, verbatim;
// then group tests ("is any remaining bit set?") each followed by a unary scan to the next set
// bit, the last coefficient's bit being implied. Such a plane is at most 7 bits long, and a
// budget cut keeps a prefix of the full sequence, so the encoder codes whole planes from a
// table and truncates at the end.
//
// enc_plane(n, x) = bits | len << 8 | n' << 12 for plane value x (bit i = coefficient i).
constexpr std::uint16_t enc_plane(unsigned n, unsigned x) {
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
constexpr std::uint16_t dec_plane(unsigned n, unsigned s) {
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

// ---- scalar <-> bits ----------------------------------------------------------------------
template <class T>
HCOMM_HOST_DEVICE typename traits<T>::U to_bits(T v) {
  typename traits<T>::U u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
template <class T>
HCOMM_HOST_DEVICE T from_bits(typename traits<T>::U u) {
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
template <class T>
HCOMM_HOST_DEVICE bool is_nonfinite_bits(typename traits<T>::U u) {
  return (u & traits<T>::expmask) == traits<T>::expmask;
}

// 2^e as T, exactly as ldexp(1, e) rounds it (0 below the smallest subnormal). Used where e
// cannot exceed the largest finite exponent.
template <class T>
HCOMM_HOST_DEVICE T pow2(int e) {
  using Tr = traits<T>;
  using U = typename Tr::U;
  if (e >= 1 - Tr::ebias) return from_bits<T>(static_cast<U>(e + Tr::ebias) << Tr::mbits);
  if (e >= 1 - Tr::ebias - Tr::mbits) return from_bits<T>(U{1} << (e - (1 - Tr::ebias - Tr::mbits)));
  return T(0);
}

// Wrapping integer arithmetic (libzfp relies on two's complement wrap-around in corner
// cases; doing it in unsigned keeps the same bits without undefined behaviour).
template <class I>
HCOMM_HOST_DEVICE I wadd(I a, I b) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) + static_cast<U>(b));
}
template <class I>
HCOMM_HOST_DEVICE I wsub(I a, I b) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) - static_cast<U>(b));
}
template <class I>
HCOMM_HOST_DEVICE I wshl1(I a) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) << 1);
}

// libzfp's decorrelating transform of one 1-D block (non-orthogonal lifting).
template <class I>
HCOMM_HOST_DEVICE void fwd_lift(I& x, I& y, I& z, I& w) {
  x = wadd(x, w); x >>= 1; w = wsub(w, x);
  z = wadd(z, y); z >>= 1; y = wsub(y, z);
  x = wadd(x, z); x >>= 1; z = wsub(z, x);
  w = wadd(w, y); w >>= 1; y = wsub(y, w);
  w = wadd(w, static_cast<I>(y >> 1)); y = wsub(y, static_cast<I>(w >> 1));
}
template <class I>
HCOMM_HOST_DEVICE void inv_lift(I& x, I& y, I& z, I& w) {
  y = wadd(y, static_cast<I>(w >> 1)); w = wsub(w, static_cast<I>(y >> 1));
  y = wadd(y, w); w = wshl1(w); w = wsub(w, y);
  z = wadd(z, x); x = wshl1(x); x = wsub(x, z);
  y = wadd(y, z); z = wshl1(z); z = wsub(z, y);
  w = wadd(w, x); x = wshl1(x); x = wsub(x, w);
}

// ---- local bit buffer of one block (<= 256 bits, one spare word for overrun) -------------
inline constexpr int block_words = 5;

HCOMM_HOST_DEVICE void buf_put(u64* buf, unsigned pos, u64 bits, unsigned len) {  // len <= 64
  const unsigned w = pos >> 6, o = pos & 63u;
  buf[w] |= bits << o;
  if (o + len > 64) buf[w + 1] |= bits >> (64 - o);
}
HCOMM_HOST_DEVICE u64 buf_peek(const u64* buf, unsigned pos) {  // 64 bits from pos (< 256)
  const unsigned w = pos >> 6, o = pos & 63u;
  return o ? (buf[w] >> o) | (buf[w + 1] << (64 - o)) : buf[w];
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

// Codes one block of 4 finite values into buf (block_words words, zeroed here); the caller
// keeps the first maxbits bits. Bit-identical to libzfp 1.0's encode_block (fixed rate).
template <class T>
HCOMM_HOST_DEVICE void encode_block(const T* v, unsigned maxbits, u64* buf) {
  using Tr = traits<T>;
  using U = typename Tr::U;
  using I = typename Tr::I;
  constexpr int P = Tr::P;
  for (int i = 0; i < block_words; ++i) buf[i] = 0;
  const U a0 = to_bits(v[0]) & Tr::absmask, a1 = to_bits(v[1]) & Tr::absmask;
  const U a2 = to_bits(v[2]) & Tr::absmask, a3 = to_bits(v[3]) & Tr::absmask;
  U amax = a0 > a1 ? a0 : a1;
  const U a23 = a2 > a3 ? a2 : a3;
  amax = amax > a23 ? amax : a23;
  if (amax == 0) return;  // all-zero block: a single 0 bit, then zero padding
  // Biased exponent as libzfp derives it from frexp of the largest |v| (subnormals clamp to 1).
  const unsigned e = static_cast<unsigned>(amax >> Tr::mbits) + 1;
  buf[0] = 2 * static_cast<u64>(e) + 1;
  unsigned pos = 1 + Tr::ebits;
  // Block-floating-point: i = (Int)(v * 2^(P-2-emax)). libzfp computes the scale with ldexp,
  // which overflows to +inf for tiny blocks (float max|v| < 2^-98, double < 2^-962); x86
  // converts the resulting inf/NaN to the integer minimum, and so do we.
  const int sexp = (P - 2) - (static_cast<int>(e) - Tr::ebias);
  I q[4];
  if (sexp > Tr::ebias) {
    q[0] = q[1] = q[2] = q[3] = static_cast<I>(U{1} << (P - 1));
  } else {
    const T s = pow2<T>(sexp);
    for (int i = 0; i < 4; ++i) q[i] = static_cast<I>(v[i] * s);
  }
  fwd_lift(q[0], q[1], q[2], q[3]);
  U u[4];
  for (int i = 0; i < 4; ++i) u[i] = (static_cast<U>(q[i]) + Tr::nbmask) ^ Tr::nbmask;
  // Planes below kmin are not coded (double blocks with emax < -1014: maxprec < 64).
  const int maxprec = static_cast<int>(e) - Tr::ebias + 1078;
  const int kmin = maxprec < P ? P - maxprec : 0;
  const U any = u[0] | u[1] | u[2] | u[3];
  int k = any ? 63 - clz64(static_cast<u64>(any)) : -1;  // highest non-zero plane
  // Planes above k are empty: one 0 bit (negative group test) each.
  pos += static_cast<unsigned>((P - 1) - (k > kmin - 1 ? k : kmin - 1));
  unsigned n = 0;
  while (pos < maxbits && k >= kmin) {
    const u64 W = plane_window(u, k);
    const int left = k - kmin + 1;
    const int jmax = left < 16 ? left : 16;
    int j = 0;
    for (; n < 4 && j < jmax && pos < maxbits; ++j) {
      const unsigned c = enc_lookup(n, static_cast<unsigned>(W >> (4 * j)) & 15u);
      const unsigned len = (c >> 8) & 15u;
      buf_put(buf, pos, c & 0xffu, len);
      pos += len;
      n = c >> 12;
    }
    if (n == 4 && j < jmax && pos < maxbits) {  // all significant: planes are 4 raw bits
      const unsigned nb = 4u * static_cast<unsigned>(jmax - j);
      buf_put(buf, pos, (W >> (4 * j)) & low_mask(nb), nb);
      pos += nb;
    }
    k -= jmax;
  }
}

// Decodes one block from buf (its maxbits bits, zero beyond, block_words words) into v[4].
// Mirrors libzfp 1.0's decode_block (fixed rate, no rounding) for any bit pattern.
template <class T>
HCOMM_HOST_DEVICE void decode_block(const u64* buf, unsigned maxbits, T* v) {
  using Tr = traits<T>;
  using U = typename Tr::U;
  using I = typename Tr::I;
  constexpr int P = Tr::P;
  if (!(buf[0] & 1u)) {
    v[0] = v[1] = v[2] = v[3] = T(0);
    return;
  }
  const unsigned e = static_cast<unsigned>(buf[0] >> 1) & ((1u << Tr::ebits) - 1);
  unsigned pos = 1 + Tr::ebits;
  unsigned rem = maxbits - pos;  // maxbits >= 1 + ebits always
  const int maxprec = static_cast<int>(e) - Tr::ebias + 1078;
  const int kmin = maxprec < P ? P - maxprec : 0;
  U u[4] = {0, 0, 0, 0};
  int k = P - 1;
  unsigned n = 0;
  // Leading empty planes: runs of 0 group-test bits.
  if (rem) {
    const u64 pk = buf_peek(buf, pos);
    unsigned z = pk ? static_cast<unsigned>(ctz64(pk)) : 64u;
    if (z > rem) z = rem;
    const unsigned planes = static_cast<unsigned>(k - kmin + 1);
    if (z > planes) z = planes;
    pos += z;
    rem -= z;
    k -= static_cast<int>(z);
  }
  while (rem && k >= kmin && n < 4) {
    const u64 pk = buf_peek(buf, pos);
    const unsigned c = dec_lookup(n, static_cast<unsigned>(pk) & 127u);
    unsigned x;
    const unsigned len = (c >> 4) & 15u;
    if (len <= rem) {
      x = c & 15u;
      n = c >> 8;
      pos += len;
      rem -= len;
    } else {  // the budget ends inside this plane: follow libzfp bit by bit
      unsigned bits = rem, q = 0;
      const unsigned m = n < bits ? n : bits;
      x = static_cast<unsigned>(pk) & ((1u << m) - 1);
      q = m;
      bits -= m;
      while (n < 4 && bits) {
        --bits;
        if (!((pk >> q++) & 1u)) break;
        while (n < 3 && bits) {
          --bits;
          if ((pk >> q++) & 1u) break;
          ++n;
        }
        x += 1u << n;
        ++n;
      }
      pos += q;
      rem = bits;
    }
    for (int i = 0; i < 4; ++i) u[i] |= static_cast<U>((x >> i) & 1u) << k;
    --k;
  }
  if (n == 4) {
    while (rem && k >= kmin) {
      const int left = k - kmin + 1;
      const int jmax = left < 16 ? left : 16;
      unsigned nb = 4u * static_cast<unsigned>(jmax);
      if (nb > rem) nb = rem;
      const u64 f = planes_to_fields(buf_peek(buf, pos) & low_mask(nb));
      pos += nb;
      rem -= nb;
      for (int i = 0; i < 4; ++i) {
        const U fi = static_cast<U>((f >> (16 * i)) & 0xffffu);
        u[i] |= k >= 15 ? static_cast<U>(fi << (k - 15)) : static_cast<U>(fi >> (15 - k));
      }
      k -= jmax;
    }
  }
  I q[4];
  for (int i = 0; i < 4; ++i) q[i] = static_cast<I>((u[i] ^ Tr::nbmask) - Tr::nbmask);
  inv_lift(q[0], q[1], q[2], q[3]);
  const T s = pow2<T>(static_cast<int>(e) - Tr::ebias - (P - 2));
  for (int i = 0; i < 4; ++i) v[i] = static_cast<T>(q[i]) * s;
}

// ---- groups of 64 blocks ------------------------------------------------------------------
inline constexpr std::size_t group_blocks = 64;
inline constexpr std::size_t group_values = 4 * group_blocks;

// Appends up to 64 bits at a time to a run of 64-bit words (whole words stored, never or-ed,
// so the output need not be zeroed first).
struct word_writer {
  u64* out;
  u64 acc = 0;
  unsigned fill = 0;
  HCOMM_HOST_DEVICE void put(u64 v, unsigned len) {  // 1 <= len <= 64, v < 2^len
    acc |= v << fill;
    unsigned nf = fill + len;
    if (nf >= 64) {
      *out++ = acc;
      acc = fill ? v >> (64 - fill) : 0;
      nf -= 64;
    }
    fill = nf;
  }
  HCOMM_HOST_DEVICE void flush() {
    if (fill) *out++ = acc;
    acc = 0;
    fill = 0;
  }
};

// Replaces non-finite values (mask bit i) among the first m of v by the nearest finite value
// of the same block (left first), or 0 when the block has none: the block exponent stays that
// of its finite values and a smooth block stays smooth.
template <class T>
HCOMM_HOST_DEVICE void replace_nonfinite(T* v, unsigned m, unsigned mask) {
  T r[4] = {v[0], v[1], v[2], v[3]};
  for (unsigned i = 0; i < m; ++i) {
    if (!((mask >> i) & 1u)) continue;
    T rep = T(0);
    for (unsigned d = 1; d < 4; ++d) {
      if (i >= d && !((mask >> (i - d)) & 1u)) { rep = v[i - d]; break; }
      if (i + d < m && !((mask >> (i + d)) & 1u)) { rep = v[i + d]; break; }
    }
    r[i] = rep;
  }
  for (unsigned i = 0; i < 4; ++i) v[i] = r[i];
}

// Encodes group g (values [256g, 256g+256) of in) into its 4*rate words of stream and counts
// its non-finite values into counts[g].
template <class T>
struct encode_group_kernel {
  const T* in;
  std::size_t n;
  unsigned maxbits;
  u64* stream;
  u64* counts;
  HCOMM_HOST_DEVICE void operator()(std::size_t g) const {
    using U = typename traits<T>::U;
    const std::size_t first = g * group_values;
    const std::size_t nvals = n - first < group_values ? n - first : group_values;
    const std::size_t nblk = (nvals + 3) / 4;
    word_writer wr{stream + g * (group_blocks * maxbits / 64)};
    const unsigned full_words = maxbits / 64, tail = maxbits % 64;
    u64 nonfinite = 0;
    u64 buf[block_words];
    for (std::size_t b = 0; b < nblk; ++b) {
      const T* p = in + first + 4 * b;
      const unsigned m = nvals - 4 * b < 4 ? static_cast<unsigned>(nvals - 4 * b) : 4u;
      T v[4] = {T(0), T(0), T(0), T(0)};
      unsigned mask = 0;
      if (m == 4) {
        std::memcpy(v, p, sizeof v);
        for (unsigned i = 0; i < 4; ++i) mask |= static_cast<unsigned>(is_nonfinite_bits<T>(to_bits(v[i]))) << i;
      } else {
        for (unsigned i = 0; i < m; ++i) {
          v[i] = p[i];
          mask |= static_cast<unsigned>(is_nonfinite_bits<T>(to_bits(v[i]))) << i;
        }
      }
      if (mask) {
        nonfinite += static_cast<u64>(popcount32(mask));
        replace_nonfinite(v, m, mask);
      }
      // libzfp's padding of a partial block: n=1: v1=v2=v3=v0; n=2: v2=v1, v3=v0; n=3: v3=v0.
      if (m == 1) v[1] = v[0];
      if (m <= 2) v[2] = v[1];
      if (m <= 3) v[3] = v[0];
      encode_block<T>(v, maxbits, buf);
      for (unsigned w = 0; w < full_words; ++w) wr.put(buf[w], 64);
      if (tail) wr.put(buf[full_words] & low_mask(tail), tail);
    }
    wr.flush();
    counts[g] = nonfinite;
    (void)sizeof(U);
  }
};

// Decodes group g of the stream (nwords words in all) into out.
template <class T>
struct decode_group_kernel {
  const unsigned char* stream;  // little-endian 64-bit words, possibly unaligned
  std::size_t nwords;
  std::size_t n;
  unsigned maxbits;
  T* out;
  HCOMM_HOST_DEVICE u64 word(std::size_t i) const {
    u64 w;
    std::memcpy(&w, stream + 8 * i, 8);
    return w;
  }
  HCOMM_HOST_DEVICE void operator()(std::size_t g) const {
    const std::size_t first = g * group_values;
    const std::size_t nvals = n - first < group_values ? n - first : group_values;
    const std::size_t nblk = (nvals + 3) / 4;
    const std::size_t w0 = g * (group_blocks * maxbits / 64);
    u64 buf[block_words];
    std::size_t bitpos = 0;  // within the group
    for (std::size_t b = 0; b < nblk; ++b) {
      unsigned left = maxbits, i = 0;
      for (; left; ++i) {
        const unsigned len = left < 64 ? left : 64u;
        const std::size_t wi = w0 + (bitpos >> 6);
        const unsigned o = static_cast<unsigned>(bitpos & 63u);
        u64 x = word(wi) >> o;
        if (o && o + len > 64) x |= word(wi + 1) << (64 - o);  // within the stream: the block is
        buf[i] = x & low_mask(len);
        bitpos += len;
        left -= len;
      }
      for (; i < static_cast<unsigned>(block_words); ++i) buf[i] = 0;
      T v[4];
      decode_block<T>(buf, maxbits, v);
      T* o = out + first + 4 * b;
      const std::size_t m = nvals - 4 * b < 4 ? nvals - 4 * b : 4;
      for (std::size_t j = 0; j < m; ++j) o[j] = v[j];
    }
    (void)nwords;
  }
};

// ---- the non-finite side list --------------------------------------------------------------
// Entry = index (idx_bytes: 4 when n <= 2^32, else 8) then the value's bit pattern, LE.
template <class T>
struct scatter_nonfinite_kernel {
  const T* in;
  std::size_t n;
  const u64* offsets;  // exclusive scan of the per-group counts (G+1 entries)
  unsigned char* list; // first entry
  unsigned idx_bytes;
  HCOMM_HOST_DEVICE void operator()(std::size_t g) const {
    u64 off = offsets[g];
    if (offsets[g + 1] == off) return;
    const std::size_t entry = idx_bytes + sizeof(T);
    const std::size_t first = g * group_values;
    const std::size_t last = n - first < group_values ? n : first + group_values;
    for (std::size_t i = first; i < last; ++i) {
      const auto b = to_bits(in[i]);
      if (!is_nonfinite_bits<T>(b)) continue;
      unsigned char* e = list + off * entry;
      if (idx_bytes == 4) {
        const std::uint32_t i32 = static_cast<std::uint32_t>(i);
        std::memcpy(e, &i32, 4);
      } else {
        const u64 i64 = i;
        std::memcpy(e, &i64, 8);
      }
      std::memcpy(e + idx_bytes, &b, sizeof b);
      ++off;
    }
  }
};

// Writes the count after the stream and the payload size (one work item).
struct finish_payload_kernel {
  const u64* total;  // offsets[G]
  unsigned char* count_at;
  u64 stream_bytes;
  u64 entry_bytes;
  u64* payload_bytes;
  HCOMM_HOST_DEVICE void operator()(std::size_t) const {
    const u64 c = *total;
    std::memcpy(count_at, &c, 8);
    *payload_bytes = stream_bytes + 8 + c * entry_bytes;
  }
};

inline constexpr std::size_t check_chunk = 256;

// Checks entries [256c, 256c+256) of the side list: indices in range and strictly increasing
// (also across the chunk boundary), patterns really non-finite. bad[c] = 0 when all hold.
template <class T>
struct validate_nonfinite_kernel {
  const unsigned char* list;
  u64 count;
  std::size_t n;
  unsigned idx_bytes;
  u64* bad;
  HCOMM_HOST_DEVICE u64 index(u64 i) const {
    const unsigned char* e = list + i * (idx_bytes + sizeof(T));
    if (idx_bytes == 4) {
      std::uint32_t v;
      std::memcpy(&v, e, 4);
      return v;
    }
    u64 v;
    std::memcpy(&v, e, 8);
    return v;
  }
  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    const u64 first = static_cast<u64>(c) * check_chunk;
    const u64 last = count - first < check_chunk ? count : first + check_chunk;
    u64 ok = 1;
    u64 prev = first > 0 ? index(first - 1) : 0;
    bool have_prev = first > 0;
    for (u64 i = first; i < last; ++i) {
      const u64 idx = index(i);
      typename traits<T>::U b;
      std::memcpy(&b, list + i * (idx_bytes + sizeof(T)) + idx_bytes, sizeof b);
      ok &= static_cast<u64>(idx < n) & static_cast<u64>(!have_prev || idx > prev) &
            static_cast<u64>(is_nonfinite_bits<T>(b));
      prev = idx;
      have_prev = true;
    }
    bad[c] = ok ? 0 : 1;
  }
};

struct or_reduce_kernel {
  u64* flags;
  std::size_t m;  // result in flags[m]
  HCOMM_HOST_DEVICE void operator()(std::size_t) const {
    u64 r = 0;
    for (std::size_t i = 0; i < m; ++i) r |= flags[i];
    flags[m] = r;
  }
};

// Puts the non-finite values back (after the stream was decoded; indices are distinct).
template <class T>
struct patch_nonfinite_kernel {
  const unsigned char* list;
  unsigned idx_bytes;
  T* out;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const unsigned char* e = list + i * (idx_bytes + sizeof(T));
    u64 idx;
    if (idx_bytes == 4) {
      std::uint32_t v;
      std::memcpy(&v, e, 4);
      idx = v;
    } else {
      std::memcpy(&idx, e, 8);
    }
    std::memcpy(out + idx, e + idx_bytes, sizeof(T));
  }
};

}  // namespace hcomm::codec::zfp_detail
