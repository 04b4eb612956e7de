// examples/gpt/gemm_epilogue.hpp: the work a GEMM library may fuse into a GEMM's output, so
// that a linear layer and what follows it launch one kernel instead of two or three.
// portable_ops (ops_portable.hpp) asks for these where its Gemm is a fusing_gemm
// (gemm_cublas.hpp: cuBLASLt epilogues) and runs its own kernels otherwise; the two agree to
// float rounding (cuBLASLt's GELU is the tanh approximation, as GPT-2's, with its own
// arithmetic), not bitwise.
//
//   C = op(A) op(B), row-major [M, N]; bias has N values (one per output feature, added to
//   every row); aux is [M, N] with C's leading dimension:
//   bias:      C = op(A) op(B) + bias
//   gelu_aux:  aux = op(A) op(B) + bias (bias may be null), C = gelu(aux)
//   dgelu:     C = (op(A) op(B)) * gelu'(aux)  (backward through gelu: aux is its input)
//
//   if (g.can_fuse(gemm_epilogue::bias, false, true, M, N, K, A, lda, B, ldb, C, ldc, bias, nullptr))
//     g.fuse(gemm_epilogue::bias, false, true, M, N, K, A, lda, B, ldb, C, ldc, bias, nullptr);
//
// can_fuse decides without launching anything (so a caller times only what runs); fuse then
// runs the fused GEMM or fails with an error that says how to do without.
#pragma once
#include <concepts>
#include <cstddef>

#include "gemm_reuse.hpp"

namespace gpt {

enum class gemm_epilogue { bias, gelu_aux, dgelu };

// (reuse: the bf16 conversions kept or reused, gemm_reuse.hpp)
template <class G>
concept fusing_gemm =
    requires(const G& g, gemm_epilogue e, bool t, std::ptrdiff_t n, const float* a, float* c, gemm_reuse reuse) {
      { g.can_fuse(e, t, t, n, n, n, a, n, a, n, c, n, a, c, reuse) } -> std::same_as<bool>;
      g.fuse(e, t, t, n, n, n, a, n, a, n, c, n, a, c, reuse);
    };

}  // namespace gpt
