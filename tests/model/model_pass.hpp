// One training pass of a stage model of any backend, for comparing backends: two micro-batches
// of forward (the loss and the logits) and forward + backward (the gradients and their sum of
// squares) from the model's own initialisation, results copied to the host; and a few AdamW
// steps on one batch (train_losses: clipping, the schedule, bf16 master weights). Also the
// small configurations and random batches the backend comparisons share; and replay(), a
// PyTorch debug state on any backend (the GPU's comparison with PyTorch).
//
//   const auto c = gpt_test::small_config(gpt::arch_kind::gpt2, false, false);
//   const auto b = gpt_test::random_batch(c, 2 * micro * c.block, 7);
//   const gpt_test::pass p = gpt_test::run_pass<gpt::stage_model>(c, b.tokens, b.targets, micro);
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "config.hpp"
#include "model.hpp"
#include "optim.hpp"
#include "reference_state.hpp"

namespace gpt_test {

struct pass {
  double loss = 0, grad_sq = 0;
  std::vector<float> logits, grads;
};

// hook: a block_ops the model asks first (model.hpp), or none.
template <class Model>
pass run_pass(const gpt::config& c, const std::vector<int>& tokens, const std::vector<int>& targets, int micro,
              typename Model::ops_type ops = {}, gpt::block_ops* hook = nullptr) {
  const int M = 2;
  Model m(c, {}, micro, M, ops);
  m.init_params();
  if (hook) m.set_block_ops(hook);
  gpt::solo_tp tp;
  const std::int64_t N = static_cast<std::int64_t>(micro) * c.block;
  int predicted = 0;
  for (int t : targets) predicted += t >= 0;
  const float scale = 1.f / static_cast<float>(predicted);
  pass r;
  m.zero_grads();
  for (int mb = 0; mb < M; ++mb) {
    r.loss += m.forward(mb, tokens.data() + mb * N, targets.data() + mb * N, tp, scale, false);
    r.logits.insert(r.logits.end(), m.logits(), m.logits() + N * m.local_vocab());
    m.forward(mb, tokens.data() + mb * N, targets.data() + mb * N, tp, scale, true);
    m.backward(mb, tokens.data() + mb * N, tp);
  }
  r.grads = m.grads_host();
  r.grad_sq = m.local_grad_sq();
  return r;
}

// The mean loss of each of `steps` AdamW steps on the same two micro-batches (gradient
// clipping at 1 and the warm-up + cosine schedule of c), then the final weights.
template <class Model>
std::vector<double> train_losses(const gpt::config& c, const std::vector<int>& tokens, const std::vector<int>& targets,
                                 int micro, int steps, std::vector<float>* weights = nullptr,
                                 typename Model::ops_type ops = {}) {
  const int M = 2;
  Model m(c, {}, micro, M, ops);
  m.init_params();
  gpt::basic_adamw<typename Model::ops_type> opt(m.params.size(), m.ops());
  opt.adopt_master(m);
  gpt::solo_tp tp;
  const std::int64_t N = static_cast<std::int64_t>(micro) * c.block;
  int predicted = 0;
  for (int t : targets) predicted += t >= 0;
  const float scale = 1.f / static_cast<float>(predicted);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    m.zero_grads();
    double l = 0;
    for (int mb = 0; mb < M; ++mb) {
      l += m.forward(mb, tokens.data() + mb * N, targets.data() + mb * N, tp, scale, true);
      m.backward(mb, tokens.data() + mb * N, tp);
    }
    losses.push_back(l / predicted);
    const double norm = std::sqrt(m.local_grad_sq());
    if (norm > 1.0) m.scale_grads(static_cast<float>(1.0 / (norm + 1e-6)));
    opt.step(m, gpt::lr_at(c, step), step + 1);
  }
  if (weights) *weights = m.params_host();
  return losses;
}

inline gpt::config small_config(gpt::arch_kind a, bool post_ln, bool bf16) {
  gpt::config c;
  c.arch = a;
  c.layers = 2;
  c.channels = 64;
  c.heads = 4;
  c.block = 40;  // not a multiple of the attention tiles (32)
  c.post_ln = post_ln;
  c.bf16 = bf16;
  if (a == gpt::arch_kind::neox) c.rotary_pct = 0.5f;
  if (c.is_bert()) c.vocab = 264;  // bytes and the special tokens
  return c;
}

