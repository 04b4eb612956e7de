// hcomm/codec/mpc/avx2/chunk_f64.hpp: MPC's float64 chunks in AVX2 intrinsics, the same
// transform as the portable chunk kernels, bit for bit.
//
// The same organisation as chunk_f32.hpp on 4 x 4 blocks of 64-bit words (a ymm register is
// 4 words). The chunk becomes four 64-row x 4-lane sub-matrices (sub-matrix s holds groups
// 4s..4s+3, row k = word k of those groups, one ymm register; at m + 256 s, row k at + 4 k).
// Pass 1 reads 8 words of 4 groups (two 4 x 4 blocks, rows 8q..8q+7), transposes and runs
// rounds 4, 2, 1 in registers; pass 2 runs rounds 32, 16, 8 (rows t + 8 i of a sub-matrix);
// pass 3 is the plane delta, bitmaps and left-pack (4 words per vpermd). Rounds 16 .. 1
// move bits inside 32-bit halves of a word, so the float rounds serve unchanged.
#pragma once
#include "hcomm/core/cpu_features.hpp"

#if HCOMM_X86_VARIANTS
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/codec/mpc/avx2/lanes.hpp"
#include "hcomm/codec/mpc/format.hpp"

namespace hcomm::codec::mpc_detail::avx2 {

// Rounds 32, 16 and 8 of one sub-matrix (64 rows of 4 lanes), in place.
HCOMM_MPC_AVX2_FN void rounds_32_16_8(std::uint64_t* sub) {
  for (unsigned t = 0; t < 8; ++t) {
    std::uint64_t* r = sub + t * 4;
    __m256i y[8];
    for (unsigned i = 0; i < 8; ++i) y[i] = load(r + i * 32);
    swap_round32(y[0], y[4]);
    swap_round32(y[1], y[5]);
    swap_round32(y[2], y[6]);
    swap_round32(y[3], y[7]);
    swap_round16(y[0], y[2]);
    swap_round16(y[1], y[3]);
    swap_round16(y[4], y[6]);
    swap_round16(y[5], y[7]);
    swap_round8(y[0], y[1]);
    swap_round8(y[2], y[3]);
    swap_round8(y[4], y[5]);
    swap_round8(y[6], y[7]);
    for (unsigned i = 0; i < 8; ++i) store(r + i * 32, y[i]);
  }
}
// 4 x 4 transposition of 64-bit words: afterwards lane j of r[t] is lane t of the old r[j].
HCOMM_MPC_AVX2_FN void transpose4(__m256i* r) {
  const __m256i t0 = _mm256_unpacklo_epi64(r[0], r[1]), t1 = _mm256_unpackhi_epi64(r[0], r[1]);
  const __m256i t2 = _mm256_unpacklo_epi64(r[2], r[3]), t3 = _mm256_unpackhi_epi64(r[2], r[3]);
  r[0] = _mm256_permute2x128_si256(t0, t2, 0x20);
  r[1] = _mm256_permute2x128_si256(t1, t3, 0x20);
  r[2] = _mm256_permute2x128_si256(t0, t2, 0x31);
  r[3] = _mm256_permute2x128_si256(t1, t3, 0x31);
}
// Inclusive prefix sum over the 4 lanes of 64 bits.
HCOMM_MPC_AVX2_FN __m256i scan4(__m256i x) {
  x = _mm256_add_epi64(x, _mm256_slli_si256(x, 8));
  const __m256i t = _mm256_permute4x64_epi64(x, 0x50);  // lanes 0, 0, 1, 1
  return _mm256_add_epi64(x, _mm256_blend_epi32(t, _mm256_setzero_si256(), 0x0F));
}

// pack_step on 4 lanes of 64 bits (4 words stored).
HCOMM_MPC_AVX2_FN std::uint64_t* pack_step4(std::uint64_t* p, const std::uint64_t* row, __m256i& prev, __m256i& bm,
                                            __m256i bit) {
  const __m256i x = load(row);
  const __m256i d = _mm256_sub_epi64(x, prev);
  prev = x;
  const __m256i z = _mm256_cmpeq_epi64(d, _mm256_setzero_si256());
  const unsigned keep = ~static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(z))) & 0xFu;
  bm = _mm256_or_si256(bm, _mm256_andnot_si256(z, bit));
  store(p, _mm256_permutevar8x32_epi32(d, lanes_of(pack_table4, keep)));
  return p + _mm_popcnt_u32(keep);
}
// expand_step on 4 lanes of 64 bits (reads 4 words at q).
HCOMM_MPC_AVX2_FN const unsigned char* expand_step4(const unsigned char* q, std::uint64_t* row, __m256i& c,
                                                    __m256i& acc) {
  const __m256i t = _mm256_slli_epi64(c, 63);  // bit k of each bitmap in the sign bit
  c = _mm256_srli_epi64(c, 1);
  const unsigned mask = static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(t)));
  const __m256i x = _mm256_permutevar8x32_epi32(load(q), lanes_of(expand_table4, mask));
  const __m256i kept = _mm256_castpd_si256(
      _mm256_blendv_pd(_mm256_setzero_pd(), _mm256_castsi256_pd(x), _mm256_castsi256_pd(t)));
  acc = _mm256_add_epi64(acc, kept);
  store(row, acc);
  return q + 8 * _mm_popcnt_u32(mask);
}


