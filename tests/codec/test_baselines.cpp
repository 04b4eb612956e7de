// The baseline codecs: the bfloat16 conversions of core/bfloat16.hpp bit for bit against two
// references written here another way (the carry trick on float32 patterns, and the nearest
// of the two bracketing bfloat16 values found by search and compared exactly in float64),
// known values, and both codecs through the engine on host and host-check: sizes, errors,
// non-finite values, bad parameters and damaged payloads. (Truncation, byte flips and header
// edits for every registered codec: test_frame.cpp and tests/fuzz; golden frames:
// tests/core/test_golden_frames.cpp.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "hcomm/codec/codec.hpp"
#include "hcomm/core/bfloat16.hpp"
#include "hcomm/exec/host_check.hpp"

namespace {

namespace hc = hcomm::codec;
using hcomm::codec_id;
using hcomm::dtype;
using hcomm::errc;

template <class T, class U>
T from(U u) {
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}
template <class U, class T>
U bits(T v) {
  U u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

// Reference 1 (float32 only): add 0x7FFF plus the kept low bit and drop the low half (the
// carry trick of PyTorch's c10::BFloat16); NaN as the codec keeps it.
std::uint16_t ref_carry(std::uint32_t u) {
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// Reference 2 (any finite x, exact in double): the largest non-negative bfloat16 pattern lo
// with value(lo) <= |x| by binary search, then the nearer of lo and lo + 1 (2|x| against
// their sum, both exact), ties to the even pattern. Past the largest finite value the upper
// neighbour is 2^128 with an even mantissa (Inf's pattern), as IEEE's overflow rule says.
double bf16_value(std::uint32_t h) { return h >= 0x7F80u ? std::ldexp(1.0, 128) : double(from<float>(h << 16)); }
std::uint16_t ref_search(double x) {
  const double a = std::fabs(x);
  std::uint32_t lo = 0, hi = 0x7F80;  // value(lo) <= a < value(hi) (a < 2^128 assumed below)
  if (a >= std::ldexp(1.0, 128)) lo = 0x7F80;
  while (hi - lo > 1 && lo < 0x7F80) {
    const std::uint32_t mid = (lo + hi) / 2;
    if (bf16_value(mid) <= a) lo = mid;
    else hi = mid;
  }
  std::uint32_t r = lo;
  if (lo < 0x7F80) {
    const double twice = 2 * a, sum = bf16_value(lo) + bf16_value(lo + 1);
    if (twice > sum || (twice == sum && (lo & 1u))) r = lo + 1;
  }
  return static_cast<std::uint16_t>(r | (std::signbit(x) ? 0x8000u : 0u));
}

template <class F>
void expect_error(F&& f, errc code, const std::string& needle) {
  try {
    f();
    FAIL("no hcomm::error thrown (expected '" << needle << "')");
  } catch (const hcomm::error& e) {
    INFO(e.what());
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

template <class T>
std::vector<T> gradients(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = static_cast<T>(1e-3 * nd(g) * (1.0 + 10.0 * double((i / 300) % 3)) + 1e-4 * std::sin(0.01 * double(i)));
  return x;
}

}  // namespace

TEST_CASE("bfloat16: known values", "[bf16][core]") {
  using hcomm::to_bf16_bits;
  CHECK(to_bf16_bits(1.0f) == 0x3F80);
  CHECK(to_bf16_bits(-2.0f) == 0xC000);
  CHECK(to_bf16_bits(0.0f) == 0x0000);
  CHECK(to_bf16_bits(-0.0f) == 0x8000);
  CHECK(to_bf16_bits(1.0) == 0x3F80);
  CHECK(to_bf16_bits(-0.0) == 0x8000);
  // ties to even: 1 + 2^-8 lies between 0x3F80 and 0x3F81 (keeps the even 0x3F80); 1 + 3*2^-8
  // between 0x3F81 and 0x3F82 (goes up to 0x3F82); a hair above a tie rounds up
  CHECK(to_bf16_bits(from<float>(0x3F808000u)) == 0x3F80);
  CHECK(to_bf16_bits(from<float>(0x3F818000u)) == 0x3F82);
  CHECK(to_bf16_bits(from<float>(0x3F808001u)) == 0x3F81);
  CHECK(to_bf16_bits(1.0 + std::ldexp(1.0, -8)) == 0x3F80);
  CHECK(to_bf16_bits(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)) == 0x3F81);  // float32 would lose this
  CHECK(to_bf16_bits(1.0 + 3 * std::ldexp(1.0, -8)) == 0x3F82);
  // subnormals: the smallest bfloat16 subnormal is 2^-133; half of it is a tie to 0
  CHECK(to_bf16_bits(std::ldexp(1.0f, -133)) == 0x0001);
  CHECK(to_bf16_bits(std::ldexp(1.0f, -134)) == 0x0000);
  CHECK(to_bf16_bits(3 * std::ldexp(1.0f, -134)) == 0x0002);
  CHECK(to_bf16_bits(std::ldexp(1.0f, -134) + std::ldexp(1.0f, -149)) == 0x0001);
  CHECK(to_bf16_bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(to_bf16_bits(-std::numeric_limits<float>::denorm_min()) == 0x8000);
  CHECK(to_bf16_bits(std::numeric_limits<double>::denorm_min()) == 0x0000);
  CHECK(to_bf16_bits(std::ldexp(1.0, -134) * (1 + 1e-15)) == 0x0001);
  CHECK(to_bf16_bits(std::numeric_limits<float>::min()) == 0x0080);        // 2^-126, normal
  CHECK(to_bf16_bits(from<float>(0x007FFFFFu)) == 0x0080);                  // largest float subnormal rounds up
  // overflow: the largest finite bfloat16 is 0x7F7F; at its midpoint with 2^128 the tie goes
  // to Inf's (even) pattern, below it stays
  CHECK(to_bf16_bits(std::numeric_limits<float>::max()) == 0x7F80);
  CHECK(to_bf16_bits(-std::numeric_limits<float>::max()) == 0xFF80);
  CHECK(to_bf16_bits(from<float>(0x7F7F8000u)) == 0x7F80);
  CHECK(to_bf16_bits(from<float>(0x7F7F7FFFu)) == 0x7F7F);
  CHECK(to_bf16_bits(std::numeric_limits<double>::max()) == 0x7F80);
  CHECK(to_bf16_bits(1e300) == 0x7F80);
  CHECK(to_bf16_bits(-1e300) == 0xFF80);
  CHECK(to_bf16_bits(double(from<float>(0x7F7F7FFFu))) == 0x7F7F);
  // Inf and NaN: NaN keeps its sign and top payload bits, quiet bit set
  CHECK(to_bf16_bits(std::numeric_limits<float>::infinity()) == 0x7F80);
  CHECK(to_bf16_bits(-std::numeric_limits<double>::infinity()) == 0xFF80);
  CHECK(to_bf16_bits(from<float>(0x7F800001u)) == 0x7FC0);  // signalling, payload in the low bits only
  CHECK(to_bf16_bits(from<float>(0xFFA00000u)) == 0xFFE0);
  CHECK(to_bf16_bits(from<float>(0x7FC00000u)) == 0x7FC0);
  CHECK(to_bf16_bits(from<float>(0x7FFFFFFFu)) == 0x7FFF);
  CHECK(to_bf16_bits(from<double>(0x7FF0000000000001ull)) == 0x7FC0);
  CHECK(to_bf16_bits(from<double>(0xFFF4000000000000ull)) == 0xFFE0);
  CHECK(to_bf16_bits(std::numeric_limits<double>::quiet_NaN()) == 0x7FC0);
  // widening is exact
  CHECK(hcomm::bf16_bits_to_float(0x3F80) == 1.0f);
  CHECK(hcomm::bf16_bits_to_double(0x0001) == std::ldexp(1.0, -133));
  CHECK(hcomm::bf16_bits_to_double(0x807F) == -127 * std::ldexp(1.0, -133));
  CHECK(hcomm::bf16_bits_to_double(0x7F7F) == double(from<float>(0x7F7F0000u)));
  CHECK(std::isinf(hcomm::bf16_bits_to_double(0xFF80)));
  CHECK(bits<std::uint64_t>(hcomm::bf16_bits_to_double(0xFFE0)) == 0xFFFC000000000000ull);
}

TEST_CASE("bfloat16: every float32 rounding class matches both references", "[bf16][core]") {
  // Every high half with the low halves that decide the rounding, then a strided sweep.
  std::size_t checked = 0;
  for (std::uint32_t high = 0; high <= 0xFFFFu; ++high)
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xC000u, 0xFFFFu}) {
      const std::uint32_t u = (high << 16) | low;
      const std::uint16_t got = hcomm::to_bf16_bits_from_f32(u);
      if (got != ref_carry(u)) FAIL("float32 pattern " << std::hex << u << ": " << got << " vs carry " << ref_carry(u));
      const float x = from<float>(u);
      if (std::isfinite(x) && got != ref_search(double(x)))
        FAIL("float32 pattern " << std::hex << u << ": " << got << " vs search " << ref_search(double(x)));
      ++checked;
    }
  for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4099) {
    const auto u32 = static_cast<std::uint32_t>(u);
    if (hcomm::to_bf16_bits(from<float>(u32)) != ref_carry(u32)) FAIL("float32 pattern " << std::hex << u32);
    ++checked;
  }
  CHECK(checked > 1000000);
}

TEST_CASE("bfloat16: float64 rounds once, matching the search reference", "[bf16][core]") {
  std::mt19937_64 g(2024);
  std::size_t checked = 0;
  auto check = [&](double x) {
    const std::uint16_t got = hcomm::to_bf16_bits(x);
    const std::uint16_t want = ref_search(x);
    if (got != want) FAIL("float64 " << x << " (" << std::hex << bits<std::uint64_t>(x) << "): " << got << " vs " << want);
    ++checked;
  };
  // random values over bfloat16's whole range and a little beyond, both signs
  for (int i = 0; i < 400000; ++i) {
    const int e = static_cast<int>(g() % 290) - 150;  // 2^-150 .. 2^139
    const std::uint64_t mant = g() & 0xFFFFFFFFFFFFFull;
    double x = std::ldexp(1.0 + double(mant) * std::ldexp(1.0, -52), e);
    if (g() & 1) x = -x;
    check(x);
  }
  // every midpoint between neighbours (and one float64 ulp either side): the ties
  for (std::uint32_t h = 0; h < 0x7F80u; ++h) {
    const double mid = (bf16_value(h) + bf16_value(h + 1)) / 2;  // exact
    for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e300)}) {
      check(x);
      check(-x);
    }
  }
  CHECK(checked > 500000);
}

