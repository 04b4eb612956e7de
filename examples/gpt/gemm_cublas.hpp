// examples/gpt/gemm_cublas.hpp: the GEMM of the portable backend on CUDA device memory
// (cuBLAS sgemm on the executor's stream), the CUDA counterpart of gemm_host.hpp.
//
//   gpt::cublas_gemm g(stream);                 // one handle, shared by copies
//   g(false, true, M, N, K, 1.f, A, lda, B, ldb, 0.f, C, ldc);
//   // C[M,N] = alpha op(A) op(B) + beta C, row-major; op transposes when its flag is set
//
// Row-major C is column-major C^T = op(B)^T op(A)^T, so cuBLAS gets the operands swapped:
// (op_b, op_a, N, M, K, B, ldb, A, lda, C, ldc) and no data moves. fp32 math is pedantic
// (CUBLAS_PEDANTIC_MATH: no TF32, no reduced-precision reductions), as the PyTorch reference
// runs with TF32 off; `tf32 = true` allows TF32 tensor cores for speed runs. cuBLAS gives the
// same bits on every run on one GPU model and toolkit, which --deterministic relies on.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "hcomm/core/error.hpp"

namespace gpt {

inline void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    hcomm::fail(hcomm::errc::unsupported, std::string("cuBLAS: ") + what + " failed: " + cublasGetStatusString(s));
}

struct cublas_gemm {
  static constexpr const char* name = "cuBLAS sgemm";

  cublas_gemm() = default;
  explicit cublas_gemm(cudaStream_t stream, bool tf32 = false) : h_(make(stream, tf32)) {}

  void operator()(bool trans_a, bool trans_b, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t K, float alpha,
                  const float* A, std::ptrdiff_t lda, const float* B, std::ptrdiff_t ldb, float beta, float* C,
                  std::ptrdiff_t ldc) const {
    if (!h_) hcomm::fail(hcomm::errc::invalid_argument, "cublas_gemm: made without a stream (cublas_gemm(stream))");
    if (M == 0 || N == 0) return;
    cublas_check(cublasSgemm(h_.get(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                             static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, B,
                             static_cast<int>(ldb), A, static_cast<int>(lda), &beta, C, static_cast<int>(ldc)),
                 "sgemm");
  }

 private:
  struct destroy {
    void operator()(cublasHandle_t h) const noexcept { cublasDestroy(h); }
  };
  std::shared_ptr<cublasContext> h_;

  static std::shared_ptr<cublasContext> make(cudaStream_t stream, bool tf32) {
    cublasHandle_t h = nullptr;
    cublas_check(cublasCreate(&h), "cublasCreate (is a GPU visible?)");
    std::shared_ptr<cublasContext> p(h, destroy{});
    cublas_check(cublasSetStream(h, stream), "cublasSetStream");
    cublas_check(cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    cublas_check(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
    return p;
  }
};

}  // namespace gpt
