// hcomm/core/cpu_features.hpp: the host CPU's instruction-set tier, the one override that
// forces the portable kernels, and the dispatch that picks a kernel's ISA variant.
//
//   if (hcomm::cpu::use_avx2()) ...                 // the AVX2 tier is there and not overridden
//   { hcomm::cpu::force_portable guard; ... }        // tests: the portable bodies, in this scope
//   HCOMM_FORCE_PORTABLE=1 ./prog                    // the same for a whole process
//
//   struct my_kernel {                              // a kernel with an AVX2 variant
//     HCOMM_HOST_DEVICE void operator()(std::size_t i) const { hcomm::cpu::dispatch(*this, i); }
//     HCOMM_FORCEINLINE void body(std::size_t i) const { ... }   // portable: every executor
//   };
//   // in its avx2/ header: template <> struct hcomm::cpu::avx2_variant<my_kernel> {
//   //   static constexpr bool available = true;
//   //   static void run(const my_kernel& k, std::size_t i);   // __attribute__((target(...)))
//   // };
//
// Why: the library is header-only, so the consumer's flags decide the baseline instruction
// set (a plain build targets SSE2). Kernels with a faster host form keep it in a file of
// its own (an avx2/ folder beside the portable kernel), compiled with a target attribute,
// and the portable body stays what CUDA and every other executor run. All of hcomm and
// msparse ask this header whether to take such a variant, so one check and one override
// cover every codec, the checksum and the sparse kernels; the bytes are the same either way.
//
// The AVX2 tier is AVX2 with BMI2, FMA and POPCNT (LZCNT has no feature string of its own;
// every CPU with AVX2 and BMI2 has it): what the variants' target attributes ask for, and
// what every x86-64 CPU with AVX2 provides. Define HCOMM_NO_ISA_VARIANTS to build the
// portable kernels only.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdlib>

#include "hcomm/core/macros.hpp"

// 1 where this compilation builds (and may run) the x86-64 variants: GCC or Clang for an
// x86-64 host, not nvcc (whose translation units keep the portable bodies on the host too).
#if !defined(HCOMM_NO_ISA_VARIANTS) && !defined(__CUDACC__) && defined(__x86_64__) && \
    (defined(__GNUC__) || defined(__clang__))
#define HCOMM_X86_VARIANTS 1
#else
#define HCOMM_X86_VARIANTS 0
#endif

// The dispatch is inlined into the kernel's call operator, as the portable body is into it.
#if defined(__CUDACC__)
#define HCOMM_DISPATCH_INLINE __host__ __device__ __forceinline__
#else
#define HCOMM_DISPATCH_INLINE inline __attribute__((always_inline))
#endif

namespace hcomm::cpu {

// What the CPU reports (all false where no variant is built).
struct features {
  bool avx2 = false;
  bool bmi2 = false;
  bool fma = false;
  bool popcnt = false;
  constexpr bool avx2_tier() const noexcept { return avx2 && bmi2 && fma && popcnt; }
};

inline features detect() noexcept {
  features f;
#if HCOMM_X86_VARIANTS
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.bmi2 = __builtin_cpu_supports("bmi2");
  f.fma = __builtin_cpu_supports("fma");
  f.popcnt = __builtin_cpu_supports("popcnt");
#endif
  return f;
}

namespace detail {
// Environment variable that forces the portable bodies for the whole process (read once).
inline constexpr const char* force_portable_env = "HCOMM_FORCE_PORTABLE";

struct isa_state {
  bool avx2_tier;
  std::atomic<int> forced;  // live force_portable guards, plus 1 for the environment variable
};
inline isa_state& state() noexcept {
  static isa_state s{detect().avx2_tier(), [] {
                       const char* v = std::getenv(force_portable_env);
                       return v != nullptr && v[0] == '1' ? 1 : 0;
                     }()};
  return s;
}
}  // namespace detail

// The CPU's features, detected once.
inline const features& host_features() noexcept {
  static const features f = detect();
  return f;
}

// Whether the portable bodies are forced (a live force_portable, or HCOMM_FORCE_PORTABLE=1).
inline bool portable_forced() noexcept {
  return detail::state().forced.load(std::memory_order_relaxed) != 0;
}

// The one check every dispatch asks: take the AVX2 variants?
inline bool use_avx2() noexcept {
  detail::isa_state& s = detail::state();
  return s.avx2_tier && s.forced.load(std::memory_order_relaxed) == 0;
}

// Which bodies host kernels run now: "avx2" or "portable".
inline const char* isa_name() noexcept { return use_avx2() ? "avx2" : "portable"; }

// The one override: while a force_portable(true) lives, every dispatch runs the portable
// bodies (guards nest; process-wide, so set it before launching work, not during).
class force_portable {
 public:
  explicit force_portable(bool on = true) noexcept : on_(on) {
    if (on_) detail::state().forced.fetch_add(1, std::memory_order_relaxed);
  }
  ~force_portable() {
    if (on_) detail::state().forced.fetch_sub(1, std::memory_order_relaxed);
  }
  force_portable(const force_portable&) = delete;
  force_portable& operator=(const force_portable&) = delete;

 private:
  bool on_;
};

// A kernel K whose body has an AVX2 variant specialises this (in its avx2/ header, which the
// kernel's own header includes, so that every translation unit sees the same dispatch) with
//   static constexpr bool available = true;
//   static void run(const K&, Args...);
template <class K, class = void>
struct avx2_variant {
  static constexpr bool available = false;
};

// Runs k's AVX2 variant where it exists and use_avx2() says so, else k.body(args...).
template <class K, class... Args>
HCOMM_DISPATCH_INLINE void dispatch(const K& k, Args... args) {
#if HCOMM_X86_VARIANTS
  if constexpr (avx2_variant<K>::available) {
    if (use_avx2()) {
      avx2_variant<K>::run(k, args...);
      return;
    }
  }
#endif
  k.body(args...);
}

}  // namespace hcomm::cpu
