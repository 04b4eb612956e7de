// The codecs on bf16 and f16 (codec/mpc.hpp, codec/zfp.hpp, codec/none.hpp): MPC lossless on
// every data kind, size and stride; ZFP's stream is libzfp's float32 fixed-rate stream of the
// widened values and its decoded values are libzfp's decoded floats rounded to nearest even;
// every executor path (host at 1..3 threads, portable and AVX2 bodies, host-check running
// the team kernels) writes the same frames; frames of another dtype and codecs that do not
// take 16-bit values are refused. (Truncated, flipped and edited 16-bit frames: test_frame.cpp.)
#include <catch2/catch.hpp>

#include <zfp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "hcomm/codec/codec.hpp"
#include "hcomm/codec/registry.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "hcomm/exec/host_check.hpp"

namespace {

namespace hc = hcomm::codec;
using hcomm::bf16;
using hcomm::dtype;
using hcomm::errc;
using hcomm::f16;
using bytes = std::vector<unsigned char>;

enum class kind { smooth, noise, specials, random_bits, zeros, steps };
constexpr kind all_kinds[] = {kind::smooth, kind::noise, kind::specials, kind::random_bits, kind::zeros, kind::steps};
constexpr kind finite_kinds[] = {kind::smooth, kind::noise, kind::zeros, kind::steps};

template <class H>
std::vector<H> make_data(kind k, std::size_t n, std::uint64_t seed) {
  constexpr bool b = std::is_same_v<H, bf16>;
  std::mt19937_64 g(seed * 1000003u + n * 7u + static_cast<unsigned>(k));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<H> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float x = static_cast<float>(i);
    switch (k) {
      case kind::smooth: v[i] = H(3.0f * std::sin(0.011f * x) + 0.5f * std::cos(0.0023f * x) + 1e-3f * nd(g)); break;
      case kind::noise: v[i] = H(0.02f * nd(g)); break;
      case kind::specials:
      case kind::random_bits: v[i] = H::from_bits(static_cast<std::uint16_t>(g())); break;
      case kind::zeros: v[i] = H(0.0f); break;
      case kind::steps: v[i] = H(static_cast<float>((i / 37) % 5) - 2.0f); break;
    }
  }
  if (k == kind::specials) {
    const std::uint16_t sp[] = {b ? 0x7FC0 : 0x7E00, b ? 0x7F81 : 0x7C01, b ? 0x7F80 : 0x7C00, b ? 0xFF80 : 0xFC00,
                                0x0000, 0x8000, 0x0001, 0x8003, b ? 0x7F7F : 0x7BFF, b ? 0xFF7F : 0xFBFF,
                                b ? 0x0080 : 0x0400, b ? 0xFFC1 : 0xFE01};
    for (std::size_t i = 0; i < n; i += 2) v[i] = H::from_bits(sp[(i / 2) % (sizeof sp / sizeof sp[0])]);
  }
  return v;
}

