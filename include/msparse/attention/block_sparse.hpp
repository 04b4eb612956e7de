// msparse/attention/block_sparse.hpp: block-sparse causal attention, forward and backward,
// for one head: Q, K, V are (T, d) fp32 rows (with a leading dimension, so a head of a
// packed (T, 3C) qkv buffer is used in place). Blocks the layout does not keep are never
// touched: work is proportional to the computed entries, not T^2.
//
//   namespace at = msparse::attention;
//   auto lay = at::layout::cover({at::pattern::local_strided, 128}, T, 64);
//   at::forward(lay, q, k, v, d, o, lse);                            // o = softmax(QK^T/sqrt(d)) V
//   at::backward(lay, q, k, v, o, lse, dout, d, dq, dk, dv);        // grads (overwritten)
//   at::dense_masked_forward(lay.element_mask().data(), T, d, ...);  // the reference
//
// The algorithm is FlashAttention's, on blocks: an online softmax per query row over kept
// key blocks (one rescale per block), the log-sum-exp kept for backward; backward
// recomputes probabilities from it. dQ is computed per query block (row lists) and dK/dV
// per key block (column lists), so every output row has one writer and no atomics are
// needed. The bodies are HCOMM_HOST_DEVICE functors run by an executor.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/host.hpp"
#include "msparse/attention/pattern.hpp"

namespace msparse::attention {

// Per-thread scratch is on the stack (a query row's accumulator and a block's scores).
inline constexpr std::size_t max_head_dim = 256;
inline constexpr std::size_t max_block = 256;

namespace detail {
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

struct geometry {
  std::size_t T, d, B, ld_qkv, ld_o;
  float scale;
  pattern_spec pattern;
  bool exact;
  HCOMM_HOST_DEVICE bool keep(std::size_t i, std::size_t j) const { return j <= i && (!exact || pattern.keep(i, j)); }
};
}  // namespace detail

// o[i] = sum_j softmax_j(q_i . k_j * scale) v_j over kept j; lse[i] = log-sum-exp of the
// row's scaled scores.
struct forward_kernel {
  detail::geometry g;
  const float *q, *k, *v;
  float *o, *lse;
  const std::uint32_t *row_ptr, *row_idx;

  HCOMM_HOST_DEVICE void operator()(std::size_t qb) const {
    const std::size_t i_end = (qb + 1) * g.B < g.T ? (qb + 1) * g.B : g.T;
    for (std::size_t i = qb * g.B; i < i_end; ++i) {
      float acc[max_head_dim];
      float s[max_block];
      for (std::size_t c = 0; c < g.d; ++c) acc[c] = 0.f;
      float m = detail::neg_inf(), l = 0.f;
      const float* qi = q + i * g.ld_qkv;
      for (std::uint32_t r = row_ptr[qb]; r < row_ptr[qb + 1]; ++r) {
        const std::size_t j0 = std::size_t(row_idx[r]) * g.B;
        std::size_t j1 = j0 + g.B < g.T ? j0 + g.B : g.T;
        if (j1 > i + 1) j1 = i + 1;
        float bm = detail::neg_inf();
        for (std::size_t j = j0; j < j1; ++j) {
          s[j - j0] = g.keep(i, j) ? detail::dot(qi, k + j * g.ld_qkv, g.d) * g.scale : detail::neg_inf();
          bm = s[j - j0] > bm ? s[j - j0] : bm;
        }
        if (bm == detail::neg_inf()) continue;
        const float m_new = bm > m ? bm : m;
        const float corr = std::exp(m - m_new);  // 0 on the first kept block
        l *= corr;
        for (std::size_t c = 0; c < g.d; ++c) acc[c] *= corr;
        for (std::size_t j = j0; j < j1; ++j) {
          if (s[j - j0] == detail::neg_inf()) continue;
          const float p = std::exp(s[j - j0] - m_new);
          l += p;
          const float* vj = v + j * g.ld_qkv;
          for (std::size_t c = 0; c < g.d; ++c) acc[c] += p * vj[c];
        }
        m = m_new;
      }
      float* oi = o + i * g.ld_o;
      const float inv = 1.f / l;
      for (std::size_t c = 0; c < g.d; ++c) oi[c] = acc[c] * inv;
      lse[i] = m + std::log(l);
    }
  }
};

// delta[i] = dO_i . O_i (the softmax-backward row term).
struct delta_kernel {
  detail::geometry g;
  const float *o, *dout;
  float* delta;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    delta[i] = detail::dot(o + i * g.ld_o, dout + i * g.ld_o, g.d);
  }
};