// Encodes one chunk of 1024 doubles (as words) into out; as encode_f32 (out must have 4
// words of room past the chunk's worst case).
template <bool Residuals>
HCOMM_MPC_AVX2_FN std::size_t encode_f64(const unsigned char* src, unsigned dim, unsigned groups, std::uint64_t* out,
                                         const unsigned char* pf, const unsigned char* pf_end) {
  alignas(32) std::uint64_t m[chunk_values];  // sub-matrix s at m + 256 s, row k at + 4 k
  alignas(32) std::uint64_t head[96];         // 32 zero words, then group 0's values
  if constexpr (!Residuals) {
    std::memset(head, 0, 256);
    std::memcpy(head + 32, src, 512);
  }
  const unsigned char* head0 = reinterpret_cast<const unsigned char*>(head + 32);
  const std::size_t back = std::size_t(dim) * 8;
  // Pass 1: delta, 4 x 4 block transpositions, rounds 4, 2, 1 on 8 rows.
  for (unsigned s = 0; s < 4; ++s)
    for (unsigned q = 0; q < 8; ++q) {
      if ((q & 1) == 0) prefetch_part(pf, pf_end, s * 4 + q / 2);
      __m256i y[8];
      for (unsigned h = 0; h < 2; ++h) {
        const unsigned w = q * 8 + h * 4;  // first word of the block
        for (unsigned j = 0; j < 4; ++j) {
          const unsigned g = s * 4 + j;
          if constexpr (Residuals) {
            y[h * 4 + j] = load(src + (g * 64 + w) * 8);
          } else {
            const unsigned char* p = (g == 0 ? head0 : src + g * 512) + w * 8;
            y[h * 4 + j] = _mm256_sub_epi64(load(p), load(p - back));
          }
        }
        transpose4(y + h * 4);
      }
      rounds_421(y);
      for (unsigned t = 0; t < 8; ++t) store(m + s * 256 + (q * 8 + t) * 4, y[t]);
    }
  // Pass 2: rounds 32, 16, 8.
  for (unsigned s = 0; s < 4; ++s) rounds_32_16_8(m + s * 256);
  // Pass 3: plane delta, bitmaps, left-packing row by row (row k of groups 0..15).
  std::uint64_t* p = out + groups;
  const __m256i zero = _mm256_setzero_si256();
  __m256i prev0 = zero, prev1 = zero, prev2 = zero, prev3 = zero;
  __m256i bm0 = zero, bm1 = zero, bm2 = zero, bm3 = zero;
  for (unsigned k = 0; k < 64; ++k) {
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(std::uint64_t(1) << k));
    p = pack_step4(p, m + k * 4, prev0, bm0, bit);
    p = pack_step4(p, m + 256 + k * 4, prev1, bm1, bit);
    p = pack_step4(p, m + 512 + k * 4, prev2, bm2, bit);
    p = pack_step4(p, m + 768 + k * 4, prev3, bm3, bit);
  }
  if (groups == 16) {
    store(out, bm0);
    store(out + 4, bm1);
    store(out + 8, bm2);
    store(out + 12, bm3);
  } else {
    alignas(32) std::uint64_t b[16];
    store(b, bm0);
    store(b + 4, bm1);
    store(b + 8, bm2);
    store(b + 12, bm3);
    std::memcpy(out, b, groups * 8);
  }
  return groups + static_cast<std::size_t>(p - (out + groups));
}

