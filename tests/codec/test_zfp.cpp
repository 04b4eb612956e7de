// Tests of hcomm's own ZFP fixed-rate codec against libzfp 1.0 (the oracle): stream bytes and
// decoded values identical, NaN/±Inf side list, engine round trips, hostile frames.
#include <zfp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "hcomm/codec/codec.hpp"
#include "hcomm/codec/zfp.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "hcomm/exec/host.hpp"

namespace {

using hcomm::codec::zfp_codec;

// "zfp:RATE" (appended, not "literal" + string: GCC 12 -O3 warns falsely on that, PR105329).
std::string zfp_spec(unsigned rate) {
  std::string s = "zfp:";
  s += std::to_string(rate);
  return s;
}

template <class T>
constexpr zfp_type zfp_type_of = std::is_same_v<T, float> ? zfp_type_float : zfp_type_double;

// libzfp fixed-rate 1-D compression of n values: the raw stream (no header).
template <class T>
std::vector<unsigned char> oracle_compress(const std::vector<T>& x, unsigned rate) {
  if (x.empty()) return {};
  zfp_field* f = zfp_field_1d(const_cast<T*>(x.data()), zfp_type_of<T>, x.size());
  zfp_stream* z = zfp_stream_open(nullptr);
  zfp_stream_set_rate(z, rate, zfp_type_of<T>, 1, zfp_false);
  std::vector<unsigned char> buf(zfp_stream_maximum_size(z, f) + 64);
  bitstream* s = stream_open(buf.data(), buf.size());
  zfp_stream_set_bit_stream(z, s);
  zfp_stream_rewind(z);
  const size_t bytes = zfp_compress(z, f);
  REQUIRE(bytes > 0);
  buf.resize(bytes);
  stream_close(s);
  zfp_stream_close(z);
  zfp_field_free(f);
  return buf;
}

// libzfp decompression of our stream (prefix of the payload).
template <class T>
std::vector<T> oracle_decompress(const unsigned char* stream, std::size_t bytes, std::size_t n, unsigned rate) {
  std::vector<T> out(n);
  if (n == 0) return out;
  std::vector<unsigned char> copy(stream, stream + bytes);
  copy.resize(copy.size() + 64, 0);
  zfp_field* f = zfp_field_1d(out.data(), zfp_type_of<T>, n);
  zfp_stream* z = zfp_stream_open(nullptr);
  zfp_stream_set_rate(z, rate, zfp_type_of<T>, 1, zfp_false);
  bitstream* s = stream_open(copy.data(), copy.size());
  zfp_stream_set_bit_stream(z, s);
  zfp_stream_rewind(z);
  REQUIRE(zfp_decompress(z, f) > 0);
  stream_close(s);
  zfp_stream_close(z);
  zfp_field_free(f);
  return out;
}

template <class T>
struct encoded {
  std::vector<std::byte> payload;
  std::size_t stream_bytes = 0;
};

template <class T>
encoded<T> our_encode(const std::vector<T>& x, unsigned rate, hcomm::exec::host ex = {}) {
  using C = zfp_codec<T>;
  encoded<T> r;
  r.payload.resize(C::max_payload_bytes(x.size(), rate));
  std::vector<std::byte> ws(C::workspace_bytes(x.size(), rate) + 8);
  std::uint64_t bytes = 0;
  C::encode(ex, x.data(), x.size(), rate, r.payload.data(), &bytes, ws.data());
  r.payload.resize(bytes);
  r.stream_bytes = C::stream_bytes(x.size(), rate);
  return r;
}

template <class T>
std::vector<T> our_decode(const std::vector<std::byte>& p, std::size_t n, unsigned rate) {
  using C = zfp_codec<T>;
  std::vector<T> out(n);
  std::vector<std::byte> ws(C::workspace_bytes(n, rate) + 8);
  C::decode(hcomm::exec::host{}, p.data(), p.size(), n, rate, out.data(), ws.data());
  return out;
}

template <class T>
auto bits_of(T v) {
  return std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(v);
}

enum class kind { zeros, constant, smooth, noise, denormal, signed_zero, extreme, tiny_mixed };
const kind all_kinds[] = {kind::zeros,    kind::constant,    kind::smooth,  kind::noise,
                          kind::denormal, kind::signed_zero, kind::extreme, kind::tiny_mixed};
const char* name(kind k) {
  switch (k) {
    case kind::zeros: return "zeros";
    case kind::constant: return "constant";
    case kind::smooth: return "smooth";
    case kind::noise: return "noise";
    case kind::denormal: return "denormal";
    case kind::signed_zero: return "signed_zero";
    case kind::extreme: return "extreme";
    case kind::tiny_mixed: return "tiny_mixed";
  }
  return "?";
}

template <class T>
std::vector<T> make_data(kind k, std::size_t n, std::uint64_t seed) {
  using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (k) {
      case kind::zeros: x[i] = T(0); break;
      case kind::constant: x[i] = T(3.25); break;
      case kind::smooth: {
        const double t = static_cast<double>(i) / 97.0;
        x[i] = static_cast<T>(std::sin(t) * 100.0 + std::cos(3.1 * t) * 7.0 + 0.001 * t);
        break;
      }
      case kind::noise: x[i] = static_cast<T>(gauss(rng) * 1e-3 + (i % 7 == 0 ? 2e-3 : 0.0)); break;
      case kind::denormal: {
        U b = static_cast<U>(rng()) & (sizeof(T) == 4 ? U(0x007fffff) : U(0x000fffffffffffffull));
        if (rng() & 1) b |= U(1) << (sizeof(T) * 8 - 1);
        x[i] = std::bit_cast<T>(b);
        break;
      }
      case kind::signed_zero: {
        const unsigned r = static_cast<unsigned>(rng() % 4);
        x[i] = r == 0 ? T(0) : r == 1 ? -T(0) : r == 2 ? T(1.5) * T(i % 5) : -T(0.25);
        break;
      }
      case kind::extreme: {
        // Any finite pattern: exponents over the whole range, including the largest.
        U b;
        do b = static_cast<U>(rng()); while (hcomm::codec::zfp_detail::is_nonfinite_bits<T>(b));
        x[i] = std::bit_cast<T>(b);
        break;
      }
      case kind::tiny_mixed: {
        // Blocks near libzfp's scale overflow threshold and near the top of the range.
        const int emin = std::numeric_limits<T>::min_exponent, emax = std::numeric_limits<T>::max_exponent;
        const int e = static_cast<int>(rng() % 6) == 0 ? emax - 1 - static_cast<int>(rng() % 3)
                                                       : emin + static_cast<int>(rng() % 80);
        x[i] = static_cast<T>(std::ldexp(gauss(rng), e));
        if (!std::isfinite(x[i])) x[i] = std::numeric_limits<T>::max();
        break;
      }
    }
  }
  return x;
}

