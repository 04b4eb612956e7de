// examples/gpt/portable/adamw.hpp: one tensor's AdamW update as a flat kernel of the
// execution model (one index per element), written once for every executor: the arithmetic
// of gpt::adamw::step (optim.hpp, torch.optim.AdamW's order), element by element.
//
//   const auto k = gpt::portable::adamw_update::coefficients(lr, t, beta1, beta2, eps, wd, decays);
//   ex.for_each(numel, gpt::portable::adamw_update{p + off, m + off, v + off, g + off, k});
//   // bf16 runs: p is the fp32 master copy, `rounded` (the model's weights) gets its rounding
//   ex.for_each(numel, gpt::portable::adamw_update{p + off, m + off, v + off, g + off, k, w + off});
#pragma once
#include <cmath>
#include <cstddef>

#include "hcomm/core/bfloat16.hpp"
#include "hcomm/core/macros.hpp"

namespace gpt::portable {

struct adamw_update {
  struct coeffs {
    float decay;      // 1 - lr * weight_decay (matrices), else 1
    float b1, b2, eps;
    float step_size;  // lr / (1 - b1^t)
    float bc2_sqrt;   // sqrt(1 - b2^t)
  };
  float* p;
  float* m;
  float* v;
  const float* g;
  coeffs k;
  float* rounded = nullptr;  // bf16 runs: receives p's bfloat16 rounding

  // The coefficients of step t (1-based) at learning rate lr, as optim.hpp computes them.
  static coeffs coefficients(float lr, int t, float beta1, float beta2, float eps, float weight_decay, bool decays) {
    const float bc1 = 1.f - std::pow(beta1, static_cast<float>(t));
    const float bc2 = 1.f - std::pow(beta2, static_cast<float>(t));
    return {decays ? 1.f - lr * weight_decay : 1.f, beta1, beta2, eps, lr / bc1, std::sqrt(bc2)};
  }

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    p[i] *= k.decay;
    m[i] = k.b1 * m[i] + (1.f - k.b1) * g[i];
    v[i] = k.b2 * v[i] + (1.f - k.b2) * g[i] * g[i];
    const float denom = std::sqrt(v[i]) / k.bc2_sqrt + k.eps;
    p[i] -= k.step_size * m[i] / denom;
    if (rounded != nullptr) rounded[i] = hcomm::round_to_bf16(p[i]);
  }
};

}  // namespace gpt::portable
