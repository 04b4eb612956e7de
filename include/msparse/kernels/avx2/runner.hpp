// msparse/kernels/avx2/runner.hpp: the AVX2+FMA variant of every msparse host kernel: the
// kernel functor's portable body inlined ("flatten") into a function compiled for AVX2+FMA,
// which makes GCC vectorise the token loops 8 wide with fused multiply-adds. launch.hpp
// takes it on hosts with the AVX2 tier (hcomm/core/cpu_features.hpp).
#pragma once
#include <cstddef>

#include "hcomm/core/cpu_features.hpp"

#if HCOMM_X86_VARIANTS
#if defined(__clang__)
#define MSPARSE_AVX2_FN __attribute__((target("avx2,fma"), flatten))
#else
#define MSPARSE_AVX2_FN __attribute__((target("avx2,fma"), flatten, optimize("fp-contract=fast", "no-loop-unroll-and-jam")))
#endif

namespace msparse::kernels::avx2 {

// The body of f is inlined here and compiled for AVX2+FMA.
template <class F>
MSPARSE_AVX2_FN void run(const F& f, std::size_t i) { f(i); }

// f as a functor for an executor's for_each, running the AVX2+FMA build of its body.
template <class F>
struct runner {
  const F* f;
  void operator()(std::size_t i) const { run(*f, i); }
};

}  // namespace msparse::kernels::avx2
#endif  // HCOMM_X86_VARIANTS
