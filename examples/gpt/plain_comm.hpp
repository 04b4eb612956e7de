// examples/gpt/plain_comm.hpp: an uncompressed MPI stand-in for hcomm's grid + bundle, with
// the same API, so the trainer can be developed and checked against plain MPI.
//
//   gpt::plain::grid g(dp, pp, tp);            // rank = tp + TP*(dp + DP*pp)
//   gpt::plain::bundle b(g);
//   b.tp().allreduce(span);                    // sum in place over the tensor-parallel group
//   b.pp().send(span, g.next_stage(), tag);    // point to point between pipeline stages
//   b.dp().allreduce(grads);                   // sum over the data-parallel group
//
// It counts bytes like hcomm does (raw == wire here) so the trainer's reporting is the same.
#pragma once
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/policy/axis.hpp"

namespace gpt::plain {

inline void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) hcomm::fail(hcomm::errc::mpi_failure, std::string("plain_comm: ") + what);
}

// The 3-D process grid. TP varies fastest, then DP, then PP (Megatron order).
class grid {
 public:
  grid(int dp, int pp, int tp, MPI_Comm world = MPI_COMM_WORLD) : world_(world), dp_(dp), pp_(pp), tp_(tp) {
    int size = 0;
    MPI_Comm_rank(world, &rank_);
    MPI_Comm_size(world, &size);
    if (dp < 1 || pp < 1 || tp < 1 || dp * pp * tp != size)
      hcomm::fail(hcomm::errc::invalid_argument,
                  "grid " + std::to_string(dp) + "x" + std::to_string(pp) + "x" + std::to_string(tp) +
                      " (dp x pp x tp) needs " + std::to_string(dp * pp * tp) + " ranks, have " + std::to_string(size));
    tp_rank_ = rank_ % tp;
    dp_rank_ = (rank_ / tp) % dp;
    pp_rank_ = rank_ / (tp * dp);
    // Colour = the coordinates that stay fixed inside a group; key orders members by their axis rank.
    mpi_check(MPI_Comm_split(world, pp_rank_ * dp + dp_rank_, tp_rank_, &comms_[2]), "split tp");
    mpi_check(MPI_Comm_split(world, pp_rank_ * tp + tp_rank_, dp_rank_, &comms_[0]), "split dp");
    mpi_check(MPI_Comm_split(world, dp_rank_ * tp + tp_rank_, pp_rank_, &comms_[1]), "split pp");
  }
  grid(const grid&) = delete;
  grid& operator=(const grid&) = delete;
  ~grid() {
    for (auto& c : comms_)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
  int dp_rank() const { return dp_rank_; }
  int pp_rank() const { return pp_rank_; }
  int tp_rank() const { return tp_rank_; }
  int dp_size() const { return dp_; }
  int pp_size() const { return pp_; }
  int tp_size() const { return tp_; }
  int world_rank() const { return rank_; }
  MPI_Comm world() const { return world_; }
  MPI_Comm comm(hcomm::axis_id a) const { return comms_[static_cast<int>(a)]; }
  int world_rank_of(int dp, int pp, int tp) const { return tp + tp_ * (dp + dp_ * pp); }
  int prev_stage() const { return pp_rank_ > 0 ? world_rank_of(dp_rank_, pp_rank_ - 1, tp_rank_) : -1; }
  int next_stage() const { return pp_rank_ + 1 < pp_ ? world_rank_of(dp_rank_, pp_rank_ + 1, tp_rank_) : -1; }

 private:
  MPI_Comm world_;
  int dp_, pp_, tp_;
  int rank_ = 0, dp_rank_ = 0, pp_rank_ = 0, tp_rank_ = 0;
  MPI_Comm comms_[3] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
};

struct comm_stats {
  std::size_t raw_bytes = 0;   // bytes the caller handed over
  std::size_t wire_bytes = 0;  // bytes that went to MPI (== raw here: no compression)
  double compress_seconds = 0;
  double comm_seconds = 0;
};

// One axis' communicator: collectives over the axis group, point to point in world ranks.
class axis_comm {
 public:
  axis_comm(MPI_Comm group, MPI_Comm world) : group_(group), world_(world) {
    MPI_Comm_size(group, &size_);
  }
  void allreduce(std::span<float> x) {
    if (size_ == 1 || x.empty()) return;
    timer t(stats_.comm_seconds);
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, x.data(), count(x.size()), MPI_FLOAT, MPI_SUM, group_), "allreduce");
    // A ring allreduce sends 2(p-1)/p of the buffer per rank.
    add_bytes(x.size_bytes() * 2 * (size_ - 1) / size_);
  }
  void allgather(std::span<const float> in, std::span<float> out) {
    if (out.size() != in.size() * static_cast<std::size_t>(size_))
      hcomm::fail(hcomm::errc::invalid_argument, "plain_comm allgather: out must hold size * in");
    timer t(stats_.comm_seconds);
    mpi_check(MPI_Allgather(in.data(), count(in.size()), MPI_FLOAT, out.data(), count(in.size()), MPI_FLOAT, group_),
              "allgather");
    add_bytes(in.size_bytes() * (size_ - 1));
  }
  void broadcast(std::span<float> x, int root) {
    if (size_ == 1 || x.empty()) return;
    timer t(stats_.comm_seconds);
    mpi_check(MPI_Bcast(x.data(), count(x.size()), MPI_FLOAT, root, group_), "broadcast");
    add_bytes(x.size_bytes());
  }
  void send(std::span<const float> x, int peer_world_rank, int tag) {
    timer t(stats_.comm_seconds);
    mpi_check(MPI_Send(x.data(), count(x.size()), MPI_FLOAT, peer_world_rank, tag, world_), "send");
    add_bytes(x.size_bytes());
  }
  void recv(std::span<float> x, int peer_world_rank, int tag) {
    timer t(stats_.comm_seconds);
    mpi_check(MPI_Recv(x.data(), count(x.size()), MPI_FLOAT, peer_world_rank, tag, world_, MPI_STATUS_IGNORE),
              "recv");
  }
  comm_stats stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  struct timer {
    double& acc;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    explicit timer(double& a) : acc(a) {}
    ~timer() { acc += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  };
  static int count(std::size_t n) {
    if (n > static_cast<std::size_t>(1) << 30) hcomm::fail(hcomm::errc::invalid_argument, "plain_comm: message too large");
    return static_cast<int>(n);
  }
  void add_bytes(std::size_t b) {
    stats_.raw_bytes += b;
    stats_.wire_bytes += b;
  }
  MPI_Comm group_, world_;
  int size_ = 1;
  comm_stats stats_;
};

// The three axes together: what the trainer is templated over.
class bundle {
 public:
  explicit bundle(const grid& g)
      : dp_(g.comm(hcomm::axis_id::dp), g.world()),
        pp_(g.comm(hcomm::axis_id::pp), g.world()),
        tp_(g.comm(hcomm::axis_id::tp), g.world()) {}
  axis_comm& dp() { return dp_; }
  axis_comm& pp() { return pp_; }
  axis_comm& tp() { return tp_; }
  static constexpr const char* name() { return "none"; }

 private:
  axis_comm dp_, pp_, tp_;
};

}  // namespace gpt::plain
