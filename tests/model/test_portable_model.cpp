// The whole model on the portable backend (examples/gpt/ops_portable.hpp: the trainer's layers
// as kernels of the execution model, what the GPU runs, GEMMs by OpenBLAS): under host-check
// (shuffled threads, shadowed scratch) it matches the PyTorch debug states with the CPU
// backend's tolerances, gives the same bits as the host executor, and tracks the CPU backend
// (ops_cpu.hpp) to float rounding, for GPT-2, NeoX (rotary), BERT post-LN and pre-LN, and bf16;
// bf16 GEMMs round their operands on both backends.
#include <catch2/catch.hpp>
#include <algorithm>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gemm_epilogue.hpp"
#include "gemm_host.hpp"
#include "hcomm/core/bfloat16.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/exec/host_check.hpp"
#include "model.hpp"
#include "ops_cpu.hpp"
#include "ops_portable.hpp"
#include "portable/gelu.hpp"
#include "model_pass.hpp"
#include "reference_check.hpp"

namespace {

using checked_model = gpt::basic_stage_model<gpt::portable_ops<hcomm::exec::host_check>>;
using host_model = gpt::basic_stage_model<gpt::portable_ops<hcomm::exec::host>>;

using gpt_test::pass;
using gpt_test::small_config;

// gemm_epilogue.hpp's contract on the host: host_gemm, then the epilogue with the portable
// kernels' arithmetic, element by element, so that a model run through it must give the
// separate kernels' bits. It declines every third call, to check the fallback too;
// it is what portable_ops' calls of a fusing GEMM (cuBLASLt's on cuda) are tested through.
struct fusing_host_gemm : gpt::host_gemm {
  using idx = std::ptrdiff_t;
  std::shared_ptr<std::size_t> fused = std::make_shared<std::size_t>(0), declined = std::make_shared<std::size_t>(0);
  bool can_fuse(gpt::gemm_epilogue, bool, bool, idx, idx, idx, const float*, idx, const float*, idx, float*, idx,
                const float*, const float*, gpt::gemm_reuse) const {
    const bool yes = (*fused + *declined) % 3 != 2;
    if (!yes) ++*declined;
    return yes;
  }
  void fuse(gpt::gemm_epilogue e, bool ta, bool tb, idx M, idx N, idx K, const float* A, idx lda, const float* B,
            idx ldb, float* C, idx ldc, const float* bias, const float* aux, gpt::gemm_reuse reuse) const {
    (*this)(ta, tb, M, N, K, 1.f, A, lda, B, ldb, 0.f, C, ldc, reuse);
    float* h = const_cast<float*>(aux);
    for (idx m = 0; m < M; ++m)
      for (idx n = 0; n < N; ++n) {
        float& c = C[m * ldc + n];
        if (e == gpt::gemm_epilogue::dgelu) {
          gpt::portable::gelu_backward{&c, &h[m * ldc + n], &c}(0);
          continue;
        }
        if (bias) c += bias[n];
        if (e == gpt::gemm_epilogue::gelu_aux) {
          h[m * ldc + n] = c;
          gpt::portable::gelu_forward{&c, &h[m * ldc + n]}(0);
        }
      }
    ++*fused;
  }
};
static_assert(gpt::fusing_gemm<fusing_host_gemm>);
using fused_ops = gpt::portable_ops<hcomm::exec::host_check, fusing_host_gemm>;

// host_gemm rounding every operand afresh: keep_a and kept_b dropped (same_a kept).
struct fresh_host_gemm : gpt::host_gemm {
  void operator()(bool ta, bool tb, std::ptrdiff_t M, std::ptrdiff_t N, std::ptrdiff_t K, float alpha, const float* A,
                  std::ptrdiff_t lda, const float* B, std::ptrdiff_t ldb, float beta, float* C, std::ptrdiff_t ldc,
                  gpt::gemm_reuse r = {}) const {
    gpt::host_gemm::operator()(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, {.same_a = r.same_a});
  }
};
using fresh_ops = gpt::portable_ops<hcomm::exec::host_check, fresh_host_gemm>;

}  // namespace

TEST_CASE("portable backend under host-check matches the PyTorch reference", "[model][portable][reference]") {
  for (const char* arch : {"gpt2", "neox", "bert", "bert_preln"}) {
    INFO(arch);
    gpt_test::check_reference<checked_model>(arch);
  }
}

