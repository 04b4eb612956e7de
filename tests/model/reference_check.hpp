// tests/model/reference_check.hpp: the PyTorch debug states of tests/model/data (written by
// scripts/reference_gpt.py and scripts/reference_bert.py) and the check of the C++ model
// against one of them, tensor by tensor.
//
//   gpt_test::check_reference("bert");                          // data/debug_bert.bin
//   gpt_test::debug_state s = gpt_test::load("gpt2");
//
// Tolerances (fp32, different summation orders than PyTorch's kernels):
//   logits   |a - b| <= 1e-6 + 1e-5 |b|
//   loss     relative 1e-6
//   grads    |a - b| <= 2e-7 + 1e-3 |b| elementwise, and relative L2 error <= 2e-6 per tensor
//   losses   relative 1e-5 over 10 steps (the updates compound any error)
// Each bound sits about an order of magnitude above fp32 reordering error at these sizes, so
// a real mismatch (a wrong term, a transposed weight) cannot hide under it.
//
// The states' layout and loader: reference_state.hpp.
#pragma once
#include <algorithm>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "config.hpp"
#include "model.hpp"
#include "optim.hpp"
#include "params.hpp"
#include "reference_state.hpp"

#ifndef GPT_TEST_DATA_DIR
#error "GPT_TEST_DATA_DIR must point at tests/model/data"
#endif

namespace gpt_test {

inline debug_state load(const std::string& name) { return load(name, GPT_TEST_DATA_DIR); }

// Model: gpt::stage_model (the CPU backend) or a basic_stage_model of another backend.
template <class Model = gpt::stage_model>
void check_reference(const std::string& arch) {
  const debug_state s = load(arch);
  gpt::solo_tp tp;
  // the loss is the mean over predicted positions: every token (GPT), the masked ones (BERT)
  int predicted = 0;
  for (int t : s.targets) predicted += t >= 0;
  // One micro-batch of the whole batch on a single stage, and the same batch as two
  // micro-batches (gradient accumulation must give the same gradients).
  for (int micro : {s.B, s.B / 2}) {
    DYNAMIC_SECTION(arch << " micro-batch " << micro) {
      const int M = s.B / micro;
      const std::int64_t N = static_cast<std::int64_t>(micro) * s.T;
      Model m(s.cfg, {}, micro, M);
      m.load_global(s.params);
      const float scale = 1.f / static_cast<float>(predicted);

      // logits and loss
      double loss_sum = 0;
      for (int mb = 0; mb < M; ++mb) {
        loss_sum += m.forward(mb, s.inputs.data() + mb * N, s.targets.data() + mb * N, tp, scale, false);
        const cmp c = compare(m.logits(), s.logits.data() + mb * N * s.cfg.vocab, N * s.cfg.vocab, 1e-6, 1e-5);
        INFO("logits mb " << mb << " max abs " << c.max_abs << " rel l2 " << c.rel_l2);
        CHECK(c.bad == 0);
        // correct(): the predicted positions whose target has the largest logit
        std::int64_t hits = 0;
        for (std::int64_t n = 0; n < N; ++n) {
          const int t = s.targets[static_cast<std::size_t>(mb * N + n)];
          if (t < 0) continue;
          const float* z = m.logits() + n * s.cfg.vocab;
          hits += *std::max_element(z, z + s.cfg.vocab) == z[t];
        }
        CHECK(m.correct() == hits);
      }
      const double loss = loss_sum / predicted;
      INFO("loss " << loss << " vs " << s.loss);
      CHECK(std::fabs(loss - s.loss) <= 1e-6 * std::fabs(s.loss));

      // gradients
      m.zero_grads();
      for (int mb = 0; mb < M; ++mb) {
        m.forward(mb, s.inputs.data() + mb * N, s.targets.data() + mb * N, tp, scale, true);
        m.backward(mb, s.inputs.data() + mb * N, tp);
      }
      for (const auto& t : m.tensors()) {
        const auto& sp = m.specs()[t.global];
        const cmp c = compare(m.grads.data() + t.offset, s.grads[t.global].data(), t.numel, 2e-7, 1e-3);
        INFO("grad " << sp.name << " max abs " << c.max_abs << " rel l2 " << c.rel_l2 << " bad " << c.bad);
        CHECK(c.bad == 0);
        CHECK(c.rel_l2 <= 2e-6);
      }

      // 10 AdamW steps on the same batch, with clipping and the warm-up + cosine schedule
      m.load_global(s.params);
      gpt::basic_adamw<typename Model::ops_type> opt(m.params.size(), m.ops());
      for (int step = 0; step < s.steps; ++step) {
        m.zero_grads();
        double ls = 0;
        for (int mb = 0; mb < M; ++mb) {
          ls += m.forward(mb, s.inputs.data() + mb * N, s.targets.data() + mb * N, tp, scale, true);
          m.backward(mb, s.inputs.data() + mb * N, tp);
        }
        const double l = ls / predicted;
        INFO("step " << step << " loss " << l << " vs " << s.losses[step]);
        CHECK(std::fabs(l - s.losses[step]) <= 1e-5 * std::fabs(s.losses[step]));
        const double norm = std::sqrt(m.local_grad_sq());
        if (s.cfg.grad_clip > 0 && norm > s.cfg.grad_clip)
          m.scale_grads(static_cast<float>(s.cfg.grad_clip / (norm + 1e-6)));
        opt.step(m, gpt::lr_at(s.cfg, step), step + 1);
      }
    }
  }
}


}  // namespace gpt_test
