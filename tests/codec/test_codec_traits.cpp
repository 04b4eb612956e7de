// Codecs join by their traits: a toy codec from the test tree (toy/toy_codec.hpp), in a list
// of the test's own (registered_codecs::with<toy_codec>), goes through parse_config, the
// engine on the host and the test executor, and the frame checks, with no library header
// edited; the library's own list still refuses its frames. (The ring allreduce over MPI with
// the same codec: tests/comm/test_codec_ring.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "hcomm/codec/codec.hpp"
#include "hcomm/exec/host_check.hpp"
#include "toy/toy_codec.hpp"

namespace {

namespace hc = hcomm::codec;
using hcomm::codec_id;
using hcomm::dtype;
using hcomm::errc;
using toy_codecs = hc::registered_codecs::with<toy::toy_codec>;

// ---- compile time: the concepts and the list ----
static_assert(hc::codec_type<toy::toy_codec<float>> && hc::codec_type<toy::toy_codec<double>>);
static_assert(hc::codec_family<toy::toy_codec> && hc::codec_family<hc::zfp_codec>);
static_assert(hc::codec_list_type<toy_codecs> && toy_codecs::size == hc::registered_codecs::size + 1);
static_assert(hc::list_contains<toy_codecs>(codec_id{200}) && !hc::is_registered(codec_id{200}));
static_assert(hc::block_multiple<toy_codecs>() == 4 && hc::block_multiple<hc::registered_codecs>() == 4);
static_assert(hc::identity_id<toy_codecs>() == codec_id::none);
static_assert(hc::is_lossy<toy_codecs>(hc::config{codec_id{200}, dtype::f32, 3, true}));
static_assert(!hc::is_lossy(hc::config{codec_id::mpc, dtype::f32, 0, true}));
static_assert(hc::is_identity(hc::config{codec_id::none, dtype::f64, 0, true}));

template <class T>
std::vector<T> wave(std::size_t n) {
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<T>(std::sin(0.01 * double(i)) * 3.0 + 0.001 * double(i));
  return x;
}

template <class F>
void expect(F&& f, errc code, const std::string& needle) {
  try {
    f();
    FAIL("no hcomm::error thrown (expected '" << needle << "')");
  } catch (const hcomm::error& e) {
    INFO(e.what());
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("codec traits: a list of one's own parses and names its codecs", "[codec][traits]") {
  const auto c = hc::parse_config<toy_codecs>("toy:4", dtype::f64);
  CHECK(c == hc::config{codec_id{200}, dtype::f64, 4, true});
  CHECK(hc::to_string<toy_codecs>(c) == "toy:4");
  CHECK(hc::codec_name<toy_codecs>(codec_id{200}) == "toy");
  CHECK(hc::codec_name(codec_id{200}) == "codec#200");  // not in the library's list
  CHECK(hc::parse_config<toy_codecs>("zfp:8") == hc::parse_config("zfp:8"));
  expect([] { hc::parse_config<toy_codecs>("toy"); }, errc::invalid_argument, "toy needs a parameter");
  expect([] { hc::parse_config<toy_codecs>("toy:17"); }, errc::invalid_argument, "toy takes K = 0..16");
  expect([] { hc::parse_config<toy_codecs>("lz4"); }, errc::invalid_argument,
         "(use none, mpc[:DIM], zfp:RATE, bf16, int8[:B] or toy:K)");
  expect([] { hc::parse_config("toy:4"); }, errc::invalid_argument, "(use none, mpc[:DIM], zfp:RATE, bf16 or int8[:B])");
}

TEMPLATE_TEST_CASE("codec traits: the toy codec through the engine, on two executors", "[codec][traits]", float,
                   double) {
  using T = TestType;
  const std::size_t n = 1003;
  const auto x = wave<T>(n);
  const auto c = hc::parse_config<toy_codecs>("toy:8", hcomm::dtype_of<T>);
  hc::engine<hcomm::exec::host, toy_codecs> eng;
  const auto frame = eng.compress(c, std::span<const T>(x));
  REQUIRE(frame.size() == hc::max_frame_bytes<toy_codecs>(c, n));

  std::vector<T> y(n);
  const hc::frame_info f = eng.decompress(std::span<const std::byte>(frame), std::span<T>(y));
  CHECK(f.codec == codec_id{200});
  CHECK(f.param == 8);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("i=" << i);
    CHECK(std::abs(double(y[i]) - double(x[i])) <= std::abs(double(x[i])) * std::ldexp(1.0, 8 - (sizeof(T) == 4 ? 23 : 52)));
  }

  // The test executor (device code paths, shuffled work items, poisoned memory): same bytes.
  hc::engine<hcomm::exec::host_check, toy_codecs> chk;
  std::vector<std::byte> out(hc::max_frame_bytes<toy_codecs>(c, n));
  const std::size_t used = chk.compress(c, x.data(), n, out.data(), out.size());
  REQUIRE(used == frame.size());
  CHECK(std::memcmp(out.data(), frame.data(), used) == 0);
  std::vector<T> z(n);
  chk.decompress(out.data(), used, z.data(), n, hcomm::dtype_of<T>);
  CHECK(std::memcmp(z.data(), y.data(), n * sizeof(T)) == 0);

  // The extended engine still codes the library's codecs, to the same bytes.
  const auto zc = hc::parse_config("zfp:8", hcomm::dtype_of<T>);
  CHECK(eng.compress(zc, std::span<const T>(x)) == hc::engine<>{}.compress(zc, std::span<const T>(x)));
}

TEST_CASE("codec traits: frame checks ask the list", "[codec][traits][frame]") {
  const auto x = wave<float>(64);
  const auto c = hc::parse_config<toy_codecs>("toy:2");
  hc::engine<hcomm::exec::host, toy_codecs> eng;
  auto frame = eng.compress(c, std::span<const float>(x));

  // The library's list does not know id 200: a foreign frame, at the header already.
  expect([&] { hc::read_header(frame.data(), frame.size()); }, errc::foreign_frame, "unknown codec id 200");
  std::vector<float> y(64);
  expect([&] { hc::engine<>{}.decompress(std::span<const std::byte>(frame), std::span<float>(y)); },
         errc::foreign_frame, "unknown codec id 200");

  // The toy list does, and bounds the payload by the toy's min and max payload sizes.
  const hc::frame_info f = hc::read_header<toy_codecs>(frame.data(), frame.size());
  CHECK(f.count == 64);
  hc::validate_frame<toy_codecs>(f);
  hc::frame_info more = f;
  more.count = 65;  // a payload of 64 values cannot hold 65
  expect([&] { hc::validate_frame<toy_codecs>(more); }, errc::corrupt_frame, "need at least");
  more = f;
  more.count = 60;
  expect([&] { hc::validate_frame<toy_codecs>(more); }, errc::corrupt_frame, "exceeds the codec's bound");
  more = f;
  more.param = 17;
  expect([&] { hc::validate_frame<toy_codecs>(more); }, errc::corrupt_frame, "toy takes K = 0..16");
  expect([&] { hc::validate_frame(f); }, errc::unsupported, "not in this build");

  // A payload that fails the toy's own decode check leaves the output untouched.
  // (the checksum off, so that the damaged magic reaches the codec's decode)
  const auto nock = hc::parse_config<toy_codecs>("toy:2", dtype::f32, false);
  auto bad = eng.compress(nock, std::span<const float>(x));
  bad[hc::header_bytes] = std::byte{0};
  std::vector<float> keep(64, 7.0f);
  expect([&] { eng.decompress(std::span<const std::byte>(bad), std::span<float>(keep)); }, errc::corrupt_frame,
         "TOY1");
  CHECK(keep[0] == 7.0f);
}
