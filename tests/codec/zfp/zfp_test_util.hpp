// What the tests of the ZFP codec (tests/codec/zfp/) share: the data kinds they code, and
// our encoder and decoder called directly (no frame) on the host executor.
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../common/codec_calls.hpp"
#include "hcomm/codec/zfp.hpp"
#include "hcomm/exec/host.hpp"

namespace zfp_test {

using hcomm::codec::zfp_codec;

// "zfp:RATE" (appended, not "literal" + string: GCC 12 -O3 warns falsely on that, PR105329).
inline std::string zfp_spec(unsigned rate) {
  std::string s = "zfp:";
  s += std::to_string(rate);
  return s;
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
  hcomm_test::encode<C>(ex, x.data(), x.size(), rate, r.payload.data(), &bytes, ws.data());
  r.payload.resize(bytes);
  r.stream_bytes = C::stream_bytes(x.size(), rate);
  return r;
}

template <class T>
std::vector<T> our_decode(const std::vector<std::byte>& p, std::size_t n, unsigned rate) {
  using C = zfp_codec<T>;
  std::vector<T> out(n);
  std::vector<std::byte> ws(C::workspace_bytes(n, rate) + 8);
  hcomm_test::decode<C>(hcomm::exec::host{}, p.data(), p.size(), n, rate, out.data(), ws.data());
  return out;
}

template <class T>
auto bits_of(T v) {
  return std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(v);
}

enum class kind { zeros, constant, smooth, noise, denormal, signed_zero, extreme, tiny_mixed };
inline constexpr kind all_kinds[] = {kind::zeros,    kind::constant,    kind::smooth,  kind::noise,
                                     kind::denormal, kind::signed_zero, kind::extreme, kind::tiny_mixed};
inline const char* name(kind k) {
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

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

inline constexpr std::size_t sizes[] = {0, 1, 3, 4, 5, 31, 32, 33, 1023, 1024, 1025, (std::size_t{1} << 20) + 7};
inline constexpr unsigned rates[] = {3, 4, 8, 12, 16, 24, 32};

}  // namespace zfp_test
