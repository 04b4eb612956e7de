// hcomm/exec/host.hpp: the host executor. Runs a kernel functor over an index range with
// OpenMP (one index = one independent chunk of work), in host memory.
//
//   hcomm::exec::host ex;                      // default_threads() (exec/threads.hpp)
//   ex.for_each(n_chunks, my_kernel{...});     // my_kernel::operator()(std::size_t) const
//
// The CUDA and Kokkos executors offer the same members, so a codec written against the
// `executor` concept runs on all of them and produces the same bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

#include "hcomm/exec/threads.hpp"

#include "hcomm/exec/host_event.hpp"
#include "hcomm/exec/host_team.hpp"
#include "hcomm/exec/team.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace hcomm::exec {

struct host {
  static constexpr bool is_device = false;
  static constexpr const char* name = "host";
  int threads = 0;  // 0: the process's default (hcomm/exec/threads.hpp)

  // Threads that for_each will use (1 without OpenMP), so that kernels can pick a one-thread
  // strategy also when the default leaves `threads` at 0, as with several ranks per core.
  int effective_threads() const {
#if defined(_OPENMP)
    return threads > 0 ? threads : default_threads();
#else
    return 1;
#endif
  }

  template <class F>
  void for_each(std::size_t n, const F& f) const {
    detail::reject_team_kernel_in_for_each<F>();
#if defined(_OPENMP)
    if (n > 1) {
      const int t = effective_threads();
#pragma omp parallel for schedule(static) num_threads(t)
      for (std::size_t i = 0; i < n; ++i) f(i);
      return;
    }
#endif
    for (std::size_t i = 0; i < n; ++i) f(i);
  }

  // Team kernel (exec/team.hpp): `league` teams of `team_size` threads; a phase is a loop
  // over the team's threads, teams run in parallel over OpenMP. An error in a team (a bad
  // scratch declaration, a collective inside a phase) is rethrown here after the region.
  template <class K>
  void launch(std::size_t league, int team_size, const K& k) const {
    detail::check_team_launch("host", k, team_size, max_team_scratch_bytes);
    if (league == 0) return;
    const std::size_t scratch = k.scratch_bytes(team_size);
    const char* kname = detail::kernel_name<K>();
    const int t = league > 1 ? effective_threads() : 1;
    if (t <= 1) {
      detail::host_team<false> team(team_size, league, scratch, kname, 0);
      for (std::size_t r = 0; r < league; ++r) {
        team.begin(r);
        k(team);
      }
      return;
    }
#if defined(_OPENMP)
    std::exception_ptr err;
    bool failed = false;
#pragma omp parallel num_threads(t)
    {
      detail::host_team<false> team(team_size, league, scratch, kname, 0);
#pragma omp for schedule(static)
      for (std::size_t r = 0; r < league; ++r) {
        bool stop;
#pragma omp atomic read
        stop = failed;
        if (stop) continue;
        try {
          team.begin(r);
          k(team);
        } catch (...) {
#pragma omp critical(hcomm_host_launch)
          if (!err) err = std::current_exception();
#pragma omp atomic write
          failed = true;
        }
      }
    }
    if (err) std::rethrow_exception(err);
#endif
  }

  // out[i] = sum of in[0..i), out[n] = total. in and out may alias.
  void exclusive_scan(const std::uint64_t* in, std::uint64_t* out, std::size_t n) const {
    std::uint64_t acc = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t v = in[i];
      out[i] = acc;
      acc += v;
    }
    out[n] = acc;
  }

  void* allocate(std::size_t bytes) const {
    if (bytes == 0) return nullptr;
    // 64-byte alignment: cache lines, and any word type the kernels use.
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p) const noexcept { std::free(p); }

  void copy(void* dst, const void* src, std::size_t bytes) const {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void to_host(void* host_dst, const void* src, std::size_t bytes) const { copy(host_dst, src, bytes); }
  void from_host(void* dst, const void* host_src, std::size_t bytes) const { copy(dst, host_src, bytes); }
  void fill_zero(void* dst, std::size_t bytes) const {
    if (bytes) std::memset(dst, 0, bytes);
  }
  void synchronize() const noexcept {}

  // Host staging (exec/host_staging.hpp): the executor's memory is host memory already.
  void* allocate_host_pinned(std::size_t bytes) const { return allocate(bytes); }
  void deallocate_host_pinned(void* p) const noexcept { deallocate(p); }
  // Device-pointer check of the collectives' entry points: host memory is this executor's.
  void check_device_pointer(const void*, const char*) const noexcept {}

  // Streams and events (exec/host_stream.hpp): work here runs in order in the caller's
  // thread, so every point is already reached.
  using event_type = host_event;
  host_event record() const noexcept { return host_event::completed(); }
  void wait(const host_event&) const noexcept {}
};

}  // namespace hcomm::exec
