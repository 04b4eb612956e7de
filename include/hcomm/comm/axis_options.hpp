// hcomm/comm/axis_options.hpp: the communicator options of a bundle's three axes: one
// comm_options for all of them (the implicit conversion), or each axis its own.
//
//   hcomm::comm_options opt{.threshold_bytes = 0};
//   hcomm::bundle<hcomm::scheme::zhybrid<16, 8>> b(g, hcomm::axis_options(opt).uncompressed(hcomm::axis_id::tp));
//
// uncompressed(a): every message of axis a goes uncompressed, as a message below
// threshold_bytes does (the transport's own collectives and point-to-point); the other axes
// keep the scheme. For a layout known in advance (TP on NVLink inside a node), where
// comm_options::compress_inside_node finds it at run time from where the ranks are.
#pragma once
#include <cstddef>
#include <limits>

#include "hcomm/algorithm/options.hpp"
#include "hcomm/policy/axis.hpp"

namespace hcomm {

struct axis_options {
  algorithm::options dp, pp, tp;

  axis_options(const algorithm::options& all = {}) : dp(all), pp(all), tp(all) {}  // NOLINT: implicit on purpose

  algorithm::options& of(axis_id a) noexcept { return a == axis_id::dp ? dp : a == axis_id::pp ? pp : tp; }
  const algorithm::options& of(axis_id a) const noexcept { return a == axis_id::dp ? dp : a == axis_id::pp ? pp : tp; }

  axis_options& uncompressed(axis_id a) noexcept {
    of(a).threshold_bytes = std::numeric_limits<std::size_t>::max();
    return *this;
  }
};

}  // namespace hcomm
