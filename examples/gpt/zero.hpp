// examples/gpt/zero.hpp: ZeRO stage 1 (--zero 1): AdamW's state (moments, and the fp32
// master weights) sharded over the DP replicas. Each replica reduce-scatters the gradients,
// updates its block of the weights, and all-gathers the updated weights (ZeRO-1 as
// DeepSpeed's stage 1 and llm.c's zero.cuh). The trainer drives it (trainer.hpp):
//
//   gpt::zero_shard<Ops> z(model, grid.dp_size(), grid.dp_rank());
//   z.adopt(model);                       // after init: this rank's master weights
//   dp.reduce_scatter(z.sharded(model.grads), z.block_grads());   // the scheme compresses it
//   for (auto r : z.replicated()) dp.allreduce(grads[r]);          // as without ZeRO
//   z.collect(model);                     // the replicated ranges' sums into the local vector
//   double sq = z.grad_sq(model, dp_rank == 0);  z.scale(f);  z.step(model, lr, t);
//   dp.allgather_exact(z.block_weights(), z.sharded(model.params));  z.spread(model);
//
// Layout. The stage's allocation [0, n) holds one contiguous range sharded into D equal blocks
// [lo + r*m, lo + (r+1)*m) (replica r owns block r, m = (hi - lo) / D), and ranges that every
// replica reduces and updates itself, replicated:
//   - the remainder [lo + D*m, hi) (fewer than D values);
//   - the tied embedding's copy on a pipeline's first and last stage: the tied exchange adds
//     the two stages' DP sums (trainer.hpp's sync_tied_embedding), which keeps the copies
//     bitwise equal through lossy schemes only if each is reduced whole, as without ZeRO (the
//     first stage's copy leads its allocation, the last stage's ends it).
// This replica's local vector is its block, then the replicated ranges. The weights gather
// exactly (the lossless all-gather): every replica then computes with the same weights, which
// are the master's (fp32) or its bfloat16 rounding (--precision bf16), as without ZeRO; the
// gradients' reduce-scatter goes through the scheme like any DP traffic.
//
// Memory per replica: moments, master weights and the reduced gradient of m + r values (r:
// the replicated ranges; bf16 adds their rounding) instead of moments of n. The tied
// embedding, often the largest tensor, stays whole on the first and last stage. Checkpoints
// hold whole arrays, gathered at save (whole(), gather(): the stage's size again, for the
// save's length) and cut at resume (adopt_full()), so a set moves between --zero 0 and 1 and
// between DP sizes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "config.hpp"
#include "optim.hpp"
#include "portable/adamw.hpp"

namespace gpt {

template <class Ops>
class zero_shard {
 public:
  template <class T>
  using array = typename Ops::template array<T>;

  // A range of the stage's allocation and where it sits in the local vector.
  struct segment {
    std::int64_t global = 0, local = 0, len = 0;
  };

  template <class Model>
  zero_shard(const Model& model, int replicas, int rank) : ops_(&model.ops()), D_(replicas), r_(rank) {
    const auto& ts = model.tensors();
    const std::int64_t n = ts.empty() ? 0 : ts.back().offset + ts.back().numel;
    std::int64_t lo = 0, hi = n;
    segment tied;
    const bool two_copies = model.cfg().tied() && !(model.is_first() && model.is_last());
    for (const auto& t : ts)
      if (t.global == 0 && two_copies) tied = {t.offset, 0, t.numel};
    if (tied.len > 0) {  // first stage: wte leads; last stage: its copy ends the allocation
      if (tied.global == 0) lo = tied.len;
      else hi = tied.global;
    }
    m_ = (hi - lo) / D_;
    lo_ = lo;
    block_ = {lo + r_ * m_, 0, m_};
    std::int64_t at = m_;
    if (const std::int64_t rest = hi - (lo + D_ * m_); rest > 0) {
      replicated_.push_back({lo + D_ * m_, at, rest});
      at += rest;
    }
    if (tied.len > 0) {
      tied.local = at;
      replicated_.push_back(tied);
      at += tied.len;
    }
    local_ = at;
    master_ = ops_->template make_array<float>(static_cast<std::size_t>(local_));
    m1_ = ops_->template make_array<float>(static_cast<std::size_t>(local_));
    m2_ = ops_->template make_array<float>(static_cast<std::size_t>(local_));
    grad_ = ops_->template make_array<float>(static_cast<std::size_t>(local_));
    if (model.cfg().bf16) rounded_ = ops_->template make_array<float>(static_cast<std::size_t>(local_));
  }

  // The sharded range [lo, lo + D*m) of a stage-sized array (gradients in, weights out).
  std::span<float> sharded(auto& a) const { return {a.data() + lo_, static_cast<std::size_t>(D_ * m_)}; }
  std::span<float> block_grads() { return {grad_.data(), static_cast<std::size_t>(m_)}; }
  // The weights this replica sends: its block of the master copy, or of its bf16 rounding.
  std::span<const float> block_weights() const {
    return {(rounded_.size() ? rounded_ : master_).data(), static_cast<std::size_t>(m_)};
  }
  const std::vector<segment>& replicated() const { return replicated_; }
  std::int64_t local_size() const { return local_; }

