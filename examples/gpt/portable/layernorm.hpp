// examples/gpt/portable/layernorm.hpp: LayerNorm forward and backward as kernels of the
// execution model (hcomm/exec/team.hpp), written once for every executor: host, host_check
// (CI runs them there against kernels.hpp), CUDA and Kokkos. Same arithmetic as
// k::layernorm_forward/backward (eps 1e-5, biased variance); the row sums are team
// reductions in the collectives' fixed order, so they differ from the serial loop's in the
// last bits and are the same on every backend.
//
//   ex.launch(N, 128, gpt::portable::layernorm_forward{out, mean, rstd, x, w, b, C});
//   ex.launch(N, 128, gpt::portable::residual_layernorm_forward{res, out, mean, rstd, x, y, w, b, C});
//   ex.launch(N, 128, gpt::portable::layernorm_backward_input{dx, dout, x, w, mean, rstd, C});
//   gpt::portable::layernorm_backward_params(ex, partial, dw, db, dout, x, mean, rstd, N, C);
//                                   // (partial: layernorm_params_scratch(N, C) floats)
#pragma once
#include <cmath>
#include <cstddef>

#include "elementwise.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/team.hpp"

namespace gpt::portable {

namespace layernorm_detail {
// LayerNorm of row n of src into out (mean, rstd kept), by the team. sum(t) gives thread t's
// share of the row's sum over c = t, t + T, ... and may write src[c] there first (the fused
// residual): the later phases read back only what the same thread wrote.
template <class Team, class Sum>
HCOMM_HOST_DEVICE void row(Team& team, const Sum& sum, const float* src, float* out, float* mean, float* rstd,
                           const float* w, const float* b, int C) {
  const std::size_t n = team.league_rank(), row = n * static_cast<std::size_t>(C);
  const int T = team.size();
  auto part = team.template per_thread<float>();
  team.for_threads([&](int t) { part[t] = sum(t); });
  const float m = team.reduce(part, hcomm::exec::sum{}) / static_cast<float>(C);
  team.for_threads([&](int t) {
    float s = 0.f;
    for (int c = t; c < C; c += T) {
      const float d = src[row + c] - m;
      s += d * d;
    }
    part[t] = s;
  });
  const float var = team.reduce(part, hcomm::exec::sum{}) / static_cast<float>(C);
  const float s = 1.f / std::sqrt(var + 1e-5f);
  team.for_threads([&](int t) {
    for (int c = t; c < C; c += T) out[row + c] = (src[row + c] - m) * s * w[c] + b[c];
    if (t == 0) {
      mean[n] = m;
      rstd[n] = s;
    }
  });
}
}  // namespace layernorm_detail

// One team per row n: out[n, :] = (x - mean) * rstd * w + b; mean[n], rstd[n] for backward.
struct layernorm_forward {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::layernorm_forward";
  float* out;
  float* mean;
  float* rstd;
  const float* x;
  const float* w;
  const float* b;
  int C;
  std::size_t scratch_bytes(int) const { return 0; }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t row = team.league_rank() * static_cast<std::size_t>(C);
    const int T = team.size();
    layernorm_detail::row(
        team,
        [&](int t) {
          float s = 0.f;
          for (int c = t; c < C; c += T) s += x[row + c];
          return s;
        },
        x, out, mean, rstd, w, b, C);
  }
};

// One team per row n, the residual add fused in: res[n, :] = a + b, then out = LN(res) as
// layernorm_forward (GPT-2's r1 = x + attn, ln2 = LN(r1) in one pass over the row).
struct residual_layernorm_forward {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::residual_layernorm_forward";
  float* res;
  float* out;
  float* mean;
  float* rstd;
  const float* a;
  const float* b_in;
  const float* w;
  const float* b;
  int C;
  std::size_t scratch_bytes(int) const { return 0; }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t row = team.league_rank() * static_cast<std::size_t>(C);
    const int T = team.size();
    layernorm_detail::row(
        team,
        [&](int t) {
          float s = 0.f;
          for (int c = t; c < C; c += T) {
            const float r = a[row + c] + b_in[row + c];
            res[row + c] = r;
            s += r;
          }
          return s;
        },
        res, out, mean, rstd, w, b, C);
  }
};

