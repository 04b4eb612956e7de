// Block-sparse attention equals dense attention under the same element mask (forward and
// gradients, fp32); pattern fractions at T = 1024, stride 128; the hybrid switch.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>

#include "msparse/attention/block_sparse.hpp"
#include "msparse/attention/hybrid.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "msparse/kernels/launch.hpp"

#include "attention_test_util.hpp"

using namespace msparse::attention;

namespace {
using attention_test::randn;
using attention_test::rel_err;
using attention_test::check_against_reference;

}  // namespace

TEST_CASE("block-sparse attention equals masked dense attention / forward and backward", "[attention]") {
  const std::size_t d = 24;
  unsigned seed = 10;
  for (auto kind : {pattern::dense, pattern::local, pattern::strided, pattern::local_strided, pattern::fixed}) {
    const pattern_spec p{kind, 32, 2};
    // T a multiple of the block and not (a ragged last block).
    for (std::size_t T : {std::size_t(128), std::size_t(150)}) {
      for (std::size_t B : {std::size_t(16), std::size_t(32)}) {
        check_against_reference(layout::cover(p, T, B), d, seed++);
        check_against_reference(layout::blockwise(p, T, B), d, seed++);
      }
    }
  }
  // An arbitrary block mask, too.
  std::vector<std::uint8_t> keep(8 * 8, 0);
  keep[5 * 8 + 1] = keep[7 * 8 + 0] = keep[3 * 8 + 2] = 1;
  check_against_reference(layout::from_blocks(keep, 128, 16), 16, 99);
}

TEST_CASE("attention kernels: every head-size path and long rows across score chunks", "[attention]") {
  // d 32 and 64: the compiled f8 bodies; 40: f8 with the size at run time; 12 and 20: the
  // scalar body (not a multiple of 8). T 200 dense: rows of up to 200 kept keys, several
  // online-softmax chunks, with larger scores later in the row (a rescale of the sum).
  unsigned seed = 500;
  for (std::size_t d : {std::size_t(32), std::size_t(64), std::size_t(40), std::size_t(12), std::size_t(20)}) {
    check_against_reference(layout::causal(200, 32), d, seed++);
    check_against_reference(layout::cover({pattern::local_strided, 16, 1}, 128, 16), d, seed++);
    check_against_reference(layout::cover({pattern::fixed, 32, 3}, 150, 16), d, seed++);
  }
  {
    const std::size_t T = 200, d = 32;
    auto q = randn(T * d, 7), k = randn(T * d, 8), v = randn(T * d, 9);
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t c = 0; c < d; ++c) q[i * d + c] *= 0.05f * float(i);  // sharper later rows
    for (std::size_t j = 0; j < T; ++j)
      for (std::size_t c = 0; c < d; ++c) k[j * d + c] *= 0.02f * float(j);  // larger scores later in a row
    const auto lay = layout::causal(T, 32);
    const auto mask = lay.element_mask();
    std::vector<float> o(T * d), lse(T), ro(T * d);
    forward(lay, q.data(), k.data(), v.data(), d, o.data(), lse.data());
    dense_masked_forward(mask.data(), T, d, q.data(), k.data(), v.data(), ro.data());
    CHECK(rel_err(o, ro) < 2e-5);
  }
  // The plain (non-AVX2) host bodies give the same results within rounding.
  {
    const hcomm::cpu::force_portable portable;
    REQUIRE_FALSE(hcomm::cpu::use_avx2());
    check_against_reference(layout::cover({pattern::local_strided, 16, 1}, 128, 16), 32, 900);
    check_against_reference(layout::causal(150, 32), 24, 901);
  }
}

