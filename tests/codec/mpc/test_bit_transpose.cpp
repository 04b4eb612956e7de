// The bit transposition of MPC's chunks (codec/mpc/bit_transpose.hpp).
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "hcomm/codec/mpc/bit_transpose.hpp"

namespace md = hcomm::codec::mpc_detail;

TEST_CASE("mpc: the bit transposition is an involution that yields bit planes", "[mpc]") {
  auto check = [](auto word_tag, auto lanes_tag) {
    using W = decltype(word_tag);
    constexpr unsigned L = decltype(lanes_tag)::value;
    constexpr unsigned B = sizeof(W) * 8;
    std::mt19937_64 rng(5);
    std::vector<W> m(B * L), orig;
    for (auto& w : m) w = static_cast<W>(rng());
    orig = m;
    md::bit_transpose<W, L>(m.data());
    for (unsigned l = 0; l < L; ++l)
      for (unsigned k = 0; k < B; ++k)
        for (unsigned j = 0; j < B; ++j) {
          const unsigned got = static_cast<unsigned>((m[k * L + l] >> (B - 1 - j)) & 1u);
          const unsigned want = static_cast<unsigned>((orig[j * L + l] >> (B - 1 - k)) & 1u);
          REQUIRE(got == want);
        }
    md::bit_transpose<W, L>(m.data());
    REQUIRE(m == orig);
  };
  check(std::uint32_t{}, std::integral_constant<unsigned, 32>{});
  check(std::uint32_t{}, std::integral_constant<unsigned, 4>{});
  check(std::uint64_t{}, std::integral_constant<unsigned, 16>{});
  check(std::uint64_t{}, std::integral_constant<unsigned, 32>{});
}
