// hcomm/codec/mpc/word_matrix.hpp: a chunk's values as words: the stride-dim delta of the
// values, and the word transposition between value order and the W x L matrix (value
// g*W + k of the chunk = row k, lane g).
#pragma once
#include <cstddef>
#include <cstring>

#include "hcomm/codec/mpc/format.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec::mpc_detail {

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
}  // namespace hcomm::codec::mpc_detail
