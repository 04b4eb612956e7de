// examples/gpt/gemm_reuse.hpp: what a caller tells a GEMM (gemm_host.hpp, gemm_cublas.hpp) so
// that its bf16 mode converts each operand to bfloat16 once, not once per GEMM that reads it.
//
//   g(false, true, N, OC, C, 1.f, x, C, W, C, 0.f, out, OC, {.keep_a = x16});   // forward
//   g(false, false, N, C, OC, 1.f, dout, OC, W, C, 0.f, dx, C);                 // backward
//   g(true, false, OC, C, N, 1.f, dout, OC, x, C, 1.f, dW, C, {.kept_b = x16, .same_a = true});
//
// In a bf16 run a linear layer's input x is an operand three times: A of the forward GEMM, B of
// the backward's weight gradient (dW += dout^T x), and its output gradient dout is A of both
// backward GEMMs. keep_a has the forward write A's conversion to caller memory as well, which
// the weight gradient later takes as kept_b; same_a has the second backward GEMM reuse the
// first's conversion of dout. fp32 mode ignores all three. A GEMM may also ignore them and
// convert afresh (the result is the same): then it ignores keep_a and kept_b both, since
// kept_b is only ever what its own keep_a wrote.
#pragma once
#include <cstddef>

#include "hcomm/core/half.hpp"

namespace gpt {

// The elements a row-major operand of `rows` rows of `cols` with leading dimension ld spans.
inline std::size_t operand_span(std::ptrdiff_t rows, std::ptrdiff_t cols, std::ptrdiff_t ld) {
  return rows > 0 && cols > 0 ? static_cast<std::size_t>((rows - 1) * ld + cols) : 0;
}

struct gemm_reuse {
  // A's bfloat16 conversion written here too (operand_span elements, the GEMM's memory space)
  hcomm::bf16* keep_a = nullptr;
  // B's conversion, as an earlier call's keep_a wrote it from the values B holds now
  const hcomm::bf16* kept_b = nullptr;
  // A is the previous call's A (pointer, extent and values): its conversion is reused
  bool same_a = false;
};

}  // namespace gpt