template <class H>
bytes bits_of(const std::vector<H>& v) {
  bytes out(v.size() * 2);
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Compresses on any executor through the pointer interface (executor memory = host memory
// for the host executors and host-check).
template <class Eng, class H>
bytes compress(Eng& eng, const hc::config& c, const std::vector<H>& x) {
  bytes frame(hc::max_frame_bytes(c, x.size()));
  frame.resize(eng.compress(c, x.data(), x.size(), frame.data(), frame.size()));
  return frame;
}
template <class Eng, class H>
std::vector<H> decompress(Eng& eng, const bytes& frame, std::size_t n) {
  std::vector<H> y(n);
  eng.decompress(frame.data(), frame.size(), y.data(), n, hcomm::dtype_of<H>);
  return y;
}

hc::engine<hcomm::exec::host> host_engine(int threads) {
  hcomm::exec::host h;
  h.threads = threads;
  return hc::engine<hcomm::exec::host>(h);
}

const std::size_t sizes[] = {0, 1, 2, 3, 4, 5, 15, 16, 17, 63, 64, 65, 255, 257, 1023, 1024, 1025, 3001, 70001};

// ---- libzfp, the oracle -------------------------------------------------------------------
bytes libzfp_compress(const std::vector<float>& x, unsigned rate) {
  if (x.empty()) return {};
  zfp_field* f = zfp_field_1d(const_cast<float*>(x.data()), zfp_type_float, x.size());
  zfp_stream* z = zfp_stream_open(nullptr);
  zfp_stream_set_rate(z, rate, zfp_type_float, 1, zfp_false);
  bytes buf(zfp_stream_maximum_size(z, f) + 64);
  bitstream* s = stream_open(buf.data(), buf.size());
  zfp_stream_set_bit_stream(z, s);
  zfp_stream_rewind(z);
  const std::size_t used = zfp_compress(z, f);
  REQUIRE(used > 0);
  buf.resize(used);
  stream_close(s);
  zfp_stream_close(z);
  zfp_field_free(f);
  return buf;
}
std::vector<float> libzfp_decompress(const unsigned char* stream, std::size_t bytes_in, std::size_t n, unsigned rate) {
  std::vector<float> out(n);
  if (n == 0) return out;
  bytes copy(stream, stream + bytes_in);
  copy.resize(copy.size() + 64, 0);
  zfp_field* f = zfp_field_1d(out.data(), zfp_type_float, n);
  zfp_stream* z = zfp_stream_open(nullptr);
  zfp_stream_set_rate(z, rate, zfp_type_float, 1, zfp_false);
  bitstream* s = stream_open(copy.data(), copy.size());
  zfp_stream_set_bit_stream(z, s);
  zfp_stream_rewind(z);
  REQUIRE(zfp_decompress(z, f) > 0);
  stream_close(s);
  zfp_stream_close(z);
  zfp_field_free(f);
  return out;
}

template <class H>
std::vector<float> widened(const std::vector<H>& x) {
  std::vector<float> w(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) w[i] = static_cast<float>(x[i]);
  return w;
}

}  // namespace

TEMPLATE_TEST_CASE("codecs 16-bit: MPC round trips bit for bit on every kind, size and stride", "[mpc][16bit]", bf16,
                   f16) {
  auto eng = host_engine(1);
  for (std::size_t n : sizes)
    for (kind k : all_kinds)
      for (unsigned dim : {0u, 1u, 2u, 3u, 7u, 16u, 32u}) {
        const auto x = make_data<TestType>(k, n, 1);
        const hc::config c{hcomm::codec_id::mpc, hcomm::dtype_of<TestType>, dim, true};
        INFO("mpc:" << dim << " n=" << n << " kind=" << static_cast<int>(k));
        const bytes frame = compress(eng, c, x);
        REQUIRE(frame.size() >= hc::header_bytes + 16);
        CHECK(frame[7] == static_cast<unsigned char>(hcomm::dtype_of<TestType>));
        CHECK(frame[hc::header_bytes + 2] == 2);  // bytes per value in the MPC header
        CHECK(bits_of(decompress<decltype(eng), TestType>(eng, frame, n)) == bits_of(x));
        // Smooth and constant data is packed (not the raw fallback) and smaller than raw.
        if (n >= 1024 && (k == kind::smooth || k == kind::zeros || k == kind::steps)) {
          CHECK(frame[hc::header_bytes] == 1);
          CHECK(frame.size() < hc::header_bytes + n * 2);
        }
      }
}

TEMPLATE_TEST_CASE("codecs 16-bit: every executor path writes the host's frames", "[exec][16bit]", bf16, f16) {
  auto ref = host_engine(1);
  auto two = host_engine(2);
  auto three = host_engine(3);
  hc::engine<hcomm::exec::host_check> checked{hcomm::exec::host_check{5}};
  const hc::config configs[] = {
      {hcomm::codec_id::mpc, hcomm::dtype_of<TestType>, 0, true},  {hcomm::codec_id::mpc, hcomm::dtype_of<TestType>, 1, false},
      {hcomm::codec_id::mpc, hcomm::dtype_of<TestType>, 5, true},  {hcomm::codec_id::zfp, hcomm::dtype_of<TestType>, 4, true},
      {hcomm::codec_id::zfp, hcomm::dtype_of<TestType>, 8, false}, {hcomm::codec_id::zfp, hcomm::dtype_of<TestType>, 16, true},
      {hcomm::codec_id::zfp, hcomm::dtype_of<TestType>, 40, true}, {hcomm::codec_id::none, hcomm::dtype_of<TestType>, 0, true}};
  std::size_t compared = 0;
  for (const hc::config& c : configs)
    for (std::size_t n : {0, 1, 5, 17, 1023, 1025, 5000})
      for (kind k : all_kinds) {
        const auto x = make_data<TestType>(k, n, 2);
        INFO(hc::to_string(c) << " n=" << n << " kind=" << static_cast<int>(k));
        const bytes want = compress(ref, c, x);
        const auto decoded = bits_of(decompress<decltype(ref), TestType>(ref, want, n));
        CHECK(compress(two, c, x) == want);
        CHECK(compress(three, c, x) == want);
        CHECK(compress(checked, c, x) == want);
        CHECK(bits_of(decompress<decltype(checked), TestType>(checked, want, n)) == decoded);
        CHECK(bits_of(decompress<decltype(two), TestType>(two, want, n)) == decoded);
        {
          const hcomm::cpu::force_portable portable;
          CHECK(compress(ref, c, x) == want);
          CHECK(bits_of(decompress<decltype(ref), TestType>(ref, want, n)) == decoded);
        }
        ++compared;
      }
  CHECK(compared > 0);
}

TEMPLATE_TEST_CASE("codecs 16-bit: ZFP is libzfp's float32 stream of the widened values, decoded values rounded "
                   "to nearest even",
                   "[zfp][16bit]", bf16, f16) {
  auto eng = host_engine(1);
  std::size_t cases = 0, rounding_mattered = 0;
  for (unsigned rate : {3u, 4u, 5u, 8u, 11u, 12u, 16u, 20u, 24u, 32u, 64u})
    for (std::size_t n : {1, 2, 3, 4, 5, 7, 255, 256, 257, 1001, 4099})
      for (kind k : finite_kinds) {
        const auto x = make_data<TestType>(k, n, rate);
        const hc::config c{hcomm::codec_id::zfp, hcomm::dtype_of<TestType>, rate, true};
        INFO("zfp:" << rate << " n=" << n << " kind=" << static_cast<int>(k));
        const bytes frame = compress(eng, c, x);
        CHECK(frame[7] == static_cast<unsigned char>(hcomm::dtype_of<TestType>));
        // The stream: libzfp's bytes, then zero padding to a whole 64-bit word; the payload
        // ends with a zero count (no non-finite value).
        const bytes ref = libzfp_compress(widened(x), rate);
        const std::size_t sb = hc::zfp_codec<float>::stream_bytes(n, rate);
        REQUIRE(frame.size() == hc::header_bytes + sb + 8);
        REQUIRE(sb >= ref.size());
        const unsigned char* stream = frame.data() + hc::header_bytes;
        CHECK(std::memcmp(stream, ref.data(), ref.size()) == 0);
        for (std::size_t i = ref.size(); i < sb + 8; ++i) CHECK(stream[i] == 0);
        // The values: libzfp's decoding of the stream, rounded to nearest even.
        const std::vector<float> lz = libzfp_decompress(stream, sb, n, rate);
        const auto got = decompress<decltype(eng), TestType>(eng, frame, n);
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) {
          std::uint32_t u;
          std::memcpy(&u, &lz[i], 4);
          const std::uint16_t want = TestType(lz[i]).bits;
          wrong += got[i].bits != want;
          // A codec that truncated instead would differ here.
          const std::uint16_t truncated = std::is_same_v<TestType, bf16>
                                              ? static_cast<std::uint16_t>(u >> 16)
                                              : static_cast<std::uint16_t>(want - (std::fabs(static_cast<float>(TestType::from_bits(want))) > std::fabs(lz[i]) ? 1 : 0));
          rounding_mattered += truncated != want;
        }
        CHECK(wrong == 0);
        ++cases;
      }
  CHECK(cases > 0);
  CHECK(rounding_mattered > 100);
}

