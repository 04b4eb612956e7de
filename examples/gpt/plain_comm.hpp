// examples/gpt/plain_comm.hpp: --scheme plain, the `none` scheme over plain MPI calls
// (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Send, MPI_Recv) instead of hcomm's algorithms. It is the
// cross-check of hcomm's uncompressed path (tests/model: a 2x2x2 plain run reproduces the
// 1-rank curve) and the trainer's baseline without hcomm (bench/model/bench_vs_pytorch.py).
//
//   hcomm::grid g(dp, pp, tp);
//   gpt::plain_bundle b(g);                    // dp(), pp(), tp() as hcomm::bundle<scheme::none>
//   b.tp().allreduce(span);                    // sum in place over the tensor-parallel group
//   b.pp().send(span, g.next_stage(), tag);    // point to point, world ranks
//
// Bytes are counted in hcomm::comm_stats as an uncompressed ring would send them (raw == wire).
#pragma once
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "hcomm/comm/communicator.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/topology/grid.hpp"

namespace gpt {

// One axis: collectives over the axis group, point to point over `world` in world ranks.
class plain_axis {
 public:
  plain_axis(MPI_Comm group, MPI_Comm world) : group_(group), world_(world) { MPI_Comm_size(group, &size_); }
  void allreduce(std::span<float> x) {
    if (size_ == 1 || x.empty()) return;
    timer t(stats_.comm_seconds);
    check(MPI_Allreduce(MPI_IN_PLACE, x.data(), count(x.size()), MPI_FLOAT, MPI_SUM, group_), "allreduce");
    add_bytes(x.size_bytes() * 2 * (size_ - 1) / size_);  // a ring sends 2(p-1)/p of the buffer
  }
  void allgather(std::span<const float> in, std::span<float> out) {
    if (out.size() != in.size() * static_cast<std::size_t>(size_))
      hcomm::fail(hcomm::errc::invalid_argument, "plain_comm allgather: out must hold size * in");
    timer t(stats_.comm_seconds);
    check(MPI_Allgather(in.data(), count(in.size()), MPI_FLOAT, out.data(), count(in.size()), MPI_FLOAT, group_),
          "allgather");
    add_bytes(in.size_bytes() * (size_ - 1));
  }
  // Exact already: the ZeRO weights' gather (zero.hpp) asks for it by that name.
  void allgather_exact(std::span<const float> in, std::span<float> out) { allgather(in, out); }
  // in holds size blocks of out.size() values; this rank gets the sum of everyone's block.
  void reduce_scatter(std::span<const float> in, std::span<float> out) {
    if (in.size() != out.size() * static_cast<std::size_t>(size_))
      hcomm::fail(hcomm::errc::invalid_argument, "plain_comm reduce_scatter: in must hold size * out");
    timer t(stats_.comm_seconds);
    check(MPI_Reduce_scatter_block(in.data(), out.data(), count(out.size()), MPI_FLOAT, MPI_SUM, group_),
          "reduce_scatter");
    add_bytes(out.size_bytes() * (size_ - 1));
  }
  void send(std::span<const float> x, int peer_world_rank, int tag) {
    timer t(stats_.comm_seconds);
    check(MPI_Send(x.data(), count(x.size()), MPI_FLOAT, peer_world_rank, tag, world_), "send");
    add_bytes(x.size_bytes());
  }
  void recv(std::span<float> x, int peer_world_rank, int tag) {
    timer t(stats_.comm_seconds);
    check(MPI_Recv(x.data(), count(x.size()), MPI_FLOAT, peer_world_rank, tag, world_, MPI_STATUS_IGNORE), "recv");
  }
  // Non-blocking point to point (--overlap on: the pipeline's sends); wait() or the
  // destructor completes it.
  class request {
   public:
    request() = default;
    request(const request&) = delete;
    request& operator=(const request&) = delete;
    request(request&& o) noexcept : r_(std::exchange(o.r_, MPI_REQUEST_NULL)) {}
    request& operator=(request&& o) noexcept {
      if (this != &o) {
        wait();
        r_ = std::exchange(o.r_, MPI_REQUEST_NULL);
      }
      return *this;
    }
    ~request() {
      if (r_ != MPI_REQUEST_NULL) MPI_Wait(&r_, MPI_STATUS_IGNORE);
    }
    void wait() {
      if (r_ != MPI_REQUEST_NULL) check(MPI_Wait(&r_, MPI_STATUS_IGNORE), "wait");
    }

   private:
    friend class plain_axis;
    MPI_Request r_ = MPI_REQUEST_NULL;
  };
  [[nodiscard]] request isend(std::span<const float> x, int peer_world_rank, int tag) {
    timer t(stats_.comm_seconds);
    request q;
    check(MPI_Isend(x.data(), count(x.size()), MPI_FLOAT, peer_world_rank, tag, world_, &q.r_), "isend");
    add_bytes(x.size_bytes());
    return q;
  }
  [[nodiscard]] request irecv(std::span<float> x, int peer_world_rank, int tag) {
    timer t(stats_.comm_seconds);
    request q;
    check(MPI_Irecv(x.data(), count(x.size()), MPI_FLOAT, peer_world_rank, tag, world_, &q.r_), "irecv");
    return q;
  }
  hcomm::comm_stats stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  struct timer {
    double& acc;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    explicit timer(double& a) : acc(a) {}
    ~timer() { acc += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  };
  static void check(int rc, const char* what) {
    if (rc != MPI_SUCCESS) hcomm::fail(hcomm::errc::mpi_failure, std::string("plain_comm: ") + what);
  }
  static int count(std::size_t n) {
    if (n > static_cast<std::size_t>(1) << 30) hcomm::fail(hcomm::errc::invalid_argument, "plain_comm: message too large");
    return static_cast<int>(n);
  }
  void add_bytes(std::size_t b) {
    stats_.raw_bytes += b;
    stats_.wire_bytes += b;
    ++stats_.calls;
  }
  MPI_Comm group_, world_;
  int size_ = 1;
  hcomm::comm_stats stats_;
};

class plain_bundle {
 public:
  explicit plain_bundle(const hcomm::grid& g)
      : dp_(g.comm(hcomm::axis_id::dp), g.world()),
        pp_(g.comm(hcomm::axis_id::pp), g.world()),
        tp_(g.comm(hcomm::axis_id::tp), g.world()) {}
  static std::string name() { return "plain"; }
  plain_axis& dp() { return dp_; }
  plain_axis& pp() { return pp_; }
  plain_axis& tp() { return tp_; }

 private:
  plain_axis dp_, pp_, tp_;
};

}  // namespace gpt
