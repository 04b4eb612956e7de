// hcomm/exec/kokkos.hpp: the Kokkos executor. Runs the same kernel functors as the host and
// CUDA executors through Kokkos::parallel_for / parallel_scan on one execution-space
// instance, in that space's memory.
//
//   Kokkos::ScopeGuard guard(argc, argv);              // Kokkos must be initialised first
//   hcomm::exec::kokkos<> ex;                          // Kokkos::DefaultExecutionSpace
//   hcomm::codec::engine<hcomm::exec::kokkos<>> eng{ex};
//
// Debian's Kokkos 3.4.1 has only Kokkos::Serial; any enabled space works (OpenMP, Cuda,
// HIP...) for flat kernels; team kernels run on host spaces (exec/kokkos_team.hpp). Members are asynchronous with respect to the host where the space is (device
// spaces), except to_host and synchronize, which fence the instance. Link Kokkos::kokkos.
// Functors need an HCOMM_HOST_DEVICE call operator when the space is a device space.
#pragma once
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>

#include "hcomm/core/macros.hpp"
#include "hcomm/exec/host_event.hpp"
#include "hcomm/exec/kokkos_team.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm::exec {

namespace detail {

// Kokkos hands the functor its policy's index type; hcomm kernels take std::size_t.
template <class F>
struct kokkos_index_adapter {
  F f;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const { f(static_cast<std::size_t>(i)); }
};

// Reads in[i] before writing out[i] (in and out may alias); the last index also writes the
// total to out[n], so the result stays in the space's memory (no host round trip).
struct kokkos_exclusive_scan_functor {
  using value_type = std::uint64_t;
  const std::uint64_t* in;
  std::uint64_t* out;
  std::int64_t n;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, std::uint64_t& acc, const bool final) const {
    const std::uint64_t v = in[i];
    if (final) {
      out[i] = acc;
      if (i + 1 == n) out[n] = acc + v;
    }
    acc += v;
  }
};

struct kokkos_zero_word_functor {
  std::uint64_t* out;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t) const { *out = 0; }
};

}  // namespace detail

template <class ExecSpace = Kokkos::DefaultExecutionSpace>
struct kokkos {
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  static constexpr bool is_device = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;
  static constexpr const char* name = "kokkos";

  ExecSpace space{};  // the instance every member runs on (a stream, for device spaces)

  template <class F>
  void for_each(std::size_t n, const F& f) const {
    detail::reject_team_kernel_in_for_each<F>();
    if (n == 0) return;
    Kokkos::parallel_for("hcomm::exec::kokkos::for_each", policy(n), detail::kokkos_index_adapter<F>{f});
  }

  // Team kernel (exec/team.hpp): a TeamPolicy of `league` teams of Kokkos team size 1, the
  // kernel's threads as vector lanes (exec/kokkos_team.hpp). Host execution spaces only.
  template <class K>
  void launch(std::size_t league, int team_size, const K& k) const {
    static_assert(!is_device,
                  "hcomm: team kernels on the Kokkos executor run on host execution spaces; use hcomm::exec::cuda "
                  "for a GPU");
    detail::check_team_launch("kokkos", k, team_size, max_team_scratch_bytes);
    if (league == 0) return;
    using policy_t = Kokkos::TeamPolicy<ExecSpace>;
    using member_t = typename policy_t::member_type;
    const std::size_t scratch = k.scratch_bytes(team_size);
    policy_t policy(space, static_cast<int>(league), 1);
    if (scratch > 0) policy = policy.set_scratch_size(0, Kokkos::PerTeam(static_cast<int>(scratch)));
    std::exception_ptr err;
    std::mutex err_mutex;
    Kokkos::parallel_for("hcomm::exec::kokkos::launch", policy, [&](const member_t& m) {
      thread_local detail::host_arena arena;
      try {
        detail::kokkos_team<member_t> team(m, team_size, league, scratch, arena);
        team.begin(static_cast<std::size_t>(m.league_rank()));
        k(team);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(err_mutex);
        if (!err) err = std::current_exception();
      }
    });
    space.fence();
    if (err) std::rethrow_exception(err);
  }

  // Streams and events: Kokkos 3 has no events, so record() fences the instance and returns
  // a completed event; work is in order on the instance.
  using event_type = host_event;
  host_event record() const {
    space.fence();
    return host_event::completed();
  }
  void wait(const host_event& e) const { e.synchronize(); }

  // out[i] = sum of in[0..i), out[n] = total; in and out may be the same pointer.
  void exclusive_scan(const std::uint64_t* in, std::uint64_t* out, std::size_t n) const {
    if (n == 0) {
      Kokkos::parallel_for("hcomm::exec::kokkos::scan_empty", policy(1), detail::kokkos_zero_word_functor{out});
      return;
    }
    Kokkos::parallel_scan("hcomm::exec::kokkos::exclusive_scan", policy(n),
                          detail::kokkos_exclusive_scan_functor{in, out, static_cast<std::int64_t>(n)});
  }

  // Kokkos' tracked allocation in the space's memory (64-byte aligned); 0 bytes: nullptr.
  void* allocate(std::size_t bytes) const {
    if (bytes == 0) return nullptr;
    return Kokkos::kokkos_malloc<memory_space>("hcomm::exec::kokkos", bytes);
  }
  void deallocate(void* p) const noexcept {
    if (p) Kokkos::kokkos_free<memory_space>(p);
  }

  void copy(void* dst, const void* src, std::size_t bytes) const {
    if (bytes) Kokkos::deep_copy(space, space_bytes(dst, bytes), const_space_bytes(src, bytes));
  }
  // Fences the instance: the bytes are on the host when it returns.
  void to_host(void* host_dst, const void* src, std::size_t bytes) const {
    if (bytes) Kokkos::deep_copy(space, host_bytes(host_dst, bytes), const_space_bytes(src, bytes));
    space.fence();
  }
  // The host source must stay valid until the instance reaches the copy (device spaces).
  void from_host(void* dst, const void* host_src, std::size_t bytes) const {
    if (bytes) Kokkos::deep_copy(space, space_bytes(dst, bytes), const_host_bytes(host_src, bytes));
  }
  void fill_zero(void* dst, std::size_t bytes) const {
    if (bytes) Kokkos::deep_copy(space, space_bytes(dst, bytes), static_cast<unsigned char>(0));
  }
  void synchronize() const { space.fence(); }

 private:
  using unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  using policy_type = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;

  policy_type policy(std::size_t n) const { return policy_type(space, 0, static_cast<std::int64_t>(n)); }
  template <class T, class Space>
  using bytes_view = Kokkos::View<T*, Space, unmanaged>;
  static auto space_bytes(void* p, std::size_t n) {
    return bytes_view<unsigned char, memory_space>(static_cast<unsigned char*>(p), n);
  }
  static auto const_space_bytes(const void* p, std::size_t n) {
    return bytes_view<const unsigned char, memory_space>(static_cast<const unsigned char*>(p), n);
  }
  static auto host_bytes(void* p, std::size_t n) {
    return bytes_view<unsigned char, Kokkos::HostSpace>(static_cast<unsigned char*>(p), n);
  }
  static auto const_host_bytes(const void* p, std::size_t n) {
    return bytes_view<const unsigned char, Kokkos::HostSpace>(static_cast<const unsigned char*>(p), n);
  }
};

}  // namespace hcomm::exec
