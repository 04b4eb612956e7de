// examples/gpt/gemm_host.hpp: the GEMM of the portable backend on host memory (OpenBLAS's
// cblas_sgemm). GEMM libraries are the only per-device code of the model's layers: the
// portable backend (ops_portable.hpp) takes one of these as its Gemm, a cuBLAS one on CUDA.
//
//   gpt::host_gemm{}(false, true, M, N, K, 1.f, A, lda, B, ldb, 0.f, C, ldc);
//   // C[M,N] = alpha op(A) op(B) + beta C, row-major; op transposes when its flag is set
//   gpt::host_gemm g;  g.use_bf16();  g.reserve(a, b);   // --precision bf16: bf16 operands, fp32 sums
//
// bf16: A and B are rounded to bfloat16 (nearest, ties to even) into scratch copies before
// the product, so the result is what a tensor-core GEMM with bf16 inputs and fp32
// accumulation computes (gemm_cublas.hpp's bf16 mode), up to the order of the sums. The
// operands that are bf16 values already (the weights of a bf16 run) are unchanged by it.
// gemm_reuse (gemm_reuse.hpp): keep_a stores A's rounding as bfloat16 values for a later
// call's kept_b, which is widened back to float instead of rounding B (exact either way);
// same_a reuses the previous call's rounding of A, and a different pointer or extent rounds
// it afresh.
#pragma once
#include <cblas.h>

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "gemm_reuse.hpp"
#include "hcomm/core/bfloat16.hpp"
#include "hcomm/core/half.hpp"

namespace gpt {

struct host_gemm {
  static constexpr const char* name = "OpenBLAS sgemm";
  bool bf16 = false;  // round A and B to bfloat16 first (see above)
  void use_bf16() { bf16 = true; }
  bool bf16_mode() const { return bf16; }
  // Room for A and B operands of up to a and b elements now (bf16), so that no step allocates.
  void reserve(std::size_t a, std::size_t b) const {
    if (!bf16) return;
    if (scratch_->op[0].size() < a) scratch_->op[0].resize(a);
    if (scratch_->op[1].size() < b) scratch_->op[1].resize(b);
  }

  void operator()(bool trans_a, bool trans_b, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t K, float alpha,
                  const float* A, std::ptrdiff_t lda, const float* B, std::ptrdiff_t ldb, float beta, float* C,
                  std::ptrdiff_t ldc, gemm_reuse r = {}) const {
    if (bf16) {
      const std::size_t na = operand_span(trans_a ? K : M, trans_a ? M : K, lda);
      const std::size_t nb = operand_span(trans_b ? N : K, trans_b ? K : N, ldb);
      A = rounded_a(A, na, r.same_a);
      if (r.keep_a)
        for (std::size_t i = 0; i < na; ++i) r.keep_a[i] = hcomm::bf16(A[i]);
      B = r.kept_b ? widened(scratch_->op[1], r.kept_b, nb) : rounded(scratch_->op[1], B, nb);
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B,
                static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
  }

 private:
  // The two rounded operands, grown as needed, and which A (pointer, extent) op[0] holds
  // (shared by copies; one thread at a time).
  struct scratch {
    std::array<std::vector<float>, 2> op;
    const float* a_of = nullptr;
    std::size_t a_span = 0;
  };
  std::shared_ptr<scratch> scratch_ = std::make_shared<scratch>();

  // A's rounding: the one op[0] holds where the caller says A is the previous call's (same_a)
  // and pointer and extent agree, else a fresh one (gemm_cublas.hpp's converted_a).
  const float* rounded_a(const float* x, std::size_t n, bool same_a) const {
    if (same_a && scratch_->a_of == x && scratch_->a_span == n) return scratch_->op[0].data();
    scratch_->a_of = x;
    scratch_->a_span = n;
    return rounded(scratch_->op[0], x, n);
  }
  static const float* rounded(std::vector<float>& r, const float* x, std::size_t n) {
    if (r.size() < n) r.resize(n);
    for (std::size_t i = 0; i < n; ++i) r[i] = hcomm::round_to_bf16(x[i]);
    return r.data();
  }
  static const float* widened(std::vector<float>& r, const hcomm::bf16* x, std::size_t n) {
    if (r.size() < n) r.resize(n);
    for (std::size_t i = 0; i < n; ++i) r[i] = static_cast<float>(x[i]);
    return r.data();
  }
};

}  // namespace gpt
