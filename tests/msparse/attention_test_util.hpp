// Helpers shared by the attention tests (test_attention*.cpp).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "msparse/attention/block_sparse.hpp"

namespace attention_test {
inline std::vector<float> randn(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}
// max |a - b| relative to max |b| (fp32 rounding across different summation orders).
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, double(std::fabs(a[i] - b[i])));
    den = std::max(den, double(std::fabs(b[i])));
  }
  return num / std::max(den, 1e-30);
}
// Block-sparse forward and backward over `lay` equal dense attention under its element mask.
inline void check_against_reference(const msparse::attention::layout& lay, std::size_t d, unsigned seed) {
  const std::size_t T = lay.T();
  const auto q = randn(T * d, seed), k = randn(T * d, seed + 1), v = randn(T * d, seed + 2), dout = randn(T * d, seed + 3);
  const auto mask = lay.element_mask();
  std::vector<float> o(T * d), lse(T), dq(T * d), dk(T * d), dv(T * d);
  using namespace msparse::attention;
  forward(lay, q.data(), k.data(), v.data(), d, o.data(), lse.data());
  backward(lay, q.data(), k.data(), v.data(), o.data(), lse.data(), dout.data(), d, dq.data(), dk.data(), dv.data());
  std::vector<float> ro(T * d), rdq(T * d), rdk(T * d), rdv(T * d);
  dense_masked_forward(mask.data(), T, d, q.data(), k.data(), v.data(), ro.data());
  dense_masked_backward(mask.data(), T, d, q.data(), k.data(), v.data(), dout.data(), rdq.data(), rdk.data(), rdv.data());
  INFO("pattern " << to_string(lay.spec().kind) << " exact=" << lay.exact() << " T=" << T << " B=" << lay.block());
  CHECK(rel_err(o, ro) < 2e-5);
  CHECK(rel_err(dq, rdq) < 5e-5);
  CHECK(rel_err(dk, rdk) < 5e-5);
  CHECK(rel_err(dv, rdv) < 5e-5);
}
}  // namespace attention_test
