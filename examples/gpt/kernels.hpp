// examples/gpt/kernels.hpp: the fp32 CPU layers of the GPT trainer, llm.c style: each layer is
// a forward/backward pair over plain arrays, shapes in comments. N = rows (micro-batch
// sequences x T), C = channels. Backward functions ACCUMULATE (+=) into parameter gradients
// and into the input gradient unless they say otherwise, so residual branches just add up.
//
//   gpt::k::layernorm_forward(out, mean, rstd, x, w, b, N, C);
//   gpt::k::matmul_forward(out, x, W, bias, N, C, OC);        // out = x W^T + bias
//
// Loops parallelise over independent outputs only (never a shared reduction), so results do
// not depend on the thread count order of summation within a row.
// Each runs on hcomm::exec::default_threads() threads: this rank's share of the node's CPUs.
#pragma once
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "avx2/exp.hpp"
#include "avx2/gelu.hpp"
#include "hcomm/core/bfloat16.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "hcomm/exec/threads.hpp"
#include "portable/exp.hpp"
#include "portable/gelu.hpp"

namespace gpt::k {

using idx = std::ptrdiff_t;

// Loops over fewer elements than this run on one thread: a fork/join costs microseconds, and
// far more when the cores are shared and a spinning thread loses its core.
constexpr idx par_min = idx{1} << 15;

// acc[c] += sum over rows n (in order) of d[n*C + c]. Row-major sweeps over blocks of 64
// columns (one block per thread): cache friendly, and the order of summation per column is
// the same for any thread count.
inline void column_sums_add(float* acc, const float* d, idx N, idx C) {
  constexpr idx blk = 64;
  const idx nblk = (C + blk - 1) / blk;
#pragma omp parallel for if (N * C > par_min) num_threads(hcomm::exec::default_threads())
  for (idx b = 0; b < nblk; ++b) {
    const idx c0 = b * blk, c1 = c0 + blk < C ? c0 + blk : C;
    float s[blk] = {};
    for (idx n = 0; n < N; ++n)
      for (idx c = c0; c < c1; ++c) s[c - c0] += d[n * C + c];
    for (idx c = c0; c < c1; ++c) acc[c] += s[c - c0];
  }
}

// out[N,C] = (x - mean) * rstd * w + b over each row; mean, rstd [N] kept for backward.
inline void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                              idx N, idx C) {
  constexpr float eps = 1e-5f;
#pragma omp parallel for if (N * C > par_min) num_threads(hcomm::exec::default_threads())
  for (idx n = 0; n < N; ++n) {
    const float* xn = x + n * C;
    float m = 0.f;
    for (idx i = 0; i < C; ++i) m += xn[i];
    m /= static_cast<float>(C);
    float v = 0.f;
    for (idx i = 0; i < C; ++i) v += (xn[i] - m) * (xn[i] - m);
    v /= static_cast<float>(C);
    const float s = 1.f / std::sqrt(v + eps);
    float* on = out + n * C;
    for (idx i = 0; i < C; ++i) on[i] = (xn[i] - m) * s * w[i] + b[i];
    mean[n] = m;
    rstd[n] = s;
  }
}

