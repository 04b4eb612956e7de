// msparse/attention/block_sparse.hpp: block-sparse causal attention, forward and backward,
// for one head: Q, K, V are (T, d) fp32 rows (with a leading dimension, so a head of a
// packed (T, 3C) qkv buffer is used in place). Entries the layout does not keep are never
// touched: work is proportional to the kept entries (layout::kept_entries()), not T^2.
//
//   namespace at = msparse::attention;
//   auto lay = at::layout::cover({at::pattern::local_strided, 128}, T, 64);
//   at::forward(lay, q, k, v, d, o, lse);                            // o = softmax(QK^T/sqrt(d)) V
//   at::backward(lay, q, k, v, o, lse, dout, d, dq, dk, dv);        // grads (overwritten)
//   std::vector<float> ws(at::backward_workspace(lay, d));          // or once, for many calls
//   at::dense_masked_forward(lay.element_mask().data(), T, d, ...);  // the reference
//
// The algorithm is FlashAttention's, on the layout's element lists: a query row's scores
// against its kept keys only (no test per masked entry: a stride-l pattern's blocks hold
// one kept diagonal each), an online softmax over chunks of them, the log-sum-exp kept for
// backward. Backward recomputes each kept probability once, in a pass over query rows that
// also forms dQ and stores P and dS per kept entry (workspace: backward_workspace()), then
// a pass over key columns forms dK and dV from them; every output row has one writer and
// no atomics are needed. A head read from a wider buffer (ld > d) first has K and V (and in
// backward Q and dO) copied to contiguous rows in the workspace: a strided pattern's keys
// i - l, i - 2l, ... are rows l * ld apart there, which share few cache sets and defeat the
// prefetcher. The bodies are HCOMM_HOST_DEVICE functors run by an executor
// (msparse::kernels::launch: AVX2+FMA bodies on x86-64 hosts that have them), specialised
// for the usual head sizes so a row's accumulators stay in registers.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/host.hpp"
#include "msparse/attention/pattern.hpp"
#include "msparse/kernels/launch.hpp"
#include "msparse/kernels/simd.hpp"

