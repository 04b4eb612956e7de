// examples/gpt/optim.hpp: learning-rate schedule (linear warm-up, cosine decay) and AdamW
// with weight decay on matrices only, written like torch.optim.AdamW so the PyTorch
// reference matches step for step.
//
//   float lr = gpt::lr_at(cfg, step);
//   gpt::adamw opt(model.params.size());
//   opt.step(model, lr, step + 1);
#pragma once
#include <cmath>
#include <numbers>
#include <vector>

#include "config.hpp"
#include "hcomm/exec/threads.hpp"
#include "model.hpp"

namespace gpt {

// step is 0-based. Warm-up: lr * (step+1)/warmup; then cosine from lr to lr * min_lr_frac
// over the remaining steps.
inline float lr_at(const config& c, int step) {
  if (step < c.warmup) return c.lr * static_cast<float>(step + 1) / static_cast<float>(c.warmup);
  const int span = c.steps - c.warmup;
  const double ratio = span > 0 ? static_cast<double>(step - c.warmup) / span : 0.0;
  const double r = ratio > 1.0 ? 1.0 : ratio;
  const double min_lr = static_cast<double>(c.lr) * c.min_lr_frac;
  return static_cast<float>(min_lr + 0.5 * (c.lr - min_lr) * (1.0 + std::cos(std::numbers::pi * r)));
}

// Model: a stage_model of any backend (host memory: params, grads).
// --precision bf16 keeps fp32 master weights here (`master`, empty in fp32 runs): the step
// updates them and the model's weights become their bfloat16 rounding.
struct adamw {
  std::vector<float> m, v;
  std::vector<float> master;
  explicit adamw(std::size_t n = 0) : m(n, 0.f), v(n, 0.f) {}

  // bf16: the model's (fp32) weights become the master copy and the model keeps their rounding.
  // Called after initialisation and after a resume loads the master weights into the model.
  template <class Model>
  void adopt_master(Model& model) {
    if (!model.cfg().bf16) return;
    master = model.params;
    k::round_bf16(model.params.data(), static_cast<k::idx>(model.params.size()));
  }
  // The weights a checkpoint saves: the master copy in bf16 runs.
  template <class Model>
  const std::vector<float>& weights(const Model& model) const {
    return master.empty() ? model.params : master;
  }

  // t is the 1-based step count (bias correction). Gradients are taken as they are: clip
  // before calling.
  template <class Model>
  void step(Model& model, float lr, int t) {
    const config& c = model.cfg();
    const float b1 = c.beta1, b2 = c.beta2;
    const float bc1 = 1.f - std::pow(b1, static_cast<float>(t));
    const float bc2 = 1.f - std::pow(b2, static_cast<float>(t));
    const float step_size = lr / bc1;
    const float bc2_sqrt = std::sqrt(bc2);
    float* p = master.empty() ? model.params.data() : master.data();
    float* rounded = master.empty() ? nullptr : model.params.data();  // bf16: the model's copy
    const float* g = model.grads.data();
    for (const auto& tensor : model.tensors()) {
      const float decay = model.specs()[tensor.global].decay ? 1.f - lr * c.weight_decay : 1.f;
      const std::int64_t o = tensor.offset, n = tensor.numel;
#pragma omp parallel for if (n > k::par_min) num_threads(hcomm::exec::default_threads())
      for (std::int64_t i = o; i < o + n; ++i) {
        p[i] *= decay;
        m[i] = b1 * m[i] + (1.f - b1) * g[i];
        v[i] = b2 * v[i] + (1.f - b2) * g[i] * g[i];
        const float denom = std::sqrt(v[i]) / bc2_sqrt + c.eps;
        p[i] -= step_size * m[i] / denom;
        if (rounded != nullptr) rounded[i] = hcomm::bf16_bits_to_float(hcomm::to_bf16_bits(p[i]));
      }
    }
  }
};

}  // namespace gpt
