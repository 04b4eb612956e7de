// The ZFP codec as the engine sees it (codec/codec.hpp, codec/zfp.hpp): its parameters and
// sizes, round trips through frames, and hostile frames (truncated, bytes flipped).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include <catch2/catch.hpp>

#include "../common/engine_calls.hpp"
#include "hcomm/codec/codec.hpp"
#include "hcomm/codec/zfp.hpp"
#include "zfp_test_util.hpp"

using namespace zfp_test;

namespace {

template <class T>
void engine_round_trip(std::size_t n, unsigned rate, bool checksum) {
  hcomm_test::engine eng;
  const auto cfg = hcomm::codec::parse_config(zfp_spec(rate), hcomm::dtype_of<T>, checksum);
  auto x = make_data<T>(kind::smooth, n, n);
  if (n > 10) x[n / 2] = std::numeric_limits<T>::quiet_NaN();
  const auto frame = eng.compress(cfg, std::span<const T>(x));
  std::vector<T> y(n);
  const auto info = eng.decompress(std::span<const std::byte>(frame), std::span<T>(y));
  REQUIRE(info.codec == hcomm::codec_id::zfp);
  REQUIRE(info.param == rate);
  REQUIRE(info.count == n);
  const auto direct = our_encode(x, rate);
  REQUIRE(frame.size() == hcomm::codec::header_bytes + direct.payload.size());
  REQUIRE(std::equal(direct.payload.begin(), direct.payload.end(), frame.begin() + hcomm::codec::header_bytes));
  REQUIRE(same_bits(y, our_decode<T>(direct.payload, n, rate)));
}

template <class T>
std::vector<std::byte> frame_of(const std::vector<T>& x, unsigned rate, bool checksum) {
  hcomm_test::engine eng;
  return eng.compress(hcomm::codec::parse_config(zfp_spec(rate), hcomm::dtype_of<T>, checksum),
                      std::span<const T>(x));
}

template <class T>
void hostile_frames(std::size_t n, unsigned rate) {
  auto x = make_data<T>(kind::noise, n, 11);
  for (std::size_t i = 3; i < n; i += 17) x[i] = (i & 1) ? std::numeric_limits<T>::infinity()
                                                         : std::numeric_limits<T>::quiet_NaN();
  const auto frame = frame_of(x, rate, false);
  hcomm_test::engine eng;
  std::vector<T> y(n);
  // Every truncation is an error.
  for (std::size_t len = 0; len < frame.size(); ++len) {
    std::vector<std::byte> cut(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(len));
    REQUIRE_THROWS_AS(eng.decompress(std::span<const std::byte>(cut), std::span<T>(y)), hcomm::error);
  }
  // Random flips: an hcomm::error, or (flips in the stream body, undetectable without a
  // checksum) a decode that keeps the non-finite values where they were.
  std::mt19937_64 rng(rate * 1000 + n);
  std::size_t ok = 0, rejected = 0;
  for (int it = 0; it < 3000; ++it) {
    auto bad = frame;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] ^= static_cast<std::byte>(1 + rng() % 255);
    try {
      eng.decompress(std::span<const std::byte>(bad), std::span<T>(y));
      ++ok;
    } catch (const hcomm::error&) {
      ++rejected;
    }
  }
  REQUIRE(ok + rejected == 3000);
  REQUIRE(rejected > 0);
  // Flips inside the list or count of the payload are always caught when they change an index
  // order/range, a pattern's exponent, or the count.
  const std::size_t hb = hcomm::codec::header_bytes, sb = zfp_codec<T>::stream_bytes(n, rate);
  {
    auto bad = frame;
    bad[hb + sb] ^= std::byte{1};  // count
    REQUIRE_THROWS_AS(eng.decompress(std::span<const std::byte>(bad), std::span<T>(y)), hcomm::error);
  }
}

}  // namespace

TEST_CASE("zfp round trips through the engine", "[zfp]") {
  for (std::size_t n : sizes)
    for (unsigned rate : {3u, 8u, 16u, 32u}) {
      INFO("n=" << n << " rate=" << rate);
      engine_round_trip<float>(n, rate, true);
      engine_round_trip<double>(n, rate, false);
    }
}

TEST_CASE("zfp rejects truncated and corrupted frames without crashing", "[zfp]") {
  for (unsigned rate : {3u, 8u, 16u, 64u}) {
    hostile_frames<float>(101, rate);
    hostile_frames<double>(67, rate);
  }
}

TEST_CASE("zfp parameters and sizes", "[zfp]") {
  using C = zfp_codec<float>;
  STATIC_REQUIRE(hcomm::codec::codec_kernel<C>);
  STATIC_REQUIRE(hcomm::codec::codec_kernel<zfp_codec<double>>);
  REQUIRE_FALSE(C::valid_param(2));
  REQUIRE(C::valid_param(3));
  REQUIRE(C::valid_param(64));
  REQUIRE_FALSE(C::valid_param(65));
  REQUIRE(C::stream_bytes(0, 8) == 0);
  REQUIRE(C::stream_bytes(1, 8) == 8);      // one block of 32 bits, padded to a word
  REQUIRE(C::stream_bytes(256, 8) == 256);  // one group: 64 blocks * 32 bits
  REQUIRE(C::stream_bytes(257, 3) == 104);  // 65 blocks * 12 bits = 780 bits -> 13 words
  REQUIRE(our_encode(std::vector<float>{}, 8).payload.size() == 8);
  REQUIRE(C::max_payload_bytes(std::numeric_limits<std::size_t>::max() / 2, 8) ==
          std::numeric_limits<std::size_t>::max());
  REQUIRE_THROWS_AS(hcomm::codec::parse_config("zfp:2"), hcomm::error);
}