// Our stream must be libzfp's, followed by zero padding to a whole 64-bit word.
template <class T>
void check_stream_equal(const encoded<T>& ours, const std::vector<unsigned char>& ref) {
  REQUIRE(ours.stream_bytes >= ref.size());
  REQUIRE(ours.stream_bytes - ref.size() < 8);
  const auto* p = reinterpret_cast<const unsigned char*>(ours.payload.data());
  std::size_t first_diff = ref.size();
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (p[i] != ref[i]) { first_diff = i; break; }
  INFO("first differing byte " << first_diff << " of " << ref.size());
  REQUIRE(first_diff == ref.size());
  for (std::size_t i = ref.size(); i < ours.stream_bytes; ++i) REQUIRE(p[i] == 0);
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

const std::size_t sizes[] = {0, 1, 3, 4, 5, 31, 32, 33, 1023, 1024, 1025, (std::size_t{1} << 20) + 7};
const unsigned rates[] = {3, 4, 8, 12, 16, 24, 32};

// Our stream for x at rate is libzfp's, and our decoding of it is libzfp's, bit for bit.
// Returns our encoding for further checks.
template <class T>
encoded<T> check_like_libzfp(const std::vector<T>& x, unsigned rate) {
  auto ours = our_encode(x, rate);
  check_stream_equal(ours, oracle_compress(x, rate));
  REQUIRE(same_bits(our_decode<T>(ours.payload, x.size(), rate),
                    oracle_decompress<T>(reinterpret_cast<const unsigned char*>(ours.payload.data()),
                                         ours.stream_bytes, x.size(), rate)));
  return ours;
}

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

}  // namespace

