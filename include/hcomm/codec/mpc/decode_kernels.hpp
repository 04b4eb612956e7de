// hcomm/codec/mpc/decode_kernels.hpp: the decoding kernels of the MPC codec (codec/mpc.hpp):
// validation of the index and the bitmaps first (nothing is written to the output until
// every chunk passed), then the chunk decoder, the mirror image of the encoder's.
//
//   ex.for_each(chunks, mpc_detail::decode_chunk_kernel<float>{payload, n, chunks, dim, offsets, out});
//
// Hosts with the AVX2 tier run the variant of avx2/kernels.hpp (same values).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/codec/mpc/avx2/kernels.hpp"
#include "hcomm/codec/mpc/bit_transpose.hpp"
#include "hcomm/codec/mpc/format.hpp"
#include "hcomm/codec/mpc/plane_delta.hpp"
#include "hcomm/codec/mpc/word_matrix.hpp"
#include "hcomm/core/bits.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec::mpc_detail {

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
template <element T>
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
        ones += bits::popcount(b);
      }
      ok = ones == size - groups;
    }
    if (c == 0)  // the index padding must be zero (the encoder writes zeros)
      for (std::size_t i = 2 * chunks; i < index_bytes(chunks); ++i) ok = ok && payload[head_bytes + i] == 0;
    bad[c] = ok ? 0u : 1u;
  }
};

// Decodes chunk c (already validated) into out.
template <element T>
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

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { cpu::dispatch(*this, i); }

  // The portable body (what every executor runs; on hosts with the AVX2 tier, chunks take
  // avx2::decode_f32 / decode_f64 instead: avx2/kernels.hpp).
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
