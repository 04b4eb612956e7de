// hcomm/comm/registry.hpp: pick a compile-time scheme by its name at run time.
//
//   hcomm::dispatch_scheme(argv_scheme, [&]<class Scheme>() {
//     hcomm::bundle<Scheme> b(grid);
//     train(b);
//   });                                  // "zhybrid:16,8" -> scheme::zhybrid<16, 8>
//
// Only the schemes in the list are instantiated (each one compiles the callback once);
// pass your own scheme_list to add rates. An unknown name throws errc::invalid_argument
// listing the registered names.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "hcomm/comm/scheme.hpp"
#include "hcomm/core/error.hpp"

namespace hcomm {

template <scheme::scheme_policy... S>
struct scheme_list {};

using default_schemes =
    scheme_list<scheme::none, scheme::naive<4>, scheme::naive<8>, scheme::naive<16>, scheme::mzhybrid<4>,
                scheme::mzhybrid<8>, scheme::mzhybrid<16>, scheme::zhybrid<16, 4>, scheme::zhybrid<16, 8>,
                scheme::zhybrid<24, 8>, scheme::zhybrid<32, 16>,
                scheme::with_error_feedback<scheme::naive<8>>, scheme::with_error_feedback<scheme::zhybrid<16, 6>>,
                scheme::with_error_feedback<scheme::mzhybrid<6>>, scheme::bf16, scheme::int8<256>,
                scheme::with_error_feedback<scheme::int8<256>>>;

template <class... S>
std::vector<std::string> scheme_names(scheme_list<S...>) {
  return {S::name()...};
}
inline std::vector<std::string> scheme_names() { return scheme_names(default_schemes{}); }

template <class... S>
bool has_scheme(std::string_view name, scheme_list<S...>) {
  return ((S::name() == name) || ...);
}
inline bool has_scheme(std::string_view name) { return has_scheme(name, default_schemes{}); }

template <class... S>
[[noreturn]] void unknown_scheme(std::string_view name, scheme_list<S...> list) {
  std::string known;
  for (const auto& n : scheme_names(list)) known += (known.empty() ? "" : ", ") + n;
  fail(errc::invalid_argument, "unknown scheme '" + std::string(name) + "'; registered: " + known);
}

// Calls f.template operator()<Scheme>() for the scheme called `name`; returns what f returns.
template <class F, class... S>
decltype(auto) dispatch_scheme(std::string_view name, F&& f, scheme_list<S...> list) {
  using R = decltype(f.template operator()<scheme::none>());
  if constexpr (std::is_void_v<R>) {
    const bool found = ((S::name() == name ? (f.template operator()<S>(), true) : false) || ...);
    if (!found) unknown_scheme(name, list);
  } else {
    R out{};
    const bool found = ((S::name() == name ? (out = f.template operator()<S>(), true) : false) || ...);
    if (!found) unknown_scheme(name, list);
    return out;
  }
}
template <class F>
decltype(auto) dispatch_scheme(std::string_view name, F&& f) {
  return dispatch_scheme(name, static_cast<F&&>(f), default_schemes{});
}


}  // namespace hcomm
