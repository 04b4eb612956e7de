// hcomm/core/bits.hpp: bit counts and byte order of machine words, the same on the host and
// in CUDA device code (device intrinsics there, compiler builtins here).
//
//   unsigned n = hcomm::bits::popcount(word);   int z = hcomm::bits::clz64(x);  // x != 0
#pragma once
#include <cstdint>

#include "hcomm/core/macros.hpp"

// Forced inline, so that a caller compiled for another instruction set (a target attribute)
// gets its own copy instead of a call into the baseline one.
#if defined(__CUDACC__)
#define HCOMM_BITS_INLINE __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define HCOMM_BITS_INLINE inline __attribute__((always_inline))
#else
#define HCOMM_BITS_INLINE inline
#endif

namespace hcomm::bits {

// Without the POPCNT instruction in the baseline ISA, GCC calls libgcc for the builtin; the
// bit-twiddling version is faster than that call.
HCOMM_BITS_INLINE unsigned popcount(std::uint64_t x) {
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
HCOMM_BITS_INLINE unsigned popcount(std::uint32_t x) { return popcount(static_cast<std::uint64_t>(x)); }
HCOMM_BITS_INLINE unsigned popcount(std::uint16_t x) { return popcount(static_cast<std::uint64_t>(x)); }

// Leading and trailing zero bits of x != 0.
HCOMM_HOST_DEVICE int clz64(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}
HCOMM_HOST_DEVICE int ctz64(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(x)) - 1;
#else
  return __builtin_ctzll(x);
#endif
}

// The 8 bytes of x in reverse order.
HCOMM_HOST_DEVICE std::uint64_t bswap64(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  const unsigned lo = static_cast<unsigned>(x), hi = static_cast<unsigned>(x >> 32);
  return (static_cast<std::uint64_t>(__byte_perm(lo, 0, 0x0123)) << 32) | __byte_perm(hi, 0, 0x0123);
#else
  return __builtin_bswap64(x);
#endif
}

}  // namespace hcomm::bits
