// msparse/topology.hpp: topology evolution. Prune by weight magnitude, grow by gradient,
// at random, or mixed (MST's Mixed Growing), per layer, at the schedule's targets; plus the
// whole-model manager a trainer holds (masks + schedule + growth rule + seed), with its
// checkpoint bytes and a cross-rank checksum.
//
//   auto layers = msparse::gpt_linear_layers(shape);
//   msparse::sparse_topology topo(layers, msparse::schedule::mst(opts), msparse::rule_of<msparse::Mixed<3>>(),
//                                 msparse::distribution_kind::erk, /*seed*/1234);
//   topo.init(tensors);                                   // step 0: masks, zeroes inactive weights
//   ... each step, after the optimizer:
//   if (topo.is_update_step(step)) topo.update(step, tensors);  // needs dense grads if
//                                                               // topo.needs_dense_gradient(step)
//
// Counts (as the MST code): with A active, target A', delta = A - A' (> 0 when sparsifying)
// and drop fraction f, prune max(floor(A f), delta) and grow prune - delta. Restoration
// (delta < 0) therefore grows |delta| more than it prunes. Of the grown, floor(grow*r/(r+1))
// go to the largest |dense gradient| among inactive positions, the rest uniformly at random
// among the still-inactive ones. Grown weights and their Adam moments are set to zero;
// pruned weights and moments too. Ties (equal magnitudes, common right after growth, when
// grown weights are all zero) break by index, so the result is a pure function of the
// inputs and (seed, step, layer): DP replicas that hold the same weights and gradients
// compute identical masks without communicating.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/exec/host.hpp"
#include "msparse/distribution.hpp"
#include "msparse/mask.hpp"
#include "msparse/policy/growth.hpp"
#include "msparse/schedule.hpp"

