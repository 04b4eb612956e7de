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
// only), except the AVX2 batch coders, which are host-only. The bit-plane coder is table
// driven on the host (tables built at compile time from the same constexpr functions that the
// device path evaluates directly), and moves the planes after all four coefficients are
// significant in bulk, 16 planes per 64-bit word, through a 4x16 bit transpose. On x86-64
// hosts with AVX2, float blocks of 12..64 bits (rates 3..16, the common case) go through
// batch coders that code 8 blocks at once in AVX2 intrinsics, without data-dependent
// branches (8 blocks in the 32-bit lanes of a register, blocks over 32 bits in pairs of them:
// encode_batch_f32_avx2<Wide>, decode_batches_f32_avx2<Wide>), 2-10x faster than the
// block-at-a-time coders, which remain for doubles, wider blocks, partial groups, blocks
// with NaN/Inf, CUDA and other hosts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "hcomm/core/macros.hpp"

#if !defined(__CUDACC__) && !defined(HCOMM_ZFP_NO_CLONES) && defined(__x86_64__) && \
    (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

// The block coders are forced inline into the group loops so that the bit writer/reader
// state stays in registers.
#if defined(__CUDACC__)
#define HCOMM_ZFP_INLINE __host__ __device__ __forceinline__
#else
#define HCOMM_ZFP_INLINE inline __attribute__((always_inline))
#endif

// x86-64 hosts: the group kernels are compiled twice, for the baseline instruction set and for
// AVX2 (+BMI2, LZCNT), from the same C++ body, and pick at run time. Only the AVX2 variant
// uses the batch coders. The bytes are the same (libzfp's) either way. Define
// HCOMM_ZFP_NO_CLONES to build the baseline only.
#if !defined(__CUDACC__) && !defined(HCOMM_ZFP_NO_CLONES) && defined(__x86_64__) && \
    (defined(__GNUC__) || defined(__clang__))
#define HCOMM_ZFP_CLONES 1
#else
#define HCOMM_ZFP_CLONES 0
#endif

namespace hcomm::codec::zfp_detail {

#if HCOMM_ZFP_CLONES
// The environment variable HCOMM_ZFP_BASELINE=1 forces the baseline variant (the tests run
// the libzfp comparisons both ways).
inline bool host_has_avx2() noexcept {
  // (LZCNT has no portable feature string; every CPU with AVX2 and BMI2 has it.)
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
                          !(std::getenv("HCOMM_ZFP_BASELINE") && std::getenv("HCOMM_ZFP_BASELINE")[0] == '1');
  return has;
}
#define HCOMM_ZFP_DISPATCH(g)                        \
  if (::hcomm::codec::zfp_detail::host_has_avx2()) { \
    body_avx2(g);                                    \
    return;                                          \
  }                                                  \
  body<false>(g)
#define HCOMM_ZFP_AVX2_VARIANT \
  __attribute__((target("avx2,bmi2,lzcnt"))) void body_avx2(std::size_t g) const { body<true>(g); }
#else
#define HCOMM_ZFP_DISPATCH(g) body<false>(g)
#define HCOMM_ZFP_AVX2_VARIANT
#endif

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

// ---- one bit plane while fewer than 4 coefficients are significant -------------------------
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

// ---- bit writer and reader over a group's 64-bit words --------------------------------------
// The writer stores whole words (never or-ed), so the output need not be zeroed first.
struct word_writer {
  u64* out;
  u64 acc = 0;
  unsigned fill = 0;
  HCOMM_HOST_DEVICE void put(u64 v, unsigned len) {  // 0 <= len <= 64, v < 2^len
    acc |= v << fill;
    const unsigned nf = fill + len;
    if (nf >= 64) {
      *out++ = acc;
      acc = fill ? v >> (64 - fill) : 0;
      fill = nf - 64;
    } else {
      fill = nf;
    }
  }
  HCOMM_HOST_DEVICE void skip(unsigned len) {  // len zero bits
    fill += len;
    while (fill >= 64) {
      *out++ = acc;
      acc = 0;
      fill -= 64;
    }
  }
  HCOMM_HOST_DEVICE void flush() {
    if (fill) *out++ = acc;
    acc = 0;
    fill = 0;
  }
};

// Reads 64 bits from any bit position of the stream (little-endian words, possibly unaligned
// memory). It may read the one word after the stream: the payload always has the 8-byte
// count there, and every caller masks what it uses to the block's remaining budget.
struct word_reader {
  const unsigned char* base;
  HCOMM_HOST_DEVICE u64 word(std::size_t i) const {
    u64 w;
    std::memcpy(&w, base + 8 * i, 8);
    return w;
  }
  HCOMM_HOST_DEVICE u64 peek(std::size_t p) const {  // p < 64 * stream words
    const std::size_t i = p >> 6;
    const unsigned o = static_cast<unsigned>(p & 63u);
    return (word(i) >> o) | ((word(i + 1) << 1) << (63 - o));
  }
};

// A block of at most 64 bits is assembled in one register and stored with a single put
// (only called with pos < 64 when len > 0: the coder never writes once its budget is spent).
struct block_writer_small {
  u64 acc = 0;
  unsigned pos = 0;
  HCOMM_HOST_DEVICE void put(u64 v, unsigned len) {
    acc |= v << pos;
    pos += len;
  }
  HCOMM_HOST_DEVICE void skip(unsigned len) { pos += len; }
};
// ... and read from one register (bits past the block masked off).
struct block_source_small {
  u64 bits;
  HCOMM_HOST_DEVICE u64 peek(unsigned q) const { return bits >> q; }
};
// Larger blocks are read from the stream directly.
struct block_source_stream {
  const word_reader* rd;
  std::size_t p0;
  HCOMM_HOST_DEVICE u64 peek(unsigned q) const { return rd->peek(p0 + q); }
};

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

// Codes one block of 4 finite values as exactly maxbits bits. Bit-identical to libzfp 1.0's
// encode_block in fixed-rate mode.
template <class T, class Writer>
HCOMM_ZFP_INLINE void encode_block(const T* v, unsigned maxbits, Writer& wr) {
  using Tr = traits<T>;
  using U = typename Tr::U;
  using I = typename Tr::I;
  constexpr int P = Tr::P;
  const U a0 = to_bits(v[0]) & Tr::absmask, a1 = to_bits(v[1]) & Tr::absmask;
  const U a2 = to_bits(v[2]) & Tr::absmask, a3 = to_bits(v[3]) & Tr::absmask;
  U amax = a0 > a1 ? a0 : a1;
  const U a23 = a2 > a3 ? a2 : a3;
  amax = amax > a23 ? amax : a23;
  if (amax == 0) {  // all-zero block: a single 0 bit, then zero padding
    wr.skip(maxbits);
    return;
  }
  // Biased exponent as libzfp derives it from frexp of the largest |v| (subnormals clamp to 1).
  const unsigned e = static_cast<unsigned>(amax >> Tr::mbits) + 1;
  wr.put(2 * static_cast<u64>(e) + 1, 1 + Tr::ebits);
  unsigned rem = maxbits - (1 + Tr::ebits);
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
  // m[i]: highest non-zero plane of coefficients i..3. While n coefficients are significant,
  // the planes above m[n] are quiet and plane m[n] makes some new one significant. (All zero
  // gives 0 rather than "none": plane 0 coded as an event with nothing new is bit for bit the
  // quiet plane it is.)
  const U s3 = u[3], s2 = u[2] | s3, s1 = u[1] | s2, s0 = u[0] | s1;
  const int m[4] = {63 - clz64(static_cast<u64>(s0) | 1u), 63 - clz64(static_cast<u64>(s1) | 1u),
                    63 - clz64(static_cast<u64>(s2) | 1u), 63 - clz64(static_cast<u64>(s3) | 1u)};
  int k = m[0];
  // Planes above m[0] are empty: one 0 bit (negative group test) each.
  {
    unsigned z = static_cast<unsigned>((P - 1) - (k > kmin - 1 ? k : kmin - 1));
    z = z < rem ? z : rem;
    wr.skip(z);
    rem -= z;
  }
  unsigned n = 0;
  while (rem && k >= kmin) {
    const u64 W = plane_window(u, k);  // nibble j = plane k - j
    const int left = k - kmin + 1;
    const int jmax = left < 16 ? left : 16;
    int j = 0;
    while (n < 4 && j < jmax && rem) {
      const int kk = k - j;
      const int ev = m[n];
      if (kk > ev) {  // a run of quiet planes: the low n+1 bits of each nibble
        int stop = ev > kmin - 1 ? ev : kmin - 1;
        int L = kk - stop;
        L = L < jmax - j ? L : jmax - j;
        unsigned nb = static_cast<unsigned>(L) * (n + 1);
        nb = nb < rem ? nb : rem;
        wr.put(compact_n(W >> (4 * j), n) & low_mask(nb), nb);
        rem -= nb;
        j += L;
        if (j >= jmax || !rem) break;  // else plane k - j is m[n]: an event
      }
      // plane k - j makes new coefficients significant
      const unsigned c = enc_lookup(n, static_cast<unsigned>(W >> (4 * j)) & 15u);
      unsigned len = (c >> 8) & 15u;
      len = len < rem ? len : rem;
      wr.put(c & low_mask(len), len);
      rem -= len;
      n = c >> 12;
      ++j;
    }
    if (n == 4 && j < jmax && rem) {  // all significant: planes are 4 raw bits
      unsigned nb = 4u * static_cast<unsigned>(jmax - j);
      nb = nb < rem ? nb : rem;
      wr.put((W >> (4 * j)) & low_mask(nb), nb);
      rem -= nb;
    }
    k -= jmax;
  }
  wr.skip(rem);
}

// ---- eight float blocks at once (AVX2 host variant) ------------------------------------------
// The batch coders code 8 float blocks of 12..64 bits (rates 3..16) side by side, one block per
// 32-bit lane of an AVX2 register (a pair of lanes for blocks over 32 bits), with no data-
// dependent branch, so that consecutive blocks overlap instead of serialising on mispredicted
// branches. They code exactly as encode_block / decode_block, organised so that nothing but
// the bit position is carried from plane to plane: the number of coefficients significant
// before plane k is known up front, n(k) = #{i : m[i] > k}, so each plane's code is one table
// lookup (a gather) indexed by (n, plane bits), and a block's bits are the codes of its
// consecutive planes laid end to end until the budget is spent; the decoder looks each plane
// up by (n, budget bits left, next 7 stream bits). Only float (every plane is
// coded: kmin = 0), 8 whole blocks of finite values; everything else goes block by block.
inline constexpr int batch_lanes = 8;

// enc_plane(n, x) at index 16 n + x (the encoder's plane table).
struct enc_table32_t {
  std::uint32_t v[80];
};
constexpr enc_table32_t make_enc_table32() {
  enc_table32_t t{};
  for (unsigned i = 0; i < 80; ++i) t.v[i] = enc_plane(i >> 4, i & 15u);
  return t;
}
inline constexpr enc_table32_t enc_table32 = make_enc_table32();

// Decodes one block of maxbits bits, read through rd.peek(q) (64 bits from block bit q, only
// called with q < maxbits), into v[4]. Mirrors libzfp 1.0's decode_block (fixed rate, no
// rounding) for any bit pattern.
template <class T, class Source>
HCOMM_ZFP_INLINE void decode_block(const Source& rd, unsigned maxbits, T* v) {
  using Tr = traits<T>;
  using U = typename Tr::U;
  using I = typename Tr::I;
  constexpr int P = Tr::P;
  constexpr int NW = P / 16;  // nibble words: nibble j of the plane stream = plane P-1-j
  unsigned p = 0;  // bit position in the block
  const u64 head = rd.peek(0);
  if (!(head & 1u)) {
    v[0] = v[1] = v[2] = v[3] = T(0);
    return;
  }
  const unsigned e = static_cast<unsigned>(head >> 1) & ((1u << Tr::ebits) - 1);
  p += 1 + Tr::ebits;
  unsigned rem = maxbits - (1 + Tr::ebits);  // maxbits >= 1 + ebits always
  const int maxprec = static_cast<int>(e) - Tr::ebias + 1078;
  const int kmin = maxprec < P ? P - maxprec : 0;
  const unsigned planes = static_cast<unsigned>(P - kmin);
  u64 ns[NW];
  for (int w = 0; w < NW; ++w) ns[w] = 0;
  unsigned j = 0;  // next plane, counted from the top (plane P-1-j)
  unsigned n = 0;
  // Leading empty planes: a run of 0 group-test bits.
  if (rem) {
    const u64 pk = rd.peek(p);
    unsigned z = pk ? static_cast<unsigned>(ctz64(pk)) : 64u;
    z = z < rem ? z : rem;
    z = z < planes ? z : planes;
    p += z;
    rem -= z;
    j = z;
  }
  // Per-n constants of quiet runs (n changes at most 4 times per block): field width n+1,
  // positions of the group-test bits, and 2^16/(n+1) rounded up (exact division of x < 2^10).
  unsigned w = 1, recip = 0;
  u64 gt = 0;
  while (rem && j < planes && n < 4) {
    u64 pk = rd.peek(p);
    if (n > 0) {  // a run of quiet planes: fields of n verbatim bits and a 0 group test
      if (w != n + 1) {
        w = n + 1;
        gt = group_test_bits(n);
        recip = n == 1 ? 32768u : n == 2 ? 21846u : 16384u;
      }
      const u64 t = pk & gt;
      unsigned L = t ? (static_cast<unsigned>(ctz64(t)) * recip) >> 16 : 16u;
      L = L < 16 ? L : 16;
      const unsigned lrem = (rem * recip) >> 16;
      L = L < lrem ? L : lrem;
      L = L < planes - j ? L : planes - j;
      if (L) {
        const u64 x = expand_n(pk & low_mask(L * w), n);
        const unsigned o = 4 * (j & 15u);
        ns[j >> 4] |= x << o;
        if (o && (j & 15u) + L > 16) ns[(j >> 4) + 1] |= x >> (64 - o);
        p += L * w;
        rem -= L * w;
        j += L;
        if (!rem || j >= planes) break;
        pk = rd.peek(p);  // the next plane is an event (or the budget ends inside it)
      }
    }
    const unsigned c = dec_lookup(n, static_cast<unsigned>(pk) & 127u);
    unsigned x;
    const unsigned len = (c >> 4) & 15u;
    if (len <= rem) {
      x = c & 15u;
      n = c >> 8;
      p += len;
      rem -= len;
    } else {  // the budget (rem < 7 bits) ends inside this plane: follow libzfp bit by bit
      const unsigned cut = dec_plane_cut(n, static_cast<unsigned>(pk) & 127u, rem);
      const unsigned q = (cut >> 4) & 15u;
      x = cut & 15u;
      n = cut >> 8;
      p += q;
      rem -= q;
    }
    ns[j >> 4] |= static_cast<u64>(x) << (4 * (j & 15u));
    ++j;
  }
  if (n == 4) {  // the rest are raw 4-bit planes
    while (rem && j < planes) {
      const unsigned o = 4 * (j & 15u);  // nibble offset in word j/16
      unsigned nb = 64 - o;
      const unsigned left = 4 * (planes - j);
      nb = nb < left ? nb : left;
      nb = nb < rem ? nb : rem;
      ns[j >> 4] |= (rd.peek(p) & low_mask(nb)) << o;
      p += nb;
      rem -= nb;
      j += (nb + 3) / 4;
    }
  }
  U u[4] = {0, 0, 0, 0};
  for (int w = 0; w < NW; ++w) {
    if (!ns[w]) continue;
    const u64 f = planes_to_fields(ns[w]);
    const int sh = P - 16 - 16 * w;  // field bit 15 = plane P-1-16w
    for (int i = 0; i < 4; ++i) u[i] |= static_cast<U>(static_cast<U>((f >> (16 * i)) & 0xffffu) << sh);
  }
  I q[4];
  for (int i = 0; i < 4; ++i) q[i] = static_cast<I>((u[i] ^ Tr::nbmask) - Tr::nbmask);
  inv_lift(q[0], q[1], q[2], q[3]);
  const T s = pow2<T>(static_cast<int>(e) - Tr::ebias - (P - 2));
  for (int i = 0; i < 4; ++i) v[i] = static_cast<T>(q[i]) * s;
}

// A decoder plane table: 5 * 8 * 128 entries, index (n * 8 + r) * 128 + s (n significant,
// r budget bits left, s the next 7 stream bits).
struct dec_table32_t {
  std::uint32_t v[5 * 8 * 128];
};

#if HCOMM_ZFP_CLONES
// The same planes for the AVX2 decoder (decode_batches_f32_avx2, both widths), laid out so that its
// steps collect each coefficient's bits in a byte of their own: bit i of x at bit 8i, then
// len << 1 | n' << 4 (len <= 7, n' <= 4).
constexpr dec_table32_t make_dec_table32_spread() {
  dec_table32_t t{};
  for (unsigned i = 0; i < 5 * 8 * 128; ++i) {
    const std::uint32_t c = dec_plane_cut(i / 1024, i % 128, (i / 128) % 8);
    const std::uint32_t x = c & 15u;
    const std::uint32_t spread = (x & 1u) | (x & 2u) << 7 | (x & 4u) << 14 | (x & 8u) << 21;
    t.v[i] = spread | ((c >> 4) & 15u) << 1 | (c >> 8) << 4;
  }
  return t;
}
inline constexpr dec_table32_t dec_table32_spread = make_dec_table32_spread();

#define HCOMM_ZFP_AVX2_FN __attribute__((target("avx2,bmi2,lzcnt"), always_inline)) inline
// Bit sh of u[i] -> bit i, lane-wise (one bit plane of 8 blocks).
HCOMM_ZFP_AVX2_FN __m256i plane_bits_avx2(const __m256i* u, __m256i sh) {
  const __m256i o = _mm256_set1_epi32(1);
  __m256i r = _mm256_and_si256(_mm256_srlv_epi32(u[0], sh), o);
  r = _mm256_or_si256(r, _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(u[1], sh), o), 1));
  r = _mm256_or_si256(r, _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(u[2], sh), o), 2));
  return _mm256_or_si256(r, _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(u[3], sh), o), 3));
}

