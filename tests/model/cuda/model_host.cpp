// The reference pass (model_pass.hpp) for test_cuda_model.cu, compiled by the C++ compiler: the
// portable backend on the host executor with a plain-loop GEMM (so that the GPU kit carries no
// BLAS; in CI test_portable_model.cpp ties the host portable backend to the CPU backend and to
// PyTorch).
#include "model_host.hpp"

#include <cstddef>

#include "hcomm/core/bfloat16.hpp"
#include "hcomm/exec/host.hpp"
#include "model_pass.hpp"
#include "ops_portable.hpp"

namespace gpt_test {
namespace {

// C[M,N] = alpha op(A) op(B) + beta C, row-major, accumulated in double.
struct loop_gemm {
  static constexpr const char* name = "loop";
  bool bf16 = false;  // bfloat16 operands (--precision bf16), as gemm_host.hpp and gemm_cublas.hpp
  void use_bf16() { bf16 = true; }
  bool bf16_mode() const { return bf16; }
  void reserve(std::size_t, std::size_t) const {}
  void operator()(bool ta, bool tb, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t K, float alpha, const float* A,
                  std::ptrdiff_t lda, const float* B, std::ptrdiff_t ldb, float beta, float* C,
                  std::ptrdiff_t ldc, gpt::gemm_reuse /*ignored: every operand rounded afresh*/ = {}) const {
    for (std::ptrdiff_t i = 0; i < M; ++i)
      for (std::ptrdiff_t j = 0; j < N; ++j) {
        double s = 0;
        for (std::ptrdiff_t k = 0; k < K; ++k)
          s += static_cast<double>(op(ta ? A[k * lda + i] : A[i * lda + k])) * op(tb ? B[j * ldb + k] : B[k * ldb + j]);
        float& c = C[i * ldc + j];
        c = static_cast<float>(alpha * s + (beta == 0.f ? 0.0 : static_cast<double>(beta) * c));
      }
  }
  float op(float v) const { return bf16 ? hcomm::round_to_bf16(v) : v; }
};

}  // namespace

using reference_model = gpt::basic_stage_model<gpt::portable_ops<hcomm::exec::host, loop_gemm>>;

pass reference_pass(const gpt::config& c, const std::vector<int>& tokens, const std::vector<int>& targets, int micro) {
  return run_pass<reference_model>(c, tokens, targets, micro);
}
std::vector<double> reference_losses(const gpt::config& c, const std::vector<int>& tokens,
                                     const std::vector<int>& targets, int micro) {
  return train_losses<reference_model>(c, tokens, targets, micro, c.steps);
}

}  // namespace gpt_test
