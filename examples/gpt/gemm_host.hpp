// examples/gpt/gemm_host.hpp: the GEMM of the portable backend on host memory (OpenBLAS's
// cblas_sgemm). GEMM libraries are the only per-device code of the model's layers: the
// portable backend (ops_portable.hpp) takes one of these as its Gemm, a cuBLAS one on CUDA.
//
//   gpt::host_gemm{}(false, true, M, N, K, 1.f, A, lda, B, ldb, 0.f, C, ldc);
//   // C[M,N] = alpha op(A) op(B) + beta C, row-major; op transposes when its flag is set
#pragma once
#include <cblas.h>

#include <cstddef>

namespace gpt {

struct host_gemm {
  static constexpr const char* name = "OpenBLAS sgemm";
  void operator()(bool trans_a, bool trans_b, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t K, float alpha,
                  const float* A, std::ptrdiff_t lda, const float* B, std::ptrdiff_t ldb, float beta, float* C,
                  std::ptrdiff_t ldc) const {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B,
                static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
  }
};

}  // namespace gpt
