// hcomm/codec/mpc/avx2/kernels.hpp: the AVX2 variants of the MPC kernels
// (../encode_kernels.hpp, ../decode_kernels.hpp), picked by hcomm::cpu::dispatch on hosts
// with the AVX2 tier. They write the same bytes as the portable bodies (what the GPU runs;
// tests/codec/mpc/test_avx2.cpp compares the two on every data kind, stride and chunk shape).
//
//   encode_chunk_kernel, decode_chunk_kernel   chunks through chunk_f32.hpp / chunk_f64.hpp
//   sample_dims_kernel                         the portable body compiled for AVX2
//   gather_kernel                              large payloads with non-temporal stores
//
// Large payloads and outputs are written with non-temporal stores (they do not fit in the
// caches anyway, and this saves reading every line before it is overwritten), and the next
// chunk is prefetched (a chunk is one 4 KiB page of floats or two of doubles, and hardware
// prefetchers stop at page boundaries).
#pragma once
#include "hcomm/core/cpu_features.hpp"

#if HCOMM_X86_VARIANTS
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "hcomm/codec/mpc/avx2/chunk_f32.hpp"
#include "hcomm/codec/mpc/avx2/chunk_f64.hpp"
#include "hcomm/codec/mpc/avx2/lanes.hpp"
#include "hcomm/codec/mpc/format.hpp"
#include "hcomm/codec/mpc/word_matrix.hpp"
#include "hcomm/core/dtype.hpp"

// The target of the AVX2 kernel bodies.
#define HCOMM_MPC_AVX2_TARGET __attribute__((target("avx2,popcnt")))

namespace hcomm::codec::mpc_detail {
template <element T>
struct sample_dims_kernel;
template <element T>
struct encode_chunk_kernel;
template <element T>
struct gather_kernel;
template <element T>
struct decode_chunk_kernel;

namespace avx2 {
// Payloads and outputs from this size on are written with non-temporal stores.
inline constexpr std::size_t stream_bytes = std::size_t(8) << 20;
}  // namespace avx2
}  // namespace hcomm::codec::mpc_detail

