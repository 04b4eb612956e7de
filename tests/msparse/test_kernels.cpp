// Storage format and kernel building blocks: dense+mask <-> sparse round trip, the
// transposed (CSC) index and panel pointers, the entry order, the token tiles, the SIMD
// helpers, and the SpMM/SDDMM kernels called directly (strided output, accumulation).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "hcomm/exec/host.hpp"
#include "msparse/format/csr.hpp"
#include "msparse/kernels/sddmm.hpp"
#include "msparse/kernels/simd.hpp"
#include "msparse/kernels/spmm.hpp"
#include "msparse/kernels/tiles.hpp"

using msparse::format::index_t;
using msparse::format::sparse_matrix;

namespace {

std::vector<std::uint8_t> random_mask(std::size_t rows, std::size_t cols, double sparsity, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::uint8_t> m(rows * cols);
  for (auto& v : m) v = u(g) >= sparsity ? 1 : 0;
  return m;
}

std::vector<float> random_values(std::size_t n, std::uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

}  // namespace

TEST_CASE("dense + mask -> sparse -> dense round trip", "[msparse][format]") {
  const std::size_t rows = GENERATE(1, 7, 600), cols = GENERATE(1, 13, 1100);
  const double sparsity = GENERATE(0.0, 0.5, 0.9, 1.0);
  INFO(rows << "x" << cols << " sparsity " << sparsity);
  const auto mask = random_mask(rows, cols, sparsity, static_cast<std::uint32_t>(rows * 31 + cols));
  const auto w = random_values(rows * cols, 5);
  const auto m = sparse_matrix::from_dense(w.data(), mask.data(), rows, cols);
  std::size_t active = 0;
  for (auto v : mask) active += v;
  REQUIRE(m.nnz() == active);
  CHECK(m.density() == Approx(static_cast<double>(active) / static_cast<double>(rows * cols)));

  std::vector<float> back(rows * cols, 99.0f);
  m.to_dense(back.data());
  for (std::size_t i = 0; i < rows * cols; ++i) REQUIRE(back[i] == (mask[i] ? w[i] : 0.0f));
  std::vector<std::uint8_t> mask_back(rows * cols, 7);
  m.to_mask(mask_back.data());
  CHECK(mask_back == mask);

  // scatter writes active positions only; gather reads them back
  std::vector<float> canvas(rows * cols, std::numeric_limits<float>::quiet_NaN());
  m.scatter_to(canvas.data());
  for (std::size_t i = 0; i < rows * cols; ++i)
    REQUIRE((mask[i] ? canvas[i] == w[i] : std::isnan(canvas[i])));
  std::vector<float> packed(m.nnz(), -1.0f);
  m.gather_values(w.data(), packed.data());
  CHECK(std::equal(packed.begin(), packed.end(), m.values().begin()));

  // CSR structure: each row's entries are grouped by panel, scrambled inside a panel, unique
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<index_t> seen;
    for (index_t p = m.row_ptr()[r]; p < m.row_ptr()[r + 1]; ++p) {
      REQUIRE(mask[r * cols + m.col_idx()[p]]);
      if (p > m.row_ptr()[r])
        REQUIRE(msparse::format::entry_order_key(m.col_idx()[p - 1]) < msparse::format::entry_order_key(m.col_idx()[p]));
      seen.push_back(m.col_idx()[p]);
    }
    std::sort(seen.begin(), seen.end());
    REQUIRE(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
  }
  // CSC index: column c lists exactly the active rows of column c, mapped to CSR positions
  std::vector<float> vt(m.nnz());
  m.transposed_values(vt.data());
  std::size_t total = 0;
  for (std::size_t c = 0; c < cols; ++c)
    for (index_t q = m.col_ptr()[c]; q < m.col_ptr()[c + 1]; ++q) {
      const index_t r = m.row_idx()[q], p = m.csc_to_csr()[q];
      REQUIRE(m.col_idx()[p] == c);
      REQUIRE(p >= m.row_ptr()[r]);
      REQUIRE(p < m.row_ptr()[r + 1]);
      REQUIRE(vt[q] == w[r * cols + c]);
      ++total;
    }
  CHECK(total == m.nnz());
  // panel pointers split each line exactly at panel boundaries
  const std::size_t np = m.row_panel_count();
  for (std::size_t r = 0; r < rows; ++r) {
    const index_t* pp = m.row_panels() + r * (np + 1);
    REQUIRE(pp[0] == m.row_ptr()[r]);
    REQUIRE(pp[np] == m.row_ptr()[r + 1]);
    for (std::size_t q = 0; q < np; ++q)
      for (index_t p = pp[q]; p < pp[q + 1]; ++p) REQUIRE(m.col_idx()[p] / msparse::format::panel_columns == q);
  }
}

TEST_CASE("the packing order is a function of the pattern only", "[msparse][format]") {
  const auto mask = random_mask(50, 700, 0.7, 1);
  const auto a = sparse_matrix::from_dense(random_values(50 * 700, 1).data(), mask.data(), 50, 700);
  const auto b = sparse_matrix::from_dense(random_values(50 * 700, 2).data(), mask.data(), 50, 700);
  REQUIRE(a.nnz() == b.nnz());
  CHECK(std::equal(a.col_idx(), a.col_idx() + a.nnz(), b.col_idx()));
  CHECK(std::equal(a.row_idx(), a.row_idx() + a.nnz(), b.row_idx()));
}

TEST_CASE("from_csr checks its input and equals from_dense", "[msparse][format]") {
  // 2 x 4: row 0 has columns 1, 3; row 1 column 0
  auto m = sparse_matrix::from_csr(2, 4, {0, 2, 3}, {1, 3, 0}, {1.0f, 2.0f, 3.0f});
  std::vector<float> d(8);
  m.to_dense(d.data());
  CHECK(d == std::vector<float>{0, 1, 0, 2, 3, 0, 0, 0});
  CHECK_THROWS_AS(sparse_matrix::from_csr(2, 4, {0, 2, 3}, {3, 1, 0}, {1, 2, 3}), hcomm::error);  // unsorted
  CHECK_THROWS_AS(sparse_matrix::from_csr(2, 4, {0, 2, 3}, {1, 4, 0}, {1, 2, 3}), hcomm::error);  // out of range
  CHECK_THROWS_AS(sparse_matrix::from_csr(2, 4, {0, 2}, {1, 3}, {1, 2}), hcomm::error);           // short row_ptr
}

TEST_CASE("8x8 transpose and lane reductions", "[msparse][kernels]") {
  using namespace msparse::kernels;
  float m[8][8];
  f8 r[8];
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) m[i][j] = static_cast<float>(i * 8 + j);
    load8(r[i], m[i]);
  }
  f8 s8;
  reduce8x8(s8, r);
  for (int i = 0; i < 8; ++i) {
    float e = 0;
    for (int j = 0; j < 8; ++j) e += m[i][j];
    CHECK(s8[i] == e);
  }
  f8 s4;
  reduce4x8(s4, r);
  for (int i = 0; i < 4; ++i) CHECK(s4[i] == s8[i]);
  transpose8x8(r);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) CHECK(r[i][j] == m[j][i]);
}

