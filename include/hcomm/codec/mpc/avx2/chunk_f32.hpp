// hcomm/codec/mpc/avx2/chunk_f32.hpp: MPC's float chunks in AVX2 intrinsics, the same
// transform as the portable chunk kernels (../encode_kernels.hpp, ../decode_kernels.hpp),
// bit for bit, organised around 8 x 8 blocks of 32-bit words.
//
// The portable encoder transposes the whole 32 x 32 word matrix of a chunk so that every
// step is a loop over 32 lanes. Here only 8 x 8 blocks are transposed: the chunk becomes
// four 32-row x 8-lane sub-matrices (sub-matrix s holds groups 8s..8s+7, row k of it is word
// k of those groups, one ymm register). The bit rounds 4, 2, 1 mix rows inside one block
// and run in registers right after the block transposition; rounds 16, 8 mix rows of the
// same sub-matrix (one more pass); the rounds commute, so their order is free. The plane
// delta, bitmaps and zero-word elimination are one pass over the rows in output order,
// with a table-driven left-pack (vpermd) per 8 words. Decoding is the mirror image; for
// stride 1 the running sum that undoes the delta is taken down the rows of the block
// layout (each group's words), plus one carry per group, so it needs no lane shuffles.
// Three passes over a 4 KiB chunk in L1 each way.
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

// Rounds 16 and 8 of one sub-matrix (32 rows of 8 lanes), in place.
HCOMM_MPC_AVX2_FN void rounds_16_8(std::uint32_t* sub) {
  for (unsigned t = 0; t < 8; ++t) {
    std::uint32_t* r = sub + t * 8;
    __m256i a0 = load(r), a1 = load(r + 64), a2 = load(r + 128), a3 = load(r + 192);
    swap_round16(a0, a2);
    swap_round16(a1, a3);
    swap_round8(a0, a1);
    swap_round8(a2, a3);
    store(r, a0);
    store(r + 64, a1);
    store(r + 128, a2);
    store(r + 192, a3);
  }
}
// 8 x 8 transposition of 32-bit words: afterwards lane j of r[t] is lane t of the old r[j].
HCOMM_MPC_AVX2_FN void transpose8(__m256i* r) {
  const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
  const __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
  const __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
  const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
  const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
  r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
  r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
  r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
  r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
  r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
  r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
  r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
  r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

// Inclusive prefix sum over the 8 lanes.
HCOMM_MPC_AVX2_FN __m256i scan8(__m256i x) {
  x = _mm256_add_epi32(x, _mm256_slli_si256(x, 4));
  x = _mm256_add_epi32(x, _mm256_slli_si256(x, 8));
  const __m256i t = _mm256_shuffle_epi32(x, 0xFF);
  return _mm256_add_epi32(x, _mm256_permute2x128_si256(t, t, 0x08));
}

// Row k of one sub-matrix in the encoder's last pass: plane delta against row k-1, bitmap
// bit k, and the non-zero words left-packed to p (8 words stored; returns the new end).
HCOMM_MPC_AVX2_FN std::uint32_t* pack_step(std::uint32_t* p, const std::uint32_t* row, __m256i& prev, __m256i& bm,
                                           __m256i bit) {
  const __m256i x = load(row);
  const __m256i d = _mm256_sub_epi32(x, prev);
  prev = x;
  const __m256i z = _mm256_cmpeq_epi32(d, _mm256_setzero_si256());
  const unsigned keep = ~static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(z))) & 0xFFu;
  bm = _mm256_or_si256(bm, _mm256_andnot_si256(z, bit));
  store(p, _mm256_permutevar8x32_epi32(d, lanes_of(pack_table, keep)));
  return p + _mm_popcnt_u32(keep);
}
// Row k of one sub-matrix in the decoder's first pass: the words that bit k of the bitmaps
// (c holds the bitmaps shifted right by k) marks are taken from q, the rest are zero; then
// the running sum down the planes. Reads 8 words at q; returns q past the words used.
HCOMM_MPC_AVX2_FN const unsigned char* expand_step(const unsigned char* q, std::uint32_t* row, __m256i& c,
                                                   __m256i& acc) {
  const __m256i t = _mm256_slli_epi32(c, 31);  // bit k of each bitmap in the sign bit
  c = _mm256_srli_epi32(c, 1);
  const unsigned mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(t)));
  const __m256i x =
      _mm256_and_si256(_mm256_permutevar8x32_epi32(load(q), lanes_of(expand_table, mask)), _mm256_srai_epi32(t, 31));
  acc = _mm256_add_epi32(acc, x);
  store(row, acc);
  return q + 4 * _mm_popcnt_u32(mask);
}


