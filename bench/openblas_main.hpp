// bench/openblas_main.hpp: main() of the Google Benchmark executables that link OpenBLAS, in
// place of BENCHMARK_MAIN(): OpenBLAS's kernels matched to the CPU first (a baseline on its SSE
// fallback would flatter whatever it is compared with), and the kernels named in the context.
#pragma once
#include <benchmark/benchmark.h>

#include "../examples/gpt/openblas_core.hpp"

int main(int argc, char** argv) {
  gpt::openblas_core::match_cpu();
  benchmark::AddCustomContext("openblas", gpt::openblas_core::describe());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