TEST_CASE("token tiles hold the transposed input, zero past the last token", "[msparse][kernels]") {
  const std::size_t tokens = GENERATE(1, 63, 64, 130), K = GENERATE(1, 9, 70, 200), ld = K + 3;
  const auto x = random_values(tokens * ld, 3);
  constexpr int T = 64;
  const std::size_t n_tiles = msparse::kernels::tile_count(tokens, T);
  std::vector<float> xt(n_tiles * K * T, 99.0f);
  msparse::kernels::to_tiles<T> k{x.data(), xt.data(), tokens, K, ld};
  msparse::kernels::launch(hcomm::exec::host{}, k.items(), k);
  for (std::size_t j = 0; j < n_tiles; ++j)
    for (std::size_t f = 0; f < K; ++f)
      for (std::size_t t = 0; t < T; ++t) {
        const std::size_t tok = j * T + t;
        REQUIRE(xt[j * K * T + f * T + t] == (tok < tokens ? x[tok * ld + f] : 0.0f));
      }
}

TEST_CASE("SpMM and SDDMM kernels called directly", "[msparse][kernels]") {
  using namespace msparse::kernels;
  const std::size_t rows = 70, K = 600, tokens = 100, ldc = rows + 5;
  const auto mask = random_mask(rows, K, 0.8, 9);
  const auto w = random_values(rows * K, 10);
  const auto m = sparse_matrix::from_dense(w.data(), mask.data(), rows, K);
  const auto x = random_values(tokens * K, 11);
  std::vector<float> xt(tile_count(tokens, 64) * K * 64);
  to_tiles<64> tk{x.data(), xt.data(), tokens, K, K};
  hcomm::exec::host ex;
  launch(ex, tk.items(), tk);

  // C (ldc-strided) = X W^T; the extra columns of C are not touched; accumulate adds
  std::vector<float> c(tokens * ldc, -3.0f);
  spmm_tiles<64> f{m.row_panels(), m.row_panel_count(), m.col_idx(), m.values().data(), xt.data(), nullptr,
                   c.data(), rows, K, tokens, ldc, false};
  launch(ex, f.items(), f);
  for (std::size_t t = 0; t < tokens; ++t) {
    for (std::size_t r = 0; r < rows; ++r) {
      double ref = 0, abs = 0;
      for (std::size_t k = 0; k < K; ++k) {
        const double v = mask[r * K + k] ? double(w[r * K + k]) * x[t * K + k] : 0.0;
        ref += v;
        abs += std::fabs(v);
      }
      REQUIRE(std::fabs(c[t * ldc + r] - ref) <= 2e-5 * abs + 1e-30);
    }
    for (std::size_t r = rows; r < ldc; ++r) REQUIRE(c[t * ldc + r] == -3.0f);
  }
  std::vector<float> c2 = c;
  f.c = c2.data();
  f.accumulate = true;
  launch(ex, f.items(), f);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t r = 0; r < rows; ++r) REQUIRE(c2[t * ldc + r] == Approx(2.0f * c[t * ldc + r]).margin(1e-4));

  // SDDMM: out[p] = sum_t dy[t, row] x[t, col] for every entry, blocks of rows
  const auto dy = random_values(tokens * rows, 12);
  std::vector<float> dyt(tile_count(tokens, 64) * rows * 64);
  to_tiles<64> tdy{dy.data(), dyt.data(), tokens, rows, rows};
  launch(ex, tdy.items(), tdy);
  const std::vector<index_t> bounds{0, 1, 30, 31, static_cast<index_t>(rows)};
  std::vector<float> g(m.nnz(), 5.0f);
  sddmm_tiles s{m.row_ptr(), m.col_idx(), dyt.data(), xt.data(), g.data(), rows, K, tokens, bounds.data(), 4, false};
  launch(ex, s.items(), s);
  for (std::size_t r = 0; r < rows; ++r)
    for (index_t p = m.row_ptr()[r]; p < m.row_ptr()[r + 1]; ++p) {
      const std::size_t k = m.col_idx()[p];
      double ref = 0, abs = 0;
      for (std::size_t t = 0; t < tokens; ++t) {
        ref += double(dy[t * rows + r]) * x[t * K + k];
        abs += std::fabs(double(dy[t * rows + r]) * x[t * K + k]);
      }
      REQUIRE(std::fabs(g[p] - ref) <= 2e-5 * abs + 1e-30);
    }
}

