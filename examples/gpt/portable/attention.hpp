// examples/gpt/portable/attention.hpp: scaled dot-product attention, flash-style, as kernels of
// the execution model, written once for every executor. One team per (sequence,
// head, block of 32 queries) walks the keys in blocks of 32 with an online softmax (running
// row maximum and sum), so the T x T probabilities are never stored; causal teams skip the key
// blocks after their last query. Writes the output and each row's log-sum-exp (what a flash
// backward recomputes the probabilities from).
//
//   gpt::portable::attention_forward k{out, lse, qkv, B, T, nh, hd, causal};
//   ex.launch(k.league(), 64, k);
//
// The backward recomputes the probabilities from the log-sum-exp, tile by tile, without atomics:
// a flat kernel for D = rowsum(dO * O), a team per key tile for dK and dV (over the query
// tiles that see it), a team per query tile for dQ (over its key tiles). Every sum has a fixed
// order, so the gradients are the same bits on every run and every backend's reduction order
// is its own only in the float rounding of exp.
//
//   gpt::portable::attention_backward_rowdot{D, dout, out, B, T, nh, hd}   // flat, B*nh*T
//   gpt::portable::attention_backward_dkdv{dqkv, dout, qkv, lse, D, ...}   // launch(k.league(), 64, k)
//   gpt::portable::attention_backward_dq{dqkv, dout, qkv, lse, D, ...}
//
// Layout as kernels.hpp's attention: qkv[B*T, 3*nh*hd] (q | k | v, heads of hd inside each),
// out and dout [B*T, nh*hd], dqkv [B*T, 3*nh*hd] (overwritten), lse and D [B*nh*T]. hd at
// most 128.
// Scratch: the tiles that a warp reads down a column have rows one float longer than their
// data, so that the 32 lanes fall in 32 different shared-memory banks instead of one: K
// (scores, by consecutive keys), the backward's V (dP, likewise) and the forward's score rows
// (the softmax, a thread per query). The forward's V is read along its rows and is not padded.
#pragma once
#include <cmath>
#include <cstddef>

#include "hcomm/core/bfloat16.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/team.hpp"

namespace gpt::portable {

struct attention_forward {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::attention_forward";
  static constexpr int bq = 32, bk = 32, max_hd = 128;
  float* out;
  float* lse;
  const float* qkv;
  int B, T, nh, hd;
  bool causal;

