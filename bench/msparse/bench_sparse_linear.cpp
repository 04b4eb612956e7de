// Sparse linear layer vs dense OpenBLAS sgemm, forward + backward, fp32.
//
//   msparse_bench_sparse_linear --benchmark_format=json > sparse_linear.json
//
// Shape of the target: W 3072 x 768 (768 -> 3072), 2048 tokens. One step is
// forward (y = x W^T), input gradient (dx = dY W) and weight gradient; dense does three
// sgemm, sparse does SpMM + SpMM on W^T + SDDMM at active positions. Both run with the same
// thread count (executor threads = OpenBLAS threads). Each sparse case also times the dense
// step right before its own loop and reports min-over-iterations times of both and their
// ratio ("speedup"), so load from other processes hits both sides alike; the same for
// process CPU time ("speedup_cpu"), which leaves out time spent waiting for a core. Rates: "useful"
// FLOP/s counts 2*nnz*tokens per product, "dense_equiv" FLOP/s counts the dense work.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdint>
#include <random>
#include <vector>

#include "msparse/layer/sparse_linear.hpp"

namespace {

constexpr std::size_t kIn = 768, kOut = 3072, kTokens = 2048;
using msparse::format::index_t;

extern "C" void openblas_set_num_threads(int);

struct data {
  std::vector<float> x, dy, w, y, dx, dw_dense;
  data() : x(kTokens * kIn), dy(kTokens * kOut), w(kOut * kIn), y(kTokens * kOut), dx(kTokens * kIn), dw_dense(kOut * kIn) {
    std::mt19937 g(42);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& v : x) v = u(g);
    for (auto& v : dy) v = u(g);
    for (auto& v : w) v = u(g);
  }
};
data& shared() {
  static data d;
  return d;
}

std::vector<std::uint8_t> random_mask(double sparsity, std::uint32_t seed) {
  std::vector<std::uint8_t> m(kOut * kIn);
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (auto& v : m) v = u(g) >= sparsity ? 1 : 0;
  return m;
}

using clk = std::chrono::steady_clock;
double seconds_since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }
// CPU time of the whole process (all threads): on a machine shared with other jobs, wall
// time includes waiting for a core; CPU time does not (it still includes cache damage).
double process_cpu() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
struct min_times {
  double wall = 1e30, cpu = 1e30;
  template <class F>
  void measure(F&& f) {
    const auto t = clk::now();
    const double c = process_cpu();
    f();
    cpu = std::min(cpu, process_cpu() - c);
    wall = std::min(wall, seconds_since(t));
  }
};

void dense_step(data& d) {
  const int N = kTokens, I = kIn, O = kOut;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, O, I, 1.0f, d.x.data(), I, d.w.data(), I, 0.0f, d.y.data(), O);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, I, O, 1.0f, d.dy.data(), O, d.w.data(), I, 0.0f, d.dx.data(), I);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, I, N, 1.0f, d.dy.data(), O, d.x.data(), I, 0.0f, d.dw_dense.data(), I);
}

min_times min_dense_step(data& d, int reps) {
  min_times m;
  for (int i = 0; i < reps; ++i) m.measure([&] { dense_step(d); });
  return m;
}

void set_threads(int t) { openblas_set_num_threads(t); }