// dx[N,C] += ..., dw[C] += ..., db[C] += ... from dout[N,C].
inline void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w,
                               const float* mean, const float* rstd, idx N, idx C) {
#pragma omp parallel for if (N * C > par_min) num_threads(hcomm::exec::default_threads())
  for (idx n = 0; n < N; ++n) {
    const float* dn = dout + n * C;
    const float* xn = x + n * C;
    const float m = mean[n], s = rstd[n];
    float dnorm_mean = 0.f, dnorm_norm_mean = 0.f;
    for (idx i = 0; i < C; ++i) {
      const float norm = (xn[i] - m) * s;
      const float dnorm = w[i] * dn[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= static_cast<float>(C);
    dnorm_norm_mean /= static_cast<float>(C);
    float* dxn = dx + n * C;
    for (idx i = 0; i < C; ++i) {
      const float norm = (xn[i] - m) * s;
      const float dnorm = w[i] * dn[i];
      dxn[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
  }
  // Parameter gradients: a reduction over rows, blocks of channels per thread (deterministic).
  constexpr idx blk = 64;
  const idx nblk = (C + blk - 1) / blk;
#pragma omp parallel for if (N * C > par_min) num_threads(hcomm::exec::default_threads())
  for (idx b = 0; b < nblk; ++b) {
    const idx c0 = b * blk, c1 = c0 + blk < C ? c0 + blk : C;
    float gw[blk] = {}, gb[blk] = {};
    for (idx n = 0; n < N; ++n) {
      const float m = mean[n], s = rstd[n];
      for (idx i = c0; i < c1; ++i) {
        const float norm = (x[n * C + i] - m) * s;
        gw[i - c0] += norm * dout[n * C + i];
        gb[i - c0] += dout[n * C + i];
      }
    }
    for (idx i = c0; i < c1; ++i) {
      dw[i] += gw[i - c0];
      db[i] += gb[i - c0];
    }
  }
}

// out[N,OC] = x[N,C] W[OC,C]^T + bias[OC] (bias may be null).
inline void matmul_forward(float* out, const float* x, const float* W, const float* bias, idx N, idx C, idx OC) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(N), static_cast<int>(OC), static_cast<int>(C),
              1.f, x, static_cast<int>(C), W, static_cast<int>(C), 0.f, out, static_cast<int>(OC));
  if (bias) {
#pragma omp parallel for if (N * OC > par_min) num_threads(hcomm::exec::default_threads())
    for (idx n = 0; n < N; ++n)
      for (idx o = 0; o < OC; ++o) out[n * OC + o] += bias[o];
  }
}

// dx[N,C] (+= if accumulate, else =) dout W; dW[OC,C] += dout^T x; dbias[OC] += sum_n dout.
inline void matmul_backward(float* dx, float* dW, float* dbias, const float* dout, const float* x, const float* W, idx N,
                            idx C, idx OC, bool accumulate_dx) {
  const int n = static_cast<int>(N), c = static_cast<int>(C), oc = static_cast<int>(OC);
  if (dx)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, c, oc, 1.f, dout, oc, W, c, accumulate_dx ? 1.f : 0.f,
                dx, c);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, oc, c, n, 1.f, dout, oc, x, c, 1.f, dW, c);
  if (dbias) column_sums_add(dbias, dout, N, OC);
}

// GELU, tanh approximation (GPT-2's gelu_new; PyTorch gelu(approximate="tanh")): the
// arithmetic of portable/gelu.hpp (0.5 (1 + tanh u) as a logistic function of one
// polynomial exp), in blocks of gelu_block elements over the threads, each block by
// avx2/gelu.hpp's vector loop where the CPU has AVX2 (the same bits either way).
constexpr idx gelu_block = 4096;

inline void gelu_forward(float* out, const float* x, idx n) {
#pragma omp parallel for if (n > par_min) num_threads(hcomm::exec::default_threads())
  for (idx b = 0; b < n; b += gelu_block) {
    const idx m = std::min(gelu_block, n - b);
#if HCOMM_X86_VARIANTS
    if (hcomm::cpu::use_avx2()) {
      avx2::gelu_forward(out + b, x + b, m);
      continue;
    }
#endif
    const portable::gelu_forward f{out + b, x + b};
    for (idx i = 0; i < m; ++i) f(static_cast<std::size_t>(i));
  }
}

// dx[n] = dout * gelu'(x) (overwrites; dx may alias dout).
inline void gelu_backward(float* dx, const float* x, const float* dout, idx n) {
#pragma omp parallel for if (n > par_min) num_threads(hcomm::exec::default_threads())
  for (idx b = 0; b < n; b += gelu_block) {
    const idx m = std::min(gelu_block, n - b);
#if HCOMM_X86_VARIANTS
    if (hcomm::cpu::use_avx2()) {
      avx2::gelu_backward(dx + b, x + b, dout + b, m);
      continue;
    }
#endif
    const portable::gelu_backward f{dx + b, x + b, dout + b};
    for (idx i = 0; i < m; ++i) f(static_cast<std::size_t>(i));
  }
}

