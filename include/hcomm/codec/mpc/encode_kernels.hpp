// hcomm/codec/mpc/encode_kernels.hpp: the encoding kernels of the MPC codec (codec/mpc.hpp):
// the choice of the delta stride, the chunk coder, and the assembly of the payload.
//
// Each kernel is a functor with HCOMM_HOST_DEVICE operator()(std::size_t) const, run by an
// executor's for_each; one index is one chunk of 1024 values (or one sampled group, for the
// automatic choice of the delta stride). Nothing here allocates, throws or calls the host:
// the same bodies compile with nvcc.
//
//   hcomm::exec::host ex;
//   ex.for_each(chunks, mpc_detail::encode_chunk_kernel<float>{in, n, dim_ptr, scratch, sizes});
//
// A chunk goes through the stride-dim delta, the word transposition into the W x L matrix
// (word_matrix.hpp), the bit transposition of every group (bit_transpose.hpp), the second
// delta over the planes with its bitmaps (plane_delta.hpp), and zero-word elimination row by
// row: all-non-zero rows are copied whole, all-zero rows skipped, mixed rows packed by a
// branch-free scalar loop.
//
// On a GPU one chunk is one thread here (12-24 KiB of local arrays): correct and
// stream-ordered; device executors run the team kernels of team.hpp for float instead.
// Hosts with the AVX2 tier run the variants of avx2/kernels.hpp (same bytes).
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
#include "hcomm/core/checksum.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec::mpc_detail {

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
template <element T>
struct sample_dims_kernel {
  using Word = word_of<T>;
  static constexpr unsigned W = sizeof(Word) * 8;
  const T* in;
  std::size_t n;
  std::size_t samples;
  std::uint64_t* counts;

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { cpu::dispatch(*this, i); }

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
    for (unsigned d = 0; d < max_dim; ++d) counts[s * max_dim + d] = bits::popcount(bitmap[d]);
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
template <element T>
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

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { cpu::dispatch(*this, first + i); }

  // The portable body (what every executor runs; on hosts with the AVX2 tier, chunks take
  // avx2::encode_f32 / encode_f64 instead, which write the same bytes: avx2/kernels.hpp).
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
template <element T>
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

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { cpu::dispatch(*this, i); }

  // The portable body; large payloads on AVX2 hosts go out with non-temporal stores instead
  // (avx2/kernels.hpp).
  HCOMM_MPC_INLINE void body(std::size_t i) const {
    unsigned char* dst;
    const unsigned char* src;
    std::size_t bytes;
    if (!place(i, dst, src, bytes)) return;
    std::memcpy(dst, src, bytes);
    if (hasher) hasher->feed(static_cast<std::size_t>(dst - payload), src, bytes);
  }

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
template <element T>
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
template <element T>
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
template <element T>
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
}  // namespace hcomm::codec::mpc_detail
