// hcomm/codec/list.hpp: a list of codec families and what can be asked of it at run time,
// by a frame's codec byte.
//
//   using codecs = hcomm::codec::codec_list<none_codec, mpc_codec, zfp_codec>;
//   using more   = codecs::with<my_codec>;                       // a list of one's own
//   hcomm::codec::list_visit<more>(id, hcomm::dtype::f32, [](auto c) { ... });  // c: Codec<float>
//   (bf16 and f16 visit Codec<hcomm::bf16>, Codec<hcomm::f16>: refused for a codec that does not take them)
//
// A list is checked when it is used: every member a codec_family (codec/traits.hpp), ids and
// names unique, so a frame byte and a parse_config name each mean one codec.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "hcomm/codec/traits.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"

namespace hcomm::codec {

template <template <class> class... Codecs>
struct codec_list {
  static constexpr std::size_t size = sizeof...(Codecs);
  template <template <class> class... More>
  using with = codec_list<Codecs..., More...>;
};

namespace detail {
template <class L>
struct is_codec_list : std::false_type {};
template <template <class> class... Cs>
struct is_codec_list<codec_list<Cs...>> : std::true_type {};

template <template <class> class... Cs>
constexpr bool unique_ids_and_names(codec_list<Cs...>) {
  constexpr codec_id ids[] = {family_traits<Cs>::id..., codec_id{}};
  constexpr std::string_view names[] = {std::string_view(family_traits<Cs>::name)..., std::string_view{}};
  for (std::size_t i = 0; i < sizeof...(Cs); ++i)
    for (std::size_t j = i + 1; j < sizeof...(Cs); ++j)
      if (ids[i] == ids[j] || names[i] == names[j]) return false;
  return true;
}
template <template <class> class... Cs>
constexpr bool all_families(codec_list<Cs...>) {
  return (codec_family<Cs> && ...);
}
template <class L>
struct each;
template <template <class> class... Cs>
struct each<codec_list<Cs...>> {
  template <class F>
  static constexpr void run(F& f) {
    (f(family_traits<Cs>{}), ...);
  }
};
template <class L>
constexpr bool checked_list() {
  static_assert(is_codec_list<L>::value, "hcomm: a codec list is hcomm::codec::codec_list<Codec...>");
  if constexpr (is_codec_list<L>::value) {
    static_assert(L::size > 0, "hcomm: a codec list names at least one codec");
    static_assert(all_families(L{}),
                  "hcomm: every codec of a codec list satisfies codec_type (codec/traits.hpp) for float or double");
    static_assert(unique_ids_and_names(L{}), "hcomm: two codecs of a codec list share an id or a name");
  }
  return true;
}
}  // namespace detail

// A codec list whose members satisfy the concepts (checked by static_assert where used).
template <class L>
concept codec_list_type = detail::is_codec_list<L>::value && detail::checked_list<L>();

// Calls f(family_traits<Codec>{}) for each codec of the list, in order.
template <codec_list_type L, class F>
constexpr void for_each_codec(F&& f) {
  detail::each<L>::run(f);
}

// Whether the list has a codec with this id.
template <codec_list_type L>
constexpr bool list_contains(codec_id id) {
  bool found = false;
  for_each_codec<L>([&](auto c) { found = found || decltype(c)::id == id; });
  return found;
}

// The codec's name, or "codec#N" for an id the list lacks.
template <codec_list_type L>
std::string list_name(codec_id id) {
  std::string out;
  for_each_codec<L>([&](auto c) {
    if (out.empty() && decltype(c)::id == id) out = std::string(decltype(c)::name);
  });
  return out.empty() ? "codec#" + std::to_string(static_cast<unsigned>(id)) : out;
}

// Calls pred(family_traits<Codec>{}) for the codec with this id (false for an id the list lacks).
template <codec_list_type L, class Pred>
constexpr bool list_ask(codec_id id, Pred&& pred) {
  bool out = false;
  for_each_codec<L>([&](auto c) {
    if (decltype(c)::id == id) out = pred(c);
  });
  return out;
}

// The usages joined ("none, mpc[:DIM] or zfp:RATE"), of the codecs pred(traits) accepts.
template <codec_list_type L, class Pred>
std::string list_usages(Pred&& pred, std::string_view sep = ", ", std::string_view last = " or ") {
  std::vector<std::string_view> u;
  for_each_codec<L>([&](auto c) {
    if (pred(c)) u.push_back(decltype(c)::usage);
  });
  std::string out;
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (i > 0) out += i + 1 == u.size() ? last : sep;
    out += u[i];
  }
  return out;
}

