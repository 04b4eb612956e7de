// openblas_core.hpp's decision: OpenBLAS's SSE fallback on a CPU with AVX2 or AVX-512 is
// replaced by the kernels the CPU has; any other choice (OpenBLAS's own for a CPU it knows, or
// the user's through OPENBLAS_CORETYPE, which match_cpu never overrides) is kept.
#include <catch2/catch.hpp>

#include "openblas_core.hpp"

using gpt::openblas_core::better_kernels;

TEST_CASE("the SSE fallback on an AVX-512 or AVX2 CPU is replaced", "[openblas]") {
  CHECK(better_kernels("Prescott", true, true) == "SkylakeX");
  CHECK(better_kernels("Prescott", false, true) == "Haswell");
  CHECK(better_kernels("Nehalem", true, true) == "SkylakeX");
  CHECK(better_kernels("Core2", false, true) == "Haswell");
}

TEST_CASE("OpenBLAS's choice for a CPU it knows is kept", "[openblas]") {
  CHECK(better_kernels("SkylakeX", true, true).empty());
  CHECK(better_kernels("Cooperlake", true, true).empty());
  CHECK(better_kernels("Haswell", true, true).empty());  // e.g. where AVX-512 clocks down
  CHECK(better_kernels("Zen", false, true).empty());
  CHECK(better_kernels("Sandybridge", false, false).empty());
}

TEST_CASE("an SSE-only CPU keeps the SSE kernels", "[openblas]") {
  CHECK(better_kernels("Prescott", false, false).empty());
}
