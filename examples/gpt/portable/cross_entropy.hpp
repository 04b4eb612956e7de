// examples/gpt/portable/cross_entropy.hpp: softmax cross-entropy fused with its gradient, as
// llm.c fuses the classifier's softmax, as a team kernel of the execution model (a team per
// row), written once for every executor. The single-shard form of model.hpp's vocab-parallel
// cross_entropy (TP 1): the same formulas, row reductions in the collectives' fixed order.
//
//   ex.launch(N, 128, gpt::portable::cross_entropy{logits, losses, targets, V, scale, true});
//   // losses[n] = -log softmax(logits[n])[targets[n]]  (0 where targets[n] < 0: not predicted)
//   // logits[n, :] = (softmax - onehot) * scale            (0 where not predicted)
//
// The vocabulary-parallel form, as flat kernels (one index per row, model.hpp's loops and
// their order), for the steps between the TP exchanges of model.hpp's cross_entropy:
//
//   ex.for_each(N, gpt::portable::ce_row_max{mx, z, V});
//   ex.for_each(N, gpt::portable::ce_sums{sums, z, mx, targets, N, V, v0});
//   ex.for_each(N, gpt::portable::ce_grad{z, mx, sums, targets, V, v0, scale});
#pragma once
#include <cmath>
#include <cstddef>

#include "hcomm/core/macros.hpp"
#include "hcomm/exec/team.hpp"

namespace gpt::portable {

struct cross_entropy {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::cross_entropy";
  float* z;            // [N, V] logits in, d loss / d logits out (when want_grad)
  float* losses;       // [N]
  const int* targets;  // [N], -1: no loss at this row
  int V;
  float scale;         // d loss / d (row loss): 1 / (predicted positions of the batch)
  bool want_grad;
  std::size_t scratch_bytes(int) const { return 0; }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t n = team.league_rank(), row = n * static_cast<std::size_t>(V);
    const int T = team.size();
    const int target = targets[n];
    if (target < 0) {  // uniform: the whole team takes this branch
      team.for_threads([&](int t) {
        if (want_grad)
          for (int v = t; v < V; v += T) z[row + v] = 0.f;
        if (t == 0) losses[n] = 0.f;
      });
      return;
    }
    auto part = team.template per_thread<float>();
    team.for_threads([&](int t) {
      float m = -INFINITY;
      for (int v = t; v < V; v += T) m = z[row + v] > m ? z[row + v] : m;
      part[t] = m;
    });
    const float m = team.reduce(part, hcomm::exec::max{});
    // Read while every phase up to the gradient's only reads z: on a GPU each thread runs this
    // line itself, and the reduction's barriers must lie between it and the phase that
    // overwrites z[row + target].
    const float zt = z[row + target];
    team.for_threads([&](int t) {
      float s = 0.f;
      for (int v = t; v < V; v += T) s += std::exp(z[row + v] - m);
      part[t] = s;
    });
    const float s = team.reduce(part, hcomm::exec::sum{});
    team.for_threads([&](int t) {
      if (t == 0) losses[n] = std::log(s) + m - zt;
      if (want_grad) {
        const float inv = 1.f / s;
        for (int v = t; v < V; v += T) z[row + v] = (std::exp(z[row + v] - m) * inv - (v == target ? 1.f : 0.f)) * scale;
      }
    });
  }
};

// mx[n] = the largest logit of row n.
struct ce_row_max {
  float* mx;
  const float* z;
  int V;
  HCOMM_HOST_DEVICE void operator()(std::size_t n) const {
    const float* r = z + n * static_cast<std::size_t>(V);
    float m = r[0];
    for (int v = 1; v < V; ++v) m = r[v] > m ? r[v] : m;
    mx[n] = m;
  }
};

// sums[n] = sum of exp(z - mx[n]) over the row, sums[N + n] = the target's logit where this
// shard [v0, v0 + V) holds it (else 0); 1 and 0 where targets[n] < 0 (not predicted).
struct ce_sums {
  float* sums;
  const float* z;
  const float* mx;
  const int* targets;
  std::size_t N;
  int V, v0;
  HCOMM_HOST_DEVICE void operator()(std::size_t n) const {
    if (targets[n] < 0) {
      sums[n] = 1.f;
      sums[N + n] = 0.f;
      return;
    }
    const float* r = z + n * static_cast<std::size_t>(V);
    float s = 0.f;
    for (int v = 0; v < V; ++v) s += std::exp(r[v] - mx[n]);
    const int t = targets[n] - v0;
    sums[n] = s;
    sums[N + n] = t >= 0 && t < V ? r[t] : 0.f;
  }
};

// z[n, :] = (softmax - onehot) * scale from the global mx and sums; 0 where not predicted.
struct ce_grad {
  float* z;
  const float* mx;
  const float* sums;
  const int* targets;
  int V, v0;
  float scale;
  HCOMM_HOST_DEVICE void operator()(std::size_t n) const {
    float* r = z + n * static_cast<std::size_t>(V);
    if (targets[n] < 0) {
      for (int v = 0; v < V; ++v) r[v] = 0.f;
      return;
    }
    const float inv = 1.f / sums[n];
    const int t = targets[n] - v0;
    for (int v = 0; v < V; ++v) r[v] = (std::exp(r[v] - mx[n]) * inv - (v == t ? 1.f : 0.f)) * scale;
  }
};

}  // namespace gpt::portable