  HCOMM_HOST_DEVICE std::size_t blocks() const { return static_cast<std::size_t>((T + bq - 1) / bq); }
  std::size_t league() const { return static_cast<std::size_t>(B) * static_cast<std::size_t>(nh) * blocks(); }
  std::size_t scratch_bytes(int) const {
    using hcomm::exec::scratch_for;
    const std::size_t h = static_cast<std::size_t>(hd);
    return scratch_for<float>(bq * h) * 2 + scratch_for<float>(bk * (h + 1)) + scratch_for<float>(bk * h) +
           scratch_for<float>(bq * (bk + 1)) + scratch_for<float>(bq) * 3;
  }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t r = team.league_rank();
    const int qb = static_cast<int>(r % blocks());
    const int h = static_cast<int>((r / blocks()) % static_cast<std::size_t>(nh));
    const int b = static_cast<int>(r / blocks() / static_cast<std::size_t>(nh));
    const int Cl = nh * hd, ld = 3 * Cl, q0 = qb * bq, nthreads = team.size();
    const int lk = hd + 1, ls = bk + 1;  // K's and S's padded rows
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    const std::size_t seq = static_cast<std::size_t>(b) * static_cast<std::size_t>(T);
    auto Q = team.template shared<float>(static_cast<std::size_t>(bq * hd), "Q");
    auto O = team.template shared<float>(static_cast<std::size_t>(bq * hd), "O");
    auto K = team.template shared<float>(static_cast<std::size_t>(bk * lk), "K");
    auto V = team.template shared<float>(static_cast<std::size_t>(bk * hd), "V");
    auto S = team.template shared<float>(static_cast<std::size_t>(bq * ls), "S");
    auto M = team.template shared<float>(bq, "row max");
    auto L = team.template shared<float>(bq, "row sum");
    auto F = team.template shared<float>(bq, "rescale");
    // the query tile (zeros past the sequence), O = 0, running max -inf, sum 0
    team.for_threads([&](int t) {
      for (int e = t; e < bq * hd; e += nthreads) {
        const int i = e / hd, d = e % hd, row = q0 + i;
        Q[e] = row < T ? qkv[(seq + row) * ld + h * hd + d] : 0.f;
        O[e] = 0.f;
      }
      if (t < bq) {
        M[t] = -INFINITY;
        L[t] = 0.f;
      }
    });
    const int last_query = q0 + bq - 1 < T - 1 ? q0 + bq - 1 : T - 1;
    const int key_end = causal ? last_query + 1 : T;  // keys [0, key_end) can be seen by this block
    for (int k0 = 0; k0 < key_end; k0 += bk) {
      team.for_threads([&](int t) {  // the key and value tile
        for (int e = t; e < bk * hd; e += nthreads) {
          const int j = e / hd, d = e % hd, key = k0 + j;
          const bool in = key < T;
          K[j * lk + d] = in ? qkv[(seq + key) * ld + Cl + h * hd + d] : 0.f;
          V[e] = in ? qkv[(seq + key) * ld + 2 * Cl + h * hd + d] : 0.f;
        }
      });
      team.for_threads([&](int t) {  // scores, -inf where a query may not see a key
        for (int e = t; e < bq * bk; e += nthreads) {
          const int i = e / bk, j = e % bk, key = k0 + j;
          float s = -INFINITY;
          if (key < T && (!causal || key <= q0 + i)) {
            s = 0.f;
            for (int d = 0; d < hd; ++d) s += Q[i * hd + d] * K[j * lk + d];
            s *= scale;
          }
          S[i * ls + j] = s;
        }
      });
      team.for_threads([&](int t) {  // online softmax, a thread per query row
        if (t >= bq) return;
        float m = M[t];
        for (int j = 0; j < bk; ++j) m = S[t * ls + j] > m ? S[t * ls + j] : m;
        // a row that saw no key yet (padding past T, or none visible): keep zeros
        const float f = m == -INFINITY ? 1.f : std::exp(M[t] - m);
        float l = L[t] * f;
        for (int j = 0; j < bk; ++j) {
          const float p = m == -INFINITY ? 0.f : std::exp(S[t * ls + j] - m);
          S[t * ls + j] = p;
          l += p;
        }
        M[t] = m;
        L[t] = l;
        F[t] = f;
      });
      team.for_threads([&](int t) {  // O = O * rescale + P V
        for (int e = t; e < bq * hd; e += nthreads) {
          const int i = e / hd, d = e % hd;
          float acc = O[e] * F[i];
          for (int j = 0; j < bk; ++j) acc += S[i * ls + j] * V[j * hd + d];
          O[e] = acc;
        }
      });
    }
    team.for_threads([&](int t) {  // normalise and write the rows inside the sequence
      for (int e = t; e < bq * hd; e += nthreads) {
        const int i = e / hd, d = e % hd, row = q0 + i;
        if (row < T) out[(seq + row) * Cl + h * hd + d] = O[e] / L[i];
      }
      if (t < bq && q0 + t < T)
        lse[(static_cast<std::size_t>(b) * nh + h) * T + q0 + t] = M[t] + std::log(L[t]);
    });
  }
};

