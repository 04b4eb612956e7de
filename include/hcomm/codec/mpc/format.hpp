// hcomm/codec/mpc/format.hpp: the MPC payload's constants and chunk geometry, and the macros
// its kernels share (the base of the other codec/mpc headers).
//
// Terms. A *chunk* is 1024 consecutive values, coded independently of the others. A *group*
// is W consecutive values (W = 16 for bf16 and f16, 32 for float, 64 for double: the bits in
// a word); a chunk holds L = 1024 / W groups. Inside a chunk the groups are laid out as a W x L word matrix
// (row k = word k of every group), so that every step of the bit transposition, the second
// delta and the bitmap construction is one loop over L contiguous lanes that the compiler
// vectorises (word_matrix.hpp, bit_transpose.hpp, plane_delta.hpp).
#pragma once
#include <cstddef>
#include <cstdint>

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
// instruction-set variant of it (avx2/kernels.hpp).
#if defined(__CUDACC__)
#define HCOMM_MPC_INLINE __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define HCOMM_MPC_INLINE inline __attribute__((always_inline))
#else
#define HCOMM_MPC_INLINE inline
#endif

namespace hcomm::codec::mpc_detail {

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


// A hint to fetch the cache line at p (host only; never faults).
HCOMM_MPC_INLINE void prefetch(const void* p) {
#if !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}
}  // namespace hcomm::codec::mpc_detail
