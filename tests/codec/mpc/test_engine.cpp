// The MPC codec through the engine (codec/codec.hpp): round trips of every stride setting,
// with and without the checksum, and frames with random byte flips that must not crash.
#include <cstddef>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../common/engine_calls.hpp"
#include "hcomm/codec/codec.hpp"
#include "mpc_test_util.hpp"

using namespace mpc_test;

TEST_CASE("mpc: round trips through the engine", "[mpc]") {
  hcomm_test::engine eng;
  for (bool checksum : {true, false})
    for (std::string spec : {"mpc", "mpc:1", "mpc:3", "mpc:32"})
      for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(33), std::size_t(1025), std::size_t(70001)})
        for (kind k : {kind::smooth, kind::gaussian, kind::specials, kind::random_bits}) {
          INFO(spec << " n=" << n << " " << kind_name(k) << " checksum=" << checksum);
          const auto xf = make<float>(k, n, 11);
          const auto cf = hc::parse_config(spec, hcomm::dtype::f32, checksum);
          const auto ff = eng.compress(cf, std::span<const float>(xf));
          std::vector<float> yf(n);
          const auto info = eng.decompress(std::span<const std::byte>(ff), std::span<float>(yf));
          REQUIRE(info.codec == codec_id::mpc);
          REQUIRE(same_bits(xf, yf));

          const auto xd = make<double>(k, n, 12);
          const auto cd = hc::parse_config(spec, hcomm::dtype::f64, checksum);
          const auto fd = eng.compress(cd, std::span<const double>(xd));
          std::vector<double> yd(n);
          eng.decompress(std::span<const std::byte>(fd), std::span<double>(yd));
          REQUIRE(same_bits(xd, yd));
        }
}

TEST_CASE("mpc: random byte flips never crash (checksum off, through the engine)", "[mpc]") {
  hcomm_test::engine eng;
  std::mt19937_64 rng(77);
  int thrown = 0, decoded = 0;
  auto fuzz = [&](auto tag, kind k, std::size_t n, const char* spec) {
    using T = decltype(tag);
    const auto x = make<T>(k, n, 5);
    const auto cfg = hc::parse_config(spec, hcomm::dtype_of<T>, /*checksum=*/false);
    const std::vector<std::byte> good = eng.compress(cfg, std::span<const T>(x));
    // Every truncation of the whole frame.
    for (std::size_t len = 0; len < good.size(); ++len) {
      std::vector<T> y(n);
      REQUIRE_THROWS_AS(eng.decompress(std::span<const std::byte>(good.data(), len), std::span<T>(y)), hcomm::error);
    }
    // Random flips in the payload (the frame header has its own checksum).
    for (int iter = 0; iter < 400; ++iter) {
      std::vector<std::byte> f = good;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < flips; ++i) {
        const std::size_t at = hc::header_bytes + rng() % (f.size() - hc::header_bytes);
        f[at] ^= std::byte{static_cast<unsigned char>(1 + rng() % 255)};
      }
      std::vector<T> y(n, T(4));
      const std::vector<T> before = y;
      try {
        eng.decompress(std::span<const std::byte>(f), std::span<T>(y));
        ++decoded;
      } catch (const hcomm::error&) {
        ++thrown;
        REQUIRE(same_bits(y, before));
      }
    }
  };
  for (const char* spec : {"mpc", "mpc:2"}) {
    fuzz(float{}, kind::smooth, 3001, spec);
    fuzz(float{}, kind::gaussian, 2048, spec);
    fuzz(float{}, kind::random_bits, 100, spec);
    fuzz(double{}, kind::smooth, 1500, spec);
    fuzz(double{}, kind::specials, 777, spec);
  }
  INFO("thrown " << thrown << ", decoded " << decoded);
  CHECK(thrown > 0);
}
