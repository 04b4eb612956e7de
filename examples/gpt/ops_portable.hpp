// examples/gpt/ops_portable.hpp: the portable backend of the model's layers: every layer but
// the GEMMs is a kernel of the execution model (examples/gpt/portable/, hcomm/exec/team.hpp)
// launched on an executor, the GEMMs go to a GEMM library (Gemm: gemm_host.hpp's OpenBLAS on
// host memory). On hcomm::exec::host_check it runs on the CPU what a GPU would run (shuffled
// threads, shadowed scratch), so CI checks the whole model's device source against the CPU
// backend (ops_cpu.hpp; tests/model/test_portable_model.cpp). Same interface as cpu_ops.
//
//   gpt::basic_stage_model<gpt::portable_ops<hcomm::exec::host_check>> m(cfg, place, micro, n_micro);
//
// Attention is the flash-style kernel: its `att` buffer keeps the rows' log-sum-exp ([B, nh,
// T]) and, in backward, D = rowsum(dO * O) after it, instead of the probabilities. The
// embedding's token gradient is a gather over positions grouped by token (built on the host
// from the micro-batch's tokens, then copied to the executor). Memory: the executor's, in
// device_array buffers; the model treats it as device memory on every executor
// (host_memory = false: tokens and targets are staged, small results copied back), so the
// host executors run the CUDA path's staging too.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "device_array.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_host.hpp"
#include "gemm_reuse.hpp"
#include "hcomm/core/error.hpp"
#include "kernel_clock.hpp"
#include "portable/adamw.hpp"
#include "portable/attention.hpp"
#include "portable/attention_bf16.hpp"
#include "portable/cross_entropy.hpp"
#include "portable/elementwise.hpp"
#include "portable/embedding.hpp"
#include "portable/gelu.hpp"
#include "portable/grad_norm.hpp"
#include "portable/layernorm.hpp"
#include "portable/rotary.hpp"

namespace gpt {

// Whether an executor's memory is the host's: not a device's, or a device stand-in that says
// so (hcomm::exec::host_check).
template <class Exec>
constexpr bool memory_on_host() {
  if constexpr (requires { Exec::host_memory; }) return Exec::host_memory;
  else return !Exec::is_device;
}

// Clock: kernel_clock.hpp's host_kernel_clock, or kernel_clock_cuda.hpp's on a CUDA stream.
template <class Exec, class Gemm = host_gemm, class Clock = host_kernel_clock>
struct portable_ops {
  using idx = std::ptrdiff_t;
  static constexpr const char* name = "portable";
  // Threads per team of the row kernels (LayerNorm: one team per row) and of attention.
  static constexpr int row_team = 128, attention_team = 64, attention_bf16_team = 128, norm_team = 256;
  // host_memory: the model stages and reads back as for device memory, on every executor;
  // host_accessible: the memory is the host's after all (host executors: the trainer runs).
  static constexpr bool host_memory = false, host_accessible = memory_on_host<Exec>();
  template <class T>
  using array = device_array<T, Exec>;
  Exec ex{};
  Gemm gemm{};

  portable_ops() = default;
  portable_ops(Exec e, Gemm g = {}) : ex(std::move(e)), gemm(std::move(g)) {}

  static std::size_t z(idx n) { return static_cast<std::size_t>(n); }
  static int i32(idx n) { return static_cast<int>(n); }

  // --kernel-times: the calls below are timed from here on (kernel_clock.hpp); copies of the
  // backend share the clock.
  void time_kernels() const {
    if constexpr (std::is_constructible_v<Clock, std::function<void()>>)
      clock_.start(std::make_unique<Clock>([e = ex] { e.synchronize(); }));
    else
      clock_.start(std::make_unique<Clock>(ex.stream()));
  }
  Clock* kernel_clock() const { return clock_.get(); }
  // --precision bf16: the GEMMs take bfloat16 operands, fp32 accumulation (the Gemm's bf16
  // mode: gemm_host.hpp rounds them, gemm_cublas.hpp runs tensor cores); its scratch for A
  // and B operands of up to max_a and max_b elements is made now. Attention's products take
  // bfloat16 operands too, on the team's tensor-core product (portable/attention_bf16.hpp).
  void bf16_gemms(std::size_t max_a, std::size_t max_b) {
    gemm.use_bf16();
    gemm.reserve(max_a, max_b);
  }
  // The GEMM library's own memory for fused epilogues (gemm_epilogue.hpp), made with the model.
  void reserve_gemm_workspace() {
    if constexpr (requires { gemm.reserve_workspace(); }) gemm.reserve_workspace();
  }
  // The column sums' first-pass scratch (bias and LayerNorm parameter gradients) for up to
  // `rows` rows of `widest` columns (2 C for LayerNorm's pair), made with the model.
  void reserve_column_sums(std::size_t rows, std::size_t widest) const {
    column_scratch(portable::column_sums_scratch(rows, widest));
  }

