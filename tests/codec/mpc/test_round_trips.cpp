// The MPC codec (codec/mpc.hpp) called directly: its contract values, bit-exact round trips
// over sizes x data kinds x strides x types, and output that does not depend on the thread
// count.
#include <cstddef>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "hcomm/codec/mpc.hpp"
#include "mpc_test_util.hpp"

using namespace mpc_test;

namespace {

const std::size_t sizes[] = {0, 1, 3, 4, 5, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 3000, (std::size_t(1) << 20) + 7};
const unsigned params[] = {0, 1, 2, 3, 4, 32};

template <class T>
void round_trips() {
  direct<T> d;
  for (std::size_t n : sizes)
    for (kind k : all_kinds) {
      const std::vector<T> x = make<T>(k, n, n * 31 + static_cast<unsigned>(k));
      for (unsigned p : params) {
        INFO(kind_name(k) << " n=" << n << " param=" << p << " bytes=" << sizeof(T));
        const auto& payload = d.encode(x, p);
        REQUIRE(payload.size() <= hc::mpc_codec<T>::max_payload_bytes(n, p));
        const unsigned dim = stored_dim<T>(payload);
        REQUIRE(dim >= 1);
        REQUIRE(dim <= 32);
        if (p != 0) REQUIRE(dim == p);
        std::vector<T> y(n, T(7));
        d.decode(payload.data(), payload.size(), y, p);
        REQUIRE(same_bits(x, y));
      }
    }
}

}  // namespace

TEST_CASE("mpc: contract values", "[mpc]") {
  STATIC_REQUIRE(hc::mpc_codec<float>::id == codec_id::mpc);
  STATIC_REQUIRE(std::is_same_v<hc::mpc_codec<double>::value_type, double>);
  for (unsigned p = 0; p <= 32; ++p) REQUIRE(hc::mpc_codec<float>::valid_param(p));
  REQUIRE_FALSE(hc::mpc_codec<float>::valid_param(33));
  REQUIRE_FALSE(hc::mpc_codec<double>::valid_param(1000));
  REQUIRE(hc::mpc_codec<float>::max_payload_bytes(1000, 0) == 16 + 4000);
  REQUIRE(hc::mpc_codec<double>::max_payload_bytes(0, 3) == 16);
}

TEST_CASE("mpc: bit-exact round trips, float", "[mpc]") { round_trips<float>(); }
TEST_CASE("mpc: bit-exact round trips, double", "[mpc]") { round_trips<double>(); }

TEST_CASE("mpc: output does not depend on the thread count", "[mpc]") {
  const std::size_t n = 200003;
  for (kind k : {kind::smooth, kind::gaussian, kind::random_bits}) {
    const auto x = make<float>(k, n, 9);
    direct<float> one, two;
    one.ex.threads = 1;
    two.ex.threads = 2;
    for (unsigned p : {0u, 3u}) {
      const auto a = one.encode(x, p);
      const auto b = two.encode(x, p);
      REQUIRE(a == b);
    }
  }
}
