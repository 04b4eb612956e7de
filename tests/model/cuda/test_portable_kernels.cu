// The trainer's portable kernels (examples/gpt/portable/) on the CUDA executor against the
// same kernels on the host executor (portable_host.cpp; CI checks those against kernels.hpp
// and under host-check) or a plain loop: LayerNorm, cross-entropy, flash attention forward
// and backward (fp32, and bf16 on tensor cores), embedding, rotary, the sum of squares, GELU, AdamW. The GPU's exp,
// sqrt and fused multiply-adds round differently, so the comparison is to float rounding.
// Without a CUDA device it prints "SKIPPED: ..." and exits 77 (ctest: skipped).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cuda_probe.hpp"
#include "hcomm/core/bfloat16.hpp"
#include "hcomm/exec/cuda.hpp"
#include "portable/adamw.hpp"
#include "portable/attention.hpp"
#include "portable/attention_bf16.hpp"
#include "portable/cross_entropy.hpp"
#include "portable/elementwise.hpp"
#include "portable/embedding.hpp"
#include "portable/gelu.hpp"
#include "portable/grad_norm.hpp"
#include "portable/rotary.hpp"
#include "portable/layernorm.hpp"
#include "random_tensors.hpp"
#include "portable_host.hpp"

namespace {
int failures = 0;

using gpt_test::randn;


void expect_close(const char* what, const std::vector<float>& got, const std::vector<float>& want, float rtol,
                  float atol) {
  double worst = 0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(static_cast<double>(got[i]) - want[i]);
    if (e > atol + rtol * std::abs(want[i])) ++bad;
    worst = e > worst ? e : worst;
  }
  std::printf("%-28s %zu values, worst abs difference %.3g%s\n", what, got.size(), worst, bad ? "  FAILED" : "");
  if (bad) ++failures;
}

// Device copies of host vectors, freed at the end of the scope.
struct device_buffers {
  const hcomm::exec::cuda& ex;
  std::vector<void*> owned;
  float* put(const std::vector<float>& h) {
    void* p = ex.allocate(h.size() * sizeof(float));
    ex.from_host(p, h.data(), h.size() * sizeof(float));
    owned.push_back(p);
    return static_cast<float*>(p);
  }
  std::vector<float> get(const float* d, std::size_t n) const {
    std::vector<float> h(n);
    ex.to_host(h.data(), d, n * sizeof(float));
    return h;
  }
  ~device_buffers() {
    for (void* p : owned) ex.deallocate(p);
  }
};
}  // namespace