namespace msparse::attention {

// Per-thread scratch is on the stack (a query row's accumulators and a chunk of scores).
inline constexpr std::size_t max_head_dim = 256;
inline constexpr std::size_t max_block = 256;

namespace detail {
using kernels::f8;

HCOMM_HOST_DEVICE float neg_inf() { return -__builtin_huge_valf(); }
// Eight partial sums: lets the host compiler vectorise the reduction without fast-math
// (a single float accumulator is a serial dependency chain), and is harmless on a GPU.
HCOMM_HOST_DEVICE float dot(const float* a, const float* b, std::size_t d) {
  float p[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  std::size_t c = 0;
  for (; c + 8 <= d; c += 8)
    for (std::size_t u = 0; u < 8; ++u) p[u] += a[c + u] * b[c + u];
  float s = ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
  for (; c < d; ++c) s += a[c] * b[c];
  return s;
}

// exp of eight lanes. Host vector path: Cephes' expf (round to n = x / ln 2, degree-6
// polynomial on the remainder, 2^n through the exponent bits), within 2 ulp of std::exp
// for x in [-87, 88] (clamped there: the softmax arguments are <= 0 and an underflow to
// ~1e-38 instead of 0 does not change a sum of terms >= 1). Device / struct path: expf.
HCOMM_HOST_DEVICE void exp8(f8& x) {
#if MSPARSE_F8_STRUCT
  for (int u = 0; u < 8; ++u) x.v[u] = std::exp(x.v[u]);
#else
  typedef int i8v __attribute__((vector_size(32)));
  const f8 lo = f8{} - 87.0f, hi = f8{} + 88.0f;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  const f8 magic = f8{} + 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const f8 fn = (x * 1.44269504088896341f + magic) - magic;
  const f8 r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
  f8 y = r * 1.9875691500e-4f + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * (r * r) + r + 1.0f;
  const i8v n = __builtin_convertvector(fn, i8v);
  x = y * (f8)((n + 127) << 23);
#endif
}
// lanes of a, scaled and shifted: a * s - m
HCOMM_HOST_DEVICE void affine8(f8& r, const f8& a, float s, float m) {
#if MSPARSE_F8_STRUCT
  for (int u = 0; u < 8; ++u) r.v[u] = a.v[u] * s - m;
#else
  r = a * s - m;
#endif
}
// dS = P (dP - delta) * scale
HCOMM_HOST_DEVICE void dsoft8(f8& r, const f8& p, const f8& dp, float delta, float scale) {
#if MSPARSE_F8_STRUCT
  for (int u = 0; u < 8; ++u) r.v[u] = p.v[u] * (dp.v[u] - delta) * scale;
#else
  r = p * (dp - delta) * scale;
#endif
}

// Row strides: q and the gradients dq/dk/dv at ld_qkv, o and dout at ld_o (in place, as
// the caller passed them); k and v as the row kernels read them at ld_kv, q and dout as the
// column kernel reads them at ld_col (d when forward()/backward() packed them).
struct geometry {
  std::size_t T, d, B, ld_qkv, ld_o, ld_kv, ld_col;
  float scale;
};

// Scores of one query row computed before their exponentials (one online-softmax rescale
// per chunk; rows of up to this many kept keys need none). A multiple of 8.
inline constexpr std::size_t score_chunk = 64;

// out[u] = a . rows[u], u < 8, for d = 8 * nv (eight f8 dot products reduced together).
HCOMM_HOST_DEVICE void dots8(f8& out, const float* a, const float* const* rows, std::size_t nv) {
  f8 acc[8] = {};
  for (std::size_t c = 0; c < nv; ++c) {
    f8 av;
    kernels::load8(av, a + 8 * c);
    MSPARSE_UNROLL
    for (int u = 0; u < 8; ++u) {
      f8 b;
      kernels::load8(b, rows[u] + 8 * c);
      kernels::fma8(acc[u], av, b);
    }
  }
  kernels::reduce8x8(out, acc);
}
// a . b for d = 8 * nv.
HCOMM_HOST_DEVICE float dotv(const float* a, const float* b, std::size_t nv) {
  f8 acc = {};
  for (std::size_t c = 0; c < nv; ++c) {
    f8 x, y;
    kernels::load8(x, a + 8 * c);
    kernels::load8(y, b + 8 * c);
    kernels::fma8(acc, x, y);
  }
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}
}  // namespace detail

// The kernels run over the layout's element lists (pattern.hpp), so a masked entry costs
// nothing, inside a kept block or not. Head dimensions that are multiples of 8 run on f8
// (dot products eight keys at a time, one 8x8 reduction, vector exp); D is the head
// dimension when it is one of the compiled sizes (a row's accumulators stay in registers),
// 0 for any other d (g.d at run time; scalar loops when d is not a multiple of 8).

// o[i] = sum_j softmax_j(q_i . k_j * scale) v_j over kept j; lse[i] = log-sum-exp of the
// row's scaled scores. One item = one block of B query rows.
template <std::size_t D>
struct forward_kernel {
  detail::geometry g;
  const float *q, *k, *v;
  float *o, *lse;
  const std::uint32_t *ent_ptr, *ent_col;

  HCOMM_HOST_DEVICE void operator()(std::size_t qb) const {
    const std::size_t d = D ? D : g.d;
    const std::size_t i_end = (qb + 1) * g.B < g.T ? (qb + 1) * g.B : g.T;
    for (std::size_t i = qb * g.B; i < i_end; ++i) {
      if (D % 8 == 0 && d % 8 == 0) row_vec(i, d / 8);
      else row_scalar(i, d);
    }
  }

