// hcomm/policy/compressor.hpp: the design card's compression policies.
//
//   using exact = hcomm::Compressor<hcomm::Lossless>;   // MPC, bit-exact
//   using lossy = hcomm::Compressor<hcomm::Lossy<8>>;   // ZFP fixed rate, 8 bits/value
//   using raw   = hcomm::Compressor<hcomm::Uncompressed>;
//   using half  = hcomm::Compressor<hcomm::Cast<hcomm::BF16>>;  // bfloat16 cast (baseline)
//   using q8    = hcomm::Compressor<hcomm::Int8<256>>;       // blockwise int8 (baseline)
//   static_assert(hcomm::compressor_policy<lossy> && lossy::rate == 8);
//
// Policies are empty tags; their values are static constexpr members: the codec's frame byte
// (codec/id.hpp; the codec's traits are found by it in a codec list), its parameter, and
// whether the result is exact. Wrong arguments fail with a static_assert that starts with
// "hcomm:" and says what to fix.
#pragma once
#include <concepts>
#include <cstdint>
#include <type_traits>

#include "hcomm/codec/id.hpp"

namespace hcomm {

// Lossless MPC. Dim is the delta stride (1..32); 0 = chosen automatically from a sample.
template <unsigned Dim = 0>
struct LosslessDim {
  static_assert(Dim <= 32, "hcomm: Lossless MPC dimension must be 0 (auto) or 1..32");
  static constexpr codec_id codec = codec_id::mpc;
  static constexpr bool is_lossless = true;
  static constexpr unsigned dim = Dim;
  static constexpr unsigned param = Dim;
};
using Lossless = LosslessDim<0>;

// Lossy ZFP fixed rate, in bits per value. One 1-D ZFP block of 4 values needs at least
// 9 bits (float) or 12 (double), so the smallest usable integer rate is 3.
template <unsigned Rate>
struct Lossy {
  static_assert(Rate != 0, "hcomm: Lossy<Rate> needs Rate > 0 bits per value (use Lossless or Uncompressed for no loss)");
  static_assert(Rate >= 3, "hcomm: Lossy<Rate>: ZFP needs at least 3 bits per value in 1-D (a block of 4 needs 9 bits of header)");
  static_assert(Rate <= 64, "hcomm: Lossy<Rate>: rates above 64 bits per value are larger than raw doubles");
  static constexpr codec_id codec = codec_id::zfp;
  static constexpr bool is_lossless = false;
  static constexpr unsigned rate = Rate;
  static constexpr unsigned param = Rate;
};

// A cast to a narrower floating-point format; the formats are tags. BF16: bfloat16, round to
// nearest even (codec/bf16.hpp), as PyTorch DDP's bf16 compression hook sends gradients.
struct BF16 {};
namespace detail {
template <class T> struct is_cast_format : std::false_type {};
template <> struct is_cast_format<BF16> : std::true_type {};
}  // namespace detail
template <class Format>
struct Cast {
  static_assert(detail::is_cast_format<Format>::value, "hcomm: Cast<Format> takes BF16 (Cast<hcomm::BF16>)");
  static constexpr codec_id codec = codec_id::bf16;
  static constexpr bool is_lossless = false;
  static constexpr unsigned param = 0;
  using format = Format;
};

// Blockwise symmetric int8 quantisation (codec/int8.hpp), as ZeRO++ quantises weights and
// gradients: a scale per Block values, then one signed byte a value.
template <unsigned Block = 256>
struct Int8 {
  static_assert(Block >= 8 && Block <= 512 && (Block & (Block - 1)) == 0,
                "hcomm: Int8<Block>: the block is a power of two from 8 to 512 values");
  static constexpr codec_id codec = codec_id::int8;
  static constexpr bool is_lossless = false;
  static constexpr unsigned block = Block;
  static constexpr unsigned param = Block;
};

// No compression: the baseline every scheme is compared with.
struct Uncompressed {
  static constexpr codec_id codec = codec_id::none;
  static constexpr bool is_lossless = true;
  static constexpr unsigned param = 0;
};

namespace detail {
template <class T> struct is_lossy_tag : std::false_type {};
template <unsigned R> struct is_lossy_tag<Lossy<R>> : std::true_type {};
template <class T> struct is_lossless_tag : std::false_type {};
template <unsigned D> struct is_lossless_tag<LosslessDim<D>> : std::true_type {};
template <class T> struct is_baseline_tag : std::false_type {};
template <class F> struct is_baseline_tag<Cast<F>> : std::true_type {};
template <unsigned B> struct is_baseline_tag<Int8<B>> : std::true_type {};
}  // namespace detail

template <class T>
concept compression_tag = detail::is_lossy_tag<T>::value || detail::is_lossless_tag<T>::value ||
                          detail::is_baseline_tag<T>::value || std::same_as<T, Uncompressed>;

// Compressor<P>: wraps a compression tag; the slot a typed communicator looks for.
template <class P>
struct Compressor {
  // Completing P first makes the tag's own checks (e.g. Lossy<0>) fire here.
  static_assert(sizeof(P) > 0);
  static_assert(compression_tag<P>,
                "hcomm: Compressor<P> takes Lossless, LosslessDim<D>, Lossy<Rate>, Cast<BF16>, Int8<Block> or "
                "Uncompressed");
  using tag = P;
  static constexpr codec_id codec = P::codec;
  static constexpr bool is_lossless = P::is_lossless;
  static constexpr unsigned param = P::param;
};

namespace detail {
template <class T> struct is_compressor : std::false_type {};
template <class P> struct is_compressor<Compressor<P>> : std::true_type {};
}  // namespace detail

template <class T>
concept compressor_policy = detail::is_compressor<T>::value;

}  // namespace hcomm
