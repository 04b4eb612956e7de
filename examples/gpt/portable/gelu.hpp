// examples/gpt/portable/gelu.hpp: the tanh-form GELU, forward and backward, as flat kernels of
// the execution model (one index per element), written once for every executor. The same
// arithmetic as k::gelu_forward/backward (kernels.hpp), element by element.
//
//   ex.for_each(n, gpt::portable::gelu_forward{out, x});
//   ex.for_each(n, gpt::portable::gelu_backward{dx, x, dout});   // dx may alias dout
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>

#include "hcomm/core/macros.hpp"

namespace gpt::portable {

// A float's bits and back (the logistic below selects by integer operations: GCC vectorizes
// those, while a float select next to arithmetic keeps it from vectorizing the loop).
HCOMM_HOST_DEVICE std::uint32_t gelu_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<std::uint32_t>(f);
#endif
}
HCOMM_HOST_DEVICE float gelu_float(std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  return std::bit_cast<float>(b);
#endif
}

// e^y for y in [-80, 0]: y = k ln2 + r with |r| <= ln2/2 (Cody-Waite, ln2 in two parts), e^r
// by Cephes expf's polynomial, 2^k (k in [-116, 0]) into the exponent bits. Within 2 ulp of
// e^y, with normal numbers only; plain arithmetic without a library call, so a loop of it
// vectorizes (libm's expf does not without -ffast-math), and every executor computes the
// same bits.
HCOMM_HOST_DEVICE float gelu_exp(float y) {
  const float k = (y * 1.44269504088896341f + 12582912.f) - 12582912.f;  // round to nearest (1.5 * 2^23)
  float r = y - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.f;
  return e * gelu_float(static_cast<std::uint32_t>(static_cast<int>(k) + 127) << 23);
}

// 0.5 (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), as the logistic 1 / (1 + e^z) of
// z = -2 sqrt(2/pi) (v + 0.044715 v^3): with w = e^(-|z|), 1 / (1 + w) for z <= 0 and
// w / (1 + w) for z > 0, so e^ never overflows; |z| beyond 80 counts as 80 (the logistic is
// then 0 or 1 to within 2e-35).
HCOMM_HOST_DEVICE float gelu_sigmoid(float v) {
  const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  const std::uint32_t z = gelu_bits(-2.f * u);
  const std::uint32_t y = (z | 0x80000000u) < 0xC2A00000u ? (z | 0x80000000u) : 0xC2A00000u;  // -min(|z|, 80)
  const float w = gelu_exp(gelu_float(y));
  const std::uint32_t neg = 0u - (z >> 31);  // all ones where z <= 0
  return gelu_float((neg & 0x3F800000u) | (~neg & gelu_bits(w))) / (1.f + w);
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