TEST_CASE("panel-blocked index: every entry once, in its block/panel/line segment", "[msparse][format]") {
  using msparse::format::blocked_pattern;
  const std::size_t rows = GENERATE(1, 70, 300), cols = GENERATE(1, 97, 600);
  const std::size_t R = GENERATE(1, 64), F = GENERATE(7, 96);
  const auto mask = random_mask(rows, cols, 0.7, static_cast<std::uint32_t>(rows + cols));
  const auto w = random_values(rows * cols, 4);
  const auto m = sparse_matrix::from_dense(w.data(), mask.data(), rows, cols);
  for (int transposed = 0; transposed < 2; ++transposed) {
    INFO(rows << "x" << cols << " R " << R << " F " << F << " transposed " << transposed);
    const std::size_t lines = transposed ? cols : rows, extent = transposed ? rows : cols;
    const auto b = transposed ? blocked_pattern::build(m.col_ptr(), m.row_idx(), m.csc_to_csr(), lines, extent, R, F)
                              : blocked_pattern::build(m.row_ptr(), m.col_idx(), nullptr, lines, extent, R, F);
    REQUIRE(b.nnz() == m.nnz());
    REQUIRE(b.seg.size() == b.segments() + 1);
    REQUIRE(b.seg.back() == m.nnz());
    std::vector<int> seen(m.nnz(), 0);
    for (std::size_t blk = 0; blk < b.n_blocks; ++blk)
      for (std::size_t q = 0; q < b.n_panels; ++q)
        for (std::size_t i = 0; i < R; ++i) {
          const std::size_t s = (blk * b.n_panels + q) * R + i, line = blk * R + i;
          REQUIRE(b.seg[s] <= b.seg[s + 1]);
          if (line >= lines) REQUIRE(b.seg[s] == b.seg[s + 1]);
          for (index_t p = b.seg[s]; p < b.seg[s + 1]; ++p) {
            REQUIRE(b.idx[p] / F == q);
            const index_t src = b.src[p];
            ++seen[src];
            // src is the CSR position: its row and column must be (line, idx) or transposed
            const std::size_t r = transposed ? b.idx[p] : line, c = transposed ? line : b.idx[p];
            REQUIRE(m.col_idx()[src] == c);
            REQUIRE(src >= m.row_ptr()[r]);
            REQUIRE(src < m.row_ptr()[r + 1]);
          }
        }
    for (int v : seen) REQUIRE(v == 1);
    // gather / scatter move values between the two orders
    std::vector<float> blk_vals(m.nnz()), back(m.nnz(), 0.0f);
    b.gather(m.values().data(), blk_vals.data());
    b.scatter(blk_vals.data(), back.data(), false);
    CHECK(std::equal(back.begin(), back.end(), m.values().begin()));
    b.scatter(blk_vals.data(), back.data(), true);
    for (std::size_t p = 0; p < m.nnz(); ++p) REQUIRE(back[p] == 2.0f * m.values()[p]);
  }
}

