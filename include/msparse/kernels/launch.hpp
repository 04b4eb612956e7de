// msparse/kernels/launch.hpp: runs a kernel functor on an executor; on hosts with the AVX2
// tier (hcomm/core/cpu_features.hpp) through the AVX2+FMA build of its body (avx2/runner.hpp).
//
//   msparse::kernels::launch(hcomm::exec::host{}, n_items, my_kernel{...});
//
// Why: the library is header-only, so the consumer's flags decide the instruction set, and
// a plain build targets SSE2. The sparse kernels are written as portable loops over a
// token tile (the same HCOMM_HOST_DEVICE body the CUDA executor runs); host launches run
// that body compiled for AVX2+FMA where the CPU has them, as OpenBLAS, the baseline,
// dispatches. hcomm::cpu::force_portable (or HCOMM_FORCE_PORTABLE=1) runs the plain build's
// code instead; defining HCOMM_NO_ISA_VARIANTS builds only that.
#pragma once
#include <cstddef>
#include <type_traits>

#include "hcomm/core/cpu_features.hpp"
#include "hcomm/core/macros.hpp"
#include "msparse/kernels/avx2/runner.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace msparse::kernels {

// a*b + c, fused where the target can (the plain host build keeps ISO C++'s unfused form;
// the AVX2 path gets contraction through fp-contract=fast on its runner).
HCOMM_HOST_DEVICE float madd(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

template <class T>
HCOMM_HOST_DEVICE T min_of(T a, T b) { return a < b ? a : b; }

// Which instruction set host launches use ("avx2+fma" or "baseline").
inline const char* host_isa() noexcept { return hcomm::cpu::use_avx2() ? "avx2+fma" : "baseline"; }

// Number of threads a host executor will use (for work partitioning).
template <class Exec>
int executor_threads(const Exec& ex) {
  if constexpr (requires { ex.effective_threads(); }) return ex.effective_threads();  // the host executor
  if constexpr (requires { ex.threads; }) {
    if (ex.threads > 0) return ex.threads;
  }
#if defined(_OPENMP)
  if constexpr (!Exec::is_device) return omp_get_max_threads();
#endif
  return 1;
}

template <class Exec, class F>
void launch(const Exec& ex, std::size_t n, const F& f) {
  if (n == 0) return;
#if HCOMM_X86_VARIANTS
  if constexpr (!Exec::is_device) {
    if (hcomm::cpu::use_avx2()) {
      ex.for_each(n, avx2::runner<F>{&f});
      return;
    }
  }
#endif
  ex.for_each(n, f);
}

}  // namespace msparse::kernels
