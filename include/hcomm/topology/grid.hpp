// hcomm/topology/grid.hpp: the DP x PP x TP process grid of 3-D parallel training.
//
//   hcomm::grid g(/*dp=*/2, /*pp=*/2, /*tp=*/2);          // 8 ranks of MPI_COMM_WORLD
//   int stage = g.pp_rank();
//   MPI_Comm tp_group = g.comm(hcomm::axis_id::tp);      // the ranks this one shares a layer with
//   if (g.next_stage() >= 0) { /* send activations to world rank g.next_stage() */ }
//
// Rank order is Megatron-LM's: TP varies fastest, then DP, then PP,
// world rank = tp + TP * (dp + DP * pp), so TP groups are neighbouring ranks (one node)
// and pipeline stages are the slowest-varying coordinate (they cross nodes).
// The grid owns a duplicate of the world communicator and one sub-communicator per axis,
// split with MPI_Comm_split (key = coordinate on that axis, so sub-rank == coordinate);
// all are freed with the grid.
#pragma once
#include <mpi.h>

#include <string>

#include "hcomm/transport/mpi.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/policy/axis.hpp"

namespace hcomm {

class grid {
 public:
  grid(int dp, int pp, int tp, MPI_Comm world = MPI_COMM_WORLD) : dp_(dp), pp_(pp), tp_(tp) {
    const int n = mpi::size(world);
    if (dp < 1 || pp < 1 || tp < 1 || static_cast<long long>(dp) * pp * tp != n)
      fail(errc::invalid_argument, "grid dp=" + std::to_string(dp) + " x pp=" + std::to_string(pp) + " x tp=" +
                                       std::to_string(tp) + " = " +
                                       std::to_string(static_cast<long long>(dp) * pp * tp) +
                                       " ranks, but the communicator has " + std::to_string(n) +
                                       " (each size must be >= 1 and their product the world size)");
    world_ = mpi::dup(world);
    rank_ = mpi::rank(world_.get());
    size_ = n;
    tp_rank_ = rank_ % tp_;
    dp_rank_ = (rank_ / tp_) % dp_;
    pp_rank_ = rank_ / (tp_ * dp_);
    split(axis_id::dp, /*color=*/pp_rank_ * tp_ + tp_rank_, /*key=*/dp_rank_);
    split(axis_id::pp, dp_rank_ * tp_ + tp_rank_, pp_rank_);
    split(axis_id::tp, dp_rank_ + dp_ * pp_rank_, tp_rank_);
  }

  grid(const grid&) = delete;
  grid& operator=(const grid&) = delete;
  grid(grid&&) noexcept = default;
  grid& operator=(grid&&) noexcept = default;
  ~grid() = default;

  int dp_rank() const noexcept { return dp_rank_; }
  int pp_rank() const noexcept { return pp_rank_; }
  int tp_rank() const noexcept { return tp_rank_; }
  int dp_size() const noexcept { return dp_; }
  int pp_size() const noexcept { return pp_; }
  int tp_size() const noexcept { return tp_; }
  int world_rank() const noexcept { return rank_; }
  int world_size() const noexcept { return size_; }

  int rank(axis_id a) const noexcept { return a == axis_id::dp ? dp_rank_ : a == axis_id::pp ? pp_rank_ : tp_rank_; }
  int size(axis_id a) const noexcept { return a == axis_id::dp ? dp_ : a == axis_id::pp ? pp_ : tp_; }

  // World rank of grid coordinates (no bounds check beyond the returned -1).
  int world_rank_of(int dp, int pp, int tp) const noexcept {
    if (dp < 0 || dp >= dp_ || pp < 0 || pp >= pp_ || tp < 0 || tp >= tp_) return -1;
    return tp + tp_ * (dp + dp_ * pp);
  }

  // Pipeline neighbours (same dp and tp coordinates) as world ranks; -1 at the ends.
  int prev_stage() const noexcept { return world_rank_of(dp_rank_, pp_rank_ - 1, tp_rank_); }
  int next_stage() const noexcept { return world_rank_of(dp_rank_, pp_rank_ + 1, tp_rank_); }

  // Sub-communicator of one axis; rank in it == this rank's coordinate on that axis.
  MPI_Comm comm(axis_id a) const noexcept { return comms_[static_cast<int>(a)].get(); }
  // The grid's duplicate of the world communicator (ranks are world ranks).
  MPI_Comm world() const noexcept { return world_.get(); }

 private:
  void split(axis_id a, int color, int key) {
    MPI_Comm c = MPI_COMM_NULL;
    HCOMM_MPI_CHECK(MPI_Comm_split(world_.get(), color, key, &c));
    comms_[static_cast<int>(a)] = mpi::owned_comm(c);
  }

  int dp_, pp_, tp_;
  int rank_ = 0, size_ = 1, dp_rank_ = 0, pp_rank_ = 0, tp_rank_ = 0;
  mpi::owned_comm world_;
  mpi::owned_comm comms_[3];
};

}  // namespace hcomm
