// hcomm/codec/traits.hpp: what a codec is. A codec joins hcomm by satisfying these concepts
// and being named in a codec list (codec/list.hpp); the frame, the engine, the collectives
// and the communicators ask its traits and never name it.
//
//   template <hcomm::floating_element T>
//   struct my_codec {                                    // one codec per element type
//     static constexpr hcomm::codec_id id{7};            // the frame byte; unique in the list
//     static constexpr std::string_view name = "mine";   // parse_config("mine:3"), to_string
//     static constexpr bool lossy = false;
//     static constexpr hcomm::codec::param_use parameter = hcomm::codec::param_use::optional;
//     static constexpr std::string_view usage = "mine[:K]";
//     static constexpr std::string_view param_help = "mine takes K = 0..9";
//     using value_type = T;
//     static constexpr bool valid_param(unsigned k) noexcept { return k <= 9; }
//     static constexpr std::size_t max_payload_bytes(std::size_t n, unsigned k) noexcept;
//     static constexpr std::size_t workspace_bytes(std::size_t n, unsigned k) noexcept;
//     template <class Exec> static void encode(const Exec&, const T* in, std::size_t n, unsigned k,
//         std::byte* payload, std::uint64_t* payload_bytes /*executor memory*/, std::byte* ws);
//     template <class Exec> static void decode(const Exec&, const std::byte* payload,
//         std::size_t payload_bytes, std::size_t n, unsigned k, T* out, std::byte* ws);
//   };
//   using codecs = hcomm::codec::registered_codecs::with<my_codec>;
//   hcomm::codec::engine<hcomm::exec::host, codecs> eng;
//
// Optional members (defaults in brackets), read through the *_of helpers below:
//   min_payload_bytes(n, k)      the least payload for n values, so a frame that announces more
//                                values than its payload can hold is refused before anything
//                                is sized by its count [0: bounded by the output cap only]
//   typical_payload_bytes(n, k)  what a frame slot of the ring reserves; larger frames travel
//                                in two messages [max_payload_bytes]
//   default_param                what "NAME" alone means for a codec whose parameter is
//                                optional (int8 = int8:256) [0]
//   block_values                 values the codec codes together; segments of the pipelined
//                                collectives are a multiple of every listed codec's [1]
//   identity                     the payload is the raw values; the collectives send such
//                                messages with MPI's own operations [false]
//   feedback_stable(k)           error feedback with this parameter keeps its residual bounded:
//                                the codec's error on a block is smaller than the block
//                                (||x - decode(encode(x))|| < ||x||), so x + e cannot grow step
//                                after step; the communicators refuse error feedback where it is
//                                false [true: a lossy codec vouches for itself]
//   encode(..., ws, fused_checksum*)  hashes payload blocks while writing them (core/checksum.hpp)
// Element types: Codec<float>, Codec<double>, Codec<hcomm::bf16> and Codec<hcomm::f16> are
// asked (family_takes); a codec that does not take one constrains its parameter or leaves that
// instantiation short of codec_type, and frames of that dtype are then refused.
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "hcomm/codec/id.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/exec/host.hpp"

namespace hcomm::codec {

// What the engine needs of a codec to run it (the kernel half of codec_type).
template <class C>
concept codec_kernel = requires(std::size_t n, unsigned p) {
  { C::id } -> std::convertible_to<codec_id>;
  typename C::value_type;
  { C::valid_param(p) } -> std::same_as<bool>;
  { C::max_payload_bytes(n, p) } -> std::same_as<std::size_t>;
  { C::workspace_bytes(n, p) } -> std::same_as<std::size_t>;
  // decode throws hcomm::error on a malformed payload before writing out, whatever the bytes
  // (checksums can be off).
};

// How a codec's parameter is written: "none" (no parameter), "mpc" or "mpc:4" (optional),
// "zfp:8" (required).
enum class param_use { none, optional, required };

// A codec for one element type: the kernel plus what parse_config, to_string, the frame
// checks and the collectives ask of it; encode and decode on the host executor (any executor
// that satisfies exec::executor runs them the same way).
template <class C>
concept codec_type =
    codec_kernel<C> && element<typename C::value_type> &&
    requires(const exec::host& ex, const typename C::value_type* in, typename C::value_type* out, std::size_t n,
             unsigned p, std::byte* bytes, const std::byte* cbytes, std::uint64_t* size) {
      { C::name } -> std::convertible_to<std::string_view>;
      { C::lossy } -> std::convertible_to<bool>;
      { C::parameter } -> std::convertible_to<param_use>;
      { C::usage } -> std::convertible_to<std::string_view>;
      { C::param_help } -> std::convertible_to<std::string_view>;
      C::encode(ex, in, n, p, bytes, size, bytes);
      C::decode(ex, cbytes, n, n, p, out, bytes);
    };

// A codec family, as a list names it: Codec<T> for the element types it takes, one id and
// one name for all of them. (A constexpr bool, not a concept: nvcc cannot compile concepts
// over template template arguments.)
template <template <class> class Codec>
inline constexpr bool codec_family = (codec_type<Codec<float>> || codec_type<Codec<double>>) &&
                       (!codec_type<Codec<float>> || !codec_type<Codec<double>> ||
                        (Codec<float>::id == Codec<double>::id && Codec<float>::name == Codec<double>::name &&
                         Codec<float>::lossy == Codec<double>::lossy));

namespace detail {
template <template <class> class Codec, class T, class = void>
struct takes : std::false_type {};
template <template <class> class Codec, class T>
struct takes<Codec, T, std::void_t<Codec<T>>> : std::bool_constant<codec_type<Codec<T>>> {};
}  // namespace detail

// Whether the family takes element type T: Codec<T> can be named (a constrained template
// parameter may refuse it) and satisfies codec_type.
template <template <class> class Codec, class T>
inline constexpr bool family_takes = detail::takes<Codec, T>::value;

// The instantiation that speaks for a family's element-independent traits.
template <template <class> class Codec>
using family_traits = std::conditional_t<codec_type<Codec<float>>, Codec<float>, Codec<double>>;

// --- optional traits, with their defaults ---
template <class C>
constexpr std::size_t min_payload_bytes_of(std::size_t n, unsigned p) {
  if constexpr (requires { C::min_payload_bytes(n, p); }) return C::min_payload_bytes(n, p);
  else return 0;
}
template <class C>
concept has_typical_payload = requires(std::size_t n, unsigned p) {
  { C::typical_payload_bytes(n, p) } -> std::convertible_to<std::size_t>;
};
template <class C>
constexpr std::size_t typical_payload_bytes_of(std::size_t n, unsigned p) {
  if constexpr (has_typical_payload<C>) return C::typical_payload_bytes(n, p);
  else return C::max_payload_bytes(n, p);
}
template <class C>
constexpr unsigned default_param_of() {
  if constexpr (requires { C::default_param; }) return C::default_param;
  else return 0;
}
template <class C>
constexpr std::size_t block_values_of() {
  if constexpr (requires { C::block_values; }) return C::block_values;
  else return 1;
}
template <class C>
constexpr bool feedback_stable_of(unsigned p) {
  if constexpr (requires { C::feedback_stable(p); }) return C::feedback_stable(p);
  else return true;
}
template <class C>
constexpr bool identity_of() {
  if constexpr (requires { C::identity; }) return C::identity;
  else return false;
}

}  // namespace hcomm::codec
