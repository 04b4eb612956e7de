// examples/gpt/portable/gelu.hpp: the tanh-form GELU, forward and backward, as flat kernels of
// the execution model (one index per element), written once for every executor. The same
// arithmetic as k::gelu_forward/backward (kernels.hpp), element by element.
//
//   ex.for_each(n, gpt::portable::gelu_forward{out, x});
//   ex.for_each(n, gpt::portable::gelu_backward{dx, x, dout});   // dx may alias dout
#pragma once
#include <cstddef>
#include <cstdint>

#include "exp.hpp"
#include "hcomm/core/macros.hpp"

namespace gpt::portable {

// 0.5 (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), as the logistic 1 / (1 + e^z) of
// z = -2 sqrt(2/pi) (v + 0.044715 v^3): with w = e^(-|z|), 1 / (1 + w) for z <= 0 and
// w / (1 + w) for z > 0, so e^ never overflows; |z| beyond 80 counts as 80 (the logistic is
// then 0 or 1 to within 2e-35).
HCOMM_HOST_DEVICE float gelu_sigmoid(float v) {
  const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  const std::uint32_t z = float_bits(-2.f * u);
  const float w = exp_nonpositive(bits_float(clamp_nonpositive_bits(bits_float(z))));  // e^-min(|z|, 80)
  const std::uint32_t neg = 0u - (z >> 31);  // all ones where z <= 0
  return bits_float((neg & 0x3F800000u) | (~neg & float_bits(w))) / (1.f + w);
}

struct gelu_forward {
  float* out;
  const float* x;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { out[i] = x[i] * gelu_sigmoid(x[i]); }
};

struct gelu_backward {
  float* dx;
  const float* x;
  const float* dout;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const float v = x[i];
    const float sg = gelu_sigmoid(v);
    const float th = 2.f * sg - 1.f;
    const float local = sg + 0.5f * v * (1.f - th * th) * 0.7978845608028654f * (1.f + 3.f * 0.044715f * v * v);
    dx[i] = local * dout[i];
  }
};

}  // namespace gpt::portable
