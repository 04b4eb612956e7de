// The ZFP codec's list of non-finite values (codec/zfp/side_list.hpp): NaN and ±Inf come
// back exactly, what the list costs, and the payload validation (list, count, lengths,
// stream padding) that runs before anything is written.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "../common/codec_calls.hpp"
#include "hcomm/codec/zfp.hpp"
#include "hcomm/core/error.hpp"
#include "libzfp_oracle.hpp"
#include "zfp_test_util.hpp"

using namespace zfp_test;

namespace {

// The replacement rule of the codec, written independently: nearest finite value of the same
// block (left first at equal distance), 0 when the block has none.
template <class T>
std::vector<T> replaced(const std::vector<T>& x) {
  std::vector<T> r = x;
  for (std::size_t b = 0; b < x.size(); b += 4) {
    const std::size_t e = std::min(x.size(), b + 4);
    for (std::size_t i = b; i < e; ++i) {
      if (std::isfinite(x[i])) continue;
      T rep = 0;
      for (std::size_t d = 1; d < 4; ++d) {
        if (i >= b + d && std::isfinite(x[i - d])) { rep = x[i - d]; break; }
        if (i + d < e && std::isfinite(x[i + d])) { rep = x[i + d]; break; }
      }
      r[i] = rep;
    }
  }
  return r;
}

template <class T>
void check_nonfinite(std::size_t n, double fraction, unsigned rate, std::uint64_t seed) {
  using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  std::mt19937_64 rng(seed);
  auto x = make_data<T>(kind::smooth, n, seed);
  std::size_t planted = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::uniform_real_distribution<double>(0, 1)(rng) >= fraction) continue;
    const unsigned r = static_cast<unsigned>(rng() % 5);
    if (r == 0) x[i] = std::numeric_limits<T>::infinity();
    else if (r == 1) x[i] = -std::numeric_limits<T>::infinity();
    else if (r == 2) x[i] = std::numeric_limits<T>::quiet_NaN();
    else if (r == 3) x[i] = -std::numeric_limits<T>::quiet_NaN();
    else {  // a NaN with payload bits (signalling or not)
      const U exp = sizeof(T) == 4 ? U(0x7f800000u) : U(0x7ff0000000000000ull);
      U b = exp | (static_cast<U>(rng()) & ~exp);
      if ((b & ~exp & (sizeof(T) == 4 ? U(0x007fffff) : U(0x000fffffffffffffull))) == 0) b |= 1;
      x[i] = std::bit_cast<T>(b);
    }
    ++planted;
  }
  INFO("n=" << n << " planted " << planted << " rate " << rate);
  const auto ours = our_encode(x, rate);
  REQUIRE(ours.payload.size() == ours.stream_bytes + 8 + planted * zfp_codec<T>::entry_bytes(n));
  const auto rx = replaced(x);
  check_stream_equal(ours, oracle_compress(rx, rate));  // blocks without non-finite: libzfp's
  const auto dec = our_decode<T>(ours.payload, n, rate);
  const auto ref = oracle_decompress<T>(reinterpret_cast<const unsigned char*>(ours.payload.data()),
                                        ours.stream_bytes, n, rate);
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      REQUIRE(bits_of(dec[i]) == bits_of(x[i]));
    } else {
      REQUIRE(bits_of(dec[i]) == bits_of(ref[i]));
    }
  }
}

}  // namespace

TEST_CASE("zfp NaN and ±Inf come back exactly, other values as for replaced data", "[zfp]") {
  for (unsigned rate : {3u, 8u, 16u, 32u}) {
    for (std::size_t n : {1ul, 3ul, 5ul, 33ul, 1025ul, 70001ul}) {
      check_nonfinite<float>(n, 0.05, rate, n + rate);
      check_nonfinite<double>(n, 0.05, rate, n * 3 + rate);
    }
    check_nonfinite<float>(1000, 1.0, rate, 5);  // all non-finite
    check_nonfinite<double>(1000, 0.6, rate, 6);
  }
  // The count and list cost exactly 8 + entry bytes per value.
  std::vector<float> x(1000, 1.0f);
  x[17] = std::numeric_limits<float>::quiet_NaN();
  REQUIRE(our_encode(x, 8).payload.size() == zfp_codec<float>::stream_bytes(1000, 8) + 8 + 8);
  STATIC_REQUIRE(zfp_codec<float>::entry_bytes(1000) == 8);
  STATIC_REQUIRE(zfp_codec<double>::entry_bytes(1000) == 12);
  STATIC_REQUIRE(zfp_codec<double>::entry_bytes(std::size_t{1} << 33) == 16);
}