// replay() is what the CUDA model test runs against the same states on the GPU
// (tests/model/cuda/test_cuda_model.cu); here on host-check, within the GPU check's bounds.
TEST_CASE("portable backend: replay of the PyTorch states within the GPU check's bounds", "[model][portable][reference]") {
  for (const char* arch : {"gpt2", "neox", "bert", "bert_preln"}) {
    const gpt_test::debug_state s = gpt_test::load(arch);
    const gpt_test::reference_errors e = gpt_test::errors_of(gpt_test::replay<checked_model>(s), s);
    INFO(arch << ": loss " << e.loss << " logits " << e.logits << " grads " << e.grads << " losses " << e.losses);
    CHECK(e.within());
    CHECK(e.grads < 1e-5);  // fp32 on the host: well inside the GPU's bound
  }
}

TEST_CASE("portable backend: host-check = host bitwise, and the CPU backend to rounding", "[model][portable]") {
  for (const gpt_test::variant& v : gpt_test::variants) {
    INFO(v.name);
    const gpt::config c = small_config(v.arch, v.post_ln, v.bf16);
    const int micro = 3;
    const auto [tokens, targets] = gpt_test::random_batch(c, static_cast<std::size_t>(2 * micro * c.block), 7);
    const pass cpu = gpt_test::run_pass<gpt::stage_model>(c, tokens, targets, micro);
    const pass host = gpt_test::run_pass<host_model>(c, tokens, targets, micro);
    for (std::uint64_t seed : {1u, 2u}) {
      const pass chk =
          gpt_test::run_pass<checked_model>(c, tokens, targets, micro, {hcomm::exec::host_check{.seed = seed}, {}});
      CHECK(chk.loss == host.loss);
      CHECK(chk.logits == host.logits);
      CHECK(chk.grads == host.grads);
      CHECK(chk.grad_sq == host.grad_sq);
    }
    // The gradient norm's fixed-order sum (grad_norm.hpp) against the CPU backend's loop
    // (bf16: of gradients that differ as below; observed 8.6e-5).
    CHECK(std::fabs(host.grad_sq - cpu.grad_sq) <= (v.bf16 ? 1e-3 : 1e-4) * cpu.grad_sq);
    // Observed: fp32 relative L2 errors about 4e-7 (logits and gradients); bf16 logits 0 (the
    // forward's roundings are the same on both, attention's included) and gradients 1.3e-3:
    // attention's backward rounds the probabilities for dV from the normalised float value on
    // the portable backend (flash recomputes them) and keeps bf16(e) / sum on the cpu backend,
    // and bf16 rounds to 8 bits of mantissa, so a last-bit difference of a sum can move one
    // rounding a whole bf16 step (before attention rounded alike, the logits differed by 6e-5).
    // Bounds 4x or more above that; fp32 attention on the portable backend would give 3e-3.
    const double tol = v.bf16 ? 5e-4 : 1e-5;
    INFO("loss " << host.loss << " vs cpu " << cpu.loss);
    CHECK(std::fabs(host.loss - cpu.loss) <= (v.bf16 ? 1e-5 : 1e-6) * std::fabs(cpu.loss));
    const auto lg = gpt_test::compare(host.logits.data(), cpu.logits.data(), cpu.logits.size(), 1e-5, 1e-4);
    INFO("logits max abs " << lg.max_abs << " rel l2 " << lg.rel_l2);
    CHECK(lg.rel_l2 <= tol);
    const auto gr = gpt_test::compare(host.grads.data(), cpu.grads.data(), cpu.grads.size(), 1e-6, 1e-3);
    INFO("grads max abs " << gr.max_abs << " rel l2 " << gr.rel_l2);
    CHECK(gr.rel_l2 <= (v.bf16 ? 5e-3 : 1e-5));
  }
}

