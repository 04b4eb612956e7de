// Topology evolution: prune/grow counts, densities equal targets after every update, pruned
// weights zero, grown weights zero with reset moments, gradient growth takes the top |g|,
// determinism by seed, checkpoints, TP sharding.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "msparse/topology.hpp"

using namespace msparse;

namespace {

struct model_state {
  std::vector<std::vector<float>> w, g, m, v;
  std::vector<layer_tensors> views() {
    std::vector<layer_tensors> t(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) t[i] = {w[i].data(), g[i].data(), m[i].data(), v[i].data()};
    return t;
  }
};

model_state make_state(const std::vector<layer_shape>& layers, unsigned seed) {
  model_state s;
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  for (const auto& l : layers) {
    s.w.emplace_back(l.size());
    s.g.emplace_back(l.size());
    s.m.emplace_back(l.size());
    s.v.emplace_back(l.size());
    for (auto& x : s.w.back()) x = n(gen);
  }
  return s;
}

// One fake training step: active weights move, the dense gradient is fresh everywhere, and
// the Adam moments are non-zero everywhere (as after an optimizer fed the dense gradient),
// so that "grown moments are reset" is really tested. Every 3rd step an inactive weight
// picks up a stray value too (an optimizer that ignored the mask), which the update must
// clear. Deterministic in (seed, step) so two runs can be compared.
void fake_step(const sparse_topology& topo, model_state& s, std::int64_t step, unsigned seed) {
  std::mt19937 gen(seed * 7919u + unsigned(step));
  std::normal_distribution<float> n(0.f, 1.f);
  for (std::size_t i = 0; i < s.w.size(); ++i) {
    const mask& mk = topo.mask_of(i);
    for (std::size_t j = 0; j < mk.size(); ++j) {
      s.g[i][j] = n(gen);
      s.m[i][j] = 0.5f + 0.01f * float(j % 7);
      s.v[i][j] = 0.25f;
      if (mk[j]) s.w[i][j] += 0.1f * n(gen);
      else if (step % 3 == 0 && j % 11 == 0) s.w[i][j] = 1e-3f;
    }
  }
}

std::vector<layer_shape> small_model() {
  gpt_shape g;
  g.layers = 2;
  g.C = 32;
  g.vocab = 97;
  return gpt_linear_layers(g);
}

schedule small_mst(std::int64_t total) {
  mst_options o;
  o.total_steps = total;
  o.warmup_fraction = 0.3;
  o.ultra_fraction = 0.4;
  o.warmup_sparsity = 0.7;
  o.ultra_sparsity = 0.9;
  o.final_sparsity = 0.5;
  o.warmup_stages = 3;
  o.restore_stages = 2;
  o.update_interval = 10;
  return schedule::mst(o);
}

}  // namespace

TEST_CASE("prune/grow counts as specified", "[topology]") {
  // Sparsify: delta = A - target > 0.
  auto a = prune_grow_counts(1000, 800, 0.1);
  CHECK(a.prune == 200);
  CHECK(a.grow == 0);
  a = prune_grow_counts(1000, 950, 0.3);  // floor(300) > 50
  CHECK(a.prune == 300);
  CHECK(a.grow == 250);
  a = prune_grow_counts(1000, 1000, 0.123);
  CHECK(a.prune == 123);
  CHECK(a.grow == 123);
  // Restore: grows |delta| more than it prunes.
  a = prune_grow_counts(1000, 1500, 0.2);
  CHECK(a.prune == 200);
  CHECK(a.grow == 700);
  a = prune_grow_counts(7, 7, 0.0);
  CHECK(a.prune == 0);
  CHECK(a.grow == 0);
}