// pshufb mask: byte I of every 32-bit lane to byte To, the other bytes 0.
template <int I, int To>
HCOMM_ZFP_AVX2_FN __m256i byte_move(__m256i x) {
  static_assert(I >= 0 && I <= 3 && To >= 0 && To <= 3, "byte_move: byte I in 0..3 to byte To in 0..3");
  constexpr char z = -128;  // pshufb: a byte of 0
  constexpr char a = static_cast<char>(I), b = static_cast<char>(4 + I), c = static_cast<char>(8 + I),
                 d = static_cast<char>(12 + I);
  const __m256i m = To == 3   ? _mm256_setr_epi8(z, z, z, a, z, z, z, b, z, z, z, c, z, z, z, d,  //
                                                 z, z, z, a, z, z, z, b, z, z, z, c, z, z, z, d)
                    : To == 2 ? _mm256_setr_epi8(z, z, a, z, z, z, b, z, z, z, c, z, z, z, d, z,  //
                                                 z, z, a, z, z, z, b, z, z, z, c, z, z, z, d, z)
                    : To == 1 ? _mm256_setr_epi8(z, a, z, z, z, b, z, z, z, c, z, z, z, d, z, z,  //
                                                 z, a, z, z, z, b, z, z, z, c, z, z, z, d, z, z)
                              : _mm256_setr_epi8(a, z, z, z, b, z, z, z, c, z, z, z, d, z, z, z,  //
                                                 a, z, z, z, b, z, z, z, c, z, z, z, d, z, z, z);
  return _mm256_shuffle_epi8(x, m);
}
// The same byte permutation in every 32-bit lane (byte d of the result = byte S<d> of x).
template <int S0, int S1, int S2, int S3>
HCOMM_ZFP_AVX2_FN __m256i bytes_permute(__m256i x) {
  return _mm256_shuffle_epi8(x, _mm256_setr_epi8(S0, S1, S2, S3, 4 + S0, 4 + S1, 4 + S2, 4 + S3, 8 + S0, 8 + S1,
                                                 8 + S2, 8 + S3, 12 + S0, 12 + S1, 12 + S2, 12 + S3, S0, S1, S2,
                                                 S3, 4 + S0, 4 + S1, 4 + S2, 4 + S3, 8 + S0, 8 + S1, 8 + S2, 8 + S3,
                                                 12 + S0, 12 + S1, 12 + S2, 12 + S3));
}
// Exchanges bit p and bit p + S of each 32-bit lane for the p in M.
template <int S, int M>
HCOMM_ZFP_AVX2_FN __m256i delta_swap(__m256i x) {
  const __m256i t = _mm256_and_si256(_mm256_xor_si256(x, _mm256_srli_epi32(x, S)), _mm256_set1_epi32(M));
  return _mm256_xor_si256(x, _mm256_xor_si256(t, _mm256_slli_epi32(t, S)));
}
// Raw planes, nibble k = plane 31 - j - k (bit 4k + i = coefficient i) -> byte i, bit 7 - k:
// the rotation of the 5 bit-index bits (k, i) -> (i, 7 - k) as two byte permutations and three
// delta swaps (found by a search over index-bit swaps; the test against libzfp covers it).
HCOMM_ZFP_AVX2_FN __m256i raw_planes_to_bytes(__m256i x) {
  x = bytes_permute<2, 0, 3, 1>(x);
  x = delta_swap<4, 0x00F000F0>(x);
  x = bytes_permute<3, 2, 1, 0>(x);
  x = delta_swap<7, 0x00AA00AA>(x);
  return delta_swap<14, 0x0000CCCC>(x);
}
// Its inverse: byte i, bit 7 - k -> nibble k, bit i (the encoder's raw planes).
HCOMM_ZFP_AVX2_FN __m256i bytes_to_raw_planes(__m256i x) {
  x = delta_swap<14, 0x0000CCCC>(x);
  x = delta_swap<7, 0x00AA00AA>(x);
  x = bytes_permute<3, 2, 1, 0>(x);
  x = delta_swap<4, 0x00F000F0>(x);
  return bytes_permute<1, 3, 0, 2>(x);
}
// Blocks of 33..64 bits as pairs of 32-bit lanes, lo = bits 0..31, hi = bits 32..63. AVX2's
// variable shifts give 0 for counts of 32 or more (negative counts are large unsigned ones),
// so each shift of the pair by 0 <= s (nothing left from s >= 64) is three lane shifts for
// the half that receives bits across the boundary and one for the other.
struct wide_bits {
  __m256i lo, hi;
};
HCOMM_ZFP_AVX2_FN wide_bits shl_wide(wide_bits x, __m256i s) {
  const __m256i up = _mm256_sub_epi32(s, _mm256_set1_epi32(32)), down = _mm256_sub_epi32(_mm256_set1_epi32(32), s);
  return {_mm256_sllv_epi32(x.lo, s),
          _mm256_or_si256(_mm256_or_si256(_mm256_sllv_epi32(x.hi, s), _mm256_srlv_epi32(x.lo, down)),
                          _mm256_sllv_epi32(x.lo, up))};
}
HCOMM_ZFP_AVX2_FN wide_bits shr_wide(wide_bits x, __m256i s) {
  const __m256i up = _mm256_sub_epi32(s, _mm256_set1_epi32(32)), down = _mm256_sub_epi32(_mm256_set1_epi32(32), s);
  return {_mm256_or_si256(_mm256_or_si256(_mm256_srlv_epi32(x.lo, s), _mm256_sllv_epi32(x.hi, down)),
                          _mm256_srlv_epi32(x.hi, up)),
          _mm256_srlv_epi32(x.hi, s)};
}
HCOMM_ZFP_AVX2_FN void or_wide(wide_bits& x, wide_bits y) {
  x.lo = _mm256_or_si256(x.lo, y.lo);
  x.hi = _mm256_or_si256(x.hi, y.hi);
}
// Bit k -> bit 31 - k of each 32-bit lane.
HCOMM_ZFP_AVX2_FN __m256i bitrev32_avx2(__m256i x) {
  const __m256i rev4 = _mm256_setr_epi8(0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15,  //
                                        0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15);
  const __m256i lo4 = _mm256_set1_epi8(0x0F);
  x = bytes_permute<3, 2, 1, 0>(x);
  const __m256i lo = _mm256_shuffle_epi8(rev4, _mm256_and_si256(x, lo4));
  const __m256i hi = _mm256_shuffle_epi8(rev4, _mm256_and_si256(_mm256_srli_epi16(x, 4), lo4));
  return _mm256_or_si256(_mm256_slli_epi16(lo, 4), hi);
}
// The top plane m[0] (code0: its table code) makes coefficient 0 (and maybe more)
// significant. If it is alone, the planes down to m[1] + 1 (or to plane 0 when u[1..3] = 0)
// cost 2 bits each, its bit and a 0 group test: that run (run planes) is coded in bulk from
// u[0]'s bits, reversed (below: the highest plane in bit 0) and spread out by the caller.
HCOMM_ZFP_AVX2_FN void top_plane_and_run_avx2(const __m256i* u, const __m256i* sfx, const __m256i* m, __m256i& code0,
                                              __m256i& run, __m256i& below) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  const __m256i k0 = m[0];
  code0 = _mm256_i32gather_epi32(reinterpret_cast<const int*>(enc_table32.v), plane_bits_avx2(u, k0), 4);
  const __m256i m1 = _mm256_blendv_epi8(_mm256_set1_epi32(-1), m[1], _mm256_xor_si256(_mm256_cmpeq_epi32(sfx[1], zero), _mm256_set1_epi32(-1)));
  run = _mm256_max_epi32(_mm256_sub_epi32(_mm256_sub_epi32(k0, m1), one), zero);
  const __m256i topbits = _mm256_andnot_si256(_mm256_cmpeq_epi32(k0, zero),
                                              _mm256_sllv_epi32(u[0], _mm256_and_si256(_mm256_sub_epi32(_mm256_set1_epi32(32), k0), _mm256_set1_epi32(31))));
  below = _mm256_and_si256(bitrev32_avx2(topbits), _mm256_sub_epi32(_mm256_sllv_epi32(one, run), one));  // run <= 31
}

