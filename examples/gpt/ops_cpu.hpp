// examples/gpt/ops_cpu.hpp: the CPU backend of the model's layers (model.hpp calls every layer
// through a backend): kernels.hpp's OpenBLAS sgemm and OpenMP loops, on host memory. The other
// backend, ops_portable.hpp, runs the same interface as kernels of the execution model.
//
//   gpt::cpu_ops be;
//   be.layernorm_forward(out, mean, rstd, x, w, b, N, C);
//
// The interface (every backend has these members, same arguments, same meaning): backward
// functions accumulate into parameter gradients and input gradients unless kernels.hpp says
// otherwise for the layer; pointers are in the backend's memory except tokens and targets,
// which are host arrays of the micro-batch.
//   fill, layernorm_forward/backward, matmul_forward/backward, matmul_gelu_forward/backward,
//   gelu_forward/backward, rotary_apply, attention_forward/backward, residual_forward,
//   add_inplace, add_bias_rows, round_bf16, embed_tokens, add_positions, embed_tokens_backward,
//   add_positions_backward, ce_row_max, ce_sums, ce_grad, bf16_gemms, reserve_gemm_workspace,
//   reserve_column_sums,
//   attention_floats, attention_scratch_floats, attention_rounds_operands.
// Memory: `array<T>` (here std::vector<T>) is the backend's buffer, made zeroed by make_array;
// host_memory says whether the model may read it from the host (if not, it stages tokens and
// targets with upload and reads small results back with download); host_accessible whether
// it is host memory after all (what the trainer's MPI exchanges need); copy copies within it;
// sum_squares returns the sum of squares in double, scale multiplies in place, adamw_update is
// one tensor's AdamW step (portable/adamw.hpp).
// attention_forward keeps what its backward needs in `att` ([B, nh, T, T] floats): the
// probabilities here; attention_backward gets the forward's output too, for backends that
// recompute the probabilities from it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "gemm_host.hpp"
#include "hcomm/exec/threads.hpp"
#include "kernel_clock.hpp"
#include "kernels.hpp"
#include "portable/adamw.hpp"

namespace gpt {

struct cpu_ops {
  using idx = k::idx;
  static constexpr const char* name = "cpu";
  static constexpr bool host_memory = true, host_accessible = true;
  template <class T>
  using array = std::vector<T>;

  // --kernel-times: the calls below are timed from here on (kernel_clock.hpp; GEMMs with
  // their bias); copies of the backend share the clock.
  void time_kernels() const { clock_.start(std::make_unique<host_kernel_clock>()); }
  host_kernel_clock* kernel_clock() const { return clock_.get(); }
  // --precision bf16: the GEMMs take bfloat16 operands, fp32 accumulation (gemm_host.hpp);
  // its scratch for A and B operands of up to max_a and max_b elements is made now.
  void bf16_gemms(std::size_t max_a, std::size_t max_b) {
    gemm_.use_bf16();
    gemm_.reserve(max_a, max_b);
  }
  void reserve_gemm_workspace() {}  // OpenBLAS needs none
  void reserve_column_sums(std::size_t, std::size_t) const {}  // kernels.hpp's need none

  template <class T>
  array<T> make_array(std::size_t n) const {
    return array<T>(n, T{});
  }
  template <class T>
  void upload(T* dst, const T* host, std::size_t n) const {
    std::copy(host, host + n, dst);
  }
  template <class T>
  void download(T* host, const T* src, std::size_t n) const {
    std::copy(src, src + n, host);
  }
  template <class T>
  void copy(T* dst, const T* src, std::size_t n) const {
    std::copy(src, src + n, dst);
  }
  // One tensor's AdamW step (portable/adamw.hpp's arithmetic); rounded: see there.
  void adamw_update(float* p, float* m, float* v, const float* g, idx n, const portable::adamw_update::coeffs& c,
                    float* rounded) const {
    const auto timed = tick("adamw");
    const portable::adamw_update u{p, m, v, g, c, rounded};
#pragma omp parallel for if (n > k::par_min) num_threads(hcomm::exec::default_threads())
    for (idx i = 0; i < n; ++i) u(static_cast<std::size_t>(i));
  }
  double sum_squares(const float* g, idx n) const {
    const auto timed = tick("grad_norm");
    double a = 0.0;
    for (idx i = 0; i < n; ++i) a += static_cast<double>(g[i]) * g[i];
    return a;
  }
  void scale(float* x, idx n, float f) const {
    const auto timed = tick("scale");
    for (idx i = 0; i < n; ++i) x[i] *= f;
  }

