// hcomm/codec/mpc/avx2/lanes.hpp: what the MPC chunk coders in AVX2 (chunk_f32.hpp,
// chunk_f64.hpp) share: vpermd lane tables for left-packing and expansion, the block-swap
// rounds of the bit transposition on registers, non-temporal copies and spread-out
// prefetching. Host-only, compiled for AVX2 through target attributes.
#pragma once
#include "hcomm/core/cpu_features.hpp"

#if HCOMM_X86_VARIANTS
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/codec/mpc/bit_transpose.hpp"

// Every helper of the AVX2 chunk coders: compiled for AVX2, and inlined into its caller.
#define HCOMM_MPC_AVX2_FN inline __attribute__((target("avx2,popcnt"), always_inline))

namespace hcomm::codec::mpc_detail::avx2 {

// One byte per lane: lane indices for vpermd.
struct lane_table {
  std::uint64_t e[256];
};
// Left-pack: the lanes whose bit is set in m, in order, then the others (which hold zero
// words, so the lanes stored past the packed ones are zeros).
constexpr lane_table make_pack_table() {
  lane_table t{};
  for (unsigned m = 0; m < 256; ++m) {
    std::uint64_t v = 0;
    unsigned o = 0;
    for (unsigned j = 0; j < 8; ++j)
      if ((m >> j) & 1u) v |= std::uint64_t(j) << (8 * o++);
    for (unsigned j = 0; j < 8; ++j)
      if (!((m >> j) & 1u)) v |= std::uint64_t(j) << (8 * o++);
    t.e[m] = v;
  }
  return t;
}
// Expansion: lane j takes packed word popcount(m & ((1 << j) - 1)) (masked off when bit j is clear).
constexpr lane_table make_expand_table() {
  lane_table t{};
  for (unsigned m = 0; m < 256; ++m) {
    std::uint64_t v = 0;
    unsigned r = 0;
    for (unsigned j = 0; j < 8; ++j) {
      v |= std::uint64_t(r & 7u) << (8 * j);
      if ((m >> j) & 1u) ++r;
    }
    t.e[m] = v;
  }
  return t;
}
inline constexpr lane_table pack_table = make_pack_table();
inline constexpr lane_table expand_table = make_expand_table();

HCOMM_MPC_AVX2_FN __m256i lanes_of(const lane_table& t, unsigned m) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&t.e[m])));
}
HCOMM_MPC_AVX2_FN __m256i load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
HCOMM_MPC_AVX2_FN void store(void* p, __m256i x) { _mm256_storeu_si256(static_cast<__m256i*>(p), x); }

// One block-swap round between rows a (bit J of the row index clear) and b = a + J.
template <int J>
HCOMM_MPC_AVX2_FN void swap_round(__m256i& a, __m256i& b) {
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(swap_mask_of<std::uint32_t>(J)));
  const __m256i t = _mm256_and_si256(_mm256_xor_si256(a, _mm256_srli_epi32(b, J)), mask);
  a = _mm256_xor_si256(a, t);
  b = _mm256_xor_si256(b, _mm256_slli_epi32(t, J));
}
// Rounds 16 and 8 move whole 16-bit and 8-bit fields: blends instead of the xor swap.
HCOMM_MPC_AVX2_FN void swap_round16(__m256i& a, __m256i& b) {
  const __m256i na = _mm256_blend_epi16(a, _mm256_srli_epi32(b, 16), 0x55);
  b = _mm256_blend_epi16(b, _mm256_slli_epi32(a, 16), 0xAA);
  a = na;
}
HCOMM_MPC_AVX2_FN void swap_round8(__m256i& a, __m256i& b) {
  const __m256i lo = _mm256_set1_epi32(0x00FF00FF);
  const __m256i na = _mm256_blendv_epi8(a, _mm256_srli_epi16(b, 8), lo);
  b = _mm256_blendv_epi8(_mm256_slli_epi16(a, 8), b, lo);
  a = na;
}
// Rounds 4, 2, 1 on 8 consecutive rows.
HCOMM_MPC_AVX2_FN void rounds_421(__m256i* y) {
  swap_round<4>(y[0], y[4]);
  swap_round<4>(y[1], y[5]);
  swap_round<4>(y[2], y[6]);
  swap_round<4>(y[3], y[7]);
  swap_round<2>(y[0], y[2]);
  swap_round<2>(y[1], y[3]);
  swap_round<2>(y[4], y[6]);
  swap_round<2>(y[5], y[7]);
  swap_round<1>(y[0], y[1]);
  swap_round<1>(y[2], y[3]);
  swap_round<1>(y[4], y[5]);
  swap_round<1>(y[6], y[7]);
}


