// examples/gpt/portable/embedding.hpp: the token + position embedding, forward and backward, as
// flat kernels of the execution model, written once for every executor, with model.hpp's
// arithmetic in model.hpp's order (so the results are its bits).
//
//   ex.for_each(N * C, gpt::portable::embedding_forward{x, tokens, wte, wpe, T, C, v0, Vl});
//   const auto buckets = gpt::portable::token_buckets(tokens, N, v0, Vl);      // on the host
//   ex.for_each(Vl * C, gpt::portable::embedding_backward_wte{dwte, d, starts, rows, C});
//   ex.for_each(T * C, gpt::portable::embedding_backward_wpe{dwpe, d, N / T, T, C});
//
// The token gradient is a gather, not a scatter: each (row v, channel c) of dwte sums the
// gradient rows of the tokens equal to v, found through a counting sort of the positions by
// token (token_buckets: stable, so in position order). No atomics, and the same order as
// model.hpp's serial loop. Vocabulary-parallel: this shard holds token rows [v0, v0 + Vl);
// other tokens embed to 0 here (the TP all-reduce adds the shard that has them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hcomm/core/macros.hpp"

namespace gpt::portable {

// x[n, c] = wte[tokens[n] - v0, c] (0 outside the shard) + wpe[n % T, c] (wpe null: none, as NeoX).
struct embedding_forward {
  float* x;
  const int* tokens;
  const float* wte;
  const float* wpe;
  int T, C, v0, Vl;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t n = i / static_cast<std::size_t>(C), c = i % static_cast<std::size_t>(C);
    const int v = tokens[n] - v0;
    float e = v >= 0 && v < Vl ? wte[static_cast<std::size_t>(v) * C + c] : 0.f;
    if (wpe != nullptr) e += wpe[(n % static_cast<std::size_t>(T)) * C + c];
    x[i] = e;
  }
};

// Positions grouped by token: rows[starts[v] .. starts[v+1]) are the n with tokens[n] == v0 + v,
// in increasing n.
struct token_bucket_index {
  std::vector<std::int32_t> starts, rows;
};
inline token_bucket_index token_buckets(const int* tokens, std::size_t N, int v0, int Vl) {
  token_bucket_index b;
  b.starts.assign(static_cast<std::size_t>(Vl) + 1, 0);
  for (std::size_t n = 0; n < N; ++n) {
    const int v = tokens[n] - v0;
    if (v >= 0 && v < Vl) ++b.starts[static_cast<std::size_t>(v) + 1];
  }
  for (int v = 0; v < Vl; ++v) b.starts[static_cast<std::size_t>(v) + 1] += b.starts[static_cast<std::size_t>(v)];
  b.rows.resize(static_cast<std::size_t>(b.starts.back()));
  std::vector<std::int32_t> next(b.starts.begin(), b.starts.end() - 1);
  for (std::size_t n = 0; n < N; ++n) {
    const int v = tokens[n] - v0;
    if (v >= 0 && v < Vl) b.rows[static_cast<std::size_t>(next[static_cast<std::size_t>(v)]++)] = static_cast<std::int32_t>(n);
  }
  return b;
}

// dwte[v, c] += the gradient rows d[n, c] of the positions of token v0 + v, in position order.
struct embedding_backward_wte {
  float* dwte;
  const float* d;
  const std::int32_t* starts;
  const std::int32_t* rows;
  int C;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t v = i / static_cast<std::size_t>(C), c = i % static_cast<std::size_t>(C);
    float acc = dwte[i];
    for (std::int32_t k = starts[v]; k < starts[v + 1]; ++k) acc += d[static_cast<std::size_t>(rows[k]) * C + c];
    dwte[i] = acc;
  }
};

// dwpe[t, c] += d[(s T + t), c] over the S sequences, in sequence order.
struct embedding_backward_wpe {
  float* dwpe;
  const float* d;
  int S, T, C;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t t = i / static_cast<std::size_t>(C), c = i % static_cast<std::size_t>(C);
    float acc = dwpe[i];
    for (int s = 0; s < S; ++s) acc += d[(static_cast<std::size_t>(s) * T + t) * C + c];
    dwpe[i] = acc;
  }
};

}  // namespace gpt::portable