  HCOMM_HOST_DEVICE void row_vec(std::size_t i, std::size_t nv_rt) const {
    constexpr std::size_t nv_max = D ? D / 8 : max_head_dim / 8;
    const std::size_t nv = D ? D / 8 : nv_rt;
    detail::f8 acc[nv_max] = {};
    alignas(32) float s[detail::score_chunk];
    float m = detail::neg_inf(), l = 0.f;
    const float* qi = q + i * g.ld_qkv;
    const std::uint32_t e_end = ent_ptr[i + 1];
    for (std::uint32_t e0 = ent_ptr[i]; e0 < e_end; e0 += std::uint32_t(detail::score_chunk)) {
      const std::uint32_t n = e_end - e0 < detail::score_chunk ? e_end - e0 : std::uint32_t(detail::score_chunk);
      for (std::uint32_t t0 = 0; t0 < n; t0 += 8) {
        const float* rows[8];
        for (std::uint32_t u = 0; u < 8; ++u)  // a partial group repeats its last key
          rows[u] = k + std::size_t(ent_col[e0 + (t0 + u < n ? t0 + u : n - 1)]) * g.ld_kv;
        detail::f8 r;
        detail::dots8(r, qi, rows, nv);
        detail::affine8(r, r, g.scale, 0.f);
        kernels::store8(s + t0, r);
      }
      float cm = detail::neg_inf();
      for (std::uint32_t t = 0; t < n; ++t) cm = s[t] > cm ? s[t] : cm;
      if (cm > m) {
        if (l > 0.f) {  // a later chunk with a larger maximum: rescale what is summed
          const float corr = std::exp(m - cm);
          l *= corr;
          for (std::size_t c = 0; c < nv; ++c) acc[c] = corr * acc[c];
        }
        m = cm;
      }
      for (std::uint32_t t0 = 0; t0 < n; t0 += 8) {
        detail::f8 r;
        kernels::load8(r, s + t0);
        detail::affine8(r, r, 1.f, m);
        detail::exp8(r);
        kernels::store8(s + t0, r);
      }
      for (std::uint32_t t = 0; t < n; ++t) {
        const float p = s[t];
        l += p;
        const float* vj = v + std::size_t(ent_col[e0 + t]) * g.ld_kv;
        for (std::size_t c = 0; c < nv; ++c) {
          detail::f8 b;
          kernels::load8(b, vj + 8 * c);
          kernels::fma8(acc[c], p, b);
        }
      }
    }
    float* oi = o + i * g.ld_o;
    const float inv = 1.f / l;  // every row keeps its diagonal entry: l >= 1
    for (std::size_t c = 0; c < nv; ++c) kernels::store8(oi + 8 * c, inv * acc[c]);
    lse[i] = m + std::log(l);
  }

  HCOMM_HOST_DEVICE void row_scalar(std::size_t i, std::size_t d) const {
    float acc[D ? D : max_head_dim];
    float s[detail::score_chunk];
    for (std::size_t c = 0; c < d; ++c) acc[c] = 0.f;
    float m = detail::neg_inf(), l = 0.f;
    const float* qi = q + i * g.ld_qkv;
    const std::uint32_t e_end = ent_ptr[i + 1];
    for (std::uint32_t e0 = ent_ptr[i]; e0 < e_end; e0 += std::uint32_t(detail::score_chunk)) {
      const std::uint32_t n = e_end - e0 < detail::score_chunk ? e_end - e0 : std::uint32_t(detail::score_chunk);
      float cm = detail::neg_inf();
      for (std::uint32_t t = 0; t < n; ++t) {
        s[t] = detail::dot(qi, k + std::size_t(ent_col[e0 + t]) * g.ld_kv, d) * g.scale;
        cm = s[t] > cm ? s[t] : cm;
      }
      if (cm > m) {
        if (l > 0.f) {
          const float corr = std::exp(m - cm);
          l *= corr;
          for (std::size_t c = 0; c < d; ++c) acc[c] *= corr;
        }
        m = cm;
      }
      for (std::uint32_t t = 0; t < n; ++t) {
        const float p = std::exp(s[t] - m);
        l += p;
        const float* vj = v + std::size_t(ent_col[e0 + t]) * g.ld_kv;
        for (std::size_t c = 0; c < d; ++c) acc[c] += p * vj[c];
      }
    }
    float* oi = o + i * g.ld_o;
    const float inv = 1.f / l;
    for (std::size_t c = 0; c < d; ++c) oi[c] = acc[c] * inv;
    lse[i] = m + std::log(l);
  }
};

// Per query row: delta_i = dO_i . O_i, then for each kept key j the probability
// P = exp(q_i . k_j * scale - lse_i) and dS = P (dO_i . v_j - delta_i) * scale, stored per
// entry for the column pass, and dQ_i = sum_j dS k_j. One item = one block of query rows.
template <std::size_t D>
struct backward_rows_kernel {
  detail::geometry g;
  const float *q, *k, *v, *o, *dout, *lse;
  float *dq, *P, *dS;
  const std::uint32_t *ent_ptr, *ent_col;