namespace detail {
// What f returns for the first codec of the list that takes T (void when none does).
template <class T, class F, class L>
struct visit_result {
  using type = void;
};
template <bool Takes, class T, class F, template <class> class First, class Rest>
struct visit_result_step {
  using type = typename visit_result<T, F, Rest>::type;
};
template <class T, class F, template <class> class First, class Rest>
struct visit_result_step<true, T, F, First, Rest> {
  using type = decltype(std::declval<F>()(First<T>{}));
};
template <class T, class F, template <class> class First, template <class> class... Rest>
struct visit_result<T, F, codec_list<First, Rest...>>
    : visit_result_step<family_takes<First, T>, T, F, First, codec_list<Rest...>> {};
// What a visit returns: f's result for a codec of the list (for float, else for double: every
// family takes one of them, and f returns the same type for every codec it is called with).
template <class F, class L>
using visit_result_t = std::conditional_t<std::is_void_v<typename visit_result<float, F, L>::type>,
                                          typename visit_result<double, F, L>::type,
                                          typename visit_result<float, F, L>::type>;

template <element T, class R, class F, template <class> class First, template <class> class... Rest>
R visit_codec(codec_id id, F&& f, codec_list<First, Rest...>) {
  if (family_traits<First>::id == id) {
    if constexpr (family_takes<First, T>) {
      return f(First<T>{});
    } else {
      fail(errc::invalid_argument, "codec " + std::string(family_traits<First>::name) + " does not take " +
                                       std::string(to_string(dtype_of<T>)) + " values");
    }
  }
  if constexpr (sizeof...(Rest) > 0) {
    return visit_codec<T, R>(id, static_cast<F&&>(f), codec_list<Rest...>{});
  } else {
    fail(errc::invalid_argument,
         "codec codec#" + std::to_string(static_cast<unsigned>(id)) + " is not in this build's registry");
  }
}
}  // namespace detail

// Calls f(Codec<T>{}) for the codec with this id and the element type T of `type`.
template <codec_list_type L, class F>
detail::visit_result_t<F, L> list_visit(codec_id id, dtype type, F&& f) {
  using R = detail::visit_result_t<F, L>;
  if (type == dtype::f32) return detail::visit_codec<float, R>(id, static_cast<F&&>(f), L{});
  if (type == dtype::f64) return detail::visit_codec<double, R>(id, static_cast<F&&>(f), L{});
  if (type == dtype::bf16) return detail::visit_codec<bf16, R>(id, static_cast<F&&>(f), L{});
  if (type == dtype::f16) return detail::visit_codec<f16, R>(id, static_cast<F&&>(f), L{});
  fail(errc::invalid_argument, "unknown dtype");
}

// Values per segment of the pipelined collectives are a multiple of this: no segment splits
// a block of any codec of the list.
template <codec_list_type L>
constexpr std::size_t block_multiple() {
  std::size_t m = 1;
  for_each_codec<L>([&](auto c) {
    const std::size_t b = block_values_of<decltype(c)>();
    std::size_t x = m, y = b;
    while (y != 0) {
      const std::size_t t = x % y;
      x = y;
      y = t;
    }
    m = m / x * b;
  });
  return m;
}

// The id of the list's identity codec (payload = raw values): the collectives frame their
// uncompressed messages with it. A list without one has none to offer (checked where needed).
template <codec_list_type L>
constexpr bool has_identity() {
  bool found = false;
  for_each_codec<L>([&](auto c) { found = found || identity_of<decltype(c)>(); });
  return found;
}
template <codec_list_type L>
constexpr codec_id identity_id() {
  static_assert(has_identity<L>(), "hcomm: the codec list needs an identity codec (none_codec) for raw messages");
  codec_id id{};
  bool found = false;
  for_each_codec<L>([&](auto c) {
    if (!found && identity_of<decltype(c)>()) {
      id = decltype(c)::id;
      found = true;
    }
  });
  return id;
}

}  // namespace hcomm::codec
