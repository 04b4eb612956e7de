// hcomm/core/avx2/block_hash_lanes.hpp: the AVX2 variant of block_hash64's stripes
// (../block_hash_lanes.hpp), four lanes per register, the same bits as the portable ones
// (tests/codec/test_frame.cpp compares them); picked by hcomm::cpu::dispatch.
#pragma once
#include "hcomm/core/cpu_features.hpp"

#if HCOMM_X86_VARIANTS
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "hcomm/core/block_hash_lanes.hpp"

namespace hcomm::detail::bh {
// count stripes from p, the same arithmetic as lanes::add_stripe, four lanes per register.
__attribute__((target("avx2"))) inline void add_stripes_avx2(lanes& l, const unsigned char* p, std::size_t count) {
  __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(l.acc));
  __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(l.acc + 4));
  const __m256i step = _mm256_set1_epi64x(static_cast<long long>(key_step));
  const __m256i shift = _mm256_set1_epi64x(static_cast<long long>(l.stripe * key_step));
  const auto k = [](int i) { return static_cast<long long>(key(i)); };
  __m256i k0 = _mm256_add_epi64(_mm256_setr_epi64x(k(0), k(1), k(2), k(3)), shift);
  __m256i k1 = _mm256_add_epi64(_mm256_setr_epi64x(k(4), k(5), k(6), k(7)), shift);
  for (std::size_t s = 0; s < count; ++s, p += stripe_bytes) {
    const __m256i d0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i d1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    const __m256i x0 = _mm256_xor_si256(d0, k0), x1 = _mm256_xor_si256(d1, k1);
    a0 = _mm256_add_epi64(a0, _mm256_mul_epu32(x0, _mm256_srli_epi64(x0, 32)));
    a1 = _mm256_add_epi64(a1, _mm256_mul_epu32(x1, _mm256_srli_epi64(x1, 32)));
    a0 = _mm256_add_epi64(a0, _mm256_shuffle_epi32(d0, 0x4E));  // word i to lane i ^ 1
    a1 = _mm256_add_epi64(a1, _mm256_shuffle_epi32(d1, 0x4E));
    k0 = _mm256_add_epi64(k0, step);
    k1 = _mm256_add_epi64(k1, step);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(l.acc), a0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(l.acc + 4), a1);
  l.stripe += count;
}
}  // namespace hcomm::detail::bh

namespace hcomm::cpu {
template <>
struct avx2_variant<::hcomm::detail::bh::stripes> {
  static constexpr bool available = true;
  static void run(const ::hcomm::detail::bh::stripes& s, const unsigned char* p, std::size_t count) {
    ::hcomm::detail::bh::add_stripes_avx2(s.l, p, count);
  }
};
}  // namespace hcomm::cpu
#endif  // HCOMM_X86_VARIANTS
