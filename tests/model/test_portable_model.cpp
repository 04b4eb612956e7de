// The whole model on the portable backend (examples/gpt/ops_portable.hpp: the trainer's layers
// as kernels of the execution model, what the GPU runs, GEMMs by OpenBLAS): under host-check
// (shuffled threads, shadowed scratch) it matches the PyTorch debug states with the CPU
// backend's tolerances, gives the same bits as the host executor, and tracks the CPU backend
// (ops_cpu.hpp) to float rounding, for GPT-2, NeoX (rotary), BERT post-LN and pre-LN, and bf16.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "hcomm/exec/host.hpp"
#include "hcomm/exec/host_check.hpp"
#include "model.hpp"
#include "ops_portable.hpp"
#include "reference_check.hpp"

namespace {

using checked_model = gpt::basic_stage_model<gpt::portable_ops<hcomm::exec::host_check>>;
using host_model = gpt::basic_stage_model<gpt::portable_ops<hcomm::exec::host>>;

struct pass {
  double loss = 0;
  std::vector<float> logits, grads;
};

// Two micro-batches of forward and backward from the model's own initialisation.
template <class Model>
pass run(const gpt::config& c, const std::vector<int>& tokens, const std::vector<int>& targets, int micro,
         typename Model::ops_type ops = {}) {
  const int M = 2;
  Model m(c, {}, micro, M, ops);
  m.init_params();
  gpt::solo_tp tp;
  const std::int64_t N = static_cast<std::int64_t>(micro) * c.block;
  int predicted = 0;
  for (int t : targets) predicted += t >= 0;
  pass r;
  m.zero_grads();
  for (int mb = 0; mb < M; ++mb) {
    r.loss += m.forward(mb, tokens.data() + mb * N, targets.data() + mb * N, tp, 1.f / static_cast<float>(predicted),
                        false);
    r.logits.insert(r.logits.end(), m.logits(), m.logits() + N * m.local_vocab());
    m.forward(mb, tokens.data() + mb * N, targets.data() + mb * N, tp, 1.f / static_cast<float>(predicted), true);
    m.backward(mb, tokens.data() + mb * N, tp);
  }
  r.grads = m.grads;
  return r;
}

gpt::config small_config(gpt::arch_kind a, bool post_ln, bool bf16) {
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

}  // namespace

TEST_CASE("portable backend under host-check matches the PyTorch reference", "[model][portable][reference]") {
  for (const char* arch : {"gpt2", "neox", "bert", "bert_preln"}) {
    INFO(arch);
    gpt_test::check_reference<checked_model>(arch);
  }
}

TEST_CASE("portable backend: host-check = host bitwise, and the CPU backend to rounding", "[model][portable]") {
  struct variant {
    const char* name;
    gpt::arch_kind arch;
    bool post_ln, bf16;
  };
  for (const variant v : {variant{"gpt2", gpt::arch_kind::gpt2, false, false},
                          variant{"neox", gpt::arch_kind::neox, false, false},
                          variant{"bert post-LN", gpt::arch_kind::bert, true, false},
                          variant{"bert pre-LN", gpt::arch_kind::bert, false, false},
                          variant{"gpt2 bf16", gpt::arch_kind::gpt2, false, true}}) {
    INFO(v.name);
    const gpt::config c = small_config(v.arch, v.post_ln, v.bf16);
    const int micro = 3;
    const std::size_t n = static_cast<std::size_t>(2 * micro * c.block);
    std::mt19937 rng(7);
    std::vector<int> tokens(n), targets(n);
    for (std::size_t i = 0; i < n; ++i) {
      tokens[i] = static_cast<int>(rng() % static_cast<unsigned>(c.vocab));
      // BERT predicts some positions only (targets < 0 elsewhere); GPT every one.
      targets[i] = c.is_bert() && rng() % 4 != 0 ? -1 : static_cast<int>(rng() % 256);
    }
    const pass cpu = run<gpt::stage_model>(c, tokens, targets, micro);
    const pass host = run<host_model>(c, tokens, targets, micro);
    for (std::uint64_t seed : {1u, 2u}) {
      const pass chk = run<checked_model>(c, tokens, targets, micro, {hcomm::exec::host_check{.seed = seed}, {}});
      CHECK(chk.loss == host.loss);
      CHECK(chk.logits == host.logits);
      CHECK(chk.grads == host.grads);
    }
    // Observed: fp32 relative L2 errors about 4e-7 (logits and gradients), bf16 6e-5 (logits)
    // and 1.3e-4 (gradients): bf16 rounds activations to 8 bits of mantissa, so a last-bit
    // difference of a sum can move one rounding a whole bf16 step. Bounds about 10-25x that.
    const double tol = v.bf16 ? 2e-3 : 1e-5;
    INFO("loss " << host.loss << " vs cpu " << cpu.loss);
    CHECK(std::fabs(host.loss - cpu.loss) <= (v.bf16 ? 1e-5 : 1e-6) * std::fabs(cpu.loss));
    const auto lg = gpt_test::compare(host.logits.data(), cpu.logits.data(), cpu.logits.size(), 1e-5, 1e-4);
    INFO("logits max abs " << lg.max_abs << " rel l2 " << lg.rel_l2);
    CHECK(lg.rel_l2 <= tol);
    const auto gr = gpt_test::compare(host.grads.data(), cpu.grads.data(), cpu.grads.size(), 1e-6, 1e-3);
    INFO("grads max abs " << gr.max_abs << " rel l2 " << gr.rel_l2);
    CHECK(gr.rel_l2 <= (v.bf16 ? 5e-3 : 1e-5));
  }
}
