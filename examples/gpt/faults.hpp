// examples/gpt/faults.hpp: faults injected by the tests through environment variables (not
// options: no user should meet them in --help). Each names a rank and a step (1-based, the
// step whose end triggers it, as printed in "step N/M"); unset variables inject nothing.
//
//   GPT_FAULT_NAN=STEP               rank 0 puts a NaN into its gradient at STEP
//   GPT_FAULT_SAVE_ENOSPC=RANK[:STEP] RANK's checkpoint write fails with ENOSPC (at the save
//                                    after STEP; without STEP at every save); RANK = the
//                                    number of ranks: rank 0's write of the manifest fails
//   GPT_FAULT_KILL_IN_SAVE=RANK:STEP RANK kills itself (SIGKILL) halfway through writing its
//                                    checkpoint file after STEP
//   GPT_FAULT_UNSHARED=RANK          RANK does not see rank 0's files in the --save directory
//   GPT_FAULT_HANG=RANK:STEP         RANK stops communicating (sleeps) at the start of STEP
//   GPT_FAULT_ALLOC=RANK             RANK's allocation of the model fails (std::bad_alloc), as
//                                    a GPU out of memory on one rank
//   GPT_FAULT_ALLOC_WIRE=RANK        RANK's staging for the 16-bit wire (--precision bf16)
//                                    cannot be allocated (std::bad_alloc)
//   GPT_FAULT_ALLOC_SAVE=RANK[:STEP] RANK cannot allocate --zero 1's whole optimizer state for
//                                    the save after STEP (std::bad_alloc)
//   GPT_FAULT_ALLOC_STEP=RANK:STEP   an allocation of RANK fails inside STEP (std::bad_alloc), as
//                                    a GPU running out of memory mid-step
//   GPT_FAULT_BLAS_FALLBACK=1        OpenBLAS's kernels are taken for its SSE fallback, as on a
//                                    CPU it does not know (read by openblas_core.hpp)
#pragma once
#include <cstdlib>
#include <string>

namespace gpt::faults {

struct spec {
  int rank = -1;
  long long step = -1;  // -1: any step
  bool at(int r, long long s) const { return rank >= 0 && r == rank && (step < 0 || s == step); }
};

// "A[:B]" -> {A, B}; an unset or malformed variable injects nothing.
inline spec read(const char* var, bool step_first = false) {
  spec f;
  const char* v = std::getenv(var);
  if (!v || !*v) return f;
  char* end = nullptr;
  const long a = std::strtol(v, &end, 10);
  if (end == v) return f;
  long b = -1;
  if (*end == ':') b = std::strtol(end + 1, &end, 10);
  if (step_first) {
    f.rank = 0;
    f.step = a;
  } else {
    f.rank = static_cast<int>(a);
    f.step = b;
  }
  return f;
}

inline const spec& nan_grad() { static const spec f = read("GPT_FAULT_NAN", true); return f; }
inline const spec& save_enospc() { static const spec f = read("GPT_FAULT_SAVE_ENOSPC"); return f; }
inline const spec& kill_in_save() { static const spec f = read("GPT_FAULT_KILL_IN_SAVE"); return f; }
inline const spec& unshared() { static const spec f = read("GPT_FAULT_UNSHARED"); return f; }
inline const spec& hang() { static const spec f = read("GPT_FAULT_HANG"); return f; }
inline const spec& alloc() { static const spec f = read("GPT_FAULT_ALLOC"); return f; }
inline const spec& alloc_wire() { static const spec f = read("GPT_FAULT_ALLOC_WIRE"); return f; }
inline const spec& alloc_save() { static const spec f = read("GPT_FAULT_ALLOC_SAVE"); return f; }
inline const spec& alloc_step() { static const spec f = read("GPT_FAULT_ALLOC_STEP"); return f; }

}  // namespace gpt::faults
