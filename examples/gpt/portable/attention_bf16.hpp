// examples/gpt/portable/attention_bf16.hpp: flash attention with bfloat16 operands on tensor
// cores (--precision bf16), as team kernels written once for every executor. The same
// algorithm as attention.hpp (online softmax over key tiles, the log-sum-exp kept, a backward
// without atomics that recomputes the probabilities), with its six matrix products done by
// the team's tensor-core product (team.mma: bfloat16 operands, float sums):
//
//   forward   S = Q K^T, O += P V
//   backward  S = Q K^T, dP = dO V^T, dV += P^T dO, dK += dS^T Q, dQ += dS K
//
// Q, K, V and dO are rounded to bfloat16 as their tiles load (the model hands them over
// unrounded: no pass of its own over them; attention_backward_rowdot's round_dout reads dO
// the same way for D), and so are P and dS before their products (as
// FlashAttention does: the rows' maximum, sum and log-sum-exp, and dS = P (dP - D), stay in
// float). The head size is padded with zeros to a multiple of 16 inside the tiles.
//
//   gpt::portable::attention_bf16_forward k{out, lse, qkv, B, T, nh, hd, causal};
//   ex.launch(k.league(), 128, k);
//   // backward: attention.hpp's attention_backward_rowdot (D; round_dout = true), then
//   gpt::portable::attention_bf16_backward_dkdv kv{problem};  ex.launch(kv.league(), 128, kv);
//   gpt::portable::attention_bf16_backward_dq q{problem};      ex.launch(q.league(), 128, q);
//
// Layout and arguments as attention.hpp's. Tiles: 64 queries x 64 keys forward; backward a
// team owns 64 keys (dK, dV) or 64 queries (dQ) and walks the other side 32 at a time, so
// that a head size of 128 fits in the execution model's scratch (the backward's kernels need
// 136.25 KiB of it there, the forward 109.75 KiB). Any team size works; 128 threads is what the
// trainer launches.
#pragma once
#include <cmath>
#include <cstddef>

#include "attention.hpp"
#include "hcomm/core/half.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/team.hpp"

