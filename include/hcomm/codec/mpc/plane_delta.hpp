// hcomm/codec/mpc/plane_delta.hpp: the second delta over the bit planes of each group and
// the bitmaps of its non-zero plane words (what zero-word elimination keeps), and the
// inverse.
#pragma once
#include "hcomm/codec/mpc/format.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec::mpc_detail {

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
}  // namespace hcomm::codec::mpc_detail
