// hcomm/algorithm/native.hpp: the transport's own collectives (uncompressed messages) on
// buffers in the context's executor memory.
//
//   hcomm::algorithm::native_sum_allreduce(cx, data, n);   // in place, MPI_Allreduce underneath
//
// A device executor finishes its queued work before the transport reads the data. A
// transport that stages (Transport::stages<Exec>, transport/mpi_staged.hpp) gets the values
// copied into the workspace's host staging and the result copied back on the executor's
// stream (stream-ordered: the caller's buffer holds it once the stream gets there; the
// staging is written again only after the next call has waited for the stream).
#pragma once
#include <cstddef>

#include "hcomm/algorithm/context.hpp"

namespace hcomm::algorithm {

namespace detail {
template <class Cx>
inline constexpr bool staged_v = Cx::transport_type::template stages<typename Cx::executor_type>;

// Device executors finish their queued work before the transport reads the data.
template <class Cx>
void settle_executor(const Cx& cx) {
  if constexpr (Cx::executor_type::is_device) cx.executor().synchronize();
}
}  // namespace detail

// data[0, n) summed over all ranks, in place.
template <class T, context_type Cx>
void native_sum_allreduce(Cx& cx, T* data, std::size_t n) {
  using Tr = typename Cx::transport_type;
  const auto& ex = cx.executor();
  if constexpr (detail::staged_v<Cx>) {
    T* h = cx.memory().template staging<T>(n);
    ex.copy(h, data, n * sizeof(T));
    ex.synchronize();
    Tr::sum_allreduce(h, n, cx.comm());
    ex.copy(data, h, n * sizeof(T));
  } else {
    detail::settle_executor(cx);
    Tr::sum_allreduce(data, n, cx.comm());
  }
}

// in holds p blocks of m values; out gets the sum of everyone's block `rank`.
template <class T, context_type Cx>
void native_sum_reduce_scatter(Cx& cx, const T* in, T* out, std::size_t m) {
  using Tr = typename Cx::transport_type;
  const auto& ex = cx.executor();
  if constexpr (detail::staged_v<Cx>) {
    const std::size_t n = m * static_cast<std::size_t>(cx.size());
    T* h = cx.memory().template staging<T>(n + m);
    ex.copy(h, in, n * sizeof(T));
    ex.synchronize();
    Tr::sum_reduce_scatter(h, h + n, m, cx.comm());
    ex.copy(out, h + n, m * sizeof(T));
  } else {
    detail::settle_executor(cx);
    Tr::sum_reduce_scatter(in, out, m, cx.comm());
  }
}

// out gets p blocks of m values, block q = rank q's in.
template <class T, context_type Cx>
void native_allgather(Cx& cx, const T* in, T* out, std::size_t m) {
  using Tr = typename Cx::transport_type;
  const auto& ex = cx.executor();
  if constexpr (detail::staged_v<Cx>) {
    const std::size_t n = m * static_cast<std::size_t>(cx.size());
    T* h = cx.memory().template staging<T>(m + n);
    ex.copy(h, in, m * sizeof(T));
    ex.synchronize();
    Tr::allgather(h, h + m, m, cx.comm());
    ex.copy(out, h + m, n * sizeof(T));
  } else {
    detail::settle_executor(cx);
    Tr::allgather(in, out, m, cx.comm());
  }
}

// data[0, n) from root to every rank.
template <class T, context_type Cx>
void native_broadcast(Cx& cx, T* data, std::size_t n, int root) {
  using Tr = typename Cx::transport_type;
  const auto& ex = cx.executor();
  if constexpr (detail::staged_v<Cx>) {
    T* h = cx.memory().template staging<T>(n);
    if (cx.rank() == root) ex.copy(h, data, n * sizeof(T));
    ex.synchronize();
    Tr::broadcast_values(h, n, root, cx.comm());
    if (cx.rank() != root) ex.copy(data, h, n * sizeof(T));
  } else {
    detail::settle_executor(cx);
    Tr::broadcast_values(data, n, root, cx.comm());
  }
}

}  // namespace hcomm::algorithm