namespace gpt::portable {

namespace attention_bf16_detail {
using hcomm::exec::mma_shape;
using hcomm::exec::scratch_for;

HCOMM_HOST_DEVICE constexpr int padded(int hd) { return (hd + 15) / 16 * 16; }

// Rows [r0, r0 + n) of column block `col` (0 q, 1 k, 2 v) of head h, as bfloat16, into
// tile[n * hp]: zeros past T and in the head's padding (inside a phase).
template <class View>
HCOMM_HOST_DEVICE void load_rows(const float* base, int ld, int col_offset, int T, int hd, int hp, int b, int h,
                                 int r0, int n, int t, int nthreads, const View& tile) {
  for (int e = t; e < n * hp; e += nthreads) {
    const int i = e / hp, d = e % hp, row = r0 + i;
    const float x = row < T && d < hd
                        ? base[(static_cast<std::size_t>(b) * T + row) * ld + static_cast<std::size_t>(col_offset) + h * hd + d]
                        : 0.f;
    tile[e] = hcomm::bf16(x);
  }
}

// C = A B^T for row-major A [m x k] and B [n x k] tiles (S = Q K^T, dP = dO V^T).
HCOMM_HOST_DEVICE constexpr mma_shape times_transposed(int m, int n, int k) {
  mma_shape s;
  s.m = m, s.n = n, s.k = k, s.lda = k, s.ldb = k, s.ldc = n, s.b_trans = true;
  return s;
}
// C += A B for row-major A [m x k] and B [k x n] (O += P V, dQ += dS K).
HCOMM_HOST_DEVICE constexpr mma_shape times_add(int m, int n, int k) {
  mma_shape s;
  s.m = m, s.n = n, s.k = k, s.lda = k, s.ldb = n, s.ldc = n, s.accumulate = true;
  return s;
}
// C += A^T B for row-major A [k x m] and B [k x n] (dV += P^T dO, dK += dS^T Q).
HCOMM_HOST_DEVICE constexpr mma_shape transposed_times_add(int m, int n, int k) {
  mma_shape s;
  s.m = m, s.n = n, s.k = k, s.lda = m, s.ldb = n, s.ldc = n, s.a_trans = true, s.accumulate = true;
  return s;
}

// P and dS of a query tile (rows q0..) and key tile (columns k0..) of bq x bk, from the tiles
// Q, dO [bq x hp] and K, V [bk x hp] in scratch: S = Q K^T and dP = dO V^T on tensor cores,
// then P = exp(scale S - lse), dS = P (dP - D), zero outside the valid (query, key) pairs,
// both rounded to bfloat16 (one phase).
template <class Team, class FView, class BView>
HCOMM_HOST_DEVICE void probabilities(Team& team, const attention_detail::problem& p, int q0, int k0, int bq, int bk,
                                     const BView& Q, const BView& dO, const BView& K, const BView& V, const FView& S,
                                     const FView& dP, const FView& LSE, const FView& DD, const BView& P,
                                     const BView& dS) {
  const float scale = 1.f / std::sqrt(static_cast<float>(p.hd));
  const int nthreads = team.size(), hp = padded(p.hd);
  team.mma(S, Q, K, times_transposed(bq, bk, hp));
  team.mma(dP, dO, V, times_transposed(bq, bk, hp));
  team.for_threads([&](int t) {
    for (int e = t; e < bq * bk; e += nthreads) {
      const int i = e / bk, j = e % bk, query = q0 + i, key = k0 + j;
      float pr = 0.f, ds = 0.f;
      if (query < p.T && key < p.T && (!p.causal || key <= query)) {
        pr = std::exp(S[e] * scale - LSE[i]);
        ds = pr * (dP[e] - DD[i]);
      }
      P[e] = hcomm::bf16(pr);
      dS[e] = hcomm::bf16(ds);
    }
  });
}
}  // namespace attention_bf16_detail

// A team per (sequence, head, 64 queries): out and lse of its queries. The online softmax
// shares each query row out as `parts` items of interleaved columns (key j, and O's element e,
// belong to item j % parts, e % parts), so that 128 or 256 threads all work on it: one phase
// takes each item's maximum, the next the row's (the old one and the items', in order), the
// item's exponentials, its running sum (Lp, one per item, added up in item order at the end)
// and its share of O's rescaling. The number of items is fixed, so the bits do not depend on
// the team size. S, P and O have rows padded by 16 bytes (ls, lp, lo): the 32 lanes of a warp
// (8 rows x 4 items) then read S and rescale O on 32 different shared-memory banks (and write
// P as 16 words, two bfloat16 halves each).
struct attention_bf16_forward {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::attention_bf16_forward";
  static constexpr int bq = 64, bk = 64, max_hd = 128, parts = 4;
  static constexpr int ls = bk + 4, lp = bk + 8;  // row strides of S (float) and P (bf16)
  float* out;
  float* lse;
  const float* qkv;
  int B, T, nh, hd;
  bool causal;

