// examples/gpt/optim.hpp: learning-rate schedule (linear warm-up, cosine decay) and AdamW
// with weight decay on matrices only, written like torch.optim.AdamW so the PyTorch
// reference matches step for step.
//
//   float lr = gpt::lr_at(cfg, step);
//   gpt::adamw opt(model.params.size());                    // the CPU backend's
//   gpt::basic_adamw<Ops> dev(model.params.size(), model.ops());  // any backend's
//   opt.step(model, lr, step + 1);
#pragma once
#include <cmath>
#include <numbers>
#include <vector>

#include "config.hpp"
#include "model.hpp"
#include "portable/adamw.hpp"

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

// AdamW over the model's backend (Ops: the model's ops_type; the moments live in its memory
// and each tensor's step is its adamw_update, portable/adamw.hpp's arithmetic).
// --precision bf16 keeps fp32 master weights here (`master`, empty in fp32 runs): the step
// updates them and the model's weights become their bfloat16 rounding.
template <class Ops = cpu_ops>
struct basic_adamw {
  template <class T>
  using array = typename Ops::template array<T>;
  array<float> m, v;
  array<float> master;
  basic_adamw() = default;
  explicit basic_adamw(std::size_t n, const Ops& ops = {})
      : m(ops.template make_array<float>(n)), v(ops.template make_array<float>(n)) {}

  // bf16: the model's (fp32) weights become the master copy and the model keeps their rounding.
  // Called after initialisation and after a resume loads the master weights into the model.
  template <class Model>
  void adopt_master(Model& model) {
    if (!model.cfg().bf16) return;
    const Ops& be = model.ops();
    master = be.template make_array<float>(model.params.size());
    be.copy(master.data(), model.params.data(), model.params.size());
    be.round_bf16(model.params.data(), static_cast<std::int64_t>(model.params.size()));
  }
  // The weights a checkpoint saves: the master copy in bf16 runs.
  template <class Model>
  const array<float>& weights(const Model& model) const {
    return master.empty() ? model.params : master;
  }

  // t is the 1-based step count (bias correction). Gradients are taken as they are: clip
  // before calling.
  template <class Model>
  void step(Model& model, float lr, int t) {
    const config& c = model.cfg();
    float* p = master.empty() ? model.params.data() : master.data();
    float* rounded = master.empty() ? nullptr : model.params.data();  // bf16: the model's copy
    const float* g = model.grads.data();
    for (const auto& tensor : model.tensors()) {
      const auto k = portable::adamw_update::coefficients(lr, t, c.beta1, c.beta2, c.eps, c.weight_decay,
                                                          model.specs()[tensor.global].decay);
      const std::int64_t o = tensor.offset;
      model.ops().adamw_update(p + o, m.data() + o, v.data() + o, g + o, tensor.numel, k,
                               rounded ? rounded + o : nullptr);
    }
  }
};
using adamw = basic_adamw<cpu_ops>;

}  // namespace gpt