int main() {
  if (!gpt_test::cuda_device_or_skip()) return 77;
  cudaStream_t s;
  HCOMM_CUDA_CHECK(cudaStreamCreate(&s));
  {
    hcomm::exec::cuda ex{s};
    device_buffers d{ex, {}};
    const int N = 600, C = 200, team = 128;  // 3 chunks of rows in the parameter gradients
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const auto x = randn(NC, 1, 2.f, 3.f), w = randn(C, 2, 0.5f, 1.f), b = randn(C, 3), dout = randn(NC, 4);
    // host (portable_host.cpp)
    const gpt_test::layernorm_results h = gpt_test::host_layernorm(x, w, b, dout, N, C, team);
    // device
    float *dX = d.put(x), *dW = d.put(w), *dB = d.put(b), *dD = d.put(dout);
    float *dOut = d.put(std::vector<float>(NC)), *dMean = d.put(std::vector<float>(N)), *dRstd = d.put(std::vector<float>(N));
    float *dDx = d.put(std::vector<float>(NC, 0.25f)), *dDw = d.put(std::vector<float>(C, 0.5f)),
          *dDb = d.put(std::vector<float>(C, -0.5f));
    ex.launch(N, team, gpt::portable::layernorm_forward{dOut, dMean, dRstd, dX, dW, dB, C});
    ex.launch(N, team, gpt::portable::layernorm_backward_input{dDx, dD, dX, dW, dMean, dRstd, C});
    float* dPart = d.put(std::vector<float>(gpt::portable::layernorm_params_scratch(N, C)));
    gpt::portable::layernorm_backward_params(ex, dPart, dDw, dDb, dD, dX, dMean, dRstd, N, C);
    expect_close("layernorm_forward out", d.get(dOut, NC), h.out, 1e-5f, 1e-5f);
    expect_close("layernorm_forward rstd", d.get(dRstd, N), h.rstd, 1e-5f, 1e-6f);
    expect_close("layernorm_backward dx", d.get(dDx, NC), h.dx, 1e-4f, 1e-5f);
    expect_close("layernorm_backward dw", d.get(dDw, C), h.dw, 1e-4f, 1e-4f);
    expect_close("layernorm_backward db", d.get(dDb, C), h.db, 1e-5f, 1e-5f);

    const std::size_t n = 5000;
    const auto gx = randn(n, 5, 3.f), gd = randn(n, 6);
    std::vector<float> y, gdx = gd;
    gpt_test::host_gelu(gx, y, gdx);
    float *dGx = d.put(gx), *dY = d.put(std::vector<float>(n)), *dGd = d.put(gd);
    ex.for_each(n, gpt::portable::gelu_forward{dY, dGx});
    ex.for_each(n, gpt::portable::gelu_backward{dGd, dGx, dGd});
    expect_close("gelu_forward", d.get(dY, n), y, 1e-5f, 1e-6f);
    expect_close("gelu_backward", d.get(dGd, n), gdx, 1e-5f, 1e-6f);

    // elementwise.hpp: a residual add and per-column sums (n = 500 rows x 10 columns: two
    // chunks of rows, each summed in order, then the chunks in order)
    std::vector<float> rs(n), cs(10, 0.5f);
    for (std::size_t i = 0; i < n; ++i) rs[i] = gx[i] + gd[i];
    for (std::size_t c = 0; c < 10; ++c) {
      float acc = 0.f;
      for (std::size_t q = 0; q < 2; ++q) {
        float part = 0.f;
        for (std::size_t r = q * 256; r < std::min<std::size_t>(n / 10, (q + 1) * 256); ++r) part += gx[r * 10 + c];
        acc += part;
      }
      cs[c] += acc;
    }
    float *dRs = d.put(std::vector<float>(n)), *dCs = d.put(std::vector<float>(10, 0.5f)), *dGx2 = d.put(gx),
          *dGd2 = d.put(gd), *dCp = d.put(std::vector<float>(gpt::portable::column_sums_scratch(n / 10, 10)));
    ex.for_each(n, gpt::portable::residual{dRs, dGx2, dGd2});
    if (gpt::portable::column_chunks(n / 10) != 2) {
      std::printf("column sums: expected 2 chunks of rows  FAILED\n");
      ++failures;
    }
    gpt::portable::column_sums_add(ex, dCp, dCs, dGx2, n / 10, 10);
    expect_close("residual", d.get(dRs, n), rs, 0.f, 0.f);
    expect_close("column sums", d.get(dCs, 10), cs, 0.f, 0.f);

    const auto g = randn(n, 7, 0.01f), p0 = randn(n, 8, 0.02f), m0 = randn(n, 9, 1e-3f);
    auto v0 = randn(n, 10, 1e-3f);
    for (float& v : v0) v = v * v;
    const auto k = gpt::portable::adamw_update::coefficients(6e-4f, 7, 0.9f, 0.95f, 1e-8f, 0.1f, true);
    auto p = p0, m = m0, v = v0;
    gpt_test::host_adamw(p, m, v, g);  // the same step as k
    float *dP = d.put(p0), *dM = d.put(m0), *dV = d.put(v0), *dG = d.put(g);
    ex.for_each(n, gpt::portable::adamw_update{dP, dM, dV, dG, k});
    expect_close("adamw p", d.get(dP, n), p, 1e-5f, 1e-9f);
    expect_close("adamw m", d.get(dM, n), m, 1e-5f, 1e-12f);
    expect_close("adamw v", d.get(dV, n), v, 1e-5f, 1e-15f);

    const int R = 29, V = 264;
    auto z = randn(static_cast<std::size_t>(R) * V, 11, 4.f);
    std::vector<int> tgt(R);
    for (int r = 0; r < R; ++r) tgt[r] = r % 5 == 2 ? -1 : (r * 37) % V;
    float* dZ = d.put(z);
    float* dL = d.put(std::vector<float>(R));
    int* dT = static_cast<int*>(ex.allocate(tgt.size() * sizeof(int)));
    ex.from_host(dT, tgt.data(), tgt.size() * sizeof(int));
    ex.launch(R, team, gpt::portable::cross_entropy{dZ, dL, dT, V, 1.f / 17.f, true});
    std::vector<float> hl;
    gpt_test::host_cross_entropy(z, hl, tgt, V, 1.f / 17.f, team);
    expect_close("cross_entropy losses", d.get(dL, R), hl, 1e-5f, 1e-6f);
    expect_close("cross_entropy gradient", d.get(dZ, z.size()), z, 1e-5f, 1e-7f);
    ex.deallocate(dT);

    // Attention, forward and backward, against the host's run of the same kernels: fp32 (T 50,
    // one partial tile) to float rounding; --precision bf16's on tensor cores (WMMA through
    // team.mma; T 130, three tiles, the last partial; inputs bfloat16 values as the model hands
    // them over) looser: the products' sums run in another order, so a probability may round
    // to the neighbouring bfloat16.
    for (const bool bf16 : {false, true})
      for (const bool causal : {true, false}) {
        const int AB = 2, AT = bf16 ? 130 : 50, anh = 2, ahd = 64, team = bf16 ? 128 : 64;
        const auto what = [&](const char* x) {
          return std::string(bf16 ? "bf16 " : "") + "attention " + x + (causal ? " (causal)" : " (bidir.)");
        };
        auto qkv = randn(static_cast<std::size_t>(AB) * AT * 3 * anh * ahd, bf16 ? 18 : 16, 1.f);
        auto dout = randn(static_cast<std::size_t>(AB) * AT * anh * ahd, bf16 ? 19 : 17, 1.f);
        if (bf16) {
          for (float& x : qkv) x = hcomm::round_to_bf16(x);
          for (float& x : dout) x = hcomm::round_to_bf16(x);
        }
        std::vector<float> ho, hl2, hdqkv;
        gpt_test::host_attention(qkv, ho, hl2, AB, AT, anh, ahd, causal, bf16);
        float* dQKV = d.put(qkv);
        float* dO = d.put(std::vector<float>(ho.size()));
        float* dLse = d.put(std::vector<float>(hl2.size()));
        if (bf16) {
          const gpt::portable::attention_bf16_forward ak{dO, dLse, dQKV, AB, AT, anh, ahd, causal};
          ex.launch(ak.league(), team, ak);
        } else {
          const gpt::portable::attention_forward ak{dO, dLse, dQKV, AB, AT, anh, ahd, causal};
          ex.launch(ak.league(), team, ak);
        }
        expect_close(what("out").c_str(), d.get(dO, ho.size()), ho, bf16 ? 2e-2f : 1e-5f, bf16 ? 1e-2f : 1e-6f);
        expect_close(what("lse").c_str(), d.get(dLse, hl2.size()), hl2, 1e-5f, bf16 ? 1e-5f : 1e-6f);
        // the backward from the host's forward results
        gpt_test::host_attention_backward(qkv, ho, hl2, dout, hdqkv, AB, AT, anh, ahd, causal, bf16);
        float* dDout = d.put(dout);
        float* dHo = d.put(ho);
        float* dHl = d.put(hl2);
        float* dDD = d.put(std::vector<float>(hl2.size()));
        float* dDqkv = d.put(std::vector<float>(qkv.size()));
        ex.for_each(hl2.size(), gpt::portable::attention_backward_rowdot{dDD, dDout, dHo, AB, AT, anh, ahd});
        const gpt::portable::attention_detail::problem ap{dDqkv, dDout, dQKV, dHl, dDD, AB, AT, anh, ahd, causal};
        if (bf16) {
          const gpt::portable::attention_bf16_backward_dkdv kv{ap};
          const gpt::portable::attention_bf16_backward_dq kq{ap};
          ex.launch(kv.league(), team, kv);
          ex.launch(kq.league(), team, kq);
        } else {
          const gpt::portable::attention_backward_dkdv kv{ap};
          const gpt::portable::attention_backward_dq kq{ap};
          ex.launch(kv.league(), team, kv);
          ex.launch(kq.league(), team, kq);
        }
        expect_close(what("dqkv").c_str(), d.get(dDqkv, qkv.size()), hdqkv, bf16 ? 2e-2f : 1e-4f, bf16 ? 2e-2f : 1e-5f);
      }

    {  // embedding: flat kernels with model.hpp's order, so the GPU gives the same bits
      const int S = 3, ET = 20, EC = 48, EN = S * ET, EV = 264;
      std::vector<int> tok(EN);
      for (int i = 0; i < EN; ++i) tok[i] = (i * 7) % 40;
      const auto wte = randn(static_cast<std::size_t>(EV) * EC, 22), wpe = randn(static_cast<std::size_t>(ET) * EC, 23),
                 dd = randn(static_cast<std::size_t>(EN) * EC, 24);
      std::vector<float> x0(static_cast<std::size_t>(EN) * EC), dwte0(wte.size(), 0.f), dwpe0(wpe.size(), 0.f);
      for (int n = 0; n < EN; ++n)
        for (int c = 0; c < EC; ++c) {
          x0[n * EC + c] = wte[tok[n] * EC + c] + wpe[(n % ET) * EC + c];
          dwte0[tok[n] * EC + c] += dd[n * EC + c];
        }
      for (int c = 0; c < EC; ++c)
        for (int n = 0; n < EN; ++n) dwpe0[(n % ET) * EC + c] += dd[n * EC + c];
      const auto bk = gpt::portable::token_buckets(tok.data(), EN, 0, EV);
      int* dTok = static_cast<int*>(ex.allocate(tok.size() * sizeof(int)));
      auto* dStarts = static_cast<std::int32_t*>(ex.allocate(bk.starts.size() * sizeof(std::int32_t)));
      auto* dRows = static_cast<std::int32_t*>(ex.allocate(bk.rows.size() * sizeof(std::int32_t)));
      ex.from_host(dTok, tok.data(), tok.size() * sizeof(int));
      ex.from_host(dStarts, bk.starts.data(), bk.starts.size() * sizeof(std::int32_t));
      ex.from_host(dRows, bk.rows.data(), bk.rows.size() * sizeof(std::int32_t));
      float *dWte = d.put(wte), *dWpe = d.put(wpe), *dDd = d.put(dd), *dX = d.put(std::vector<float>(x0.size()));
      float *dDwte = d.put(std::vector<float>(wte.size(), 0.f)), *dDwpe = d.put(std::vector<float>(wpe.size(), 0.f));
      ex.for_each(x0.size(), gpt::portable::embedding_forward{dX, dTok, dWte, dWpe, ET, EC, 0, EV});
      ex.for_each(wte.size(), gpt::portable::embedding_backward_wte{dDwte, dDd, dStarts, dRows, EC});
      ex.for_each(wpe.size(), gpt::portable::embedding_backward_wpe{dDwpe, dDd, S, ET, EC});
      expect_close("embedding forward", d.get(dX, x0.size()), x0, 0.f, 0.f);
      expect_close("embedding dwte", d.get(dDwte, wte.size()), dwte0, 0.f, 0.f);
      expect_close("embedding dwpe", d.get(dDwpe, wpe.size()), dwpe0, 0.f, 0.f);
      ex.deallocate(dTok);
      ex.deallocate(dStarts);
      ex.deallocate(dRows);
    }
    {  // rotary against the formula; the sum of squares against double
      const int RN = 24, RT = 12, rnh = 3, rhd = 16, rot = 4, RCl = rnh * rhd, half = rot / 2;
      const auto qkv = randn(static_cast<std::size_t>(RN) * 3 * RCl, 31), cs = randn(static_cast<std::size_t>(RT) * half, 32),
                 sn = randn(cs.size(), 33);
      auto want = qkv;
      for (int n = 0; n < RN; ++n)
        for (int which = 0; which < 2; ++which)
          for (int h = 0; h < rnh; ++h)
            for (int i = 0; i < half; ++i) {
              float* x = want.data() + n * 3 * RCl + which * RCl + h * rhd;
              const float c = cs[(n % RT) * half + i], sv = sn[(n % RT) * half + i], a = x[i], b2 = x[i + half];
              x[i] = a * c - b2 * sv;
              x[i + half] = b2 * c + a * sv;
            }
      float *dQ = d.put(qkv), *dC = d.put(cs), *dS = d.put(sn);
      ex.for_each(gpt::portable::rotary::size(RN, rnh, rot), gpt::portable::rotary{dQ, dC, dS, RT, rnh, rhd, rot, false});
      expect_close("rotary", d.get(dQ, qkv.size()), want, 1e-6f, 1e-6f);
      const std::size_t n2 = 200000;
      const auto g2 = randn(n2, 34, 0.1f);
      double ref = 0;
      for (float x : g2) ref += static_cast<double>(x) * x;
      float* dG2 = d.put(g2);
      const gpt::portable::sum_squares_chunks probe{nullptr, dG2, n2};
      auto* dPart = static_cast<double*>(ex.allocate(probe.league() * sizeof(double)));
      auto* dTot = static_cast<double*>(ex.allocate(sizeof(double)));
      ex.launch(probe.league(), 128, gpt::portable::sum_squares_chunks{dPart, dG2, n2});
      ex.launch(1, 64, gpt::portable::sum_partials{dTot, dPart, probe.league()});
      double tot = 0;
      ex.to_host(&tot, dTot, sizeof(double));
      const bool ok = std::abs(tot - ref) <= 1e-12 * ref;
      std::printf("%-28s %.17g vs %.17g%s\n", "sum of squares", tot, ref, ok ? "" : "  FAILED");
      if (!ok) ++failures;
      ex.deallocate(dPart);
      ex.deallocate(dTot);
    }
    ex.synchronize();
  }
  HCOMM_CUDA_CHECK(cudaStreamDestroy(s));
  std::printf("%s\n", failures ? "FAILED" : "all portable kernels match the host executor");
  return failures ? 1 : 0;
}
