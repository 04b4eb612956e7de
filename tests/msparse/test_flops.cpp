// FLOP counter against closed-form counts on small shapes.
#include <catch2/catch.hpp>

#include "msparse/flops.hpp"

using namespace msparse;

namespace {
gpt_shape tiny() {
  gpt_shape g;
  g.layers = 2;
  g.C = 8;
  g.heads = 2;
  g.T = 4;
  g.vocab = 10;
  return g;
}
}  // namespace

TEST_CASE("dense step equals the closed form", "[flops]") {
  // Linear weights per block: 3C*C + C*C + 4C*C + C*4C = 12 C^2 = 768; 2 blocks: 1536;
  // LM head 10*8 = 80; total P = 1616. batch 3, T 4: tokens = 12.
  // Forward linear: 2 * 12 * 1616 = 38784. Attention: E = 4*5/2 = 10 causal entries,
  // forward 4 * C * E * batch * layers = 4*8*10*3*2 = 1920. Forward = 40704.
  // Backward: 2x = 81408. Total = 122112.
  flop_counter fc(tiny(), 3);
  REQUIRE(fc.layers().size() == 9);
  const auto s = fc.count(std::vector<double>(9, 1.0), 1.0, false);
  CHECK(s.dense.forward == 40704.0);
  CHECK(s.dense.backward == 81408.0);
  CHECK(s.dense.topology == 0.0);
  CHECK(s.actual.forward == s.dense.forward);
  CHECK(s.actual.backward == s.dense.backward);
  CHECK(s.dense.total() == 122112.0);
  CHECK(s.reduction() == 1.0);
}

TEST_CASE("sparse step: per-layer densities / attention density / topology updates", "[flops]") {
  flop_counter fc(tiny(), 3);
  // qkv 0.5, out 0.25, fc 0.125, proj 0.125 in both blocks; LM head 0.5; attention 0.4.
  std::vector<double> d{0.5, 0.25, 0.125, 0.125, 0.5, 0.25, 0.125, 0.125, 0.5};
  // Active weights: per block 192*0.5 + 64*0.25 + 256*0.125*2 = 96+16+64 = 176; x2 = 352;
  // head 40: A = 392. Forward linear 2*12*392 = 9408; attention 1920*0.4 = 768 -> 10176.
  // Backward: 4*12*392 = 18816 + 2*768 = 1536 -> 20352.
  const auto s = fc.count(d, 0.4, false);
  CHECK(s.actual.forward == Approx(10176.0).epsilon(1e-15));
  CHECK(s.actual.backward == Approx(20352.0).epsilon(1e-15));
  CHECK(s.actual.topology == 0.0);
  CHECK(s.dense.total() == 122112.0);
  // On a gradient-growth update step: the inactive part of the dense weight gradient,
  // 2 * 12 * (1616 - 392) = 29376.
  const auto u = fc.count(d, 0.4, true);
  CHECK(u.actual.topology == Approx(29376.0).epsilon(1e-15));
  CHECK(u.actual.backward + u.actual.topology - s.actual.backward == Approx(29376.0));
  // Dense layers (not sparse) get no topology cost.
  gpt_shape g = tiny();
  g.sparse_lm_head = false;
  flop_counter fd(g, 3);
  auto d2 = d;
  d2.back() = 1.0;
  CHECK(fd.count(d2, 0.4, true).actual.topology == Approx(2 * 12 * (1536 - 352)).epsilon(1e-15));
}