// Bits 0..15 of each 32-bit lane to bits 0, 2, .., 30 (the other bits 0).
HCOMM_ZFP_AVX2_FN __m256i spread2_avx2(__m256i x) {
  x = _mm256_and_si256(x, _mm256_set1_epi32(0xffff));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 8)), _mm256_set1_epi32(0x00ff00ff));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 4)), _mm256_set1_epi32(0x0f0f0f0f));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 2)), _mm256_set1_epi32(0x33333333));
  return _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 1)), _mm256_set1_epi32(0x55555555));
}
// The table code of stepped plane j (plane k = m[0] - j) of every lane: nothing below plane 0
// or from plane j4 on (those are coded in bulk afterwards).
HCOMM_ZFP_AVX2_FN __m256i stepped_plane_code_avx2(const __m256i* u, const __m256i* m, __m256i j, __m256i j4) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i k = _mm256_sub_epi32(m[0], j);
  const __m256i xb = plane_bits_avx2(u, _mm256_max_epi32(k, zero));
  // n = number of m[i] > k (cmpgt gives -1 per true)
  const __m256i nneg = _mm256_add_epi32(_mm256_add_epi32(_mm256_cmpgt_epi32(m[0], k), _mm256_cmpgt_epi32(m[1], k)),
                                        _mm256_add_epi32(_mm256_cmpgt_epi32(m[2], k), _mm256_cmpgt_epi32(m[3], k)));
  const __m256i idx = _mm256_add_epi32(_mm256_slli_epi32(_mm256_sub_epi32(zero, nneg), 4), xb);
  const __m256i code = _mm256_i32gather_epi32(reinterpret_cast<const int*>(enc_table32.v), idx, 4);
  const __m256i keep = _mm256_andnot_si256(_mm256_cmpgt_epi32(zero, k), _mm256_cmpgt_epi32(j4, j));
  return _mm256_and_si256(code, keep);
}