  // This replica's master weights from the model's (after initialisation, before any bf16
  // rounding); bf16: the model's weights become their rounding, as basic_adamw::adopt_master.
  template <class Model>
  void adopt(Model& model) {
    for_each_owned([&](const segment& s) { ops_->copy(master_.data() + s.local, model.params.data() + s.global, len(s)); });
    if (model.cfg().bf16) ops_->round_bf16(model.params.data(), static_cast<std::int64_t>(model.params.size()));
  }
  // The replicated ranges' DP sums (in the model's gradients) into the local vector.
  template <class Model>
  void collect(const Model& model) {
    for (const auto& s : replicated_) ops_->copy(grad_.data() + s.local, model.grads.data() + s.global, len(s));
  }

  // This replica's share of the squared global gradient norm: its block's tensors that count
  // (model.hpp's local_grad_sq rule), and the replicated ranges' when `replicated_too`
  // (one DP replica counts them).
  template <class Model>
  double grad_sq(const Model& model, bool replicated_too) const {
    std::vector<std::pair<const float*, std::ptrdiff_t>> ranges;
    for (const auto& t : model.tensors()) {
      if (!t.counts_in_norm) continue;
      auto add = [&](const segment& s) {
        const auto [a, b] = overlap(t.offset, t.numel, s);
        if (a < b) ranges.emplace_back(grad_.data() + s.local + (a - s.global), b - a);
      };
      add(block_);
      if (replicated_too)
        for (const auto& s : replicated_) add(s);
    }
    return sum_squares_of(*ops_, ranges);
  }
  void scale(float f) { ops_->scale(grad_.data(), local_, f); }

  // AdamW (basic_adamw's arithmetic, tensor by tensor for the decay rule) on the local vector.
  template <class Model>
  void step(const Model& model, float lr, int t) {
    const config& c = model.cfg();
    float* rounded = rounded_.size() ? rounded_.data() : nullptr;
    for (const auto& tensor : model.tensors()) {
      const auto k = portable::adamw_update::coefficients(lr, t, c.beta1, c.beta2, c.eps, c.weight_decay,
                                                          model.specs()[tensor.global].decay);
      for_each_owned([&](const segment& s) {
        const auto [a, b] = overlap(tensor.offset, tensor.numel, s);
        if (a >= b) return;
        const std::int64_t o = s.local + (a - s.global);
        ops_->adamw_update(master_.data() + o, m1_.data() + o, m2_.data() + o, grad_.data() + o, b - a, k,
                          rounded ? rounded + o : nullptr);
      });
    }
  }
  // The replicated ranges' new weights into the model (every replica computed the same).
  template <class Model>
  void spread(Model& model) const {
    const float* w = (rounded_.size() ? rounded_ : master_).data();
    for (const auto& s : replicated_) ops_->copy(model.params.data() + s.global, w + s.local, len(s));
  }

  // Checkpoints. whole(): arrays of the stage's size for the master weights (bf16 runs; fp32:
  // the model's weights are the master's) and the moments; gather() fills them from every
  // replica's block with `gather` (an exact all-gather of this block into the sharded range).
  // adopt_full(): this replica's part of such arrays (after a resume).
  template <class Model>
  basic_adamw<Ops> whole(const Model& model) const {
    const std::size_t n = model.params.size();
    basic_adamw<Ops> a(n, *ops_);
    if (model.cfg().bf16) a.master = ops_->template make_array<float>(n);
    return a;
  }
  template <class Gather>
  void gather(basic_adamw<Ops>& a, Gather&& gather) const {
    auto one = [&](const array<float>& mine, array<float>& out) {
      gather(std::span<const float>(mine.data(), static_cast<std::size_t>(m_)), sharded(out));
      for (const auto& s : replicated_) ops_->copy(out.data() + s.global, mine.data() + s.local, len(s));
    };
    one(m1_, a.m);
    one(m2_, a.v);
    if (a.master.size()) one(master_, a.master);
  }
  template <class Model>
  void adopt_full(const Model& model, const basic_adamw<Ops>& a) {
    const float* w = a.master.size() ? a.master.data() : model.params.data();
    for_each_owned([&](const segment& s) {
      ops_->copy(master_.data() + s.local, w + s.global, len(s));
      ops_->copy(m1_.data() + s.local, a.m.data() + s.global, len(s));
      ops_->copy(m2_.data() + s.local, a.v.data() + s.global, len(s));
    });
  }

 private:
  static std::size_t len(const segment& s) { return static_cast<std::size_t>(s.len); }
  static std::pair<std::int64_t, std::int64_t> overlap(std::int64_t off, std::int64_t numel, const segment& s) {
    return {std::max(off, s.global), std::min(off + numel, s.global + s.len)};
  }
  template <class F>
  void for_each_owned(F&& f) const {
    f(block_);
    for (const auto& s : replicated_) f(s);
  }

  const Ops* ops_;  // the model's backend
  int D_ = 1, r_ = 0;
  std::int64_t lo_ = 0, m_ = 0, local_ = 0;
  segment block_;
  std::vector<segment> replicated_;
  array<float> master_, m1_, m2_, grad_, rounded_;
};

}  // namespace gpt
