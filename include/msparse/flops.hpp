// msparse/flops.hpp: FLOP accounting for a GPT-like model: per step, dense-equivalent and
// actual FLOPs of forward, backward and topology updates, attention included, and running
// totals (the trainer's `flops` = {"dense": F, "actual": F} metrics).
//
//   msparse::flop_counter fc({.layers = 12, .C = 768, .heads = 12, .T = 1024, .vocab = 50257}, /*batch*/8);
//   auto s = fc.step(densities, attention_density, /*gradient_growth_update*/ false);  // adds to totals
//   auto s2 = fc.step(topo, step, hsa.work_fraction(sched, step));  // from a sparse_topology
//   std::string j = msparse::flops_json(fc.total());                 // {"dense": ..., "actual": ...}
//
// What is counted (2 FLOPs per multiply-add; tokens = batch * T):
//   linear layer of n = rows*cols weights at density d (the gpt_linear_layers list: qkv,
//   attn.out, mlp.fc, mlp.proj per block, then lm_head):
//     dense:   forward 2 tokens n;   backward 4 tokens n (input grad + weight grad)
//     actual:  forward 2 tokens n d; backward 2 tokens n d (input grad, transposed SpMM)
//              + 2 tokens n d (weight grad at active positions, SDDMM)
//   topology update (actual only, on update steps of gradient-growth rules: RigL, MST):
//     the rest of the dense weight gradient, 2 tokens n (1 - d), so that backward + topology
//     is one dense weight gradient on those steps. SET/static/dense updates cost 0 FLOPs
//     here (selection is comparisons, O(n), not counted).
//   attention per block, over the E = T(T+1)/2 causal entries of each sequence (T^2 for an
//   encoder, gpt_shape::causal = false; C = heads x head size): dense forward 4 C E batch,
//   backward 8 C E batch; actual x attention density (the fraction of those entries
//   evaluated; attention::hybrid::work_fraction).
//   BERT's MLM transform (gpt_shape::mlm_transform: C x C on every token, dense for every
//   method): forward 2 tokens C^2, backward 4 tokens C^2, in dense and actual alike. The
//   decoder after it is lm_head above (tied to the token embedding, on every position).
// Not counted: embeddings, layer norms, GELU, softmax, residuals, the optimizer: O(tokens C)
// or O(parameters) element-wise work, small next to the matmuls and the same for all methods.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hcomm/core/error.hpp"
#include "msparse/distribution.hpp"
#include "msparse/mask.hpp"
#include "msparse/topology.hpp"

namespace msparse {

struct flops_parts {
  double forward = 0, backward = 0, topology = 0;
  double total() const noexcept { return forward + backward + topology; }
  flops_parts& operator+=(const flops_parts& o) noexcept {
    forward += o.forward;
    backward += o.backward;
    topology += o.topology;
    return *this;
  }
};

struct step_flops {
  flops_parts dense, actual;
  step_flops& operator+=(const step_flops& o) noexcept {
    dense += o.dense;
    actual += o.actual;
    return *this;
  }
  // dense / actual: the FLOP reduction.
  double reduction() const noexcept { return actual.total() > 0 ? dense.total() / actual.total() : 0.0; }
};

class flop_counter {
 public:
  flop_counter() = default;
  flop_counter(const gpt_shape& g, std::size_t batch_sequences)
      : g_(g), batch_(batch_sequences), layers_(gpt_linear_layers(g)) {
    HCOMM_EXPECTS(g.heads > 0 && g.C % g.heads == 0, "msparse: flop_counter needs C divisible by heads");
    HCOMM_EXPECTS(batch_sequences > 0 && g.T > 0, "msparse: flop_counter needs batch > 0 and T > 0");
  }

  const std::vector<layer_shape>& layers() const noexcept { return layers_; }

