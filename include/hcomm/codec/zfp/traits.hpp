// hcomm/codec/zfp/traits.hpp: what the ZFP coder needs to know of float and double, and
// their bit patterns (the base of the other codec/zfp headers).
//
// The codec (codec/zfp.hpp) codes one block of 4 values exactly as libzfp 1.0 codes a 1-D
// block in fixed-rate mode (maxbits = minbits = 4*rate, unlimited precision, no rounding);
// 64 consecutive blocks form a group whose 64*4*rate bits are a whole number (4*rate) of
// 64-bit words, so groups write disjoint words and run in parallel on any executor
// (group_kernels.hpp). Everything in these headers is HCOMM_HOST_DEVICE and uses no library
// call that a GPU lacks (memcpy only), except the AVX2 batch coders in avx2/, host-only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/core/bits.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/macros.hpp"

// The block coders are forced inline into the group loops so that the bit writer/reader
// state stays in registers.
#if defined(__CUDACC__)
#define HCOMM_ZFP_INLINE __host__ __device__ __forceinline__
#else
#define HCOMM_ZFP_INLINE inline __attribute__((always_inline))
#endif

namespace hcomm::codec::zfp_detail {

using bits::bswap64;
using bits::clz64;
using bits::ctz64;
using u64 = std::uint64_t;

// A group: 64 blocks of 4 values, coded into words of their own.
inline constexpr std::size_t group_blocks = 64;
inline constexpr std::size_t group_values = 4 * group_blocks;

template <class T>
struct traits;
template <>
struct traits<float> {
  using U = std::uint32_t;
  using I = std::int32_t;
  static constexpr int P = 32;          // integer precision (bit planes)
  static constexpr int ebits = 8;       // exponent bits in a block header
  static constexpr int ebias = 127;
  static constexpr int mbits = 23;      // stored mantissa bits
  static constexpr U absmask = 0x7fffffffu;
  static constexpr U expmask = 0x7f800000u;
  static constexpr U nbmask = 0xaaaaaaaau;  // negabinary mask
};
template <>
struct traits<double> {
  using U = std::uint64_t;
  using I = std::int64_t;
  static constexpr int P = 64;
  static constexpr int ebits = 11;
  static constexpr int ebias = 1023;
  static constexpr int mbits = 52;
  static constexpr U absmask = 0x7fffffffffffffffull;
  static constexpr U expmask = 0x7ff0000000000000ull;
  static constexpr U nbmask = 0xaaaaaaaaaaaaaaaaull;
};

// The 16-bit types are coded as the float32 values they widen to (compute_of<T>); their own
// traits say only what the non-finite side list needs of their bit patterns.
template <>
struct traits<bf16> {
  using U = std::uint16_t;
  static constexpr U absmask = 0x7fffu;
  static constexpr U expmask = 0x7f80u;
};
template <>
struct traits<f16> {
  using U = std::uint16_t;
  static constexpr U absmask = 0x7fffu;
  static constexpr U expmask = 0x7c00u;
};

// A stored value as the type it is coded in (16-bit types widen exactly to float), and a
// decoded value back (16-bit types round to nearest even).
template <class T>
HCOMM_HOST_DEVICE compute_of<T> load_value(const T& x) {
  if constexpr (half_element<T>) {
    const std::uint32_t u = widen_bits<T>(x.bits);
    float v;
    std::memcpy(&v, &u, sizeof v);
    return v;
  } else {
    return x;
  }
}
template <class T>
HCOMM_HOST_DEVICE void store_value(T* dst, compute_of<T> v) {
  if constexpr (half_element<T>) {
    std::uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    *dst = T::from_bits(narrow_bits<T>(u));
  } else {
    *dst = v;
  }
}

// ---- value <-> bits --------------------------------------------------------------------------
template <class T>
HCOMM_HOST_DEVICE typename traits<T>::U to_bits(T v) {
  typename traits<T>::U u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
template <class T>
HCOMM_HOST_DEVICE T from_bits(typename traits<T>::U u) {
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
template <class T>
HCOMM_HOST_DEVICE bool is_nonfinite_bits(typename traits<T>::U u) {
  return (u & traits<T>::expmask) == traits<T>::expmask;
}

// 2^e as T, exactly as ldexp(1, e) rounds it (0 below the smallest subnormal). Used where e
// cannot exceed the largest finite exponent.
template <class T>
HCOMM_HOST_DEVICE T pow2(int e) {
  using Tr = traits<T>;
  using U = typename Tr::U;
  if (e >= 1 - Tr::ebias) return from_bits<T>(static_cast<U>(e + Tr::ebias) << Tr::mbits);
  if (e >= 1 - Tr::ebias - Tr::mbits) return from_bits<T>(U{1} << (e - (1 - Tr::ebias - Tr::mbits)));
  return T(0);
}
}  // namespace hcomm::codec::zfp_detail
