// Normally distributed test tensors from a fixed seed (the portable-kernel tests, host and CUDA).
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace gpt_test {

inline std::vector<float> randn(std::size_t n, std::uint32_t seed, float scale = 1.f, float shift = 0.f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(shift, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

}  // namespace gpt_test
