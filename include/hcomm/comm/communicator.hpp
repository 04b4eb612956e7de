// hcomm/comm/communicator.hpp: typed compressed communicators composed from policies.
//
//   using grads_comm = hcomm::communicator<hcomm::ParallelAxis<hcomm::DP>,
//                                          hcomm::Compressor<hcomm::Lossy<8>>, hcomm::ErrorFeedback>;
//   grads_comm dp(grid.comm(hcomm::axis_id::dp));
//   dp.allreduce(std::span<float>(grads));          // ZFP rate 8 ring allreduce, residual kept
//   hcomm::communicator<hcomm::Compressor<hcomm::Lossless>, hcomm::ParallelAxis<hcomm::PP>> pp(grid.world());
//   pp.send(std::span<const float>(acts), grid.next_stage(), /*tag=*/0);
//   dp.allreduce(...); auto s = dp.stats();          // raw/wire bytes, codec and comm seconds
//
// Policies come in any order: exactly one ParallelAxis<DP|PP|TP>; at most one Compressor<...>
// (default Compressor<Uncompressed>); optionally ErrorFeedback (lossy DP only). A duplicate
// or unknown policy is a static_assert starting with "hcomm:". The axis decides the
// operations (requires-clauses): PP send/recv/isend/irecv; TP allreduce/allgather/
// reduce_scatter; DP allreduce/reduce_scatter/allgather/broadcast. Each communicator owns a
// duplicate of its MPI communicator, one codec engine and buffers that grow to the largest
// call (an algorithm::context: host executor, MPI, the library's codecs). runtime_communicator
// offers every operation with a codec chosen at run time (tools).
#pragma once
#include <mpi.h>

#include <concepts>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "hcomm/algorithm/broadcast.hpp"
#include "hcomm/algorithm/context.hpp"
#include "hcomm/algorithm/p2p.hpp"
#include "hcomm/algorithm/ring.hpp"
#include "hcomm/codec/codec.hpp"
#include "hcomm/policy/axis.hpp"
#include "hcomm/policy/compressor.hpp"

namespace hcomm {

using comm_options = algorithm::options;
using comm_stats = algorithm::stats;
using request = algorithm::request;

// Policy tag: keep the residual of lossy compression and add it to the next call's input.
struct ErrorFeedback {};

// Every operation, codec chosen at run time. The typed communicator<...> wraps one.
class runtime_communicator {
 public:
  runtime_communicator(MPI_Comm comm, codec::config cfg, comm_options opt = {}, bool error_feedback = false,
                       std::string label = "comm")
      : cx_(std::make_unique<algorithm::context>(comm, std::move(opt), std::move(label))),
        cfg_(cfg),
        ef_(error_feedback) {
    if (ef_ && !codec::is_lossy(cfg_))
      fail(errc::invalid_argument, "error feedback needs a lossy codec (" +
                                       codec::list_usages<codec::registered_codecs>(
                                           [](auto c) { return bool(decltype(c)::lossy); }) +
                                       "), not " + codec::to_string(cfg_));
    if (ef_) algorithm::check_feedback_stable(cfg_, cx_->label());
  }
  // "none", "mpc", "zfp:8"
  runtime_communicator(MPI_Comm comm, std::string_view codec_spec, comm_options opt = {}, bool error_feedback = false)
      : runtime_communicator(comm, codec::parse_config(codec_spec), std::move(opt), error_feedback) {}

  int rank() const noexcept { return cx_->rank(); }
  int size() const noexcept { return cx_->size(); }
  MPI_Comm comm() const noexcept { return cx_->comm(); }
  const codec::config& config() const noexcept { return cfg_; }
  comm_options& options() noexcept { return cx_->opts(); }
  algorithm::context& context() noexcept { return *cx_; }
  // Sends uncompressed because all its ranks run on one node (comm_options::compress_inside_node).
  bool raw_inside_node() const noexcept { return cx_->raw_inside_node(); }

  comm_stats stats() const noexcept { return const_cast<algorithm::context&>(*cx_).counters(); }
  void reset_stats() noexcept { cx_->counters() = {}; }