TEST_CASE("bfloat16: widening is exact and narrowing it back is the identity", "[bf16][core]") {
  for (std::uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    const float f = hcomm::bf16_bits_to_float(b);
    const double d = hcomm::bf16_bits_to_double(b);
    const bool nan = (h & 0x7FFFu) > 0x7F80u;
    if (!nan && bits<std::uint64_t>(d) != bits<std::uint64_t>(double(f))) FAIL("widening " << std::hex << h);
    if (nan && !(std::isnan(f) && std::isnan(d))) FAIL("NaN widening " << std::hex << h);
    const std::uint16_t back = nan ? static_cast<std::uint16_t>(h | 0x40u) : b;  // NaN comes back quiet
    if (hcomm::to_bf16_bits(f) != back || hcomm::to_bf16_bits(d) != back) FAIL("round trip " << std::hex << h);
  }
}

TEMPLATE_TEST_CASE("bf16 codec: the values' bfloat16, 2 bytes each, on two executors", "[bf16][codec]", float,
                   double) {
  using T = TestType;
  const auto c = hc::parse_config("bf16", hcomm::dtype_of<T>);
  CHECK(c == hc::config{codec_id::bf16, hcomm::dtype_of<T>, 0, true});
  CHECK(hc::to_string(c) == "bf16");
  CHECK(hc::is_lossy(c));
  expect_error([] { hc::parse_config("bf16:1"); }, errc::invalid_argument, "bf16 takes no parameter");
  std::vector<T> x = gradients<T>(5003, 1);
  x[3] = std::numeric_limits<T>::quiet_NaN();
  x[4] = -std::numeric_limits<T>::infinity();
  x[5] = std::numeric_limits<T>::max();  // rounds to Inf, as the IEEE conversion does
  x[6] = std::numeric_limits<T>::denorm_min();
  hc::engine<> eng;
  const auto frame = eng.compress(c, std::span<const T>(x));
  CHECK(frame.size() == hc::header_bytes + 2 * x.size());
  CHECK(hc::max_payload_bytes(c, x.size()) == 2 * x.size());
  CHECK(hc::min_payload_bytes(c, x.size()) == 2 * x.size());
  std::vector<T> y(x.size());
  eng.decompress(std::span<const std::byte>(frame), std::span<T>(y));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const T want = hcomm::from_bf16_bits<T>(hcomm::to_bf16_bits(x[i]));
    if (std::memcmp(&want, &y[i], sizeof(T)) != 0) FAIL("value " << i << ": " << x[i] << " -> " << y[i]);
    if (std::isfinite(x[i]) && std::fabs(x[i]) < 1e38 && std::fabs(x[i]) > 1e-37 &&
        std::fabs(double(y[i]) - double(x[i])) > std::fabs(double(x[i])) * std::ldexp(1.0, -8))
      FAIL("value " << i << " off by more than 2^-8 relative");
  }
  CHECK(std::isnan(y[3]));
  CHECK(y[4] == -std::numeric_limits<T>::infinity());
  CHECK(y[5] == std::numeric_limits<T>::infinity());
  CHECK(y[6] == T(0));

  hc::engine<hcomm::exec::host_check> chk;
  std::vector<std::byte> out(hc::max_frame_bytes(c, x.size()));
  const std::size_t used = chk.compress(c, x.data(), x.size(), out.data(), out.size());
  REQUIRE(used == frame.size());
  CHECK(std::memcmp(out.data(), frame.data(), used) == 0);
  std::vector<T> z(x.size());
  chk.decompress(out.data(), used, z.data(), z.size(), hcomm::dtype_of<T>);
  CHECK(std::memcmp(z.data(), y.data(), y.size() * sizeof(T)) == 0);
}

