// hcomm/codec/zfp/avx2/lanes.hpp: lane-wise bit operations on AVX2 registers for the ZFP
// batch coders (encode_batch.hpp, decode_batch.hpp), which hold 8 float blocks in the 32-bit
// lanes of a register (a block over 32 bits in a pair of lanes: wide_bits). Host-only,
// compiled for AVX2 through target attributes (no build flag needed).
#pragma once
#include "hcomm/core/cpu_features.hpp"

#if HCOMM_X86_VARIANTS
#include <immintrin.h>

// Every helper of the batch coders: compiled for AVX2, and inlined into its caller.
#define HCOMM_ZFP_AVX2_FN __attribute__((target("avx2,bmi2,lzcnt"), always_inline)) inline

namespace hcomm::codec::zfp_detail::avx2 {

// Blocks per batch: one per 32-bit lane.
inline constexpr int batch_lanes = 8;

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

// Bits 0..15 of each 32-bit lane to bits 0, 2, .., 30 (the other bits 0).
HCOMM_ZFP_AVX2_FN __m256i spread2_avx2(__m256i x) {
  x = _mm256_and_si256(x, _mm256_set1_epi32(0xffff));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 8)), _mm256_set1_epi32(0x00ff00ff));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 4)), _mm256_set1_epi32(0x0f0f0f0f));
  x = _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 2)), _mm256_set1_epi32(0x33333333));
  return _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 1)), _mm256_set1_epi32(0x55555555));
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

}  // namespace hcomm::codec::zfp_detail::avx2
#endif  // HCOMM_X86_VARIANTS