TEST_CASE("MST run: density equals target after every update / pruned zero / grown zero with reset moments",
          "[topology]") {
  const auto layers = small_model();
  const auto sched = small_mst(400);
  sparse_topology topo(layers, sched, rule_of<Mixed<3>>(), distribution_kind::erk, 42);
  auto st = make_state(layers, 1);
  auto views = st.views();
  topo.init(views);
  for (std::size_t i = 0; i < layers.size(); ++i) CHECK(topo.mask_of(i).active() == layers[i].size());  // starts dense
  int updates = 0, restoring = 0;
  for (std::int64_t step = 1; step < 400; ++step) {
    fake_step(topo, st, step, 1);
    if (!topo.is_update_step(step)) continue;
    ++updates;
    CHECK(topo.needs_dense_gradient(step));
    std::vector<mask> before = topo.masks();
    const auto target = topo.target_active(step);
    const double f = sched.drop_fraction(step);
    const auto counts = topo.update(step, views);
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const mask& now = topo.mask_of(i);
      const auto& c = counts[i];
      // Density equals target exactly (target counts are the rounded ERK densities).
      REQUIRE(now.active() == target[i]);
      REQUIRE(c.active_after == target[i]);
      // Counts: prune max(floor(A f), A - A'), grow prune - (A - A'); 3/4 of grow by gradient.
      const auto A = static_cast<std::int64_t>(before[i].active());
      const auto delta = A - static_cast<std::int64_t>(target[i]);
      const auto prune = std::max<std::int64_t>(static_cast<std::int64_t>(std::floor(double(A) * f)), delta);
      REQUIRE(std::int64_t(c.pruned) == prune);
      REQUIRE(std::int64_t(c.grown) == prune - delta);
      REQUIRE(c.grown_by_gradient == c.grown * 3 / 4);
      REQUIRE(c.grown_random == c.grown - c.grown_by_gradient);
      if (delta < 0) {
        ++restoring;
        CHECK(c.grown > c.pruned);
      }
      std::size_t newly_on = 0, newly_off = 0;
      for (std::size_t j = 0; j < now.size(); ++j) {
        if (!now[j]) REQUIRE(st.w[i][j] == 0.0f);  // every inactive (so every pruned) weight is zero
        if (!now[j] && before[i][j]) {
          ++newly_off;
          REQUIRE(st.m[i][j] == 0.0f);
          REQUIRE(st.v[i][j] == 0.0f);
        }
        if (now[j] && !before[i][j]) {
          ++newly_on;
          REQUIRE(st.w[i][j] == 0.0f);  // grown weights start at zero
          REQUIRE(st.m[i][j] == 0.0f);  // ... with their Adam moments reset
          REQUIRE(st.v[i][j] == 0.0f);
        }
      }
      // Net changes bound the counts (a pruned-then-regrown position appears in neither).
      CHECK(newly_off <= c.pruned);
      CHECK(newly_on <= c.grown);
      CHECK(std::int64_t(newly_on) - std::int64_t(newly_off) == -delta);
    }
  }
  CHECK(updates >= 39);
  CHECK(restoring > 0);
  CHECK(topo.density() == Approx(0.5).margin(0.01));  // final sparsity 0.5
  CHECK(topo.last_step() > 0);
}

