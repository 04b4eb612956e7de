// hcomm/algorithm/validation.hpp: the cross-rank check before a collective: every rank
// passes what it was called with, and all ranks throw the same errc::mismatch when they
// differ, so that none is left waiting in a pattern the others never start.
//
//   check_same_call<Transport, Codecs>(comm, rank, "dp", op_id::allreduce, n, dtype::f32, cfg);
#pragma once
#include <array>
#include <cstddef>
#include <string>

#include "hcomm/algorithm/options.hpp"
#include "hcomm/codec/config.hpp"
#include "hcomm/codec/frame.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"

namespace hcomm::algorithm {

// Every rank passes (op, count, dtype, codec, extra); one maximum over the values and their
// negations gives min and max everywhere, so all ranks agree and all throw.
template <class Transport, codec::codec_list_type Codecs>
void check_same_call(typename Transport::comm_type comm, int rank, const std::string& label, op_id op, std::size_t n,
                     dtype t, const codec::config& c, long long extra = 0, const char* extra_name = "root") {
  const long long cfg_code = static_cast<long long>(c.codec) * 1000 + c.param;
  const std::array<long long, 5> v{static_cast<long long>(op), static_cast<long long>(n), static_cast<long long>(t),
                                   cfg_code, extra};
  std::array<long long, 10> mm{};
  for (std::size_t i = 0; i < v.size(); ++i) {
    mm[2 * i] = v[i];
    mm[2 * i + 1] = -v[i];
  }
  Transport::max_allreduce(mm.data(), 10, comm);
  static const char* names[5] = {"operation", "element count", "dtype", "codec", nullptr};
  for (std::size_t i = 0; i < v.size(); ++i) {
    const long long hi = mm[2 * i], lo = -mm[2 * i + 1];
    if (hi == lo) continue;
    const std::string what = i == 4 ? extra_name : names[i];
    auto show = [&](long long x) -> std::string {
      if (i == 0) return to_string(static_cast<op_id>(x));
      if (i == 2) return std::string(hcomm::to_string(static_cast<dtype>(x)));
      if (i == 3) return codec::codec_name<Codecs>(static_cast<codec_id>(x / 1000)) + ":" + std::to_string(x % 1000);
      return std::to_string(x);
    };
    fail(errc::mismatch, label + " " + to_string(op) + ": " + what + " differs across ranks (min " + show(lo) +
                             ", max " + show(hi) + "; rank " + std::to_string(rank) + " has " + show(v[i]) + ")");
  }
}

}  // namespace hcomm::algorithm