namespace hcomm::cpu {

template <element T>
struct avx2_variant<codec::mpc_detail::sample_dims_kernel<T>> {
  static constexpr bool available = true;
  HCOMM_MPC_AVX2_TARGET static void run(const codec::mpc_detail::sample_dims_kernel<T>& k, std::size_t s) {
    k.body(s);
  }
};

template <floating_element T>
struct avx2_variant<codec::mpc_detail::encode_chunk_kernel<T>> {
  static constexpr bool available = true;
  HCOMM_MPC_AVX2_TARGET static void run(const codec::mpc_detail::encode_chunk_kernel<T>& k, std::size_t c) {
    using namespace codec::mpc_detail;
    using Word = word_of<T>;
    using geo = geometry<Word>;
    constexpr unsigned W = geo::bits;
    const std::size_t base = c * chunk_values;
    const std::size_t count = min_size(chunk_values, k.n - base);
    const unsigned groups = static_cast<unsigned>((count + W - 1) / W);
    const unsigned dim = static_cast<unsigned>(*k.dim_ptr);
    Word* out = k.scratch + (c - k.first) * geo::slot_words;
    std::size_t size;
    if (count == chunk_values) {
      // A chunk is one or two 4 KiB pages, and hardware prefetchers stop at page boundaries:
      // fetch the next chunk while this one is coded.
      const auto* next = reinterpret_cast<const unsigned char*>(k.in + base + chunk_values);
      const auto* next_end = base + 2 * chunk_values <= k.n ? next + chunk_values * sizeof(T) : next;
      const auto* src = reinterpret_cast<const unsigned char*>(k.in + base);
      if constexpr (sizeof(Word) == 4)
        size = avx2::encode_f32<false>(src, dim, groups, out, next, next_end);
      else
        size = avx2::encode_f64<false>(src, dim, groups, out, next, next_end);
    } else {  // the short last chunk: residuals first (zero past the end)
      alignas(32) Word tail[chunk_values];
      alignas(32) Word r[chunk_values];
      load_words(tail, k.in + base, count);
      for (std::size_t i = count; i < chunk_values; ++i) tail[i] = 0;
      delta<Word>(reinterpret_cast<const unsigned char*>(tail), dim, r);
      for (std::size_t i = count; i < chunk_values; ++i) r[i] = 0;
      const auto* none = reinterpret_cast<const unsigned char*>(r);
      if constexpr (sizeof(Word) == 4)
        size = avx2::encode_f32<true>(none, dim, groups, out, none, none);
      else
        size = avx2::encode_f64<true>(none, dim, groups, out, none, none);
    }
    k.sizes[c] = size;
  }
};

template <floating_element T>
struct avx2_variant<codec::mpc_detail::gather_kernel<T>> {
  static constexpr bool available = true;
  // Payloads below stream_bytes take the portable body (a memcpy).
  static void run(const codec::mpc_detail::gather_kernel<T>& k, std::size_t i) {
    if (k.n * sizeof(T) >= codec::mpc_detail::avx2::stream_bytes) {
      stream(k, i);
      return;
    }
    k.body(i);
  }
  HCOMM_MPC_AVX2_TARGET static void stream(const codec::mpc_detail::gather_kernel<T>& k, std::size_t i) {
    unsigned char* dst;
    const unsigned char* src;
    std::size_t bytes;
    if (!k.place(i, dst, src, bytes)) return;
    codec::mpc_detail::avx2::stream_copy(dst, src, bytes);
    _mm_sfence();
    if (k.hasher) k.hasher->feed(static_cast<std::size_t>(dst - k.payload), src, bytes);
  }
};

template <floating_element T>
struct avx2_variant<codec::mpc_detail::decode_chunk_kernel<T>> {
  static constexpr bool available = true;
  HCOMM_MPC_AVX2_TARGET static void run(const codec::mpc_detail::decode_chunk_kernel<T>& k, std::size_t c) {
    using namespace codec::mpc_detail;
    using Word = word_of<T>;
    constexpr unsigned W = geometry<Word>::bits;
    // The expansion reads 32 bytes (V words) at its position: past the chunk's last word it
    // may read up to V - 1 words of the next chunk, but not past the payload.
    constexpr std::size_t V = 32 / sizeof(Word);
    const std::size_t base = c * chunk_values;
    const std::size_t count = min_size(chunk_values, k.n - base);
    const unsigned groups = static_cast<unsigned>((count + W - 1) / W);
    const unsigned char* src = k.payload + head_bytes + index_bytes(k.chunks) + k.offsets[c] * sizeof(Word);
    const unsigned char* packed = src + groups * sizeof(Word);
    alignas(32) Word copy[chunk_values + V];
    if (k.offsets[c + 1] + V > k.offsets[k.chunks]) {
      const std::size_t nonzero = k.offsets[c + 1] - k.offsets[c] - groups;
      load_words(copy, packed, nonzero);
      for (std::size_t i = nonzero; i < nonzero + V; ++i) copy[i] = 0;
      packed = reinterpret_cast<const unsigned char*>(copy);
    }
    // Fetch the next chunk's words while this one is decoded (chunks are validated: the
    // addresses lie in the payload).
    const unsigned char* body = k.payload + head_bytes + index_bytes(k.chunks);
    const unsigned char* next = body + k.offsets[c + 1] * sizeof(Word);
    const unsigned char* next_end = c + 2 <= k.chunks ? body + k.offsets[c + 2] * sizeof(Word) : next;
    // Large outputs go out with non-temporal stores (as the gather's).
    auto* dst = reinterpret_cast<unsigned char*>(k.out + base);
    const bool stream = k.n * sizeof(T) >= avx2::stream_bytes;
    if constexpr (sizeof(Word) == 4)
      avx2::decode_f32(src, packed, groups, k.dim, count, dst, stream, next, next_end);
    else
      avx2::decode_f64(src, packed, groups, k.dim, count, dst, stream, next, next_end);
  }
};

// 16-bit chunks: the portable bodies compiled for AVX2 (the compiler vectorises their
// loops over the 64 lanes of a chunk); the gather keeps its portable memcpy.
template <half_element T>
struct avx2_variant<codec::mpc_detail::encode_chunk_kernel<T>> {
  static constexpr bool available = true;
  HCOMM_MPC_AVX2_TARGET static void run(const codec::mpc_detail::encode_chunk_kernel<T>& k, std::size_t c) {
    k.body(c);
  }
};
template <half_element T>
struct avx2_variant<codec::mpc_detail::decode_chunk_kernel<T>> {
  static constexpr bool available = true;
  HCOMM_MPC_AVX2_TARGET static void run(const codec::mpc_detail::decode_chunk_kernel<T>& k, std::size_t c) {
    k.body(c);
  }
};

}  // namespace hcomm::cpu
#endif  // HCOMM_X86_VARIANTS
