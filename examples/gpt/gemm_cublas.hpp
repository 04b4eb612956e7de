// examples/gpt/gemm_cublas.hpp: the GEMM of the portable backend on CUDA device memory
// (cuBLAS on the executor's stream), the CUDA counterpart of gemm_host.hpp.
//
//   gpt::cublas_gemm g(stream);                 // one handle, shared by copies
//   g(false, true, M, N, K, 1.f, A, lda, B, ldb, 0.f, C, ldc);
//   // C[M,N] = alpha op(A) op(B) + beta C, row-major; op transposes when its flag is set
//   g.use_bf16();  g.reserve(a, b);             // --precision bf16: tensor cores from here on
//
// Row-major C is column-major C^T = op(B)^T op(A)^T, so cuBLAS gets the operands swapped:
// (op_b, op_a, N, M, K, B, ldb, A, lda, C, ldc) and no data moves.
// fp32 (the default): sgemm with pedantic math (CUBLAS_PEDANTIC_MATH: no TF32, no
// reduced-precision reductions), as the PyTorch reference runs with TF32 off; `tf32 = true`
// allows TF32 tensor cores for speed runs.
// bf16 (use_bf16): A and B are converted to bfloat16 (nearest, ties to even: the flat kernel
// portable::to_bf16, which host-check runs in CI) into scratch on the stream, then
// cublasGemmEx multiplies them on tensor cores with fp32 accumulation and fp32 C: what
// gemm_host.hpp's bf16 mode computes on the host, up to the order of the sums.
// cuBLAS gives the same bits on every run on one GPU model and toolkit, which --deterministic
// relies on.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "device_array.hpp"
#include "gemm_host.hpp"
#include "hcomm/core/bfloat16.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/exec/cuda.hpp"
#include "portable/elementwise.hpp"

namespace gpt {

inline void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    hcomm::fail(hcomm::errc::unsupported, std::string("cuBLAS: ") + what + " failed: " + cublasGetStatusString(s));
}

struct cublas_gemm {
  static constexpr const char* name = "cuBLAS";

  cublas_gemm() = default;
  explicit cublas_gemm(cudaStream_t stream, bool tf32 = false)
      : h_(make(stream, tf32)), s_(std::make_shared<state>(hcomm::exec::cuda{stream})) {}

  // --precision bf16: bfloat16 operands on tensor cores, fp32 accumulation (see above).
  void use_bf16() {
    need_handle();
    s_->bf16 = true;
    cublas_check(cublasSetMathMode(h_.get(), CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  // Room for A and B operands of up to a and b elements now (bf16), so that no step allocates
  // device memory (the model reserves while its own buffers are made: a failure there stops
  // every rank cleanly).
  void reserve(std::size_t a, std::size_t b) {
    need_handle();
    if (!s_->bf16) return;
    if (s_->a.size() < a) s_->a = device_array<hcomm::bf16, hcomm::exec::cuda>(s_->ex, a);
    if (s_->b.size() < b) s_->b = device_array<hcomm::bf16, hcomm::exec::cuda>(s_->ex, b);
  }

  void operator()(bool trans_a, bool trans_b, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t K, float alpha,
                  const float* A, std::ptrdiff_t lda, const float* B, std::ptrdiff_t ldb, float beta, float* C,
                  std::ptrdiff_t ldc) const {
    need_handle();
    if (M == 0 || N == 0) return;
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int m = static_cast<int>(M), n = static_cast<int>(N), k = static_cast<int>(K);
    if (!s_->bf16) {
      cublas_check(cublasSgemm(h_.get(), op_b, op_a, n, m, k, &alpha, B, static_cast<int>(ldb), A,
                               static_cast<int>(lda), &beta, C, static_cast<int>(ldc)),
                   "sgemm");
      return;
    }
    const hcomm::bf16* a = converted(s_->a, A, operand_span(trans_a ? K : M, trans_a ? M : K, lda));
    const hcomm::bf16* b = converted(s_->b, B, operand_span(trans_b ? N : K, trans_b ? K : N, ldb));
    cublas_check(cublasGemmEx(h_.get(), op_b, op_a, n, m, k, &alpha, b, CUDA_R_16BF, static_cast<int>(ldb), a,
                              CUDA_R_16BF, static_cast<int>(lda), &beta, C, CUDA_R_32F, static_cast<int>(ldc),
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "GemmEx (bf16 operands, fp32 accumulation)");
  }

 private:
  struct destroy {
    void operator()(cublasHandle_t h) const noexcept { cublasDestroy(h); }
  };
  // The bf16 mode and its operand scratch, grown as needed (freed stream-ordered), shared by
  // copies: one host thread at a time, as the handle.
  struct state {
    hcomm::exec::cuda ex;
    bool bf16 = false;
    device_array<hcomm::bf16, hcomm::exec::cuda> a, b;
    explicit state(hcomm::exec::cuda e) : ex(e) {}
  };
  std::shared_ptr<cublasContext> h_;
  std::shared_ptr<state> s_;

  void need_handle() const {
    if (!h_) hcomm::fail(hcomm::errc::invalid_argument, "cublas_gemm: made without a stream (cublas_gemm(stream))");
  }
  const hcomm::bf16* converted(device_array<hcomm::bf16, hcomm::exec::cuda>& to, const float* x, std::size_t n) const {
    if (to.size() < n) to = device_array<hcomm::bf16, hcomm::exec::cuda>(s_->ex, n);
    s_->ex.for_each(n, portable::to_bf16{x, to.data()});
    return to.data();
  }
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