// dQ_i = scale * sum_j P_ij (dO_i . v_j - delta_i) k_j, per query block.
struct backward_dq_kernel {
  detail::geometry g;
  const float *q, *k, *v, *dout, *lse, *delta;
  float* dq;
  const std::uint32_t *row_ptr, *row_idx;

  HCOMM_HOST_DEVICE void operator()(std::size_t qb) const {
    const std::size_t i_end = (qb + 1) * g.B < g.T ? (qb + 1) * g.B : g.T;
    for (std::size_t i = qb * g.B; i < i_end; ++i) {
      float acc[max_head_dim];
      for (std::size_t c = 0; c < g.d; ++c) acc[c] = 0.f;
      const float* qi = q + i * g.ld_qkv;
      const float* doi = dout + i * g.ld_o;
      for (std::uint32_t r = row_ptr[qb]; r < row_ptr[qb + 1]; ++r) {
        const std::size_t j0 = std::size_t(row_idx[r]) * g.B;
        std::size_t j1 = j0 + g.B < g.T ? j0 + g.B : g.T;
        if (j1 > i + 1) j1 = i + 1;
        for (std::size_t j = j0; j < j1; ++j) {
          if (!g.keep(i, j)) continue;
          const float* kj = k + j * g.ld_qkv;
          const float p = std::exp(detail::dot(qi, kj, g.d) * g.scale - lse[i]);
          const float ds = p * (detail::dot(doi, v + j * g.ld_qkv, g.d) - delta[i]) * g.scale;
          for (std::size_t c = 0; c < g.d; ++c) acc[c] += ds * kj[c];
        }
      }
      float* dqi = dq + i * g.ld_qkv;
      for (std::size_t c = 0; c < g.d; ++c) dqi[c] = acc[c];
    }
  }
};

// dV_j = sum_i P_ij dO_i and dK_j = scale * sum_i P_ij (dO_i . v_j - delta_i) q_i, per key
// block over the query blocks that keep it (column lists).
struct backward_dkdv_kernel {
  detail::geometry g;
  const float *q, *k, *v, *dout, *lse, *delta;
  float *dk, *dv;
  const std::uint32_t *col_ptr, *col_idx;

  HCOMM_HOST_DEVICE void operator()(std::size_t kb) const {
    const std::size_t j_end = (kb + 1) * g.B < g.T ? (kb + 1) * g.B : g.T;
    for (std::size_t j = kb * g.B; j < j_end; ++j) {
      float ak[max_head_dim], av[max_head_dim];
      for (std::size_t c = 0; c < g.d; ++c) ak[c] = av[c] = 0.f;
      const float* kj = k + j * g.ld_qkv;
      const float* vj = v + j * g.ld_qkv;
      for (std::uint32_t r = col_ptr[kb]; r < col_ptr[kb + 1]; ++r) {
        const std::size_t qb = col_idx[r];
        std::size_t i0 = qb * g.B;
        if (i0 < j) i0 = j;
        const std::size_t i1 = (qb + 1) * g.B < g.T ? (qb + 1) * g.B : g.T;
        for (std::size_t i = i0; i < i1; ++i) {
          if (!g.keep(i, j)) continue;
          const float* qi = q + i * g.ld_qkv;
          const float* doi = dout + i * g.ld_o;
          const float p = std::exp(detail::dot(qi, kj, g.d) * g.scale - lse[i]);
          const float ds = p * (detail::dot(doi, vj, g.d) - delta[i]) * g.scale;
          for (std::size_t c = 0; c < g.d; ++c) {
            av[c] += p * doi[c];
            ak[c] += ds * qi[c];
          }
        }
      }
      float* dkj = dk + j * g.ld_qkv;
      float* dvj = dv + j * g.ld_qkv;
      for (std::size_t c = 0; c < g.d; ++c) {
        dkj[c] = ak[c];
        dvj[c] = av[c];
      }
    }
  }
};

