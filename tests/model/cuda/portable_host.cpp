// See portable_host.hpp.
#include "portable_host.hpp"

#include "hcomm/exec/host.hpp"
#include "portable/adamw.hpp"
#include "portable/attention.hpp"
#include "portable/attention_bf16.hpp"
#include "portable/cross_entropy.hpp"
#include "portable/gelu.hpp"
#include "portable/layernorm.hpp"

namespace gpt_test {

layernorm_results host_layernorm(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                                 const std::vector<float>& dout, int N, int C, int team) {
  hcomm::exec::host hx;
  layernorm_results r;
  r.out.assign(x.size(), 0.f);
  r.mean.assign(static_cast<std::size_t>(N), 0.f);
  r.rstd.assign(static_cast<std::size_t>(N), 0.f);
  r.dx.assign(x.size(), 0.25f);
  r.dw.assign(static_cast<std::size_t>(C), 0.5f);
  r.db.assign(static_cast<std::size_t>(C), -0.5f);
  hx.launch(static_cast<std::size_t>(N), team,
            gpt::portable::layernorm_forward{r.out.data(), r.mean.data(), r.rstd.data(), x.data(), w.data(), b.data(), C});
  hx.launch(static_cast<std::size_t>(N), team,
            gpt::portable::layernorm_backward_input{r.dx.data(), dout.data(), x.data(), w.data(), r.mean.data(),
                                                    r.rstd.data(), C});
  std::vector<float> partial(gpt::portable::layernorm_params_scratch(static_cast<std::size_t>(N), static_cast<std::size_t>(C)));
  gpt::portable::layernorm_backward_params(hx, partial.data(), r.dw.data(), r.db.data(), dout.data(), x.data(),
                                           r.mean.data(), r.rstd.data(), static_cast<std::size_t>(N), C);
  return r;
}

void host_gelu(const std::vector<float>& x, std::vector<float>& y, std::vector<float>& d) {
  hcomm::exec::host hx;
  y.assign(x.size(), 0.f);
  hx.for_each(x.size(), gpt::portable::gelu_forward{y.data(), x.data()});
  hx.for_each(x.size(), gpt::portable::gelu_backward{d.data(), x.data(), d.data()});
}

void host_cross_entropy(std::vector<float>& z, std::vector<float>& losses, const std::vector<int>& targets, int V,
                        float scale, int team) {
  hcomm::exec::host hx;
  losses.assign(targets.size(), 0.f);
  hx.launch(targets.size(), team, gpt::portable::cross_entropy{z.data(), losses.data(), targets.data(), V, scale, true});
}

void host_attention(const std::vector<float>& qkv, std::vector<float>& out, std::vector<float>& lse, int B, int T, int nh,
                    int hd, bool causal, bool bf16) {
  hcomm::exec::host hx;
  out.assign(static_cast<std::size_t>(B) * T * nh * hd, 0.f);
  lse.assign(static_cast<std::size_t>(B) * nh * T, 0.f);
  if (bf16) {
    const gpt::portable::attention_bf16_forward k{out.data(), lse.data(), qkv.data(), B, T, nh, hd, causal};
    hx.launch(k.league(), 128, k);
    return;
  }
  const gpt::portable::attention_forward k{out.data(), lse.data(), qkv.data(), B, T, nh, hd, causal};
  hx.launch(k.league(), 64, k);
}

void host_attention_backward(const std::vector<float>& qkv, const std::vector<float>& out, const std::vector<float>& lse,
                             const std::vector<float>& dout, std::vector<float>& dqkv, int B, int T, int nh, int hd,
                             bool causal, bool bf16) {
  hcomm::exec::host hx;
  dqkv.assign(qkv.size(), 0.f);
  std::vector<float> D(lse.size());
  hx.for_each(D.size(), gpt::portable::attention_backward_rowdot{D.data(), dout.data(), out.data(), B, T, nh, hd});
  const gpt::portable::attention_detail::problem p{dqkv.data(), dout.data(), qkv.data(), lse.data(), D.data(), B, T, nh, hd, causal};
  if (bf16) {
    const gpt::portable::attention_bf16_backward_dkdv kv{p};
    const gpt::portable::attention_bf16_backward_dq q{p};
    hx.launch(kv.league(), 128, kv);
    hx.launch(q.league(), 128, q);
    return;
  }
  const gpt::portable::attention_backward_dkdv kv{p};
  const gpt::portable::attention_backward_dq q{p};
  hx.launch(kv.league(), 64, kv);
  hx.launch(q.league(), 64, q);
}

void host_adamw(std::vector<float>& p, std::vector<float>& m, std::vector<float>& v, const std::vector<float>& g) {
  hcomm::exec::host hx;
  const auto k = gpt::portable::adamw_update::coefficients(6e-4f, 7, 0.9f, 0.95f, 1e-8f, 0.1f, true);
  hx.for_each(p.size(), gpt::portable::adamw_update{p.data(), m.data(), v.data(), g.data(), k});
}

}  // namespace gpt_test