namespace msparse {

struct update_counts {
  std::size_t active_before = 0;
  std::size_t active_after = 0;
  std::size_t pruned = 0;
  std::size_t grown = 0;
  std::size_t grown_by_gradient = 0;
  std::size_t grown_random = 0;
};

// The per-weight arrays of one layer (all of mask.size() elements). grad is the dense
// weight gradient (needed only when the rule grows by gradient); adam_m/adam_v may be null.
struct layer_tensors {
  float* weight = nullptr;
  const float* grad = nullptr;
  float* adam_m = nullptr;
  float* adam_v = nullptr;
};

// How many to prune and grow for a layer going from `active` to `target` at drop fraction f.
struct prune_grow {
  std::size_t prune = 0, grow = 0;
};
inline prune_grow prune_grow_counts(std::size_t active, std::size_t target, double drop_fraction) {
  const auto delta = static_cast<std::int64_t>(active) - static_cast<std::int64_t>(target);
  const auto drop = static_cast<std::int64_t>(std::floor(double(active) * drop_fraction));
  const std::int64_t prune = std::clamp<std::int64_t>(std::max(drop, delta), 0, static_cast<std::int64_t>(active));
  return {static_cast<std::size_t>(prune), static_cast<std::size_t>(prune - delta)};
}

namespace detail {
inline float score_of(float x) noexcept { return std::isnan(x) ? -1.0f : std::fabs(x); }
inline void zero_at(const layer_tensors& t, std::size_t i) noexcept {
  if (t.weight) t.weight[i] = 0.0f;
  if (t.adam_m) t.adam_m[i] = 0.0f;
  if (t.adam_v) t.adam_v[i] = 0.0f;
}
}  // namespace detail

namespace detail {
// Calls take(i), in index order, for the k positions with pred(i) of smallest key(i), ties
// broken by smaller index, so the chosen set is unique. The k-th key is found with
// nth_element on a contiguous copy of the keys (cache-friendly, unlike sorting indices by
// an indirect key); a second pass takes everything below it and the first ties.
template <class Key, class Pred, class Take>
void take_k_smallest(std::size_t n, std::size_t k, Key key, Pred pred, Take take, std::vector<float>& keys) {
  if (k == 0) return;
  keys.clear();
  for (std::size_t i = 0; i < n; ++i)
    if (pred(i)) keys.push_back(key(i));
  if (k >= keys.size()) {
    for (std::size_t i = 0; i < n; ++i)
      if (pred(i)) take(i);
    return;
  }
  std::nth_element(keys.begin(), keys.begin() + std::ptrdiff_t(k - 1), keys.end());
  const float tau = keys[k - 1];
  std::size_t below = 0;
  for (std::size_t r = 0; r < k - 1; ++r) below += keys[r] < tau;
  std::size_t ties = k - below;
  for (std::size_t i = 0; i < n; ++i) {
    if (!pred(i)) continue;
    const float v = key(i);
    if (v < tau || (v == tau && ties > 0)) {
      if (v == tau) --ties;
      take(i);
    }
  }
}
}  // namespace detail

// One layer's topology update. rng is keyed by (seed, step, layer) by the caller.
inline update_counts update_layer(mask& m, std::size_t target, double drop_fraction, const growth_rule& rule,
                                  const layer_tensors& t, counter_rng rng) {
  HCOMM_EXPECTS(target <= m.size(), "msparse: update_layer: target exceeds the layer size");
  HCOMM_EXPECTS(drop_fraction >= 0.0 && drop_fraction <= 1.0, "msparse: drop fraction must be in [0, 1]");
  update_counts c;
  c.active_before = m.active();
  if (!rule.is_sparse) {  // dense: every weight active, nothing to do
    m.fill(true);
    c.active_after = m.active();
    return c;
  }
  // Static masks do not evolve; only a change of target moves them (at random).
  const auto pg = prune_grow_counts(m.active(), target, rule.evolves ? drop_fraction : 0.0);
  const std::size_t n_grad = rule.evolves ? static_cast<std::size_t>(rule.by_gradient(pg.grow)) : 0;
  HCOMM_EXPECTS(n_grad == 0 || t.grad != nullptr, "msparse: gradient growth needs the dense weight gradient");
  HCOMM_EXPECTS(pg.prune == 0 || t.weight != nullptr, "msparse: magnitude pruning needs the weights");
  const std::size_t n = m.size();
  const std::uint8_t* on = m.data();
  std::vector<float> keys;

  // Prune: the `prune` active weights of smallest |w| (index breaks ties).
  const float* w = t.weight;
  detail::take_k_smallest(
      n, pg.prune, [w](std::size_t i) { return detail::score_of(w[i]); }, [on](std::size_t i) { return on[i] != 0; },
      [&](std::size_t i) {
        m.set(i, false);
        detail::zero_at(t, i);
      },
      keys);
  // Grow by gradient: the n_grad inactive positions of largest |g| (index breaks ties).
  // Just-pruned positions are candidates too, as in RigL; they restart from zero.
  const float* g = t.grad;
  detail::take_k_smallest(
      n, n_grad, [g](std::size_t i) { return -detail::score_of(g[i]); }, [on](std::size_t i) { return on[i] == 0; },
      [&](std::size_t i) {
        m.set(i, true);
        detail::zero_at(t, i);
      },
      keys);
  keys = {};
  // Grow at random: uniformly among the still-inactive positions. Rejection sampling while
  // inactive positions are plentiful; otherwise a partial Fisher-Yates over their list.
  const std::size_t n_rand = pg.grow - n_grad;
  const std::size_t inactive = n - m.active();
  if (n_rand > 0 && inactive >= n / 4 && n_rand <= inactive / 2) {
    for (std::size_t done = 0; done < n_rand;) {
      const auto i = static_cast<std::size_t>(rng.below(n));
      if (!on[i]) {
        m.set(i, true);
        detail::zero_at(t, i);
        ++done;
      }
    }
  } else if (n_rand > 0) {
    std::vector<std::size_t> idx;
    idx.reserve(inactive);
    for (std::size_t i = 0; i < n; ++i)
      if (!on[i]) idx.push_back(i);
    for (std::size_t k = 0; k < n_rand; ++k) {
      const std::size_t j = k + rng.below(idx.size() - k);
      std::swap(idx[k], idx[j]);
      m.set(idx[k], true);
      detail::zero_at(t, idx[k]);
    }
  }
  // Inactive weights are exactly zero afterwards even if an optimizer step (say one fed the
  // dense gradient of an update step) moved them; the sparse kernels rely on it.
  if (t.weight)
    for (std::size_t i = 0; i < n; ++i)
      if (!on[i]) t.weight[i] = 0.0f;
  c.pruned = pg.prune;
  c.grown = pg.grow;
  c.grown_by_gradient = n_grad;
  c.grown_random = n_rand;
  c.active_after = m.active();
  return c;
}

// Tensor parallelism: which part of each layer this rank holds. Masks (and all of the
// update) are then local to the shard: per-shard targets at the layer's ERK density and
// per-shard top-k, with the shard index folded into the RNG key. The initial random mask
// is drawn for the full layer and then sharded, so it equals the TP = 1 mask.
struct tp_sharding {
  std::size_t parts = 1;
  std::size_t index = 0;
  std::vector<shard_axis> axes;  // one per layer (empty: all by rows)
};

class sparse_topology {
 public:
  sparse_topology() = default;
  sparse_topology(std::vector<layer_shape> layers, schedule sched, growth_rule rule,
                  distribution_kind dist = distribution_kind::erk, std::uint64_t seed = 0, tp_sharding tp = {})
      : layers_(std::move(layers)), sched_(std::move(sched)), rule_(rule), dist_(dist), seed_(seed), tp_(std::move(tp)) {
    HCOMM_EXPECTS(tp_.parts >= 1 && tp_.index < tp_.parts, "msparse: bad TP sharding");
    HCOMM_EXPECTS(tp_.axes.empty() || tp_.axes.size() == layers_.size(), "msparse: TP sharding needs one axis per layer");
    if (tp_.axes.empty()) tp_.axes.assign(layers_.size(), shard_axis::rows);
    masks_.resize(layers_.size());
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const auto [r, c] = local_shape(i);
      masks_[i] = mask(r, c, true);
    }
  }

