// The ZFP team kernels (codec/zfp/team.hpp), which device executors run: under host_check
// (shuffled thread and team order, every scratch word shadowed) they give the host group
// kernels' payload byte for byte, and decode it to the same value bits, for every type and
// rate, sizes around the group and block boundaries, and data with NaN and ±Inf.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "hcomm/codec/zfp.hpp"
#include "hcomm/core/half.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/exec/host_check.hpp"

namespace zfp_team_test {

using hcomm::codec::zfp_codec;

enum class team_data { smooth, noise, nonfinite };

template <class T>
T make_value(double d) {
  if constexpr (sizeof(T) == 2)
    return T(static_cast<float>(d));
  else
    return static_cast<T>(d);
}

template <class T>
std::vector<T> team_input(team_data k, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double d = k == team_data::smooth ? 100.0 * std::sin(0.01 * static_cast<double>(i)) + 0.001 * static_cast<double>(i)
                                            : gauss(rng) * std::exp2(static_cast<double>(rng() % 24) - 12.0);
    x[i] = make_value<T>(d);
  }
  if (k == team_data::nonfinite) {
    const double inf = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; i += 7 + rng() % 50) {
      const unsigned r = static_cast<unsigned>(rng() % 3);
      x[i] = r == 0 ? make_value<T>(std::numeric_limits<double>::quiet_NaN()) : make_value<T>(r == 1 ? inf : -inf);
    }
    for (std::size_t i = 256; i < 260 && i < n; ++i) x[i] = make_value<T>(-inf);  // a block without a finite value
  }
  return x;
}

template <class T, class Exec>
std::vector<std::byte> encode_with(const Exec& ex, const std::vector<T>& x, unsigned rate) {
  using C = zfp_codec<T>;
  std::vector<std::byte> payload(C::max_payload_bytes(x.size(), rate));
  std::vector<std::byte> ws(C::workspace_bytes(x.size(), rate));
  std::uint64_t bytes = 0;
  C::encode(ex, x.data(), x.size(), rate, payload.data(), &bytes, ws.data());
  payload.resize(bytes);
  return payload;
}

template <class T, class Exec>
std::vector<unsigned char> decode_with(const Exec& ex, const std::vector<std::byte>& p, std::size_t n, unsigned rate) {
  using C = zfp_codec<T>;
  std::vector<T> out(n);
  std::vector<std::byte> ws(C::workspace_bytes(n, rate));
  C::decode(ex, p.data(), p.size(), n, rate, out.data(), ws.data());
  std::vector<unsigned char> b(n * sizeof(T));
  if (n) std::memcpy(b.data(), out.data(), b.size());
  return b;
}

}  // namespace zfp_team_test

using namespace zfp_team_test;

TEMPLATE_TEST_CASE("zfp team kernels give the group kernels' bytes under host_check", "[zfp][team]", float, double,
                   hcomm::bf16, hcomm::f16) {
  static_assert(zfp_codec<TestType>::template uses_team_kernels<hcomm::exec::host_check>);
  static_assert(!zfp_codec<TestType>::template uses_team_kernels<hcomm::exec::host>);
  const hcomm::exec::host host{2};
  std::size_t compared = 0;
  for (std::uint64_t seed : {1u, 9u}) {
    const hcomm::exec::host_check check{seed};
    for (team_data k : {team_data::smooth, team_data::noise, team_data::nonfinite})
      for (std::size_t n : {0, 1, 3, 4, 5, 255, 256, 257, 1023, 4097}) {
        const auto x = team_input<TestType>(k, n, seed + n);
        for (unsigned rate = 3; rate <= 64; ++rate) {
          if (seed != 1 && rate % 5 != 0) continue;  // the second seed: a sample of the rates
          INFO("seed " << seed << " data " << static_cast<int>(k) << " n " << n << " rate " << rate);
          const auto want = encode_with(host, x, rate);
          const auto got = encode_with(check, x, rate);
          REQUIRE(got == want);
          REQUIRE(decode_with<TestType>(check, want, n, rate) == decode_with<TestType>(host, want, n, rate));
          ++compared;
        }
      }
  }
  CHECK(compared > 0);
}