TEST_CASE("RigL grows exactly the largest |gradient| among inactive positions / SET does not need gradients",
          "[topology]") {
  const std::size_t R = 40, C = 50, N = R * C;
  mask m(R, C);
  m.randomize(N / 5, counter_rng(9, 0, 0));
  std::vector<float> w(N), g(N), mo(N, 1.f), vo(N, 1.f);
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (std::size_t j = 0; j < N; ++j) {
    w[j] = m[j] ? u(gen) : 0.f;
    g[j] = u(gen);
  }
  const mask before = m;
  // Expected prune: the floor(A*0.25) smallest |w| among active.
  std::vector<std::uint32_t> act;
  for (std::uint32_t j = 0; j < N; ++j)
    if (before[j]) act.push_back(j);
  std::sort(act.begin(), act.end(), [&](auto a, auto b) { return std::fabs(w[a]) < std::fabs(w[b]); });
  const std::size_t np = std::size_t(std::floor(double(act.size()) * 0.25));
  std::set<std::uint32_t> pruned(act.begin(), act.begin() + std::ptrdiff_t(np));
  // Expected growth: top-np |g| among positions inactive after pruning.
  std::vector<std::uint32_t> ina;
  for (std::uint32_t j = 0; j < N; ++j)
    if (!before[j] || pruned.count(j)) ina.push_back(j);
  std::sort(ina.begin(), ina.end(), [&](auto a, auto b) { return std::fabs(g[a]) > std::fabs(g[b]); });
  std::set<std::uint32_t> grown(ina.begin(), ina.begin() + std::ptrdiff_t(np));
  const auto c = update_layer(m, before.active(), 0.25, rule_of<RigL>(), {w.data(), g.data(), mo.data(), vo.data()},
                              counter_rng(1, 1, 0));
  CHECK(c.pruned == np);
  CHECK(c.grown_by_gradient == np);
  for (std::uint32_t j = 0; j < N; ++j) {
    const bool expect_on = (before[j] && !pruned.count(j)) || grown.count(j);
    REQUIRE(m[j] == expect_on);
  }
  // SET: random growth without a gradient; gradient growth without one is an error.
  mask s = before;
  std::vector<float> w2 = w;
  CHECK_NOTHROW(update_layer(s, s.active(), 0.25, rule_of<SET>(), {w2.data(), nullptr, nullptr, nullptr}, counter_rng(1, 1, 0)));
  CHECK(s.active() == before.active());
  mask r = before;
  CHECK_THROWS_AS(update_layer(r, r.active(), 0.25, rule_of<RigL>(), {w2.data(), nullptr, nullptr, nullptr}, counter_rng(1, 1, 0)),
                  hcomm::error);
}

TEST_CASE("identical seeds give identical masks / a different seed differs", "[topology]") {
  const auto layers = small_model();
  auto run = [&](std::uint64_t seed, const growth_rule& rule, const schedule& s) {
    sparse_topology topo(layers, s, rule, distribution_kind::erk, seed);
    auto st = make_state(layers, 5);
    auto views = st.views();
    topo.init(views);
    for (std::int64_t step = 1; step < 200; ++step) {
      fake_step(topo, st, step, 5);
      if (topo.is_update_step(step)) topo.update(step, views);
    }
    return topo;
  };
  const auto sched = small_mst(200);
  const auto a = run(7, rule_of<Mixed<3>>(), sched), b = run(7, rule_of<Mixed<3>>(), sched),
             c = run(8, rule_of<Mixed<3>>(), sched);
  CHECK(a.masks() == b.masks());
  CHECK(a.checksum() == b.checksum());
  CHECK_FALSE(a.masks() == c.masks());
  CHECK(a.checksum() != c.checksum());
  // Static/SET/RigL start from a random ERK mask: seeded as well.
  const auto cs = schedule::constant(0.8, 200, 10);
  for (const auto& rule : {rule_of<Static>(), rule_of<SET>(), rule_of<RigL>()}) {
    const auto x = run(11, rule, cs), y = run(11, rule, cs), z = run(12, rule, cs);
    CHECK(x.checksum() == y.checksum());
    CHECK(x.checksum() != z.checksum());
    CHECK(x.density() == Approx(0.2).margin(0.001));
  }
  // Static never changes its mask; dense is all ones and never updates.
  sparse_topology st(layers, cs, rule_of<Static>(), distribution_kind::erk, 11);
  st.init();
  const auto h0 = st.checksum();
  CHECK(st.checksum() == run(11, rule_of<Static>(), cs).checksum());
  CHECK(h0 == st.checksum());
  for (std::int64_t t = 0; t < 200; ++t) CHECK_FALSE(st.is_update_step(t));
  sparse_topology d(layers, schedule::dense(100), rule_of<Dense>(), distribution_kind::erk, 1);
  d.init();
  CHECK(d.density() == 1.0);
  for (std::int64_t t = 0; t < 100; ++t) CHECK_FALSE(d.is_update_step(t));
}