TEST_CASE("int8 codec: parameter, default and sizes through the traits", "[int8][codec]") {
  const auto d = hc::parse_config("int8");
  CHECK(d == hc::config{codec_id::int8, dtype::f32, 256, true});
  CHECK(hc::to_string(d) == "int8:256");
  CHECK(hc::parse_config("int8:64", dtype::f64).param == 64);
  for (const char* bad : {"int8:0", "int8:4", "int8:7", "int8:100", "int8:999"})
    expect_error([&] { hc::parse_config(bad); }, errc::invalid_argument, "int8 takes a block of B = 8, 16");
  expect_error([] { hc::parse_config("int8:1024"); }, errc::invalid_argument, "bad codec parameter");
  using C = hc::int8_codec<float>;
  using D = hc::int8_codec<double>;
  // n values in blocks of B: ceil(n/B) scales, n bytes, the u64 count
  CHECK(C::min_payload_bytes(1000, 256) == 4 * 4 + 1000 + 8);
  CHECK(D::min_payload_bytes(1000, 256) == 4 * 8 + 1000 + 8);
  CHECK(C::min_payload_bytes(0, 8) == 8);
  CHECK(C::max_payload_bytes(1000, 256) == 4 * 4 + 1000 + 8 + 1000 * 8);
  CHECK(D::max_payload_bytes(1000, 256) == 4 * 8 + 1000 + 8 + 1000 * 12);
  CHECK(C::typical_payload_bytes(1024, 256) == 4 * 4 + 1024 + 8 + 4 * 8);
  CHECK(hc::max_payload_bytes(d, 1000) == C::max_payload_bytes(1000, 256));
  // a slot of the ring holds the typical frame, not the bound
  CHECK(hc::slot_bytes(d, 262144) < hc::max_frame_bytes(d, 262144) / 4);
  CHECK(C::max_payload_bytes(std::numeric_limits<std::size_t>::max() / 4, 256) ==
        std::numeric_limits<std::size_t>::max());
}

