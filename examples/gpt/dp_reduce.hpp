// examples/gpt/dp_reduce.hpp: the data-parallel gradient reduction: every DP replica ends
// with the sum of all replicas' gradients.
//
//   gpt::dp_reducer<decltype(bundle.dp())> dp(bundle.dp(), grid, /*packed_sparse=*/true);
//   dp.reduce({grads, sparsity.packed_grads(), sparsity.growth_grads()});   // end of backward
//   std::vector<float> r = dp.residual(grads.size());    // error feedback: for checkpoints
//
// A bucket is a range of the stage's gradient allocation. Dense runs without error feedback
// cut it into --bucket-mb buckets (overlap.hpp), reduced one by one with reduce_bucket(),
// after backward or, with --overlap on, on a communication thread as backward finishes them
// (uncompressed schemes with several buckets: MPI_Iallreduce in trainer.hpp instead).
// Sparse runs and error-feedback schemes reduce the whole allocation as one bucket, after
// the last micro-batch's backward, with reduce(). Its sparse layers (sparsity.hpp)
// hold their gradient as packed active values; with `packed_sparse` those go instead of the
// dense range, so the all-reduce sends only active values (identical positions on every
// replica: the masks agree), and the bytes that saves are counted. Schemes with error
// feedback keep a residual shaped like the dense buffer, so with them the dense range is
// sent, and re-masked afterwards because a lossy sum leaves noise at inactive positions.
// Buffers reach the communicator as comm_buffer.hpp makes them (device communicators: the
// model's device memory); the packed and growth buffers are host memory, as sparse runs are
// (the cpu backend's).
#pragma once
#include <mpi.h>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "comm_buffer.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/topology/grid.hpp"
#include "msparse/format/csr.hpp"
#include "wire.hpp"

namespace gpt {

// Communicators with error feedback (hcomm's ErrorFeedback policy) keep a residual that is
// part of the training state: it goes into checkpoints.
template <class C>
concept has_residual = requires(C& c, std::span<const float> r) {
  { c.template residual<float>() } -> std::convertible_to<std::span<const float>>;
  c.template load_residual<float>(r);
};

// A sparse layer's gradient: `values` (its active positions, in `pattern`'s CSR order) stand
// for the dense range [offset, offset + numel) of the gradient allocation.
struct packed_grad {
  std::int64_t offset = 0, numel = 0;
  std::span<float> values;
  const msparse::format::sparse_matrix* pattern = nullptr;
};

struct grad_bucket {
  std::span<float> grads;                    // a range of the stage's gradient allocation
  std::span<const packed_grad> packed;       // its sparse layers, ascending offsets into `grads`
  std::span<const std::span<float>> growth;  // topology-update steps: the sparse layers' dense
                                             // gradients, read by the growth rule only
};

template <class DpComm>
class dp_reducer {
 public:
  // Error feedback: a host communicator's residual through has_residual, a device
  // communicator's in its executor's memory (copied to and from the host for checkpoints).
  static constexpr bool error_feedback = [] {
    if constexpr (takes_device_span<DpComm>) return DpComm::error_feedback;
    else return has_residual<DpComm>;
  }();

  dp_reducer(DpComm& dp, const hcomm::grid& g, bool packed_sparse)
      : dp_(dp), group_(g.comm(hcomm::axis_id::dp)), replicas_(g.dp_size()), packed_(packed_sparse && !error_feedback) {}

  // Sums the bucket over the DP replicas, in place.
  void reduce(const grad_bucket& b) {
    saved_bytes_ = 0;
    if (b.packed.empty()) {
      dp_.allreduce(comm_buffer<DpComm>(b.grads));
      return;
    }
    if (packed_) reduce_packed(b);
    else reduce_dense(b);
    if (!b.growth.empty()) reduce_growth(b.growth);
  }

  // One bucket of a dense run without error feedback (overlap.hpp): the all-reduce of its
  // range (bfloat16 copies with a wire: --precision bf16, wire.hpp). The communication thread
  // calls it while the main thread runs the pipeline on the other communicators; nothing else
  // touches the DP communicator (or its wire) meanwhile.
  void reduce_bucket(std::span<float> g) { allreduce_on(dp_, g, wire_); }
  // 16-bit buckets from now on (null: float32).
  void use_wire(wire16<wire_exec_t<DpComm>>* w) { wire_ = w; }

