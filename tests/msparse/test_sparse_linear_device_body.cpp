// The same layer checks with the kernels' device form of f8 (a struct of 8 floats, what
// nvcc compiles for the GPU) run on the host: the CUDA body is tested on the CPU.
#define MSPARSE_F8_FORCE_STRUCT 1
#include "test_sparse_linear_check.hpp"

TEST_CASE("device-form kernel bodies equal dense-with-mask", "[msparse][sparse_linear][device_body]") {
  const double sparsity = GENERATE(0.0, 0.5, 0.9, 0.99, 1.0);
  run_case(17, 33, 70, sparsity, 2, false);
  run_case(40, 1100, 67, sparsity, 1, false);
  run_case(1030, 37, 65, sparsity, 2, false);
  run_case(97, 203, 100, sparsity, 2, true);
}
