// hcomm/exec/scan_kernels.hpp: the exclusive scan of 64-bit counts as three team kernels
// (reduce tiles, scan the tile totals, scan each tile from its offset): what the CUDA and
// host-check executors run for exclusive_scan, so the GPU scans with code CI checks.
//
//   std::uint64_t* partial = ...;                     // scan_partials(n, team) + 1 words
//   run_exclusive_scan(ex, in, out, n, team, partial); // out[i] = in[0] + ... + in[i-1], out[n] = total
//
// in and out may be the same pointer. Integer sums are exact, so every backend, team size and
// tile order gives the bytes of a serial loop. No host round trip: the tile count is known
// from n.
#pragma once
#include <cstddef>
#include <cstdint>

#include "hcomm/core/macros.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm::exec {

namespace scan_detail {
inline constexpr int items = 8;  // values per thread of a tile

HCOMM_HOST_DEVICE constexpr std::size_t tile_values(int team) { return static_cast<std::size_t>(team) * items; }

// Sum of thread t's values of the tile at base (items consecutive values, those below n).
HCOMM_HOST_DEVICE std::uint64_t thread_sum(const std::uint64_t* in, std::size_t n, std::size_t base, int t) {
  std::uint64_t acc = 0;
  for (int j = 0; j < items; ++j) {
    const std::size_t i = base + static_cast<std::size_t>(t) * items + j;
    if (i < n) acc += in[i];
  }
  return acc;
}
}  // namespace scan_detail

// Tiles of `team` threads over n values: the words of partials the scan needs (plus one).
HCOMM_HOST_DEVICE constexpr std::size_t scan_partials(std::size_t n, int team) {
  return (n + scan_detail::tile_values(team) - 1) / scan_detail::tile_values(team);
}

// host-check runs these kernels too. In a CUDA translation unit nvcc then warns (20014) for
// every call from the __host__ __device__ operator() into the host team's members. Those
// instantiations run on the host only (in device code such a call is an error, not a
// warning), so the warning is turned off for the three kernels.
#if defined(__NVCC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20014
#endif

// partial[tile] = sum of the tile's values.
struct scan_reduce_tiles_kernel {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "scan_reduce_tiles";
  const std::uint64_t* in;
  std::size_t n;
  std::uint64_t* partial;
  std::size_t scratch_bytes(int) const { return 0; }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t base = team.league_rank() * scan_detail::tile_values(team.size());
    auto s = team.template per_thread<std::uint64_t>();
    team.for_threads([&](int t) { s[t] = scan_detail::thread_sum(in, n, base, t); });
    const std::uint64_t total = team.reduce(s, sum{});
    team.for_threads([&](int t) {
      if (t == 0) partial[team.league_rank()] = total;
    });
  }
};

// One team: partial[0..tiles) becomes its exclusive scan, partial[tiles] the total.
struct scan_tile_offsets_kernel {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "scan_tile_offsets";
  std::uint64_t* partial;
  std::size_t tiles;
  std::size_t scratch_bytes(int) const { return 0; }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t T = static_cast<std::size_t>(team.size());
    std::uint64_t carry = 0;
    for (std::size_t first = 0; first < tiles; first += T) {
      auto v = team.template per_thread<std::uint64_t>();
      team.for_threads([&](int t) {
        const std::size_t i = first + static_cast<std::size_t>(t);
        v[t] = i < tiles ? partial[i] : 0;
      });
      auto inc = team.inclusive_scan(v, sum{});
      const std::uint64_t window = team.broadcast(inc, team.size() - 1);
      team.for_threads([&](int t) {
        const std::size_t i = first + static_cast<std::size_t>(t);
        if (i < tiles) partial[i] = carry + inc[t] - v[t];
      });
      carry += window;
    }
    team.for_threads([&](int t) {
      if (t == 0) partial[tiles] = carry;
    });
  }
};

// Each tile from its offset: out[i] = offset + the sum of the tile's values before i.
struct scan_tiles_kernel {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "scan_tiles";
  const std::uint64_t* in;
  std::uint64_t* out;
  std::size_t n;
  const std::uint64_t* partial;  // scanned; partial[tiles] = total
  std::size_t tiles;
  std::size_t scratch_bytes(int) const { return 0; }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t base = team.league_rank() * scan_detail::tile_values(team.size());
    auto s = team.template per_thread<std::uint64_t>();
    team.for_threads([&](int t) { s[t] = scan_detail::thread_sum(in, n, base, t); });
    auto before = team.exclusive_scan(s, sum{}, std::uint64_t{0});
    // Each thread rewrites only the values it read (in may be out).
    team.for_threads([&](int t) {
      std::uint64_t acc = partial[team.league_rank()] + before[t];
      for (int j = 0; j < scan_detail::items; ++j) {
        const std::size_t i = base + static_cast<std::size_t>(t) * scan_detail::items + j;
        if (i < n) {
          const std::uint64_t v = in[i];
          out[i] = acc;
          acc += v;
        }
      }
      if (t == 0 && team.league_rank() + 1 == tiles) out[n] = partial[tiles];
    });
  }
};

#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif

// The three launches; partial holds scan_partials(n, team) + 1 words of executor memory.
template <class Exec>
void run_exclusive_scan(const Exec& ex, const std::uint64_t* in, std::uint64_t* out, std::size_t n, int team,
                        std::uint64_t* partial) {
  if (n == 0) {
    ex.fill_zero(out, sizeof(std::uint64_t));
    return;
  }
  const std::size_t tiles = scan_partials(n, team);
  ex.launch(tiles, team, scan_reduce_tiles_kernel{in, n, partial});
  ex.launch(1, team, scan_tile_offsets_kernel{partial, tiles});
  ex.launch(tiles, team, scan_tiles_kernel{in, out, n, partial, tiles});
}

}  // namespace hcomm::exec