  // Bytes the packed all-reduce did not send this step, this rank.
  double saved_bytes() const { return saved_bytes_; }

  // The error-feedback residual (zeros when the scheme has none, or before the first step).
  std::vector<float> residual(std::size_t n) const {
    std::vector<float> r(n, 0.f);
    if constexpr (error_feedback) {
      const auto cur = host_residual();
      if (!cur.empty()) {
        if (cur.size() != r.size())
          hcomm::fail(hcomm::errc::mismatch, "error-feedback residual has " + std::to_string(cur.size()) +
                                                 " values, the gradients " + std::to_string(r.size()));
        std::copy(cur.begin(), cur.end(), r.begin());
      }
    }
    return r;
  }
  void load_residual(std::span<const float> r) {
    if constexpr (error_feedback) dp_.template load_residual<float>(r);
  }

 private:
  auto host_residual() const {
    if constexpr (takes_device_span<DpComm>) return dp_.template residual_on_host<float>();
    else return dp_.template residual<float>();
  }
  // [dense ranges and packed layers, in allocation order] in one buffer.
  void reduce_packed(const grad_bucket& b) {
    float* g = b.grads.data();
    buf_.clear();
    std::int64_t at = 0;
    for (const auto& p : b.packed) {
      buf_.insert(buf_.end(), g + at, g + p.offset);
      buf_.insert(buf_.end(), p.values.begin(), p.values.end());
      at = p.offset + p.numel;
    }
    buf_.insert(buf_.end(), g + at, g + b.grads.size());
    dp_.allreduce(comm_buffer<DpComm>(std::span<float>(buf_)));
    std::size_t k = 0;
    at = 0;
    for (const auto& p : b.packed) {
      std::copy(buf_.begin() + k, buf_.begin() + k + (p.offset - at), g + at);
      k += static_cast<std::size_t>(p.offset - at);
      p.pattern->scatter_values(buf_.data() + k, g + p.offset);
      k += p.values.size();
      at = p.offset + p.numel;
    }
    std::copy(buf_.begin() + k, buf_.end(), g + at);
    if (replicas_ > 1) saved_bytes_ = static_cast<double>(b.grads.size() - buf_.size()) * sizeof(float);
  }
  // The dense buffer with the active values in place; the sum is re-masked.
  void reduce_dense(const grad_bucket& b) {
    float* g = b.grads.data();
    for (const auto& p : b.packed) p.pattern->scatter_values(p.values.data(), g + p.offset);
    dp_.allreduce(comm_buffer<DpComm>(b.grads));
    for (const auto& p : b.packed) {
      float* d = g + p.offset;
      p.pattern->gather_values(d, p.values.data());
      std::fill(d, d + p.numel, 0.f);
      p.pattern->scatter_values(p.values.data(), d);
    }
  }
  // Growth gradients in one more buffer; with error feedback over plain MPI (the residual
  // is shaped like the gradient buffer, and these only rank candidates for growth).
  void reduce_growth(std::span<const std::span<float>> growth) {
    buf_.clear();
    for (const auto& d : growth) buf_.insert(buf_.end(), d.begin(), d.end());
    if constexpr (!error_feedback) dp_.allreduce(comm_buffer<DpComm>(std::span<float>(buf_)));
    else MPI_Allreduce(MPI_IN_PLACE, buf_.data(), static_cast<int>(buf_.size()), MPI_FLOAT, MPI_SUM, group_);
    std::size_t k = 0;
    for (const auto& d : growth) {
      std::copy(buf_.begin() + k, buf_.begin() + k + d.size(), d.begin());
      k += d.size();
    }
  }

  DpComm& dp_;
  MPI_Comm group_;  // the grid's DP group (plain MPI)
  int replicas_ = 1;
  bool packed_ = true;
  double saved_bytes_ = 0;
  std::vector<float> buf_;
  wire16<wire_exec_t<DpComm>>* wire_ = nullptr;
};

}  // namespace gpt
