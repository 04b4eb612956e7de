// hcomm/codec/mpc_kernels.hpp: the kernel bodies of the MPC codec (codec/mpc.hpp).
//
// Each kernel is a functor with HCOMM_HOST_DEVICE operator()(std::size_t) const, run by an
// executor's for_each; one index is one chunk of 1024 values (or one sampled group, for the
// automatic choice of the delta stride). Nothing here allocates, throws or calls the host:
// the same bodies compile with nvcc.
//
//   hcomm::exec::host ex;
//   ex.for_each(chunks, mpc_detail::encode_chunk_kernel<float>{in, n, dim_ptr, scratch, sizes});
//
// Terms. A *group* is W consecutive values (W = 32 for float, 64 for double: the bits in a
// word); a chunk holds L = 1024 / W groups. Inside a chunk the groups are laid out as a
// W x L word matrix (row k = word k of every group), so that every step of the bit
// transposition, the second delta and the bitmap construction is one loop over L
// contiguous lanes that the compiler vectorises. Zero-word elimination then goes row by
// row: all-non-zero rows are copied whole, all-zero rows skipped, mixed rows packed by a
// branch-free scalar loop.
//
// On a GPU one chunk is one thread here (12-24 KiB of local arrays): correct and
// stream-ordered, but a fast GPU path wants a block per chunk sharing these helpers.
//
// Host fast path: on x86-64 with AVX2, chunks are encoded and decoded by avx2::
// encode_f32 / decode_f32 and encode_f64 / decode_f64 (below), intrinsics versions of the
// same transform that transpose only 8 x 8 blocks of 32-bit words (4 x 4 blocks of 64-bit
// words) and pack with vpermd; they write the same bytes as the portable body
// (tests/codec/test_mpc.cpp compares the two on every data kind, stride and chunk shape).
// The sampling kernel of the automatic stride runs the portable body compiled for AVX2.
// Large payloads and outputs are written with non-temporal stores, and the next chunk is
// prefetched (a chunk is one 4 KiB page of floats or two of doubles, and hardware
// prefetchers stop at page boundaries).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/core/checksum.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/macros.hpp"

// Non-aliasing pointers (gcc, clang and nvcc spell it the same way).
#if !defined(HCOMM_MPC_RESTRICT)
#define HCOMM_MPC_RESTRICT __restrict__
#endif

// Full unrolling of the fixed-length scalar loops (their trip count is the word width).
#if defined(__CUDACC__)
#define HCOMM_MPC_UNROLL _Pragma("unroll")
#elif defined(__clang__)
#define HCOMM_MPC_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define HCOMM_MPC_UNROLL _Pragma("GCC unroll 64")
#else
#define HCOMM_MPC_UNROLL
#endif

// Helpers are forced inline so that each kernel body is compiled as one function, in every
// instruction-set variant of it (below).
#if defined(__CUDACC__)
#define HCOMM_MPC_INLINE __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define HCOMM_MPC_INLINE inline __attribute__((always_inline))
#else
#define HCOMM_MPC_INLINE inline
#endif

// x86-64 hosts: the chunk kernels are compiled twice, for the baseline instruction set and
// for AVX2 (the same C++ body; only the width of the compiler's vectors differs, so the bytes
// are identical), and pick at run time. Define HCOMM_MPC_NO_CLONES to build the baseline only.
// (Also when the baseline already has AVX2, so that every translation unit sees the same
// class definitions.)
#if !defined(__CUDACC__) && !defined(HCOMM_MPC_NO_CLONES) && defined(__x86_64__) && \
    (defined(__GNUC__) || defined(__clang__))
#define HCOMM_MPC_CLONES 1
#else
#define HCOMM_MPC_CLONES 0
#endif
#if HCOMM_MPC_CLONES
#include <immintrin.h>
#endif