// Dword indices for vpermd, one byte per dword: 16 entries (4 lanes of 64 bits).
struct lane_table4 {
  std::uint64_t e[16];
};
// Left-pack of the 64-bit lanes whose bit is set in m, then the others (zero words).
constexpr lane_table4 make_pack_table4() {
  lane_table4 t{};
  for (unsigned m = 0; m < 16; ++m) {
    std::uint64_t v = 0;
    unsigned o = 0;
    for (unsigned pass = 0; pass < 2; ++pass)
      for (unsigned j = 0; j < 4; ++j)
        if (((m >> j) & 1u) == (pass == 0 ? 1u : 0u)) {
          v |= std::uint64_t(2 * j) << (8 * o++);
          v |= std::uint64_t(2 * j + 1) << (8 * o++);
        }
    t.e[m] = v;
  }
  return t;
}
// Expansion: 64-bit lane j takes packed word popcount(m & ((1 << j) - 1)).
constexpr lane_table4 make_expand_table4() {
  lane_table4 t{};
  for (unsigned m = 0; m < 16; ++m) {
    std::uint64_t v = 0;
    unsigned r = 0;
    for (unsigned j = 0; j < 4; ++j) {
      v |= std::uint64_t(2 * (r & 3u)) << (16 * j);
      v |= std::uint64_t(2 * (r & 3u) + 1) << (16 * j + 8);
      if ((m >> j) & 1u) ++r;
    }
    t.e[m] = v;
  }
  return t;
}
inline constexpr lane_table4 pack_table4 = make_pack_table4();
inline constexpr lane_table4 expand_table4 = make_expand_table4();

HCOMM_MPC_AVX2_FN __m256i lanes_of(const lane_table4& t, unsigned m) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&t.e[m])));
}

// Round 32 moves whole 32-bit halves: blends.
HCOMM_MPC_AVX2_FN void swap_round32(__m256i& a, __m256i& b) {
  const __m256i na = _mm256_blend_epi32(a, _mm256_srli_epi64(b, 32), 0x55);
  b = _mm256_blend_epi32(b, _mm256_slli_epi64(a, 32), 0xAA);
  a = na;
}

// memcpy with non-temporal stores for the whole 64-byte lines of dst (no read for ownership
// of lines that are overwritten whole); the caller runs _mm_sfence before others read dst.
HCOMM_MPC_AVX2_FN void stream_copy(unsigned char* dst, const unsigned char* src, std::size_t bytes) {
  std::size_t head = (64 - (reinterpret_cast<std::uintptr_t>(dst) & 63)) & 63;
  if (head > bytes) head = bytes;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  for (; bytes >= 64; bytes -= 64, dst += 64, src += 64) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), load(src));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32), load(src + 32));
  }
  std::memcpy(dst, src, bytes);
}

// Prefetches part `part` (of 16) of the lines of [pf, pf_end): callers spread the
// prefetching of the next chunk over a pass, so that it does not stall on the miss buffers
// all at once.
HCOMM_MPC_AVX2_FN void prefetch_part(const unsigned char* pf, const unsigned char* pf_end, unsigned part) {
  const std::size_t lines = static_cast<std::size_t>(pf_end - pf + 63) / 64;
  const std::size_t lo = part * lines / 16, hi = (part + 1) * lines / 16;
  for (std::size_t l = lo; l < hi; ++l) _mm_prefetch(reinterpret_cast<const char*>(pf + l * 64), _MM_HINT_T0);
}
}  // namespace hcomm::codec::mpc_detail::avx2
#endif  // HCOMM_X86_VARIANTS