// The batch coders' common start, 8 float blocks (v[0..31], finite) in the 32-bit lanes:
// amax = largest |value| bits, e = block exponent + 1 (the header's), u[i] = coefficient i in
// negabinary, sfx[i] = u[i] | ... | u[3], m[i] = top set plane of sfx[i] (0 when none).
HCOMM_ZFP_AVX2_FN void batch_planes_avx2(const float* v, __m256i& amax, __m256i& e, __m256i* u, __m256i* sfx,
                                         __m256i* m) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  // x[i] lane l = v[4l + i]: four loads and a 4x4 transpose in each 128-bit half (blocks 0..3
  // low, 4..7 high), cheaper than four gathers
  __m256 x[4];
  {
    const __m256 l0 = _mm256_loadu_ps(v), l1 = _mm256_loadu_ps(v + 8), l2 = _mm256_loadu_ps(v + 16),
                 l3 = _mm256_loadu_ps(v + 24);
    const __m256 a = _mm256_permute2f128_ps(l0, l2, 0x20), b = _mm256_permute2f128_ps(l0, l2, 0x31);  // blocks 0|4, 1|5
    const __m256 c = _mm256_permute2f128_ps(l1, l3, 0x20), d = _mm256_permute2f128_ps(l1, l3, 0x31);  // blocks 2|6, 3|7
    const __m256 t0 = _mm256_unpacklo_ps(a, b), t1 = _mm256_unpackhi_ps(a, b);
    const __m256 t2 = _mm256_unpacklo_ps(c, d), t3 = _mm256_unpackhi_ps(c, d);
    x[0] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    x[1] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    x[2] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    x[3] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  }
  const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
  amax = zero;
  for (int i = 0; i < 4; ++i) amax = _mm256_max_epi32(amax, _mm256_and_si256(_mm256_castps_si256(x[i]), absmask));
  e = _mm256_add_epi32(_mm256_srli_epi32(amax, 23), one);
  const __m256i sexp = _mm256_sub_epi32(_mm256_set1_epi32(157), e);  // 30 - (e - 127)
  const __m256i ebias = _mm256_set1_epi32(127);
  // libzfp's scale overflows to +inf for sexp > 127 and x86 converts that to INT_MIN; |x * s|
  // < 2^30 otherwise
  const __m256i tiny = _mm256_cmpgt_epi32(sexp, ebias);
  const __m256 sc = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_min_epi32(sexp, ebias), ebias), 23));
  const __m256i intmin = _mm256_set1_epi32(INT_MIN);
  __m256i q[4];
  for (int i = 0; i < 4; ++i)
    q[i] = _mm256_blendv_epi8(_mm256_cvttps_epi32(_mm256_mul_ps(x[i], sc)), intmin, tiny);
  // fwd_lift, lane-wise (wrapping adds, arithmetic shifts)
  {
    __m256i &a = q[0], &b = q[1], &c = q[2], &d = q[3];
    a = _mm256_srai_epi32(_mm256_add_epi32(a, d), 1); d = _mm256_sub_epi32(d, a);
    c = _mm256_srai_epi32(_mm256_add_epi32(c, b), 1); b = _mm256_sub_epi32(b, c);
    a = _mm256_srai_epi32(_mm256_add_epi32(a, c), 1); c = _mm256_sub_epi32(c, a);
    d = _mm256_srai_epi32(_mm256_add_epi32(d, b), 1); b = _mm256_sub_epi32(b, d);
    d = _mm256_add_epi32(d, _mm256_srai_epi32(b, 1)); b = _mm256_sub_epi32(b, _mm256_srai_epi32(d, 1));
  }
  const __m256i nb = _mm256_set1_epi32(static_cast<int>(0xaaaaaaaau));
  for (int i = 0; i < 4; ++i) u[i] = _mm256_xor_si256(_mm256_add_epi32(q[i], nb), nb);
  // m[i]: top set plane of u[i] | ... | u[3] (0 when none): for y = s >> 1, 0 if y = 0, else
  // floor(log2 y) + 1, from the float exponent of y with each bit that has a set bit above it
  // cleared (no two adjacent bits set: rounding to 24 bits cannot carry into the next power).
  sfx[3] = u[3];
  sfx[2] = _mm256_or_si256(u[2], sfx[3]);
  sfx[1] = _mm256_or_si256(u[1], sfx[2]);
  sfx[0] = _mm256_or_si256(u[0], sfx[1]);
  for (int i = 0; i < 4; ++i) {
    const __m256i y = _mm256_srli_epi32(sfx[i], 1);
    const __m256i top = _mm256_andnot_si256(_mm256_srli_epi32(y, 1), y);
    const __m256i ex = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(top)), 23);
    m[i] = _mm256_max_epi32(_mm256_sub_epi32(ex, _mm256_set1_epi32(126)), zero);
  }
}