namespace detail {
inline geometry make_geometry(const layout& lay, std::size_t d, std::size_t ld_qkv, std::size_t ld_o) {
  HCOMM_EXPECTS(d > 0 && d <= max_head_dim, "msparse: attention head dimension must be in [1, 256]");
  HCOMM_EXPECTS(lay.block() <= max_block, "msparse: attention block size must be <= 256");
  if (ld_qkv == 0) ld_qkv = d;
  if (ld_o == 0) ld_o = d;
  HCOMM_EXPECTS(ld_qkv >= d && ld_o >= d, "msparse: attention leading dimensions must be >= d");
  return geometry{lay.T(), d, lay.block(), ld_qkv, ld_o, 1.0f / std::sqrt(float(d)), lay.spec(), lay.exact()};
}
}  // namespace detail

// o: (T, d) rows at ld_o; lse: T floats (kept for backward). ld 0 means d.
template <class Exec = hcomm::exec::host>
void forward(const layout& lay, const float* q, const float* k, const float* v, std::size_t d, float* o, float* lse,
             std::size_t ld_qkv = 0, std::size_t ld_o = 0, const Exec& ex = {}) {
  const auto g = detail::make_geometry(lay, d, ld_qkv, ld_o);
  ex.for_each(lay.blocks_per_side(), forward_kernel{g, q, k, v, o, lse, lay.row_ptr().data(), lay.row_idx().data()});
}

// dq, dk, dv are overwritten (rows at ld_qkv; they may be a packed (T, 3C) dqkv head).
// delta_ws: T floats of workspace (allocated here when null).
template <class Exec = hcomm::exec::host>
void backward(const layout& lay, const float* q, const float* k, const float* v, const float* o, const float* lse,
              const float* dout, std::size_t d, float* dq, float* dk, float* dv, std::size_t ld_qkv = 0,
              std::size_t ld_o = 0, float* delta_ws = nullptr, const Exec& ex = {}) {
  const auto g = detail::make_geometry(lay, d, ld_qkv, ld_o);
  std::vector<float> own;
  if (!delta_ws) {
    own.resize(lay.T());
    delta_ws = own.data();
  }
  ex.for_each(lay.T(), delta_kernel{g, o, dout, delta_ws});
  ex.for_each(lay.blocks_per_side(),
              backward_dq_kernel{g, q, k, v, dout, lse, delta_ws, dq, lay.row_ptr().data(), lay.row_idx().data()});
  ex.for_each(lay.blocks_per_side(),
              backward_dkdv_kernel{g, q, k, v, dout, lse, delta_ws, dk, dv, lay.col_ptr().data(), lay.col_idx().data()});
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
// entries (masked entries inside a kept block are skipped before the dot product), so
// the count is per kept entry: forward QK^T and PV = 4 d; backward dQ, dK, dV, dP = 8 d
// (the recomputation of P in backward is not counted, as in the usual 3x convention).
// A dense-tile kernel (tensor cores) would do layout::computed_entries() instead.
inline double forward_flops(const layout& lay, std::size_t d) { return 4.0 * double(d) * double(lay.kept_entries()); }
inline double backward_flops(const layout& lay, std::size_t d) { return 8.0 * double(d) * double(lay.kept_entries()); }

}  // namespace msparse::attention
