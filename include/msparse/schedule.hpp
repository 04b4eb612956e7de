// msparse/schedule.hpp: Sparsity Variation: which phase a step is in, the target overall
// sparsity of the sparse weights, when the topology is updated, the cosine-annealed drop
// fraction, and the Hybrid Sparse Attention window.
//
//   msparse::mst_options o;  o.total_steps = 20000;              // defaults: dT = 100, zeta = 0.3
//   auto s = msparse::schedule::mst(o);                           // warm-up, ultra, restore
//   if (s.is_update_step(step)) topo.update(step, ...);           // prune/grow at s.drop_fraction(step)
//   bool sparse_attn = s.sparse_attention(step);                  // HSA early, dense causal later
//   auto bytes = s.to_bytes();  auto back = msparse::schedule::from_bytes(bytes);
//
// The target sparsity is piecewise constant (stages), not a smooth ramp: each change is a
// discrete prune/grow event of known size, which is what "prune and grow counts differ by
// the change" needs, and every stage boundary is itself an update step so that a layer's
// density equals its target right after every update. A schedule is a pure function of its
// config and the step, so its checkpoint state is the config alone.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "hcomm/core/error.hpp"
#include "msparse/mask.hpp"  // byte_writer / byte_reader
#include "msparse/policy/phase.hpp"

namespace msparse {

struct schedule_stage {
  std::int64_t begin = 0;  // first step of the stage
  double sparsity = 0.0;   // overall target sparsity of the sparse layers from `begin` on
  friend bool operator==(const schedule_stage&, const schedule_stage&) = default;
};

struct schedule_config {
  std::int64_t total_steps = 0;
  // Phases: [0, warmup_end) warm-up, [warmup_end, ultra_end) ultra-sparse, then restoration.
  std::int64_t warmup_end = 0;
  std::int64_t ultra_end = 0;
  std::vector<schedule_stage> stages{{0, 0.0}};  // sorted by begin; stages[0].begin == 0
  std::int64_t update_interval = 100;           // dT; 0 = never update the topology
  double zeta = 0.3;                            // initial drop fraction
  std::int64_t update_end = -1;                 // no updates from here on (T_end); -1: total_steps
  std::int64_t hsa_end = 0;                     // [0, hsa_end): sparse attention
  friend bool operator==(const schedule_config&, const schedule_config&) = default;
};

// The MST recipe as a handful of numbers; schedule::mst turns it into stages.
struct mst_options {
  std::int64_t total_steps = 0;
  double warmup_fraction = 0.25;   // share of total steps in warm-up
  double ultra_fraction = 0.5;     // share in the ultra-sparse plateau; restoration gets the rest
  double initial_sparsity = 0.0;   // first warm-up stage (0: dense)
  double warmup_sparsity = 0.8;    // last warm-up stage
  double ultra_sparsity = 0.9;     // the plateau
  double final_sparsity = 0.75;    // last restoration stage (0: dense)
  int warmup_stages = 4;           // >= 1: initial .. warmup_sparsity evenly
  int restore_stages = 3;          // >= 1: ultra -> final evenly, the last one at final
  std::int64_t update_interval = 100;
  double zeta = 0.3;
  double hsa_fraction = -1;        // sparse attention window; < 0: the warm-up phase
};

class schedule {
 public:
  schedule() = default;
  explicit schedule(schedule_config c) : c_(std::move(c)) {
    if (c_.update_end < 0) c_.update_end = c_.total_steps;
    validate();
  }

  // MST: warm-up from initial to warmup sparsity in stages, the ultra plateau, then
  // stepwise restoration. Stage starts are rounded to multiples of dT so that sparsity
  // changes coincide with regular topology updates.
  static schedule mst(const mst_options& o) {
    HCOMM_EXPECTS(o.total_steps > 0, "msparse: mst schedule needs total_steps > 0");
    HCOMM_EXPECTS(o.warmup_stages >= 1 && o.restore_stages >= 1, "msparse: mst schedule needs >= 1 warm-up and restore stage");
    HCOMM_EXPECTS(o.warmup_fraction >= 0 && o.ultra_fraction >= 0 && o.warmup_fraction + o.ultra_fraction <= 1,
                  "msparse: mst schedule phase fractions must be >= 0 and sum to <= 1");
    const std::int64_t T = o.total_steps;
    const std::int64_t dT = std::max<std::int64_t>(o.update_interval, 1);
    auto align = [&](double x) { return std::min<std::int64_t>(T, std::llround(x / double(dT)) * dT); };
    schedule_config c;
    c.total_steps = T;
    c.update_interval = o.update_interval;
    c.zeta = o.zeta;
    c.warmup_end = align(o.warmup_fraction * double(T));
    c.ultra_end = std::max(c.warmup_end, align((o.warmup_fraction + o.ultra_fraction) * double(T)));
    c.hsa_end = o.hsa_fraction < 0 ? c.warmup_end : align(o.hsa_fraction * double(T));
    c.stages.clear();
    const int W = o.warmup_stages;
    for (int k = 0; k < W; ++k) {
      const double s = W == 1 ? o.warmup_sparsity
                              : o.initial_sparsity + (o.warmup_sparsity - o.initial_sparsity) * double(k) / double(W - 1);
      push(c.stages, align(double(c.warmup_end) * double(k) / double(W)), s);
    }
    push(c.stages, c.warmup_end, o.ultra_sparsity);
    const int R = o.restore_stages;
    const double rest = double(T - c.ultra_end);
    for (int k = 1; k <= R; ++k)
      push(c.stages, align(double(c.ultra_end) + rest * double(k - 1) / double(R)),
           o.ultra_sparsity + (o.final_sparsity - o.ultra_sparsity) * double(k) / double(R));
    c.stages[0].begin = 0;
    return schedule(std::move(c));
  }

