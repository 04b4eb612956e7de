// Bidirectional (encoder, BERT) attention patterns: local, strided, local+strided, fixed and
// dense without the causal cut, block-granular (cover and blockwise layouts), run by the
// block-sparse kernels; they equal dense attention under the same element mask (forward and
// gradients), the element lists hold exactly the kept entries on both sides of the
// diagonal, and skipped blocks are not computed.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "msparse/attention/block_sparse.hpp"
#include "msparse/attention/hybrid.hpp"

#include "attention_test_util.hpp"

using namespace msparse::attention;

namespace {
using attention_test::randn;
using attention_test::rel_err;
using attention_test::check_against_reference;


pattern_spec bidir(pattern kind, std::size_t stride, std::size_t summary = 1) { return {kind, stride, summary, false}; }
}  // namespace

TEST_CASE("bidirectional block-sparse attention equals masked dense attention", "[attention][bidirectional]") {
  unsigned seed = 2000;
  for (auto kind : {pattern::dense, pattern::local, pattern::strided, pattern::local_strided, pattern::fixed})
    for (std::size_t T : {std::size_t(128), std::size_t(150)})  // a ragged last block too
      for (std::size_t B : {std::size_t(16), std::size_t(32)}) {
        check_against_reference(layout::cover(bidir(kind, 32, 2), T, B), 24, seed++);
        check_against_reference(layout::blockwise(bidir(kind, 32, 2), T, B), 32, seed++);
      }
  check_against_reference(layout::bidirectional(200, 32), 64, seed++);  // long rows, several score chunks
}

TEST_CASE("bidirectional patterns: both sides of the diagonal, exact element lists", "[attention][bidirectional]") {
  for (const auto& lay : {layout::cover(bidir(pattern::local_strided, 16), 150, 16),
                          layout::blockwise(bidir(pattern::fixed, 32, 2), 128, 16), layout::bidirectional(64, 16)}) {
    const std::size_t T = lay.T();
    REQUIRE(!lay.is_causal());
    std::size_t n = 0, above = 0;
    for (std::size_t i = 0; i < T; ++i) {
      std::vector<std::uint32_t> want;
      for (std::size_t j = 0; j < T; ++j)
        if (lay.keep(i, j)) {
          want.push_back(std::uint32_t(j));
          above += j > i;
        }
      n += want.size();
      REQUIRE(lay.keep(i, i));
      REQUIRE(std::vector<std::uint32_t>(lay.ent_col().begin() + lay.ent_ptr()[i],
                                         lay.ent_col().begin() + lay.ent_ptr()[i + 1]) == want);
    }
    CHECK(above > 0);
    CHECK(lay.kept_entries() == n);
    CHECK(lay.entries() == T * T);
    CHECK(lay.key_ptr()[T] == n);
    for (std::size_t j = 0; j < T; ++j)
      for (std::uint32_t t = lay.key_ptr()[j]; t < lay.key_ptr()[j + 1]; ++t) {
        REQUIRE(lay.ent_col()[lay.key_ent()[t]] == j);
        if (t > lay.key_ptr()[j]) REQUIRE(lay.key_row()[t - 1] < lay.key_row()[t]);
      }
  }
  // local and strided are symmetric: (i, j) kept iff (j, i) kept
  for (auto kind : {pattern::local, pattern::strided, pattern::local_strided}) {
    const auto lay = layout::cover(bidir(kind, 8), 64, 8);
    for (std::size_t i = 0; i < 64; ++i)
      for (std::size_t j = 0; j < 64; ++j) REQUIRE(lay.keep(i, j) == lay.keep(j, i));
  }
  CHECK(layout::bidirectional(64, 16).kept_fraction() == 1.0);
  // the causal layouts are unchanged: nothing above the diagonal
  const auto c = layout::cover({pattern::local_strided, 16, 1}, 64, 16);
  for (std::size_t i = 0; i < 64; ++i)
    for (std::size_t j = i + 1; j < 64; ++j) REQUIRE(!c.keep(i, j));
}

TEST_CASE("bidirectional: skipped blocks are not computed", "[attention][bidirectional]") {
  // local with stride = block: the diagonal and both neighbouring blocks
  const auto lay = layout::cover(bidir(pattern::local, 32), 256, 32);
  CHECK(lay.kept_blocks() == 8 + 2 * 7);
  CHECK(layout::bidirectional(256, 32).kept_blocks() == 64);
  CHECK(lay.kept_fraction() < 0.25);
  const std::size_t T = 256, d = 16;
  auto q = randn(T * d, 1), k = randn(T * d, 2), v = randn(T * d, 3);
  std::vector<float> o1(T * d), o2(T * d), lse(T);
  forward(lay, q.data(), k.data(), v.data(), d, o1.data(), lse.data());
  for (std::size_t j = 0; j < 32; ++j)
    for (std::size_t c = 0; c < d; ++c) v[j * d + c] = 1e6f;  // key block 0: read by query blocks 0 and 1 only
  forward(lay, q.data(), k.data(), v.data(), d, o2.data(), lse.data());
  for (std::size_t i = 64 * d; i < T * d; ++i) REQUIRE(o1[i] == o2[i]);
  for (std::size_t j = 224; j < 256; ++j)  // the last key block, read by the last two query blocks
    for (std::size_t c = 0; c < d; ++c) v[j * d + c] = -1e6f;
  std::vector<float> o3(T * d);
  forward(lay, q.data(), k.data(), v.data(), d, o3.data(), lse.data());
  for (std::size_t i = 64 * d; i < 192 * d; ++i) REQUIRE(o1[i] == o3[i]);
  CHECK(o3[(T - 1) * d] != o1[(T - 1) * d]);
}

TEST_CASE("hybrid attention of an encoder switches to dense bidirectional", "[attention][bidirectional]") {
  const hybrid h(bidir(pattern::local_strided, 8), 64, 8);
  CHECK(!h.sparse().is_causal());
  CHECK(!h.dense().is_causal());
  CHECK(h.dense().kept_entries() == 64u * 64u);
  CHECK(h.sparse().kept_fraction() < 1.0);
}