// One team per row n: dx[n, :] += (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd,
// dnorm = w * dout.
struct layernorm_backward_input {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::layernorm_backward_input";
  float* dx;
  const float* dout;
  const float* x;
  const float* w;
  const float* mean;
  const float* rstd;
  int C;
  std::size_t scratch_bytes(int) const { return 0; }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t n = team.league_rank(), row = n * static_cast<std::size_t>(C);
    const int T = team.size();
    const float m = mean[n], s = rstd[n];
    auto a = team.template per_thread<float>();
    auto b = team.template per_thread<float>();
    team.for_threads([&](int t) {
      float sa = 0.f, sb = 0.f;
      for (int c = t; c < C; c += T) {
        const float dnorm = w[c] * dout[row + c];
        sa += dnorm;
        sb += dnorm * (x[row + c] - m) * s;
      }
      a[t] = sa;
      b[t] = sb;
    });
    const float dmean = team.reduce(a, hcomm::exec::sum{}) / static_cast<float>(C);
    const float dnorm_mean = team.reduce(b, hcomm::exec::sum{}) / static_cast<float>(C);
    team.for_threads([&](int t) {
      for (int c = t; c < C; c += T) {
        const float norm = (x[row + c] - m) * s;
        dx[row + c] += (w[c] * dout[row + c] - dmean - norm * dnorm_mean) * s;
      }
    });
  }
};

// The weight and bias gradients' first pass (elementwise.hpp's column sums): for the rows n
// of chunk k in order, partial[k*2C + c] = sum of norm * dout, partial[k*2C + C + c] = sum
// of dout (one index per chunk and channel: column_chunks(N) * C). column_sums_finish then
// adds them to dw and db; with one chunk, kernels.hpp's sums bit for bit. Adjacent indices
// read adjacent columns (coalesced on a GPU).
struct layernorm_params_partials {
  float* partial;
  const float* dout;
  const float* x;
  const float* mean;
  const float* rstd;
  std::size_t N;
  int C;

  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t cols = static_cast<std::size_t>(C), k = i / cols, c = i % cols;
    const std::size_t end = (k + 1) * column_chunk < N ? (k + 1) * column_chunk : N;
    float gw = 0.f, gb = 0.f;
    for (std::size_t n = k * column_chunk; n < end; ++n) {
      const std::size_t e = n * cols + c;
      gw += (x[e] - mean[n]) * rstd[n] * dout[e];
      gb += dout[e];
    }
    partial[k * 2 * cols + c] = gw;
    partial[k * 2 * cols + cols + c] = gb;
  }
};

// The floats of scratch layernorm_backward_params needs for N rows of C channels: each
// chunk's sums for dw and db side by side.
inline std::size_t layernorm_params_scratch(std::size_t N, std::size_t C) { return column_sums_scratch(N, 2 * C); }

// Both passes on the executor: dw[c] += sum over the N rows of norm * dout, db[c] += sum of
// dout, with `partial` (layernorm_params_scratch(N, C) floats in the executor's memory).
template <class Exec>
void layernorm_backward_params(const Exec& ex, float* partial, float* dw, float* db, const float* dout, const float* x,
                               const float* mean, const float* rstd, std::size_t N, int C) {
  const std::size_t k = column_chunks(N), cols = static_cast<std::size_t>(C);
  ex.for_each(k * cols, layernorm_params_partials{partial, dout, x, mean, rstd, N, C});
  ex.for_each(cols, column_sums_finish{dw, partial, k, 2 * cols});
  ex.for_each(cols, column_sums_finish{db, partial + cols, k, 2 * cols});
}

}  // namespace gpt::portable
