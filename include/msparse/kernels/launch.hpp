// msparse/kernels/launch.hpp: runs a kernel functor on an executor, and on x86-64 hosts
// compiles the functor's body for AVX2+FMA when the CPU has them (chosen at run time).
//
//   msparse::kernels::launch(hcomm::exec::host{}, n_items, my_kernel{...});
//
// Why: the library is header-only, so the consumer's flags decide the instruction set, and
// a plain build targets SSE2. The sparse kernels are written as portable loops over a
// token tile (the same HCOMM_HOST_DEVICE body the CUDA executor runs); here the body is
// inlined into a function compiled for AVX2+FMA ("flatten"), which makes GCC vectorise the
// token loops 8 wide with fused multiply-adds. OpenBLAS, the baseline, dispatches the same
// way. Define MSPARSE_NO_ISA_DISPATCH to run the plain build's code instead.
#pragma once
#include <cstddef>
#include <type_traits>

#include "hcomm/core/macros.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

#if !defined(MSPARSE_NO_ISA_DISPATCH) && !defined(__CUDACC__) && defined(__x86_64__) && \
    (defined(__GNUC__) || defined(__clang__))
#define MSPARSE_ISA_DISPATCH 1
#else
#define MSPARSE_ISA_DISPATCH 0
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

namespace detail {

#if MSPARSE_ISA_DISPATCH
#if defined(__clang__)
#define MSPARSE_AVX2_FN __attribute__((target("avx2,fma"), flatten))
#else
#define MSPARSE_AVX2_FN __attribute__((target("avx2,fma"), flatten, optimize("fp-contract=fast", "no-loop-unroll-and-jam")))
#endif
// The body of f is inlined here and compiled for AVX2+FMA.
template <class F>
MSPARSE_AVX2_FN void run_avx2(const F& f, std::size_t i) { f(i); }

template <class F>
struct avx2_adapter {
  const F* f;
  void operator()(std::size_t i) const { run_avx2(*f, i); }
};

inline bool host_has_avx2_fma() noexcept {
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return ok;
}
#else
inline bool host_has_avx2_fma() noexcept { return false; }
#endif

// Tests set this to run the plain (baseline) body on a host that has AVX2.
inline bool& force_baseline() noexcept {
  static bool force = false;
  return force;
}
inline bool use_avx2() noexcept { return !force_baseline() && host_has_avx2_fma(); }

}  // namespace detail

// Which instruction set host launches use ("avx2+fma" or "baseline").
inline const char* host_isa() noexcept { return detail::use_avx2() ? "avx2+fma" : "baseline"; }
// Run host kernels with the baseline body even where AVX2 is available (tests, comparisons).
inline void set_force_baseline(bool on) noexcept { detail::force_baseline() = on; }

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
#if MSPARSE_ISA_DISPATCH
  if constexpr (!Exec::is_device) {
    if (detail::use_avx2()) {
      ex.for_each(n, detail::avx2_adapter<F>{&f});
      return;
    }
  }
#endif
  ex.for_each(n, f);
}

}  // namespace msparse::kernels