// tests/codec/extra.cmake runs this case and the libzfp comparisons again with
// HCOMM_FORCE_PORTABLE=1: then the group kernels must take their portable bodies.
TEST_CASE("zfp group kernels take the portable path when forced", "[zfp]") {
  namespace zd = hcomm::codec::zfp_detail;
  const char* env = std::getenv("HCOMM_FORCE_PORTABLE");
  const bool forced = env != nullptr && env[0] == '1';
  INFO("HCOMM_FORCE_PORTABLE=" << (env ? env : "(unset)") << ", AVX2 tier "
                               << hcomm::cpu::host_features().avx2_tier());
  // The group kernels have AVX2 variants wherever they are built, and the dispatch skips
  // them exactly when the override is on (or the CPU lacks the tier).
  CHECK(hcomm::cpu::avx2_variant<zd::encode_group_kernel<float>>::available == bool(HCOMM_X86_VARIANTS));
  CHECK(hcomm::cpu::avx2_variant<zd::decode_group_kernel<float>>::available == bool(HCOMM_X86_VARIANTS));
  CHECK(hcomm::cpu::portable_forced() == forced);
  CHECK(hcomm::cpu::use_avx2() == (!forced && hcomm::cpu::host_features().avx2_tier()));
}

TEST_CASE("zfp f32 stream and decode are libzfp's, bit for bit", "[zfp]") { bit_exact_sweep<float>(); }
TEST_CASE("zfp f64 stream and decode are libzfp's, bit for bit", "[zfp]") { bit_exact_sweep<double>(); }

TEST_CASE("zfp every rate 3..64 matches libzfp on mixed data", "[zfp]") {
  for (unsigned rate = 3; rate <= 64; ++rate) {
    INFO("rate " << rate);
    check_like_libzfp(make_data<float>(kind::noise, 4099, rate), rate);
    check_like_libzfp(make_data<double>(kind::smooth, 4099, rate), rate);
  }
}

// ---- accuracy --------------------------------------------------------------------------------
// Bound per block, with 2^emax the power of two just above the block's largest |v|:
//   |err| <= 2^emax * max(2^(5 - R), 2^(6 - P))       for R >= 8   (P = 32 f32, 64 f64)
//   |err| <= 2^(emax + 3)                              for R < 8
// Why: after the 9 (f32) / 12 (f64) header bits the budget is 4R - 9 (4R - 12) bits; once all
// four coefficients are significant each bit plane costs 4 bits and the planes before that cost
// less, so at least about R - 3 planes below the block exponent are coded: coefficients are
// exact to 2^(emax - R + 3); the inverse lifting's rows have gain below 4 (2 more bits). The
// floor is the precision of the P-bit block-floating-point integers (30 resp. 62 bits, minus
// what the lifting's shifts drop). At R < 8 the budget is only 3..23 bits: only the size of
// the error is bounded. Measured on this smooth field the worst is 2^(emax - R + 3.9).
template <class T>
void check_error_bound(unsigned rate) {
  const std::size_t n = 100003;
  const auto x = make_data<T>(kind::smooth, n, 7);
  const auto y = our_decode<T>(our_encode(x, rate).payload, n, rate);
  constexpr int P = sizeof(T) * 8;
  for (std::size_t b = 0; b < n; b += 4) {
    double m = 0;
    const std::size_t e = std::min(n, b + 4);
    for (std::size_t i = b; i < e; ++i) m = std::max(m, std::fabs(static_cast<double>(x[i])));
    int emax = 0;
    std::frexp(m, &emax);
    const double bound = rate >= 8 ? std::ldexp(1.0, emax) * std::max(std::ldexp(1.0, 5 - static_cast<int>(rate)),
                                                                        std::ldexp(1.0, 6 - P))
                                   : std::ldexp(1.0, emax + 3);
    for (std::size_t i = b; i < e; ++i) {
      const double err = std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i]));
      if (!(err <= bound)) {
        INFO("rate " << rate << " index " << i << " x=" << x[i] << " y=" << y[i] << " bound " << bound);
        REQUIRE(err <= bound);
      }
    }
  }
}

