// tests/model/reference_state.hpp: the PyTorch debug states of tests/model/data (written by
// scripts/reference_gpt.py and scripts/reference_bert.py), read without a test framework (the
// CUDA model test on the GPU machine, which has no Catch2, reads them too), and the
// element-wise comparison the checks use.
//
//   gpt_test::debug_state s = gpt_test::load("gpt2", dir);      // DIR/debug_gpt2.bin
//   gpt_test::cmp c = gpt_test::compare(got, want, n, atol, rtol);
//
// Layout: b"GPTDBG01", int32[16] header (version, arch, V, T, L, C, NH, rot_dim, B, steps,
// warmup, bert: post_ln and the mask seed), float32[8] (lr, min_lr_frac, weight_decay, beta1,
// beta2, eps, grad_clip, neox: rotary_pct / bert: mask_rate), inputs, targets (bert: -1 where
// not predicted), the parameters in global_specs order, logits, loss, gradients, losses.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "config.hpp"
#include "params.hpp"

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

inline debug_state load(const std::string& name, const std::string& dir) {
  const std::string path = dir + "/debug_" + name + ".bin";
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
  if (c.rot_dim() != h[7]) throw std::runtime_error(path + ": rotary dims differ from the configuration's");
  const std::size_t BT = static_cast<std::size_t>(s.B) * s.T;
  s.inputs.resize(BT);
  s.targets.resize(BT);
  read_into(f, s.inputs.data(), BT);
  read_into(f, s.targets.data(), BT);
  std::int32_t np = 0;
  read_into(f, &np, 1);
  const auto specs = gpt::global_specs(c);
  if (np != static_cast<std::int32_t>(specs.size())) throw std::runtime_error(path + ": parameter count differs");
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


}  // namespace gpt_test