// Encodes one chunk of 1024 floats (as words) into out (bitmaps, then the packed words);
// returns its size in words. src: the values, read with the stride-dim delta on the fly; or,
// with Residuals, the residuals themselves (the short last chunk). out must have 8 words of
// room past the chunk's worst case. [pf, pf_end) is prefetched meanwhile (the next chunk).
template <bool Residuals>
HCOMM_MPC_AVX2_FN std::size_t encode_f32(const unsigned char* src, unsigned dim, unsigned groups, std::uint32_t* out,
                                         const unsigned char* pf, const unsigned char* pf_end) {
  alignas(32) std::uint32_t m[chunk_values];  // sub-matrix s at m + 256 s, row k at + 8 k
  alignas(32) std::uint32_t head[64];         // 32 zero words, then group 0's values
  if constexpr (!Residuals) {
    std::memset(head, 0, 128);
    std::memcpy(head + 32, src, 128);
  }
  const unsigned char* head0 = reinterpret_cast<const unsigned char*>(head + 32);
  const std::size_t back = std::size_t(dim) * 4;
  // Pass 1: delta, 8 x 8 block transposition, rounds 4, 2, 1.
  for (unsigned s = 0; s < 4; ++s)
    for (unsigned kb = 0; kb < 4; ++kb) {
      prefetch_part(pf, pf_end, s * 4 + kb);
      __m256i x[8];
      for (unsigned j = 0; j < 8; ++j) {
        const unsigned g = s * 8 + j;
        if constexpr (Residuals) {
          x[j] = load(src + (g * 32 + kb * 8) * 4);
        } else {
          const unsigned char* p = (g == 0 ? head0 : src + g * 128) + kb * 32;
          x[j] = _mm256_sub_epi32(load(p), load(p - back));
        }
      }
      transpose8(x);
      rounds_421(x);
      for (unsigned t = 0; t < 8; ++t) store(m + s * 256 + (kb * 8 + t) * 8, x[t]);
    }
  // Pass 2: rounds 16, 8.
  for (unsigned s = 0; s < 4; ++s) rounds_16_8(m + s * 256);
  // Pass 3: plane delta, bitmaps, left-packing row by row (row k of groups 0..31).
  std::uint32_t* p = out + groups;
  const __m256i zero = _mm256_setzero_si256();
  __m256i prev0 = zero, prev1 = zero, prev2 = zero, prev3 = zero;
  __m256i bm0 = zero, bm1 = zero, bm2 = zero, bm3 = zero;
  for (unsigned k = 0; k < 32; ++k) {
    const __m256i bit = _mm256_set1_epi32(static_cast<int>(1u << k));
    p = pack_step(p, m + k * 8, prev0, bm0, bit);
    p = pack_step(p, m + 256 + k * 8, prev1, bm1, bit);
    p = pack_step(p, m + 512 + k * 8, prev2, bm2, bit);
    p = pack_step(p, m + 768 + k * 8, prev3, bm3, bit);
  }
  alignas(32) std::uint32_t b[32];
  store(b, bm0);
  store(b + 8, bm1);
  store(b + 16, bm2);
  store(b + 24, bm3);
  if (groups == 32) {
    store(out, bm0);
    store(out + 8, bm1);
    store(out + 16, bm2);
    store(out + 24, bm3);
  } else {
    std::memcpy(out, b, groups * 4);
  }
  return groups + static_cast<std::size_t>(p - (out + groups));
}

