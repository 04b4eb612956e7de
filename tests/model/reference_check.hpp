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
// Layout: b"GPTDBG01", int32[16] header (version, arch, V, T, L, C, NH, rot_dim, B, steps,
// warmup, bert: post_ln and the mask seed), float32[8] (lr, min_lr_frac, weight_decay, beta1,
// beta2, eps, grad_clip, neox: rotary_pct / bert: mask_rate), inputs, targets (bert: -1 where
// not predicted), the parameters in global_specs order, logits, loss, gradients, losses.
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

#ifndef GPT_TEST_DATA_DIR
#error "GPT_TEST_DATA_DIR must point at tests/model/data"
#endif

namespace gpt_test {

struct debug_state {
  gpt::config cfg;
  int B = 0, T = 0, steps = 0;
  std::uint64_t mask_seed = 0;  // bert
  std::vector<int> inputs, targets;
  std::vector<std::vector<float>> params, grads;
  std::vector<float> logits, losses;
  float loss = 0.f;
};

template <class T>
void read_into(std::ifstream& f, T* p, std::size_t n) {
  f.read(reinterpret_cast<char*>(p), static_cast<std::streamsize>(n * sizeof(T)));
  if (!f) throw std::runtime_error("debug state truncated");
}

inline debug_state load(const std::string& name) {
  const std::string path = std::string(GPT_TEST_DATA_DIR) + "/debug_" + name + ".bin";
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path + " (run /usr/bin/python3 scripts/reference_{gpt,bert}.py)");
  char magic[8];
  read_into(f, magic, 8);
  if (std::memcmp(magic, "GPTDBG01", 8) != 0) throw std::runtime_error(path + ": bad magic");
  std::int32_t h[16];
  float fl[8];
  read_into(f, h, 16);
  read_into(f, fl, 8);
  debug_state s;
  gpt::config& c = s.cfg;
  c.arch = h[1] == 0 ? gpt::arch_kind::gpt2 : h[1] == 1 ? gpt::arch_kind::neox : gpt::arch_kind::bert;
  c.vocab = h[2]; c.block = h[3]; c.layers = h[4]; c.channels = h[5]; c.heads = h[6];
  s.B = h[8]; s.T = h[3]; s.steps = h[9];
  c.batch = s.B; c.steps = s.steps; c.warmup = h[10];
  c.lr = fl[0]; c.min_lr_frac = fl[1]; c.weight_decay = fl[2]; c.beta1 = fl[3]; c.beta2 = fl[4]; c.eps = fl[5];
  c.grad_clip = fl[6];
  if (c.is_bert()) {
    c.post_ln = h[11] != 0;
    c.mask_rate = fl[7];
    s.mask_seed = static_cast<std::uint64_t>(h[12]);
  } else {
    c.rotary_pct = fl[7];
  }
  REQUIRE(c.rot_dim() == h[7]);
  const std::size_t BT = static_cast<std::size_t>(s.B) * s.T;
  s.inputs.resize(BT);
  s.targets.resize(BT);
  read_into(f, s.inputs.data(), BT);
  read_into(f, s.targets.data(), BT);
  std::int32_t np = 0;
  read_into(f, &np, 1);
  const auto specs = gpt::global_specs(c);
  REQUIRE(np == static_cast<std::int32_t>(specs.size()));
  for (const auto& sp : specs) {
    s.params.emplace_back(static_cast<std::size_t>(sp.numel()));
    read_into(f, s.params.back().data(), s.params.back().size());
  }
  s.logits.resize(BT * c.vocab);
  read_into(f, s.logits.data(), s.logits.size());
  read_into(f, &s.loss, 1);
  for (const auto& sp : specs) {
    s.grads.emplace_back(static_cast<std::size_t>(sp.numel()));
    read_into(f, s.grads.back().data(), s.grads.back().size());
  }
  s.losses.resize(s.steps);
  read_into(f, s.losses.data(), s.losses.size());
  return s;
}

struct cmp {
  double max_abs = 0, rel_l2 = 0;
  std::size_t bad = 0;
};
// Elementwise |a - b| <= atol + rtol |b| (bad counts the others) and the relative L2 error.
inline cmp compare(const float* a, const float* b, std::size_t n, double atol, double rtol) {
  cmp r;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    r.max_abs = std::max(r.max_abs, d);
    if (!(d <= atol + rtol * std::fabs(static_cast<double>(b[i])))) ++r.bad;
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  r.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return r;
}

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
