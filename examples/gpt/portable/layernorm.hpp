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
//   ex.for_each(C, gpt::portable::layernorm_backward_params{dw, db, dout, x, mean, rstd, N, C});
#pragma once
#include <cmath>
#include <cstddef>

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

// Flat, one index per channel c: dw[c] += sum over rows (in order) of norm * dout, db[c] +=
// sum of dout. Adjacent indices read adjacent columns (coalesced on a GPU), and the order
// is kernels.hpp's, so these sums are bitwise the host loop's.
struct layernorm_backward_params {
  float* dw;
  float* db;
  const float* dout;
  const float* x;
  const float* mean;
  const float* rstd;
  int N, C;

  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    float gw = 0.f, gb = 0.f;
    for (int n = 0; n < N; ++n) {
      const std::size_t i = static_cast<std::size_t>(n) * static_cast<std::size_t>(C) + c;
      gw += (x[i] - mean[n]) * rstd[n] * dout[i];
      gb += dout[i];
    }
    dw[c] += gw;
    db[c] += gb;
  }
};

}  // namespace gpt::portable