// Decodes one chunk: `groups` bitmaps at bitmaps, the packed words at packed (readable for
// 8 words past the last one), count values of stride dim to dst.
HCOMM_MPC_AVX2_FN void decode_f32(const unsigned char* bitmaps, const unsigned char* packed, unsigned groups,
                                  unsigned dim, std::size_t count, unsigned char* dst, bool stream,
                                  const unsigned char* pf, const unsigned char* pf_end) {
  alignas(32) std::uint32_t b[32] = {};
  if (groups == 32) {
    store(b, load(bitmaps));
    store(b + 8, load(bitmaps + 32));
    store(b + 16, load(bitmaps + 64));
    store(b + 24, load(bitmaps + 96));
  } else {
    std::memcpy(b, bitmaps, groups * 4);
  }
  alignas(32) std::uint32_t m[chunk_values];
  // Pass 1: expansion and the running sum down the planes.
  {
    __m256i c0 = load(b), c1 = load(b + 8), c2 = load(b + 16), c3 = load(b + 24);
    const __m256i zero = _mm256_setzero_si256();
    __m256i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
    const unsigned char* q = packed;
    for (unsigned k = 0; k < 32; ++k) {
      if ((k & 1) == 0) prefetch_part(pf, pf_end, k / 2);
      q = expand_step(q, m + k * 8, c0, a0);
      q = expand_step(q, m + 256 + k * 8, c1, a1);
      q = expand_step(q, m + 512 + k * 8, c2, a2);
      q = expand_step(q, m + 768 + k * 8, c3, a3);
    }
  }
  // Pass 2: rounds 16, 8.
  for (unsigned s = 0; s < 4; ++s) rounds_16_8(m + s * 256);
  if (dim == 1 && count == chunk_values) {
    // Pass 3: rounds 4, 2, 1 and each group's running sum down its words.
    for (unsigned s = 0; s < 4; ++s) {
      __m256i carry = _mm256_setzero_si256();
      for (unsigned kb = 0; kb < 4; ++kb) {
        std::uint32_t* r = m + s * 256 + kb * 64;
        __m256i x[8];
        for (unsigned t = 0; t < 8; ++t) x[t] = load(r + t * 8);
        rounds_421(x);
        x[0] = _mm256_add_epi32(x[0], carry);
        for (unsigned t = 1; t < 8; ++t) x[t] = _mm256_add_epi32(x[t], x[t - 1]);
        carry = x[7];
        for (unsigned t = 0; t < 8; ++t) store(r + t * 8, x[t]);
      }
    }
    // Pass 4: plus the sum of the groups before, back to value order, out (or, to be
    // streamed out, into v).
    alignas(32) std::uint32_t v[chunk_values];
    unsigned char* o = stream ? reinterpret_cast<unsigned char*>(v) : dst;
    __m256i before = _mm256_setzero_si256();
    for (unsigned s = 0; s < 4; ++s) {
      const __m256i totals = load(m + s * 256 + 31 * 8);
      const __m256i incl = scan8(totals);
      const __m256i add = _mm256_add_epi32(_mm256_sub_epi32(incl, totals), before);
      before = _mm256_add_epi32(before, _mm256_permutevar8x32_epi32(incl, _mm256_set1_epi32(7)));
      for (unsigned kb = 0; kb < 4; ++kb) {
        const std::uint32_t* r = m + s * 256 + kb * 64;
        __m256i x[8];
        for (unsigned t = 0; t < 8; ++t) x[t] = _mm256_add_epi32(load(r + t * 8), add);
        transpose8(x);
        for (unsigned j = 0; j < 8; ++j) store(o + ((s * 8 + j) * 32 + kb * 8) * 4, x[j]);
      }
    }
    if (stream) {
      stream_copy(dst, o, chunk_values * 4);
      _mm_sfence();
    }
    return;
  }
  // Other strides, short chunks: rounds 4, 2, 1 and the block transposition into value
  // order, then the running sums of the residue classes.
  alignas(32) std::uint32_t v[chunk_values];
  for (unsigned s = 0; s < 4; ++s)
    for (unsigned kb = 0; kb < 4; ++kb) {
      const std::uint32_t* r = m + s * 256 + kb * 64;
      __m256i x[8];
      for (unsigned t = 0; t < 8; ++t) x[t] = load(r + t * 8);
      rounds_421(x);
      transpose8(x);
      for (unsigned j = 0; j < 8; ++j) store(v + (s * 8 + j) * 32 + kb * 8, x[j]);
    }
  for (std::size_t j = 0; j < dim && j < count; ++j) {
    std::uint32_t acc = 0;
    for (std::size_t i = j; i < count; i += dim) {
      acc += v[i];
      v[i] = acc;
    }
  }
  std::memcpy(dst, v, count * 4);
}
}  // namespace hcomm::codec::mpc_detail::avx2
#endif  // HCOMM_X86_VARIANTS
