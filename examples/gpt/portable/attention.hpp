// examples/gpt/portable/attention.hpp: scaled dot-product attention forward, flash-style, as a
// team kernel of the execution model, written once for every executor. One team per (sequence,
// head, block of 32 queries) walks the keys in blocks of 32 with an online softmax (running
// row maximum and sum), so the T x T probabilities are never stored; causal teams skip the key
// blocks after their last query. Writes the output and each row's log-sum-exp (what a flash
// backward recomputes the probabilities from).
//
//   gpt::portable::attention_forward k{out, lse, qkv, B, T, nh, hd, causal};
//   ex.launch(k.league(), 64, k);
//
// Layout as kernels.hpp's attention_forward: qkv[B*T, 3*nh*hd] (q | k | v, heads of hd
// inside each), out[B*T, nh*hd], lse[B*nh*T]. hd at most 128.
#pragma once
#include <cmath>
#include <cstddef>

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
    return scratch_for<float>(bq * h) * 2 + scratch_for<float>(bk * h) * 2 + scratch_for<float>(bq * bk) +
           scratch_for<float>(bq) * 3;
  }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const std::size_t r = team.league_rank();
    const int qb = static_cast<int>(r % blocks());
    const int h = static_cast<int>((r / blocks()) % static_cast<std::size_t>(nh));
    const int b = static_cast<int>(r / blocks() / static_cast<std::size_t>(nh));
    const int Cl = nh * hd, ld = 3 * Cl, q0 = qb * bq, nthreads = team.size();
    const float scale = 1.f / std::sqrt(static_cast<float>(hd));
    const std::size_t seq = static_cast<std::size_t>(b) * static_cast<std::size_t>(T);
    auto Q = team.template shared<float>(static_cast<std::size_t>(bq * hd), "Q");
    auto O = team.template shared<float>(static_cast<std::size_t>(bq * hd), "O");
    auto K = team.template shared<float>(static_cast<std::size_t>(bk * hd), "K");
    auto V = team.template shared<float>(static_cast<std::size_t>(bk * hd), "V");
    auto S = team.template shared<float>(static_cast<std::size_t>(bq * bk), "S");
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
          K[e] = in ? qkv[(seq + key) * ld + Cl + h * hd + d] : 0.f;
          V[e] = in ? qkv[(seq + key) * ld + 2 * Cl + h * hd + d] : 0.f;
        }
      });
      team.for_threads([&](int t) {  // scores, -inf where a query may not see a key
        for (int e = t; e < bq * bk; e += nthreads) {
          const int i = e / bk, j = e % bk, key = k0 + j;
          float s = -INFINITY;
          if (key < T && (!causal || key <= q0 + i)) {
            s = 0.f;
            for (int d = 0; d < hd; ++d) s += Q[i * hd + d] * K[j * hd + d];
            s *= scale;
          }
          S[e] = s;
        }
      });
      team.for_threads([&](int t) {  // online softmax, a thread per query row
        if (t >= bq) return;
        float m = M[t];
        for (int j = 0; j < bk; ++j) m = S[t * bk + j] > m ? S[t * bk + j] : m;
        // a row that saw no key yet (padding past T, or none visible): keep zeros
        const float f = m == -INFINITY ? 1.f : std::exp(M[t] - m);
        float l = L[t] * f;
        for (int j = 0; j < bk; ++j) {
          const float p = m == -INFINITY ? 0.f : std::exp(S[t * bk + j] - m);
          S[t * bk + j] = p;
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
          for (int j = 0; j < bk; ++j) acc += S[i * bk + j] * V[j * hd + d];
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

}  // namespace gpt::portable