// Rotary position embedding (GPT-NeoX "rotate_half" convention) on the first `rot` dims of
// every head of q and k, in place. qkv[N,3*Cl] rows at position t = n % T; tables cos/sin
// [T, rot/2]. inverse = true applies the transpose rotation (the backward pass).
inline void rotary_apply(float* qkv, const float* cos_t, const float* sin_t, idx N, idx T, idx nh, idx hd, idx rot,
                         bool inverse) {
  if (rot == 0) return;
  const idx Cl = nh * hd, half = rot / 2;
  const float sign = inverse ? -1.f : 1.f;
#pragma omp parallel for if (N * nh * rot > par_min) num_threads(hcomm::exec::default_threads())
  for (idx n = 0; n < N; ++n) {
    const idx t = n % T;
    for (int which = 0; which < 2; ++which) {  // q, then k
      float* row = qkv + n * 3 * Cl + which * Cl;
      for (idx h = 0; h < nh; ++h) {
        float* x = row + h * hd;
        for (idx i = 0; i < half; ++i) {
          const float c = cos_t[t * half + i], s = sign * sin_t[t * half + i];
          const float a = x[i], b = x[i + half];
          x[i] = a * c - b * s;
          x[i + half] = b * c + a * s;
        }
      }
    }
  }
}

// A softmax row's exponentials: out[j] = e^(in[j] - mx) for j < n, mx the row's maximum (out
// may be in), by portable/exp.hpp's arithmetic (avx2/exp.hpp's vector loop where the CPU has
// AVX2: the same bits). True if any in[j] - mx was NaN: the caller makes the row NaN, as
// libm's exp would have.
inline bool shifted_exp(const float* in, float* out, float mx, idx n) {
#if HCOMM_X86_VARIANTS
  if (hcomm::cpu::use_avx2()) return avx2::shifted_exp(in, out, mx, n) != 0;
#endif
  const portable::shifted_exp f{in, out, mx};
  std::uint32_t nan = 0;
  for (idx j = 0; j < n; ++j) nan |= f(static_cast<std::size_t>(j));
  return nan != 0;
}

// A row's sum in 8 interleaved partial sums added up in a fixed order at the end (a sum in
// one register waits on each add; 8 lanes vectorize and pipeline), the same bits on every run.
inline float row_sum(const float* x, idx n) {
  float acc[8] = {};
  idx j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) acc[l] += x[j + l];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; j < n; ++j) s += x[j];
  return s;
}

// Self-attention over nh local heads of size hd: causal (GPT, key j <= query t) or
// bidirectional (BERT, every key).
// qkv[B*T, 3*Cl] (q | k | v, head h at columns h*hd), att[B, nh, T, T] softmax kept for
// backward, out[B*T, Cl]. bf16 (--precision bf16; q, k and v arrive rounded): the softmax's
// exponentials are rounded to bfloat16 before the division by their (float) sum, as flash
// attention rounds its unnormalised probabilities for tensor cores (portable/attention_bf16.hpp:
// the same values when the keys fit one 64-key tile); the probabilities are kept so.
inline void attention_forward(float* out, float* att, const float* qkv, idx B, idx T, idx nh, idx hd,
                              bool causal = true, bool bf16 = false) {
  const idx Cl = nh * hd, ld = 3 * Cl;
  const float scale = 1.f / std::sqrt(static_cast<float>(hd));
  for (idx b = 0; b < B; ++b)
    for (idx h = 0; h < nh; ++h) {
      const float* q = qkv + b * T * ld + h * hd;
      const float* kk = q + Cl;
      const float* v = q + 2 * Cl;
      float* P = att + (b * nh + h) * T * T;
      // P[T,T] = scale * q k^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(T), static_cast<int>(T),
                  static_cast<int>(hd), scale, q, static_cast<int>(ld), kk, static_cast<int>(ld), 0.f, P,
                  static_cast<int>(T));
      for (idx t = 0; t < T; ++t) {  // softmax over the keys j <= last
        const idx last = causal ? t : T - 1;
        float* row = P + t * T;
        float mx = row[0];
        for (idx j = 1; j <= last; ++j) mx = row[j] > mx ? row[j] : mx;
        const bool nan = shifted_exp(row, row, mx, last + 1);
        const float inv = nan ? std::numeric_limits<float>::quiet_NaN() : 1.f / row_sum(row, last + 1);
        if (bf16)
          for (idx j = 0; j <= last; ++j) row[j] = hcomm::round_to_bf16(row[j]);
        for (idx j = 0; j <= last; ++j) row[j] *= inv;
        for (idx j = last + 1; j < T; ++j) row[j] = 0.f;
      }
      // out[T,hd] = P v
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(T), static_cast<int>(hd),
                  static_cast<int>(T), 1.f, P, static_cast<int>(T), v, static_cast<int>(ld), 0.f,
                  out + b * T * Cl + h * hd, static_cast<int>(Cl));
    }
}