  void fill(float* x, idx n, float v) const {
    const auto timed = tick("fill");
    std::fill(x, x + n, v);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b, idx N,
                         idx C) const {
    const auto timed = tick("layernorm_fwd");
    k::layernorm_forward(out, mean, rstd, x, w, b, N, C);
  }
  void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w,
                          const float* mean, const float* rstd, idx N, idx C) const {
    const auto timed = tick("layernorm_bwd");
    k::layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, N, C);
  }
  // keep_x and kept_x (bf16): x's bfloat16 rounding kept by the forward for the backward's
  // weight gradient (gemm_reuse.hpp); fp32 ignores them.
  void matmul_forward(float* out, const float* x, const float* W, const float* bias, idx N, idx C, idx OC,
                      hcomm::bf16* keep_x = nullptr) const {
    const auto timed = tick("gemm_fwd");
    if (!gemm_.bf16_mode()) return k::matmul_forward(out, x, W, bias, N, C, OC);
    gemm_(false, true, N, OC, C, 1.f, x, C, W, C, 0.f, out, OC, {.keep_a = keep_x});
    if (bias) k::add_bias_rows(out, bias, N, OC);
  }
  void matmul_backward(float* dx, float* dW, float* dbias, const float* dout, const float* x, const float* W, idx N,
                       idx C, idx OC, bool accumulate_dx, const hcomm::bf16* kept_x = nullptr) const {
    const auto timed = tick("gemm_bwd");
    if (!gemm_.bf16_mode()) return k::matmul_backward(dx, dW, dbias, dout, x, W, N, C, OC, accumulate_dx);
    if (dx) gemm_(false, false, N, C, OC, 1.f, dout, OC, W, C, accumulate_dx ? 1.f : 0.f, dx, C);
    // dout rounded once for both GEMMs, x not again
    gemm_(true, false, OC, C, N, 1.f, dout, OC, x, C, 1.f, dW, C, {.kept_b = kept_x, .same_a = dx != nullptr});
    if (dbias) k::column_sums_add(dbias, dout, N, OC);
  }
  // The MLP's layers around its gelu, as two kernels here (ops_portable.hpp fuses them where
  // the GEMM library can): h = x W^T + bias, g = gelu(h); and dh = (dout W) * gelu'(h).
  void matmul_gelu_forward(float* h, float* g, const float* x, const float* W, const float* bias, idx N, idx C,
                           idx OC, hcomm::bf16* keep_x = nullptr) const {
    matmul_forward(h, x, W, bias, N, C, OC, keep_x);
    gelu_forward(g, h, N * OC);
  }
  void matmul_gelu_backward(float* dh, float* dW, float* dbias, const float* dout, const float* g, const float* h,
                            const float* W, idx N, idx C, idx OC, const hcomm::bf16* kept_g = nullptr) const {
    matmul_backward(dh, dW, dbias, dout, g, W, N, C, OC, false, kept_g);
    gelu_backward(dh, h, dh, N * C);
  }
  void gelu_forward(float* out, const float* x, idx n) const {
    const auto timed = tick("gelu_fwd");
    k::gelu_forward(out, x, n);
  }
  void gelu_backward(float* dx, const float* x, const float* dout, idx n) const {
    const auto timed = tick("gelu_bwd");
    k::gelu_backward(dx, x, dout, n);
  }
  void rotary_apply(float* qkv, const float* cos_t, const float* sin_t, idx N, idx T, idx nh, idx hd, idx rot,
                    bool inverse) const {
    if (rot <= 0) return;  // GPT-2: no rotary (not a kernel to time)
    const auto timed = tick("rotary");
    k::rotary_apply(qkv, cos_t, sin_t, N, T, nh, hd, rot, inverse);
  }
  void attention_forward(float* out, float* att, const float* qkv, idx B, idx T, idx nh, idx hd, bool causal) const {
    const auto timed = tick("attention_fwd");
    k::attention_forward(out, att, qkv, B, T, nh, hd, causal, gemm_.bf16_mode());
  }
  // What attention keeps per sequence and head for backward (the probabilities), and the
  // backward's scratch: T * T floats each.
  // bf16: kernels.hpp's attention computes with q, k, v and the output gradient as given, so
  // the model rounds them to bfloat16 first (model.hpp).
  static constexpr bool attention_rounds_operands = false;
  static constexpr idx attention_floats(idx T) { return T * T; }
  static constexpr idx attention_scratch_floats(idx T) { return T * T; }
  void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, float* att,
                          const float* /*out*/, idx B, idx T, idx nh, idx hd, bool causal) const {
    const auto timed = tick("attention_bwd");
    k::attention_backward(dqkv, scratch, dout, qkv, att, B, T, nh, hd, causal, gemm_.bf16_mode());
  }
  void residual_forward(float* out, const float* a, const float* b, idx n) const {
    const auto timed = tick("residual");
    k::residual_forward(out, a, b, n);
  }
  void add_inplace(float* out, const float* a, idx n) const {
    const auto timed = tick("residual");
    k::add_inplace(out, a, n);
  }
  void add_bias_rows(float* out, const float* bias, idx N, idx C) const {
    const auto timed = tick("bias_fwd");
    k::add_bias_rows(out, bias, N, C);
  }
  void column_sums_add(float* acc, const float* d, idx N, idx C) const {
    const auto timed = tick("bias_bwd");
    k::column_sums_add(acc, d, N, C);
  }
  void round_bf16(float* x, idx n) const {
    const auto timed = tick("round_bf16");
    k::round_bf16(x, n);
  }

  // x[n, :] = wte[tokens[n] - v0, :] for the tokens of this vocabulary shard [v0, v0 + Vl), else 0.
  void embed_tokens(float* x, const int* tokens, const float* wte, idx N, idx C, idx v0, idx Vl) const {
    const auto timed = tick("embedding_fwd");
#pragma omp parallel for if (N * C > k::par_min) num_threads(hcomm::exec::default_threads())
    for (idx n = 0; n < N; ++n) {
      const idx v = tokens[n] - v0;
      float* xn = x + n * C;
      if (v >= 0 && v < Vl)
        for (idx c = 0; c < C; ++c) xn[c] = wte[v * C + c];
      else
        for (idx c = 0; c < C; ++c) xn[c] = 0.f;
    }
  }
  // x[n, :] += wpe[n % T, :].
  void add_positions(float* x, const float* wpe, idx N, idx T, idx C) const {
    const auto timed = tick("embedding_fwd");
#pragma omp parallel for if (N * C > k::par_min) num_threads(hcomm::exec::default_threads())
    for (idx n = 0; n < N; ++n)
      for (idx c = 0; c < C; ++c) x[n * C + c] += wpe[(n % T) * C + c];
  }
  // dwte[tokens[n] - v0, :] += d[n, :] over the rows in order.
  void embed_tokens_backward(float* dwte, const float* d, const int* tokens, idx N, idx C, idx v0, idx Vl) const {
    const auto timed = tick("embedding_bwd");
    // Serial over rows: several rows may hit the same token (a parallel loop would race).
    for (idx n = 0; n < N; ++n) {
      const idx v = tokens[n] - v0;
      if (v >= 0 && v < Vl)
        for (idx c = 0; c < C; ++c) dwte[v * C + c] += d[n * C + c];
    }
  }
  // dwpe[t, :] += d[s T + t, :] over the sequences s in order.
  void add_positions_backward(float* dwpe, const float* d, idx N, idx T, idx C) const {
    const auto timed = tick("embedding_bwd");
#pragma omp parallel for if (N * C > k::par_min) num_threads(hcomm::exec::default_threads())
    for (idx c = 0; c < C; ++c)
      for (idx n = 0; n < N; ++n) dwpe[(n % T) * C + c] += d[n * C + c];
  }

  // Cross-entropy over the logits z[N, V] of one vocabulary shard (v0: its first token), in
  // three steps around the TP exchanges: the row maxima; sums[n] = sum of exp(z - mx[n]) and
  // sums[N + n] = the target's logit where this shard holds it (else 0), 1 and 0 for rows
  // with targets < 0 (not predicted); then z = (softmax - onehot) * scale, 0 on those rows.
  void ce_row_max(float* mx, const float* z, idx N, idx V) const {
    const auto timed = tick("cross_entropy");
#pragma omp parallel for if (N * V > k::par_min) num_threads(hcomm::exec::default_threads())
    for (idx n = 0; n < N; ++n) {
      float m = z[n * V];
      for (idx v = 1; v < V; ++v) m = z[n * V + v] > m ? z[n * V + v] : m;
      mx[n] = m;
    }
  }
  void ce_sums(float* sums, const float* z, const float* mx, const int* targets, idx N, idx V, idx v0) const {
    const auto timed = tick("cross_entropy");
#pragma omp parallel for if (N * V > k::par_min) num_threads(hcomm::exec::default_threads())
    for (idx n = 0; n < N; ++n) {
      if (targets[n] < 0) {
        sums[n] = 1.f;
        sums[N + n] = 0.f;
        continue;
      }
      // the exponentials through a block on the stack (the logits stay for ce_grad)
      float s = 0.f, e[256];
      for (idx b = 0; b < V; b += 256) {
        const idx m = std::min<idx>(256, V - b);
        const bool nan = k::shifted_exp(z + n * V + b, e, mx[n], m);
        s = nan ? std::numeric_limits<float>::quiet_NaN() : s + k::row_sum(e, m);
      }
      const idx t = targets[n] - v0;
      sums[n] = s;
      sums[N + n] = (t >= 0 && t < V) ? z[n * V + t] : 0.f;
    }
  }
  void ce_grad(float* z, const float* mx, const float* sums, const int* targets, idx N, idx V, idx v0,
               float scale) const {
    const auto timed = tick("cross_entropy");
#pragma omp parallel for if (N * V > k::par_min) num_threads(hcomm::exec::default_threads())
    for (idx n = 0; n < N; ++n) {
      if (targets[n] < 0) {
        std::fill(z + n * V, z + (n + 1) * V, 0.f);
        continue;
      }
      float* r = z + n * V;
      const float inv = k::shifted_exp(r, r, mx[n], V) ? std::numeric_limits<float>::quiet_NaN() : 1.f / sums[n];
      const idx t = targets[n] - v0;
      for (idx v = 0; v < V; ++v) r[v] = (r[v] * inv - (v == t ? 1.f : 0.f)) * scale;
    }
  }

 private:
  host_gemm gemm_;  // the bf16 GEMMs (fp32 ones are kernels.hpp's)
  kernel_clock_slot<host_kernel_clock> clock_;  // --kernel-times

  host_kernel_clock::scope tick(const char* name) const { return clock_.tick(name); }
};

}  // namespace gpt