  // One step's FLOPs without adding them to the totals. densities: one per layer of
  // layers() (dense layers 1); attention_density in [0, 1]; gradient_growth_update: this
  // step computes the dense weight gradient for a topology update.
  step_flops count(const std::vector<double>& densities, double attention_density, bool gradient_growth_update) const {
    HCOMM_EXPECTS(densities.size() == layers_.size(), "msparse: flop_counter needs one density per linear layer");
    HCOMM_EXPECTS(attention_density >= 0.0 && attention_density <= 1.0, "msparse: attention density must be in [0, 1]");
    const double tokens = double(batch_) * double(g_.T);
    step_flops s;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const double n = double(layers_[i].size());
      const double d = densities[i];
      HCOMM_EXPECTS(d >= 0.0 && d <= 1.0, "msparse: layer density must be in [0, 1]");
      s.dense.forward += 2 * tokens * n;
      s.dense.backward += 4 * tokens * n;
      s.actual.forward += 2 * tokens * n * d;
      s.actual.backward += 4 * tokens * n * d;
      if (gradient_growth_update && layers_[i].sparse) s.actual.topology += 2 * tokens * n * (1 - d);
    }
    const double E = g_.causal ? double(g_.T) * double(g_.T + 1) / 2 : double(g_.T) * double(g_.T);
    const double attn_fwd = 4 * double(g_.C) * E * double(batch_) * double(g_.layers);
    s.dense.forward += attn_fwd;
    s.dense.backward += 2 * attn_fwd;
    s.actual.forward += attn_fwd * attention_density;
    s.actual.backward += 2 * attn_fwd * attention_density;
    if (g_.mlm_transform) {
      const double head_fwd = 2 * tokens * double(g_.C) * double(g_.C);
      s.dense.forward += head_fwd;
      s.dense.backward += 2 * head_fwd;
      s.actual.forward += head_fwd;
      s.actual.backward += 2 * head_fwd;
    }
    return s;
  }

  // Counts a step and adds it to the totals.
  step_flops step(const std::vector<double>& densities, double attention_density, bool gradient_growth_update) {
    const auto s = count(densities, attention_density, gradient_growth_update);
    total_ += s;
    ++steps_;
    return s;
  }

  // From a topology (its layers must be gpt_linear_layers of the same shape): realised
  // mask densities, and the dense-gradient flag of this step. Call before topo.update(step)
  // (the step's forward and backward ran with the masks as they were).
  step_flops step(const sparse_topology& topo, std::int64_t step_index, double attention_density) {
    HCOMM_EXPECTS(topo.size() == layers_.size(), "msparse: flop_counter and topology disagree on the layers");
    std::vector<double> d(layers_.size());
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = topo.layer(i).sparse ? topo.mask_of(i).density() : 1.0;
    return step(d, attention_density, topo.needs_dense_gradient(step_index));
  }

  const step_flops& total() const noexcept { return total_; }
  std::uint64_t steps() const noexcept { return steps_; }

  // Continue from another counter's totals (a run resumed at another shape, e.g. a longer T).
  void continue_from(const flop_counter& other) noexcept {
    total_ = other.total_;
    steps_ = other.steps_;
  }

  // Totals in checkpoints, so that a resumed run's cumulative counts continue.
  void save(byte_writer& out) const {
    out.put<std::uint64_t>(steps_);
    for (double x : {total_.dense.forward, total_.dense.backward, total_.dense.topology, total_.actual.forward,
                     total_.actual.backward, total_.actual.topology})
      out.put(x);
  }
  void load(byte_reader& in) {
    steps_ = in.get<std::uint64_t>();
    for (double* x : {&total_.dense.forward, &total_.dense.backward, &total_.dense.topology, &total_.actual.forward,
                      &total_.actual.backward, &total_.actual.topology})
      *x = in.get<double>();
  }

 private:
  gpt_shape g_{};
  std::size_t batch_ = 1;
  std::vector<layer_shape> layers_;
  step_flops total_{};
  std::uint64_t steps_ = 0;
};

// {"dense": F, "actual": F} (totals of forward + backward + topology), for metrics lines.
inline std::string flops_json(const step_flops& s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "{\"dense\": %.17g, \"actual\": %.17g}", s.dense.total(), s.actual.total());
  return buf;
}

}  // namespace msparse