// D[(b*nh + h)*T + t] = sum over d of dout * out at that row and head (flat, one index per row).
// round_dout (bf16 runs): dout rounded to bfloat16 as it is read, as attention_bf16.hpp's
// kernels read it.
struct attention_backward_rowdot {
  float* D;
  const float* dout;
  const float* out;
  int B, T, nh, hd;
  bool round_dout = false;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t t = i % static_cast<std::size_t>(T), bh = i / static_cast<std::size_t>(T);
    const std::size_t h = bh % static_cast<std::size_t>(nh), b = bh / static_cast<std::size_t>(nh);
    const std::size_t Cl = static_cast<std::size_t>(nh) * hd, at = (b * T + t) * Cl + h * hd;
    float s = 0.f;
    for (int d = 0; d < hd; ++d) s += (round_dout ? hcomm::round_to_bf16(dout[at + d]) : dout[at + d]) * out[at + d];
    D[i] = s;
  }
};

namespace attention_detail {
// What both backward kernels share: the problem and the tile of (query, key) probabilities
// and score gradients, recomputed from lse and D. Valid entries: key < T, query < T, and
// key <= query when causal; others are 0.
struct problem {
  float* dqkv;
  const float* dout;
  const float* qkv;
  const float* lse;
  const float* D;
  int B, T, nh, hd;
  bool causal;
  static constexpr int bq = attention_forward::bq, bk = attention_forward::bk;
  HCOMM_HOST_DEVICE std::size_t tiles(int n) const { return static_cast<std::size_t>((T + n - 1) / n); }
  HCOMM_HOST_DEVICE int ld() const { return 3 * nh * hd; }
  HCOMM_HOST_DEVICE int cl() const { return nh * hd; }
  HCOMM_HOST_DEVICE int lk() const { return hd + 1; }  // K's and V's padded rows in scratch
};

// P and dS of query tile q0 x key tile k0 into Ps, dSs [bq*bk], from the tiles in scratch:
// Q, dO [bq*hd], K, V [bk*lk], LSE, DD [bq] (one phase).
template <class Team, class View>
HCOMM_HOST_DEVICE void probabilities(Team& team, const problem& p, int q0, int k0, const View& Q, const View& dO,
                                     const View& K, const View& V, const View& LSE, const View& DD, const View& Ps,
                                     const View& dSs) {
  const int hd = p.hd, lk = p.lk(), nthreads = team.size();
  const float scale = 1.f / std::sqrt(static_cast<float>(hd));
  team.for_threads([&](int t) {
    for (int e = t; e < problem::bq * problem::bk; e += nthreads) {
      const int i = e / problem::bk, j = e % problem::bk, query = q0 + i, key = k0 + j;
      float pr = 0.f, ds = 0.f;
      if (query < p.T && key < p.T && (!p.causal || key <= query)) {
        float s = 0.f, dp = 0.f;
        for (int d = 0; d < hd; ++d) {
          s += Q[i * hd + d] * K[j * lk + d];
          dp += dO[i * hd + d] * V[j * lk + d];
        }
        pr = std::exp(s * scale - LSE[i]);
        ds = pr * (dp - DD[i]);
      }
      Ps[e] = pr;
      dSs[e] = ds;
    }
  });
}

// Loads rows [r0, r0 + n) of column block `col` (0 q, 1 k, 2 v) of head h into tile[n*lt]
// (rows of lt >= hd floats), zeros past T (inside a phase).
template <class View>
HCOMM_HOST_DEVICE void load_rows(const problem& p, const float* base, int ld, int col, int b, int h, int r0, int n,
                                 int t, int nthreads, const View& tile, int lt) {
  for (int e = t; e < n * p.hd; e += nthreads) {
    const int i = e / p.hd, d = e % p.hd, row = r0 + i;
    tile[i * lt + d] = row < p.T
                  ? base[(static_cast<std::size_t>(b) * p.T + row) * ld + static_cast<std::size_t>(col) * p.cl() + h * p.hd + d]
                  : 0.f;
  }
}
}  // namespace attention_detail