  // Error-feedback residual (for checkpoints): empty until the first lossy call.
  template <element T>
  std::span<const T> residual() const {
    if (cx_->residual_size() == 0) return {};
    if (cx_->residual_type() != dtype_of<T>)
      fail(errc::mismatch, "residual holds " + std::string(to_string(cx_->residual_type())) + " values");
    return {reinterpret_cast<const T*>(cx_->residual_bytes().data()), cx_->residual_size()};
  }
  template <element T>
  void load_residual(std::span<const T> r) { cx_->load_residual(r); }
  void reset_residual() noexcept { cx_->reset_residual(); }

  template <element T>
  void send(std::span<const T> x, int peer, int tag) { algorithm::send(*cx_, cfg_, x, peer, tag); }
  template <element T>
  void recv(std::span<T> x, int peer, int tag) { algorithm::recv(*cx_, cfg_, x, peer, tag); }
  template <element T>
  request isend(std::span<const T> x, int peer, int tag) { return algorithm::isend(*cx_, cfg_, x, peer, tag); }
  template <element T>
  request irecv(std::span<T> x, int peer, int tag) { return algorithm::irecv(*cx_, cfg_, x, peer, tag); }

  template <element T>
  void allreduce(std::span<T> x) {
    algorithm::allreduce(*cx_, cfg_, x, feedback_residual<T>(x.size()));
  }
  template <element T>
  void reduce_scatter(std::span<const T> in, std::span<T> out) {
    algorithm::reduce_scatter(*cx_, cfg_, in, out, feedback_residual<T>(in.size()));
  }
  template <element T>
  void allgather(std::span<const T> in, std::span<T> out) { algorithm::allgather(*cx_, cfg_, in, out); }
  template <element T>
  void broadcast(std::span<T> x, int root) { algorithm::broadcast(*cx_, cfg_, x, root); }
  // Exact sums and gathers whatever the codec and the threshold (the identity codec: the
  // transport's own collective, with the same cross-rank checks), for statistics that no
  // codec's error bound covers: a loss's sums of exponentials, row maxima, norms.
  template <element T>
  void allreduce_exact(std::span<T> x) { algorithm::allreduce(*cx_, codec::config{}, x); }
  template <element T>
  void allgather_exact(std::span<const T> in, std::span<T> out) {
    algorithm::allgather(*cx_, codec::config{}, in, out);
  }

 private:
  std::unique_ptr<algorithm::context> cx_;  // on the heap: requests point at it, the communicator may move
  codec::config cfg_;
  bool ef_;

  // The residual of n values of T, checked first (a refused call leaves none behind); null
  // without error feedback.
  template <element T>
  T* feedback_residual(std::size_t n) {
    if (!ef_) return nullptr;
    algorithm::check_feedback_stable(algorithm::frame_config<T>(*cx_, cfg_), cx_->label());
    return cx_->template residual_for<T>(n);
  }
};

namespace detail {

template <class P>
concept communicator_policy = axis_policy<P> || compressor_policy<P> || std::same_as<P, ErrorFeedback>;

template <class P>
struct check_policy {
  static_assert(communicator_policy<P>,
                "hcomm: communicator<...>: unknown policy; expected ParallelAxis<DP|PP|TP>, Compressor<...> or "
                "ErrorFeedback (the offending type is in the 'check_policy<...>' line above)");
  static constexpr bool value = communicator_policy<P>;
};

template <template <class> class Is, class Default, class... Ps>
struct first_of {
  using type = Default;
};
template <template <class> class Is, class Default, class P, class... Ps>
struct first_of<Is, Default, P, Ps...> {
  using type = std::conditional_t<Is<P>::value, P, typename first_of<Is, Default, Ps...>::type>;
};
template <class P> struct is_axis_p : std::bool_constant<axis_policy<P>> {};
template <class P> struct is_comp_p : std::bool_constant<compressor_policy<P>> {};

template <class... Ps>
struct communicator_traits {
  static constexpr bool all_known = (check_policy<Ps>::value && ... && true);
  static constexpr int n_axis = (0 + ... + int(axis_policy<Ps>));
  static constexpr int n_compressor = (0 + ... + int(compressor_policy<Ps>));
  static constexpr int n_feedback = (0 + ... + int(std::same_as<Ps, ErrorFeedback>));
  static_assert(n_axis <= 1,
                "hcomm: communicator<...>: duplicate ParallelAxis policy; give exactly one of ParallelAxis<DP>, "
                "ParallelAxis<PP>, ParallelAxis<TP>");
  static_assert(n_axis >= 1 || !all_known,
                "hcomm: communicator<...>: missing ParallelAxis policy (the axis decides which operations exist)");
  static_assert(n_compressor <= 1, "hcomm: communicator<...>: duplicate Compressor policy; give at most one");
  static_assert(n_feedback <= 1, "hcomm: communicator<...>: duplicate ErrorFeedback policy");
  using axis = typename first_of<is_axis_p, ParallelAxis<DP>, Ps...>::type;
  using compressor = typename first_of<is_comp_p, Compressor<Uncompressed>, Ps...>::type;
  static constexpr bool error_feedback = n_feedback == 1;
  static_assert(!error_feedback || (axis::id == axis_id::dp && !compressor::is_lossless),
                "hcomm: ErrorFeedback is for lossy DP gradients: combine it with ParallelAxis<DP> and "
                "a lossy Compressor (Lossy<Rate>, Int8<Block> or Cast<BF16>)");
  static_assert(!error_feedback || compressor::codec != codec_id::zfp || compressor::param >= 6,
                "hcomm: ErrorFeedback over Lossy<Rate> needs Rate >= 6: below it ZFP's error on some blocks is "
                "larger than the blocks and the residual grows every step (codec/zfp.hpp, feedback_stable)");
};

}  // namespace detail

template <class... Policies>
class communicator {
  using traits = detail::communicator_traits<Policies...>;