  // ---- memory ----
  template <class T>
  array<T> make_array(std::size_t n) const {
    return array<T>(ex, n);
  }
  template <class T>
  void upload(T* dst, const T* host, std::size_t n) const {
    ex.from_host(dst, host, n * sizeof(T));
  }
  template <class T>
  void download(T* host, const T* src, std::size_t n) const {
    ex.to_host(host, src, n * sizeof(T));
  }

  template <class T>
  void copy(T* dst, const T* src, std::size_t n) const {
    ex.copy(dst, src, n * sizeof(T));
  }
  void adamw_update(float* p, float* m, float* v, const float* g, idx n, const portable::adamw_update::coeffs& k,
                    float* rounded) const {
    const auto timed = tick("adamw");
    ex.for_each(z(n), portable::adamw_update{p, m, v, g, k, rounded});
  }
  // sum of g[i]^2 in double (grad_norm.hpp's fixed order), on the host when it returns
  double sum_squares(const float* g, idx n) const {
    double t = 0;
    sum_squares_each({{g, n}}, &t);
    return t;
  }
  // The sums of squares of several ranges (ptr, count) into out[i], each the bits sum_squares
  // gives it (the same chunks, in the same order), with one wait for all of them instead of
  // one per range: the global norm over a stage's tensors.
  void sum_squares_each(const std::vector<std::pair<const float*, idx>>& ranges, double* out) const {
    std::size_t chunks = 0;
    for (const auto& [g, n] : ranges) chunks += portable::sum_squares_chunks{nullptr, g, z(n)}.league();
    if (chunks == 0) {
      std::fill(out, out + ranges.size(), 0.0);
      return;
    }
    const auto timed = tick("grad_norm");
    scratch& s = *scratch_;
    if (s.partial.size() < chunks) s.partial = make_array<double>(chunks);
    if (s.total.size() < ranges.size()) s.total = make_array<double>(ranges.size());
    std::size_t at = 0;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const auto [g, n] = ranges[i];
      const portable::sum_squares_chunks k1{s.partial.data() + at, g, z(n)};
      if (k1.league() == 0) continue;
      ex.launch(k1.league(), norm_team, k1);
      ex.launch(1, norm_team, portable::sum_partials{s.total.data() + i, s.partial.data() + at, k1.league()});
      at += k1.league();
    }
    download(out, s.total.data(), ranges.size());
    for (std::size_t i = 0; i < ranges.size(); ++i)
      if (ranges[i].second <= 0) out[i] = 0.0;
  }
  void scale(float* x, idx n, float f) const {
    const auto timed = tick("scale");
    ex.for_each(z(n), portable::scale{x, f});
  }

