// msparse/policy/growth.hpp: how a sparse topology evolves: dense, static sparse, SET
// (random regrowth), RigL (gradient regrowth) and Mixed Growing (MST), as policy tags.
//
//   using mst = msparse::Growth<msparse::Mixed<3>>;     // 3/4 by gradient, 1/4 at random
//   static_assert(mst::gradient_share_num == 3 && mst::gradient_share_den == 4);
//   msparse::visit_growth("rigl", [&]<class G>() { run_benchmark<G>(); });  // --sparsity rigl
//
// Every baseline goes through the same mechanism (a tag satisfying growth_tag), so a
// benchmark instantiates each one the same way; growth_rule is the run-time image of a tag
// for code that picks the policy from a command line.
#pragma once
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "hcomm/core/error.hpp"

namespace msparse {

enum class growth_id : unsigned char { dense = 0, fixed = 1, set = 2, rigl = 3, mixed = 4 };

// Dense training: no mask, no topology updates (the FLOP baseline).
struct Dense {
  static constexpr growth_id id = growth_id::dense;
  static constexpr std::string_view name = "dense";
  static constexpr bool is_sparse = false;
  static constexpr bool evolves = false;            // topology updates happen
  static constexpr bool varies_sparsity = false;    // follows the MST phase schedule
  static constexpr unsigned gradient_share_num = 0; // grown by gradient: num/den
  static constexpr unsigned gradient_share_den = 1;
};

// Static sparse: a random (ERK) mask fixed at initialisation.
struct Static {
  static constexpr growth_id id = growth_id::fixed;
  static constexpr std::string_view name = "static";
  static constexpr bool is_sparse = true;
  static constexpr bool evolves = false;
  static constexpr bool varies_sparsity = false;
  static constexpr unsigned gradient_share_num = 0;
  static constexpr unsigned gradient_share_den = 1;
};

// SET (Mocanu et al. 2018): prune by magnitude, regrow uniformly at random.
struct SET {
  static constexpr growth_id id = growth_id::set;
  static constexpr std::string_view name = "set";
  static constexpr bool is_sparse = true;
  static constexpr bool evolves = true;
  static constexpr bool varies_sparsity = false;
  static constexpr unsigned gradient_share_num = 0;
  static constexpr unsigned gradient_share_den = 1;
};

// RigL (Evci et al. 2020): prune by magnitude, regrow by largest dense-gradient magnitude.
struct RigL {
  static constexpr growth_id id = growth_id::rigl;
  static constexpr std::string_view name = "rigl";
  static constexpr bool is_sparse = true;
  static constexpr bool evolves = true;
  static constexpr bool varies_sparsity = false;
  static constexpr unsigned gradient_share_num = 1;
  static constexpr unsigned gradient_share_den = 1;
};

// Mixed Growing (MST): R/(R+1) of the grown connections by gradient, the rest at random;
// runs under the phased Sparsity Variation schedule.
template <unsigned R>
concept valid_mixed_ratio = R >= 1 && R <= 1024;

template <unsigned R = 3>
struct Mixed {
  static_assert(R >= 1, "msparse: Mixed<R> needs R >= 1 (R = 0 is purely random growth: use SET)");
  static_assert(R <= 1024, "msparse: Mixed<R>: R above 1024 is RigL in all but name (use RigL)");
  static_assert(valid_mixed_ratio<R>);
  static constexpr growth_id id = growth_id::mixed;
  static constexpr std::string_view name = "mst";
  static constexpr bool is_sparse = true;
  static constexpr bool evolves = true;
  static constexpr bool varies_sparsity = true;
  static constexpr unsigned ratio = R;
  static constexpr unsigned gradient_share_num = R;
  static constexpr unsigned gradient_share_den = R + 1;
};

namespace detail {
template <class T> struct is_mixed_tag : std::false_type {};
template <unsigned R> struct is_mixed_tag<Mixed<R>> : std::true_type {};
}  // namespace detail

template <class T>
concept growth_tag = std::same_as<T, Dense> || std::same_as<T, Static> || std::same_as<T, SET> ||
                     std::same_as<T, RigL> || detail::is_mixed_tag<T>::value;

// Growth<G>: wraps a growth tag; the slot a sparse trainer looks for.
template <class G>
struct Growth {
  static_assert(growth_tag<G>, "msparse: Growth<G> takes Dense, Static, SET, RigL or Mixed<R>");
  using tag = G;
  static constexpr growth_id id = G::id;
  static constexpr std::string_view name = G::name;
  static constexpr bool is_sparse = G::is_sparse;
  static constexpr bool evolves = G::evolves;
  static constexpr bool varies_sparsity = G::varies_sparsity;
  static constexpr unsigned gradient_share_num = G::gradient_share_num;
  static constexpr unsigned gradient_share_den = G::gradient_share_den;
  // Needs the dense weight gradient on topology-update steps (RigL-style growth).
  static constexpr bool needs_dense_gradient = G::evolves && G::gradient_share_num > 0;
};

namespace detail {
template <class T> struct is_growth : std::false_type {};
template <class G> struct is_growth<Growth<G>> : std::true_type {};
}  // namespace detail

template <class T>
concept growth_policy = detail::is_growth<T>::value;

// The run-time image of a growth tag (what a command-line switch selects).
struct growth_rule {
  growth_id id = growth_id::dense;
  bool is_sparse = false;
  bool evolves = false;
  bool varies_sparsity = false;
  unsigned gradient_share_num = 0;
  unsigned gradient_share_den = 1;
  constexpr bool needs_dense_gradient() const noexcept { return evolves && gradient_share_num > 0; }
  // Of `grow` connections, how many go to the largest gradients (the rest are random).
  constexpr std::uint64_t by_gradient(std::uint64_t grow) const noexcept {
    return grow * gradient_share_num / gradient_share_den;
  }
  friend bool operator==(const growth_rule&, const growth_rule&) = default;
};

template <class G>
  requires growth_tag<G> || growth_policy<G>
constexpr growth_rule rule_of() noexcept {
  return growth_rule{G::id, G::is_sparse, G::evolves, G::varies_sparsity, G::gradient_share_num,
                     G::gradient_share_den};
}

// Mixed with a ratio chosen at run time (the tags fix it at compile time).
inline growth_rule mixed_rule(unsigned r) {
  HCOMM_EXPECTS(r >= 1, "msparse: mixed growth ratio r must be >= 1 (r = 0 is SET)");
  return growth_rule{growth_id::mixed, true, true, true, r, r + 1};
}

// Calls f.template operator()<G>() with the tag named by `name`: dense | static | set |
// rigl | mst (Mixed<3>). Unknown names throw invalid_argument.
template <class F>
decltype(auto) visit_growth(std::string_view name, F&& f) {
  if (name == "dense") return f.template operator()<Dense>();
  if (name == "static") return f.template operator()<Static>();
  if (name == "set") return f.template operator()<SET>();
  if (name == "rigl") return f.template operator()<RigL>();
  if (name == "mst" || name == "mixed") return f.template operator()<Mixed<>>();
  hcomm::fail(hcomm::errc::invalid_argument,
              "msparse: unknown sparsity method '" + std::string(name) + "' (dense|static|set|rigl|mst)");
}

inline growth_rule growth_rule_from_name(std::string_view name) {
  // [&]: a lambda with a capture has no conversion to a function pointer, which nvcc would
  // otherwise warn about (445) for a template lambda.
  return visit_growth(name, [&]<class G>() { return rule_of<G>(); });
}

constexpr std::string_view to_string(growth_id g) noexcept {
  switch (g) {
    case growth_id::dense: return "dense";
    case growth_id::fixed: return "static";
    case growth_id::set: return "set";
    case growth_id::rigl: return "rigl";
    case growth_id::mixed: return "mst";
  }
  return "unknown";
}

}  // namespace msparse
