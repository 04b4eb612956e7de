// hcomm/policy/axis.hpp: the three axes of 3-D parallel training as policy tags.
//
//   using grads = hcomm::ParallelAxis<hcomm::DP>;  // data parallel: gradient allreduce
//   using acts  = hcomm::ParallelAxis<hcomm::PP>;  // pipeline: activations between stages
//   using part  = hcomm::ParallelAxis<hcomm::TP>;  // tensor parallel: partial sums
#pragma once
#include <concepts>
#include <string_view>
#include <type_traits>

namespace hcomm {

enum class axis_id : unsigned char { dp = 0, pp = 1, tp = 2 };

struct DP { static constexpr axis_id id = axis_id::dp; static constexpr std::string_view name = "dp"; };
struct PP { static constexpr axis_id id = axis_id::pp; static constexpr std::string_view name = "pp"; };
struct TP { static constexpr axis_id id = axis_id::tp; static constexpr std::string_view name = "tp"; };

template <class T>
concept axis_tag = std::same_as<T, DP> || std::same_as<T, PP> || std::same_as<T, TP>;

template <class A>
struct ParallelAxis {
  static_assert(axis_tag<A>, "hcomm: ParallelAxis<A> takes DP, PP or TP");
  using tag = A;
  static constexpr axis_id id = A::id;
  static constexpr std::string_view name = A::name;
};

namespace detail {
template <class T> struct is_parallel_axis : std::false_type {};
template <class A> struct is_parallel_axis<ParallelAxis<A>> : std::true_type {};
}  // namespace detail

template <class T>
concept axis_policy = detail::is_parallel_axis<T>::value;

constexpr std::string_view to_string(axis_id a) noexcept {
  return a == axis_id::dp ? "dp" : a == axis_id::pp ? "pp" : "tp";
}

}  // namespace hcomm
