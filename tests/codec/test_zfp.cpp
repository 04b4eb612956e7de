// Tests of hcomm's own ZFP fixed-rate codec against libzfp 1.0 (the oracle): stream bytes and
// decoded values identical, NaN/±Inf side list, engine round trips, hostile frames.
#include <zfp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "hcomm/codec/codec.hpp"
#include "hcomm/codec/zfp.hpp"
#include "hcomm/exec/host.hpp"

namespace {

using hcomm::codec::zfp_codec;

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
  INFO("first differing byte " << first_diff << " of " << ref.size() << " (block ~" << first_diff * 8 / 1 << " bits)");
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

template <class T>
void bit_exact_sweep() {
  for (std::size_t n : sizes)
    for (kind k : all_kinds)
      for (unsigned rate : rates) {
        INFO(name(k) << " n=" << n << " rate=" << rate << " " << (sizeof(T) == 4 ? "f32" : "f64"));
        const auto x = make_data<T>(k, n, 1234 + n * 7 + static_cast<unsigned>(k));
        const auto ours = our_encode(x, rate);
        REQUIRE(ours.payload.size() == ours.stream_bytes + 8);  // no non-finite values
        check_stream_equal(ours, oracle_compress(x, rate));
        const auto dec = our_decode<T>(ours.payload, n, rate);
        const auto ref = oracle_decompress<T>(reinterpret_cast<const unsigned char*>(ours.payload.data()),
                                              ours.stream_bytes, n, rate);
        REQUIRE(same_bits(dec, ref));
      }
}

}  // namespace

TEST_CASE("zfp f32 stream and decode are libzfp's, bit for bit", "[zfp]") { bit_exact_sweep<float>(); }
TEST_CASE("zfp f64 stream and decode are libzfp's, bit for bit", "[zfp]") { bit_exact_sweep<double>(); }

TEST_CASE("zfp every rate 3..64 matches libzfp on mixed data", "[zfp]") {
  for (unsigned rate = 3; rate <= 64; ++rate) {
    INFO("rate " << rate);
    const auto xf = make_data<float>(kind::noise, 4099, rate);
    const auto of = our_encode(xf, rate);
    check_stream_equal(of, oracle_compress(xf, rate));
    REQUIRE(same_bits(our_decode<float>(of.payload, xf.size(), rate),
                      oracle_decompress<float>(reinterpret_cast<const unsigned char*>(of.payload.data()),
                                               of.stream_bytes, xf.size(), rate)));
    const auto xd = make_data<double>(kind::smooth, 4099, rate);
    const auto od = our_encode(xd, rate);
    check_stream_equal(od, oracle_compress(xd, rate));
    REQUIRE(same_bits(our_decode<double>(od.payload, xd.size(), rate),
                      oracle_decompress<double>(reinterpret_cast<const unsigned char*>(od.payload.data()),
                                                od.stream_bytes, xd.size(), rate)));
  }
}
