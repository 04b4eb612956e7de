// examples/gpt/openblas_core.hpp: OpenBLAS's kernels matched to the CPU.
//
// OpenBLAS built with DYNAMIC_ARCH (as Debian's) picks its kernels by CPU model when it loads.
// A CPU model newer than the library gets its fallback, the SSE3 "Prescott" kernels: Debian
// 12's 0.3.21 does that on Intel's Emerald Rapids (family 6, model 207), where its sgemm then
// runs about 3x slower than with the AVX-512 kernels that CPU has. The choice is made once, at
// load time, from OPENBLAS_CORETYPE; so a program that finds the fallback on a CPU with AVX2 or
// AVX-512 starts itself again, same arguments, with the matching kernels named there. A choice
// already in OPENBLAS_CORETYPE is the user's and is kept.
//
//   int main(int argc, char** argv) { gpt::openblas_core::match_cpu(); MPI_Init(...); ...
//   std::printf("%s\n", gpt::openblas_core::describe().c_str());  // what runs, and why
//
// match_cpu() must run before MPI_Init and before any thread starts (it may exec).
//
// GPT_FAULT_BLAS_FALLBACK=1 takes OpenBLAS's choice for its fallback, as on a CPU it does not
// know: the tests' way to exercise the restart on any machine.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

extern "C" char* openblas_get_corename(void);

namespace gpt::openblas_core {

// OpenBLAS's names of kernels older than AVX2 (SSE only): chosen on a CPU with AVX2, they are
// the fallback for a model OpenBLAS does not know, not a choice made for the CPU.
inline bool sse_only(std::string_view core) {
  for (std::string_view n : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom"})
    if (core == n) return true;
  return false;
}

// The kernels to restart with, given OpenBLAS's choice and the CPU's instruction sets; empty:
// keep the choice. AVX-512 here means the subsets OpenBLAS's SkylakeX kernels use.
inline std::string better_kernels(std::string_view chosen, bool avx512, bool avx2_fma) {
  if (!sse_only(chosen)) return {};
  if (avx512) return "SkylakeX";
  if (avx2_fma) return "Haswell";
  return {};
}

struct cpu_sets {
  bool avx512 = false, avx2_fma = false;
};
inline cpu_sets this_cpu() {
  cpu_sets s;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  s.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  s.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return s;
}

inline std::string chosen() {
  const char* c = openblas_get_corename();
  return c ? c : "";
}

// Restarts this program with OPENBLAS_CORETYPE set when OpenBLAS fell back to SSE kernels on a
// CPU with better ones; returns (doing nothing) otherwise, or if the restart cannot be made.
inline void match_cpu() {
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  const char* fault = std::getenv("GPT_FAULT_BLAS_FALLBACK");
  const bool as_fallback = fault && std::string_view(fault) == "1";
  const std::string core = chosen();
  const cpu_sets cpu = this_cpu();
  const std::string want = better_kernels(as_fallback ? "Prescott" : core, cpu.avx512, cpu.avx2_fma);
  if (want.empty()) return;
  // The arguments as the kernel holds them (main's argv may be a wrapper's, e.g. a benchmark
  // library's static registration runs before main).
  std::FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (!f) return;
  std::string all;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) all.append(buf, n);
  std::fclose(f);
  std::vector<char*> args;
  for (size_t i = 0; i < all.size(); i += std::string_view(all.c_str() + i).size() + 1) args.push_back(all.data() + i);
  if (args.empty()) return;
  args.push_back(nullptr);
  setenv("OPENBLAS_CORETYPE", want.c_str(), 1);
  setenv("GPT_OPENBLAS_REPLACED", core.c_str(), 1);
  std::fflush(nullptr);
  execv("/proc/self/exe", args.data());
  unsetenv("OPENBLAS_CORETYPE");  // the restart failed: run on as OpenBLAS chose
  unsetenv("GPT_OPENBLAS_REPLACED");
}

// One line on what runs: "OpenBLAS SkylakeX kernels (...why...)".
inline std::string describe() {
  const std::string core = chosen();
  std::string s = "OpenBLAS " + core + " kernels";
  const char* replaced = std::getenv("GPT_OPENBLAS_REPLACED");
  const char* named = std::getenv("OPENBLAS_CORETYPE");
  if (replaced && named)
    s += std::string(" (OpenBLAS chose ") + replaced + " for this CPU: restarted with OPENBLAS_CORETYPE=" + named + ")";
  else if (named)
    s += std::string(" (OPENBLAS_CORETYPE=") + named + ")";
  else {
    const cpu_sets cpu = this_cpu();
    const std::string want = better_kernels(core, cpu.avx512, cpu.avx2_fma);
    if (!want.empty()) s += " (slower than this CPU allows: set OPENBLAS_CORETYPE=" + want + ")";
  }
  return s;
}

}  // namespace gpt::openblas_core
