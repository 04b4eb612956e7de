// examples/gpt/portable/cross_entropy.hpp: softmax cross-entropy fused with its gradient, as
// llm.c fuses the classifier's softmax, as a team kernel of the execution model (a team per
// row), written once for every executor. The single-shard form of model.hpp's vocab-parallel
// cross_entropy (TP 1): the same formulas, row reductions in the collectives' fixed order.
//
//   ex.launch(N, 128, gpt::portable::cross_entropy{logits, losses, targets, V, scale, true});
//   // losses[n] = -log softmax(logits[n])[targets[n]]  (0 where targets[n] < 0: not predicted)
//   // logits[n, :] = (softmax - onehot) * scale            (0 where not predicted)
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
    team.for_threads([&](int t) {
      float s = 0.f;
      for (int v = t; v < V; v += T) s += std::exp(z[row + v] - m);
      part[t] = s;
    });
    const float s = team.reduce(part, hcomm::exec::sum{});
    const float zt = z[row + target];  // read by the team before the next phase overwrites it
    team.for_threads([&](int t) {
      if (t == 0) losses[n] = std::log(s) + m - zt;
      if (want_grad) {
        const float inv = 1.f / s;
        for (int v = t; v < V; v += T) z[row + v] = (std::exp(z[row + v] - m) * inv - (v == target ? 1.f : 0.f)) * scale;
      }
    });
  }
};

}  // namespace gpt::portable