// A team per (sequence, head, key tile): dK and dV of its keys, over every query tile that
// sees them (causal: from the tile holding the first key on).
struct attention_backward_dkdv : attention_detail::problem {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::attention_backward_dkdv";
  std::size_t league() const { return static_cast<std::size_t>(B) * nh * tiles(bk); }
  std::size_t scratch_bytes(int) const {
    using hcomm::exec::scratch_for;
    const std::size_t h = static_cast<std::size_t>(hd);
    return scratch_for<float>(bk * (h + 1)) * 2 + scratch_for<float>(bk * h) * 2 + scratch_for<float>(bq * h) * 2 +
           scratch_for<float>(bq * bk) * 2 + scratch_for<float>(bq) * 2;
  }
  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t r = team.league_rank();
    const int kb = static_cast<int>(r % tiles(bk)), h = static_cast<int>((r / tiles(bk)) % static_cast<std::size_t>(nh));
    const int b = static_cast<int>(r / tiles(bk) / static_cast<std::size_t>(nh));
    const int k0 = kb * bk, nthreads = team.size();
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    auto K = team.template shared<float>(static_cast<std::size_t>(bk * lk()), "K");
    auto V = team.template shared<float>(static_cast<std::size_t>(bk * lk()), "V");
    auto dK = team.template shared<float>(static_cast<std::size_t>(bk * hd), "dK");
    auto dV = team.template shared<float>(static_cast<std::size_t>(bk * hd), "dV");
    auto Q = team.template shared<float>(static_cast<std::size_t>(bq * hd), "Q");
    auto dO = team.template shared<float>(static_cast<std::size_t>(bq * hd), "dO");
    auto Ps = team.template shared<float>(static_cast<std::size_t>(bq * bk), "P");
    auto dSs = team.template shared<float>(static_cast<std::size_t>(bq * bk), "dS");
    auto LSE = team.template shared<float>(bq, "lse");
    auto DD = team.template shared<float>(bq, "D");
    team.for_threads([&](int t) {
      attention_detail::load_rows(*this, qkv, ld(), 1, b, h, k0, bk, t, nthreads, K, lk());
      attention_detail::load_rows(*this, qkv, ld(), 2, b, h, k0, bk, t, nthreads, V, lk());
      for (int e = t; e < bk * hd; e += nthreads) {
        dK[e] = 0.f;
        dV[e] = 0.f;
      }
    });
    const std::size_t rows = (static_cast<std::size_t>(b) * nh + h) * T;
    for (int q0 = causal ? k0 / bq * bq : 0; q0 < T; q0 += bq) {
      team.for_threads([&](int t) {
        attention_detail::load_rows(*this, qkv, ld(), 0, b, h, q0, bq, t, nthreads, Q, hd);
        attention_detail::load_rows(*this, dout, cl(), 0, b, h, q0, bq, t, nthreads, dO, hd);
        if (t < bq) {
          LSE[t] = q0 + t < T ? lse[rows + q0 + t] : 0.f;
          DD[t] = q0 + t < T ? D[rows + q0 + t] : 0.f;
        }
      });
      attention_detail::probabilities(team, *this, q0, k0, Q, dO, K, V, LSE, DD, Ps, dSs);
      team.for_threads([&](int t) {  // dV += P^T dO, dK += scale dS^T Q
        for (int e = t; e < bk * hd; e += nthreads) {
          const int j = e / hd, d = e % hd;
          float av = dV[e], ak = 0.f;
          for (int i = 0; i < bq; ++i) {
            av += Ps[i * bk + j] * dO[i * hd + d];
            ak += dSs[i * bk + j] * Q[i * hd + d];
          }
          dV[e] = av;
          dK[e] = dK[e] + scale * ak;
        }
      });
    }
    team.for_threads([&](int t) {
      for (int e = t; e < bk * hd; e += nthreads) {
        const int j = e / hd, d = e % hd, key = k0 + j;
        if (key >= T) continue;
        const std::size_t at = (static_cast<std::size_t>(b) * T + key) * ld() + h * hd + d;
        dqkv[at + cl()] = dK[e];
        dqkv[at + 2 * static_cast<std::size_t>(cl())] = dV[e];
      }
    });
  }
};

