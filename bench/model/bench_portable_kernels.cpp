// train_gpt's portable kernels (examples/gpt/portable/, the source a GPU runs) on the host
// executor, side by side with the host loops of kernels.hpp and optim.hpp that the CPU
// trainer runs, at the shapes of the presets: whether the CPU path can run the portable
// kernels without losing speed. One thread (the trainer's setting with one rank per core).
//
//   OMP_NUM_THREADS=1 build/bench/model/model_bench_portable_kernels --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "hcomm/exec/host.hpp"
#include "kernels.hpp"
#include "portable/adamw.hpp"
#include "portable/attention.hpp"
#include "portable/gelu.hpp"
#include "portable/layernorm.hpp"

namespace {
std::vector<float> randn(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}
struct ln_data {
  int N, C;
  std::vector<float> x, w, b, dout, out, mean, rstd, dx, dw, db, partial;
  ln_data(int n, int c)
      : N(n), C(c), x(randn(std::size_t(n) * c, 1)), w(randn(c, 2)), b(randn(c, 3)), dout(randn(x.size(), 4)),
        out(x.size()), mean(n), rstd(n), dx(x.size()), dw(c), db(c),
        partial(gpt::portable::column_chunks(std::size_t(n)) * 2 * std::size_t(c)) {}
};
// (N, C): bert-small / small-256 (16 x 128 rows, C 256), gpt2-124m at B 1 (1024 rows, C 768)
void shapes(benchmark::internal::Benchmark* b) { b->Args({2048, 256})->Args({1024, 768}); }

void BM_layernorm_fwd_bwd_loops(benchmark::State& st) {
  ln_data d(static_cast<int>(st.range(0)), static_cast<int>(st.range(1)));
  for (auto _ : st) {
    gpt::k::layernorm_forward(d.out.data(), d.mean.data(), d.rstd.data(), d.x.data(), d.w.data(), d.b.data(), d.N, d.C);
    gpt::k::layernorm_backward(d.dx.data(), d.dw.data(), d.db.data(), d.dout.data(), d.x.data(), d.w.data(),
                               d.mean.data(), d.rstd.data(), d.N, d.C);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * d.N * d.C * 4 * 6);
}
void BM_layernorm_fwd_bwd_portable(benchmark::State& st) {
  ln_data d(static_cast<int>(st.range(0)), static_cast<int>(st.range(1)));
  hcomm::exec::host ex;
  const int team = 128;
  for (auto _ : st) {
    ex.launch(d.N, team, gpt::portable::layernorm_forward{d.out.data(), d.mean.data(), d.rstd.data(), d.x.data(),
                                                          d.w.data(), d.b.data(), d.C});
    ex.launch(d.N, team, gpt::portable::layernorm_backward_input{d.dx.data(), d.dout.data(), d.x.data(), d.w.data(),
                                                                 d.mean.data(), d.rstd.data(), d.C});
    gpt::portable::layernorm_backward_params(ex, d.partial.data(), d.dw.data(), d.db.data(), d.dout.data(), d.x.data(),
                                             d.mean.data(), d.rstd.data(), d.N, d.C);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * d.N * d.C * 4 * 6);
}
BENCHMARK(BM_layernorm_fwd_bwd_loops)->Apply(shapes);
BENCHMARK(BM_layernorm_fwd_bwd_portable)->Apply(shapes);

// GELU over the MLP's hidden activations (4C per row)
void BM_gelu_fwd_bwd_loops(benchmark::State& st) {
  const std::size_t n = static_cast<std::size_t>(st.range(0)) * 4 * st.range(1);
  auto x = randn(n, 5), y = x, d = randn(n, 6);
  for (auto _ : st) {
    gpt::k::gelu_forward(y.data(), x.data(), static_cast<gpt::k::idx>(n));
    gpt::k::gelu_backward(d.data(), x.data(), d.data(), static_cast<gpt::k::idx>(n));
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * n * 4 * 4));
}
void BM_gelu_fwd_bwd_portable(benchmark::State& st) {
  const std::size_t n = static_cast<std::size_t>(st.range(0)) * 4 * st.range(1);
  auto x = randn(n, 5), y = x, d = randn(n, 6);
  hcomm::exec::host ex;
  for (auto _ : st) {
    ex.for_each(n, gpt::portable::gelu_forward{y.data(), x.data()});
    ex.for_each(n, gpt::portable::gelu_backward{d.data(), x.data(), d.data()});
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * n * 4 * 4));
}
BENCHMARK(BM_gelu_fwd_bwd_loops)->Apply(shapes);
BENCHMARK(BM_gelu_fwd_bwd_portable)->Apply(shapes);

// Attention forward at bert-small's shape (B 16, T 128, 4 heads of 64), causal and not
void BM_attention_fwd_loops(benchmark::State& st) {
  const int B = 16, T = 128, nh = 4, hd = 64;
  const bool causal = st.range(0) != 0;
  auto qkv = randn(static_cast<std::size_t>(B) * T * 3 * nh * hd, 11);
  std::vector<float> out(static_cast<std::size_t>(B) * T * nh * hd), att(static_cast<std::size_t>(B) * nh * T * T);
  for (auto _ : st) {
    gpt::k::attention_forward(out.data(), att.data(), qkv.data(), B, T, nh, hd, causal);
    benchmark::ClobberMemory();
  }
}
void BM_attention_fwd_portable(benchmark::State& st) {
  const int B = 16, T = 128, nh = 4, hd = 64;
  const bool causal = st.range(0) != 0;
  auto qkv = randn(static_cast<std::size_t>(B) * T * 3 * nh * hd, 11);
  std::vector<float> out(static_cast<std::size_t>(B) * T * nh * hd), lse(static_cast<std::size_t>(B) * nh * T);
  hcomm::exec::host ex;
  const gpt::portable::attention_forward k{out.data(), lse.data(), qkv.data(), B, T, nh, hd, causal};
  for (auto _ : st) {
    ex.launch(k.league(), 64, k);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_attention_fwd_loops)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_attention_fwd_portable)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// AdamW over gpt2-124m's parameter count
void BM_adamw_loop(benchmark::State& st) {
  const std::size_t n = 86039040;
  auto p = randn(n, 7), m = randn(n, 8), v = randn(n, 9), g = randn(n, 10);
  for (float& x : v) x = x * x;
  const float lr = 6e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, decay = 1.f - lr * 0.1f;
  const float step_size = lr / (1.f - 0.9f), bc2_sqrt = 0.2236068f;
  for (auto _ : st) {  // optim.hpp's loop body
    for (std::size_t i = 0; i < n; ++i) {
      p[i] *= decay;
      m[i] = b1 * m[i] + (1.f - b1) * g[i];
      v[i] = b2 * v[i] + (1.f - b2) * g[i] * g[i];
      const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
      p[i] -= step_size * m[i] / denom;
    }
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * n * 4 * 7));
}
void BM_adamw_portable(benchmark::State& st) {
  const std::size_t n = 86039040;
  auto p = randn(n, 7), m = randn(n, 8), v = randn(n, 9), g = randn(n, 10);
  for (float& x : v) x = x * x;
  const auto k = gpt::portable::adamw_update::coefficients(6e-4f, 1, 0.9f, 0.95f, 1e-8f, 0.1f, true);
  hcomm::exec::host ex;
  for (auto _ : st) {
    ex.for_each(n, gpt::portable::adamw_update{p.data(), m.data(), v.data(), g.data(), k});
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * n * 4 * 7));
}
BENCHMARK(BM_adamw_loop)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_adamw_portable)->Unit(benchmark::kMillisecond);
}  // namespace

#include "../openblas_main.hpp"
