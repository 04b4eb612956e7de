// examples/gpt/portable/gelu.hpp: the tanh-form GELU, forward and backward, as flat kernels of
// the execution model (one index per element), written once for every executor. The same
// arithmetic as k::gelu_forward/backward (kernels.hpp), element by element.
//
//   ex.for_each(n, gpt::portable::gelu_forward{out, x});
//   ex.for_each(n, gpt::portable::gelu_backward{dx, x, dout});   // dx may alias dout
#pragma once
#include <cmath>
#include <cstddef>

#include "hcomm/core/macros.hpp"

namespace gpt::portable {

// 0.5 (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))) written as a logistic function.
HCOMM_HOST_DEVICE float gelu_sigmoid(float v) {
  const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  return 1.f / (1.f + std::exp(-2.f * u));
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