TEST_CASE("checkpoint bytes restore masks / schedule / rule and seed / a resumed run matches", "[topology]") {
  const auto layers = small_model();
  const auto sched = small_mst(300);
  auto make = [&] { return sparse_topology(layers, sched, rule_of<Mixed<3>>(), distribution_kind::erk, 99); };
  // Uninterrupted.
  auto full = make();
  auto s1 = make_state(layers, 2);
  auto v1 = s1.views();
  full.init(v1);
  for (std::int64_t step = 1; step < 300; ++step) {
    fake_step(full, s1, step, 2);
    if (full.is_update_step(step)) full.update(step, v1);
  }
  // Interrupted at 150: save, load, continue (weights "checkpointed" by copy).
  auto part = make();
  auto s2 = make_state(layers, 2);
  auto v2 = s2.views();
  part.init(v2);
  for (std::int64_t step = 1; step < 150; ++step) {
    fake_step(part, s2, step, 2);
    if (part.is_update_step(step)) part.update(step, v2);
  }
  const auto bytes = part.to_bytes();
  CHECK(bytes == part.to_bytes());  // deterministic bytes
  auto resumed = sparse_topology::from_bytes(bytes);
  CHECK(resumed.masks() == part.masks());
  CHECK(resumed.sched() == part.sched());
  CHECK(resumed.rule() == part.rule());
  CHECK(resumed.seed() == 99);
  CHECK(resumed.last_step() == part.last_step());
  model_state s3 = s2;
  auto v3 = s3.views();
  for (std::int64_t step = 150; step < 300; ++step) {
    fake_step(resumed, s3, step, 2);
    if (resumed.is_update_step(step)) resumed.update(step, v3);
  }
  CHECK(resumed.masks() == full.masks());
  CHECK(s3.w == s1.w);
  CHECK(s3.m == s1.m);
  auto bad = bytes;
  bad[bad.size() / 2] ^= 0x10;
  CHECK_THROWS_AS(sparse_topology::from_bytes(bad), hcomm::error);
  bad = bytes;
  bad.resize(bytes.size() - 1);
  CHECK_THROWS_AS(sparse_topology::from_bytes(bad), hcomm::error);
}

TEST_CASE("TP: masks shard with their weights", "[topology]") {
  mask m(10, 7);
  m.randomize(30, counter_rng(1, 2, 3));
  std::vector<float> w(70);
  for (std::size_t i = 0; i < 70; ++i) w[i] = float(i);
  for (auto axis : {shard_axis::rows, shard_axis::cols}) {
    std::vector<mask> parts;
    std::size_t active = 0;
    for (std::size_t p = 0; p < 3; ++p) {
      parts.push_back(shard(m, axis, 3, p));
      active += parts.back().active();
      const auto ws = shard(w.data(), 10, 7, axis, 3, p);
      REQUIRE(ws.size() == parts.back().size());
      // Mask and weight shards line up element by element.
      for (std::size_t r = 0; r < parts.back().rows(); ++r)
        for (std::size_t c = 0; c < parts.back().cols(); ++c) {
          const std::size_t gr = axis == shard_axis::rows ? shard_bounds(10, 3, p).begin + r : r;
          const std::size_t gc = axis == shard_axis::cols ? shard_bounds(7, 3, p).begin + c : c;
          REQUIRE(ws[r * parts.back().cols() + c] == w[gr * 7 + gc]);
          REQUIRE(parts.back().at(r, c) == m.at(gr, gc));
        }
    }
    CHECK(active == m.active());
    CHECK(unshard(parts, axis) == m);
  }
  // A TP-sharded topology's initial masks are shards of the TP = 1 masks.
  const auto layers = small_model();
  const auto cs = schedule::constant(0.8, 100, 10);
  sparse_topology whole(layers, cs, rule_of<RigL>(), distribution_kind::erk, 5);
  whole.init();
  for (std::size_t p = 0; p < 2; ++p) {
    tp_sharding tp{2, p, {}};
    for (std::size_t i = 0; i < layers.size(); ++i) tp.axes.push_back(i % 2 ? shard_axis::cols : shard_axis::rows);
    sparse_topology local(layers, cs, rule_of<RigL>(), distribution_kind::erk, 5, tp);
    local.init();
    for (std::size_t i = 0; i < layers.size(); ++i) CHECK(local.mask_of(i) == shard(whole.mask_of(i), tp.axes[i], 2, p));
    // Per-shard targets at the layer's density after an update.
    auto st = make_state(std::vector<layer_shape>(), 0);
    std::vector<std::vector<float>> w2, g2;
    std::vector<layer_tensors> views;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      w2.emplace_back(local.mask_of(i).size(), 1.0f);
      g2.emplace_back(local.mask_of(i).size(), 0.5f);
    }
    for (std::size_t i = 0; i < layers.size(); ++i) views.push_back({w2[i].data(), g2[i].data(), nullptr, nullptr});
    local.update(10, views);
    const auto k = local.target_active(10);
    for (std::size_t i = 0; i < layers.size(); ++i) CHECK(local.mask_of(i).active() == k[i]);
  }
}

