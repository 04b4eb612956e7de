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
// lifetime afterwards.
#pragma once
#include <string>
#include <type_traits>

#include "hcomm/comm/communicator.hpp"
#include "hcomm/comm/scheme.hpp"
#include "hcomm/topology/grid.hpp"

namespace hcomm {

template <scheme::scheme_policy S, class A>
using scheme_communicator =
    std::conditional_t<std::is_same_v<A, DP> && S::error_feedback,
                       communicator<ParallelAxis<A>, typename S::template compressor<A>, ErrorFeedback>,
                       communicator<ParallelAxis<A>, typename S::template compressor<A>>>;

template <scheme::scheme_policy S>
class bundle {
 public:
  using scheme_type = S;
  using dp_comm = scheme_communicator<S, DP>;
  using pp_comm = scheme_communicator<S, PP>;
  using tp_comm = scheme_communicator<S, TP>;

  explicit bundle(const grid& g, const comm_options& opt = {})
      : dp_(g.comm(axis_id::dp), opt), pp_(g.world(), opt), tp_(g.comm(axis_id::tp), opt) {}

  static std::string name() { return S::name(); }
  dp_comm& dp() noexcept { return dp_; }
  pp_comm& pp() noexcept { return pp_; }
  tp_comm& tp() noexcept { return tp_; }

  void reset_stats() noexcept {
    dp_.reset_stats();
    pp_.reset_stats();
    tp_.reset_stats();
  }

 private:
  dp_comm dp_;
  pp_comm pp_;
  tp_comm tp_;
};

}  // namespace hcomm
