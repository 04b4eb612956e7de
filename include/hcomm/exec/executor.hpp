// hcomm/exec/executor.hpp: what an executor must offer. Backends join by satisfying the
// concept (host, cuda, kokkos), not by being listed anywhere.
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace hcomm::exec {

namespace detail {
struct probe_kernel {
  void operator()(std::size_t) const {}
};
}  // namespace detail

template <class E>
concept executor = requires(const E& e, void* p, const void* cp, std::size_t n, const std::uint64_t* in,
                            std::uint64_t* out) {
  typename std::bool_constant<E::is_device>;  // a static constexpr bool, not a data member
  e.for_each(n, detail::probe_kernel{});
  e.exclusive_scan(in, out, n);
  { e.allocate(n) } -> std::same_as<void*>;
  e.deallocate(p);
  e.copy(p, cp, n);
  e.to_host(p, cp, n);
  e.from_host(p, cp, n);
  e.fill_zero(p, n);
  e.synchronize();
};

// Streams and events: an executor's work is stream-ordered; record() marks the point after
// the work enqueued so far, wait(e) makes the executor's later work start after e (another
// stream's point, typically). In-order executors return completed events.
template <class E>
concept stream_executor = executor<E> && requires(const E& e) {
  typename E::event_type;
  { e.record() } -> std::same_as<typename E::event_type>;
  e.wait(e.record());
};

}  // namespace hcomm::exec