TEST_CASE("zfp error on smooth data is within what the rate implies", "[zfp]") {
  for (unsigned rate : {3u, 4u, 8u, 12u, 16u, 24u, 32u, 48u, 64u}) {
    check_error_bound<float>(rate);
    check_error_bound<double>(rate);
  }
  // And the bound is not vacuous: rate 16 on this field is far better than rate 8.
  const auto x = make_data<float>(kind::smooth, 4096, 1);
  auto rmse = [&](unsigned r) {
    const auto y = our_decode<float>(our_encode(x, r).payload, x.size(), r);
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) s += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    return std::sqrt(s / x.size());
  };
  REQUIRE(rmse(16) < rmse(8) / 100);
}

// ---- NaN and ±Inf --------------------------------------------------------------------------
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

TEST_CASE("zfp output does not depend on the thread count", "[zfp]") {
  const auto x = make_data<float>(kind::noise, 300007, 3);
  auto y = x;
  y[5] = std::numeric_limits<float>::infinity();
  y[300000] = std::numeric_limits<float>::quiet_NaN();
  for (const std::vector<float>* v : {&x, const_cast<const std::vector<float>*>(&y)}) {
    const auto a = our_encode(*v, 8, hcomm::exec::host{1});
    const auto b = our_encode(*v, 8, hcomm::exec::host{2});
    const auto c = our_encode(*v, 8, hcomm::exec::host{7});
    REQUIRE(a.payload == b.payload);
    REQUIRE(a.payload == c.payload);
  }
}

// ---- through the engine ----------------------------------------------------------------------
template <class T>
void engine_round_trip(std::size_t n, unsigned rate, bool checksum) {
  hcomm::codec::engine<> eng;
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

TEST_CASE("zfp round trips through the engine", "[zfp]") {
  for (std::size_t n : sizes)
    for (unsigned rate : {3u, 8u, 16u, 32u}) {
      INFO("n=" << n << " rate=" << rate);
      engine_round_trip<float>(n, rate, true);
      engine_round_trip<double>(n, rate, false);
    }
}

// ---- hostile input -------------------------------------------------------------------------
template <class T>
std::vector<std::byte> frame_of(const std::vector<T>& x, unsigned rate, bool checksum) {
  hcomm::codec::engine<> eng;
  return eng.compress(hcomm::codec::parse_config(zfp_spec(rate), hcomm::dtype_of<T>, checksum),
                      std::span<const T>(x));
}

template <class T>
void hostile_frames(std::size_t n, unsigned rate) {
  auto x = make_data<T>(kind::noise, n, 11);
  for (std::size_t i = 3; i < n; i += 17) x[i] = (i & 1) ? std::numeric_limits<T>::infinity()
                                                         : std::numeric_limits<T>::quiet_NaN();
  const auto frame = frame_of(x, rate, false);
  hcomm::codec::engine<> eng;
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

TEST_CASE("zfp rejects truncated and corrupted frames without crashing", "[zfp]") {
  for (unsigned rate : {3u, 8u, 16u, 64u}) {
    hostile_frames<float>(101, rate);
    hostile_frames<double>(67, rate);
  }
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
      C::decode(hcomm::exec::host{}, p.data(), p.size(), n, rate, out.data(), ws.data());
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
    REQUIRE_THROWS_AS(D::decode(hcomm::exec::host{}, p.data(), p.size(), 3, 4, out.data(), ws.data()), hcomm::error);
  }
  {  // a valid payload decodes
    std::vector<float> out(n);
    std::vector<std::byte> ws(C::workspace_bytes(n, rate));
    C::decode(hcomm::exec::host{}, good.data(), good.size(), n, rate, out.data(), ws.data());
    REQUIRE(std::isnan(out[10]));
    REQUIRE(out[20] == -std::numeric_limits<float>::infinity());
    REQUIRE(out[0] == 2.0f);
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

TEST_CASE("zfp decodes arbitrary stream bits exactly as libzfp does", "[zfp]") {
  for (unsigned rate = 3; rate <= 64; rate += (rate < 20 ? 1 : 7))
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      random_stream_decodes_like_libzfp<float>(rate, seed);
      random_stream_decodes_like_libzfp<double>(rate, seed + 100);
    }
}
