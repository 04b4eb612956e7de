// ERK and uniform layer-wise densities.
#include <catch2/catch.hpp>

#include <cmath>

#include "msparse/distribution.hpp"

using namespace msparse;

TEST_CASE("ERK at 90% on GPT-2 small reproduces the MST densities", "[distribution]") {
  // GPT-2 small: 12 blocks, C = 768, LM head (tied to the 50257-token embedding) sparse.
  // The padded vocabulary of nanoGPT (50304) gives the same densities to 3 decimals.
  for (std::size_t vocab : {std::size_t(50257), std::size_t(50304)}) {
    gpt_shape g;
    g.vocab = vocab;
    const auto layers = gpt_linear_layers(g);
    REQUIRE(layers.size() == 12 * 4 + 1);
    const auto d = erk_densities(layers, 0.10);
    CHECK(d[0] == Approx(0.108).margin(0.0005));      // QKV
    CHECK(d[1] == Approx(0.162).margin(0.0005));      // attention out
    CHECK(d[2] == Approx(0.101).margin(0.0005));      // MLP fc
    CHECK(d[3] == Approx(0.101).margin(0.0005));      // MLP proj
    CHECK(d.back() == Approx(0.082).margin(0.0005));  // LM head
    CHECK(overall_density(layers, d) == Approx(0.10).epsilon(1e-12));
    for (std::size_t b = 1; b < 12; ++b)
      for (std::size_t k = 0; k < 4; ++k) CHECK(d[4 * b + k] == d[k]);
  }
}

TEST_CASE("ERK is proportional to (rows+cols)/(rows*cols) and caps layers at dense", "[distribution]") {
  // A tiny layer would exceed density 1 at 50% overall: it becomes dense and the rest are
  // rescaled so that the overall density still holds.
  std::vector<layer_shape> l{{"tiny", 4, 4}, {"a", 512, 256}, {"b", 256, 256}, {"emb", 1000, 64, false}};
  const auto d = erk_densities(l, 0.5);
  CHECK(d[0] == 1.0);
  CHECK(d[3] == 1.0);  // not sparse: untouched and not counted
  const double ra = (512.0 + 256) / (512 * 256), rb = (256.0 + 256) / (256 * 256);
  CHECK(d[1] / d[2] == Approx(ra / rb).epsilon(1e-12));
  CHECK(overall_density(l, d) == Approx(0.5).epsilon(1e-12));
  // Closed form with 'tiny' dense: eps * (ra*na + rb*nb) = 0.5*(16+na+nb) - 16.
  const double eps = (0.5 * (16 + 131072 + 65536) - 16) / (ra * 131072 + rb * 65536);
  CHECK(eps * rb == Approx(0.6).margin(1e-4));
  CHECK(d[1] == Approx(eps * ra).epsilon(1e-12));
  for (double x : d) CHECK(x <= 1.0);
  // Iterative: at 90% overall density several layers cap one after another.
  std::vector<layer_shape> m{{"t1", 2, 2}, {"t2", 8, 8}, {"big", 512, 512}};
  const auto e = erk_densities(m, 0.9);
  CHECK(e[0] == 1.0);
  CHECK(e[1] == 1.0);
  CHECK(overall_density(m, e) == Approx(0.9).epsilon(1e-12));
}

TEST_CASE("uniform densities and which layers are sparse", "[distribution]") {
  gpt_shape g;
  g.layers = 2;
  g.C = 64;
  g.vocab = 100;
  g.sparse_lm_head = false;
  const auto layers = gpt_linear_layers(g);
  const auto d = uniform_densities(layers, 0.2);
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) CHECK(d[i] == 0.2);
  CHECK(d.back() == 1.0);
  CHECK(layer_densities(distribution_kind::uniform, layers, 0.2) == d);
  CHECK(active_count(layers[0], 0.2) == std::size_t(std::llround(0.2 * 3 * 64 * 64)));
  CHECK(active_count(layers.back(), 0.2) == layers.back().size());
  CHECK_THROWS_AS(uniform_densities(layers, 0.0), hcomm::error);
  CHECK_THROWS_AS(erk_densities(layers, 1.5), hcomm::error);
  CHECK(erk_densities(layers, 1.0) == std::vector<double>(layers.size(), 1.0));
}
