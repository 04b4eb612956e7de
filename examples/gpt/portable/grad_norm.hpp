// examples/gpt/portable/grad_norm.hpp: the sum of squares of a gradient allocation (for the
// global norm that clipping divides by) as team kernels of the execution model, written once
// for every executor: each team sums a fixed chunk in double in the collectives' fixed order,
// then one team sums the chunk totals in chunk order. The result is the same bits on every
// run and every backend (the trainer's loop sums in another order, so it agrees to rounding).
//
//   gpt::portable::sum_squares_chunks k1{partial, g, n};      ex.launch(k1.league(), 256, k1);
//   gpt::portable::sum_partials k2{total, partial, k1.league()};  ex.launch(1, 256, k2);
#pragma once
#include <cstddef>

#include "hcomm/core/macros.hpp"
#include "hcomm/exec/team.hpp"

namespace gpt::portable {

struct sum_squares_chunks {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::sum_squares_chunks";
  static constexpr std::size_t chunk = 1 << 16;
  double* partial;  // [league()]
  const float* g;
  std::size_t n;
  std::size_t league() const { return (n + chunk - 1) / chunk; }
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t b = team.league_rank(), lo = b * chunk, hi = lo + chunk < n ? lo + chunk : n;
    auto part = team.template per_thread<double>();
    team.for_threads([&](int t) {
      double s = 0;
      for (std::size_t i = lo + static_cast<std::size_t>(t); i < hi; i += static_cast<std::size_t>(team.size()))
        s += static_cast<double>(g[i]) * g[i];
      part[t] = s;
    });
    const double total = team.reduce(part, hcomm::exec::sum{});
    team.for_threads([&](int t) {
      if (t == 0) partial[b] = total;
    });
  }
};

struct sum_partials {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::sum_partials";
  double* total;
  const double* partial;
  std::size_t m;
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    auto part = team.template per_thread<double>();
    team.for_threads([&](int t) {
      double s = 0;
      for (std::size_t i = static_cast<std::size_t>(t); i < m; i += static_cast<std::size_t>(team.size())) s += partial[i];
      part[t] = s;
    });
    const double sum = team.reduce(part, hcomm::exec::sum{});
    team.for_threads([&](int t) {
      if (t == 0) *total = sum;
    });
  }
};

}  // namespace gpt::portable