// dqkv[B*T, 3*Cl] (overwritten) from dout[B*T, Cl]; scratch holds T*T floats. bf16: the
// score gradients are rounded to bfloat16 before they multiply q and k.
inline void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att,
                               idx B, idx T, idx nh, idx hd, bool causal = true, bool bf16 = false) {
  const idx Cl = nh * hd, ld = 3 * Cl;
  const int t_ = static_cast<int>(T), hd_ = static_cast<int>(hd), ld_ = static_cast<int>(ld), cl_ = static_cast<int>(Cl);
  const float scale = 1.f / std::sqrt(static_cast<float>(hd));
  for (idx b = 0; b < B; ++b)
    for (idx h = 0; h < nh; ++h) {
      const float* q = qkv + b * T * ld + h * hd;
      const float* kk = q + Cl;
      const float* v = q + 2 * Cl;
      const float* P = att + (b * nh + h) * T * T;
      const float* dO = dout + b * T * Cl + h * hd;
      float* dq = dqkv + b * T * ld + h * hd;
      float* dk = dq + Cl;
      float* dv = dq + 2 * Cl;
      float* dP = scratch;
      // dP[T,T] = dO v^T ; dv[T,hd] = P^T dO
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t_, t_, hd_, 1.f, dO, cl_, v, ld_, 0.f, dP, t_);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t_, hd_, t_, 1.f, P, t_, dO, cl_, 0.f, dv, ld_);
      // softmax backward: dS = P * (dP - sum_j P dP), zero above the diagonal when causal
      for (idx t = 0; t < T; ++t) {
        const idx last = causal ? t : T - 1;
        const float* p = P + t * T;
        float* d = dP + t * T;
        float dot = 0.f;
        for (idx j = 0; j <= last; ++j) dot += p[j] * d[j];
        for (idx j = 0; j <= last; ++j) d[j] = p[j] * (d[j] - dot);
        if (bf16)
          for (idx j = 0; j <= last; ++j) d[j] = hcomm::round_to_bf16(d[j]);
        for (idx j = last + 1; j < T; ++j) d[j] = 0.f;
      }
      // dq = scale dS k ; dk = scale dS^T q
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t_, hd_, t_, scale, dP, t_, kk, ld_, 0.f, dq, ld_);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t_, hd_, t_, scale, dP, t_, q, ld_, 0.f, dk, ld_);
    }
}

// out[N,C] = a + b (residual add).
inline void residual_forward(float* out, const float* a, const float* b, idx n) {
#pragma omp parallel for if (n > par_min) num_threads(hcomm::exec::default_threads())
  for (idx i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

inline void add_inplace(float* out, const float* a, idx n) {
#pragma omp parallel for if (n > par_min) num_threads(hcomm::exec::default_threads())
  for (idx i = 0; i < n; ++i) out[i] += a[i];
}

// x[n] = x rounded to the nearest bfloat16 (ties to even), kept in float32: --precision bf16's
// storage of weights, activations and gradients around float32 kernels.
inline void round_bf16(float* x, idx n) {
#pragma omp parallel for if (n > par_min) num_threads(hcomm::exec::default_threads())
  for (idx i = 0; i < n; ++i) x[i] = hcomm::round_to_bf16(x[i]);
}

inline void add_bias_rows(float* out, const float* bias, idx N, idx C) {
#pragma omp parallel for if (N * C > par_min) num_threads(hcomm::exec::default_threads())
  for (idx n = 0; n < N; ++n)
    for (idx c = 0; c < C; ++c) out[n * C + c] += bias[c];
}

}  // namespace gpt::k