  HCOMM_HOST_DEVICE void operator()(std::size_t qb) const {
    const std::size_t d = D ? D : g.d;
    const std::size_t i_end = (qb + 1) * g.B < g.T ? (qb + 1) * g.B : g.T;
    for (std::size_t i = qb * g.B; i < i_end; ++i) {
      if (D % 8 == 0 && d % 8 == 0) row_vec(i, d / 8);
      else row_scalar(i, d);
    }
  }

  HCOMM_HOST_DEVICE void row_vec(std::size_t i, std::size_t nv_rt) const {
    constexpr std::size_t nv_max = D ? D / 8 : max_head_dim / 8;
    const std::size_t nv = D ? D / 8 : nv_rt;
    detail::f8 acc[nv_max] = {};
    alignas(32) float pb[detail::score_chunk], db[detail::score_chunk];
    const float* qi = q + i * g.ld_qkv;
    const float* doi = dout + i * g.ld_o;
    const float delta = detail::dotv(doi, o + i * g.ld_o, nv);
    const float li = lse[i];
    const std::uint32_t e_end = ent_ptr[i + 1];
    for (std::uint32_t e0 = ent_ptr[i]; e0 < e_end; e0 += std::uint32_t(detail::score_chunk)) {
      const std::uint32_t n = e_end - e0 < detail::score_chunk ? e_end - e0 : std::uint32_t(detail::score_chunk);
      for (std::uint32_t t0 = 0; t0 < n; t0 += 8) {
        const float* krows[8];
        const float* vrows[8];
        for (std::uint32_t u = 0; u < 8; ++u) {
          const std::size_t j = ent_col[e0 + (t0 + u < n ? t0 + u : n - 1)];
          krows[u] = k + j * g.ld_kv;
          vrows[u] = v + j * g.ld_kv;
        }
        detail::f8 p, dp, ds;
        detail::dots8(p, qi, krows, nv);
        detail::affine8(p, p, g.scale, li);
        detail::exp8(p);
        detail::dots8(dp, doi, vrows, nv);
        detail::dsoft8(ds, p, dp, delta, g.scale);
        kernels::store8(pb + t0, p);
        kernels::store8(db + t0, ds);
      }
      for (std::uint32_t t = 0; t < n; ++t) {
        P[e0 + t] = pb[t];
        dS[e0 + t] = db[t];
        const float* kj = k + std::size_t(ent_col[e0 + t]) * g.ld_kv;
        for (std::size_t c = 0; c < nv; ++c) {
          detail::f8 b;
          kernels::load8(b, kj + 8 * c);
          kernels::fma8(acc[c], db[t], b);
        }
      }
    }
    float* dqi = dq + i * g.ld_qkv;
    for (std::size_t c = 0; c < nv; ++c) kernels::store8(dqi + 8 * c, acc[c]);
  }

  HCOMM_HOST_DEVICE void row_scalar(std::size_t i, std::size_t d) const {
    float acc[D ? D : max_head_dim];
    for (std::size_t c = 0; c < d; ++c) acc[c] = 0.f;
    const float* qi = q + i * g.ld_qkv;
    const float* doi = dout + i * g.ld_o;
    const float delta = detail::dot(doi, o + i * g.ld_o, d);
    const float li = lse[i];
    for (std::uint32_t e = ent_ptr[i]; e < ent_ptr[i + 1]; ++e) {
      const std::size_t j = ent_col[e];
      const float* kj = k + j * g.ld_kv;
      const float p = std::exp(detail::dot(qi, kj, d) * g.scale - li);
      const float ds = p * (detail::dot(doi, v + j * g.ld_kv, d) - delta) * g.scale;
      P[e] = p;
      dS[e] = ds;
      for (std::size_t c = 0; c < d; ++c) acc[c] += ds * kj[c];
    }
    float* dqi = dq + i * g.ld_qkv;
    for (std::size_t c = 0; c < d; ++c) dqi[c] = acc[c];
  }
};

// Per key column: dV_j = sum_i P_ij dO_i and dK_j = sum_i dS_ij q_i over the queries that
// keep j (the layout's key lists), from the row pass's P and dS. One item = one block of keys.
template <std::size_t D>
struct backward_cols_kernel {
  detail::geometry g;
  const float *q, *dout, *P, *dS;
  float *dk, *dv;
  const std::uint32_t *key_ptr, *key_row, *key_ent;

