// hcomm/comm/bundle.hpp: the three communicators of a 3-D parallel rank for one scheme.
//
//   hcomm::grid g(dp, pp, tp);
//   hcomm::bundle<hcomm::scheme::mzhybrid<8>> b(g);
//   b.tp().allreduce(std::span<float>(partial));                       // MPC, lossless
//   b.pp().send(std::span<const float>(acts), g.next_stage(), /*tag=*/0);  // world ranks
//   b.dp().allreduce(std::span<float>(grads));                         // ZFP rate 8
//   auto s = b.dp().stats();
//
// dp() and tp() run over the grid's axis sub-communicators; pp() runs over the grid's world
// duplicate so that peers are the world ranks prev_stage()/next_stage() return. Each
// communicator duplicates what it is given, so the bundle does not depend on the grid's
// lifetime afterwards. Given an axis_options (comm/axis_options.hpp), each axis takes its own
// options, e.g. TP uncompressed while DP and PP keep the scheme.
#pragma once
#include <string>
#include <type_traits>
#include <utility>

#include "hcomm/comm/axis_options.hpp"
#include "hcomm/comm/communicator.hpp"
#include "hcomm/comm/scheme.hpp"
#include "hcomm/topology/grid.hpp"

namespace hcomm {

namespace detail {
// The three communicators of a rank, whatever their memory (bundle, device_bundle). The
// derived bundle constructs them in the order dp, pp, tp (each duplicates its MPI
// communicator: collective, so every rank must follow the same order; a braced list keeps it).
template <class S, class Dp, class Pp, class Tp>
class axis_bundle {
 public:
  using scheme_type = S;
  using dp_comm = Dp;
  using pp_comm = Pp;
  using tp_comm = Tp;

  static std::string name() { return S::name(); }
  dp_comm& dp() noexcept { return dp_; }
  pp_comm& pp() noexcept { return pp_; }
  tp_comm& tp() noexcept { return tp_; }

  void reset_stats() noexcept {
    dp_.reset_stats();
    pp_.reset_stats();
    tp_.reset_stats();
  }

 protected:
  axis_bundle(Dp&& dp, Pp&& pp, Tp&& tp) : dp_(std::move(dp)), pp_(std::move(pp)), tp_(std::move(tp)) {}

 private:
  dp_comm dp_;
  pp_comm pp_;
  tp_comm tp_;
};
}  // namespace detail

template <scheme::scheme_policy S, class A>
using scheme_communicator =
    std::conditional_t<std::is_same_v<A, DP> && S::error_feedback,
                       communicator<ParallelAxis<A>, typename S::template compressor<A>, ErrorFeedback>,
                       communicator<ParallelAxis<A>, typename S::template compressor<A>>>;

template <scheme::scheme_policy S>
class bundle : public detail::axis_bundle<S, scheme_communicator<S, DP>, scheme_communicator<S, PP>,
                                          scheme_communicator<S, TP>> {
  using base = detail::axis_bundle<S, scheme_communicator<S, DP>, scheme_communicator<S, PP>, scheme_communicator<S, TP>>;

 public:
  // opt: one comm_options for every axis, or an axis_options with each its own.
  explicit bundle(const grid& g, const axis_options& opt = {})
      : base{typename base::dp_comm(g.comm(axis_id::dp), opt.dp), typename base::pp_comm(g.world(), opt.pp),
             typename base::tp_comm(g.comm(axis_id::tp), opt.tp)} {}
};

}  // namespace hcomm
