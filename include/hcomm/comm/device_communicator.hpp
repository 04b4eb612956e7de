// hcomm/comm/device_communicator.hpp: the typed communicators on device memory: the same
// policies as communicator<...> (comm/communicator.hpp), an executor and a transport, and
// buffers as device_span (comm/device_span.hpp).
//
//   using dp_t = hcomm::device_communicator<hcomm::exec::cuda, hcomm::transport::mpi_staged,
//                                           hcomm::ParallelAxis<hcomm::DP>, hcomm::Compressor<hcomm::Lossy<8>>,
//                                           hcomm::ErrorFeedback>;
//   dp_t dp(grid.comm(hcomm::axis_id::dp), {}, hcomm::exec::cuda{stream});
//   dp.allreduce(hcomm::device_span<float>(d_grads, n));   // coded, reduced on the GPU; residual on it too
//
// Compression, decompression and the reduction run on the executor, stream-ordered; the
// transport moves frames (transport::mpi_staged: through pinned host staging;
// transport::mpi_device: a CUDA-aware MPI; transport::with_device_transport picks one at run
// time). Results are in the executor's memory once its stream gets there, and every rank
// ends bitwise identical, as on the host. A std::span (host memory) does not convert to a
// device_span; a host pointer wrapped in one is refused at run time (errc::invalid_argument,
// naming the operation and argument). The axis decides the operations as for
// communicator<...>; the error-feedback residual lives in the executor's memory.
#pragma once
#include <mpi.h>

#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hcomm/algorithm/broadcast.hpp"
#include "hcomm/algorithm/context.hpp"
#include "hcomm/algorithm/p2p.hpp"
#include "hcomm/algorithm/ring.hpp"
#include "hcomm/comm/communicator.hpp"
#include "hcomm/comm/device_span.hpp"

namespace hcomm {

template <exec::executor Exec, class Transport, class... Policies>
class device_communicator {
  using traits = detail::communicator_traits<Policies...>;

 public:
  using executor_type = Exec;
  using transport_type = Transport;
  using context_type = algorithm::basic_context<Exec, Transport>;
  using request_type = algorithm::basic_request<context_type>;
  using axis = typename traits::axis;
  using compressor = typename traits::compressor;
  static constexpr axis_id axis_kind = axis::id;
  static constexpr bool error_feedback = traits::error_feedback;
  static constexpr bool offers_p2p = axis_kind == axis_id::pp;
  static constexpr bool offers_reduce = axis_kind != axis_id::pp;
  static constexpr bool offers_broadcast = axis_kind == axis_id::dp;

  static constexpr codec::config config() { return codec::config::of<compressor, float>(); }

  explicit device_communicator(MPI_Comm comm, comm_options opt = {}, Exec ex = {})
      : cx_(std::make_unique<context_type>(comm, std::move(opt), std::string(axis::name), ex)) {}

  int rank() const noexcept { return cx_->rank(); }
  int size() const noexcept { return cx_->size(); }
  MPI_Comm comm() const noexcept { return cx_->comm(); }
  comm_options& options() noexcept { return cx_->opts(); }
  comm_stats stats() const noexcept { return const_cast<context_type&>(*cx_).counters(); }
  void reset_stats() noexcept { cx_->counters() = {}; }
  context_type& context() noexcept { return *cx_; }
  // The executor its coding, reduction and staging run on (a stream, on CUDA).
  const Exec& executor() const noexcept { return cx_->executor(); }