namespace hcomm::codec::mpc_detail {

#if HCOMM_MPC_CLONES
inline bool host_has_avx2() noexcept {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
  return has;
}
#define HCOMM_MPC_DISPATCH(i)                        \
  if (::hcomm::codec::mpc_detail::host_has_avx2()) { \
    body_avx2(i);                                    \
    return;                                          \
  }                                                  \
  body(i)
#define HCOMM_MPC_AVX2_TARGET __attribute__((target("avx2,popcnt")))
#define HCOMM_MPC_AVX2_VARIANT \
  HCOMM_MPC_AVX2_TARGET void body_avx2(std::size_t i) const { body(i); }
#else
#define HCOMM_MPC_DISPATCH(i) body(i)
#define HCOMM_MPC_AVX2_VARIANT
#endif

inline constexpr std::size_t chunk_values = 1024;  // values per independent chunk
inline constexpr std::size_t head_bytes = 16;      // payload header (see mpc.hpp)
inline constexpr unsigned max_dim = 32;            // largest delta stride
inline constexpr std::size_t max_samples = 64;     // groups sampled for the automatic stride
inline constexpr std::uint8_t mode_raw = 0;
inline constexpr std::uint8_t mode_mpc = 1;
inline constexpr std::uint8_t format_version = 1;

template <class Word>
struct geometry {
  static constexpr unsigned bits = sizeof(Word) * 8;                        // W
  static constexpr unsigned groups = static_cast<unsigned>(chunk_values) / bits;  // L
  // Worst case of one chunk: a bitmap per group plus every word non-zero.
  static constexpr std::size_t max_chunk_words = groups + chunk_values;
  // Stride of the encoder's per-chunk scratch slots: the worst case plus 32 bytes, since
  // the host's vector packing may store up to 32 bytes (zeros) past the chunk's last word.
  static constexpr std::size_t slot_words = max_chunk_words + 32 / sizeof(Word);
};

HCOMM_HOST_DEVICE std::size_t min_size(std::size_t a, std::size_t b) { return a < b ? a : b; }
HCOMM_HOST_DEVICE std::size_t chunk_count(std::size_t n) { return (n + chunk_values - 1) / chunk_values; }
// Index of one u16 per chunk, padded to 8 bytes so that the chunks start word-aligned.
HCOMM_HOST_DEVICE std::size_t index_bytes(std::size_t chunks) { return (chunks * 2 + 7) / 8 * 8; }

// Without the POPCNT instruction in the baseline ISA, GCC calls libgcc for the builtin; the
// bit-twiddling version is faster than that call.
HCOMM_MPC_INLINE unsigned popcount(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned>(__popcll(x));
#elif defined(__POPCNT__)
  return static_cast<unsigned>(__builtin_popcountll(x));
#else
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<unsigned>((x * 0x0101010101010101ull) >> 56);
#endif
}
HCOMM_MPC_INLINE unsigned popcount(std::uint32_t x) { return popcount(static_cast<std::uint64_t>(x)); }

// A hint to fetch the cache line at p (host only; never faults).
HCOMM_MPC_INLINE void prefetch(const void* p) {
#if !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}

// Mask selecting the low j bits of every 2j-bit block: 0x0000FFFF, 0x00FF00FF, ... for j = 16, 8, ...
template <class Word>
HCOMM_HOST_DEVICE constexpr Word swap_mask_of(unsigned j) {
  return static_cast<Word>(~Word(0) / ((Word(1) << j) + 1));
}

// Rounds of the recursive block-swap transposition on a W x Lanes matrix of words. Round J
// pairs rows (k, k+J) with bit J of k clear: the low J bits of each 2J-bit block of row k
// trade places with the high J bits of row k+J. Rounds J = W/2 .. 1 transpose each lane's
// W x W bit matrix. This applies the R rounds J, J/2, ..., J >> (R-1) in one pass: the 2^R
// rows that they mix are loaded once, transformed in registers and stored once. Row
// distances and masks are compile-time constants, so the lane loop vectorises.
template <class Word, unsigned Lanes, unsigned J, unsigned R>
HCOMM_MPC_INLINE void transpose_rounds(Word* m) {
  constexpr unsigned W = sizeof(Word) * 8;
  constexpr unsigned S = 1u << R;            // rows per set
  constexpr unsigned low = J >> (R - 1);     // smallest round of this pass
  constexpr unsigned set_bits = 2 * J - low; // row-index bits that vary within a set
  for (unsigned k = 0; k < W; ++k) {
    if (k & set_bits) continue;
    Word* base = m + k * Lanes;
    for (unsigned l = 0; l < Lanes; ++l) {
      Word x[S];
      HCOMM_MPC_UNROLL
      for (unsigned i = 0; i < S; ++i) {
        unsigned off = 0;
        for (unsigned r = 0; r < R; ++r) off += (i >> (R - 1 - r) & 1u) ? (J >> r) : 0u;
        x[i] = base[off * Lanes + l];
      }
      HCOMM_MPC_UNROLL
      for (unsigned r = 0; r < R; ++r) {
        const unsigned j = J >> r;
        const unsigned bit = 1u << (R - 1 - r);
        const Word mask = swap_mask_of<Word>(j);
        HCOMM_MPC_UNROLL
        for (unsigned i = 0; i < S; ++i) {
          if (i & bit) continue;
          const Word t = (x[i] ^ (x[i | bit] >> j)) & mask;
          x[i] ^= t;
          x[i | bit] ^= static_cast<Word>(t << j);
        }
      }
      HCOMM_MPC_UNROLL
      for (unsigned i = 0; i < S; ++i) {
        unsigned off = 0;
        for (unsigned r = 0; r < R; ++r) off += (i >> (R - 1 - r) & 1u) ? (J >> r) : 0u;
        base[off * Lanes + l] = x[i];
      }
    }
  }
}

// Transposes, in every lane l, the W x W bit matrix whose row k is m[k * Lanes + l]. After
// it, row k holds bit (W-1-k) of the W input words (row 0 = the sign bits), input word j at
// bit (W-1-j). It is an involution: the decoder runs the same function.
template <class Word, unsigned Lanes>
HCOMM_MPC_INLINE void bit_transpose(Word* m) {
  if constexpr (sizeof(Word) == 4) {
    transpose_rounds<Word, Lanes, 16, 2>(m);  // rounds 16, 8
    transpose_rounds<Word, Lanes, 4, 3>(m);   // rounds 4, 2, 1
  } else {
    transpose_rounds<Word, Lanes, 32, 3>(m);  // rounds 32, 16, 8
    transpose_rounds<Word, Lanes, 4, 3>(m);   // rounds 4, 2, 1
  }
}

// Second delta over the bit planes of each group, row k -= row k-1 (row 0 is kept), fused
// with the bitmaps: bitmap[l] bit k = row k of lane l is non-zero afterwards. Equal
// neighbouring planes (the sign-extension planes of small residuals) become zero words.
// Rows go downwards so that row k-1 still holds its plane when row k is formed.
template <class Word, unsigned Lanes>
HCOMM_MPC_INLINE void plane_delta_bitmaps(Word* m, Word* HCOMM_MPC_RESTRICT bitmap) {
  constexpr unsigned W = sizeof(Word) * 8;
  for (unsigned l = 0; l < Lanes; ++l) bitmap[l] = 0;
  for (unsigned k = W - 1; k > 0; --k) {
    const Word bit = static_cast<Word>(Word(1) << k);
    Word* a = m + k * Lanes;
    const Word* b = m + (k - 1) * Lanes;
    for (unsigned l = 0; l < Lanes; ++l) {
      const Word d = static_cast<Word>(a[l] - b[l]);
      a[l] = d;
      bitmap[l] |= d != 0 ? bit : Word(0);
    }
  }
  for (unsigned l = 0; l < Lanes; ++l) bitmap[l] |= m[l] != 0 ? Word(1) : Word(0);
}
// The inverse of the plane delta: a running sum down each lane.
template <class Word, unsigned Lanes>
HCOMM_MPC_INLINE void plane_undelta(Word* m) {
  constexpr unsigned W = sizeof(Word) * 8;
  for (unsigned k = 1; k < W; ++k) {
    Word* a = m + k * Lanes;
    const Word* b = m + (k - 1) * Lanes;
    for (unsigned l = 0; l < Lanes; ++l) a[l] = static_cast<Word>(a[l] + b[l]);
  }
}

// Loads `count` values starting at p as words (memcpy: legal for any alignment, on the GPU too).
template <class Word>
HCOMM_MPC_INLINE void load_words(Word* dst, const void* p, std::size_t count) {
  if (count) std::memcpy(dst, p, count * sizeof(Word));
}

// Word transposition of a chunk: out[k * L + g] = in[g * W + k] (g < L groups, k < W words),
// in 4 x 4 blocks so that the compiler turns it into vector loads, shuffles and stores.
template <class Word>
HCOMM_MPC_INLINE void word_transpose(const Word* HCOMM_MPC_RESTRICT in, Word* HCOMM_MPC_RESTRICT out) {
  constexpr unsigned W = sizeof(Word) * 8;
  constexpr unsigned L = static_cast<unsigned>(chunk_values) / W;
  for (unsigned kb = 0; kb < W; kb += 4)
    for (unsigned gb = 0; gb < L; gb += 4)
      for (unsigned a = 0; a < 4; ++a)
        for (unsigned b = 0; b < 4; ++b) out[(kb + a) * L + gb + b] = in[(gb + b) * W + kb + a];
}
// The inverse: out[g * W + k] = in[k * L + g].
template <class Word>
HCOMM_MPC_INLINE void word_untranspose(const Word* HCOMM_MPC_RESTRICT in, Word* HCOMM_MPC_RESTRICT out) {
  constexpr unsigned W = sizeof(Word) * 8;
  constexpr unsigned L = static_cast<unsigned>(chunk_values) / W;
  for (unsigned gb = 0; gb < L; gb += 4)
    for (unsigned kb = 0; kb < W; kb += 4)
      for (unsigned a = 0; a < 4; ++a)
        for (unsigned b = 0; b < 4; ++b) out[(gb + a) * W + kb + b] = in[(kb + b) * L + gb + a];
}

// r[i] = v[i] - v[i - dim] over one chunk (v[j] = 0 for j < 0). v may be unaligned input.
template <class Word>
HCOMM_MPC_INLINE void delta(const unsigned char* v, unsigned dim, Word* HCOMM_MPC_RESTRICT r) {
  constexpr std::size_t S = sizeof(Word);
  // std::size_t indices: 32-bit unsigned wrap-around in the address would block vectorisation.
  for (std::size_t i = 0; i < dim; ++i) std::memcpy(&r[i], v + i * S, S);
  for (std::size_t i = dim; i < chunk_values; ++i) {
    Word a, b;
    std::memcpy(&a, v + i * S, S);
    std::memcpy(&b, v + (i - dim) * S, S);
    r[i] = static_cast<Word>(a - b);
  }
}

// ---------------------------------------------------------------------------------------
// Host fast path (x86-64 with AVX2): the same transform as the portable bodies, bit for bit
// (a test runs both). Float chunks first, organised around 8 x 8 blocks of 32-bit words;
// float64 chunks (further below) the same way around 4 x 4 blocks of 64-bit words.
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
#if HCOMM_MPC_CLONES
#define HCOMM_MPC_AVX2_FN inline __attribute__((target("avx2,popcnt"), always_inline))
namespace avx2 {

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

// Prefetches part `part` (of 16) of the lines of [pf, pf_end): callers spread the
// prefetching of the next chunk over a pass, so that it does not stall on the miss buffers
// all at once.
HCOMM_MPC_AVX2_FN void prefetch_part(const unsigned char* pf, const unsigned char* pf_end, unsigned part) {
  const std::size_t lines = static_cast<std::size_t>(pf_end - pf + 63) / 64;
  const std::size_t lo = part * lines / 16, hi = (part + 1) * lines / 16;
  for (std::size_t l = lo; l < hi; ++l) _mm_prefetch(reinterpret_cast<const char*>(pf + l * 64), _MM_HINT_T0);
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

// ---------------------------------------------------------------------------------------
// Float64 chunks: the same organisation on 4 x 4 blocks of 64-bit words (a ymm register is
// 4 words). The chunk becomes four 64-row x 4-lane sub-matrices (sub-matrix s holds groups
// 4s..4s+3, row k = word k of those groups, one ymm register; at m + 256 s, row k at + 4 k).
// Pass 1 reads 8 words of 4 groups (two 4 x 4 blocks, rows 8q..8q+7), transposes and runs
// rounds 4, 2, 1 in registers; pass 2 runs rounds 32, 16, 8 (rows t + 8 i of a sub-matrix);
// pass 3 is the plane delta, bitmaps and left-pack (4 words per vpermd). Rounds 16 .. 1
// move bits inside 32-bit halves of a word, so the float rounds serve unchanged.

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

}  // namespace avx2
#endif  // HCOMM_MPC_CLONES

// ---------------------------------------------------------------------------------------
// Encoding.

// Sets the stride when the caller chose one (param 1..32).
struct set_dim_kernel {
  std::uint64_t* dim;
  std::uint64_t value;
  HCOMM_HOST_DEVICE void operator()(std::size_t) const { *dim = value; }
};

// Which group sample s of `samples` looks at: spread evenly over the buffer, and not the
// first group of a chunk when avoidable (its first values have no predecessor for the
// larger strides, which would bias the choice towards small strides).
template <class Word>
HCOMM_HOST_DEVICE std::size_t sample_group(std::size_t s, std::size_t samples, std::size_t total_groups) {
  constexpr unsigned L = geometry<Word>::groups;
  std::size_t g = (2 * s + 1) * total_groups / (2 * samples);
  if (g % L == 0 && g + 1 < total_groups && L > 1) ++g;
  return g;
}

// For one sampled group and every stride d in 1..32 at once (the strides are the 32 lanes),
// runs delta - transposition - plane delta and counts the surviving non-zero words:
// counts[s * 32 + d - 1]. The choice is made on exactly what the encoder would emit.
template <floating_element T>
struct sample_dims_kernel {
  using Word = word_of<T>;
  static constexpr unsigned W = sizeof(Word) * 8;
  const T* in;
  std::size_t n;
  std::size_t samples;
  std::uint64_t* counts;

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { HCOMM_MPC_DISPATCH(i); }
  HCOMM_MPC_AVX2_VARIANT

  // The portable body (what every executor runs; the host may run an AVX2 build of it).
  HCOMM_MPC_INLINE void body(std::size_t s) const {
    const std::size_t total_groups = (n + W - 1) / W;
    const std::size_t g = sample_group<Word>(s, samples, total_groups);
    const std::size_t first = g * W;                                   // first value of the group
    const std::size_t chunk_first = first / chunk_values * chunk_values;
    const std::size_t lo = first - min_size(max_dim, first - chunk_first);  // earliest predecessor
    const std::size_t hi = min_size(first + W, n);                     // one past the last value
    Word v[W + max_dim];
    load_words(v, in + lo, hi - lo);
    const std::size_t here = first - lo;  // index of `first` in v
    Word m[W * max_dim];
    for (unsigned k = 0; k < W; ++k) {
      const bool present = first + k < hi;
      const Word x = present ? v[here + k] : Word(0);
      for (unsigned d = 1; d <= max_dim; ++d) {
        const bool has_prev = present && here + k >= d;
        m[k * max_dim + (d - 1)] = static_cast<Word>(x - (has_prev ? v[here + k - d] : Word(0)));
      }
    }
    bit_transpose<Word, max_dim>(m);
    Word bitmap[max_dim];
    plane_delta_bitmaps<Word, max_dim>(m, bitmap);
    for (unsigned d = 0; d < max_dim; ++d) counts[s * max_dim + d] = popcount(bitmap[d]);
  }
};

// Picks the stride with the fewest surviving words over all samples. A larger stride must
// save more than 1/64 of the words of the best smaller one to be taken: on noise (gradients),
// where all strides are about equal, this keeps stride 1, whose decoder is the fastest.
struct pick_dim_kernel {
  const std::uint64_t* counts;
  std::size_t samples;
  std::uint64_t* dim;
  HCOMM_HOST_DEVICE void operator()(std::size_t) const {
    std::uint64_t best = 0;
    unsigned best_d = 0;
    for (unsigned d = 0; d < max_dim; ++d) {
      std::uint64_t sum = 0;
      for (std::size_t s = 0; s < samples; ++s) sum += counts[s * max_dim + d];
      if (best_d == 0 || sum * 64 < best * 63) {
        best = sum;
        best_d = d + 1;
      }
    }
    *dim = best_d;
  }
};

// Pass 1: compresses chunk c into its worst-case slot of the scratch area and records its
// size in words. Slot layout = the chunk's layout in the payload: one bitmap word per group
// (bit k set = plane word k is non-zero), then the non-zero plane words, group by group.
template <floating_element T>
struct encode_chunk_kernel {
  using Word = word_of<T>;
  using geo = geometry<Word>;
  static constexpr unsigned W = geo::bits;
  static constexpr unsigned L = geo::groups;
  const T* in;
  std::size_t n;
  const std::uint64_t* dim_ptr;
  Word* scratch;          // slot i (chunk first + i) at scratch + i * geo::slot_words
  std::uint64_t* sizes;   // sizes[c]: chunk c's size in words
  std::size_t first = 0;  // index i is chunk first + i

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { HCOMM_MPC_DISPATCH(first + i); }
#if HCOMM_MPC_CLONES
  HCOMM_MPC_AVX2_TARGET void body_avx2(std::size_t c) const {
    const std::size_t base = c * chunk_values;
    const std::size_t count = min_size(chunk_values, n - base);
    const unsigned groups = static_cast<unsigned>((count + W - 1) / W);
    const unsigned dim = static_cast<unsigned>(*dim_ptr);
    Word* out = scratch + (c - first) * geo::slot_words;
    std::size_t size;
    if (count == chunk_values) {
      // A chunk is one or two 4 KiB pages, and hardware prefetchers stop at page boundaries:
      // fetch the next chunk while this one is coded.
      const auto* next = reinterpret_cast<const unsigned char*>(in + base + chunk_values);
      const auto* next_end = base + 2 * chunk_values <= n ? next + chunk_values * sizeof(T) : next;
      const auto* src = reinterpret_cast<const unsigned char*>(in + base);
      if constexpr (sizeof(Word) == 4)
        size = avx2::encode_f32<false>(src, dim, groups, out, next, next_end);
      else
        size = avx2::encode_f64<false>(src, dim, groups, out, next, next_end);
    } else {  // the short last chunk: residuals first (zero past the end)
      alignas(32) Word tail[chunk_values];
      alignas(32) Word r[chunk_values];
      load_words(tail, in + base, count);
      for (std::size_t i = count; i < chunk_values; ++i) tail[i] = 0;
      delta<Word>(reinterpret_cast<const unsigned char*>(tail), dim, r);
      for (std::size_t i = count; i < chunk_values; ++i) r[i] = 0;
      const auto* none = reinterpret_cast<const unsigned char*>(r);
      if constexpr (sizeof(Word) == 4)
        size = avx2::encode_f32<true>(none, dim, groups, out, none, none);
      else
        size = avx2::encode_f64<true>(none, dim, groups, out, none, none);
    }
    sizes[c] = size;
  }
#endif

  // The portable body (what every executor runs; on x86-64 hosts with AVX2, chunks take
  // avx2::encode_f32 / encode_f64 instead, which write the same bytes).
  HCOMM_MPC_INLINE void body(std::size_t c) const {
    const std::size_t base = c * chunk_values;
    const std::size_t count = min_size(chunk_values, n - base);
    const unsigned groups = static_cast<unsigned>((count + W - 1) / W);
    const unsigned dim = static_cast<unsigned>(*dim_ptr);

    // Delta at stride dim into r (contiguous, vectorised). A full chunk is read in place; the
    // short last chunk is first copied behind zeros, so that the loop reads nothing past n.
    Word tail[chunk_values];
    const unsigned char* src = reinterpret_cast<const unsigned char*>(in + base);
    if (count < chunk_values) {
      load_words(tail, in + base, count);
      for (std::size_t i = count; i < chunk_values; ++i) tail[i] = 0;
      src = reinterpret_cast<const unsigned char*>(tail);
    }
    Word r[chunk_values];
    delta<Word>(src, dim, r);
    if (count < chunk_values)  // values past the end are zero residuals
      for (std::size_t i = count; i < chunk_values; ++i) r[i] = 0;

    // Word transposition into the W x L matrix (value g*W + k of the chunk -> row k, lane g),
    // bit transposition of every lane, plane delta, bitmaps.
    Word m[chunk_values];
    word_transpose<Word>(r, m);
    bit_transpose<Word, L>(m);
    Word bitmap[L];
    plane_delta_bitmaps<Word, L>(m, bitmap);

    // Zero-word elimination, row by row (plane k of every group of the chunk, in group
    // order). A row whose words are all non-zero is copied whole, an all-zero row is skipped,
    // and a mixed row is packed branch-free: always store, advance only past non-zero words.
    Word* out = scratch + (c - first) * geo::slot_words;
    Word all = static_cast<Word>(~Word(0)), any = 0;  // lanes past `groups` are zero columns
    for (unsigned g = 0; g < L; ++g) {
      all &= bitmap[g];
      any |= bitmap[g];
    }
    for (unsigned g = 0; g < groups; ++g) out[g] = bitmap[g];
    Word* packed = out + groups;
    for (unsigned k = 0; k < W; ++k) {
      const Word bit = static_cast<Word>(Word(1) << k);
      const Word* row = m + k * L;
      if (all & bit) {
        std::memcpy(packed, row, L * sizeof(Word));
        packed += L;
      } else if (any & bit) {
        for (unsigned g = 0; g < L; ++g) {
          const Word w = row[g];
          *packed = w;
          packed += w != 0 ? 1 : 0;
        }
      }
    }
    const std::size_t pos = static_cast<std::size_t>(packed - (out + groups));
    sizes[c] = groups + pos;
  }
};

// Pass 2 of one batch of chunks (first .. first + count - 1), after the scan of the batch's
// sizes: moves each chunk behind the batches before it (*done words) and writes its index
// entry. A chunk that would end past the raw size is not written: the payload falls back to
// raw then anyway (raw_fallback_kernel), and the packed bytes must not overrun the buffer.
template <floating_element T>
struct gather_kernel {
  using Word = word_of<T>;
  using geo = geometry<Word>;
  std::size_t n;
  std::size_t chunks;
  std::size_t first;
  const Word* scratch;           // slot i = chunk first + i
  const std::uint64_t* offsets;  // exclusive scan of the batch's sizes, offsets[count] = its total
  const std::uint64_t* done;     // words of the batches before (executor memory)
  unsigned char* payload;
  block_hasher* hasher = nullptr;  // one-thread host: hashes what is written (chunks in order)

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
#if HCOMM_MPC_CLONES
    if (n * sizeof(T) >= stream_bytes && host_has_avx2()) {
      body_stream(i);
      return;
    }
#endif
    unsigned char* dst;
    const unsigned char* src;
    std::size_t bytes;
    if (!place(i, dst, src, bytes)) return;
    std::memcpy(dst, src, bytes);
    if (hasher) hasher->feed(static_cast<std::size_t>(dst - payload), src, bytes);
  }
#if HCOMM_MPC_CLONES
  // Large payloads on the host: written with non-temporal stores (they do not fit in the
  // caches anyway, and this saves reading every line before it is overwritten).
  static constexpr std::size_t stream_bytes = std::size_t(8) << 20;
  HCOMM_MPC_AVX2_TARGET void body_stream(std::size_t i) const {
    unsigned char* dst;
    const unsigned char* src;
    std::size_t bytes;
    if (!place(i, dst, src, bytes)) return;
    avx2::stream_copy(dst, src, bytes);
    _mm_sfence();
    if (hasher) hasher->feed(static_cast<std::size_t>(dst - payload), src, bytes);
  }
#endif

  // Writes the index entry of chunk first + i; says where its words go (false: past the raw size).
  HCOMM_MPC_INLINE bool place(std::size_t i, unsigned char*& dst, const unsigned char*& src, std::size_t& bytes) const {
    const std::size_t c = first + i;
    const std::size_t words = offsets[i + 1] - offsets[i];
    const std::uint16_t entry = static_cast<std::uint16_t>(words);
    std::memcpy(payload + head_bytes + 2 * c, &entry, 2);
    const std::size_t at = head_bytes + index_bytes(chunks) + (*done + offsets[i]) * sizeof(Word);
    bytes = words * sizeof(Word);
    dst = payload + at;
    src = reinterpret_cast<const unsigned char*>(scratch + i * geo::slot_words);
    return at + bytes <= head_bytes + n * sizeof(T);
  }
};

// Host pipelining: index i encodes chunk i of one batch and moves chunk i of the batch
// before it into place, so that the second pass's stores leave while the first pass computes.
template <floating_element T>
struct encode_gather_kernel {
  encode_chunk_kernel<T> encode;
  std::size_t encode_count;
  gather_kernel<T> gather;
  std::size_t gather_count;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    if (i < gather_count) gather(i);
    if (i < encode_count) encode(i);
  }
};

// After a batch: *done += the batch's total. One work item.
struct advance_kernel {
  std::uint64_t* done;
  const std::uint64_t* batch_total;
  HCOMM_HOST_DEVICE void operator()(std::size_t) const { *done += *batch_total; }
};

// After all batches: when the packed payload would not be smaller than the raw values, chunk
// c's raw values (over whatever the gather wrote).
template <floating_element T>
struct raw_fallback_kernel {
  using Word = word_of<T>;
  const T* in;
  std::size_t n;
  std::size_t chunks;
  const std::uint64_t* total;  // packed words in all
  unsigned char* payload;

  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    const std::size_t packed_bytes = head_bytes + index_bytes(chunks) + *total * sizeof(Word);
    if (packed_bytes < head_bytes + n * sizeof(T)) return;
    const std::size_t base = c * chunk_values;
    const std::size_t count = min_size(chunk_values, n - base);
    std::memcpy(payload + head_bytes + base * sizeof(T), in + base, count * sizeof(T));
  }
};