TEST_CASE("portable backend: AdamW steps (and bf16 master weights) as the CPU backend's", "[model][portable]") {
  for (const bool bf16 : {false, true}) {
    INFO((bf16 ? "bf16" : "fp32"));
    gpt::config c = small_config(gpt::arch_kind::gpt2, false, bf16);
    c.steps = 6;
    c.warmup = 2;
    c.lr = 3e-3f;
    const int micro = 2;
    const auto [tokens, targets] = gpt_test::random_batch(c, static_cast<std::size_t>(2 * micro * c.block), 3);
    std::vector<float> w_cpu, w_host, w_chk;
    const auto cpu = gpt_test::train_losses<gpt::stage_model>(c, tokens, targets, micro, c.steps, &w_cpu);
    const auto host = gpt_test::train_losses<host_model>(c, tokens, targets, micro, c.steps, &w_host);
    const auto chk =
        gpt_test::train_losses<checked_model>(c, tokens, targets, micro, c.steps, &w_chk, {hcomm::exec::host_check{}, {}});
    CHECK(chk == host);
    CHECK(w_chk == w_host);
    CHECK(host.back() < host.front());  // it learns
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      INFO("step " << i << ": portable " << host[i] << " cpu " << cpu[i]);
      CHECK(std::fabs(host[i] - cpu[i]) <= (bf16 ? 1e-4 : 1e-5) * std::fabs(cpu[i]));
    }
    // bf16: the model's weights are the master copy's rounding, so they are bf16 values
    bool all_bf16 = true;
    for (float x : w_host) all_bf16 = all_bf16 && x == hcomm::bf16_bits_to_float(hcomm::to_bf16_bits(x));
    CHECK(all_bf16 == bf16);
  }
}

TEST_CASE("portable backend: sum_squares_each gives each range sum_squares' bits", "[model][portable]") {
  const gpt::portable_ops<hcomm::exec::host_check> ops;
  std::mt19937 rng(41);
  std::normal_distribution<float> nd(0.f, 0.3f);
  std::vector<float> g(300000);
  for (float& x : g) x = nd(rng);
  auto a = ops.make_array<float>(g.size());
  ops.upload(a.data(), g.data(), g.size());
  // ranges of 1 to several chunks, one empty, one not chunk-aligned
  const std::vector<std::pair<const float*, std::ptrdiff_t>> ranges = {
      {a.data(), 70000}, {a.data() + 70000, 0}, {a.data() + 70000, 1}, {a.data() + 70001, 229999}};
  std::vector<double> each(ranges.size(), -1.0);
  ops.sum_squares_each(ranges, each.data());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    INFO("range " << i);
    CHECK(each[i] == ops.sum_squares(ranges[i].first, ranges[i].second));
  }
  CHECK(each[1] == 0.0);
}

