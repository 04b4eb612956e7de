// hcomm/codec/zfp/avx2/decode_batch.hpp: the ZFP decoder's AVX2 batch coder: 8 float blocks
// of 12..64 bits at once (two batches interleaved), the same values as decode_block
// (../plane_coder.hpp) for any bit pattern.
#pragma once
#include "hcomm/core/cpu_features.hpp"

#if HCOMM_X86_VARIANTS
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "hcomm/codec/zfp/avx2/lanes.hpp"
#include "hcomm/codec/zfp/bit_planes.hpp"
#include "hcomm/codec/zfp/bit_stream.hpp"
#include "hcomm/codec/zfp/plane_tables.hpp"
#include "hcomm/codec/zfp/traits.hpp"

namespace hcomm::codec::zfp_detail::avx2 {

// A decoder plane table: 5 * 8 * 128 entries, index (n * 8 + r) * 128 + s (n significant,
// r budget bits left, s the next 7 stream bits).
struct dec_table32_t {
  std::uint32_t v[5 * 8 * 128];
};

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

}  // namespace hcomm::codec::zfp_detail::avx2
#endif  // HCOMM_X86_VARIANTS
