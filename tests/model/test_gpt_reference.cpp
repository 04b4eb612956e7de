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
