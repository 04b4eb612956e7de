// examples/gpt/zero.hpp: ZeRO stage 1 (--zero 1): AdamW's state (moments, and the fp32
// master weights) sharded over the DP replicas. Each replica reduce-scatters the gradients,
// updates its blocks of the weights, and all-gathers the updated weights (ZeRO-1 as
// DeepSpeed's stage 1 and llm.c's zero.cuh). The trainer drives it (trainer.hpp):
//
//   gpt::zero_shard<Ops> z(model, grid.dp_size(), grid.dp_rank(), /*bucket MiB*/ 25);
//   z.adopt(model);                       // after init: this rank's master weights
//   for (const auto& b : z.buckets()) {   // backward order; with --overlap on, as backward
//     dp.reduce_scatter(z.sharded(model.grads, b), z.block_grads(b));   // finishes them
//     dp.allreduce(z.rest(model.grads, b));                             // (the scheme compresses both)
//   }
//   z.collect(model);                     // the replicated ranges' sums into the local vector
//   double sq = z.grad_sq(model, dp_rank == 0);  z.scale(f);  z.step(model, lr, t);
//   for (const auto& b : z.buckets()) dp.allgather_exact(z.block_weights(b), z.sharded(model.params, b));
//   z.spread(model);
//
// Layout. The stage's allocation [0, n) is cut into the DP buckets of overlap.hpp (tensor
// boundaries, --bucket-mb, backward order), so that a bucket's reduction can start as soon
// as backward has finished it. Bucket [b, e) is sharded into D equal blocks
// [b + r*m, b + (r+1)*m) (replica r owns block r, m = (e - b) / D); its rest [b + D*m, e)
// (fewer than D values) every replica reduces and updates itself, replicated. So is the tied
// embedding's copy on a pipeline's first and last stage, a bucket of its own: the tied
// exchange adds the two stages' DP sums (trainer.hpp's sync_tied_embedding), which keeps the
// copies bitwise equal through lossy schemes only if each is reduced whole, as without ZeRO
// (the first stage's copy leads its allocation, the last stage's ends it). With one bucket
// (--bucket-mb 0, or a model smaller than it) the reduction is one reduce-scatter as in
// DeepSpeed's stage 1. This replica's local vector is its blocks in bucket order, then the
// replicated ranges. The weights gather exactly (the lossless all-gather): every replica then
// computes with the same weights, which are the master's (fp32) or its bfloat16 rounding
// (--precision bf16), as without ZeRO; the gradients' reduce-scatter goes through the scheme
// like any DP traffic.
//
// Memory per replica: moments, master weights and the reduced gradient of n/D + r values (r:
// the replicated ranges; bf16 adds their rounding) instead of moments of n. The tied
// embedding, often the largest tensor, stays whole on the first and last stage. Checkpoints
// hold whole arrays, gathered at save (whole(), gather(): the stage's size again, for the
// save's length) and cut at resume (adopt_full()), so a set moves between --zero 0 and 1, and
// between DP sizes and bucket sizes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "config.hpp"
#include "optim.hpp"
#include "overlap.hpp"
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
  // A bucket of the DP reduction [begin, end): [begin, begin + D*m) reduce-scattered, this
  // replica's block of it at `local` in the local vector; the rest all-reduced (m == 0: the
  // whole bucket, as the tied copy's).
  struct bucket {
    std::int64_t begin = 0, end = 0, m = 0, local = 0;
  };

  template <class Model>
  zero_shard(const Model& model, int replicas, int rank, double bucket_mib)
      : ops_(&model.ops()), D_(replicas), r_(rank) {
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
    // overlap.hpp's buckets, less the tied copy (a whole tensor: buckets end at tensor
    // boundaries), which is a bucket of its own; backward order (descending offsets)
    for (const bucket_range& b : plan_buckets(ts, bucket_mib)) {
      const std::int64_t a = std::max(b.begin, lo), e = std::min(b.end, hi);
      if (a < e) buckets_.push_back({a, e, (e - a) / D_, 0});
    }
    if (tied.len > 0) buckets_.push_back({tied.global, tied.global + tied.len, 0, 0});
    std::sort(buckets_.begin(), buckets_.end(), [](const bucket& x, const bucket& y) { return x.begin > y.begin; });
    std::int64_t at = 0;
    for (auto& b : buckets_) {
      b.local = at;
      if (b.m > 0) blocks_.push_back({b.begin + r_ * b.m, at, b.m});
      at += b.m;
    }
    for (const auto& b : buckets_)
      if (const std::int64_t a = b.begin + D_ * b.m; a < b.end) {
        replicated_.push_back({a, at, b.end - a});
        at += b.end - a;
      }
    local_ = at;
    master_ = ops_->template make_array<float>(static_cast<std::size_t>(local_));
    m1_ = ops_->template make_array<float>(static_cast<std::size_t>(local_));
    m2_ = ops_->template make_array<float>(static_cast<std::size_t>(local_));
    grad_ = ops_->template make_array<float>(static_cast<std::size_t>(local_));
    if (model.cfg().bf16) rounded_ = ops_->template make_array<float>(static_cast<std::size_t>(local_));
  }

  // The buckets in backward order, and for one bucket: its sharded range of a stage-sized
  // array (gradients in, weights out), its rest (all-reduced), this replica's block of the
  // reduced gradients, and the weights this replica sends (its block of the master copy, or
  // of its bf16 rounding).
  const std::vector<bucket>& buckets() const { return buckets_; }
  std::span<float> sharded(auto& a, const bucket& b) const {
    return {a.data() + b.begin, static_cast<std::size_t>(D_ * b.m)};
  }
  std::span<float> rest(auto& a, const bucket& b) const {
    return {a.data() + b.begin + D_ * b.m, static_cast<std::size_t>(b.end - b.begin - D_ * b.m)};
  }
  std::span<float> block_grads(const bucket& b) { return {grad_.data() + b.local, static_cast<std::size_t>(b.m)}; }
  std::span<const float> block_weights(const bucket& b) const {
    return {(rounded_.size() ? rounded_ : master_).data() + b.local, static_cast<std::size_t>(b.m)};
  }
  // The largest sharded range (staging for 16-bit wires).
  std::size_t max_sharded() const {
    std::int64_t x = 0;
    for (const auto& b : buckets_) x = std::max(x, D_ * b.m);
    return static_cast<std::size_t>(x);
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

  // This replica's share of the squared global gradient norm: its blocks' tensors that count
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
      for (const auto& s : blocks_) add(s);
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
  // replica's blocks with `gather` (an exact all-gather of one block into its sharded range),
  // bucket by bucket. adopt_full(): this replica's part of such arrays (after a resume).
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
      for (const auto& b : buckets_)
        if (b.m > 0)
          gather(std::span<const float>(mine.data() + b.local, static_cast<std::size_t>(b.m)), sharded(out, b));
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
    for (const auto& s : blocks_) f(s);
    for (const auto& s : replicated_) f(s);
  }

  const Ops* ops_;  // the model's backend
  int D_ = 1, r_ = 0;
  std::int64_t local_ = 0;
  std::vector<bucket> buckets_;      // backward order
  std::vector<segment> blocks_;      // this replica's block of each sharded bucket
  std::vector<segment> replicated_;  // the buckets' rests (the tied copy's: all of it)
  array<float> master_, m1_, m2_, grad_, rounded_;
};

}  // namespace gpt