// out |= x << at, lane-wise: pairs of lanes (Wide; nothing from at >= 64) or single lanes
// (x.hi ignored; nothing from at >= 32).
template <bool Wide>
HCOMM_ZFP_AVX2_FN void put_bits(wide_bits& out, wide_bits x, __m256i at) {
  if constexpr (Wide) or_wide(out, shl_wide(x, at));
  else out.lo = _mm256_or_si256(out.lo, _mm256_sllv_epi32(x.lo, at));
}
// Encodes 8 float blocks (v[0..31], finite) into bits[0..7], the 8 blocks in the 32-bit
// lanes of one register: Wide = false for 12 <= maxbits <= 32 (rates 3..8; a block is built in
// one lane, and shifts by 32 or more give 0 there, which is what the budget cut wants), Wide =
// true for 33 <= maxbits <= 64 (rates 9..16; a block in a pair of lanes, wide_bits). The bits
// are encode_block's. (AVX2 variant only.)
template <bool Wide>
__attribute__((target("avx2,bmi2,lzcnt"))) inline void encode_batch_f32_avx2(const float* v, unsigned maxbits,
                                                                             u64* bits) {
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  __m256i amax, e, u[4], sfx[4], m[4];
  batch_planes_avx2(v, amax, e, u, sfx, m);
  const __m256i vmax = _mm256_set1_epi32(static_cast<int>(maxbits));
  // header, then one 0 bit per empty plane above m[0]
  wide_bits out{_mm256_add_epi32(_mm256_add_epi32(e, e), one), zero};
  const __m256i left = _mm256_set1_epi32(static_cast<int>(maxbits - 9));
  __m256i pos = _mm256_add_epi32(_mm256_set1_epi32(9), _mm256_min_epi32(_mm256_sub_epi32(_mm256_set1_epi32(31), m[0]), left));
  const __m256i seven = _mm256_set1_epi32(0x7f), fifteen = _mm256_set1_epi32(15);
  // The top plane m[0], then the run of 2-bit planes down to m[1] + 1 coded in bulk (a narrow
  // block keeps at most 23 - its first plane's bits of the run: the low 16 planes suffice).
  __m256i code0, run, below;
  top_plane_and_run_avx2(u, sfx, m, code0, run, below);
  const __m256i jstart = _mm256_add_epi32(run, one);
  {
    put_bits<Wide>(out, {_mm256_and_si256(code0, seven), zero}, pos);
    const __m256i p2 = _mm256_add_epi32(pos, _mm256_and_si256(_mm256_srli_epi32(code0, 8), fifteen));
    const wide_bits rbits{spread2_avx2(below), Wide ? spread2_avx2(_mm256_srli_epi32(below, 16)) : zero};
    const __m256i room = _mm256_max_epi32(_mm256_sub_epi32(vmax, p2), zero);
    put_bits<Wide>(out, rbits, p2);
    pos = _mm256_add_epi32(p2, _mm256_min_epi32(_mm256_add_epi32(run, run), room));
  }
  // The other planes with fewer than 4 significant, one per step through the table, up to
  // plane j4 = m[0] - m[3] + 1 (all of them when u[3] = 0, for which m[3] = 0 says nothing).
  // Each costs at least 2 bits, so budget / 2 + 2 steps fill any budget; stop early once
  // every lane is full or past them.
  const __m256i u3zero = _mm256_cmpeq_epi32(u[3], zero);
  const __m256i j4 = _mm256_add_epi32(_mm256_sub_epi32(m[0], _mm256_andnot_si256(u3zero, m[3])), one);
  const int budget = static_cast<int>(maxbits) - 9;
  const int tmax = budget / 2 + 2 < 32 ? budget / 2 + 2 : 32;
  for (int t0 = 0; t0 < tmax; t0 += 4) {
    for (int t = t0; t < t0 + 4; ++t) {
      const __m256i c = stepped_plane_code_avx2(u, m, _mm256_add_epi32(jstart, _mm256_set1_epi32(t)), j4);
      put_bits<Wide>(out, {_mm256_and_si256(c, seven), zero}, pos);
      pos = _mm256_add_epi32(pos, _mm256_and_si256(_mm256_srli_epi32(c, 8), fifteen));
    }
    const __m256i busy = _mm256_and_si256(_mm256_cmpgt_epi32(vmax, pos),
                                          _mm256_cmpgt_epi32(j4, _mm256_add_epi32(jstart, _mm256_set1_epi32(t0 + 4))));
    if (_mm256_movemask_epi8(busy) == 0) break;
  }
  // From plane k = m[0] - j4 down all four are significant: each plane is its 4 bits verbatim.
  // At least 13 bits precede (9 of header and at least 4 for the top plane: a group test and
  // three 0s when only coefficient 3 is set there), so at most 19 (narrow: 5 planes) or 51
  // (wide: 13 planes) are left. Planes k..k-7 (and k-8..k-15) of coefficient i to byte i (plane
  // k - b at bit 7 - b), then rotated to nibbles (plane k - b in nibble b). Planes below 0 come
  // out as 0 bits and bits past the budget are cut at the end, so the window goes in whole.
  {
    const __m256i k = _mm256_sub_epi32(m[0], j4);
    const __m256i sh = _mm256_sub_epi32(_mm256_set1_epi32(31), _mm256_max_epi32(k, zero));
    __m256i g[4];
    for (int i = 0; i < 4; ++i) g[i] = _mm256_sllv_epi32(u[i], sh);  // plane k at bit 31 (below plane 0: 0s)
    const __m256i top = _mm256_or_si256(
        _mm256_or_si256(byte_move<3, 0>(g[0]), byte_move<3, 1>(g[1])),
        _mm256_or_si256(byte_move<3, 2>(g[2]), _mm256_and_si256(g[3], _mm256_set1_epi32(static_cast<int>(0xff000000u)))));
    wide_bits w{bytes_to_raw_planes(top), zero};
    if constexpr (Wide)
      w.hi = bytes_to_raw_planes(_mm256_or_si256(_mm256_or_si256(byte_move<2, 0>(g[0]), byte_move<2, 1>(g[1])),
                                                 _mm256_or_si256(byte_move<2, 2>(g[2]), byte_move<2, 3>(g[3]))));
    const __m256i ok = _mm256_andnot_si256(_mm256_cmpgt_epi32(zero, k), _mm256_cmpgt_epi32(vmax, pos));
    put_bits<Wide>(out, {_mm256_and_si256(w.lo, ok), _mm256_and_si256(w.hi, ok)}, pos);
  }
  const __m256i keep = _mm256_xor_si256(_mm256_cmpeq_epi32(amax, zero), _mm256_set1_epi32(-1));
  if constexpr (Wide) {
    const __m256i himask =
        maxbits >= 64 ? _mm256_set1_epi32(-1) : _mm256_set1_epi32(static_cast<int>((1u << (maxbits - 32)) - 1));
    const __m256i lo = _mm256_and_si256(out.lo, keep), hi = _mm256_and_si256(_mm256_and_si256(out.hi, himask), keep);
    // (lo, hi) lanes -> 64-bit blocks 0..7
    const __m256i a = _mm256_unpacklo_epi32(lo, hi), b = _mm256_unpackhi_epi32(lo, hi);  // blocks 0,1,4,5 / 2,3,6,7
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(bits), _mm256_permute2x128_si256(a, b, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(bits + 4), _mm256_permute2x128_si256(a, b, 0x31));
  } else {
    const __m256i mask =
        maxbits >= 32 ? _mm256_set1_epi32(-1) : _mm256_set1_epi32(static_cast<int>((1u << maxbits) - 1));
    alignas(32) std::uint32_t o[batch_lanes];
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), _mm256_and_si256(_mm256_and_si256(out.lo, mask), keep));
    for (int l = 0; l < batch_lanes; ++l) bits[l] = o[l];
  }
}