  // One sparsity throughout (static sparse, SET, RigL); phase reported as ultra.
  static schedule constant(double sparsity, std::int64_t total_steps, std::int64_t update_interval = 100,
                           double zeta = 0.3, std::int64_t update_end = -1) {
    schedule_config c;
    c.total_steps = total_steps;
    c.warmup_end = 0;
    c.ultra_end = total_steps;
    c.stages = {{0, sparsity}};
    c.update_interval = update_interval;
    c.zeta = zeta;
    c.update_end = update_end;
    return schedule(std::move(c));
  }
  static schedule dense(std::int64_t total_steps) { return constant(0.0, total_steps, 0, 0.0); }

  const schedule_config& config() const noexcept { return c_; }

  phase_id phase(std::int64_t step) const noexcept {
    return step < c_.warmup_end ? phase_id::warmup : step < c_.ultra_end ? phase_id::ultra : phase_id::restore;
  }

  double target_sparsity(std::int64_t step) const noexcept { return c_.stages[stage_index(step)].sparsity; }
  std::size_t stage_index(std::int64_t step) const noexcept {
    std::size_t k = 0;
    while (k + 1 < c_.stages.size() && c_.stages[k + 1].begin <= step) ++k;
    return k;
  }

  // Step 0 builds the initial masks (not an update). Afterwards every dT-th step before
  // update_end, and any step where the target changes (so densities track targets).
  bool is_update_step(std::int64_t step) const noexcept {
    if (step <= 0) return false;
    if (target_sparsity(step) != target_sparsity(step - 1)) return true;
    return c_.update_interval > 0 && step < c_.update_end && step % c_.update_interval == 0;
  }

  // zeta/2 * (1 + cos(pi t / T_end)), zero from T_end on.
  double drop_fraction(std::int64_t step) const noexcept {
    if (c_.update_end <= 0 || step >= c_.update_end) return 0.0;
    const double t = double(std::max<std::int64_t>(step, 0)) / double(c_.update_end);
    return c_.zeta / 2.0 * (1.0 + std::cos(std::numbers::pi * t));
  }

  bool sparse_attention(std::int64_t step) const noexcept { return step < c_.hsa_end; }

  void save(byte_writer& out) const {
    out.put<std::uint32_t>(kMagic);
    out.put(c_.total_steps);
    out.put(c_.warmup_end);
    out.put(c_.ultra_end);
    out.put_array(c_.stages);
    out.put(c_.update_interval);
    out.put(c_.zeta);
    out.put(c_.update_end);
    out.put(c_.hsa_end);
  }
  static schedule load(byte_reader& in) {
    hcomm::require(in.get<std::uint32_t>() == kMagic, hcomm::errc::foreign_frame, "msparse: not a schedule record");
    schedule_config c;
    c.total_steps = in.get<std::int64_t>();
    c.warmup_end = in.get<std::int64_t>();
    c.ultra_end = in.get<std::int64_t>();
    c.stages = in.get_array<schedule_stage>();
    c.update_interval = in.get<std::int64_t>();
    c.zeta = in.get<double>();
    c.update_end = in.get<std::int64_t>();
    c.hsa_end = in.get<std::int64_t>();
    return schedule(std::move(c));
  }
  std::vector<std::uint8_t> to_bytes() const {
    byte_writer w;
    save(w);
    return w.take();
  }
  static schedule from_bytes(const std::vector<std::uint8_t>& b) {
    byte_reader r(b);
    return load(r);
  }

  friend bool operator==(const schedule& a, const schedule& b) { return a.c_ == b.c_; }

 private:
  static constexpr std::uint32_t kMagic = 0x4853534Du;  // "MSSH"
  static void push(std::vector<schedule_stage>& v, std::int64_t begin, double s) {
    // Rounding can land two stages on one step; the later one wins.
    if (!v.empty() && v.back().begin >= begin) {
      v.back().sparsity = s;
      return;
    }
    if (!v.empty() && v.back().sparsity == s) return;
    v.push_back({begin, s});
  }
  void validate() const {
    HCOMM_EXPECTS(c_.total_steps >= 0, "msparse: schedule total_steps must be >= 0");
    HCOMM_EXPECTS(0 <= c_.warmup_end && c_.warmup_end <= c_.ultra_end, "msparse: schedule needs 0 <= warmup_end <= ultra_end");
    HCOMM_EXPECTS(!c_.stages.empty() && c_.stages[0].begin == 0, "msparse: schedule stages must start at step 0");
    for (std::size_t k = 0; k < c_.stages.size(); ++k) {
      HCOMM_EXPECTS(c_.stages[k].sparsity >= 0.0 && c_.stages[k].sparsity < 1.0,
                    "msparse: schedule sparsity must be in [0, 1)");
      if (k) HCOMM_EXPECTS(c_.stages[k].begin > c_.stages[k - 1].begin, "msparse: schedule stages must be strictly increasing");
    }
    HCOMM_EXPECTS(c_.update_interval >= 0, "msparse: schedule update interval must be >= 0");
    HCOMM_EXPECTS(c_.zeta >= 0.0 && c_.zeta <= 1.0, "msparse: schedule zeta must be in [0, 1]");
  }
  schedule_config c_{};
};

}  // namespace msparse