  HCOMM_HOST_DEVICE std::size_t blocks() const { return static_cast<std::size_t>((T + bq - 1) / bq); }
  std::size_t league() const { return static_cast<std::size_t>(B) * static_cast<std::size_t>(nh) * blocks(); }
  HCOMM_HOST_DEVICE int lo() const { return attention_bf16_detail::padded(hd) + 4; }  // O's row stride
  std::size_t scratch_bytes(int) const {
    using hcomm::exec::scratch_for;
    const std::size_t hp = static_cast<std::size_t>(attention_bf16_detail::padded(hd));
    return scratch_for<hcomm::bf16>(bq * hp) + scratch_for<hcomm::bf16>(bk * hp) * 2 +
           scratch_for<hcomm::bf16>(bq * lp) + scratch_for<float>(bq * ls) +
           scratch_for<float>(bq * static_cast<std::size_t>(lo())) + scratch_for<float>(bq) * 3 +
           scratch_for<float>(bq * parts) * 2;
  }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    namespace d = attention_bf16_detail;
    using hcomm::exec::mma_shape;
    const std::size_t r = team.league_rank();
    const int qb = static_cast<int>(r % blocks());
    const int h = static_cast<int>((r / blocks()) % static_cast<std::size_t>(nh));
    const int b = static_cast<int>(r / blocks() / static_cast<std::size_t>(nh));
    const int Cl = nh * hd, ld = 3 * Cl, q0 = qb * bq, hp = d::padded(hd), Lo = lo(), nthreads = team.size();
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    const std::size_t seq = static_cast<std::size_t>(b) * static_cast<std::size_t>(T);
    // every array a multiple of 32 bytes long, so that each starts 32-byte aligned (mma)
    auto Q = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bq * hp), "Q");
    auto K = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bk * hp), "K");
    auto V = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bk * hp), "V");
    auto P = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bq * lp), "P");
    auto S = team.template shared<float>(static_cast<std::size_t>(bq * ls), "S");
    auto O = team.template shared<float>(static_cast<std::size_t>(bq * Lo), "O");
    // the rows' maxima before and after a key tile (read in one phase, written in the same
    // phase for the next), their sums, and the items' maxima and running sums
    auto M0 = team.template shared<float>(bq, "row max (even tiles)");
    auto M1 = team.template shared<float>(bq, "row max (odd tiles)");
    auto L = team.template shared<float>(bq, "row sum");
    auto Mp = team.template shared<float>(static_cast<std::size_t>(bq * parts), "item max");
    auto Lp = team.template shared<float>(static_cast<std::size_t>(bq * parts), "item sum");
    mma_shape qk = d::times_transposed(bq, bk, hp), pv = d::times_add(bq, hp, bk);
    qk.ldc = ls;
    pv.lda = lp, pv.ldc = Lo;
    team.for_threads([&](int t) {
      d::load_rows(qkv, ld, 0, T, hd, hp, b, h, q0, bq, t, nthreads, Q);
      for (int e = t; e < bq * Lo; e += nthreads) O[e] = 0.f;
      for (int i = t; i < bq; i += nthreads) M0[i] = -INFINITY;
      for (int e = t; e < bq * parts; e += nthreads) Lp[e] = 0.f;
    });
    const int last_query = q0 + bq - 1 < T - 1 ? q0 + bq - 1 : T - 1;
    const int key_end = causal ? last_query + 1 : T;
    bool odd = false;  // the maxima so far are in M1 (else M0)
    for (int k0 = 0; k0 < key_end; k0 += bk, odd = !odd) {
      const auto& Mold = odd ? M1 : M0;
      const auto& Mnew = odd ? M0 : M1;
      team.for_threads([&](int t) {
        d::load_rows(qkv, ld, Cl, T, hd, hp, b, h, k0, bk, t, nthreads, K);
        d::load_rows(qkv, ld, 2 * Cl, T, hd, hp, b, h, k0, bk, t, nthreads, V);
      });
      team.mma(S, Q, K, qk);
      const int keys = key_end - k0 < bk ? key_end - k0 : bk;  // the tile's columns inside the sequence
      team.for_threads([&](int t) {  // each item's maximum over its visible keys
        for (int e = t; e < bq * parts; e += nthreads) {
          const int i = e / parts, query = q0 + i;
          float m = -INFINITY;
          for (int j = e % parts; j < keys; j += parts) {
            const float x = S[i * ls + j] * scale;
            if ((!causal || k0 + j <= query) && x > m) m = x;
          }
          Mp[e] = m;
        }
      });
      team.for_threads([&](int t) {  // the row's maximum, the item's exponentials, O's rescaling
        for (int e = t; e < bq * parts; e += nthreads) {
          const int i = e / parts, part = e % parts, query = q0 + i;
          float m = Mold[i];
          for (int s = 0; s < parts; ++s) {
            const float ms = Mp[i * parts + s];
            m = ms > m ? ms : m;
          }
          // a row that saw no key yet (padding past T, or none visible): keep zeros
          const float f = m == -INFINITY ? 1.f : std::exp(Mold[i] - m);
          float l = Lp[e] * f;
          for (int j = part; j < bk; j += parts) {
            const bool seen = m != -INFINITY && j < keys && (!causal || k0 + j <= query);
            const float p = seen ? std::exp(S[i * ls + j] * scale - m) : 0.f;
            P[i * lp + j] = hcomm::bf16(p);
            l += p;
          }
          for (int c = part; c < hp; c += parts) O[i * Lo + c] = O[i * Lo + c] * f;
          Lp[e] = l;
          if (part == 0) Mnew[i] = m;
        }
      });
      team.mma(O, P, V, pv);
    }
    const auto& M = odd ? M1 : M0;
    team.for_threads([&](int t) {  // the rows' sums, in item order, and their log-sum-exp
      for (int i = t; i < bq; i += nthreads) {
        float l = 0.f;
        for (int s = 0; s < parts; ++s) l += Lp[i * parts + s];
        L[i] = l;
        if (q0 + i < T) lse[(static_cast<std::size_t>(b) * nh + h) * T + q0 + i] = M[i] + std::log(l);
      }
    });
    team.for_threads([&](int t) {  // normalise and write the rows inside the sequence
      for (int e = t; e < bq * hd; e += nthreads) {
        const int i = e / hd, dd = e % hd, row = q0 + i;
        if (row < T) out[(seq + row) * Cl + h * hd + dd] = O[i * Lo + dd] / L[i];
      }
    });
  }
};