TEST_CASE("mask basics: checksum / randomize count / bytes", "[mask]") {
  mask a(33, 17);
  a.randomize(100, counter_rng(1, 0, 0));
  CHECK(a.active() == 100);
  mask b(33, 17);
  b.randomize(100, counter_rng(1, 0, 0));
  CHECK(a == b);
  CHECK(a.checksum() == b.checksum());
  b.set(0, !b[0]);
  CHECK(a.checksum() != b.checksum());
  mask c(17, 33);
  c.randomize(100, counter_rng(1, 0, 0));
  CHECK(c.checksum() != a.checksum());  // shape is part of the hash
  byte_writer w;
  a.save(w);
  byte_reader r(w.bytes());
  CHECK(mask::load(r) == a);
  CHECK(r.done());
  // The counter RNG: a pure function of its key and counter.
  counter_rng x(5, 6, 7), y(5, 6, 7), z(5, 6, 8);
  CHECK(x.next() == y.next());
  CHECK(x.at(10) != z.at(10));
  for (int i = 0; i < 1000; ++i) {
    const auto v = x.below(13);
    REQUIRE(v < 13);
  }
}

TEST_CASE("ties break by index / dense-side restoration uses the list path / counts hold", "[topology]") {
  // All weights equal: the pruned ones are the lowest-index active positions.
  const std::size_t N = 1000;
  mask m(10, 100, true);
  std::vector<float> w(N, 0.5f), g(N, 0.f), mo(N, 1.f), vo(N, 1.f);
  auto c = update_layer(m, 900, 0.0, rule_of<RigL>(), {w.data(), g.data(), mo.data(), vo.data()}, counter_rng(1, 2, 3));
  CHECK(c.pruned == 100);
  CHECK(c.grown == 0);
  for (std::size_t i = 0; i < N; ++i) REQUIRE(m[i] == (i >= 100));
  // Equal gradients: gradient growth takes the lowest-index inactive positions.
  c = update_layer(m, 950, 0.0, rule_of<RigL>(), {w.data(), g.data(), mo.data(), vo.data()}, counter_rng(1, 3, 3));
  CHECK(c.grown == 50);
  for (std::size_t i = 0; i < N; ++i) REQUIRE(m[i] == (i < 50 || i >= 100));
  for (std::size_t i = 0; i < 50; ++i) REQUIRE((w[i] == 0.f && mo[i] == 0.f && vo[i] == 0.f));
  // Inactive positions are scarce (5%): random growth goes through the list of inactive
  // positions. Restore 950 -> 990 with SET at drop 0.2: prune 190, grow 230.
  for (std::size_t i = 0; i < N; ++i) {
    w[i] = m[i] ? 1.0f + float(i) : 0.f;
    mo[i] = vo[i] = 1.f;
  }
  const mask before = m;
  c = update_layer(m, 990, 0.2, rule_of<SET>(), {w.data(), nullptr, mo.data(), vo.data()}, counter_rng(1, 4, 3));
  CHECK(c.pruned == 190);
  CHECK(c.grown == 230);
  CHECK(c.grown_random == 230);
  CHECK(m.active() == 990);
  for (std::size_t i = 0; i < N; ++i) {
    if (!m[i]) REQUIRE(w[i] == 0.f);
    if (m[i] && !before[i]) REQUIRE((w[i] == 0.f && mo[i] == 0.f && vo[i] == 0.f));
  }
  // The 190 smallest |w| were the 190 lowest active indices (w grows with i): 50..99 are
  // inactive, so 0..49 and 100..239 were pruned; a survivor keeps its value.
  CHECK(w[500] == 501.0f);
  // Same inputs, same key: the same mask.
  mask again = before;
  std::vector<float> w2(N);
  for (std::size_t i = 0; i < N; ++i) w2[i] = before[i] ? 1.0f + float(i) : 0.f;
  update_layer(again, 990, 0.2, rule_of<SET>(), {w2.data(), nullptr, nullptr, nullptr}, counter_rng(1, 4, 3));
  CHECK(again == m);
}