TEMPLATE_TEST_CASE("int8 codec: error within half a scale, non-finite values exact, two executors", "[int8][codec]",
                   float, double) {
  using T = TestType;
  using L = std::numeric_limits<T>;
  for (unsigned B : {8u, 64u, 256u, 512u}) {
    const auto c = hc::parse_config("int8:" + std::to_string(B), hcomm::dtype_of<T>);
    std::vector<T> x = gradients<T>(6 * 512 + 77, B);  // six blocks of specials even at B = 512
    // a block with NaN/Inf among ordinary values, one at the type's maximum, one of zeros,
    // one of subnormals, one whose largest value is a NaN neighbour
    const T specials[] = {L::quiet_NaN(), L::infinity(), -L::infinity(), -L::quiet_NaN()};
    for (std::size_t i = 0; i < 4; ++i) x[B + i] = specials[i];
    for (std::size_t i = 0; i < B; ++i) x[2 * B + i] = i % 3 == 0 ? L::max() : (i % 3 == 1 ? -L::max() / 3 : T(1));
    for (std::size_t i = 0; i < B; ++i) x[3 * B + i] = T(0);
    for (std::size_t i = 0; i < B; ++i) x[4 * B + i] = L::denorm_min() * T(double(i % 50) - 20);
    for (std::size_t i = 0; i < B; ++i) x[5 * B + i] = L::min() * T(double(i % 7) + 1) / T(4);  // subnormal scale
    const std::size_t n = x.size();
    hc::engine<> eng;
    const auto frame = eng.compress(c, std::span<const T>(x));
    const std::size_t nb = (n + B - 1) / B;
    CHECK(frame.size() == hc::header_bytes + nb * sizeof(T) + n + 8 + 4 * (4 + sizeof(T)));
    std::vector<T> y(n);
    eng.decompress(std::span<const std::byte>(frame), std::span<T>(y));
    for (std::size_t b = 0; b < nb; ++b) {
      const std::size_t i0 = b * B, i1 = std::min(n, i0 + B);
      double m = 0;
      for (std::size_t i = i0; i < i1; ++i)
        if (std::isfinite(x[i])) m = std::max(m, std::fabs(double(x[i])));
      // half the scale, the rounding of the scale and of q*s, and the subnormal floor
      const double tol = m / 254 * (1 + 1e-4) + 2 * double(L::denorm_min());
      for (std::size_t i = i0; i < i1; ++i) {
        INFO("B=" << B << " i=" << i << " x=" << x[i] << " y=" << y[i] << " m=" << m);
        if (!std::isfinite(x[i])) {
          if (std::memcmp(&x[i], &y[i], sizeof(T)) != 0) FAIL("non-finite value not restored exactly");
          continue;
        }
        if (!std::isfinite(y[i]) || std::fabs(double(y[i])) > m) FAIL("decoded beyond the block's largest magnitude");
        if (std::fabs(double(x[i]) - double(y[i])) > tol) FAIL("error above half a scale");
      }
    }
    // blocks of zeros and of multiples of the smallest subnormal come back exactly
    CHECK(std::memcmp(&x[3 * B], &y[3 * B], B * sizeof(T)) == 0);
    CHECK(std::memcmp(&x[4 * B], &y[4 * B], B * sizeof(T)) == 0);

    hc::engine<hcomm::exec::host_check> chk;
    std::vector<std::byte> out(hc::max_frame_bytes(c, n));
    const std::size_t used = chk.compress(c, x.data(), n, out.data(), out.size());
    REQUIRE(used == frame.size());
    CHECK(std::memcmp(out.data(), frame.data(), used) == 0);
    std::vector<T> z(n);
    chk.decompress(out.data(), used, z.data(), n, hcomm::dtype_of<T>);
    CHECK(std::memcmp(z.data(), y.data(), n * sizeof(T)) == 0);
    hc::engine<> two{hcomm::exec::host{2}};
    CHECK(two.compress(c, std::span<const T>(x)) == frame);
  }
}

