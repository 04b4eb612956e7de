// examples/gpt/portable/elementwise.hpp: the model's small element-wise and per-column layers as
// flat kernels of the execution model (one index per element; sums down the columns in two
// passes, see column_partials), written once for every executor with kernels.hpp's
// arithmetic (element-wise: its bits).
//
//   ex.for_each(n, gpt::portable::fill{x, 0.f});
//   ex.for_each(n, gpt::portable::scale{x, f});                 // x *= f
//   ex.for_each(n, gpt::portable::residual{out, a, b});         // out = a + b
//   ex.for_each(n, gpt::portable::add_into{out, a});            // out += a
//   ex.for_each(N * C, gpt::portable::add_bias_rows{out, bias, C});
//   gpt::portable::column_sums_add(ex, partial, acc, d, N, C);   // acc[c] += sum over rows of d
//                                        // (partial: column_sums_scratch(N, C) floats)
//   ex.for_each(n, gpt::portable::round_bf16{x});
//   ex.for_each(n, gpt::portable::to_bf16{x, w});  ex.for_each(n, gpt::portable::from_bf16{w, x});
//   ex.for_each(N * C, gpt::portable::add_positions{x, wpe, T, C});
#pragma once
#include <cstddef>

#include "hcomm/core/bfloat16.hpp"
#include "hcomm/core/half.hpp"
#include "hcomm/core/macros.hpp"

namespace gpt::portable {

struct fill {
  float* x;
  float v;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { x[i] = v; }
};

struct scale {
  float* x;
  float f;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { x[i] *= f; }
};

struct residual {
  float* out;
  const float* a;
  const float* b;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { out[i] = a[i] + b[i]; }
};

struct add_into {
  float* out;
  const float* a;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { out[i] += a[i]; }
};

// out[n, c] += bias[c].
struct add_bias_rows {
  float* out;
  const float* bias;
  int C;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { out[i] += bias[i % static_cast<std::size_t>(C)]; }
};

// Sums down the columns of [N, C] in two passes of a fixed order, so that a GPU spreads them
// over all of its SMs (one thread per column would leave most idle and wait on memory at
// N = B*T rows): the rows are cut into chunks of column_chunk, column_partials sums each
// chunk's rows in order, column_sums_finish a column's chunk sums in chunk order. With one
// chunk (N <= column_chunk) that is the serial loop's sum, bit for bit.
inline constexpr std::size_t column_chunk = 256;
HCOMM_HOST_DEVICE std::size_t column_chunks(std::size_t N) { return (N + column_chunk - 1) / column_chunk; }
// The floats of scratch column_sums_add needs for N rows of C columns.
inline std::size_t column_sums_scratch(std::size_t N, std::size_t C) { return column_chunks(N) * C; }

// partial[k*C + c] = the sum of d[n, c] over the rows n of chunk k, in order (one index per
// chunk and column: column_chunks(N) * C).
struct column_partials {
  float* partial;
  const float* d;
  std::size_t N;
  int C;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t cols = static_cast<std::size_t>(C), k = i / cols, c = i % cols;
    const std::size_t end = (k + 1) * column_chunk < N ? (k + 1) * column_chunk : N;
    float s = 0.f;
    for (std::size_t n = k * column_chunk; n < end; ++n) s += d[n * cols + c];
    partial[i] = s;
  }
};

// acc[c] += the sum of partial[k*ld + c] over the chunks k, in order (one index per column).
struct column_sums_finish {
  float* acc;
  const float* partial;
  std::size_t chunks, ld;
  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    float s = 0.f;
    for (std::size_t k = 0; k < chunks; ++k) s += partial[k * ld + c];
    acc[c] += s;
  }
};

// Both passes on the executor: acc[c] += the sum of d[n, c] over the N rows, with `partial`
// (column_sums_scratch(N, C) floats in the executor's memory) for the chunk sums.
template <class Exec>
void column_sums_add(const Exec& ex, float* partial, float* acc, const float* d, std::size_t N, int C) {
  const std::size_t k = column_chunks(N), cols = static_cast<std::size_t>(C);
  ex.for_each(k * cols, column_partials{partial, d, N, C});
  ex.for_each(cols, column_sums_finish{acc, partial, k, cols});
}

// x = x rounded to the nearest bfloat16 (ties to even), kept in float32.
struct round_bf16 {
  float* x;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { x[i] = hcomm::round_to_bf16(x[i]); }
};

// out = x as bfloat16 (nearest, ties to even): a 16-bit copy for the wire (wire.hpp); exact
// where x holds bfloat16 roundings already.
struct to_bf16 {
  const float* x;
  hcomm::bf16* out;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { out[i] = hcomm::bf16::from_bits(hcomm::to_bf16_bits(x[i])); }
};
// x = w widened to float (exact).
struct from_bf16 {
  const hcomm::bf16* w;
  float* x;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { x[i] = hcomm::bf16_bits_to_float(w[i].bits); }
};

// x[n, c] += wpe[n % T, c].
struct add_positions {
  float* x;
  const float* wpe;
  int T, C;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t n = i / static_cast<std::size_t>(C), c = i % static_cast<std::size_t>(C);
    x[i] += wpe[(n % static_cast<std::size_t>(T)) * C + c];
  }
};

}  // namespace gpt::portable