// Decodes one chunk of doubles; as decode_f32 (packed readable for 4 words past the last one).
HCOMM_MPC_AVX2_FN void decode_f64(const unsigned char* bitmaps, const unsigned char* packed, unsigned groups,
                                  unsigned dim, std::size_t count, unsigned char* dst, bool stream,
                                  const unsigned char* pf, const unsigned char* pf_end) {
  alignas(32) std::uint64_t b[16] = {};
  if (groups == 16) {
    store(b, load(bitmaps));
    store(b + 4, load(bitmaps + 32));
    store(b + 8, load(bitmaps + 64));
    store(b + 12, load(bitmaps + 96));
  } else {
    std::memcpy(b, bitmaps, groups * 8);
  }
  alignas(32) std::uint64_t m[chunk_values];
  // Pass 1: expansion and the running sum down the planes.
  {
    __m256i c0 = load(b), c1 = load(b + 4), c2 = load(b + 8), c3 = load(b + 12);
    const __m256i zero = _mm256_setzero_si256();
    __m256i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
    const unsigned char* q = packed;
    for (unsigned k = 0; k < 64; ++k) {
      if ((k & 3) == 0) prefetch_part(pf, pf_end, k / 4);
      q = expand_step4(q, m + k * 4, c0, a0);
      q = expand_step4(q, m + 256 + k * 4, c1, a1);
      q = expand_step4(q, m + 512 + k * 4, c2, a2);
      q = expand_step4(q, m + 768 + k * 4, c3, a3);
    }
  }
  // Pass 2: rounds 32, 16, 8.
  for (unsigned s = 0; s < 4; ++s) rounds_32_16_8(m + s * 256);
  if (dim == 1 && count == chunk_values) {
    // Pass 3: rounds 4, 2, 1 and each group's running sum down its words.
    for (unsigned s = 0; s < 4; ++s) {
      __m256i carry = _mm256_setzero_si256();
      for (unsigned q = 0; q < 8; ++q) {
        std::uint64_t* r = m + s * 256 + q * 32;
        __m256i y[8];
        for (unsigned t = 0; t < 8; ++t) y[t] = load(r + t * 4);
        rounds_421(y);
        y[0] = _mm256_add_epi64(y[0], carry);
        for (unsigned t = 1; t < 8; ++t) y[t] = _mm256_add_epi64(y[t], y[t - 1]);
        carry = y[7];
        for (unsigned t = 0; t < 8; ++t) store(r + t * 4, y[t]);
      }
    }
    // Pass 4: plus the sum of the groups before, back to value order, out (or, to be
    // streamed out, into v).
    alignas(32) std::uint64_t v[chunk_values];
    unsigned char* o = stream ? reinterpret_cast<unsigned char*>(v) : dst;
    __m256i before = _mm256_setzero_si256();
    for (unsigned s = 0; s < 4; ++s) {
      const __m256i totals = load(m + s * 256 + 63 * 4);
      const __m256i incl = scan4(totals);
      const __m256i add = _mm256_add_epi64(_mm256_sub_epi64(incl, totals), before);
      before = _mm256_add_epi64(before, _mm256_permute4x64_epi64(incl, 0xFF));
      for (unsigned kb = 0; kb < 16; ++kb) {
        const std::uint64_t* r = m + s * 256 + kb * 16;
        __m256i x[4];
        for (unsigned t = 0; t < 4; ++t) x[t] = _mm256_add_epi64(load(r + t * 4), add);
        transpose4(x);
        for (unsigned j = 0; j < 4; ++j) store(o + ((s * 4 + j) * 64 + kb * 4) * 8, x[j]);
      }
    }
    if (stream) {
      stream_copy(dst, o, chunk_values * 8);
      _mm_sfence();
    }
    return;
  }
  // Other strides, short chunks: rounds 4, 2, 1 and the block transpositions into value
  // order, then the running sums of the residue classes.
  alignas(32) std::uint64_t v[chunk_values];
  for (unsigned s = 0; s < 4; ++s)
    for (unsigned q = 0; q < 8; ++q) {
      const std::uint64_t* r = m + s * 256 + q * 32;
      __m256i y[8];
      for (unsigned t = 0; t < 8; ++t) y[t] = load(r + t * 4);
      rounds_421(y);
      transpose4(y);
      transpose4(y + 4);
      for (unsigned j = 0; j < 4; ++j) {
        store(v + (s * 4 + j) * 64 + q * 8, y[j]);
        store(v + (s * 4 + j) * 64 + q * 8 + 4, y[4 + j]);
      }
    }
  for (std::size_t j = 0; j < dim && j < count; ++j) {
    std::uint64_t acc = 0;
    for (std::size_t i = j; i < count; i += dim) {
      acc += v[i];
      v[i] = acc;
    }
  }
  std::memcpy(dst, v, count * 8);
}
}  // namespace hcomm::codec::mpc_detail::avx2
#endif  // HCOMM_X86_VARIANTS