TEST_CASE("int8 codec: a scale of 1 shows the rounding, ties to even", "[int8][codec]") {
  // largest |x| = 127: the scale is exactly 1 and the bytes are x rounded
  const std::vector<float> x = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, -3.5f, 0.49f, 126.5f, -127.0f, 3.25f, 3.75f};
  const auto c = hc::parse_config("int8:8");
  hc::engine<> eng;
  const auto frame = eng.compress(c, std::span<const float>(x));
  std::vector<float> y(x.size());
  eng.decompress(std::span<const std::byte>(frame), std::span<float>(y));
  const std::vector<float> want = {127, 0, 2, 2, -0.0f, -2, -4, 0, 126, -127};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(y[i] == want[i]);
  // the second block's largest is -127 too: 3.25 -> 3, 3.75 -> 4
  CHECK(y[10] == 3.0f);
  CHECK(y[11] == 4.0f);
}

TEST_CASE("int8 codec: damaged payloads are refused before anything is written", "[int8][codec]") {
  const std::size_t n = 1000;
  std::vector<float> x = gradients<float>(n, 9);
  x[17] = std::numeric_limits<float>::quiet_NaN();
  const auto c = hc::parse_config("int8:64", dtype::f32, /*checksum=*/false);  // so damage reaches decode
  hc::engine<> eng;
  const auto good = eng.compress(c, std::span<const float>(x));
  const std::size_t scales = hc::header_bytes, q = scales + 16 * 4, count = q + n;
  auto refused = [&](auto&& edit, const std::string& needle) {
    auto f = good;
    edit(f);
    std::vector<float> keep(n, 7.0f);
    expect_error([&] { eng.decompress(std::span<const std::byte>(f), std::span<float>(keep)); }, errc::corrupt_frame,
                 needle);
    CHECK(std::all_of(keep.begin(), keep.end(), [](float v) { return v == 7.0f; }));
  };
  auto put_float = [](std::vector<std::byte>& f, std::size_t at, float v) { std::memcpy(f.data() + at, &v, 4); };
  refused([&](auto& f) { put_float(f, scales + 4 * 3, std::numeric_limits<float>::quiet_NaN()); }, "scale");
  refused([&](auto& f) { put_float(f, scales + 4 * 15, std::numeric_limits<float>::infinity()); }, "scale");
  refused([&](auto& f) { put_float(f, scales, -1e-3f); }, "scale");
  refused([&](auto& f) { f[q + 999] = std::byte{0x80}; }, "byte -128");
  refused([&](auto& f) { f[count] = std::byte{2}; }, "non-finite entries need");
  refused([&](auto& f) { f[count + 7] = std::byte{1}; }, "non-finite values of");
  refused([&](auto& f) { f[count + 8] = std::byte{0xE8}; f[count + 9] = std::byte{0x03}; }, "malformed");  // index 1000
  refused([&](auto& f) { f[count + 8 + 4 + 3] = std::byte{0}; }, "malformed");  // finite pattern
  // a payload of another size than n and B give: the header's payload size is edited too
  // (the frame checks bound it first; the codec's own check is the last line)
  using C = hc::int8_codec<float>;
  std::vector<float> out(n);
  std::vector<std::byte> ws(C::workspace_bytes(n, 64));
  expect_error([&] { C::decode(hcomm::exec::host{}, good.data() + hc::header_bytes, good.size() - hc::header_bytes - 1,
                               n, 64, out.data(), ws.data()); },
               errc::corrupt_frame, "non-finite entries need");
  expect_error([&] { C::decode(hcomm::exec::host{}, good.data() + hc::header_bytes, 100, n, 64, out.data(), ws.data()); },
               errc::corrupt_frame, "need at least");
  expect_error([&] { C::decode(hcomm::exec::host{}, good.data() + hc::header_bytes, good.size() - hc::header_bytes, n,
                               48, out.data(), ws.data()); },
               errc::corrupt_frame, "int8 block 48");
}