// A team per (sequence, head, 64 keys): dK and dV of its keys, over the query tiles that see
// them, 32 queries at a time.
struct attention_bf16_backward_dkdv : attention_detail::problem {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::attention_bf16_backward_dkdv";
  static constexpr int bq = 32, bk = 64;
  std::size_t league() const { return static_cast<std::size_t>(B) * nh * tiles(bk); }
  std::size_t scratch_bytes(int) const {
    using hcomm::exec::scratch_for;
    const std::size_t hp = static_cast<std::size_t>(attention_bf16_detail::padded(hd));
    return scratch_for<hcomm::bf16>(bk * hp) * 2 + scratch_for<hcomm::bf16>(bq * hp) * 2 +
           scratch_for<hcomm::bf16>(bq * bk) * 2 + scratch_for<float>(bk * hp) * 2 + scratch_for<float>(bq * bk) * 2 +
           scratch_for<float>(bq) * 2;
  }
  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    namespace d = attention_bf16_detail;
    const std::size_t r = team.league_rank();
    const int kb = static_cast<int>(r % tiles(bk)), h = static_cast<int>((r / tiles(bk)) % static_cast<std::size_t>(nh));
    const int b = static_cast<int>(r / tiles(bk) / static_cast<std::size_t>(nh));
    const int k0 = kb * bk, hp = d::padded(hd), nthreads = team.size();
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    auto K = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bk * hp), "K");
    auto V = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bk * hp), "V");
    auto Q = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bq * hp), "Q");
    auto dO = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bq * hp), "dO");
    auto P = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bq * bk), "P");
    auto dS = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bq * bk), "dS");
    auto dK = team.template shared<float>(static_cast<std::size_t>(bk * hp), "dK");
    auto dV = team.template shared<float>(static_cast<std::size_t>(bk * hp), "dV");
    auto S = team.template shared<float>(static_cast<std::size_t>(bq * bk), "S");
    auto dP = team.template shared<float>(static_cast<std::size_t>(bq * bk), "dP");
    auto LSE = team.template shared<float>(bq, "lse");
    auto DD = team.template shared<float>(bq, "D");
    const int Cl = cl();
    team.for_threads([&](int t) {
      d::load_rows(qkv, ld(), Cl, T, hd, hp, b, h, k0, bk, t, nthreads, K);
      d::load_rows(qkv, ld(), 2 * Cl, T, hd, hp, b, h, k0, bk, t, nthreads, V);
      for (int e = t; e < bk * hp; e += nthreads) {
        dK[e] = 0.f;
        dV[e] = 0.f;
      }
    });
    const std::size_t rows = (static_cast<std::size_t>(b) * nh + h) * T;
    for (int q0 = causal ? k0 / bq * bq : 0; q0 < T; q0 += bq) {
      team.for_threads([&](int t) {
        d::load_rows(qkv, ld(), 0, T, hd, hp, b, h, q0, bq, t, nthreads, Q);
        d::load_rows(dout, Cl, 0, T, hd, hp, b, h, q0, bq, t, nthreads, dO);
        for (int i = t; i < bq; i += nthreads) {
          LSE[i] = q0 + i < T ? lse[rows + q0 + i] : 0.f;
          DD[i] = q0 + i < T ? D[rows + q0 + i] : 0.f;
        }
      });
      d::probabilities(team, *this, q0, k0, bq, bk, Q, dO, K, V, S, dP, LSE, DD, P, dS);
      team.mma(dV, P, dO, d::transposed_times_add(bk, hp, bq));
      team.mma(dK, dS, Q, d::transposed_times_add(bk, hp, bq));
    }
    team.for_threads([&](int t) {
      for (int e = t; e < bk * hd; e += nthreads) {
        const int j = e / hd, dd = e % hd, key = k0 + j;
        if (key >= T) continue;
        const std::size_t at = (static_cast<std::size_t>(b) * T + key) * ld() + h * hd + dd;
        dqkv[at + Cl] = scale * dK[j * hp + dd];
        dqkv[at + 2 * static_cast<std::size_t>(Cl)] = dV[j * hp + dd];
      }
    });
  }
};

