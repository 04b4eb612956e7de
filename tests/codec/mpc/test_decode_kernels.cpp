// MPC's decoder (codec/mpc/decode_kernels.hpp, codec/mpc.hpp) on damaged payloads: every
// truncation and every edited header, index or bitmap field is rejected before anything is
// written to the output.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "hcomm/codec/mpc/format.hpp"
#include "hcomm/core/error.hpp"
#include "mpc_test_util.hpp"

using namespace mpc_test;

TEST_CASE("mpc: every truncation of a payload is rejected before anything is written", "[mpc]") {
  for (kind k : {kind::smooth, kind::gaussian, kind::random_bits, kind::zeros}) {
    for (std::size_t n : {std::size_t(0), std::size_t(5), std::size_t(1500)}) {
      direct<float> f;
      const auto x = make<float>(k, n, 21);
      const std::vector<std::byte> payload = f.encode(x, 0);
      for (std::size_t len = 0; len < payload.size(); ++len) {
        std::vector<float> y(n, 1.5f);
        const std::vector<float> before = y;
        INFO(kind_name(k) << " n=" << n << " len=" << len << " of " << payload.size());
        try {
          f.decode(payload.data(), len, y, 0);
          FAIL("a truncated payload decoded");
        } catch (const hcomm::error& e) {
          REQUIRE(e.code() == errc::corrupt_frame);
          REQUIRE(same_bits(y, before));
        }
      }
      // ... and so is a payload with bytes appended.
      std::vector<std::byte> longer = payload;
      longer.push_back(std::byte{0});
      std::vector<float> y(n);
      REQUIRE_THROWS_AS(f.decode(longer.data(), longer.size(), y, 0), hcomm::error);
    }
  }
}

TEST_CASE("mpc: edited payload fields are rejected", "[mpc]") {
  const std::size_t n = 5000;  // 5 chunks, the last one short
  direct<float> f;
  const auto x = make<float>(kind::smooth, n, 2);
  const std::vector<std::byte> good = f.encode(x, 3);
  REQUIRE(stored_mode<float>(good) == md::mode_mpc);
  const std::size_t chunks = md::chunk_count(n);
  const std::size_t body = 16 + md::index_bytes(chunks);

  auto rejects = [&](const char* what, auto&& edit, unsigned param = 3) {
    std::vector<std::byte> p = good;
    edit(p);
    std::vector<float> y(n, 2.5f);
    const std::vector<float> before = y;
    INFO(what);
    try {
      f.decode(p.data(), p.size(), y, param);
      FAIL("accepted");
    } catch (const hcomm::error& e) {
      CHECK(e.code() == errc::corrupt_frame);
      CHECK(same_bits(y, before));
    }
  };
  rejects("mode 7", [](auto& p) { p[0] = std::byte{7}; });
  rejects("mode raw with a packed body", [](auto& p) { p[0] = std::byte{md::mode_raw}; });
  rejects("stride 0", [](auto& p) { p[1] = std::byte{0}; }, 0);
  rejects("stride 33", [](auto& p) { p[1] = std::byte{33}; }, 0);
  rejects("stride differs from the frame's", [](auto& p) { p[1] = std::byte{4}; });
  rejects("value size", [](auto& p) { p[2] = std::byte{8}; });
  rejects("version", [](auto& p) { p[3] = std::byte{2}; });
  rejects("reserved", [](auto& p) { p[5] = std::byte{1}; });
  rejects("chunk count", [&](auto& p) { p[8] = std::byte{static_cast<unsigned char>(chunks + 1)}; });
  rejects("index entry + 1", [](auto& p) { p[16] = std::byte{static_cast<unsigned char>(static_cast<unsigned>(p[16]) + 1)}; });
  rejects("index entries moved between chunks", [&](auto& p) {
    std::uint16_t a, b;
    std::memcpy(&a, p.data() + 16, 2);
    std::memcpy(&b, p.data() + 18, 2);
    a = static_cast<std::uint16_t>(a + 1);
    b = static_cast<std::uint16_t>(b - 1);
    std::memcpy(p.data() + 16, &a, 2);
    std::memcpy(p.data() + 18, &b, 2);
  });
  rejects("index entry 0xFFFF", [](auto& p) { p[16] = std::byte{0xFF}; p[17] = std::byte{0xFF}; });
  rejects("index padding", [&](auto& p) { p[16 + 2 * chunks] = std::byte{1}; });
  rejects("a bitmap bit cleared", [&](auto& p) {
    // Chunk 0's first bitmap: clear its lowest set bit (popcount no longer matches the size).
    std::uint32_t b;
    std::memcpy(&b, p.data() + body, 4);
    REQUIRE(b != 0);
    b &= b - 1;
    std::memcpy(p.data() + body, &b, 4);
  });
  rejects("a bitmap bit set", [&](auto& p) {
    std::uint32_t b;
    std::memcpy(&b, p.data() + body, 4);
    REQUIRE(b != ~0u);
    b |= b + 1;
    std::memcpy(p.data() + body, &b, 4);
  });
  // A bitmap whose popcount still matches decodes (to other values): not detectable without
  // the checksum, but it must not crash.
  {
    std::vector<std::byte> p = good;
    std::uint32_t b;
    std::memcpy(&b, p.data() + body, 4);
    if (b != 0 && b != ~0u) {
      const std::uint32_t low_set = b & (~b + 1), low_clear = ~b & (b + 1);
      b = (b & ~low_set) | low_clear;
      std::memcpy(p.data() + body, &b, 4);
      std::vector<float> y(n);
      f.decode(p.data(), p.size(), y, 3);
      CHECK_FALSE(same_bits(x, y));
    }
  }
}
