// tests/core/team_probes.hpp: team kernels shared by the host tests (test_team.cpp) and the
// CUDA tests (cuda/): the same source runs on host-fast, host-check and the GPU. No Catch2:
// nvcc compiles this too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hcomm/core/half.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm_test {

namespace exec = hcomm::exec;

// out[t * 8 + j]: result j of thread t (j: ballot, shuffle, shuffle_xor, warp_reduce,
// warp_inclusive_scan, inclusive_scan, exclusive_scan, transpose32), plus reduce and
// broadcast at out[T * 8] and out[T * 8 + 1].
struct collectives_kernel {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "collectives";
  const std::uint32_t* in;
  std::uint32_t* out;
  std::size_t scratch_bytes(int) const { return 0; }
  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    const int T = team.size();
    auto v = team.template per_thread<std::uint32_t>();
    auto src = team.template per_thread<int>();
    team.for_threads([&](int t) {
      v[t] = in[t];
      src[t] = static_cast<int>(in[t] % 32);
    });
    auto b = team.ballot(v);
    auto s = team.shuffle(v, src);
    auto x = team.shuffle_xor(v, 5);
    auto wr = team.warp_reduce(v, exec::sum{});
    auto ws = team.warp_inclusive_scan(v, exec::sum{});
    auto is = team.inclusive_scan(v, exec::sum{});
    auto es = team.exclusive_scan(v, exec::sum{}, 7u);
    auto tr = team.transpose32(v);
    const std::uint32_t r = team.reduce(v, exec::max{});
    const std::uint32_t bc = team.broadcast(v, T - 3);
    team.for_threads([&](int t) {
      std::uint32_t* o = out + t * 8;
      o[0] = b[t];
      o[1] = s[t];
      o[2] = x[t];
      o[3] = wr[t];
      o[4] = ws[t];
      o[5] = is[t];
      o[6] = es[t];
      o[7] = tr[t];
      if (t == 0) {
        out[T * 8] = r;
        out[T * 8 + 1] = bc;
      }
    });
  }
};

// team.mma from inputs a, b (bfloat16 bit patterns, as the matrices' storage: a_elems and
// b_elems values) and c (float, c_elems), C written back to c. plant: 0 none; 1 leaves the
// first element of B unwritten (host-check must report the read); 2 puts 16 bytes of scratch
// before A (an operand not 32-byte aligned: every backend refuses it).
struct mma_probe {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "mma_probe";
  const std::uint16_t* a;
  const std::uint16_t* b;
  float* c;
  exec::mma_shape shape;
  int a_elems, b_elems, c_elems;
  int plant = 0;
  std::size_t scratch_bytes(int) const {
    return (plant == 2 ? exec::scratch_for<float>(4) : 0) + exec::scratch_for<hcomm::bf16>(a_elems) +
           exec::scratch_for<hcomm::bf16>(b_elems) + exec::scratch_for<float>(c_elems);
  }
  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    if (plant == 2) team.template shared<float>(4, "pad");
    auto A = team.template shared<hcomm::bf16>(static_cast<std::size_t>(a_elems), "A");
    auto B = team.template shared<hcomm::bf16>(static_cast<std::size_t>(b_elems), "B");
    auto C = team.template shared<float>(static_cast<std::size_t>(c_elems), "C");
    const int nt = team.size();
    team.for_threads([&](int t) {
      for (int e = t; e < a_elems; e += nt) A[e] = hcomm::bf16::from_bits(a[e]);
      for (int e = t; e < b_elems; e += nt)
        if (plant != 1 || e > 0) B[e] = hcomm::bf16::from_bits(b[e]);
      for (int e = t; e < c_elems; e += nt) C[e] = c[e];
    });
    team.mma(C, A, B, shape);
    team.for_threads([&](int t) {
      for (int e = t; e < c_elems; e += nt) c[e] = C[e];
    });
  }
};

// What mma_probe gives on the host backends: each C value summed over k in order.
inline std::vector<float> mma_expected(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                                       std::vector<float> c, const exec::mma_shape& s) {
  const auto f = [](std::uint16_t h) { return static_cast<float>(hcomm::bf16::from_bits(h)); };
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      float acc = s.accumulate ? c[static_cast<std::size_t>(i) * s.ldc + j] : 0.f;
      for (int p = 0; p < s.k; ++p)
        acc += f(a[s.a_trans ? static_cast<std::size_t>(p) * s.lda + i : static_cast<std::size_t>(i) * s.lda + p]) *
               f(b[s.b_trans ? static_cast<std::size_t>(j) * s.ldb + p : static_cast<std::size_t>(p) * s.ldb + j]);
      c[static_cast<std::size_t>(i) * s.ldc + j] = acc;
    }
  return c;
}

inline std::vector<std::uint32_t> collectives_expected(const std::vector<std::uint32_t>& in, int T) {
  std::vector<std::uint32_t> o(static_cast<std::size_t>(T) * 8 + 2);
  std::uint32_t mx = 0, total = 0;
  for (int t = 0; t < T; ++t) {
    const int w = t / 32 * 32, l = t % 32;
    std::uint32_t ballot = 0, wsum = 0, wscan = 0, tr = 0;
    for (int i = 0; i < 32; ++i) {
      ballot |= static_cast<std::uint32_t>(in[w + i] != 0) << i;
      wsum += in[w + i];
      if (i <= l) wscan += in[w + i];
      tr |= ((in[w + i] >> l) & 1u) << i;
    }
    std::uint32_t inc = 0;
    for (int i = 0; i <= t; ++i) inc += in[i];
    std::uint32_t* r = &o[static_cast<std::size_t>(t) * 8];
    r[0] = ballot;
    r[1] = in[w + in[t] % 32];
    r[2] = in[w + (l ^ 5)];
    r[3] = wsum;
    r[4] = wscan;
    r[5] = inc;
    r[6] = t == 0 ? 7u : inc - in[t];
    r[7] = tr;
    mx = in[t] > mx ? in[t] : mx;
    total += in[t];
  }
  o[static_cast<std::size_t>(T) * 8] = mx;
  o[static_cast<std::size_t>(T) * 8 + 1] = in[T - 3];
  (void)total;
  return o;
}

}  // namespace hcomm_test
