// hcomm/codec/mpc/bit_transpose.hpp: the W x W bit transposition of every group of a chunk
// (row k = bit plane W-1-k of the group's words), by recursive block swaps over the W x L
// word matrix.
#pragma once
#include "hcomm/codec/mpc/format.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec::mpc_detail {

// Mask selecting the low j bits of every 2j-bit block: 0x0000FFFF, 0x00FF00FF, ... for j = 16, 8, ...
template <class Word>
HCOMM_HOST_DEVICE constexpr Word swap_mask_of(unsigned j) {
  return static_cast<Word>(static_cast<Word>(~Word(0)) / ((Word(1) << j) + 1));
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
  if constexpr (sizeof(Word) == 2) {
    transpose_rounds<Word, Lanes, 8, 1>(m);   // round 8
    transpose_rounds<Word, Lanes, 4, 3>(m);   // rounds 4, 2, 1
  } else if constexpr (sizeof(Word) == 4) {
    transpose_rounds<Word, Lanes, 16, 2>(m);  // rounds 16, 8
    transpose_rounds<Word, Lanes, 4, 3>(m);   // rounds 4, 2, 1
  } else {
    transpose_rounds<Word, Lanes, 32, 3>(m);  // rounds 32, 16, 8
    transpose_rounds<Word, Lanes, 4, 3>(m);   // rounds 4, 2, 1
  }
}
}  // namespace hcomm::codec::mpc_detail
