// The --model presets: every one is valid on one rank and has the shape and parameter count
// its name promises (the real-shape presets with the byte vocabulary).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "config.hpp"
#include "hcomm/core/error.hpp"
#include "params.hpp"

namespace {
std::int64_t parameters(const gpt::config& c) {
  std::int64_t n = 0;
  for (const auto& s : gpt::global_specs(c)) n += s.numel();
  return n;
}
}  // namespace

TEST_CASE("every preset is valid on one rank and listed once", "[model][presets]") {
  for (const std::string& name : gpt::preset_names()) {
    INFO(name);
    const gpt::config c = gpt::preset(name);
    CHECK_NOTHROW(c.validate(1, 1, 1));
    CHECK(gpt::preset_list().find(name) != std::string::npos);
  }
  CHECK_THROWS_AS(gpt::preset("gpt2-1558m"), hcomm::error);
}

TEST_CASE("the real-shape presets have GPT-2's and NeoX's shapes", "[model][presets]") {
  const gpt::config s = gpt::preset("gpt2-124m");
  CHECK(s.arch == gpt::arch_kind::gpt2);
  CHECK((s.layers == 12 && s.channels == 768 && s.heads == 12 && s.block == 1024 && s.vocab == 256));
  // 12 blocks of 7,087,872 + wte 256 x 768 + wpe 1024 x 768 + lnf
  CHECK(parameters(s) == 86039040);
  const gpt::config m = gpt::preset("gpt2-350m");
  CHECK((m.layers == 24 && m.channels == 1024 && m.heads == 16 && m.block == 1024));
  CHECK(parameters(m) == 303622144);
  const gpt::config n = gpt::preset("neox-small");
  CHECK(n.arch == gpt::arch_kind::neox);
  CHECK((n.layers == 12 && n.channels == 768 && n.heads == 12 && n.block == 2048 && n.rot_dim() == 16));
  // no learned positions, an untied lm head
  CHECK(parameters(n) == 85449216);
  // TP over 2, 4 and 12 ranks divides the heads; 8 does not divide 12 heads
  for (int tp : {2, 4}) CHECK_NOTHROW(s.validate(1, 1, tp));
  CHECK_THROWS_AS(s.validate(1, 1, 8), hcomm::error);
}
