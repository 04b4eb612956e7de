// hcomm/comm/device_bundle.hpp: the three communicators of a 3-D parallel rank for one
// scheme, on an executor's (device) memory: bundle<S> (comm/bundle.hpp) with
// device_communicator (comm/device_communicator.hpp) on every axis.
//
//   hcomm::grid g(dp, pp, tp);
//   hcomm::device_bundle<hcomm::scheme::zhybrid<16, 8>, hcomm::exec::cuda, hcomm::transport::mpi_staged>
//       b(g, {}, hcomm::exec::cuda{stream});
//   b.tp().allreduce(hcomm::device_span<float>(d_partial, n));   // coded and reduced on the stream
//   b.pp().send(hcomm::device_span<const float>(d_acts, n), g.next_stage(), 0);
//   b.dp().allreduce(hcomm::device_span<float>(d_grads, n));
//
// The axes, their communicators and the peers are bundle<S>'s: dp() and tp() over the grid's
// axis sub-communicators, pp() over the grid's world duplicate. By default all three share
// the executor (one stream: their calls are ordered with the compute that produced their
// buffers). Given a second executor, DP runs on it (a communication stream, so that gradient
// buckets are reduced while backward goes on); the caller then orders the two with events:
//
//   hcomm::device_bundle<S, hcomm::exec::cuda, hcomm::transport::mpi_staged> b(g, {}, compute, comm);
//   b.dp().executor().wait(compute.record());     // the bucket's gradients are written
//   b.dp().allreduce(bucket);                     // on the communication stream
//   compute.wait(b.dp().executor().record());     // before the optimizer reads them
//
// exec::host_check with transport::mpi_staged runs the device code paths on the CPU.
#pragma once
#include <string>
#include <type_traits>

#include "hcomm/comm/axis_options.hpp"
#include "hcomm/comm/bundle.hpp"  // detail::axis_bundle
#include "hcomm/comm/device_communicator.hpp"
#include "hcomm/comm/scheme.hpp"
#include "hcomm/topology/grid.hpp"

namespace hcomm {

template <scheme::scheme_policy S, class A, exec::executor Exec, class Transport>
using scheme_device_communicator =
    std::conditional_t<std::is_same_v<A, DP> && S::error_feedback,
                       device_communicator<Exec, Transport, ParallelAxis<A>, typename S::template compressor<A>, ErrorFeedback>,
                       device_communicator<Exec, Transport, ParallelAxis<A>, typename S::template compressor<A>>>;

template <scheme::scheme_policy S, exec::executor Exec, class Transport>
class device_bundle
    : public detail::axis_bundle<S, scheme_device_communicator<S, DP, Exec, Transport>,
                                 scheme_device_communicator<S, PP, Exec, Transport>,
                                 scheme_device_communicator<S, TP, Exec, Transport>> {
  using base = detail::axis_bundle<S, scheme_device_communicator<S, DP, Exec, Transport>,
                                   scheme_device_communicator<S, PP, Exec, Transport>,
                                   scheme_device_communicator<S, TP, Exec, Transport>>;

 public:
  using executor_type = Exec;
  using transport_type = Transport;

  // opt: one comm_options for every axis, or an axis_options (comm/axis_options.hpp).
  explicit device_bundle(const grid& g, const axis_options& opt = {}, Exec ex = {}) : device_bundle(g, opt, ex, ex) {}
  // DP on `dp_ex`, PP and TP on `ex`.
  device_bundle(const grid& g, const axis_options& opt, Exec ex, Exec dp_ex)
      : base{typename base::dp_comm(g.comm(axis_id::dp), opt.dp, dp_ex), typename base::pp_comm(g.world(), opt.pp, ex),
             typename base::tp_comm(g.comm(axis_id::tp), opt.tp, ex)} {}
};

}  // namespace hcomm
