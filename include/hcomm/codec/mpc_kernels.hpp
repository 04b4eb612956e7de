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
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

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

namespace hcomm::codec::mpc_detail {

#if HCOMM_MPC_CLONES
inline bool host_has_avx2() noexcept {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#define HCOMM_MPC_DISPATCH(i)                        \
  if (::hcomm::codec::mpc_detail::host_has_avx2()) { \
    body_avx2(i);                                    \
    return;                                          \
  }                                                  \
  body(i)
#define HCOMM_MPC_AVX2_VARIANT \
  __attribute__((target("avx2"))) void body_avx2(std::size_t i) const { body(i); }
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
  Word* scratch;
  std::uint64_t* sizes;

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { HCOMM_MPC_DISPATCH(i); }
  HCOMM_MPC_AVX2_VARIANT

  // The portable body (what every executor runs; the host may run an AVX2 build of it).
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
    Word* out = scratch + c * geo::max_chunk_words;
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

// Pass 2 (after the scan of the sizes): moves chunk c to its place, or, when the compressed
// payload would not be smaller than the raw values, copies chunk c's raw values instead.
template <floating_element T>
struct gather_kernel {
  using Word = word_of<T>;
  using geo = geometry<Word>;
  const T* in;
  std::size_t n;
  const Word* scratch;
  const std::uint64_t* offsets;  // exclusive scan of the sizes, offsets[chunks] = total words
  std::size_t chunks;
  unsigned char* payload;

  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    const std::size_t ib = index_bytes(chunks);
    const std::size_t packed_bytes = head_bytes + ib + offsets[chunks] * sizeof(Word);
    const std::size_t raw_bytes = head_bytes + n * sizeof(T);
    const std::size_t base = c * chunk_values;
    if (packed_bytes < raw_bytes) {
      const std::size_t words = offsets[c + 1] - offsets[c];
      std::memcpy(payload + head_bytes + ib + offsets[c] * sizeof(Word), scratch + c * geo::max_chunk_words,
                  words * sizeof(Word));
      const std::uint16_t entry = static_cast<std::uint16_t>(words);
      std::memcpy(payload + head_bytes + 2 * c, &entry, 2);
    } else {
      const std::size_t count = min_size(chunk_values, n - base);
      std::memcpy(payload + head_bytes + base * sizeof(T), in + base, count * sizeof(T));
    }
  }
};

// Writes the payload header (and the index padding) and the payload size: one work item.
template <floating_element T>
struct finish_kernel {
  using Word = word_of<T>;
  std::size_t n;
  std::size_t chunks;
  const std::uint64_t* offsets;
  const std::uint64_t* dim;
  unsigned char* payload;
  std::uint64_t* payload_bytes;

  HCOMM_HOST_DEVICE void operator()(std::size_t) const {
    const std::size_t ib = index_bytes(chunks);
    const std::size_t packed_bytes = head_bytes + ib + offsets[chunks] * sizeof(Word);
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
    if (ok) {
      const unsigned char* body = payload + head_bytes + index_bytes(chunks);
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
  HCOMM_MPC_AVX2_VARIANT

  // The portable body (what every executor runs; the host may run an AVX2 build of it).
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