  // Target overall sparsity at a step: the schedule's, or 0 for dense training.
  double target_sparsity(std::int64_t step) const { return rule_.is_sparse ? sched_.target_sparsity(step) : 0.0; }

  std::vector<double> target_densities(std::int64_t step) const {
    const double d = 1.0 - target_sparsity(step);
    if (d >= 1.0) return std::vector<double>(layers_.size(), 1.0);
    return layer_densities(dist_, layers_, d);
  }

  // Per-layer (per-shard under TP) target active counts.
  std::vector<std::size_t> target_active(std::int64_t step) const {
    const auto d = target_densities(step);
    std::vector<std::size_t> k(layers_.size());
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const auto [r, c] = local_shape(i);
      k[i] = layers_[i].sparse ? static_cast<std::size_t>(std::llround(d[i] * double(r * c))) : r * c;
    }
    return k;
  }

  // Step 0: masks at the schedule's initial targets (all active when it starts dense; else
  // uniformly random per layer, keyed by (seed, 0, layer)), inactive weights zeroed.
  void init(std::span<const layer_tensors> t = {}) {
    HCOMM_EXPECTS(t.empty() || t.size() == layers_.size(), "msparse: init needs one tensor set per layer (or none)");
    const auto d = target_densities(0);
    ex_.for_each(layers_.size(), [&](std::size_t i) {
      const layer_shape& l = layers_[i];
      mask full(l.rows, l.cols, true);
      const std::size_t k = active_count(l, d[i]);
      if (l.sparse && k < l.size()) full.randomize(k, counter_rng(seed_, 0, i, kInitStream));
      masks_[i] = tp_.parts == 1 ? std::move(full) : shard(full, tp_.axes[i], tp_.parts, tp_.index);
      if (!t.empty()) zero_inactive(i, t[i]);
    });
    step_ = 0;
  }

  // Threads for init/update (0: OpenMP's default; layers run in parallel).
  void set_threads(int n) noexcept { ex_.threads = n; }

  bool is_update_step(std::int64_t step) const {
    if (!rule_.is_sparse) return false;
    if (!rule_.evolves) return step > 0 && sched_.target_sparsity(step) != sched_.target_sparsity(step - 1);
    return sched_.is_update_step(step);
  }
  // The trainer must compute the dense weight gradient of the sparse layers this step.
  bool needs_dense_gradient(std::int64_t step) const { return rule_.needs_dense_gradient() && is_update_step(step); }

  // Prune/grow every sparse layer to the step's targets. Call after the optimizer step
  // with the post-allreduce dense gradient (identical on all DP ranks).
  std::vector<update_counts> update(std::int64_t step, std::span<const layer_tensors> t) {
    HCOMM_EXPECTS(t.size() == layers_.size(), "msparse: update needs one tensor set per layer");
    const auto k = target_active(step);
    const double f = sched_.drop_fraction(step);
    for (std::size_t i = 0; i < layers_.size(); ++i)
      if (layers_[i].sparse) {
        HCOMM_EXPECTS(t[i].weight != nullptr, "msparse: update needs every sparse layer's weights");
        HCOMM_EXPECTS(!rule_.needs_dense_gradient() || t[i].grad != nullptr,
                      "msparse: this growth rule needs every sparse layer's dense gradient on update steps");
      }
    std::vector<update_counts> out(layers_.size());
    std::vector<std::exception_ptr> err(layers_.size());
    // Layers are independent (each has its own RNG key), so they run in parallel with the
    // same result as in sequence.
    ex_.for_each(layers_.size(), [&](std::size_t i) {
      if (!layers_[i].sparse) return;
      try {
        const std::uint64_t key = tp_.parts == 1 ? i : i * 4096 + tp_.index + 1;
        out[i] = update_layer(masks_[i], k[i], f, rule_, t[i], counter_rng(seed_, std::uint64_t(step), key));
      } catch (...) {
        err[i] = std::current_exception();
      }
    });
    for (const auto& e : err)
      if (e) std::rethrow_exception(e);
    step_ = step;
    return out;
  }

  // Zeroes weight and moments where the mask is off (after loading weights, or to undo an
  // optimizer that touched inactive positions).
  void zero_inactive(std::size_t i, const layer_tensors& t) const {
    const mask& m = masks_[i];
    for (std::size_t j = 0; j < m.size(); ++j)
      if (!m[j]) detail::zero_at(t, j);
  }

  std::size_t size() const noexcept { return layers_.size(); }
  const layer_shape& layer(std::size_t i) const { return layers_[i]; }
  const mask& mask_of(std::size_t i) const { return masks_[i]; }
  const std::vector<mask>& masks() const noexcept { return masks_; }
  const schedule& sched() const noexcept { return sched_; }
  const growth_rule& rule() const noexcept { return rule_; }
  std::uint64_t seed() const noexcept { return seed_; }
  std::int64_t last_step() const noexcept { return step_; }

  // Realised density over the sparse layers (this rank's shards).
  double density() const {
    double on = 0, n = 0;
    for (std::size_t i = 0; i < masks_.size(); ++i)
      if (layers_[i].sparse) {
        on += double(masks_[i].active());
        n += double(masks_[i].size());
      }
    return n > 0 ? on / n : 1.0;
  }

  // One 64-bit hash over all masks, for comparing DP replicas.
  std::uint64_t checksum() const {
    std::uint64_t h = 0x5EED5EED5EED5EEDull;
    for (const auto& m : masks_) h = splitmix64(h ^ m.checksum());
    return h;
  }

  // Checkpoint: layer shapes (checked on load), schedule, growth rule, distribution, seed,
  // last step and masks. The RNG is counter-based, so (seed, step) is its whole state.
  void save(byte_writer& out) const {
    out.put<std::uint32_t>(kMagic);
    out.put<std::uint32_t>(kVersion);
    out.put<std::uint64_t>(layers_.size());
    for (const auto& l : layers_) {
      out.put_string(l.name);
      out.put<std::uint64_t>(l.rows);
      out.put<std::uint64_t>(l.cols);
      out.put<std::uint8_t>(l.sparse);
    }
    sched_.save(out);
    // Field by field: struct padding would make checkpoint bytes differ run to run.
    out.put<std::uint8_t>(static_cast<std::uint8_t>(rule_.id));
    out.put<std::uint8_t>(rule_.is_sparse);
    out.put<std::uint8_t>(rule_.evolves);
    out.put<std::uint8_t>(rule_.varies_sparsity);
    out.put<std::uint32_t>(rule_.gradient_share_num);
    out.put<std::uint32_t>(rule_.gradient_share_den);
    out.put<std::uint8_t>(static_cast<std::uint8_t>(dist_));
    out.put(seed_);
    out.put(step_);
    out.put<std::uint64_t>(tp_.parts);
    out.put<std::uint64_t>(tp_.index);
    out.put_array(tp_.axes);
    for (const auto& m : masks_) m.save(out);
    out.put<std::uint64_t>(checksum());
  }
  static sparse_topology load(byte_reader& in) {
    hcomm::require(in.get<std::uint32_t>() == kMagic, hcomm::errc::foreign_frame, "msparse: not a sparse topology record");
    hcomm::require(in.get<std::uint32_t>() == kVersion, hcomm::errc::foreign_frame, "msparse: unknown topology record version");
    std::vector<layer_shape> layers(in.get<std::uint64_t>());
    for (auto& l : layers) {
      l.name = in.get_string();
      l.rows = in.get<std::uint64_t>();
      l.cols = in.get<std::uint64_t>();
      l.sparse = in.get<std::uint8_t>() != 0;
    }
    schedule s = schedule::load(in);
    growth_rule rule;
    rule.id = static_cast<growth_id>(in.get<std::uint8_t>());
    rule.is_sparse = in.get<std::uint8_t>() != 0;
    rule.evolves = in.get<std::uint8_t>() != 0;
    rule.varies_sparsity = in.get<std::uint8_t>() != 0;
    rule.gradient_share_num = in.get<std::uint32_t>();
    rule.gradient_share_den = in.get<std::uint32_t>();
    hcomm::require(rule.gradient_share_den > 0, hcomm::errc::corrupt_frame, "msparse: bad growth rule in checkpoint");
    const auto dist = static_cast<distribution_kind>(in.get<std::uint8_t>());
    const auto seed = in.get<std::uint64_t>();
    const auto step = in.get<std::int64_t>();
    tp_sharding tp;
    tp.parts = in.get<std::uint64_t>();
    tp.index = in.get<std::uint64_t>();
    tp.axes = in.get_array<shard_axis>();
    sparse_topology topo(std::move(layers), std::move(s), rule, dist, seed, std::move(tp));
    for (std::size_t i = 0; i < topo.masks_.size(); ++i) {
      mask m = mask::load(in);
      const auto [r, c] = topo.local_shape(i);
      hcomm::require(m.rows() == r && m.cols() == c, hcomm::errc::mismatch, "msparse: checkpoint mask shape differs from its layer");
      topo.masks_[i] = std::move(m);
    }
    topo.step_ = step;
    hcomm::require(in.get<std::uint64_t>() == topo.checksum(), hcomm::errc::corrupt_frame, "msparse: topology checksum mismatch");
    return topo;
  }
  std::vector<std::uint8_t> to_bytes() const {
    byte_writer w;
    save(w);
    return w.take();
  }
  static sparse_topology from_bytes(const std::vector<std::uint8_t>& b) {
    byte_reader r(b);
    return load(r);
  }

 private:
  static constexpr std::uint32_t kMagic = 0x504F544Du;  // "MTOP"
  static constexpr std::uint32_t kVersion = 1;
  static constexpr std::uint64_t kInitStream = 0x1417;
  std::pair<std::size_t, std::size_t> local_shape(std::size_t i) const {
    const auto& l = layers_[i];
    if (tp_.parts == 1) return {l.rows, l.cols};
    if (tp_.axes[i] == shard_axis::rows) {
      const auto b = shard_bounds(l.rows, tp_.parts, tp_.index);
      return {b.end - b.begin, l.cols};
    }
    const auto b = shard_bounds(l.cols, tp_.parts, tp_.index);
    return {l.rows, b.end - b.begin};
  }

  std::vector<layer_shape> layers_;
  schedule sched_;
  growth_rule rule_{};
  distribution_kind dist_ = distribution_kind::erk;
  std::uint64_t seed_ = 0;
  tp_sharding tp_{};
  std::vector<mask> masks_;
  std::int64_t step_ = 0;
  hcomm::exec::host ex_{};
};