// Writes the payload header (and the index padding) and the payload size: one work item.
template <floating_element T>
struct finish_kernel {
  using Word = word_of<T>;
  std::size_t n;
  std::size_t chunks;
  const std::uint64_t* total;  // packed words in all
  const std::uint64_t* dim;
  unsigned char* payload;
  std::uint64_t* payload_bytes;

  HCOMM_HOST_DEVICE void operator()(std::size_t) const {
    const std::size_t ib = index_bytes(chunks);
    const std::size_t packed_bytes = head_bytes + ib + *total * sizeof(Word);
    const std::size_t raw_bytes = head_bytes + n * sizeof(T);
    const bool packed = packed_bytes < raw_bytes;
    for (std::size_t i = 0; i < head_bytes; ++i) payload[i] = 0;
    payload[0] = packed ? mode_mpc : mode_raw;
    payload[1] = static_cast<unsigned char>(*dim);
    payload[2] = static_cast<unsigned char>(sizeof(T));
    payload[3] = format_version;
    const std::uint64_t ch = chunks;
    std::memcpy(payload + 8, &ch, 8);
    if (packed)
      for (std::size_t i = 2 * chunks; i < ib; ++i) payload[head_bytes + i] = 0;
    *payload_bytes = packed ? packed_bytes : raw_bytes;
  }
};