// Direct checks of the payload validation, each kind of malformation on its own.
TEST_CASE("zfp decode validates the payload before writing", "[zfp]") {
  using C = zfp_codec<float>;
  const std::size_t n = 64;
  const unsigned rate = 8;
  std::vector<float> x(n, 2.0f);
  x[10] = std::numeric_limits<float>::quiet_NaN();
  x[20] = -std::numeric_limits<float>::infinity();
  const auto good = our_encode(x, rate).payload;
  const std::size_t sb = C::stream_bytes(n, rate);
  REQUIRE(good.size() == sb + 8 + 2 * 8);
  auto expect_corrupt = [&](const std::vector<std::byte>& p) {
    std::vector<float> out(n, 42.0f);
    std::vector<std::byte> ws(C::workspace_bytes(n, rate));
    try {
      hcomm_test::decode<C>(hcomm::exec::host{}, p.data(), p.size(), n, rate, out.data(), ws.data());
      FAIL("accepted a malformed payload");
    } catch (const hcomm::error& e) {
      REQUIRE(e.code() == hcomm::errc::corrupt_frame);
    }
    for (float v : out) REQUIRE(v == 42.0f);  // untouched
  };
  auto put32 = [](std::vector<std::byte>& p, std::size_t at, std::uint32_t v) { std::memcpy(p.data() + at, &v, 4); };
  auto put64 = [](std::vector<std::byte>& p, std::size_t at, std::uint64_t v) { std::memcpy(p.data() + at, &v, 8); };
  {  // index out of range
    auto p = good;
    put32(p, sb + 8 + 8, 64);
    expect_corrupt(p);
  }
  {  // not increasing
    auto p = good;
    put32(p, sb + 8 + 8, 10);
    expect_corrupt(p);
  }
  {  // finite pattern
    auto p = good;
    put32(p, sb + 8 + 4, 0x3f800000u);
    expect_corrupt(p);
  }
  {  // count larger than the list
    auto p = good;
    put64(p, sb, 3);
    expect_corrupt(p);
  }
  {  // count larger than n
    auto p = good;
    put64(p, sb, n + 1);
    expect_corrupt(p);
  }
  {  // one byte too many / too few
    auto p = good;
    p.push_back(std::byte{0});
    expect_corrupt(p);
    p.resize(good.size() - 1);
    expect_corrupt(p);
  }
  {  // payload shorter than the stream
    std::vector<std::byte> p(good.begin(), good.begin() + 5);
    expect_corrupt(p);
  }
  {  // non-zero stream padding (n = 5 at rate 8: 64 bits of 128 used... use n=3: 32 of 64)
    using D = zfp_codec<double>;
    std::vector<double> y3{1.0, 2.0, 3.0};
    auto p = our_encode(y3, 4).payload;  // 16 bits used of the only word
    REQUIRE(p.size() == 16);
    p[7] ^= std::byte{0x80};
    std::vector<double> out(3);
    std::vector<std::byte> ws(D::workspace_bytes(3, 4));
    REQUIRE_THROWS_AS(hcomm_test::decode<D>(hcomm::exec::host{}, p.data(), p.size(), 3, 4, out.data(), ws.data()), hcomm::error);
  }
  {  // a valid payload decodes
    std::vector<float> out(n);
    std::vector<std::byte> ws(C::workspace_bytes(n, rate));
    hcomm_test::decode<C>(hcomm::exec::host{}, good.data(), good.size(), n, rate, out.data(), ws.data());
    REQUIRE(std::isnan(out[10]));
    REQUIRE(out[20] == -std::numeric_limits<float>::infinity());
    REQUIRE(out[0] == 2.0f);
  }
}