  // --- PP ---
  // (Inputs take device_span<T> or device_span<const T>.)
  template <class U>
  void send(device_span<U> x, int peer, int tag) requires offers_p2p && element<std::remove_const_t<U>> {
    algorithm::send(*cx_, config(), std::span<const std::remove_const_t<U>>(x.data(), x.size()), peer, tag);
  }
  template <element T>
  void recv(device_span<T> x, int peer, int tag) requires offers_p2p {
    algorithm::recv(*cx_, config(), std::span<T>(x.data(), x.size()), peer, tag);
  }
  template <class U>
  [[nodiscard]] request_type isend(device_span<U> x, int peer, int tag)
    requires offers_p2p && element<std::remove_const_t<U>>
  {
    return algorithm::isend(*cx_, config(), std::span<const std::remove_const_t<U>>(x.data(), x.size()), peer, tag);
  }
  template <element T>
  [[nodiscard]] request_type irecv(device_span<T> x, int peer, int tag) requires offers_p2p {
    return algorithm::irecv(*cx_, config(), std::span<T>(x.data(), x.size()), peer, tag);
  }

  // --- TP and DP ---
  template <element T>
  void allreduce(device_span<T> x) requires offers_reduce {
    algorithm::allreduce(*cx_, config(), std::span<T>(x.data(), x.size()), residual_of<T>(x.size()));
  }
  template <class U, element T>
  void reduce_scatter(device_span<U> in, device_span<T> out)
    requires offers_reduce && std::is_same_v<std::remove_const_t<U>, T>
  {
    algorithm::reduce_scatter(*cx_, config(), std::span<const T>(in.data(), in.size()),
                              std::span<T>(out.data(), out.size()), residual_of<T>(in.size()));
  }
  template <class U, element T>
  void allgather(device_span<U> in, device_span<T> out) requires offers_reduce && std::is_same_v<std::remove_const_t<U>, T>
  {
    algorithm::allgather(*cx_, config(), std::span<const T>(in.data(), in.size()), std::span<T>(out.data(), out.size()));
  }

  // Exact sums and gathers whatever the codec and the threshold (the identity codec), as
  // communicator<...>::allreduce_exact: statistics no codec's error bound covers (a loss's
  // sums of exponentials, row maxima).
  template <element T>
  void allreduce_exact(device_span<T> x) requires offers_reduce {
    algorithm::allreduce(*cx_, codec::config{}, std::span<T>(x.data(), x.size()));
  }
  template <class U, element T>
  void allgather_exact(device_span<U> in, device_span<T> out)
    requires offers_reduce && std::is_same_v<std::remove_const_t<U>, T>
  {
    algorithm::allgather(*cx_, codec::config{}, std::span<const T>(in.data(), in.size()),
                         std::span<T>(out.data(), out.size()));
  }

  // --- DP ---
  template <element T>
  void broadcast(device_span<T> x, int root) requires offers_broadcast {
    algorithm::broadcast(*cx_, config(), std::span<T>(x.data(), x.size()), root);
  }

  // --- error feedback: the residual, in the executor's memory ---
  template <element T>
  device_span<const T> residual() const requires error_feedback {
    if (cx_->residual_size() == 0) return {};
    if (cx_->residual_type() != dtype_of<T>)
      fail(errc::mismatch, "residual holds " + std::string(to_string(cx_->residual_type())) + " values");
    return {reinterpret_cast<const T*>(cx_->residual_bytes().data()), cx_->residual_size()};
  }
  void reset_residual() noexcept requires error_feedback { cx_->reset_residual(); }
  // The residual's values on the host (a checkpoint's copy; empty before the first lossy call).
  template <element T>
  std::vector<T> residual_on_host() const requires error_feedback {
    const device_span<const T> d = residual<T>();
    std::vector<T> h(d.size());
    if (!h.empty()) executor().to_host(h.data(), d.data(), h.size() * sizeof(T));
    return h;
  }
  // From host memory (a checkpoint): the residual the next lossy call adds.
  template <element T>
  void load_residual(std::span<const T> r) requires error_feedback {
    cx_->load_residual(r);
  }

 private:
  template <class T>
  T* residual_of(std::size_t n) {
    if constexpr (error_feedback) return cx_->template residual_for<T>(n);
    else return nullptr;
  }
  std::unique_ptr<context_type> cx_;  // on the heap: requests point at it, the communicator may move
};

}  // namespace hcomm
