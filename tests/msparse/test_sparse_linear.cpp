// Sparse linear layer against dense-with-mask references (OpenBLAS sgemm on the masked
// dense weight): forward, input gradient, weight gradient at active positions, bias
// gradient, on odd shapes and 0% .. 100% sparsity, with both host bodies (AVX2 and
// baseline) and one or two threads.
#include "hcomm/core/cpu_features.hpp"
#include "test_sparse_linear_check.hpp"

TEST_CASE("sparse_linear equals dense-with-mask on odd shapes and all sparsities", "[msparse][sparse_linear]") {
  const bool baseline = GENERATE(false, true);
  const hcomm::cpu::force_portable portable(baseline);
  REQUIRE(hcomm::cpu::use_avx2() == (!baseline && hcomm::cpu::host_features().avx2_tier()));
  const double sparsity = GENERATE(0.0, 0.5, 0.9, 0.99, 1.0);
  SECTION("small odd shapes") {
    run_case(3, 5, 1, sparsity, 1, false);
    run_case(17, 33, 70, sparsity, 2, false);
    run_case(65, 129, 131, sparsity, 2, false, /*bias*/ false);
  }
  SECTION("several column panels in the forward, several row panels in the backward") {
    run_case(40, 1100, 67, sparsity, 2, false);
    run_case(1030, 37, 65, sparsity, 1, false);
  }
  SECTION("empty rows and columns, one dense row") {
    run_case(97, 203, 100, sparsity, 2, true);
    run_case(97, 203, 100, sparsity, 1, true);  // one thread: the tile-by-tile backward
  }
}

TEST_CASE("sparse_linear at the benchmark shape", "[msparse][sparse_linear]") {
  const double sparsity = GENERATE(0.8, 0.9);
  const int threads = GENERATE(1, 2);
  run_case(3072, 768, 96, sparsity, threads, false);
}

// One thread runs the backward tile by tile (dY transposed one tile at a time), more
// threads the three-launch order; both sum the same terms in the same order.
TEST_CASE("sparse_linear gradients are bitwise the same on one and two threads", "[msparse][sparse_linear]") {
  const double sparsity = GENERATE(0.5, 0.9);
  problem p = make_problem(300, 200, 150, sparsity, 17);
  std::vector<float> dx[2], dw[2], y[2];
  for (int t = 0; t < 2; ++t) {
    hcomm::exec::host ex;
    ex.threads = t + 1;
    sparse_linear<> layer(200, 300, false, ex);
    layer.set_weight(p.w.data(), p.mask.data());
    y[t].resize(150 * 300);
    dx[t].resize(150 * 200);
    dw[t].resize(layer.weight().nnz());
    layer.forward(p.x.data(), 150, y[t].data());
    layer.backward(p.dy.data(), nullptr, 150, dx[t].data(), dw[t].data(), nullptr);
  }
  CHECK(y[0] == y[1]);
  CHECK(dx[0] == dx[1]);
  CHECK(dw[0] == dw[1]);
}

TEST_CASE("sparse_linear with zero tokens writes zero gradients", "[msparse][sparse_linear]") {
  problem p = make_problem(8, 12, 0, 0.5, 3);
  sparse_linear<> layer(12, 8);
  layer.set_weight(p.w.data(), p.mask.data());
  std::vector<float> dw(layer.weight().nnz(), 5.0f), db(8, 5.0f);
  layer.backward(p.dy.data(), p.x.data(), 0, nullptr, dw.data(), db.data());
  for (float v : dw) CHECK(v == 0.0f);
  for (float v : db) CHECK(v == 0.0f);
}

TEST_CASE("sparse_linear rejects a weight of the wrong shape", "[msparse][sparse_linear]") {
  sparse_linear<> layer(12, 8);
  std::vector<std::uint8_t> mask(8 * 13, 1);
  CHECK_THROWS_AS(layer.set_weight(msparse::format::sparse_matrix::from_dense<std::uint8_t>(nullptr, mask.data(), 8, 13)),
                  hcomm::error);
}