 public:
  using axis = typename traits::axis;
  using compressor = typename traits::compressor;
  static constexpr axis_id axis_kind = axis::id;
  static constexpr bool error_feedback = traits::error_feedback;
  static constexpr bool offers_p2p = axis_kind == axis_id::pp;
  static constexpr bool offers_reduce = axis_kind != axis_id::pp;     // allreduce, reduce_scatter, allgather
  static constexpr bool offers_broadcast = axis_kind == axis_id::dp;

  // The runtime description of this communicator's compression (dtype set per call).
  static constexpr codec::config config() { return codec::config::of<compressor, float>(); }

  explicit communicator(MPI_Comm comm, comm_options opt = {})
      : impl_(comm, config(), std::move(opt), error_feedback, std::string(axis::name)) {}

  int rank() const noexcept { return impl_.rank(); }
  int size() const noexcept { return impl_.size(); }
  MPI_Comm comm() const noexcept { return impl_.comm(); }
  comm_options& options() noexcept { return impl_.options(); }
  bool raw_inside_node() const noexcept { return impl_.raw_inside_node(); }
  comm_stats stats() const noexcept { return impl_.stats(); }
  void reset_stats() noexcept { impl_.reset_stats(); }

  // --- PP: activations forward, their gradients backward (peer = rank in this communicator;
  //     the bundle's PP communicator spans the world, so peers are world ranks) ---
  void send(std::span<const float> x, int peer, int tag) requires offers_p2p { impl_.send(x, peer, tag); }
  void send(std::span<const double> x, int peer, int tag) requires offers_p2p { impl_.send(x, peer, tag); }
  void send(std::span<const bf16> x, int peer, int tag) requires offers_p2p { impl_.send(x, peer, tag); }
  void send(std::span<const f16> x, int peer, int tag) requires offers_p2p { impl_.send(x, peer, tag); }
  void recv(std::span<float> x, int peer, int tag) requires offers_p2p { impl_.recv(x, peer, tag); }
  void recv(std::span<double> x, int peer, int tag) requires offers_p2p { impl_.recv(x, peer, tag); }
  void recv(std::span<bf16> x, int peer, int tag) requires offers_p2p { impl_.recv(x, peer, tag); }
  void recv(std::span<f16> x, int peer, int tag) requires offers_p2p { impl_.recv(x, peer, tag); }
  [[nodiscard]] request isend(std::span<const float> x, int peer, int tag) requires offers_p2p {
    return impl_.isend(x, peer, tag);
  }
  [[nodiscard]] request isend(std::span<const double> x, int peer, int tag) requires offers_p2p {
    return impl_.isend(x, peer, tag);
  }
  [[nodiscard]] request isend(std::span<const bf16> x, int peer, int tag) requires offers_p2p {
    return impl_.isend(x, peer, tag);
  }
  [[nodiscard]] request isend(std::span<const f16> x, int peer, int tag) requires offers_p2p {
    return impl_.isend(x, peer, tag);
  }
  [[nodiscard]] request irecv(std::span<float> x, int peer, int tag) requires offers_p2p {
    return impl_.irecv(x, peer, tag);
  }
  [[nodiscard]] request irecv(std::span<double> x, int peer, int tag) requires offers_p2p {
    return impl_.irecv(x, peer, tag);
  }
  [[nodiscard]] request irecv(std::span<bf16> x, int peer, int tag) requires offers_p2p {
    return impl_.irecv(x, peer, tag);
  }
  [[nodiscard]] request irecv(std::span<f16> x, int peer, int tag) requires offers_p2p {
    return impl_.irecv(x, peer, tag);
  }