TEST_CASE("element lists hold exactly the kept entries, rows and columns", "[attention]") {
  for (const auto& lay : {layout::cover({pattern::local_strided, 16, 1}, 150, 16), layout::blockwise({pattern::fixed, 32, 2}, 128, 16),
                          layout::causal(64, 16)}) {
    const std::size_t T = lay.T();
    std::size_t n = 0;
    for (std::size_t i = 0; i < T; ++i) {
      std::vector<std::uint32_t> want;
      for (std::size_t j = 0; j <= i; ++j)
        if (lay.keep(i, j)) want.push_back(std::uint32_t(j));
      n += want.size();
      REQUIRE(std::vector<std::uint32_t>(lay.ent_col().begin() + lay.ent_ptr()[i], lay.ent_col().begin() + lay.ent_ptr()[i + 1]) == want);
    }
    CHECK(lay.kept_entries() == n);
    for (std::size_t j = 0; j < T; ++j)
      for (std::uint32_t t = lay.key_ptr()[j]; t < lay.key_ptr()[j + 1]; ++t) {
        REQUIRE(lay.ent_col()[lay.key_ent()[t]] == j);
        REQUIRE(lay.key_ent()[t] >= lay.ent_ptr()[lay.key_row()[t]]);
        REQUIRE(lay.key_ent()[t] < lay.ent_ptr()[lay.key_row()[t] + 1]);
        if (t > lay.key_ptr()[j]) REQUIRE(lay.key_row()[t - 1] < lay.key_row()[t]);
      }
    CHECK(lay.key_ptr()[T] == n);
  }
}

TEST_CASE("a sparse layout really skips blocks and the reference detects a wrong mask", "[attention]") {
  const auto lay = layout::cover({pattern::local, 32}, 256, 32);
  // local with stride = block: the diagonal and the first sub-diagonal only.
  CHECK(lay.kept_blocks() == 8 + 7);
  CHECK(layout::causal(256, 32).kept_blocks() == 36);
  // Poisoning a block the layout skips changes nothing in the sparse output.
  const std::size_t T = 256, d = 16;
  auto q = randn(T * d, 1), k = randn(T * d, 2), v = randn(T * d, 3);
  std::vector<float> o1(T * d), o2(T * d), lse(T);
  forward(lay, q.data(), k.data(), v.data(), d, o1.data(), lse.data());
  for (std::size_t j = 0; j < 32; ++j)
    for (std::size_t c = 0; c < d; ++c) v[j * d + c] = 1e6f;  // key block 0: used only by query blocks 0, 1
  forward(lay, q.data(), k.data(), v.data(), d, o2.data(), lse.data());
  for (std::size_t i = 64 * d; i < T * d; ++i) REQUIRE(o1[i] == o2[i]);
  // Against the reference with a different mask the comparison fails (so the test can fail).
  std::vector<float> ro(T * d);
  const auto wrong = layout::causal(T, 32).element_mask();
  dense_masked_forward(wrong.data(), T, d, q.data(), k.data(), v.data(), ro.data());
  CHECK(rel_err(o2, ro) > 1e-2);
}

TEST_CASE("packed qkv heads through leading dimensions", "[attention]") {
  // A (T, 3C) qkv buffer with 2 heads of 8: head 1's q/k/v live at columns 8, 24, 40.
  const std::size_t T = 64, C = 16, hs = 8;
  const auto qkv = randn(T * 3 * C, 5), dout_full = randn(T * C, 6);
  const auto lay = layout::cover({pattern::local_strided, 16}, T, 16);
  std::vector<float> o(T * C), lse(T), dqkv(T * 3 * C, 0.f);
  const std::size_t h = 1;
  forward(lay, qkv.data() + h * hs, qkv.data() + C + h * hs, qkv.data() + 2 * C + h * hs, hs, o.data() + h * hs, lse.data(),
          3 * C, C);
  backward(lay, qkv.data() + h * hs, qkv.data() + C + h * hs, qkv.data() + 2 * C + h * hs, o.data() + h * hs, lse.data(),
           dout_full.data() + h * hs, hs, dqkv.data() + h * hs, dqkv.data() + C + h * hs, dqkv.data() + 2 * C + h * hs,
           3 * C, C);
  // Same head, unpacked.
  std::vector<float> q(T * hs), k(T * hs), v(T * hs), dout(T * hs);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < hs; ++c) {
      q[t * hs + c] = qkv[t * 3 * C + h * hs + c];
      k[t * hs + c] = qkv[t * 3 * C + C + h * hs + c];
      v[t * hs + c] = qkv[t * 3 * C + 2 * C + h * hs + c];
      dout[t * hs + c] = dout_full[t * C + h * hs + c];
    }
  std::vector<float> o2(T * hs), lse2(T), dq(T * hs), dk(T * hs), dv(T * hs);
  forward(lay, q.data(), k.data(), v.data(), hs, o2.data(), lse2.data());
  backward(lay, q.data(), k.data(), v.data(), o2.data(), lse2.data(), dout.data(), hs, dq.data(), dk.data(), dv.data());
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t c = 0; c < hs; ++c) {
      REQUIRE(o[t * C + h * hs + c] == o2[t * hs + c]);
      REQUIRE(dqkv[t * 3 * C + h * hs + c] == dq[t * hs + c]);
      REQUIRE(dqkv[t * 3 * C + C + h * hs + c] == dk[t * hs + c]);
      REQUIRE(dqkv[t * 3 * C + 2 * C + h * hs + c] == dv[t * hs + c]);
      REQUIRE(o[t * C + c] == 0.f);  // head 0 untouched
    }
}

