// The cases of the AVX2 batch coders (codec/zfp/avx2/encode_batch.hpp, decode_batch.hpp):
// float blocks at rates 3..16, every budget bit pattern where there are few, drawn ones
// where there are many, long coefficient-0 runs, every data kind; each against libzfp, so
// that the batch coders (AVX2 hosts) and the block coders (HCOMM_FORCE_PORTABLE=1, other
// hosts) are held to the same bits.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "libzfp_oracle.hpp"
#include "zfp_test_util.hpp"

using namespace zfp_test;

namespace {

// Float blocks laid end to end at `rate`, block i = header(i) | budget(i) << 9 (header: the
// nonzero bit and the exponent), decoded by us and by libzfp: the values must be the same.
template <class Block>
void float_blocks_decode_like_libzfp(unsigned rate, std::size_t blocks, Block block_of) {
  using C = zfp_codec<float>;
  const unsigned maxbits = C::maxbits(rate);
  const std::size_t n = 4 * blocks;
  std::vector<std::uint64_t> words((C::stream_bytes(n, rate) + 8 + 7) / 8, 0);
  for (std::size_t i = 0; i < blocks; ++i) {
    const std::uint64_t block = block_of(i);
    const std::size_t at = i * maxbits;
    words[at / 64] |= block << (at % 64);
    if (at % 64 + maxbits > 64) words[at / 64 + 1] |= block >> (64 - at % 64);
  }
  std::vector<std::byte> p(C::stream_bytes(n, rate) + 8);
  std::memcpy(p.data(), words.data(), p.size());
  const auto ours = our_decode<float>(p, n, rate);
  const auto ref =
      oracle_decompress<float>(reinterpret_cast<const unsigned char*>(p.data()), C::stream_bytes(n, rate), n, rate);
  INFO("rate " << rate);
  REQUIRE(same_bits(ours, ref));
}


}  // namespace

// Every bit pattern of a float block's budget (the bits after the 9-bit header) at rates 3..8,
// where the AVX2 host variant decodes 8 blocks in the 32-bit lanes of a register (2^3 .. 2^23
// blocks). Exponents vary from block to block, zero blocks included.
TEST_CASE("zfp float decode of every budget bit pattern at rates 3..8 is libzfp's", "[zfp]") {
  for (unsigned rate = 3; rate <= 8; ++rate) {
    const unsigned budget = zfp_codec<float>::maxbits(rate) - 9;
    float_blocks_decode_like_libzfp(rate, std::size_t{1} << budget, [&](std::size_t i) {
      const std::uint64_t e = (i * 37 + rate) % 256;
      return (i % 97 == 5 ? 0 : 1) | e << 1 | static_cast<std::uint64_t>(i) << 9;
    });
  }
}

// Float blocks of 36..64 bits (rates 9..16, where the AVX2 host variant decodes pairs of
// 32-bit lanes): too many bit patterns to try them all, so budgets are drawn to reach every
// path: a leading run of empty planes of any length, then bits of one density (sparse: long
// runs of 2-bit planes of coefficient 0 and late group tests; dense: early all-significant
// and raw planes), sometimes changing density half way; budgets cut planes anywhere.
TEST_CASE("zfp float decode of drawn budget bit patterns at rates 9..16 is libzfp's", "[zfp]") {
  const double densities[] = {0.0, 1.0 / 64, 1.0 / 16, 1.0 / 6, 0.35, 0.5, 0.7, 0.9, 1.0};
  constexpr std::size_t nd = sizeof densities / sizeof densities[0];
  for (unsigned rate = 9; rate <= 16; ++rate) {
    const unsigned budget = zfp_codec<float>::maxbits(rate) - 9;
    std::mt19937_64 rng(rate * 7919);
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    float_blocks_decode_like_libzfp(rate, std::size_t{1} << 16, [&](std::size_t i) {
      const unsigned lead = static_cast<unsigned>(rng() % (budget + 1));
      const double d0 = densities[rng() % nd], d1 = (rng() & 1) ? densities[rng() % nd] : d0;
      const unsigned change = lead + static_cast<unsigned>(rng() % (budget + 1));
      std::uint64_t bud = 0;
      for (unsigned b = lead; b < budget; ++b)
        if (u01(rng) < (b < change ? d0 : d1)) bud |= std::uint64_t{1} << b;
      const std::uint64_t e = rng() % 256;
      return (i % 97 == 5 ? 0 : 1) | e << 1 | bud << 9;
    });
  }
}

// Blocks in which coefficient 0 stays alone for many planes, which the batch encoders code as
// one bulk run (at rates 12..16 more than 16 of its planes fit the budget, so both halves of
// the run's bits are used): four equal values with a full random mantissa (coefficients 1..3
// are 0: the run reaches plane 0), and a, a, a, a + d ulps with small d (the other
// coefficients appear some 15..23 planes below the top).
TEST_CASE("zfp float blocks with long coefficient-0 runs encode like libzfp at rates 3..16", "[zfp]") {
  std::mt19937_64 rng(4242);
  std::vector<float> x(4 * 4096 + 3);  // + a partial block
  for (std::size_t b = 0; 4 * b < x.size(); ++b) {
    const std::uint32_t bits = static_cast<std::uint32_t>(100 + rng() % 60) << 23 |
                               static_cast<std::uint32_t>(rng() & 0x7fffffu) | ((rng() & 1) ? 0x80000000u : 0u);
    const std::uint32_t d = b % 2 ? static_cast<std::uint32_t>(rng() % 200) : 0u;
    for (std::size_t i = 4 * b; i < std::min(x.size(), 4 * b + 4); ++i)
      x[i] = std::bit_cast<float>(i % 4 == 3 ? bits + d : bits);
  }
  for (unsigned rate = 3; rate <= 16; ++rate) {
    INFO("rate " << rate);
    check_like_libzfp(x, rate);
  }
}

// Every float rate where the AVX2 host variant has its own coders (3..16), on every data kind.
TEST_CASE("zfp float rates 3..16 encode and decode like libzfp on every data kind", "[zfp]") {
  for (unsigned rate = 3; rate <= 16; ++rate)
    for (kind k : all_kinds) {
      INFO("rate " << rate << " " << name(k));
      check_like_libzfp(make_data<float>(k, 4099, 77 * rate + static_cast<unsigned>(k)), rate);
    }
}
