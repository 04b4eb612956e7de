// MPC's encoding kernels (codec/mpc/encode_kernels.hpp) at work: what smooth data
// compresses to, the raw fallback on random bits, and the automatic choice of the delta
// stride on interleaved signals.
#include <cmath>
#include <cstddef>
#include <vector>

#include <catch2/catch.hpp>

#include "hcomm/codec/mpc/format.hpp"
#include "mpc_test_util.hpp"

using namespace mpc_test;

TEST_CASE("mpc: smooth data compresses, random bits fall back to raw", "[mpc]") {
  const std::size_t n = (std::size_t(1) << 20) + 7;
  direct<float> f;
  direct<double> d;
  const auto ratio = [&](std::size_t raw, std::size_t packed) { return double(raw) / double(packed); };

  // Zeros: a chunk of 1024 floats keeps only its 32 bitmap words and its 2-byte index entry,
  // a ratio just under 32, so 25 leaves room for the payload header. The smooth and Gaussian
  // bounds sit below what the coder reaches on these fields with a margin: they catch a coder
  // that no longer turns the top planes of small residuals into zero words (ratios near 1),
  // not small changes of the ratio.
  const double smooth_f = ratio(n * 4, f.encode(make<float>(kind::smooth, n), 0).size());
  CHECK(stored_mode<float>(f.payload) == md::mode_mpc);
  const double smooth_d = ratio(n * 8, d.encode(make<double>(kind::smooth, n), 0).size());
  const double zeros_f = ratio(n * 4, f.encode(make<float>(kind::zeros, n), 0).size());
  const double gauss_f = ratio(n * 4, f.encode(make<float>(kind::gaussian, n), 0).size());
  WARN("mpc ratios at n=2^20+7: smooth f32 " << smooth_f << ", smooth f64 " << smooth_d << ", zeros f32 " << zeros_f
                                             << ", gaussian f32 " << gauss_f);
  CHECK(smooth_f > 1.8);
  CHECK(smooth_d > 1.3);
  CHECK(zeros_f > 25);
  CHECK(gauss_f > 1.05);

  for (std::size_t m : {std::size_t(1), std::size_t(33), std::size_t(1024), n}) {
    const auto& pf = f.encode(make<float>(kind::random_bits, m, 3), 0);
    CHECK(stored_mode<float>(pf) == md::mode_raw);
    CHECK(pf.size() == 16 + m * 4);
    const auto& pd = d.encode(make<double>(kind::random_bits, m, 4), 0);
    CHECK(stored_mode<double>(pd) == md::mode_raw);
    CHECK(pd.size() == 16 + m * 8);
  }
}

TEST_CASE("mpc: the automatic stride finds interleaved signals", "[mpc]") {
  for (unsigned s : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 16u}) {
    for (std::size_t n : {std::size_t(4096), std::size_t(300000)}) {
      std::vector<float> xf(n);
      std::vector<double> xd(n);
      for (std::size_t i = 0; i < n; ++i) {
        const unsigned ch = static_cast<unsigned>(i % s);
        const double t = double(i / s);
        const double v = (ch + 1) * 10.0 * std::sin(0.002 * t * (1.0 + 0.37 * ch)) + 40.0 * ch - 17.0;
        xf[i] = static_cast<float>(v);
        xd[i] = v;
      }
      INFO("signals " << s << " n=" << n);
      direct<float> f;
      direct<double> d;
      CHECK(stored_dim<float>(f.encode(xf, 0)) == s);
      CHECK(stored_dim<double>(d.encode(xd, 0)) == s);
      // The automatic choice beats stride 1 when the signals are interleaved.
      if (s > 1) {
        const std::size_t auto_size = f.encode(xf, 0).size();
        CHECK(auto_size < f.encode(xf, 1).size());
      }
    }
  }
}