// One plane of every lane (dec_table32_spread): s = the lane's next 7 stream bits (from pos);
// the plane's bit of coefficient i goes to bit 7 - T of byte i of acc (step T of the 8 that
// acc collects; the earliest plane highest).
template <int T>
HCOMM_ZFP_AVX2_FN void plane_step(__m256i s, __m256i vbudget, const int* table, __m256i& pos, __m256i& j, __m256i& n,
                                  __m256i& acc) {
  // r = bits left to the lane (0 once its budget is spent, all 32 planes are done or all four
  // coefficients are significant), at most 7
  const __m256i live = _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(32), j),
                                        _mm256_cmpgt_epi32(_mm256_set1_epi32(4), n));
  const __m256i left = _mm256_and_si256(_mm256_sub_epi32(vbudget, pos), live);
  const __m256i r = _mm256_min_epu32(left, _mm256_set1_epi32(7));
  const __m256i idx = _mm256_add_epi32(_mm256_slli_epi32(_mm256_add_epi32(_mm256_slli_epi32(n, 3), r), 7),
                                       _mm256_and_si256(s, _mm256_set1_epi32(127)));
  const __m256i c = _mm256_i32gather_epi32(table, idx, 4);  // spread x | len << 1 | n' << 4
  pos = _mm256_add_epi32(pos, _mm256_and_si256(_mm256_srli_epi32(c, 1), _mm256_set1_epi32(7)));
  n = _mm256_and_si256(_mm256_srli_epi32(c, 4), _mm256_set1_epi32(7));
  j = _mm256_sub_epi32(j, _mm256_cmpgt_epi32(r, _mm256_setzero_si256()));  // +1 where r > 0
  acc = _mm256_or_si256(acc, _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x01010101)), 7 - T));
}
// Whether any lane has budget and planes left with fewer than 4 coefficients significant.
HCOMM_ZFP_AVX2_FN bool batch_busy(__m256i pos, __m256i j, __m256i n, __m256i vbudget) {
  const __m256i more = _mm256_and_si256(_mm256_cmpgt_epi32(vbudget, pos), _mm256_cmpgt_epi32(_mm256_set1_epi32(32), j));
  return _mm256_movemask_epi8(_mm256_and_si256(more, _mm256_cmpgt_epi32(_mm256_set1_epi32(4), n))) != 0;
}
// Bits 2i -> bit i of each 32-bit lane.
HCOMM_ZFP_AVX2_FN __m256i even_bits_avx2(__m256i x) {
  x = _mm256_and_si256(x, _mm256_set1_epi32(0x55555555));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi32(x, 1)), _mm256_set1_epi32(0x33333333));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi32(x, 2)), _mm256_set1_epi32(0x0F0F0F0F));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi32(x, 4)), _mm256_set1_epi32(0x00FF00FF));
  return _mm256_and_si256(_mm256_or_si256(x, _mm256_srli_epi32(x, 8)), _mm256_set1_epi32(0x0000FFFF));
}
// Index of the lowest set bit of each 32-bit lane (x a power of two or 0; 0 gives -127, a
// huge unsigned value), through the exponent of its float conversion (2^31 converts to -2^31:
// its sign is masked off where bit 31 may be set, Top31).
template <bool Top31>
HCOMM_ZFP_AVX2_FN __m256i lowest_bit_index(__m256i low) {
  __m256i ex = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(low)), 23);
  if constexpr (Top31) ex = _mm256_and_si256(ex, _mm256_set1_epi32(0xff));
  return _mm256_sub_epi32(ex, _mm256_set1_epi32(127));
}
// One batch's decoding state in decode_batches_f32_avx2 (8 blocks, one per 32-bit lane; Wide:
// blocks of 33..64 bits in pairs of lanes, up to 32 stepped planes in 4 accumulators; else
// blocks of at most 32 bits, .hi unused, up to 24 steps in 3).
template <bool Wide>
struct avx2_batch {
  wide_bits words, rest;
  __m256i z, pos, j, n, first, j0, c0b, base, acc[Wide ? 4 : 3];
  // The next stream bits from budget bit p (at least 7 of them, 0 past the budget).
  HCOMM_ZFP_AVX2_FN __m256i next_bits(__m256i p) const {
    if constexpr (Wide) return shr_wide(rest, p).lo;
    else return _mm256_srlv_epi32(rest.lo, p);
  }
};
// The batch's 8 blocks of maxbits bits (block l at stream bit p0 + l maxbits), one per lane.
template <bool Wide>
HCOMM_ZFP_AVX2_FN wide_bits batch_load(const word_reader& rd, std::size_t p0, unsigned maxbits) {
  if constexpr (Wide) {
    if (maxbits == 64 && (p0 & 63u) == 0) {  // rate 16: blocks are whole words
      const __m256 a = _mm256_loadu_ps(reinterpret_cast<const float*>(rd.base + p0 / 8));       // blocks 0..3
      const __m256 b = _mm256_loadu_ps(reinterpret_cast<const float*>(rd.base + p0 / 8 + 32));  // blocks 4..7
      // 32-bit halves: even = lo, odd = hi; shuffle_ps gives blocks 0,1,4,5 | 2,3,6,7 per 64 bits
      const __m256i lo = _mm256_castps_si256(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
      const __m256i hi = _mm256_castps_si256(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
      return {_mm256_permute4x64_epi64(lo, _MM_SHUFFLE(3, 1, 2, 0)), _mm256_permute4x64_epi64(hi, _MM_SHUFFLE(3, 1, 2, 0))};
    }
    alignas(32) std::uint32_t lo[batch_lanes], hi[batch_lanes];
    for (int l = 0; l < batch_lanes; ++l) {
      const u64 w = rd.peek(p0 + static_cast<std::size_t>(l) * maxbits) & low_mask(maxbits);
      lo[l] = static_cast<std::uint32_t>(w);
      hi[l] = static_cast<std::uint32_t>(w >> 32);
    }
    return {_mm256_load_si256(reinterpret_cast<const __m256i*>(lo)), _mm256_load_si256(reinterpret_cast<const __m256i*>(hi))};
  } else {
    if (maxbits == 32 && (p0 & 31u) == 0)  // rate 8: one load per batch
      return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rd.base + p0 / 8)), _mm256_setzero_si256()};
    alignas(32) std::uint32_t w[batch_lanes];
    for (int l = 0; l < batch_lanes; ++l)
      w[l] = static_cast<std::uint32_t>(rd.peek(p0 + static_cast<std::size_t>(l) * maxbits) & low_mask(maxbits));
    return {_mm256_load_si256(reinterpret_cast<const __m256i*>(w)), _mm256_setzero_si256()};
  }
}
// Up to the stepped planes: the run of empty planes, the first plane with a set bit and the
// bulk run of 2-bit planes while only coefficient 0 is significant.
template <bool Wide>
HCOMM_ZFP_AVX2_FN void batch_begin(avx2_batch<Wide>& s, wide_bits words, __m256i vbudget, const int* table) {
  const __m256i zero = _mm256_setzero_si256(), vone = _mm256_set1_epi32(1);
  s.words = words;
  // the budget's bits (0 above it)
  if constexpr (Wide) s.rest = shr_wide(words, _mm256_set1_epi32(9));
  else s.rest = {_mm256_srli_epi32(words.lo, 9), zero};
  // z = empty planes before the first group test 1 (at most the budget, and at most 32: all
  // planes empty), from the lowest set bit of rest | 2^budget.
  if constexpr (Wide) {
    const wide_bits guard = {_mm256_or_si256(s.rest.lo, _mm256_sllv_epi32(vone, vbudget)),
                             _mm256_or_si256(s.rest.hi, _mm256_sllv_epi32(vone, _mm256_sub_epi32(vbudget, _mm256_set1_epi32(32))))};
    const __m256i zlo = lowest_bit_index<true>(_mm256_and_si256(guard.lo, _mm256_sub_epi32(zero, guard.lo)));
    const __m256i zhi = _mm256_add_epi32(lowest_bit_index<true>(_mm256_and_si256(guard.hi, _mm256_sub_epi32(zero, guard.hi))),
                                         _mm256_set1_epi32(32));
    s.z = _mm256_min_epu32(_mm256_blendv_epi8(zlo, zhi, _mm256_cmpeq_epi32(guard.lo, zero)), _mm256_set1_epi32(32));
  } else {  // the budget is at most 23 bits: exact in a float, no sign
    const __m256i guard = _mm256_or_si256(s.rest.lo, _mm256_sllv_epi32(vone, vbudget));
    s.z = lowest_bit_index<false>(_mm256_and_si256(guard, _mm256_sub_epi32(zero, guard)));
  }
  s.pos = s.z;
  s.j = s.z;
  s.n = zero;
  s.first = zero;
  // The first plane with a set bit (afterwards n >= 1), at bit 7 of each coefficient's byte of first.
  plane_step<0>(s.next_bits(s.pos), vbudget, table, s.pos, s.j, s.n, s.first);
  // If only coefficient 0 is significant, a run of 2-bit planes follows (its bit, then a 0
  // group test) up to the plane whose group test is 1: decoded in bulk into c0b, the bits of
  // coefficient 0 from plane 31 - j0 down.
  s.j0 = s.j;
  const __m256i room = _mm256_sub_epi32(vbudget, s.pos);  // >= 0
  __m256i tests, c0;
  if constexpr (Wide) {  // up to 27 planes of 2 bits: the tests and coefficient-0 bits of both halves
    const wide_bits sbits = shr_wide(s.rest, s.pos), sb1 = shr_wide(sbits, vone);
    tests = _mm256_or_si256(even_bits_avx2(sb1.lo), _mm256_slli_epi32(even_bits_avx2(sb1.hi), 16));
    c0 = _mm256_or_si256(even_bits_avx2(sbits.lo), _mm256_slli_epi32(even_bits_avx2(sbits.hi), 16));
  } else {  // at most 11 planes: 16 tests are plenty, and a guard at 16 keeps the float exact
    const __m256i sbits = _mm256_srlv_epi32(s.rest.lo, s.pos);
    tests = _mm256_or_si256(even_bits_avx2(_mm256_srli_epi32(sbits, 1)), _mm256_set1_epi32(1 << 16));
    c0 = even_bits_avx2(sbits);
  }
  __m256i run = lowest_bit_index<Wide>(_mm256_and_si256(tests, _mm256_sub_epi32(zero, tests)));  // no test 1: huge
  run = _mm256_min_epu32(run, _mm256_srli_epi32(room, 1));
  run = _mm256_min_epu32(run, _mm256_sub_epi32(_mm256_set1_epi32(32), s.j));
  run = _mm256_and_si256(run, _mm256_cmpeq_epi32(s.n, vone));
  s.c0b = _mm256_and_si256(c0, _mm256_sub_epi32(_mm256_sllv_epi32(vone, run), vone));
  s.pos = _mm256_add_epi32(s.pos, _mm256_add_epi32(run, run));
  s.j = _mm256_add_epi32(s.j, run);
  s.base = s.j;
  for (auto& a : s.acc) a = zero;
}
// Steps T0..T0+3 (bits 7 - T of each byte of accumulator A) of K batches, interleaved: each
// step is a chain of dependent gathers, so K independent chains keep the gather unit busy.
template <int K, int A, int T0, bool Wide>
HCOMM_ZFP_AVX2_FN void batch_steps4(avx2_batch<Wide>* s, __m256i vbudget, const int* table) {
  for (int q = 0; q < K; ++q) plane_step<T0>(s[q].next_bits(s[q].pos), vbudget, table, s[q].pos, s[q].j, s[q].n, s[q].acc[A]);
  for (int q = 0; q < K; ++q) plane_step<T0 + 1>(s[q].next_bits(s[q].pos), vbudget, table, s[q].pos, s[q].j, s[q].n, s[q].acc[A]);
  for (int q = 0; q < K; ++q) plane_step<T0 + 2>(s[q].next_bits(s[q].pos), vbudget, table, s[q].pos, s[q].j, s[q].n, s[q].acc[A]);
  for (int q = 0; q < K; ++q) plane_step<T0 + 3>(s[q].next_bits(s[q].pos), vbudget, table, s[q].pos, s[q].j, s[q].n, s[q].acc[A]);
}
template <int K, bool Wide>
HCOMM_ZFP_AVX2_FN bool batches_busy(const avx2_batch<Wide>* s, __m256i vbudget) {
  bool busy = false;
  for (int q = 0; q < K; ++q) busy |= batch_busy(s[q].pos, s[q].j, s[q].n, vbudget);
  return busy;
}
// Coefficient I's bits from the batch's pieces, each placed at its planes (bit p = plane p).
// A piece with coefficient I's bits in byte I, bit b = plane 24 + b - off, is moved to the top
// byte and shifted right by off (shifts of 32 or more give 0: planes below 0 fall off).
template <int I, bool Wide>
HCOMM_ZFP_AVX2_FN __m256i batch_coefficient(const avx2_batch<Wide>& s, wide_bits raw) {
  // steps: acc[w] bit b of byte I = plane 31 - base - 8w - (7 - b), so acc[0], acc[1], ...
  // are bytes 3, 2, ... of one word shifted right by base
  __m256i steps = _mm256_or_si256(_mm256_or_si256(byte_move<I, 3>(s.acc[0]), byte_move<I, 2>(s.acc[1])),
                                  byte_move<I, 1>(s.acc[2]));
  if constexpr (Wide) steps = _mm256_or_si256(steps, byte_move<I, 0>(s.acc[3]));
  __m256i u = _mm256_srlv_epi32(steps, s.base);
  u = _mm256_or_si256(u, _mm256_srlv_epi32(byte_move<I, 3>(s.first), s.z));  // bit 7: plane 31 - z
  u = _mm256_or_si256(u, _mm256_srlv_epi32(byte_move<I, 3>(raw.lo), s.j));   // bit 7 - k: plane 31 - j - k
  if constexpr (Wide)  // raw planes 8..15: bit 7 - k = plane 31 - j - 8 - k
    u = _mm256_or_si256(u, _mm256_srlv_epi32(byte_move<I, 3>(raw.hi), _mm256_add_epi32(s.j, _mm256_set1_epi32(8))));
  if constexpr (I == 0)  // c0b bit m = plane 31 - j0 - m
    u = _mm256_or_si256(u, _mm256_srlv_epi32(bitrev32_avx2(s.c0b), s.j0));
  return u;
}
// (float) q * fa * fb, in that order, or +0 outside keep.
HCOMM_ZFP_AVX2_FN __m256 batch_value(__m256i q, __m256 fa, __m256 fb, __m256 keep) {
  return _mm256_and_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), fa), fb), keep);
}
// The raw 4-bit planes after all four are significant, then every coefficient's bits to its
// planes, then the values (negabinary, inverse lift, scale by the block exponent, as
// decode_block), stored block by block.
template <bool Wide>
HCOMM_ZFP_AVX2_FN void batch_finish(const avx2_batch<Wide>& s, float* v) {
  // Once all four are significant, the rest of the budget is raw 4-bit planes from plane
  // 31 - j on (bits past the budget are 0 in rest; planes past plane 0 fall off the end):
  // at most 19 bits (5 planes) in a narrow block, 51 (13 planes) in a wide one.
  const __m256i raw_ok = _mm256_and_si256(_mm256_cmpeq_epi32(s.n, _mm256_set1_epi32(4)),
                                          _mm256_cmpgt_epi32(_mm256_set1_epi32(32), s.j));
  wide_bits raw;
  if constexpr (Wide) {
    const wide_bits r = shr_wide(s.rest, s.pos);
    raw = {raw_planes_to_bytes(_mm256_and_si256(r.lo, raw_ok)), raw_planes_to_bytes(_mm256_and_si256(r.hi, raw_ok))};
  } else {
    raw = {raw_planes_to_bytes(_mm256_and_si256(_mm256_srlv_epi32(s.rest.lo, s.pos), raw_ok)), _mm256_setzero_si256()};
  }
  const __m256i nb = _mm256_set1_epi32(static_cast<int>(traits<float>::nbmask));
  // negabinary -> two's complement, then inv_lift (wrapping 32-bit arithmetic, >> arithmetic)
  __m256i x = _mm256_sub_epi32(_mm256_xor_si256(batch_coefficient<0>(s, raw), nb), nb);
  __m256i y = _mm256_sub_epi32(_mm256_xor_si256(batch_coefficient<1>(s, raw), nb), nb);
  __m256i z = _mm256_sub_epi32(_mm256_xor_si256(batch_coefficient<2>(s, raw), nb), nb);
  __m256i w = _mm256_sub_epi32(_mm256_xor_si256(batch_coefficient<3>(s, raw), nb), nb);
  y = _mm256_add_epi32(y, _mm256_srai_epi32(w, 1));
  w = _mm256_sub_epi32(w, _mm256_srai_epi32(y, 1));
  y = _mm256_add_epi32(y, w);
  w = _mm256_sub_epi32(_mm256_slli_epi32(w, 1), y);
  z = _mm256_add_epi32(z, x);
  x = _mm256_sub_epi32(_mm256_slli_epi32(x, 1), z);
  y = _mm256_add_epi32(y, z);
  z = _mm256_sub_epi32(_mm256_slli_epi32(z, 1), y);
  w = _mm256_add_epi32(w, x);
  x = _mm256_sub_epi32(_mm256_slli_epi32(x, 1), w);
  // 2^(e - 157) as two normal factors fa * fb, applied in that order: the same result as
  // libzfp's one scale, because q * fa is a float times a power of 2 that neither overflows
  // nor underflows (exact); fb = 0 below e = 8 (libzfp's scale is 0 below the smallest
  // subnormal); a zero block (header bit 0) gives +0.
  const __m256i e = _mm256_and_si256(_mm256_srli_epi32(s.words.lo, 1), _mm256_set1_epi32(0xff));
  const __m256i d = _mm256_sub_epi32(e, _mm256_set1_epi32(157));
  const __m256i sa = _mm256_srai_epi32(d, 1), sb = _mm256_sub_epi32(d, sa);
  const __m256i bias = _mm256_set1_epi32(traits<float>::ebias);
  const __m256 fa = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(sa, bias), 23));
  const __m256 fb = _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(_mm256_add_epi32(sb, bias), 23),
                                                         _mm256_cmpgt_epi32(e, _mm256_set1_epi32(7))));
  const __m256 keep = _mm256_castsi256_ps(_mm256_sub_epi32(_mm256_setzero_si256(),
                                                           _mm256_and_si256(s.words.lo, _mm256_set1_epi32(1))));
  const __m256 c0 = batch_value(x, fa, fb, keep), c1 = batch_value(y, fa, fb, keep);
  const __m256 c2 = batch_value(z, fa, fb, keep), c3 = batch_value(w, fa, fb, keep);
  // 4 coefficients x 8 lanes -> 8 blocks of 4 values
  const __m256 t0 = _mm256_unpacklo_ps(c0, c1), t1 = _mm256_unpackhi_ps(c0, c1);  // lanes 0,1,4,5 / 2,3,6,7
  const __m256 t2 = _mm256_unpacklo_ps(c2, c3), t3 = _mm256_unpackhi_ps(c2, c3);
  const __m256 b04 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), b15 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 b26 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), b37 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps(v, _mm256_permute2f128_ps(b04, b15, 0x20));
  _mm256_storeu_ps(v + 8, _mm256_permute2f128_ps(b26, b37, 0x20));
  _mm256_storeu_ps(v + 16, _mm256_permute2f128_ps(b04, b15, 0x31));
  _mm256_storeu_ps(v + 24, _mm256_permute2f128_ps(b26, b37, 0x31));
}
// K consecutive batches from stream bit p0 into v[0 .. 32K).
template <int K, bool Wide>
HCOMM_ZFP_AVX2_FN void decode_batches(const word_reader& rd, std::size_t p0, unsigned maxbits, __m256i vbudget,
                                      const int* table, float* v) {
  avx2_batch<Wide> s[K];
  for (int q = 0; q < K; ++q)
    batch_begin(s[q], batch_load<Wide>(rd, p0 + static_cast<std::size_t>(q) * batch_lanes * maxbits, maxbits), vbudget,
                table);
  // Then one plane per step while fewer than 4 are significant; step t -> accumulator t / 8.
  // A live lane steps only while j < 32 and starts at base >= 1, so at most 31 steps (4
  // accumulators, wide); and each stepped plane but the last takes at least 2 bits, so at
  // most 13 in a narrow budget of 23 bits (3 accumulators) and 27 in a wide one of 55.
  if (!batches_busy<K>(s, vbudget)) goto done;
  batch_steps4<K, 0, 0>(s, vbudget, table);
  if (!batches_busy<K>(s, vbudget)) goto done;
  batch_steps4<K, 0, 4>(s, vbudget, table);
  if (!batches_busy<K>(s, vbudget)) goto done;
  batch_steps4<K, 1, 0>(s, vbudget, table);
  if (!batches_busy<K>(s, vbudget)) goto done;
  batch_steps4<K, 1, 4>(s, vbudget, table);
  if (!batches_busy<K>(s, vbudget)) goto done;
  batch_steps4<K, 2, 0>(s, vbudget, table);
  if (!batches_busy<K>(s, vbudget)) goto done;
  batch_steps4<K, 2, 4>(s, vbudget, table);
  if constexpr (Wide) {
    if (!batches_busy<K>(s, vbudget)) goto done;
    batch_steps4<K, 3, 0>(s, vbudget, table);
    if (!batches_busy<K>(s, vbudget)) goto done;
    batch_steps4<K, 3, 4>(s, vbudget, table);
  }
done:
  for (int q = 0; q < K; ++q) batch_finish(s[q], v + 4 * batch_lanes * q);
}

