// Attention with the kernels' device form of f8 (a struct of 8 floats, what nvcc compiles for
// the GPU, with expf per lane) run on the host: the CUDA body of the f8 paths is tested on the CPU.
#define MSPARSE_F8_FORCE_STRUCT 1
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "msparse/attention/block_sparse.hpp"

#include "attention_test_util.hpp"

using namespace msparse::attention;

namespace {
using attention_test::randn;
using attention_test::rel_err;
}  // namespace

TEST_CASE("device-form attention bodies equal masked dense attention", "[attention][device_body]") {
  static_assert(MSPARSE_F8_STRUCT, "this test needs the struct form of f8");
  unsigned seed = 40;
  for (std::size_t d : {std::size_t(32), std::size_t(24)})
    for (const auto& lay : {layout::cover({pattern::local_strided, 16, 1}, 128, 16), layout::causal(150, 32)}) {
      const std::size_t T = lay.T(), ld = 3 * d;  // q | k | v packed: the strided path
      const auto qkv = randn(T * ld, seed++), dout = randn(T * d, seed++);
      std::vector<float> o(T * d), lse(T), dqkv(T * ld);
      forward(lay, qkv.data(), qkv.data() + d, qkv.data() + 2 * d, d, o.data(), lse.data(), ld, d);
      backward(lay, qkv.data(), qkv.data() + d, qkv.data() + 2 * d, o.data(), lse.data(), dout.data(), d, dqkv.data(),
               dqkv.data() + d, dqkv.data() + 2 * d, ld, d);
      std::vector<float> q(T * d), k(T * d), v(T * d), dq(T * d), dk(T * d), dv(T * d);
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t c = 0; c < d; ++c) {
          q[t * d + c] = qkv[t * ld + c];
          k[t * d + c] = qkv[t * ld + d + c];
          v[t * d + c] = qkv[t * ld + 2 * d + c];
        }
      const auto mask = lay.element_mask();
      std::vector<float> ro(T * d), rdq(T * d), rdk(T * d), rdv(T * d);
      dense_masked_forward(mask.data(), T, d, q.data(), k.data(), v.data(), ro.data());
      dense_masked_backward(mask.data(), T, d, q.data(), k.data(), v.data(), dout.data(), rdq.data(), rdk.data(), rdv.data());
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t c = 0; c < d; ++c) {
          dq[t * d + c] = dqkv[t * ld + c];
          dk[t * d + c] = dqkv[t * ld + d + c];
          dv[t * d + c] = dqkv[t * ld + 2 * d + c];
        }
      INFO("d=" << d << " T=" << T);
      CHECK(rel_err(o, ro) < 2e-5);
      CHECK(rel_err(dq, rdq) < 5e-5);
      CHECK(rel_err(dk, rdk) < 5e-5);
      CHECK(rel_err(dv, rdv) < 5e-5);
    }
}