  HCOMM_HOST_DEVICE void operator()(std::size_t kb) const {
    const std::size_t d = D ? D : g.d;
    const std::size_t j_end = (kb + 1) * g.B < g.T ? (kb + 1) * g.B : g.T;
    for (std::size_t j = kb * g.B; j < j_end; ++j) {
      if (D % 8 == 0 && d % 8 == 0) col_vec(j, d / 8);
      else col_scalar(j, d);
    }
  }

  HCOMM_HOST_DEVICE void col_vec(std::size_t j, std::size_t nv_rt) const {
    constexpr std::size_t nv_max = D ? D / 8 : max_head_dim / 8;
    const std::size_t nv = D ? D / 8 : nv_rt;
    detail::f8 ak[nv_max] = {}, av[nv_max] = {};
    for (std::uint32_t t = key_ptr[j]; t < key_ptr[j + 1]; ++t) {
      const std::size_t i = key_row[t], e = key_ent[t];
      const float p = P[e], ds = dS[e];
      const float* qi = q + i * g.ld_col;
      const float* doi = dout + i * g.ld_col;
      for (std::size_t c = 0; c < nv; ++c) {
        detail::f8 a, b;
        kernels::load8(a, doi + 8 * c);
        kernels::load8(b, qi + 8 * c);
        kernels::fma8(av[c], p, a);
        kernels::fma8(ak[c], ds, b);
      }
    }
    float* dkj = dk + j * g.ld_qkv;
    float* dvj = dv + j * g.ld_qkv;
    for (std::size_t c = 0; c < nv; ++c) {
      kernels::store8(dkj + 8 * c, ak[c]);
      kernels::store8(dvj + 8 * c, av[c]);
    }
  }