// A team per (sequence, head, 64 queries): dQ of its queries, over the keys they see, 32 at a
// time.
struct attention_bf16_backward_dq : attention_detail::problem {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::attention_bf16_backward_dq";
  static constexpr int bq = 64, bk = 32;
  std::size_t league() const { return static_cast<std::size_t>(B) * nh * tiles(bq); }
  std::size_t scratch_bytes(int) const {
    using hcomm::exec::scratch_for;
    const std::size_t hp = static_cast<std::size_t>(attention_bf16_detail::padded(hd));
    return scratch_for<hcomm::bf16>(bq * hp) * 2 + scratch_for<hcomm::bf16>(bk * hp) * 2 +
           scratch_for<hcomm::bf16>(bq * bk) * 2 + scratch_for<float>(bq * hp) + scratch_for<float>(bq * bk) * 2 +
           scratch_for<float>(bq) * 2;
  }
  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    namespace d = attention_bf16_detail;
    const std::size_t r = team.league_rank();
    const int qb = static_cast<int>(r % tiles(bq)), h = static_cast<int>((r / tiles(bq)) % static_cast<std::size_t>(nh));
    const int b = static_cast<int>(r / tiles(bq) / static_cast<std::size_t>(nh));
    const int q0 = qb * bq, hp = d::padded(hd), nthreads = team.size();
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    auto Q = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bq * hp), "Q");
    auto dO = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bq * hp), "dO");
    auto K = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bk * hp), "K");
    auto V = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bk * hp), "V");
    auto P = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bq * bk), "P");
    auto dS = team.template shared<hcomm::bf16>(static_cast<std::size_t>(bq * bk), "dS");
    auto dQ = team.template shared<float>(static_cast<std::size_t>(bq * hp), "dQ");
    auto S = team.template shared<float>(static_cast<std::size_t>(bq * bk), "S");
    auto dP = team.template shared<float>(static_cast<std::size_t>(bq * bk), "dP");
    auto LSE = team.template shared<float>(bq, "lse");
    auto DD = team.template shared<float>(bq, "D");
    const int Cl = cl();
    const std::size_t rows = (static_cast<std::size_t>(b) * nh + h) * T;
    team.for_threads([&](int t) {
      d::load_rows(qkv, ld(), 0, T, hd, hp, b, h, q0, bq, t, nthreads, Q);
      d::load_rows(dout, Cl, 0, T, hd, hp, b, h, q0, bq, t, nthreads, dO);
      for (int e = t; e < bq * hp; e += nthreads) dQ[e] = 0.f;
      for (int i = t; i < bq; i += nthreads) {
        LSE[i] = q0 + i < T ? lse[rows + q0 + i] : 0.f;
        DD[i] = q0 + i < T ? D[rows + q0 + i] : 0.f;
      }
    });
    const int last_query = q0 + bq - 1 < T - 1 ? q0 + bq - 1 : T - 1;
    const int key_end = causal ? last_query + 1 : T;
    for (int k0 = 0; k0 < key_end; k0 += bk) {
      team.for_threads([&](int t) {
        d::load_rows(qkv, ld(), Cl, T, hd, hp, b, h, k0, bk, t, nthreads, K);
        d::load_rows(qkv, ld(), 2 * Cl, T, hd, hp, b, h, k0, bk, t, nthreads, V);
      });
      d::probabilities(team, *this, q0, k0, bq, bk, Q, dO, K, V, S, dP, LSE, DD, P, dS);
      team.mma(dQ, dS, K, d::times_add(bq, hp, bk));
    }
    team.for_threads([&](int t) {
      for (int e = t; e < bq * hd; e += nthreads) {
        const int i = e / hd, dd = e % hd, query = q0 + i;
        if (query < T) dqkv[(static_cast<std::size_t>(b) * T + query) * ld() + h * hd + dd] = scale * dQ[i * hp + dd];
      }
    });
  }
};

}  // namespace gpt::portable
