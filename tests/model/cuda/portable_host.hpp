// The host executor's results of the portable kernels, compiled by the C++ compiler (a team
// kernel's call operator instantiated with the host team must not meet nvcc's device pass),
// for test_portable_kernels.cu to compare the CUDA executor's with.
#pragma once
#include <vector>

namespace gpt_test {

struct layernorm_results {
  std::vector<float> out, mean, rstd, dx, dw, db;
};
// forward, then backward from dout with dx = 0.25, dw = 0.5, db = -0.5 beforehand
layernorm_results host_layernorm(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                                 const std::vector<float>& dout, int N, int C, int team);
// y = gelu(x); d = gelu'(x) * d, in place
void host_gelu(const std::vector<float>& x, std::vector<float>& y, std::vector<float>& d);
// one AdamW update of p, m, v at lr 6e-4, step 7, betas (0.9, 0.95), eps 1e-8, wd 0.1
// losses and gradients (in z) of the cross-entropy at `scale`, team size `team`
void host_cross_entropy(std::vector<float>& z, std::vector<float>& losses, const std::vector<int>& targets, int V,
                        float scale, int team);
// flash attention forward: out[B*T, nh*hd], lse[B*nh*T]; bf16: attention_bf16.hpp's kernels
void host_attention(const std::vector<float>& qkv, std::vector<float>& out, std::vector<float>& lse, int B, int T, int nh,
                    int hd, bool causal, bool bf16 = false);
// its backward from dout (with the forward's out and lse): dqkv[B*T, 3*nh*hd]
void host_attention_backward(const std::vector<float>& qkv, const std::vector<float>& out, const std::vector<float>& lse,
                             const std::vector<float>& dout, std::vector<float>& dqkv, int B, int T, int nh, int hd,
                             bool causal, bool bf16 = false);
void host_adamw(std::vector<float>& p, std::vector<float>& m, std::vector<float>& v, const std::vector<float>& g);

}  // namespace gpt_test