// Wide = false: decodes `batches` x 8 float blocks of 12 <= maxbits <= 32 bits (rates 3..8; block l of
// batch b at stream bit p0 + (8b + l) maxbits) into v, in AVX2 intrinsics with 8 blocks in
// the 32-bit lanes of one register. The same decoding as decode_block, arranged so that
// every step costs the same in every lane: after the run of empty planes (counted through a
// float conversion of the lowest set bit), the first plane and the bulk run of 2-bit planes
// while only coefficient 0 is significant, each step decodes one plane of every lane through
// dec_table32_spread (one vpgatherdd), budget ends inside a plane included; a lane that is
// done (or has all four significant) reads r = 0 bits and decodes nothing. The raw 4-bit
// planes after all four are significant are taken in bulk at the end. The steps collect each
// coefficient's plane bits in a byte of its own, relative to the lane's first stepped plane
// (step t -> bit 7 - t % 8 of accumulator t / 8: every step of a live lane is one plane), so
// their position is a compile-time shift; batch_finish moves every piece (first plane, bulk
// run of coefficient 0, stepped planes, raw planes) to its absolute planes and forms the
// values, all in AVX2. Two batches are decoded side by side (their steps interleaved) so that
// one's gathers run while the other's wait; the steps stop when both are done.
// decode_batches_f32_avx2<true>: the same for 33 <= maxbits <= 64 (rates 9..16), each block in a
// pair of 32-bit lanes (wide_bits). (Called from the AVX2 variant of decode_group_kernel only.)
template <bool Wide>
__attribute__((target("avx2,bmi2,lzcnt"))) inline void decode_batches_f32_avx2(const word_reader& rd, std::size_t p0,
                                                                               unsigned maxbits, std::size_t batches,
                                                                               float* v) {
  const __m256i vbudget = _mm256_set1_epi32(static_cast<int>(maxbits - 9));  // bits after the 9-bit header
  const int* table = reinterpret_cast<const int*>(dec_table32_spread.v);
  const std::size_t step = batch_lanes * maxbits;
  std::size_t b = 0;
  for (; b + 2 <= batches; b += 2, p0 += 2 * step, v += 8 * batch_lanes)
    decode_batches<2, Wide>(rd, p0, maxbits, vbudget, table, v);
  for (; b < batches; ++b, p0 += step, v += 4 * batch_lanes) decode_batches<1, Wide>(rd, p0, maxbits, vbudget, table, v);
}
#undef HCOMM_ZFP_AVX2_FN
#endif