// args: sparsity in permille, threads
void BM_sparse_step(benchmark::State& st) {
  const double sparsity = st.range(0) / 1000.0;
  const int threads = static_cast<int>(st.range(1));
  set_threads(threads);
  data& d = shared();
  hcomm::exec::host ex;
  ex.threads = threads;
  msparse::layer::sparse_linear<> layer(kIn, kOut, /*bias*/ false, ex);
  const auto mask = random_mask(sparsity, 7);
  layer.set_weight(d.w.data(), mask.data());
  std::vector<float> dw(layer.weight().nnz());
  const min_times dense = min_dense_step(d, 3);
  min_times sparse;
  for (auto _ : st) {
    sparse.measure([&] {
      layer.forward(d.x.data(), kTokens, d.y.data());
      // x == nullptr: the backward reuses the forward's tiles of x, as the GPT trainer does.
      layer.backward(d.dy.data(), nullptr, kTokens, d.dx.data(), dw.data(), nullptr);
    });
    benchmark::ClobberMemory();
  }
  const double nnz = static_cast<double>(layer.weight().nnz());
  st.counters["density"] = layer.weight().density();
  st.counters["useful_FLOPs"] = benchmark::Counter(3 * 2 * nnz * kTokens, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["dense_equiv_FLOPs"] =
      benchmark::Counter(3 * 2.0 * kIn * kOut * kTokens, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["sparse_ms_min"] = sparse.wall * 1e3;
  st.counters["dense_ms_min"] = dense.wall * 1e3;
  st.counters["speedup"] = dense.wall / sparse.wall;
  st.counters["sparse_cpu_ms_min"] = sparse.cpu * 1e3;
  st.counters["dense_cpu_ms_min"] = dense.cpu * 1e3;
  st.counters["speedup_cpu"] = dense.cpu / sparse.cpu;
  st.SetLabel(msparse::kernels::host_isa());
}

void BM_dense_step(benchmark::State& st) {
  const int threads = static_cast<int>(st.range(0));
  set_threads(threads);
  data& d = shared();
  min_times m;
  for (auto _ : st) m.measure([&] { dense_step(d); });
  st.counters["FLOPs"] = benchmark::Counter(3 * 2.0 * kIn * kOut * kTokens, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["dense_ms_min"] = m.wall * 1e3;
  st.counters["dense_cpu_ms_min"] = m.cpu * 1e3;
}

// A straightforward CSR forward for reference (sorted columns, one dot product per token
// and output row, x read in place), compiled with the build's flags: what the field notes'
// "straightforward CSR SpMM" numbers describe.
void naive_csr_forward(const std::vector<index_t>& rp, const std::vector<index_t>& ci, const std::vector<float>& v,
                       const float* x, float* y) {
  for (std::size_t t = 0; t < kTokens; ++t) {
    const float* xr = x + t * kIn;
    for (std::size_t r = 0; r < kOut; ++r) {
      float acc = 0.0f;
      for (index_t p = rp[r]; p < rp[r + 1]; ++p) acc += v[p] * xr[ci[p]];
      y[t * kOut + r] = acc;
    }
  }
}

// The three sparse products on their own (args: sparsity permille, threads, which: 0 fwd,
// 1 input grad, 2 weight grad), and the topology-update costs: conversion from dense+mask
// (set_weight) and the dense weight gradient (sgemm).
void BM_sparse_op(benchmark::State& st) {
  const double sparsity = st.range(0) / 1000.0;
  const int threads = static_cast<int>(st.range(1));
  const int which = static_cast<int>(st.range(2));
  set_threads(threads);
  data& d = shared();
  hcomm::exec::host ex;
  ex.threads = threads;
  msparse::layer::sparse_linear<> layer(kIn, kOut, false, ex);
  const auto mask = random_mask(sparsity, 7);
  layer.set_weight(d.w.data(), mask.data());
  std::vector<float> dw(layer.weight().nnz());
  std::vector<index_t> rp(kOut + 1, 0), ci;
  std::vector<float> cv;
  for (std::size_t r = 0; r < kOut; ++r) {
    for (std::size_t k = 0; k < kIn; ++k)
      if (mask[r * kIn + k]) {
        ci.push_back(static_cast<index_t>(k));
        cv.push_back(d.w[r * kIn + k]);
      }
    rp[r + 1] = static_cast<index_t>(ci.size());
  }
  min_times m;
  for (auto _ : st) m.measure([&] {
    if (which == 0) layer.forward(d.x.data(), kTokens, d.y.data());
    if (which == 1) layer.backward_input(d.dy.data(), kTokens, d.dx.data());
    if (which == 2) layer.backward_weight(d.dy.data(), d.x.data(), kTokens, dw.data());
    if (which == 3) layer.set_weight(d.w.data(), mask.data());
    if (which == 4) layer.dense_weight_grad(d.dy.data(), d.x.data(), kTokens, d.dw_dense.data());
    if (which == 5) naive_csr_forward(rp, ci, cv, d.x.data(), d.y.data());
    if (which == 6)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kTokens, kOut, kIn, 1.0f, d.x.data(), kIn, d.w.data(), kIn,
                  0.0f, d.y.data(), kOut);
  });
  const double nnz = static_cast<double>(layer.weight().nnz());
  if (which <= 2 || which == 5) st.counters["useful_FLOPs"] = benchmark::Counter(2 * nnz * kTokens, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["ms_min"] = m.wall * 1e3;
  st.counters["cpu_ms_min"] = m.cpu * 1e3;
  static const char* names[] = {"forward",
                                "input_grad",
                                "weight_grad_sddmm",
                                "convert_dense_to_sparse",
                                "dense_weight_grad_sgemm",
                                "naive_csr_forward",
                                "dense_forward_sgemm"};
  st.SetLabel(names[which]);
}

void sweep(benchmark::internal::Benchmark* b) {
  for (int t : {1, 2})
    for (int s : {500, 700, 750, 800, 850, 900, 950, 990}) b->Args({s, t});
}

}  // namespace

BENCHMARK(BM_dense_step)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_sparse_step)->Apply(sweep)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_sparse_op)
    ->ArgsProduct({{800, 900}, {1}, {0, 1, 2, 3, 4, 5, 6}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(0.5);

#include "../openblas_main.hpp"