  HCOMM_HOST_DEVICE void col_scalar(std::size_t j, std::size_t d) const {
    float ak[D ? D : max_head_dim], av[D ? D : max_head_dim];
    for (std::size_t c = 0; c < d; ++c) ak[c] = av[c] = 0.f;
    for (std::uint32_t t = key_ptr[j]; t < key_ptr[j + 1]; ++t) {
      const std::size_t i = key_row[t], e = key_ent[t];
      const float p = P[e], ds = dS[e];
      const float* qi = q + i * g.ld_col;
      const float* doi = dout + i * g.ld_col;
      for (std::size_t c = 0; c < d; ++c) {
        av[c] += p * doi[c];
        ak[c] += ds * qi[c];
      }
    }
    float* dkj = dk + j * g.ld_qkv;
    float* dvj = dv + j * g.ld_qkv;
    for (std::size_t c = 0; c < d; ++c) {
      dkj[c] = ak[c];
      dvj[c] = av[c];
    }
  }
};

// Copies up to four (T, d) row sets from their strides into contiguous (T, d) buffers: the
// kernels then read a head's K and V (and in backward Q and dO) from 4d-byte rows, not
// from rows ld apart. A strided pattern reads keys i - l, i - 2l, ...: in a packed (T, 3C)
// buffer those rows map to few cache sets and are missed by the prefetcher.
struct pack_kernel {
  const float* src[4];
  std::size_t ld[4];
  float* dst[4];
  int count;
  std::size_t d;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    for (int m = 0; m < count; ++m)
      for (std::size_t c = 0; c < d; ++c) dst[m][i * d + c] = src[m][i * ld[m] + c];
  }
};

namespace detail {
inline geometry make_geometry(const layout& lay, std::size_t d, std::size_t ld_qkv, std::size_t ld_o) {
  HCOMM_EXPECTS(d > 0 && d <= max_head_dim, "msparse: attention head dimension must be in [1, 256]");
  HCOMM_EXPECTS(lay.block() <= max_block, "msparse: attention block size must be <= 256");
  if (ld_qkv == 0) ld_qkv = d;
  if (ld_o == 0) ld_o = d;
  HCOMM_EXPECTS(ld_qkv >= d && ld_o >= d, "msparse: attention leading dimensions must be >= d");
  return geometry{lay.T(), d, lay.block(), ld_qkv, ld_o, ld_qkv, ld_o, 1.0f / std::sqrt(float(d))};
}
// f(std::integral_constant<std::size_t, D>) with D = d for the compiled head sizes, else 0.
template <class F>
void with_head_dim(std::size_t d, F&& f) {
  switch (d) {
    case 16: f(std::integral_constant<std::size_t, 16>{}); return;
    case 32: f(std::integral_constant<std::size_t, 32>{}); return;
    case 64: f(std::integral_constant<std::size_t, 64>{}); return;
    case 128: f(std::integral_constant<std::size_t, 128>{}); return;
    default: f(std::integral_constant<std::size_t, 0>{}); return;
  }
}
}  // namespace detail

// Floats of workspace forward() needs: K and V packed when they are strided (ld_qkv > d).
inline std::size_t forward_workspace(const layout& lay, std::size_t d, std::size_t ld_qkv = 0) {
  return ld_qkv > d ? 2 * lay.T() * d : 0;
}

// o: (T, d) rows at ld_o; lse: T floats (kept for backward). ld 0 means d.
// ws: forward_workspace(lay, d, ld_qkv) floats (allocated here when needed and null).
template <class Exec = hcomm::exec::host>
void forward(const layout& lay, const float* q, const float* k, const float* v, std::size_t d, float* o, float* lse,
             std::size_t ld_qkv = 0, std::size_t ld_o = 0, float* ws = nullptr, const Exec& ex = {}) {
  auto g = detail::make_geometry(lay, d, ld_qkv, ld_o);
  std::vector<float> own;
  if (g.ld_qkv > d) {
    if (!ws) {
      own.resize(forward_workspace(lay, d, g.ld_qkv));
      ws = own.data();
    }
    float* kp = ws;
    float* vp = ws + lay.T() * d;
    kernels::launch(ex, lay.T(), pack_kernel{{k, v, nullptr, nullptr}, {g.ld_qkv, g.ld_qkv, 0, 0}, {kp, vp, nullptr, nullptr}, 2, d});
    k = kp;
    v = vp;
    g.ld_kv = d;
  }
  detail::with_head_dim(d, [&](auto D) {
    kernels::launch(ex, lay.blocks_per_side(),
                    forward_kernel<decltype(D)::value>{g, q, k, v, o, lse, lay.ent_ptr().data(), lay.ent_col().data()});
  });
}

// Floats of workspace backward() needs: P and dS per kept entry, and K, V, Q, dO packed
// when they are strided (ld_qkv or ld_o > d).
inline std::size_t backward_workspace(const layout& lay, std::size_t d, std::size_t ld_qkv = 0, std::size_t ld_o = 0) {
  return 2 * lay.kept_entries() + (ld_qkv > d || ld_o > d ? 4 * lay.T() * d : 0);
}

// dq, dk, dv are overwritten (rows at ld_qkv; they may be a packed (T, 3C) dqkv head).
// ws: backward_workspace(lay, d, ld_qkv, ld_o) floats (allocated here when null).
template <class Exec = hcomm::exec::host>
void backward(const layout& lay, const float* q, const float* k, const float* v, const float* o, const float* lse,
              const float* dout, std::size_t d, float* dq, float* dk, float* dv, std::size_t ld_qkv = 0,
              std::size_t ld_o = 0, float* ws = nullptr, const Exec& ex = {}) {
  auto g = detail::make_geometry(lay, d, ld_qkv, ld_o);
  std::vector<float> own;
  if (!ws) {
    own.resize(backward_workspace(lay, d, g.ld_qkv, g.ld_o));
    ws = own.data();
  }
  float* P = ws;
  float* dS = ws + lay.kept_entries();
  const float* qc = q;
  const float* dc = dout;
  if (g.ld_qkv > d || g.ld_o > d) {
    float* pk = dS + lay.kept_entries();
    float* pv = pk + lay.T() * d;
    float* pq = pv + lay.T() * d;
    float* pd = pq + lay.T() * d;
    kernels::launch(ex, lay.T(), pack_kernel{{k, v, q, dout}, {g.ld_qkv, g.ld_qkv, g.ld_qkv, g.ld_o}, {pk, pv, pq, pd}, 4, d});
    k = pk;
    v = pv;
    qc = pq;
    dc = pd;
    g.ld_kv = g.ld_col = d;
  }
  detail::with_head_dim(d, [&](auto D) {
    constexpr std::size_t Dv = decltype(D)::value;
    kernels::launch(ex, lay.blocks_per_side(),
                    backward_rows_kernel<Dv>{g, q, k, v, o, dout, lse, dq, P, dS, lay.ent_ptr().data(),
                                             lay.ent_col().data()});
    kernels::launch(ex, lay.blocks_per_side(),
                    backward_cols_kernel<Dv>{g, qc, dc, P, dS, dk, dv, lay.key_ptr().data(), lay.key_row().data(),
                                             lay.key_ent().data()});
  });
}

// --- the reference: dense causal attention with an explicit element mask ---------------
// Materialises the T x T probabilities; rows (T, d) contiguous. mask[i*T+j] != 0 keeps (i, j).

inline void dense_masked_forward(const std::uint8_t* mask, std::size_t T, std::size_t d, const float* q, const float* k,
                                 const float* v, float* o, std::vector<float>* probs = nullptr) {
  const float scale = 1.0f / std::sqrt(float(d));
  std::vector<float> P(T * T, 0.f);
  for (std::size_t i = 0; i < T; ++i) {
    float m = detail::neg_inf();
    for (std::size_t j = 0; j < T; ++j)
      if (mask[i * T + j]) {
        P[i * T + j] = detail::dot(q + i * d, k + j * d, d) * scale;
        m = std::max(m, P[i * T + j]);
      }
    float l = 0.f;
    for (std::size_t j = 0; j < T; ++j) {
      P[i * T + j] = mask[i * T + j] ? std::exp(P[i * T + j] - m) : 0.f;
      l += P[i * T + j];
    }
    for (std::size_t j = 0; j < T; ++j) P[i * T + j] /= l;
    for (std::size_t c = 0; c < d; ++c) {
      float s = 0.f;
      for (std::size_t j = 0; j < T; ++j) s += P[i * T + j] * v[j * d + c];
      o[i * d + c] = s;
    }
  }
  if (probs) *probs = std::move(P);
}

inline void dense_masked_backward(const std::uint8_t* mask, std::size_t T, std::size_t d, const float* q, const float* k,
                                  const float* v, const float* dout, float* dq, float* dk, float* dv) {
  const float scale = 1.0f / std::sqrt(float(d));
  std::vector<float> P, o(T * d);
  dense_masked_forward(mask, T, d, q, k, v, o.data(), &P);
  std::fill(dq, dq + T * d, 0.f);
  std::fill(dk, dk + T * d, 0.f);
  std::fill(dv, dv + T * d, 0.f);
  for (std::size_t i = 0; i < T; ++i) {
    // dP_ij = dO_i . v_j; dS_ij = P_ij (dP_ij - sum_l P_il dP_il)
    std::vector<float> dP(T, 0.f);
    float rowsum = 0.f;
    for (std::size_t j = 0; j < T; ++j)
      if (mask[i * T + j]) {
        dP[j] = detail::dot(dout + i * d, v + j * d, d);
        rowsum += P[i * T + j] * dP[j];
      }
    for (std::size_t j = 0; j < T; ++j) {
      if (!mask[i * T + j]) continue;
      const float p = P[i * T + j];
      const float ds = p * (dP[j] - rowsum) * scale;
      for (std::size_t c = 0; c < d; ++c) {
        dv[j * d + c] += p * dout[i * d + c];
        dq[i * d + c] += ds * k[j * d + c];
        dk[j * d + c] += ds * q[i * d + c];
      }
    }
  }
}

// FLOPs of what these kernels compute (2 per multiply-add). They evaluate only kept
// entries (they run over the element lists), so the count is per kept entry: forward
// QK^T and PV = 4 d; backward dQ, dK, dV, dP = 8 d (the recomputation of QK^T in backward
// is not counted, as in the usual 3x convention).
// A dense-tile kernel (tensor cores) would do layout::computed_entries() instead.
inline double forward_flops(const layout& lay, std::size_t d) { return 4.0 * double(d) * double(lay.kept_entries()); }
inline double backward_flops(const layout& lay, std::size_t d) { return 8.0 * double(d) * double(lay.kept_entries()); }

}  // namespace msparse::attention
