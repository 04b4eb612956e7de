// The whole ZFP codec against libzfp 1.0 (the oracle): our stream bytes and our decoded
// values are libzfp's, bit for bit, over sizes x data kinds x rates and on arbitrary stream
// bits. tests/codec/extra.cmake runs these cases again with HCOMM_FORCE_PORTABLE=1.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "libzfp_oracle.hpp"
#include "zfp_test_util.hpp"

using namespace zfp_test;

namespace {

template <class T>
void bit_exact_sweep() {
  for (std::size_t n : sizes)
    for (kind k : all_kinds)
      for (unsigned rate : rates) {
        INFO(name(k) << " n=" << n << " rate=" << rate << " " << (sizeof(T) == 4 ? "f32" : "f64"));
        const auto x = make_data<T>(k, n, 1234 + n * 7 + static_cast<unsigned>(k));
        const auto ours = check_like_libzfp(x, rate);
        REQUIRE(ours.payload.size() == ours.stream_bytes + 8);  // no non-finite values
      }
}

// Any stream bits decode (flips in the body cannot be detected without a checksum), and they
// decode to what libzfp makes of the same bits: exercises budget cuts inside planes, exponents
// 0 and extreme, double blocks with fewer coded planes, and integer wrap-around.
template <class T>
void random_stream_decodes_like_libzfp(unsigned rate, std::uint64_t seed) {
  using C = zfp_codec<T>;
  const std::size_t n = 1029;
  std::mt19937_64 rng(seed);
  std::vector<std::byte> p(C::stream_bytes(n, rate) + 8, std::byte{0});
  const std::size_t used_bits = C::blocks(n) * C::maxbits(rate);
  for (std::size_t bit = 0; bit < used_bits; ++bit)
    if (rng() & 1) p[bit / 8] |= static_cast<std::byte>(1u << (bit % 8));
  const auto ours = our_decode<T>(p, n, rate);
  const auto ref = oracle_decompress<T>(reinterpret_cast<const unsigned char*>(p.data()), C::stream_bytes(n, rate), n, rate);
  INFO("rate " << rate << " seed " << seed);
  REQUIRE(same_bits(ours, ref));
}


}  // namespace

TEST_CASE("zfp f32 stream and decode are libzfp's, bit for bit", "[zfp]") { bit_exact_sweep<float>(); }
TEST_CASE("zfp f64 stream and decode are libzfp's, bit for bit", "[zfp]") { bit_exact_sweep<double>(); }

TEST_CASE("zfp every rate 3..64 matches libzfp on mixed data", "[zfp]") {
  for (unsigned rate = 3; rate <= 64; ++rate) {
    INFO("rate " << rate);
    check_like_libzfp(make_data<float>(kind::noise, 4099, rate), rate);
    check_like_libzfp(make_data<double>(kind::smooth, 4099, rate), rate);
  }
}

TEST_CASE("zfp decodes arbitrary stream bits exactly as libzfp does", "[zfp]") {
  for (unsigned rate = 3; rate <= 64; rate += (rate < 20 ? 1 : 7))
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      random_stream_decodes_like_libzfp<float>(rate, seed);
      random_stream_decodes_like_libzfp<double>(rate, seed + 100);
    }
}