TEMPLATE_TEST_CASE("codecs 16-bit: ZFP brings NaN, Inf and their payloads back exactly, finite values in the error "
                   "bound",
                   "[zfp][16bit]", bf16, f16) {
  auto eng = host_engine(1);
  for (std::size_t n : {1, 3, 4, 5, 300, 1025})
    for (unsigned rate : {4u, 8u, 16u}) {
      auto x = make_data<TestType>(kind::smooth, n, 3);
      for (std::size_t i = 0; i < n; i += 7) x[i] = TestType::from_bits(std::is_same_v<TestType, bf16> ? 0xFF81 : 0xFC01);
      for (std::size_t i = 3; i < n; i += 11) x[i] = TestType::from_bits(std::is_same_v<TestType, bf16> ? 0x7F80 : 0x7C00);
      const hc::config c{hcomm::codec_id::zfp, hcomm::dtype_of<TestType>, rate, true};
      INFO("zfp:" << rate << " n=" << n);
      const bytes frame = compress(eng, c, x);
      const auto y = decompress<decltype(eng), TestType>(eng, frame, n);
      std::size_t nonfinite = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const float a = static_cast<float>(x[i]), b = static_cast<float>(y[i]);
        if (!std::isfinite(a)) {
          ++nonfinite;
          CHECK(y[i].bits == x[i].bits);
        } else {
          CHECK(std::isfinite(b));
          CHECK(std::fabs(a - b) <= (rate >= 8 ? 0.5f : 4.0f));
        }
      }
      // The side list holds 4-byte indices and the 16-bit patterns.
      CHECK(frame.size() == hc::header_bytes + hc::zfp_codec<float>::stream_bytes(n, rate) + 8 + nonfinite * 6);
    }
}