  // --- TP and DP: sums and gathers ---
  void allreduce(std::span<float> x) requires offers_reduce { impl_.allreduce(x); }
  void allreduce(std::span<double> x) requires offers_reduce { impl_.allreduce(x); }
  void allreduce(std::span<bf16> x) requires offers_reduce { impl_.allreduce(x); }
  void allreduce(std::span<f16> x) requires offers_reduce { impl_.allreduce(x); }
  void reduce_scatter(std::span<const float> in, std::span<float> out) requires offers_reduce {
    impl_.reduce_scatter(in, out);
  }
  void reduce_scatter(std::span<const double> in, std::span<double> out) requires offers_reduce {
    impl_.reduce_scatter(in, out);
  }
  void reduce_scatter(std::span<const bf16> in, std::span<bf16> out) requires offers_reduce {
    impl_.reduce_scatter(in, out);
  }
  void reduce_scatter(std::span<const f16> in, std::span<f16> out) requires offers_reduce {
    impl_.reduce_scatter(in, out);
  }
  void allgather(std::span<const float> in, std::span<float> out) requires offers_reduce { impl_.allgather(in, out); }
  void allgather(std::span<const double> in, std::span<double> out) requires offers_reduce {
    impl_.allgather(in, out);
  }
  void allgather(std::span<const bf16> in, std::span<bf16> out) requires offers_reduce { impl_.allgather(in, out); }
  void allgather(std::span<const f16> in, std::span<f16> out) requires offers_reduce { impl_.allgather(in, out); }
  // Never compressed (runtime_communicator::allreduce_exact): statistics such as a loss's sums.
  void allreduce_exact(std::span<float> x) requires offers_reduce { impl_.allreduce_exact(x); }
  void allreduce_exact(std::span<double> x) requires offers_reduce { impl_.allreduce_exact(x); }
  void allgather_exact(std::span<const float> in, std::span<float> out) requires offers_reduce {
    impl_.allgather_exact(in, out);
  }
  void allgather_exact(std::span<const double> in, std::span<double> out) requires offers_reduce {
    impl_.allgather_exact(in, out);
  }
  void allgather_exact(std::span<const bf16> in, std::span<bf16> out) requires offers_reduce {
    impl_.allgather_exact(in, out);
  }
  void allgather_exact(std::span<const f16> in, std::span<f16> out) requires offers_reduce {
    impl_.allgather_exact(in, out);
  }

  // --- DP: parameters from one replica to all (lossy codecs: all end with the decoded values) ---
  void broadcast(std::span<float> x, int root) requires offers_broadcast { impl_.broadcast(x, root); }
  void broadcast(std::span<double> x, int root) requires offers_broadcast { impl_.broadcast(x, root); }
  void broadcast(std::span<bf16> x, int root) requires offers_broadcast { impl_.broadcast(x, root); }
  void broadcast(std::span<f16> x, int root) requires offers_broadcast { impl_.broadcast(x, root); }

  // --- error feedback (ErrorFeedback policy): the residual, for checkpoints ---
  template <element T>
  std::span<const T> residual() const requires error_feedback { return impl_.template residual<T>(); }
  template <element T>
  void load_residual(std::span<const T> r) requires error_feedback { impl_.load_residual(r); }
  void reset_residual() noexcept requires error_feedback { impl_.reset_residual(); }

 private:
  runtime_communicator impl_;
};

}  // namespace hcomm
