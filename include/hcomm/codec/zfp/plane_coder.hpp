// hcomm/codec/zfp/plane_coder.hpp: one block of 4 values to exactly maxbits bits and back,
// bit for bit as libzfp 1.0 in fixed-rate mode: block-floating-point, the lifting transform,
// negabinary, then the embedded coding of bit planes from the top (table driven while fewer
// than 4 coefficients are significant, 16 planes per word in bulk afterwards).
//
// These block-at-a-time coders are what every executor runs, for every type and rate; the
// AVX2 batch coders (avx2/) code 8 float blocks at once with the same bits.
#pragma once
#include <cstdint>

#include "hcomm/codec/zfp/bit_planes.hpp"
#include "hcomm/codec/zfp/plane_tables.hpp"
#include "hcomm/codec/zfp/traits.hpp"
#include "hcomm/codec/zfp/transform.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec::zfp_detail {

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
}  // namespace hcomm::codec::zfp_detail