TEST_CASE("cumulative totals / topology-driven counting / bytes and JSON", "[flops]") {
  const auto g = tiny();
  flop_counter fc(g, 3);
  const auto layers = fc.layers();
  mst_options o;
  o.total_steps = 40;
  o.update_interval = 10;
  o.warmup_fraction = 0.25;
  o.ultra_fraction = 0.5;
  sparse_topology topo(layers, schedule::mst(o), rule_of<Mixed<3>>(), distribution_kind::erk, 3);
  std::vector<std::vector<float>> w, gr;
  std::vector<layer_tensors> t;
  for (const auto& l : layers) {
    w.emplace_back(l.size(), 1.0f);
    gr.emplace_back(l.size(), 0.5f);
  }
  for (std::size_t i = 0; i < layers.size(); ++i) t.push_back({w[i].data(), gr[i].data(), nullptr, nullptr});
  topo.init(t);
  step_flops sum;
  int updates = 0;
  for (std::int64_t step = 0; step < 40; ++step) {
    std::vector<double> d(layers.size());
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = topo.mask_of(i).density();
    const auto expect = fc.count(d, 0.5, topo.needs_dense_gradient(step));
    const auto got = fc.step(topo, step, 0.5);
    CHECK(got.actual.total() == expect.actual.total());
    sum += got;
    if (topo.is_update_step(step)) {
      ++updates;
      CHECK(got.actual.topology > 0);
      topo.update(step, t);
    }
  }
  CHECK(updates == 3);
  CHECK(fc.steps() == 40);
  CHECK(fc.total().dense.total() == Approx(40 * 122112.0));
  CHECK(fc.total().actual.total() == Approx(sum.actual.total()));
  CHECK(fc.total().reduction() > 1.0);
  byte_writer bw;
  fc.save(bw);
  flop_counter back(g, 3);
  byte_reader br(bw.bytes());
  back.load(br);
  CHECK(back.steps() == 40);
  CHECK(back.total().actual.total() == fc.total().actual.total());
  CHECK(flops_json(fc.count(std::vector<double>(9, 1.0), 1.0, false)) == "{\"dense\": 122112, \"actual\": 122112}");
  CHECK_THROWS_AS(fc.count(std::vector<double>(3, 1.0), 1.0, false), hcomm::error);
}

TEST_CASE("GPT-2 small dense forward FLOPs per token match 2N + attention", "[flops]") {
  gpt_shape g;  // 12 x 768, T 1024, vocab 50257
  flop_counter fc(g, 1);
  const double P = 12.0 * 12 * 768 * 768 + 50257.0 * 768;  // 123.5M linear weights (LM head included)
  const auto s = fc.count(std::vector<double>(fc.layers().size(), 1.0), 1.0, false);
  const double E = 1024.0 * 1025 / 2;
  CHECK(s.dense.forward == Approx(2 * 1024 * P + 4 * 768 * E * 12).epsilon(1e-12));
  CHECK(s.dense.total() == Approx(3 * s.dense.forward).epsilon(1e-12));
}

TEST_CASE("an encoder counts T^2 attention entries and BERT's MLM transform", "[flops]") {
  // tiny() as an encoder: E = T^2 = 16 entries; attention forward 4*8*16*3*2 = 3072.
  // MLM transform C x C on 12 tokens: forward 2*12*64 = 1536, backward 3072, in dense and
  // actual alike (it is dense for every method). Linear forward 38784 as in the GPT case.
  gpt_shape g = tiny();
  g.causal = false;
  g.mlm_transform = true;
  flop_counter fc(g, 3);
  REQUIRE(fc.layers().size() == 9);
  const auto s = fc.count(std::vector<double>(9, 1.0), 1.0, false);
  CHECK(s.dense.forward == 38784.0 + 3072.0 + 1536.0);
  CHECK(s.dense.backward == 2 * (38784.0 + 3072.0 + 1536.0));
  // Sparse layers and no attention: the transform stays in actual at full cost.
  std::vector<double> d{0.5, 0.25, 0.125, 0.125, 0.5, 0.25, 0.125, 0.125, 0.5};
  const auto a = fc.count(d, 0.0, false);
  CHECK(a.actual.forward == Approx(9408.0 + 1536.0).epsilon(1e-15));
  CHECK(a.actual.backward == Approx(18816.0 + 3072.0).epsilon(1e-15));
}