// A team per (sequence, head, query tile): dQ of its queries, over the key tiles they see.
struct attention_backward_dq : attention_detail::problem {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "gpt::portable::attention_backward_dq";
  std::size_t league() const { return static_cast<std::size_t>(B) * nh * tiles(bq); }
  std::size_t scratch_bytes(int) const {
    using hcomm::exec::scratch_for;
    const std::size_t h = static_cast<std::size_t>(hd);
    return scratch_for<float>(bq * h) * 3 + scratch_for<float>(bk * (h + 1)) * 2 + scratch_for<float>(bq * bk) * 2 +
           scratch_for<float>(bq) * 2;
  }
  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t r = team.league_rank();
    const int qb = static_cast<int>(r % tiles(bq)), h = static_cast<int>((r / tiles(bq)) % static_cast<std::size_t>(nh));
    const int b = static_cast<int>(r / tiles(bq) / static_cast<std::size_t>(nh));
    const int q0 = qb * bq, nthreads = team.size();
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    auto Q = team.template shared<float>(static_cast<std::size_t>(bq * hd), "Q");
    auto dO = team.template shared<float>(static_cast<std::size_t>(bq * hd), "dO");
    auto dQ = team.template shared<float>(static_cast<std::size_t>(bq * hd), "dQ");
    auto K = team.template shared<float>(static_cast<std::size_t>(bk * lk()), "K");
    auto V = team.template shared<float>(static_cast<std::size_t>(bk * lk()), "V");
    auto Ps = team.template shared<float>(static_cast<std::size_t>(bq * bk), "P");
    auto dSs = team.template shared<float>(static_cast<std::size_t>(bq * bk), "dS");
    auto LSE = team.template shared<float>(bq, "lse");
    auto DD = team.template shared<float>(bq, "D");
    const std::size_t rows = (static_cast<std::size_t>(b) * nh + h) * T;
    team.for_threads([&](int t) {
      attention_detail::load_rows(*this, qkv, ld(), 0, b, h, q0, bq, t, nthreads, Q, hd);
      attention_detail::load_rows(*this, dout, cl(), 0, b, h, q0, bq, t, nthreads, dO, hd);
      for (int e = t; e < bq * hd; e += nthreads) dQ[e] = 0.f;
      if (t < bq) {
        LSE[t] = q0 + t < T ? lse[rows + q0 + t] : 0.f;
        DD[t] = q0 + t < T ? D[rows + q0 + t] : 0.f;
      }
    });
    const int last_query = q0 + bq - 1 < T - 1 ? q0 + bq - 1 : T - 1;
    const int key_end = causal ? last_query + 1 : T;
    for (int k0 = 0; k0 < key_end; k0 += bk) {
      team.for_threads([&](int t) {
        attention_detail::load_rows(*this, qkv, ld(), 1, b, h, k0, bk, t, nthreads, K, lk());
        attention_detail::load_rows(*this, qkv, ld(), 2, b, h, k0, bk, t, nthreads, V, lk());
      });
      attention_detail::probabilities(team, *this, q0, k0, Q, dO, K, V, LSE, DD, Ps, dSs);
      team.for_threads([&](int t) {  // dQ += scale dS K
        for (int e = t; e < bq * hd; e += nthreads) {
          const int i = e / hd, d = e % hd;
          float a = 0.f;
          for (int j = 0; j < bk; ++j) a += dSs[i * bk + j] * K[j * lk() + d];
          dQ[e] = dQ[e] + scale * a;
        }
      });
    }
    team.for_threads([&](int t) {
      for (int e = t; e < bq * hd; e += nthreads) {
        const int i = e / hd, d = e % hd, query = q0 + i;
        if (query < T) dqkv[(static_cast<std::size_t>(b) * T + query) * ld() + h * hd + d] = dQ[e];
      }
    });
  }
};

}  // namespace gpt::portable