// --precision bf16's GEMMs: bfloat16 operands, fp32 accumulation. The host GEMM rounds both
// operands before sgemm (what the CUDA backend's tensor-core GEMM computes); the CPU backend
// and the portable backend under host-check give its bits, bias and bias gradient included
// (the bias gradient sums the unrounded output gradient).
TEST_CASE("bf16 GEMMs take bfloat16 operands on every host backend", "[model][portable][bf16]") {
  const std::int64_t N = 24, C = 40, OC = 36;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto rand = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = nd(rng);
    return v;
  };
  auto rounded = [](std::vector<float> v) {
    for (float& x : v) x = hcomm::bf16_bits_to_float(hcomm::to_bf16_bits(x));
    return v;
  };
  const std::vector<float> x = rand(N * C), W = rand(OC * C), bias = rand(OC), dout = rand(N * OC);
  const std::vector<float> xr = rounded(x), Wr = rounded(W), doutr = rounded(dout);
  REQUIRE(xr != x);  // the inputs are not bfloat16 values: rounding them matters

  // the host GEMM: sgemm of the rounded operands, bit for bit; not the fp32 product
  std::vector<float> ref(N * OC), got(N * OC), fp32(N * OC);
  gpt::host_gemm{}(false, true, N, OC, C, 1.f, xr.data(), C, Wr.data(), C, 0.f, ref.data(), OC);
  gpt::host_gemm g;
  g.use_bf16();
  g(false, true, N, OC, C, 1.f, x.data(), C, W.data(), C, 0.f, got.data(), OC);
  gpt::host_gemm{}(false, true, N, OC, C, 1.f, x.data(), C, W.data(), C, 0.f, fp32.data(), OC);
  CHECK(got == ref);
  CHECK(got != fp32);
  {  // same_a: A's rounding is reused for the same pointer and extent, and only then
    std::vector<float> x2 = x, again(N * OC), fresh(N * OC);
    for (float& v : x2) v *= 3.f;  // another pointer, other values
    g(false, true, N, OC, C, 1.f, x2.data(), C, W.data(), C, 0.f, fresh.data(), OC, {.same_a = true});
    CHECK(fresh != got);
    std::copy(x.begin(), x.end(), x2.begin());  // x's values behind the rounded pointer: a reuse does not see them
    g(false, true, N, OC, C, 1.f, x2.data(), C, W.data(), C, 0.f, again.data(), OC, {.same_a = true});
    CHECK(again == fresh);
    g(false, true, N - 1, OC, C, 1.f, x2.data(), C, W.data(), C, 0.f, again.data(), OC, {.same_a = true});
    std::vector<float> shorter(N * OC);  // another extent: rounded anew, x's product
    gpt::host_gemm{}(false, true, N - 1, OC, C, 1.f, xr.data(), C, Wr.data(), C, 0.f, shorter.data(), OC);
    CHECK(std::equal(again.begin(), again.begin() + (N - 1) * OC, shorter.begin()));
    CHECK(!std::equal(again.begin(), again.begin() + (N - 1) * OC, fresh.begin()));
  }
  {  // keep_a stores A's rounding as bfloat16; kept_b is multiplied instead of B
    std::vector<hcomm::bf16> kept(N * C);
    std::vector<float> out(N * OC), dW(OC * C, 0.f), dW_ref(OC * C, 0.f);
    g(false, true, N, OC, C, 1.f, x.data(), C, W.data(), C, 0.f, out.data(), OC, {.keep_a = kept.data()});
    CHECK(out == got);
    for (std::size_t i = 0; i < kept.size(); ++i) REQUIRE(static_cast<float>(kept[i]) == xr[i]);
    std::vector<float> other = x;
    for (float& v : other) v = -v;  // B's own values are not read when kept_b is given
    g(true, false, OC, C, N, 1.f, dout.data(), OC, other.data(), C, 1.f, dW.data(), C, {.kept_b = kept.data()});
    gpt::host_gemm{}(true, false, OC, C, N, 1.f, doutr.data(), OC, xr.data(), C, 1.f, dW_ref.data(), C);
    CHECK(dW == dW_ref);
  }
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < OC; ++o) ref[n * OC + o] += bias[o];

  // the backward's references: dx = dout W and dW = dout^T x of the rounded operands
  std::vector<float> dx_ref(N * C), dW_ref(OC * C, 0.f), db_ref(OC, 0.f);
  gpt::host_gemm{}(false, false, N, C, OC, 1.f, doutr.data(), OC, Wr.data(), C, 0.f, dx_ref.data(), C);
  gpt::host_gemm{}(true, false, OC, C, N, 1.f, doutr.data(), OC, xr.data(), C, 1.f, dW_ref.data(), C);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < OC; ++o) db_ref[o] += dout[n * OC + o];

  auto check_backend = [&](auto& be, const char* what) {
    INFO(what);
    be.bf16_gemms(64, 64);  // smaller than the operands: they grow
    auto a = [&](const std::vector<float>& h) {
      auto arr = be.template make_array<float>(h.size());
      be.upload(arr.data(), h.data(), h.size());
      return arr;
    };
    auto back = [&](const auto& arr) {
      std::vector<float> h(arr.size());
      be.download(h.data(), arr.data(), arr.size());
      return h;
    };
    auto dx_ = a(x), W_ = a(W), b_ = a(bias), dout_ = a(dout), out = a(std::vector<float>(N * OC));
    auto dx = a(std::vector<float>(N * C)), dW = a(std::vector<float>(OC * C)), db = a(std::vector<float>(OC));
    be.matmul_forward(out.data(), dx_.data(), W_.data(), b_.data(), N, C, OC);
    CHECK(back(out) == ref);
    be.matmul_backward(dx.data(), dW.data(), db.data(), dout_.data(), dx_.data(), W_.data(), N, C, OC, false);
    CHECK(back(dx) == dx_ref);
    CHECK(back(dW) == dW_ref);
    const std::vector<float> dbh = back(db);
    for (std::int64_t o = 0; o < OC; ++o) CHECK(std::fabs(dbh[o] - db_ref[o]) <= 1e-5f * (1.f + std::fabs(db_ref[o])));
  };
  gpt::cpu_ops cpu;
  check_backend(cpu, "cpu backend");
  gpt::portable_ops<hcomm::exec::host_check> checked;
  check_backend(checked, "portable backend, host-check");
}

