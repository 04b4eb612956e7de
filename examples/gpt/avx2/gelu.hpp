// examples/gpt/avx2/gelu.hpp: the GELU loops of kernels.hpp compiled for AVX2, 8 floats a
// vector; kernels.hpp takes them where hcomm::cpu::use_avx2() says so (cpu_features.hpp).
// The bodies are portable/gelu.hpp's, element by element, without FMA contraction (the
// target leaves out "fma"), so both forms give the same bits; `flatten` inlines them, which
// the vectorizer needs.
#pragma once
#include <cstddef>

#include "hcomm/core/cpu_features.hpp"
#include "../portable/gelu.hpp"

#if HCOMM_X86_VARIANTS
namespace gpt::k::avx2 {

__attribute__((target("avx2"), flatten)) inline void gelu_forward(float* out, const float* x, std::ptrdiff_t n) {
  const portable::gelu_forward f{out, x};
#pragma omp simd
  for (std::ptrdiff_t i = 0; i < n; ++i) f(static_cast<std::size_t>(i));
}

__attribute__((target("avx2"), flatten)) inline void gelu_backward(float* dx, const float* x, const float* dout,
                                                          std::ptrdiff_t n) {
  const portable::gelu_backward f{dx, x, dout};
#pragma omp simd
  for (std::ptrdiff_t i = 0; i < n; ++i) f(static_cast<std::size_t>(i));
}

}  // namespace gpt::k::avx2
#endif