TEST_CASE("pack/unpack active values round trip (sparsity-aware DP all-reduce)", "[mask]") {
  // Larger than one pack chunk (65536) so the chunk offsets are exercised.
  mask m(300, 700);
  m.randomize(21000, counter_rng(3, 0, 0));
  std::vector<float> dense(m.size());
  for (std::size_t i = 0; i < dense.size(); ++i) dense[i] = float(i) + 0.5f;
  std::vector<float> packed(m.active()), back(m.size(), -1.f);
  CHECK(pack_active(m, dense.data(), packed.data()) == 21000);
  std::size_t k = 0;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i]) REQUIRE(packed[k++] == dense[i]);
  CHECK(unpack_active(m, packed.data(), back.data()) == 21000);
  for (std::size_t i = 0; i < m.size(); ++i) REQUIRE(back[i] == (m[i] ? dense[i] : 0.f));
}

TEST_CASE("make_topology maps --sparsity methods to rule and schedule", "[topology]") {
  const auto layers = small_model();
  sparsity_options o;
  o.total_steps = 1000;
  o.update_interval = 50;
  o.sparsity = 0.8;
  o.seed = 4;
  o.method = "dense";
  auto d = make_topology(o, layers);
  CHECK(d.rule() == rule_of<Dense>());
  CHECK(d.target_sparsity(500) == 0.0);
  o.method = "static";
  auto st = make_topology(o, layers);
  CHECK(st.rule() == rule_of<Static>());
  CHECK_FALSE(st.is_update_step(50));
  CHECK(st.target_sparsity(0) == 0.8);
  o.method = "set";
  CHECK(make_topology(o, layers).is_update_step(50));
  CHECK_FALSE(make_topology(o, layers).needs_dense_gradient(50));
  o.method = "rigl";
  CHECK(make_topology(o, layers).needs_dense_gradient(50));
  o.method = "mst";
  o.mixed_ratio = 5;
  auto m = make_topology(o, layers);
  CHECK(m.rule() == mixed_rule(5));
  CHECK(m.sched().config().update_interval == 50);
  CHECK(m.sched().phase(0) == phase_id::warmup);
  CHECK(m.sched().target_sparsity(0) == 0.0);
  CHECK(m.sched().target_sparsity(999) == Approx(o.mst.final_sparsity));
  o.method = "bogus";
  CHECK_THROWS_AS(make_topology(o, layers), hcomm::error);
}
