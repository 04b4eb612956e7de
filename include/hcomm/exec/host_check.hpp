// hcomm/exec/host_check.hpp: the test executor. It runs kernels in host memory with GPU
// semantics, so that CI checks on the CPU the very source the GPU runs:
//  - is_device is true: codecs and collectives take their device code paths (all chunks at
//    once, team kernels, results read back through to_host);
//  - launch runs team kernels under host_team<true> (exec/host_team.hpp): threads of a phase
//    in a shuffled order, every scratch word shadowed, races and unwritten reads reported as
//    hcomm::error(kernel_check) with kernel, team, phase, threads, index and the seed;
//  - for_each and the league of a launch run in a shuffled order too (a GPU gives no order);
//  - allocate poisons memory (0xA5 bytes), so a kernel that reads what nobody wrote gives
//    garbage instead of a lucky zero.
//
//   hcomm::exec::host_check ex{.seed = 7};
//   hcomm::codec::engine<hcomm::exec::host_check> eng{ex};   // compare frames with engine<host>
//
// The seed defaults to HCOMM_HOST_CHECK_SEED from the environment, else 1. Serial and slow by
// design: tests only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <vector>

#include "hcomm/exec/host.hpp"
#include "hcomm/exec/host_event.hpp"
#include "hcomm/exec/host_team.hpp"
#include "hcomm/exec/scan_kernels.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm::exec {

inline std::uint64_t host_check_default_seed() {
  const char* s = std::getenv("HCOMM_HOST_CHECK_SEED");
  return s != nullptr && *s != '\0' ? std::strtoull(s, nullptr, 10) : 1u;
}

struct host_check {
  static constexpr bool is_device = true;
  static constexpr bool host_memory = true;  // a device's code paths, in memory the host can read
  static constexpr const char* name = "host_check";
  std::uint64_t seed = host_check_default_seed();
  int scan_team = 64;  // team size of exclusive_scan's kernels

  template <class F>
  void for_each(std::size_t n, const F& f) const {
    detail::reject_team_kernel_in_for_each<F>();
    for (std::size_t i : shuffled(n, 0x5eed)) f(i);
  }

  template <class K>
  void launch(std::size_t league, int team_size, const K& k) const {
    detail::check_team_launch("host_check", k, team_size, max_team_scratch_bytes);
    if (league == 0) return;
    detail::host_team<true> team(team_size, league, k.scratch_bytes(team_size), detail::kernel_name<K>(), seed);
    for (std::size_t r : shuffled(league, 0x1ea9)) {
      team.begin(r);
      k(team);
    }
  }

  void exclusive_scan(const std::uint64_t* in, std::uint64_t* out, std::size_t n) const {
    std::vector<std::uint64_t> partial(scan_partials(n, scan_team) + 1);
    run_exclusive_scan(*this, in, out, n, scan_team, partial.data());
  }

  // Host memory, as the host executor's, but poisoned.
  void* allocate(std::size_t bytes) const {
    void* p = host{}.allocate(bytes);
    if (p) std::memset(p, 0xA5, bytes);
    return p;
  }
  void deallocate(void* p) const noexcept { host{}.deallocate(p); }
  void copy(void* dst, const void* src, std::size_t bytes) const { host{}.copy(dst, src, bytes); }
  void to_host(void* host_dst, const void* src, std::size_t bytes) const { copy(host_dst, src, bytes); }
  void from_host(void* dst, const void* host_src, std::size_t bytes) const { copy(dst, host_src, bytes); }
  void fill_zero(void* dst, std::size_t bytes) const { host{}.fill_zero(dst, bytes); }
  void synchronize() const noexcept {}
  // Host staging (exec/host_staging.hpp): host memory apart from the executor's, poisoned like
  // it, so that a frame the collectives forgot to stage arrives as 0xA5 bytes.
  void* allocate_host_pinned(std::size_t bytes) const { return allocate(bytes); }
  void deallocate_host_pinned(void* p) const noexcept { deallocate(p); }
  // Device-pointer check of the collectives' entry points: this executor's memory is host
  // memory, so any pointer is one of its own.
  void check_device_pointer(const void*, const char*) const noexcept {}
  using event_type = host_event;
  host_event record() const noexcept { return host_event::completed(); }  // in order
  void wait(const host_event&) const noexcept {}

 private:
  std::vector<std::size_t> shuffled(std::size_t n, std::uint64_t salt) const {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::uint64_t s = detail::mix64(seed ^ salt ^ n);
    for (std::size_t i = n; i > 1; --i) {
      s = detail::mix64(s);
      std::swap(order[i - 1], order[s % i]);
    }
    return order;
  }
};

}  // namespace hcomm::exec
