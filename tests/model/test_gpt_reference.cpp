// Checks the C++ GPT (examples/gpt/model.hpp) against PyTorch, tensor by tensor, from the
// debug states that scripts/reference_gpt.py wrote into tests/model/data/ (one per
// architecture): logits, loss, every parameter gradient, and the losses of 10 AdamW steps
// (reference_check.hpp, with the tolerances).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model.hpp"
#include "reference_check.hpp"

TEST_CASE("gpt2 matches the PyTorch reference", "[model][reference]") { gpt_test::check_reference("gpt2"); }
TEST_CASE("neox matches the PyTorch reference", "[model][reference]") { gpt_test::check_reference("neox"); }

TEST_CASE("TP shards round-trip through extract/insert", "[model]") {
  gpt::config c = gpt::preset("tiny");
  c.arch = gpt::arch_kind::neox;
  const auto specs = gpt::global_specs(c);
  for (const auto& sp : specs) {
    std::vector<float> g(static_cast<std::size_t>(sp.numel())), back(g.size(), -1.f);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(i);
    for (int r = 0; r < 4; ++r) {
      std::vector<float> shard(static_cast<std::size_t>(gpt::shard_numel(sp, 4)));
      gpt::extract_shard(sp, g.data(), 4, r, shard.data());
      gpt::insert_shard(sp, shard.data(), 4, r, back.data());
    }
    INFO(sp.name);
    CHECK(back == g);
  }
}

// --precision bf16's optimizer: AdamW updates the fp32 master weights exactly as an fp32 run
// updates its weights, and the model computes with their bfloat16 rounding.
TEST_CASE("bf16: AdamW steps the fp32 master, the model holds its rounding", "[model][bf16]") {
  gpt::config c = gpt::preset("tiny");
  c.bf16 = true;
  gpt::config c32 = c;
  c32.bf16 = false;
  gpt::stage_model a(c, {}, c.batch, 1), b(c32, {}, c.batch, 1);
  a.init_params();
  gpt::adamw oa(a.params.size()), ob(b.params.size());
  oa.adopt_master(a);
  b.params = oa.master;  // the fp32 run starts from the master weights
  auto rounded = [](const std::vector<float>& v) {
    std::vector<float> r = v;
    gpt::k::round_bf16(r.data(), static_cast<gpt::k::idx>(r.size()));
    return r;
  };
  CHECK(a.params == rounded(oa.master));
  CHECK(a.params != oa.master);  // init values are not all bf16-exact: the master keeps more
  for (int t = 1; t <= 3; ++t) {
    for (std::size_t i = 0; i < a.grads.size(); ++i) a.grads[i] = b.grads[i] = 1e-3f * std::sin(0.37f * i + t);
    oa.step(a, 1e-3f, t);
    ob.step(b, 1e-3f, t);
    INFO("step " << t);
    CHECK(oa.master == b.params);
    CHECK(a.params == rounded(b.params));
  }
  CHECK(ob.master.empty());  // fp32 runs keep no copy
}
