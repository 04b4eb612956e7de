// Sparsity Variation schedule: phases, stage targets, update steps, drop fraction, bytes.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>

#include "msparse/schedule.hpp"

using namespace msparse;

TEST_CASE("MST schedule: warm-up stages / ultra plateau / stepwise restoration", "[schedule]") {
  mst_options o;
  o.total_steps = 10000;
  o.warmup_fraction = 0.2;
  o.ultra_fraction = 0.5;
  o.initial_sparsity = 0.0;
  o.warmup_sparsity = 0.6;
  o.ultra_sparsity = 0.9;
  o.final_sparsity = 0.5;
  o.warmup_stages = 4;
  o.restore_stages = 2;
  o.update_interval = 100;
  const auto s = schedule::mst(o);
  const auto& c = s.config();
  CHECK(c.warmup_end == 2000);
  CHECK(c.ultra_end == 7000);
  CHECK(c.hsa_end == 2000);
  // Stages: dense, 0.2, 0.4, 0.6 in warm-up; 0.9 plateau; 0.7 then 0.5 in restoration.
  REQUIRE(c.stages.size() == 7);
  CHECK(s.target_sparsity(0) == 0.0);
  CHECK(s.target_sparsity(499) == 0.0);
  CHECK(s.target_sparsity(500) == Approx(0.2));
  CHECK(s.target_sparsity(1000) == Approx(0.4));
  CHECK(s.target_sparsity(1500) == Approx(0.6));
  CHECK(s.target_sparsity(1999) == Approx(0.6));
  CHECK(s.target_sparsity(2000) == Approx(0.9));
  CHECK(s.target_sparsity(6999) == Approx(0.9));
  CHECK(s.target_sparsity(7000) == Approx(0.7));
  CHECK(s.target_sparsity(8500) == Approx(0.5));
  CHECK(s.target_sparsity(20000) == Approx(0.5));
  CHECK(s.phase(0) == phase_id::warmup);
  CHECK(s.phase(1999) == phase_id::warmup);
  CHECK(s.phase(2000) == phase_id::ultra);
  CHECK(s.phase(6999) == phase_id::ultra);
  CHECK(s.phase(7000) == phase_id::restore);
  // Monotone: warm-up never lowers sparsity, restoration never raises it.
  for (std::int64_t t = 1; t < 10000; ++t) {
    if (s.phase(t) == phase_id::warmup) CHECK(s.target_sparsity(t) >= s.target_sparsity(t - 1));
    if (s.phase(t) == phase_id::restore && s.phase(t - 1) == phase_id::restore)
      CHECK(s.target_sparsity(t) <= s.target_sparsity(t - 1));
  }
  CHECK(s.sparse_attention(1999));
  CHECK_FALSE(s.sparse_attention(2000));
}

TEST_CASE("update steps every dT and at every target change / cosine drop fraction", "[schedule]") {
  schedule_config c;
  c.total_steps = 1000;
  c.warmup_end = 300;
  c.ultra_end = 700;
  c.stages = {{0, 0.0}, {150, 0.5}, {300, 0.9}, {777, 0.6}};  // 150 and 777 are off the dT grid
  c.update_interval = 100;
  c.zeta = 0.3;
  const schedule s(c);
  CHECK(s.config().update_end == 1000);
  CHECK_FALSE(s.is_update_step(0));
  CHECK_FALSE(s.is_update_step(50));
  CHECK(s.is_update_step(100));
  CHECK(s.is_update_step(150));  // target change
  CHECK(s.is_update_step(300));
  CHECK(s.is_update_step(777));  // target change
  CHECK_FALSE(s.is_update_step(778));
  CHECK(s.is_update_step(900));
  int n = 0;
  for (std::int64_t t = 0; t < 1000; ++t) n += s.is_update_step(t);
  CHECK(n == 9 + 2);  // 100..900 plus 150 and 777
  for (std::int64_t t : {0, 1, 250, 500, 999}) {
    const double expect = 0.3 / 2 * (1 + std::cos(std::numbers::pi * double(t) / 1000.0));
    CHECK(s.drop_fraction(t) == Approx(expect).epsilon(1e-14));
  }
  CHECK(s.drop_fraction(0) == Approx(0.3));
  CHECK(s.drop_fraction(500) == Approx(0.15));
  CHECK(s.drop_fraction(1000) == 0.0);
  // update_end (T_end) stops regular updates and sets the cosine horizon.
  c.update_end = 500;
  const schedule e(c);
  CHECK(e.is_update_step(400));
  CHECK_FALSE(e.is_update_step(600));
  CHECK(e.is_update_step(777));  // a target change still needs its update
  CHECK(e.drop_fraction(250) == Approx(0.15));
}

TEST_CASE("constant and dense schedules", "[schedule]") {
  const auto s = schedule::constant(0.9, 1000, 100);
  CHECK(s.target_sparsity(0) == 0.9);
  CHECK(s.target_sparsity(999) == 0.9);
  CHECK(s.phase(10) == phase_id::ultra);
  CHECK(s.is_update_step(200));
  const auto d = schedule::dense(1000);
  for (std::int64_t t = 0; t < 1000; ++t) REQUIRE_FALSE(d.is_update_step(t));
  CHECK(d.target_sparsity(5) == 0.0);
}

TEST_CASE("schedule validation and byte round trip", "[schedule]") {
  schedule_config bad;
  bad.total_steps = 10;
  bad.stages = {{5, 0.5}};
  CHECK_THROWS_AS(schedule(bad), hcomm::error);
  bad.stages = {{0, 0.5}, {0, 0.6}};
  CHECK_THROWS_AS(schedule(bad), hcomm::error);
  bad.stages = {{0, 1.0}};
  CHECK_THROWS_AS(schedule(bad), hcomm::error);
  mst_options o;
  o.total_steps = 5000;
  const auto s = schedule::mst(o);
  const auto bytes = s.to_bytes();
  const auto back = schedule::from_bytes(bytes);
  CHECK(back == s);
  for (std::int64_t t = 0; t < 5000; t += 37) {
    CHECK(back.target_sparsity(t) == s.target_sparsity(t));
    CHECK(back.is_update_step(t) == s.is_update_step(t));
    CHECK(back.drop_fraction(t) == s.drop_fraction(t));
  }
  auto cut = bytes;
  cut.resize(cut.size() - 3);
  CHECK_THROWS_AS(schedule::from_bytes(cut), hcomm::error);
  auto junk = bytes;
  junk[0] ^= 0xFF;
  CHECK_THROWS_AS(schedule::from_bytes(junk), hcomm::error);
}