TEMPLATE_TEST_CASE("codecs 16-bit: none is the raw values", "[none][16bit]", bf16, f16) {
  auto eng = host_engine(1);
  for (std::size_t n : {0, 1, 1001}) {
    const auto x = make_data<TestType>(kind::random_bits, n, 4);
    const hc::config c{hcomm::codec_id::none, hcomm::dtype_of<TestType>, 0, true};
    const bytes frame = compress(eng, c, x);
    REQUIRE(frame.size() == hc::header_bytes + 2 * n);
    CHECK(bytes(frame.begin() + hc::header_bytes, frame.end()) == bits_of(x));
    CHECK(bits_of(decompress<decltype(eng), TestType>(eng, frame, n)) == bits_of(x));
  }
}

TEST_CASE("codecs 16-bit: a frame of another dtype is refused with errc::mismatch", "[16bit][mismatch]") {
  auto eng = host_engine(1);
  const auto x = make_data<bf16>(kind::smooth, 1000, 5);
  for (const char* spec : {"none", "mpc", "zfp:8"}) {
    const hc::config c = hc::parse_config(spec, dtype::bf16);
    const bytes frame = compress(eng, c, x);
    INFO(spec);
    std::vector<std::uint16_t> out16(1000, 0xA5A5);
    std::vector<float> out32(1000, 1.5f);
    try {
      eng.decompress(frame.data(), frame.size(), out16.data(), 1000, dtype::f16);
      FAIL("bf16 frame decoded as f16");
    } catch (const hcomm::error& e) {
      CHECK(e.code() == errc::mismatch);
      CHECK_THAT(e.what(), Catch::Contains("frame holds bf16") && Catch::Contains("expects f16"));
    }
    CHECK(out16 == std::vector<std::uint16_t>(1000, 0xA5A5));
    try {
      eng.decompress(frame.data(), frame.size(), out32.data(), 1000, dtype::f32);
      FAIL("bf16 frame decoded as f32");
    } catch (const hcomm::error& e) {
      CHECK(e.code() == errc::mismatch);
    }
    // The typed interface: a config of another dtype than the data.
    const hc::config c16{c.codec, dtype::f16, c.param, true};
    CHECK_THROWS_MATCHES(eng.compress(c16, std::span<const bf16>(x)), hcomm::error,
                         Catch::Predicate<hcomm::error>([](const hcomm::error& e) { return e.code() == errc::mismatch; }));
  }
}

TEST_CASE("codecs 16-bit: the baselines and codecs constrained to float and double refuse 16-bit values",
          "[16bit][refuse]") {
  for (dtype t : {dtype::bf16, dtype::f16})
    for (const char* spec : {"bf16", "int8", "int8:64"}) {
      INFO(spec << " on " << hcomm::to_string(t));
      try {
        (void)hc::parse_config(spec, t);
        FAIL("accepted");
      } catch (const hcomm::error& e) {
        CHECK(e.code() == errc::invalid_argument);
        CHECK_THAT(e.what(), Catch::Contains("does not take " + std::string(hcomm::to_string(t)) + " values"));
      }
    }
  STATIC_REQUIRE(hc::family_takes<hc::mpc_codec, bf16> && hc::family_takes<hc::zfp_codec, f16> &&
                 hc::family_takes<hc::none_codec, bf16>);
  STATIC_REQUIRE(!hc::family_takes<hc::bf16_codec, bf16> && !hc::family_takes<hc::int8_codec, f16>);
  STATIC_REQUIRE(hc::family_takes<hc::bf16_codec, float> && hc::family_takes<hc::mpc_codec, double>);
}