// The model variants the backend comparisons run: GPT-2, NeoX (rotary), BERT post-LN and
// pre-LN, and GPT-2 in bf16.
struct variant {
  const char* name;
  gpt::arch_kind arch;
  bool post_ln, bf16;
};
inline constexpr variant variants[] = {{"gpt2", gpt::arch_kind::gpt2, false, false},
                                       {"neox", gpt::arch_kind::neox, false, false},
                                       {"bert post-LN", gpt::arch_kind::bert, true, false},
                                       {"bert pre-LN", gpt::arch_kind::bert, false, false},
                                       {"gpt2 bf16", gpt::arch_kind::gpt2, false, true}};

struct batch {
  std::vector<int> tokens, targets;
};
// n positions; BERT predicts some of them only (targets < 0 elsewhere), GPT every one.
inline batch random_batch(const gpt::config& c, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  batch b{std::vector<int>(n), std::vector<int>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    b.tokens[i] = static_cast<int>(rng() % static_cast<unsigned>(c.vocab));
    b.targets[i] = c.is_bert() && rng() % 4 != 0 ? -1 : static_cast<int>(rng() % 256);
  }
  return b;
}

// ||a - b|| / ||b||
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double e = static_cast<double>(a[i]) - b[i];
    d += e * e;
    n += static_cast<double>(b[i]) * b[i];
  }
  return a.size() != b.size() ? INFINITY : n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

// A PyTorch debug state (reference_state.hpp) replayed on a backend: its weights loaded on one
// stage, the whole batch as one micro-batch; the loss, the logits, each tensor's gradient in
// global order, and the losses of the state's AdamW steps (clipping, schedule) on that batch.
struct reference_run {
  double loss = 0;
  std::vector<float> logits;
  std::vector<std::vector<float>> grads;
  std::vector<double> losses;
};
template <class Model>
reference_run replay(const debug_state& s, typename Model::ops_type ops = {}) {
  Model m(s.cfg, {}, s.B, 1, ops);
  m.load_global(s.params);
  gpt::solo_tp tp;
  int predicted = 0;
  for (int t : s.targets) predicted += t >= 0;
  const float scale = 1.f / static_cast<float>(predicted);
  const std::int64_t N = static_cast<std::int64_t>(s.B) * s.T;
  reference_run r;
  r.loss = m.forward(0, s.inputs.data(), s.targets.data(), tp, scale, false) / predicted;
  r.logits.assign(m.logits(), m.logits() + N * m.local_vocab());
  m.zero_grads();
  m.forward(0, s.inputs.data(), s.targets.data(), tp, scale, true);
  m.backward(0, s.inputs.data(), tp);
  const std::vector<float> g = m.grads_host();
  r.grads.resize(s.grads.size());
  for (const auto& t : m.tensors()) r.grads[t.global].assign(g.begin() + t.offset, g.begin() + t.offset + t.numel);
  gpt::basic_adamw<typename Model::ops_type> opt(m.params.size(), m.ops());
  for (int step = 0; step < s.steps; ++step) {
    m.zero_grads();
    r.losses.push_back(m.forward(0, s.inputs.data(), s.targets.data(), tp, scale, true) / predicted);
    m.backward(0, s.inputs.data(), tp);
    const double norm = std::sqrt(m.local_grad_sq());
    if (s.cfg.grad_clip > 0 && norm > s.cfg.grad_clip) m.scale_grads(static_cast<float>(s.cfg.grad_clip / (norm + 1e-6)));
    opt.step(m, gpt::lr_at(s.cfg, step), step + 1);
  }
  return r;
}
// The replay's distance to the state: relative loss error, relative L2 error of the logits,
// the largest relative L2 error of a tensor's gradient, the largest relative error of a step's
// loss. The GPU check's bounds (llm.c's test: loss 1e-5, gradients about 1e-4): see within().
struct reference_errors {
  double loss = 0, logits = 0, grads = 0, losses = 0;
  bool within() const { return loss <= 1e-5 && logits <= 1e-5 && grads <= 1e-4 && losses <= 1e-5; }
};
inline reference_errors errors_of(const reference_run& r, const debug_state& s) {
  reference_errors e;
  e.loss = std::fabs(r.loss - s.loss) / std::fabs(s.loss);
  e.logits = rel_l2(r.logits, s.logits);
  for (std::size_t i = 0; i < s.grads.size(); ++i) e.grads = std::fmax(e.grads, rel_l2(r.grads[i], s.grads[i]));
  for (std::size_t i = 0; i < s.losses.size(); ++i)
    e.losses = i < r.losses.size() ? std::fmax(e.losses, std::fabs(r.losses[i] - s.losses[i]) / std::fabs(s.losses[i]))
                                   : INFINITY;
  return e;
}

}  // namespace gpt_test