// bf16: the portable backend's attention kernels round q, k, v and the output gradient as
// they read them, so the model skips its own rounding pass over them (model.hpp). With a hook
// installed (one that declines everything here) the model rounds them first, as it does for
// the cpu backend: the same bits either way, forward and backward.
TEST_CASE("bf16 attention operands: rounded on load = rounded by the model, bit for bit", "[model][portable][bf16]") {
  struct declining final : gpt::block_ops {
    bool linear_forward(int, int, float*, const float*, std::int64_t) override { return false; }
    bool linear_backward(int, int, float*, const float*, const float*, std::int64_t, bool) override { return false; }
    bool attention_forward(float*, float*, const float*, int, int, int, int) override { return false; }
    bool attention_backward(float*, const float*, const float*, const float*, const float*, int, int, int,
                            int) override {
      return false;
    }
  };
  for (const auto arch : {gpt::arch_kind::gpt2, gpt::arch_kind::neox}) {  // neox: rotary before the rounding
    const gpt::config c = small_config(arch, false, true);
    const int micro = 2;
    const auto b = gpt_test::random_batch(c, static_cast<std::size_t>(2 * micro * c.block), 21);
    declining hook;
    const pass bare = gpt_test::run_pass<checked_model>(c, b.tokens, b.targets, micro);
    const pass hooked = gpt_test::run_pass<checked_model>(c, b.tokens, b.targets, micro, {}, &hook);
    CHECK(bare.loss == hooked.loss);
    CHECK(bare.logits == hooked.logits);
    CHECK(bare.grads == hooked.grads);
  }
}

// bf16: the forward keeps each block linear layer's input as bfloat16 for the backward's weight
// gradient (model.hpp's kept_of, gemm_reuse.hpp). Over several micro-batches and layers that
// gives the bits of rounding the inputs afresh, and a reuse of the wrong micro-batch's or
// layer's copy would not.
TEST_CASE("bf16: kept linear-layer inputs give the bits of converting them afresh", "[model][portable][bf16]") {
  for (const gpt_test::variant& v : gpt_test::variants) {
    if (!v.bf16) continue;
    INFO(v.name);
    const gpt::config c = small_config(v.arch, v.post_ln, v.bf16);
    REQUIRE(c.layers >= 2);
    const int micro = 3;
    const auto [tokens, targets] = gpt_test::random_batch(c, static_cast<std::size_t>(2 * micro * c.block), 17);
    const pass kept = gpt_test::run_pass<checked_model>(c, tokens, targets, micro);
    const pass fresh = gpt_test::run_pass<gpt::basic_stage_model<fresh_ops>>(c, tokens, targets, micro);
    CHECK(kept.loss == fresh.loss);
    CHECK(kept.logits == fresh.logits);
    CHECK(kept.grads == fresh.grads);
    gpt::config t = c;
    t.steps = 3;
    CHECK(gpt_test::train_losses<checked_model>(t, tokens, targets, micro, t.steps) ==
          gpt_test::train_losses<gpt::basic_stage_model<fresh_ops>>(t, tokens, targets, micro, t.steps));
  }
}

TEST_CASE("fused GEMM epilogues give the separate kernels' bits through the whole model", "[model][portable]") {
  for (const gpt_test::variant& v : gpt_test::variants) {
    INFO(v.name);
    const gpt::config c = small_config(v.arch, v.post_ln, v.bf16);
    const int micro = 3;
    const auto [tokens, targets] = gpt_test::random_batch(c, static_cast<std::size_t>(2 * micro * c.block), 7);
    const pass plain = gpt_test::run_pass<checked_model>(c, tokens, targets, micro);
    const fused_ops ops{};
    const pass fused = gpt_test::run_pass<gpt::basic_stage_model<fused_ops>>(c, tokens, targets, micro, ops);
    CHECK(fused.loss == plain.loss);
    CHECK(fused.logits == plain.logits);
    CHECK(fused.grads == plain.grads);
    CHECK(*ops.gemm.fused > 0);  // the epilogues ran, and so did the fallback ...
    CHECK(*ops.gemm.declined > 0);
    // ... and AdamW steps through them too
    gpt::config t = c;
    t.steps = 4;
    const auto ref = gpt_test::train_losses<checked_model>(t, tokens, targets, micro, t.steps);
    const auto got = gpt_test::train_losses<gpt::basic_stage_model<fused_ops>>(t, tokens, targets, micro, t.steps,
                                                                              nullptr, fused_ops{});
    CHECK(got == ref);
  }
}