// What a trainer's --sparsity dense|static|set|rigl|mst and its schedule options become.
struct sparsity_options {
  std::string method = "dense";   // dense | static | set | rigl | mst
  std::int64_t total_steps = 0;
  double sparsity = 0.9;          // static / set / rigl: the constant overall sparsity
  mst_options mst{};              // mst: the phase schedule (total_steps, dT, zeta copied in)
  unsigned mixed_ratio = 3;       // mst: r in r/(r+1) grown by gradient
  std::int64_t update_interval = 100;
  double zeta = 0.3;
  std::int64_t update_end = -1;   // set / rigl: stop updates here (-1: never stop early)
  distribution_kind distribution = distribution_kind::erk;
  std::uint64_t seed = 0;         // the same on every rank
};

// The schedule and growth rule for a method, and the topology over `layers` (not yet
// initialised: call init with the weights).
inline sparse_topology make_topology(const sparsity_options& o, std::vector<layer_shape> layers, tp_sharding tp = {}) {
  growth_rule rule = growth_rule_from_name(o.method);
  schedule s;
  if (rule.id == growth_id::dense) {
    s = schedule::dense(o.total_steps);
  } else if (rule.id == growth_id::mixed) {
    rule = mixed_rule(o.mixed_ratio);
    mst_options m = o.mst;
    m.total_steps = o.total_steps;
    m.update_interval = o.update_interval;
    m.zeta = o.zeta;
    s = schedule::mst(m);
  } else {
    s = schedule::constant(o.sparsity, o.total_steps, rule.evolves ? o.update_interval : 0, o.zeta, o.update_end);
  }
  return sparse_topology(std::move(layers), std::move(s), rule, o.distribution, o.seed, std::move(tp));
}

}  // namespace msparse
