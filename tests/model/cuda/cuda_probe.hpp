// The CUDA tests' start: whether a CUDA device is usable; if not, the test prints
// "SKIPPED: ..." and exits 77 (ctest: skipped).
//
//   if (!gpt_test::cuda_device_or_skip()) return 77;
#pragma once
#include <cuda_runtime.h>

#include <cstdio>

namespace gpt_test {

inline bool cuda_device_or_skip() {
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe == cudaSuccess && devices > 0) return true;
  std::printf("SKIPPED: no CUDA device (%s)\n", probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
  return false;
}

}  // namespace gpt_test