  void fill(float* x, idx n, float v) const {
    const auto timed = tick("fill");
    ex.for_each(z(n), portable::fill{x, v});
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b, idx N,
                         idx C) const {
    const auto timed = tick("layernorm_fwd");
    ex.launch(z(N), row_team, portable::layernorm_forward{out, mean, rstd, x, w, b, i32(C)});
  }
  void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w,
                          const float* mean, const float* rstd, idx N, idx C) const {
    const auto timed = tick("layernorm_bwd");
    ex.launch(z(N), row_team, portable::layernorm_backward_input{dx, dout, x, w, mean, rstd, i32(C)});
    portable::layernorm_backward_params(ex, column_scratch(portable::layernorm_params_scratch(z(N), z(C))), dw, db, dout,
                                        x, mean, rstd, z(N), i32(C));
  }
  // out[N,OC] = x[N,C] W[OC,C]^T + bias. keep_x (bf16 runs): x's bfloat16 conversion, kept
  // there for matmul_backward's kept_x (gemm_reuse.hpp).
  void matmul_forward(float* out, const float* x, const float* W, const float* bias, idx N, idx C, idx OC,
                      hcomm::bf16* keep_x = nullptr) const {
    if (bias && fused("gemm_fwd", gemm_epilogue::bias, false, true, N, OC, C, x, C, W, C, out, OC, bias, nullptr,
                      {.keep_a = keep_x}))
      return;
    matmul_forward_unfused(out, x, W, bias, N, C, OC, keep_x);
  }
  void matmul_forward_unfused(float* out, const float* x, const float* W, const float* bias, idx N, idx C, idx OC,
                              hcomm::bf16* keep_x) const {
    {
      const auto timed = tick("gemm_fwd");
      gemm(false, true, N, OC, C, 1.f, x, C, W, C, 0.f, out, OC, {.keep_a = keep_x});
    }
    if (bias) add_bias_rows(out, bias, N, OC);
  }
  // The MLP's first layer: h[N,OC] = x W^T + bias (kept for backward), g = gelu(h).
  void matmul_gelu_forward(float* h, float* g, const float* x, const float* W, const float* bias, idx N, idx C,
                           idx OC, hcomm::bf16* keep_x = nullptr) const {
    if (fused("gemm_fwd", gemm_epilogue::gelu_aux, false, true, N, OC, C, x, C, W, C, g, OC, bias, h,
              {.keep_a = keep_x}))
      return;
    matmul_forward_unfused(h, x, W, bias, N, C, OC, keep_x);  // counted once, as unfused
    gelu_forward(g, h, N * OC);
  }
  // dx (+= or =) dout W; dW += dout^T x; dbias += column sums of dout. kept_x: what the
  // forward's keep_x holds (x's bfloat16 conversion), or null.
  void matmul_backward(float* dx, float* dW, float* dbias, const float* dout, const float* x, const float* W, idx N,
                       idx C, idx OC, bool accumulate_dx, const hcomm::bf16* kept_x = nullptr) const {
    {
      const auto timed = tick("gemm_bwd");
      if (dx) gemm(false, false, N, C, OC, 1.f, dout, OC, W, C, accumulate_dx ? 1.f : 0.f, dx, C);
      weight_gradient(dW, dout, x, N, C, OC, {.kept_b = kept_x, .same_a = dx != nullptr});
    }
    if (dbias) column_sums_add(dbias, dout, N, OC);
  }
  // The MLP's second layer backward, into the gelu before it (g = gelu(h) was its input):
  // dh = (dout W) * gelu'(h); dW += dout^T g; dbias += column sums of dout.
  void matmul_gelu_backward(float* dh, float* dW, float* dbias, const float* dout, const float* g, const float* h,
                            const float* W, idx N, idx C, idx OC, const hcomm::bf16* kept_g = nullptr) const {
    if (!can_fuse(gemm_epilogue::dgelu, false, false, N, C, OC, dout, OC, W, C, dh, C, nullptr, h, {})) {
      matmul_backward(dh, dW, dbias, dout, g, W, N, C, OC, false, kept_g);
      gelu_backward(dh, h, dh, N * C);
      return;
    }
    {
      const auto timed = tick("gemm_bwd");
      fuse(gemm_epilogue::dgelu, false, false, N, C, OC, dout, OC, W, C, dh, C, nullptr, h, {});
      weight_gradient(dW, dout, g, N, C, OC, {.kept_b = kept_g, .same_a = true});
    }
    if (dbias) column_sums_add(dbias, dout, N, OC);
  }
  void gelu_forward(float* out, const float* x, idx n) const {
    const auto timed = tick("gelu_fwd");
    ex.for_each(z(n), portable::gelu_forward{out, x});
  }
  void gelu_backward(float* dx, const float* x, const float* dout, idx n) const {
    const auto timed = tick("gelu_bwd");
    ex.for_each(z(n), portable::gelu_backward{dx, x, dout});
  }
  void rotary_apply(float* qkv, const float* cos_t, const float* sin_t, idx N, idx T, idx nh, idx hd, idx rot,
                    bool inverse) const {
    if (rot <= 0) return;
    const auto timed = tick("rotary");
    ex.for_each(portable::rotary::size(z(N), i32(nh), i32(rot)),
                portable::rotary{qkv, cos_t, sin_t, i32(T), i32(nh), i32(hd), i32(rot), inverse});
  }
  void attention_forward(float* out, float* att, const float* qkv, idx B, idx T, idx nh, idx hd, bool causal) const {
    check_attention(T, hd);
    const auto timed = tick("attention_fwd");
    if (gemm.bf16_mode()) {
      const portable::attention_bf16_forward k{out, att, qkv, i32(B), i32(T), i32(nh), i32(hd), causal};
      ex.launch(k.league(), attention_bf16_team, k);
      return;
    }
    const portable::attention_forward k{out, att, qkv, i32(B), i32(T), i32(nh), i32(hd), causal};
    ex.launch(k.league(), attention_team, k);
  }
  // bf16: attention's kernels round q, k, v and the output gradient to bfloat16 as they read
  // them (attention_bf16.hpp), so the model need not round them first (model.hpp).
  static constexpr bool attention_rounds_operands = true;
  // What attention keeps per sequence and head for backward: the rows' log-sum-exp, and D
  // after it in backward (2 T floats, not the T x T probabilities); no scratch.
  static constexpr idx attention_floats(idx T) { return 2 * T; }
  static constexpr idx attention_scratch_floats(idx) { return 0; }
  void attention_backward(float* dqkv, float* /*scratch*/, const float* dout, const float* qkv, float* att,
                          const float* out, idx B, idx T, idx nh, idx hd, bool causal) const {
    check_attention(T, hd);
    const auto timed = tick("attention_bwd");
    float* lse = att;
    float* D = att + B * nh * T;
    ex.for_each(z(B * nh * T),
                portable::attention_backward_rowdot{D, dout, out, i32(B), i32(T), i32(nh), i32(hd), gemm.bf16_mode()});
    const portable::attention_detail::problem p{dqkv, dout, qkv, lse, D, i32(B), i32(T), i32(nh), i32(hd), causal};
    if (gemm.bf16_mode()) {
      const portable::attention_bf16_backward_dkdv kv{p};
      const portable::attention_bf16_backward_dq q{p};
      ex.launch(kv.league(), attention_bf16_team, kv);
      ex.launch(q.league(), attention_bf16_team, q);
      return;
    }
    const portable::attention_backward_dkdv kv{p};
    const portable::attention_backward_dq q{p};
    ex.launch(kv.league(), attention_team, kv);
    ex.launch(q.league(), attention_team, q);
  }
  void residual_forward(float* out, const float* a, const float* b, idx n) const {
    const auto timed = tick("residual");
    ex.for_each(z(n), portable::residual{out, a, b});
  }
  void add_inplace(float* out, const float* a, idx n) const {
    const auto timed = tick("residual");
    ex.for_each(z(n), portable::add_into{out, a});
  }
  void add_bias_rows(float* out, const float* bias, idx N, idx C) const {
    const auto timed = tick("bias_fwd");
    ex.for_each(z(N * C), portable::add_bias_rows{out, bias, i32(C)});
  }
  void column_sums_add(float* acc, const float* d, idx N, idx C) const {
    const auto timed = tick("bias_bwd");
    portable::column_sums_add(ex, column_scratch(portable::column_sums_scratch(z(N), z(C))), acc, d, z(N), i32(C));
  }
  void round_bf16(float* x, idx n) const {
    const auto timed = tick("round_bf16");
    ex.for_each(z(n), portable::round_bf16{x});
  }

  void embed_tokens(float* x, const int* tokens, const float* wte, idx N, idx C, idx v0, idx Vl) const {
    const auto timed = tick("embedding_fwd");
    ex.for_each(z(N * C), portable::embedding_forward{x, tokens, wte, nullptr, 1, i32(C), i32(v0), i32(Vl)});
  }
  void add_positions(float* x, const float* wpe, idx N, idx T, idx C) const {
    const auto timed = tick("embedding_fwd");
    ex.for_each(z(N * C), portable::add_positions{x, wpe, i32(T), i32(C)});
  }
  // tokens: the micro-batch's host array (the buckets are sorted on the host).
  void embed_tokens_backward(float* dwte, const float* d, const int* tokens, idx N, idx C, idx v0, idx Vl) const {
    const auto timed = tick("embedding_bwd");
    const auto b = portable::token_buckets(tokens, z(N), i32(v0), i32(Vl));
    scratch& s = *scratch_;
    if (s.starts.size() < b.starts.size()) s.starts = make_array<std::int32_t>(b.starts.size());
    if (s.rows.size() < b.rows.size()) s.rows = make_array<std::int32_t>(b.rows.size());
    upload(s.starts.data(), b.starts.data(), b.starts.size());
    upload(s.rows.data(), b.rows.data(), b.rows.size());
    ex.for_each(z(Vl * C), portable::embedding_backward_wte{dwte, d, s.starts.data(), s.rows.data(), i32(C)});
  }
  void add_positions_backward(float* dwpe, const float* d, idx N, idx T, idx C) const {
    const auto timed = tick("embedding_bwd");
    ex.for_each(z(T * C), portable::embedding_backward_wpe{dwpe, d, i32(N / T), i32(T), i32(C)});
  }

  void ce_row_max(float* mx, const float* zl, idx N, idx V) const {
    const auto timed = tick("cross_entropy");
    ex.for_each(z(N), portable::ce_row_max{mx, zl, i32(V)});
  }
  void ce_sums(float* sums, const float* zl, const float* mx, const int* targets, idx N, idx V, idx v0) const {
    const auto timed = tick("cross_entropy");
    ex.for_each(z(N), portable::ce_sums{sums, zl, mx, targets, z(N), i32(V), i32(v0)});
  }
  void ce_grad(float* zl, const float* mx, const float* sums, const int* targets, idx N, idx V, idx v0,
               float scale) const {
    const auto timed = tick("cross_entropy");
    ex.for_each(z(N), portable::ce_grad{zl, mx, sums, targets, i32(V), i32(v0), scale});
  }

 private:
  // Work buffers of the calls above, grown as needed (shared by copies of the backend).
  struct scratch {
    array<double> partial, total;
    array<std::int32_t> starts, rows;
    array<float> columns;  // the column sums' chunk sums (portable/elementwise.hpp)
  };
  std::shared_ptr<scratch> scratch_ = std::make_shared<scratch>();
  kernel_clock_slot<Clock> clock_;  // --kernel-times

  typename Clock::scope tick(const char* name) const { return clock_.tick(name); }
  // Room for n floats of column sums' first pass.
  float* column_scratch(std::size_t n) const {
    if (scratch_->columns.size() < n) scratch_->columns = make_array<float>(n);
    return scratch_->columns.data();
  }
  // dW[OC,C] += dout[N,OC]^T x[N,C]: a linear layer's weight gradient (the caller times it).
  // reuse (bf16): same_a when the GEMM just before read dout as its A too, kept_b x's kept
  // conversion.
  void weight_gradient(float* dW, const float* dout, const float* x, idx N, idx C, idx OC, gemm_reuse reuse) const {
    gemm(true, false, OC, C, N, 1.f, dout, OC, x, C, 1.f, dW, C, reuse);
  }
  // A GEMM with an epilogue fused by the GEMM library (gemm_epilogue.hpp), if it takes this one.
  bool can_fuse(gemm_epilogue e, bool ta, bool tb, idx M, idx N, idx K, const float* A, idx lda, const float* B,
                idx ldb, float* C, idx ldc, const float* bias, const float* aux, gemm_reuse reuse) const {
    if constexpr (fusing_gemm<Gemm>) return gemm.can_fuse(e, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, bias, aux, reuse);
    else return false;
  }
  void fuse(gemm_epilogue e, bool ta, bool tb, idx M, idx N, idx K, const float* A, idx lda, const float* B, idx ldb,
            float* C, idx ldc, const float* bias, const float* aux, gemm_reuse reuse) const {
    if constexpr (fusing_gemm<Gemm>) gemm.fuse(e, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, bias, aux, reuse);
  }
  bool fused(const char* name, gemm_epilogue e, bool ta, bool tb, idx M, idx N, idx K, const float* A, idx lda,
             const float* B, idx ldb, float* C, idx ldc, const float* bias, float* aux, gemm_reuse reuse) const {
    if (!can_fuse(e, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, bias, aux, reuse)) return false;
    const auto timed = tick(name);
    fuse(e, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, bias, aux, reuse);
    return true;
  }

  // The flash kernels' limits, and room for lse and D in the model's [B, nh, T, T] buffer.
  static void check_attention(idx T, idx hd) {
    if (hd > portable::attention_forward::max_hd || T < 2)
      hcomm::fail(hcomm::errc::unsupported, "portable attention needs a head size of at most " +
                                                std::to_string(portable::attention_forward::max_hd) +
                                                " and a sequence of 2 or more (head size " + std::to_string(hd) +
                                                ", sequence " + std::to_string(T) + ")");
  }
};

}  // namespace gpt