// ---------------------------------------------------------------------------------------
// Decoding. Validation first (nothing is written to the output until every chunk passed).

// sizes[c] = index entry of chunk c (words); scanned afterwards into offsets.
struct read_index_kernel {
  const unsigned char* payload;
  std::uint64_t* sizes;
  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    std::uint16_t e;
    std::memcpy(&e, payload + head_bytes + 2 * c, 2);
    sizes[c] = e;
  }
};

// bad[c] = 1 unless chunk c's size is possible for its value count, lies inside the body,
// and its bitmaps announce exactly as many non-zero words as the size leaves room for.
// Reads a bitmap only after checking that it lies inside the body.
template <floating_element T>
struct check_chunk_kernel {
  using Word = word_of<T>;
  static constexpr unsigned W = sizeof(Word) * 8;
  const unsigned char* payload;
  std::size_t n;
  std::size_t chunks;
  std::size_t body_words;        // words after header and index
  const std::uint64_t* offsets;  // scanned sizes
  std::uint64_t* bad;

  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    const std::size_t count = min_size(chunk_values, n - c * chunk_values);
    const std::size_t groups = (count + W - 1) / W;
    const std::uint64_t lo = offsets[c], hi = offsets[c + 1];
    const std::uint64_t size = hi - lo;
    bool ok = size >= groups && size <= groups * (W + 1) && hi <= body_words;
    const unsigned char* body = payload + head_bytes + index_bytes(chunks);
    // The bitmaps are a few scattered lines per chunk: ask for those of a later chunk now.
    if (c + 4 < chunks) prefetch(body + min_size(offsets[c + 4], body_words) * sizeof(Word));
    if (ok) {
      std::uint64_t ones = 0;
      for (std::size_t g = 0; g < groups; ++g) {
        Word b;
        std::memcpy(&b, body + (lo + g) * sizeof(Word), sizeof(Word));
        ones += popcount(b);
      }
      ok = ones == size - groups;
    }
    if (c == 0)  // the index padding must be zero (the encoder writes zeros)
      for (std::size_t i = 2 * chunks; i < index_bytes(chunks); ++i) ok = ok && payload[head_bytes + i] == 0;
    bad[c] = ok ? 0u : 1u;
  }
};

