// Block-sparse (Hybrid Sparse) attention vs the trainer's dense causal attention (OpenBLAS
// sgemm + softmax), forward + backward over every head of a packed (S*T, 3C) qkv buffer,
// the way train_gpt calls them (1 thread unless OMP_NUM_THREADS says otherwise).
//
//   msparse_bench_attention --benchmark_min_time=1 [--benchmark_format=json]
//
// Shapes: the trainer's --model small (S 8, 4 heads of 32, T 128) and medium (S 16, 8 heads
// of 32, T 256). Sparse layouts: the MST default (local+strided, stride = block = T/8,
// cover) and the local band. Counters: "kept" = fraction of the causal entries the layout
// keeps (what the FLOP counter charges), per-call time in the benchmark's time column.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "../../examples/gpt/kernels.hpp"
#include "msparse/attention/block_sparse.hpp"

namespace {

namespace at = msparse::attention;

struct shape {
  int S, nh, hd, T;
};
constexpr shape kShapes[] = {{8, 4, 32, 128}, {16, 8, 32, 256}};

struct data {
  shape s;
  std::vector<float> qkv, dout, out, att, dqkv, scratch, delta;
  explicit data(shape sh) : s(sh) {
    const std::size_t N = std::size_t(s.S) * s.T, C = std::size_t(s.nh) * s.hd;
    qkv.resize(N * 3 * C);
    dout.resize(N * C);
    out.resize(N * C);
    att.resize(std::size_t(s.S) * s.nh * s.T * s.T);
    dqkv.resize(N * 3 * C);
    scratch.resize(std::size_t(s.T) * s.T);
    std::mt19937 g(7);
    std::normal_distribution<float> d(0.f, 1.f);
    for (auto& x : qkv) x = d(g);
    for (auto& x : dout) x = d(g);
  }
};

void dense(benchmark::State& st) {
  data D(kShapes[st.range(0)]);
  const auto& s = D.s;
  const bool bwd = st.range(1) != 0;
  gpt::k::attention_forward(D.out.data(), D.att.data(), D.qkv.data(), s.S, s.T, s.nh, s.hd);
  for (auto _ : st) {
    if (!bwd) gpt::k::attention_forward(D.out.data(), D.att.data(), D.qkv.data(), s.S, s.T, s.nh, s.hd);
    else
      gpt::k::attention_backward(D.dqkv.data(), D.scratch.data(), D.dout.data(), D.qkv.data(), D.att.data(), s.S, s.T,
                                 s.nh, s.hd);
    benchmark::ClobberMemory();
  }
  st.counters["kept"] = 1.0;
}

void sparse(benchmark::State& st) {
  data D(kShapes[st.range(0)]);
  const auto& s = D.s;
  const bool bwd = st.range(1) != 0;
  const std::size_t stride = std::size_t(s.T) / 8;
  const auto kind = st.range(2) == 0 ? at::pattern::local_strided : at::pattern::local;
  const auto lay = at::layout::cover({kind, stride, 1}, std::size_t(s.T), stride);
  const std::size_t C = std::size_t(s.nh) * s.hd, ld = 3 * C, T = std::size_t(s.T);
  D.delta.resize(std::max(at::backward_workspace(lay, std::size_t(s.hd), ld, C), at::forward_workspace(lay, std::size_t(s.hd), ld)));
  auto fwd = [&] {
    for (int b = 0; b < s.S; ++b)
      for (int h = 0; h < s.nh; ++h) {
        const float* q = D.qkv.data() + b * T * ld + std::size_t(h) * s.hd;
        at::forward(lay, q, q + C, q + 2 * C, std::size_t(s.hd), D.out.data() + b * T * C + std::size_t(h) * s.hd,
                    D.att.data() + (std::size_t(b) * s.nh + h) * T, ld, C, D.delta.data());
      }
  };
  fwd();
  for (auto _ : st) {
    if (!bwd) fwd();
    else
      for (int b = 0; b < s.S; ++b)
        for (int h = 0; h < s.nh; ++h) {
          const std::size_t qo = b * T * ld + std::size_t(h) * s.hd, oo = b * T * C + std::size_t(h) * s.hd;
          const float* q = D.qkv.data() + qo;
          float* dq = D.dqkv.data() + qo;
          at::backward(lay, q, q + C, q + 2 * C, D.out.data() + oo, D.att.data() + (std::size_t(b) * s.nh + h) * T,
                       D.dout.data() + oo, std::size_t(s.hd), dq, dq + C, dq + 2 * C, ld, C, D.delta.data());
        }
    benchmark::ClobberMemory();
  }
  st.counters["kept"] = lay.kept_fraction();
}

}  // namespace

// args: shape (0 small, 1 medium), pass (0 forward, 1 backward), pattern (0 local+strided, 1 local)
BENCHMARK(dense)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond);
BENCHMARK(sparse)->ArgsProduct({{0, 1}, {0, 1}, {0, 1}})->Unit(benchmark::kMicrosecond);
#include "../openblas_main.hpp"