TEST_CASE("pattern fractions at T = 1024 / stride 128 (MST: 23% / 1% / 24% / 13%)", "[attention]") {
  const std::size_t T = 1024;
  const double causal = double(T * (T + 1) / 2);
  // Element-level (the paper's masks), closed forms:
  //   local: sum_i min(i+1, 128) = 128*129/2 + 896*128; strided: sum_i (floor(i/128)+1) = 128*36;
  //   local+strided: local + strided entries at distance >= 128 (4608 - 1024);
  //   fixed (summary 1): 8 diagonal triangles + 128 * (0+1+...+7) summary entries.
  struct row {
    pattern kind;
    double expect;
    double paper;
  } rows[] = {{pattern::local, 122944, 0.23}, {pattern::strided, 4608, 0.01},
              {pattern::local_strided, 126528, 0.24}, {pattern::fixed, 66048 + 3584, 0.13}};
  std::printf("\nHSA pattern fractions of causal entries, T=1024, stride 128 (summary 1 for fixed):\n");
  std::printf("%-14s %8s %6s | in kept blocks: cover B=128/64/32/16     | blockwise B=128/64/32/16\n", "pattern", "kept",
              "paper");
  for (const auto& r : rows) {
    const pattern_spec p{r.kind, 128, 1};
    const auto exact = layout::cover(p, T, 128);
    CHECK(double(exact.kept_entries()) == r.expect);
    CHECK(std::round(exact.kept_fraction() * 100) == std::round(r.paper * 100));
    std::printf("%-14s %7.2f%% %5.0f%% |", std::string(to_string(r.kind)).c_str(), 100 * r.expect / causal, 100 * r.paper);
    for (std::size_t B : {128, 64, 32, 16}) std::printf(" %6.1f%%", 100 * layout::cover(p, T, B).computed_fraction());
    std::printf("   |");
    for (std::size_t B : {128, 64, 32, 16}) std::printf(" %6.1f%%", 100 * layout::blockwise(p, T, B).computed_fraction());
    std::printf("\n");
  }
  // Block granularity at B = stride = 128: local covers the diagonal and sub-diagonal blocks
  // (distance < 128 crosses one block boundary); strided and fixed touch every block.
  CHECK(layout::cover({pattern::local, 128}, T, 128).kept_blocks() == 15);
  CHECK(layout::cover({pattern::strided, 128}, T, 128).kept_blocks() == 36);
  CHECK(layout::blockwise({pattern::local, 128}, T, 128).kept_blocks() == 8);
  CHECK(layout::blockwise({pattern::strided, 128}, T, 16).computed_entries() < layout::causal(T, 16).computed_entries());
  CHECK(layout::causal(T, 128).computed_fraction() == 1.0);
}

TEST_CASE("hybrid attention follows the schedule's HSA window", "[attention]") {
  msparse::mst_options o;
  o.total_steps = 1000;
  o.warmup_fraction = 0.2;
  const auto s = msparse::schedule::mst(o);
  const hybrid h({pattern::local_strided, 64}, 256, 32);
  CHECK(&h.at(s, 0) == &h.sparse());
  CHECK(&h.at(s, 199) == &h.sparse());
  CHECK(&h.at(s, 200) == &h.dense());
  CHECK(h.work_fraction(s, 500) == 1.0);
  CHECK(h.work_fraction(s, 10) == Approx(h.sparse().kept_fraction()));
  CHECK(h.work_fraction(s, 10) < 0.5);  // local+strided at stride 64, T 256
  CHECK(h.sparse().computed_fraction() < 0.75);  // blocks of 32: 72% of causal entries in kept blocks
  CHECK(forward_flops(h.dense(), 64) == 4.0 * 64 * (256.0 * 257 / 2));
  CHECK(backward_flops(h.sparse(), 64) == 2 * forward_flops(h.sparse(), 64));
}
