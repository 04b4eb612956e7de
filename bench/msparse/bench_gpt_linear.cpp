// The sparse linear layer against dense sgemm at the shapes of train_gpt --model small (C 128,
// batch 8 x T 128 = 1024 tokens): where the sparse kernels break even, which sets
// train_gpt's --dense-above default (bench/msparse/RESULTS.md).
//
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 msparse_bench_gpt_linear --benchmark_min_time=0.3
//
// One iteration = forward + input gradient + weight gradient of one layer: dense is three
// sgemm; sparse is SpMM + the fused backward (transposed SpMM, SDDMM at active positions),
// as train_gpt runs them. args: shape (0 qkv 384x128, 1 attn.out 128x128, 2 mlp.fc 512x128,
// 3 mlp.proj 128x512), density in percent (random mask).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <random>
#include <vector>

#include "msparse/layer/sparse_linear.hpp"

namespace {

constexpr std::size_t kTokens = 1024;
constexpr std::size_t kShapes[4][2] = {{384, 128}, {128, 128}, {512, 128}, {128, 512}};  // out, in

struct data {
  std::size_t out, in;
  std::vector<float> x, dy, y, dx, w, dw;
  explicit data(int s) : out(kShapes[s][0]), in(kShapes[s][1]) {
    x.resize(kTokens * in);
    dx.resize(kTokens * in);
    dy.resize(kTokens * out);
    y.resize(kTokens * out);
    w.resize(out * in);
    dw.resize(out * in);
    std::mt19937 g(3);
    std::normal_distribution<float> nd;
    for (auto* v : {&x, &dy, &w})
      for (auto& e : *v) e = nd(g);
  }
};

void dense(benchmark::State& st) {
  data D(static_cast<int>(st.range(0)));
  const int n = kTokens, o = static_cast<int>(D.out), i = static_cast<int>(D.in);
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, o, i, 1.f, D.x.data(), i, D.w.data(), i, 0.f, D.y.data(), o);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, i, o, 1.f, D.dy.data(), o, D.w.data(), i, 0.f, D.dx.data(), i);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, o, i, n, 1.f, D.dy.data(), o, D.x.data(), i, 0.f, D.dw.data(), i);
    benchmark::ClobberMemory();
  }
}

void sparse(benchmark::State& st) {
  data D(static_cast<int>(st.range(0)));
  const double density = static_cast<double>(st.range(1)) / 100.0;
  std::vector<std::uint8_t> mask(D.out * D.in);
  std::mt19937 g(11);
  std::uniform_real_distribution<double> u;
  for (auto& m : mask) m = u(g) < density ? 1 : 0;
  msparse::layer::sparse_linear<> lin(D.in, D.out, false);
  lin.set_weight(D.w.data(), mask.data());
  std::vector<float> gp(lin.weight().nnz());
  for (auto _ : st) {
    lin.forward(D.x.data(), kTokens, D.y.data());
    lin.backward(D.dy.data(), nullptr, kTokens, D.dx.data(), gp.data(), nullptr, false);
    benchmark::ClobberMemory();
  }
}

}  // namespace

BENCHMARK(dense)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);
BENCHMARK(sparse)->ArgsProduct({{0, 1, 2, 3}, {10, 20, 30, 40, 50, 60, 73}})->Unit(benchmark::kMicrosecond);
#include "../openblas_main.hpp"