// Decodes chunk c (already validated) into out.
template <floating_element T>
struct decode_chunk_kernel {
  using Word = word_of<T>;
  using geo = geometry<Word>;
  static constexpr unsigned W = geo::bits;
  static constexpr unsigned L = geo::groups;
  const unsigned char* payload;
  std::size_t n;
  std::size_t chunks;
  unsigned dim;
  const std::uint64_t* offsets;
  T* out;

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { HCOMM_MPC_DISPATCH(i); }
#if HCOMM_MPC_CLONES
  HCOMM_MPC_AVX2_TARGET void body_avx2(std::size_t c) const {
    // The expansion reads 32 bytes (V words) at its position: past the chunk's last word it
    // may read up to V - 1 words of the next chunk, but not past the payload.
    constexpr std::size_t V = 32 / sizeof(Word);
    const std::size_t base = c * chunk_values;
    const std::size_t count = min_size(chunk_values, n - base);
    const unsigned groups = static_cast<unsigned>((count + W - 1) / W);
    const unsigned char* src = payload + head_bytes + index_bytes(chunks) + offsets[c] * sizeof(Word);
    const unsigned char* packed = src + groups * sizeof(Word);
    alignas(32) Word copy[chunk_values + V];
    if (offsets[c + 1] + V > offsets[chunks]) {
      const std::size_t nonzero = offsets[c + 1] - offsets[c] - groups;
      load_words(copy, packed, nonzero);
      for (std::size_t i = nonzero; i < nonzero + V; ++i) copy[i] = 0;
      packed = reinterpret_cast<const unsigned char*>(copy);
    }
    // Fetch the next chunk's words while this one is decoded (chunks are validated: the
    // addresses lie in the payload).
    const unsigned char* body = payload + head_bytes + index_bytes(chunks);
    const unsigned char* next = body + offsets[c + 1] * sizeof(Word);
    const unsigned char* next_end = c + 2 <= chunks ? body + offsets[c + 2] * sizeof(Word) : next;
    // Large outputs go out with non-temporal stores (see gather_kernel).
    auto* dst = reinterpret_cast<unsigned char*>(out + base);
    const bool stream = n * sizeof(T) >= gather_kernel<T>::stream_bytes;
    if constexpr (sizeof(Word) == 4)
      avx2::decode_f32(src, packed, groups, dim, count, dst, stream, next, next_end);
    else
      avx2::decode_f64(src, packed, groups, dim, count, dst, stream, next, next_end);
  }
#endif

