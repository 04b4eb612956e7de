// examples/gpt/avx2/exp.hpp: the softmax rows' exponentials of kernels.hpp compiled for AVX2,
// 8 floats a vector; kernels.hpp takes them where hcomm::cpu::use_avx2() says so
// (cpu_features.hpp). The body is portable/exp.hpp's shifted_exp, element by element,
// without FMA contraction (the target leaves out "fma"), so both forms give the same bits;
// `flatten` inlines it, which the vectorizer needs.
#pragma once
#include <cstddef>
#include <cstdint>

#include "hcomm/core/cpu_features.hpp"
#include "../portable/exp.hpp"

#if HCOMM_X86_VARIANTS
namespace gpt::k::avx2 {

// out[j] = e^(in[j] - mx) for j < n (out may be in); nonzero if any in[j] - mx was NaN.
__attribute__((target("avx2"), flatten)) inline std::uint32_t shifted_exp(const float* in, float* out, float mx,
                                                                         std::ptrdiff_t n) {
  const portable::shifted_exp f{in, out, mx};
  std::uint32_t nan = 0;
#pragma omp simd reduction(| : nan)
  for (std::ptrdiff_t j = 0; j < n; ++j) nan |= f(static_cast<std::size_t>(j));
  return nan;
}

}  // namespace gpt::k::avx2
#endif