TEST_CASE("blocked SpMM and SDDMM kernels called directly", "[msparse][kernels]") {
  using namespace msparse::kernels;
  using msparse::format::blocked_pattern;
  const std::size_t rows = 70, K = 600, tokens = 100, ldc = rows + 5;
  const double sparsity = GENERATE(0.5, 0.9, 0.99);
  const auto mask = random_mask(rows, K, sparsity, 19);
  const auto w = random_values(rows * K, 20);
  const auto bias = random_values(rows, 23);
  const auto m = sparse_matrix::from_dense(w.data(), mask.data(), rows, K);
  const auto b = blocked_pattern::build(m.row_ptr(), m.col_idx(), nullptr, rows, K, 16, 96);
  std::vector<float> vals(m.nnz());
  b.gather(m.values().data(), vals.data());
  const auto x = random_values(tokens * K, 21);
  std::vector<float> xt(tile_count(tokens, 64) * K * 64);
  to_tiles<64> tk{x.data(), xt.data(), tokens, K, K};
  hcomm::exec::host ex;
  launch(ex, tk.items(), tk);

  // C (ldc-strided) = X W^T + bias; the extra columns of C are not touched; accumulate adds
  std::vector<float> c(tokens * ldc, -3.0f);
  spmm_blocked<16> f{b.seg.data(), b.n_panels, b.panel_width, b.idx.data(), vals.data(), xt.data(), bias.data(),
                     c.data(), rows, K, tokens, ldc, false};
  launch(ex, f.items(), f);
  for (std::size_t t = 0; t < tokens; ++t) {
    for (std::size_t r = 0; r < rows; ++r) {
      double ref = bias[r], abs = std::fabs(bias[r]);
      for (std::size_t k = 0; k < K; ++k) {
        const double v = mask[r * K + k] ? double(w[r * K + k]) * x[t * K + k] : 0.0;
        ref += v;
        abs += std::fabs(v);
      }
      REQUIRE(std::fabs(c[t * ldc + r] - ref) <= 2e-5 * abs + 1e-30);
    }
    for (std::size_t r = rows; r < ldc; ++r) REQUIRE(c[t * ldc + r] == -3.0f);
  }
  std::vector<float> c2 = c;
  f.c = c2.data();
  f.accumulate = true;
  launch(ex, f.items(), f);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t r = 0; r < rows; ++r) REQUIRE(c2[t * ldc + r] == Approx(2.0f * c[t * ldc + r]).margin(1e-4));

  // SDDMM in blocked order, scattered back to the CSR order
  const auto dy = random_values(tokens * rows, 22);
  std::vector<float> dyt(tile_count(tokens, 64) * rows * 64);
  to_tiles<64> tdy{dy.data(), dyt.data(), tokens, rows, rows};
  launch(ex, tdy.items(), tdy);
  std::vector<float> gb(m.nnz(), 5.0f), g(m.nnz(), 7.0f);
  sddmm_blocked<16> s{b.seg.data(), b.n_panels, b.panel_width, b.idx.data(), dyt.data(), xt.data(), gb.data(),
                      rows, K, tokens};
  launch(ex, s.items(), s);
  b.scatter(gb.data(), g.data(), false);
  for (std::size_t r = 0; r < rows; ++r)
    for (index_t p = m.row_ptr()[r]; p < m.row_ptr()[r + 1]; ++p) {
      const std::size_t k = m.col_idx()[p];
      double ref = 0, abs = 0;
      for (std::size_t t = 0; t < tokens; ++t) {
        ref += double(dy[t * rows + r]) * x[t * K + k];
        abs += std::fabs(double(dy[t * rows + r]) * x[t * K + k]);
      }
      REQUIRE(std::fabs(g[p] - ref) <= 2e-5 * abs + 1e-30);
    }
}
