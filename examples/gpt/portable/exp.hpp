// examples/gpt/portable/exp.hpp: e^y for y <= 0 in plain arithmetic, the same bits on every
// executor, and a loop of it vectorizes (libm's expf does not without -ffast-math). GELU's
// logistic (gelu.hpp) and the CPU backend's softmax rows (kernels.hpp) use it.
//
//   const float e = gpt::portable::exp_nonpositive(y);           // y in [-80, 0]
//   const gpt::portable::shifted_exp f{row, row, mx};            // row[j] = e^(row[j] - mx)
//   std::uint32_t nan = 0;
//   for (std::size_t j = 0; j < n; ++j) nan |= f(j);             // 1 if any row[j] - mx was NaN
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>

#include "hcomm/core/macros.hpp"

namespace gpt::portable {

// A float's bits and back (callers select by integer operations: GCC vectorizes those, while
// a float select next to arithmetic keeps it from vectorizing the loop).
HCOMM_HOST_DEVICE std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<std::uint32_t>(f);
#endif
}
HCOMM_HOST_DEVICE float bits_float(std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  return std::bit_cast<float>(b);
#endif
}

// e^y for y in [-80, 0]: y = k ln2 + r with |r| <= ln2/2 (Cody-Waite, ln2 in two parts), e^r
// by Cephes expf's polynomial, 2^k (k in [-116, 0]) into the exponent bits. Within 2 ulp of
// e^y, with normal numbers only.
HCOMM_HOST_DEVICE float exp_nonpositive(float y) {
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
  return e * bits_float(static_cast<std::uint32_t>(static_cast<int>(k) + 127) << 23);
}

// The bits of -min(|y|, 80): a y <= 0 clamped to exp_nonpositive's range (e^-80 = 1.8e-35
// stands for anything smaller, to within 2e-35 of it).
HCOMM_HOST_DEVICE std::uint32_t clamp_nonpositive_bits(float y) {
  const std::uint32_t b = float_bits(y) | 0x80000000u;
  return b < 0xC2A00000u ? b : 0xC2A00000u;
}

// A softmax row's exponentials: out[j] = e^(in[j] - mx), mx the row's maximum (so the
// exponent is <= 0); out may be in. Returns 1 where in[j] - mx was NaN (a NaN or an infinite
// score), for the caller to make the row NaN as libm's exp would.
struct shifted_exp {
  const float* in;
  float* out;
  float mx;
  HCOMM_HOST_DEVICE std::uint32_t operator()(std::size_t j) const {
    const float y = in[j] - mx;
    const std::uint32_t nan = (float_bits(y) & 0x7fffffffu) > 0x7f800000u ? 1u : 0u;
    out[j] = exp_nonpositive(bits_float(clamp_nonpositive_bits(y)));
    return nan;
  }
};

}  // namespace gpt::portable