// ---- groups of 64 blocks ------------------------------------------------------------------
inline constexpr std::size_t group_blocks = 64;
inline constexpr std::size_t group_values = 4 * group_blocks;

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
  HCOMM_HOST_DEVICE void operator()(std::size_t g) const { HCOMM_ZFP_DISPATCH(g); }
  HCOMM_ZFP_AVX2_VARIANT
  template <bool Batch>
  HCOMM_ZFP_INLINE void body(std::size_t g) const {
    const std::size_t first = g * group_values;
    const std::size_t nvals = n - first < group_values ? n - first : group_values;
    const std::size_t nblk = (nvals + 3) / 4;
    word_writer wr{stream + g * (group_blocks * maxbits / 64)};
    u64 nonfinite = 0;
    for (std::size_t b = 0; b < nblk; ++b) {
#if HCOMM_ZFP_CLONES
      if constexpr (Batch && std::is_same_v<T, float>) {
        // Eight whole blocks of finite values at once (the common case; float blocks are 12..64
        // bits at rates 3..16).
        if (maxbits >= 12 && maxbits <= 64 && b % batch_lanes == 0 && nvals >= 4 * (b + batch_lanes)) {  // whole blocks only
          const float* p = in + first + 4 * b;
          std::uint32_t big = 0;
          for (int i = 0; i < 4 * batch_lanes; ++i) {
            const std::uint32_t a = to_bits(p[i]) & traits<float>::absmask;
            big = big > a ? big : a;
          }
          if (big < traits<float>::expmask) {
            u64 bits[batch_lanes];
            if (maxbits <= 32) encode_batch_f32_avx2<false>(p, maxbits, bits);
            else encode_batch_f32_avx2<true>(p, maxbits, bits);
            for (int l = 0; l < batch_lanes; ++l) wr.put(bits[l], maxbits);
            b += batch_lanes - 1;
            continue;
          }
        }
      }
#endif
      const T* p = in + first + 4 * b;
      const unsigned m = nvals - 4 * b < 4 ? static_cast<unsigned>(nvals - 4 * b) : 4u;
      T v[4] = {T(0), T(0), T(0), T(0)};
      unsigned mask = 0;
      if (m == 4) {
        std::memcpy(v, p, sizeof v);
        // Non-finite values have the largest magnitude bit patterns: one test per block.
        using U = typename traits<T>::U;
        const U a0 = to_bits(v[0]) & traits<T>::absmask, a1 = to_bits(v[1]) & traits<T>::absmask;
        const U a2 = to_bits(v[2]) & traits<T>::absmask, a3 = to_bits(v[3]) & traits<T>::absmask;
        const U a01 = a0 > a1 ? a0 : a1, a23 = a2 > a3 ? a2 : a3;
        if ((a01 > a23 ? a01 : a23) >= traits<T>::expmask)
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
      if (maxbits <= 64) {
        block_writer_small bw;
        encode_block<T>(v, maxbits, bw);
        wr.put(bw.acc, maxbits);
      } else {
        encode_block<T>(v, maxbits, wr);
      }
    }
    wr.flush();
    counts[g] = nonfinite;
  }
};

// Decodes group g of the stream (nwords words, followed by at least 8 more payload bytes).
template <class T>
struct decode_group_kernel {
  const unsigned char* stream;  // little-endian 64-bit words, possibly unaligned
  std::size_t nwords;
  std::size_t n;
  unsigned maxbits;
  T* out;
  HCOMM_HOST_DEVICE void operator()(std::size_t g) const { HCOMM_ZFP_DISPATCH(g); }
  HCOMM_ZFP_AVX2_VARIANT
  template <bool Batch>
  HCOMM_ZFP_INLINE void body(std::size_t g) const {
    const std::size_t first = g * group_values;
    const std::size_t nvals = n - first < group_values ? n - first : group_values;
    const std::size_t nblk = (nvals + 3) / 4;
    const word_reader rd{stream};
    std::size_t p = g * group_blocks * maxbits;
    std::size_t b = 0;
#if HCOMM_ZFP_CLONES
    if constexpr (Batch && std::is_same_v<T, float>) {
      if (maxbits >= 12 && maxbits <= 64) {  // whole batches of 8 blocks (rates 3..16)
        const std::size_t batches = nvals / (4 * batch_lanes);
        if (maxbits <= 32) decode_batches_f32_avx2<false>(rd, p, maxbits, batches, out + first);
        else decode_batches_f32_avx2<true>(rd, p, maxbits, batches, out + first);
        b = batches * batch_lanes;
        p += b * maxbits;
      }
    }
#endif
    for (; b < nblk; ++b, p += maxbits) {
      T* o = out + first + 4 * b;
      T v[4];
      T* dst = nvals - 4 * b >= 4 ? o : v;
      if (maxbits <= 64) {
        decode_block<T>(block_source_small{rd.peek(p) & low_mask(maxbits)}, maxbits, dst);
      } else {
        decode_block<T>(block_source_stream{&rd, p}, maxbits, dst);
      }
      if (dst == v)
        for (std::size_t j = 0; j < nvals - 4 * b; ++j) o[j] = v[j];
    }
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
