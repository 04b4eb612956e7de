// msparse/policy/phase.hpp: the three phases of Mixed Sparsity Training as policy tags.
//
//   using warm = msparse::SparsityPhase<msparse::Warmup>;   // dense -> sparse, in stages
//   using ultra = msparse::SparsityPhase<msparse::Ultra>;   // the ultra-sparse plateau
//   using rest = msparse::SparsityPhase<msparse::Restore>;  // connections reinstated
//   static_assert(msparse::sparsity_phase_policy<ultra> && ultra::id == msparse::phase_id::ultra);
//
// Policies are empty tags; their values are static constexpr members. Wrong arguments fail
// with a static_assert that starts with "msparse:" and says what to fix. The schedule
// (msparse/schedule.hpp) answers which phase a step is in at run time with the same
// phase_id, so compile-time and run-time code name phases identically.
#pragma once
#include <concepts>
#include <string_view>
#include <type_traits>

namespace msparse {

enum class phase_id : unsigned char { warmup = 0, ultra = 1, restore = 2 };

struct Warmup {
  static constexpr phase_id id = phase_id::warmup;
  static constexpr std::string_view name = "warmup";
  // Warm-up only ever raises sparsity (or keeps it); restoration only lowers it. The
  // topology update uses this to know whether the target change prunes or grows.
  static constexpr int sparsity_direction = +1;
};
struct Ultra {
  static constexpr phase_id id = phase_id::ultra;
  static constexpr std::string_view name = "ultra";
  static constexpr int sparsity_direction = 0;
};
struct Restore {
  static constexpr phase_id id = phase_id::restore;
  static constexpr std::string_view name = "restore";
  static constexpr int sparsity_direction = -1;
};

template <class T>
concept phase_tag = std::same_as<T, Warmup> || std::same_as<T, Ultra> || std::same_as<T, Restore>;

template <class P>
struct SparsityPhase {
  static_assert(phase_tag<P>, "msparse: SparsityPhase<P> takes Warmup, Ultra or Restore");
  using tag = P;
  static constexpr phase_id id = P::id;
  static constexpr std::string_view name = P::name;
  static constexpr int sparsity_direction = P::sparsity_direction;
};

namespace detail {
template <class T> struct is_sparsity_phase : std::false_type {};
template <class P> struct is_sparsity_phase<SparsityPhase<P>> : std::true_type {};
}  // namespace detail

template <class T>
concept sparsity_phase_policy = detail::is_sparsity_phase<T>::value;

// Calls f.template operator()<SparsityPhase<P>>() for the run-time phase (what the
// schedule returns), so phase-specialised code is chosen once per step.
template <class F>
constexpr decltype(auto) visit_phase(phase_id p, F&& f) {
  if (p == phase_id::warmup) return f.template operator()<SparsityPhase<Warmup>>();
  if (p == phase_id::ultra) return f.template operator()<SparsityPhase<Ultra>>();
  return f.template operator()<SparsityPhase<Restore>>();
}

constexpr std::string_view to_string(phase_id p) noexcept {
  return p == phase_id::warmup ? "warmup" : p == phase_id::ultra ? "ultra" : "restore";
}

}  // namespace msparse