  // The portable body (what every executor runs; on x86-64 hosts with AVX2, chunks take
  // avx2::decode_f32 / decode_f64 instead).
  HCOMM_MPC_INLINE void body(std::size_t c) const {
    const std::size_t base = c * chunk_values;
    const std::size_t count = min_size(chunk_values, n - base);
    const unsigned groups = static_cast<unsigned>((count + W - 1) / W);
    const unsigned char* src = payload + head_bytes + index_bytes(chunks) + offsets[c] * sizeof(Word);
    const std::size_t nonzero = offsets[c + 1] - offsets[c] - groups;

    Word bitmap[L];
    load_words(bitmap, src, groups);
    // The packed words, plus a zero word after them so that the branch-free expansion below
    // may read one past the last one.
    Word packed[chunk_values + 1];
    load_words(packed, src + groups * sizeof(Word), nonzero);
    packed[nonzero] = 0;

    // Expansion, the inverse of the encoder's row-by-row packing.
    for (unsigned g = groups; g < L; ++g) bitmap[g] = 0;
    Word all = static_cast<Word>(~Word(0)), any = 0;
    for (unsigned g = 0; g < L; ++g) {
      all &= bitmap[g];
      any |= bitmap[g];
    }
    Word m[chunk_values];
    std::size_t pos = 0;
    for (unsigned k = 0; k < W; ++k) {
      const Word bit = static_cast<Word>(Word(1) << k);
      Word* row = m + k * L;
      if (all & bit) {
        std::memcpy(row, packed + pos, L * sizeof(Word));
        pos += L;
      } else if (any & bit) {
        for (unsigned g = 0; g < L; ++g) {
          const Word keep = static_cast<Word>(Word(0) - ((bitmap[g] >> k) & 1u));  // all ones if stored
          row[g] = packed[pos] & keep;
          pos += static_cast<std::size_t>(keep & 1u);
        }
      } else {
        for (unsigned g = 0; g < L; ++g) row[g] = 0;
      }
    }

    plane_undelta<Word, L>(m);
    bit_transpose<Word, L>(m);

    // Back to value order and undo the delta: a running sum along each residue class modulo
    // dim, kept in a register. Stride 1 (the common case) does both in one pass and writes a
    // full chunk straight to the output.
    if (dim == 1 && count == chunk_values) {
      unsigned char* dst = reinterpret_cast<unsigned char*>(out + base);
      Word acc = 0;
      for (unsigned g = 0; g < L; ++g) {
        HCOMM_MPC_UNROLL
        for (unsigned k = 0; k < W; ++k) {
          acc = static_cast<Word>(acc + m[k * L + g]);
          std::memcpy(dst + (g * W + k) * sizeof(Word), &acc, sizeof(Word));
        }
      }
      return;
    }
    Word v[chunk_values];
    word_untranspose<Word>(m, v);
    for (std::size_t j = 0; j < dim && j < count; ++j) {
      Word acc = 0;
      for (std::size_t i = j; i < count; i += dim) {
        acc = static_cast<Word>(acc + v[i]);
        v[i] = acc;
      }
    }
    std::memcpy(out + base, v, count * sizeof(T));
  }
};

}  // namespace hcomm::codec::mpc_detail
