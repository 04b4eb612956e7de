// What the tests of the MPC codec (tests/codec/mpc/) share: the data kinds they code, and
// the codec called directly (no frame) on the host executor, with the payload's header
// fields. Run these tests under HCOMM_SANITIZE=ON as well: the decoders must not read or
// write past a buffer on any payload.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "../common/codec_calls.hpp"
#include "hcomm/codec/mpc.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/exec/host.hpp"

namespace mpc_test {

namespace hc = hcomm::codec;
namespace md = hcomm::codec::mpc_detail;
using hcomm::codec_id;
using hcomm::errc;

enum class kind { zeros, constant, smooth, gaussian, denormal, signed_zero, specials, extremes, random_bits };
inline constexpr kind all_kinds[] = {kind::zeros,       kind::constant, kind::smooth,   kind::gaussian,   kind::denormal,
                                     kind::signed_zero, kind::specials, kind::extremes, kind::random_bits};

inline const char* kind_name(kind k) {
  switch (k) {
    case kind::zeros: return "zeros";
    case kind::constant: return "constant";
    case kind::smooth: return "smooth";
    case kind::gaussian: return "gaussian";
    case kind::denormal: return "denormal";
    case kind::signed_zero: return "signed_zero";
    case kind::specials: return "nan_inf";
    case kind::extremes: return "extremes";
    case kind::random_bits: return "random_bits";
  }
  return "?";
}

template <class T>
T from_bits(hcomm::word_of<T> w) {
  T x;
  std::memcpy(&x, &w, sizeof x);
  return x;
}

template <class T>
std::vector<T> make(kind k, std::size_t n, std::uint64_t seed = 1) {
  using W = hcomm::word_of<T>;
  constexpr int mant = std::numeric_limits<T>::digits - 1;  // 23 or 52
  constexpr W exp_mask = static_cast<W>(~W(0) << mant) & static_cast<W>(~W(0) >> 1);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const W bits = static_cast<W>(rng());
    switch (k) {
      case kind::zeros: x[i] = T(0); break;
      case kind::constant: x[i] = T(-3.25); break;
      case kind::smooth: x[i] = T(std::sin(0.001 * double(i)) * 100.0 + 0.5 * std::cos(0.013 * double(i)) + 3.0); break;
      case kind::gaussian: x[i] = T(1e-3 * normal(rng)); break;
      case kind::denormal: x[i] = from_bits<T>(static_cast<W>(bits & ~exp_mask)); break;  // exponent 0, any sign
      case kind::signed_zero: x[i] = (bits & 1) ? T(-0.0) : T(0.0); break;
      case kind::specials: {
        const unsigned r = static_cast<unsigned>(bits % 6);
        if (r == 0) x[i] = from_bits<T>(static_cast<W>(exp_mask | (bits >> 12) | 1u));  // NaN with a payload
        else if (r == 1) x[i] = std::numeric_limits<T>::infinity();
        else if (r == 2) x[i] = -std::numeric_limits<T>::infinity();
        else if (r == 3) x[i] = from_bits<T>(static_cast<W>(exp_mask | (W(1) << (mant - 1)) | (W(1) << (sizeof(W) * 8 - 1))));  // -qNaN
        else x[i] = T(normal(rng));
        break;
      }
      case kind::extremes: {
        const unsigned r = static_cast<unsigned>(bits % 4);
        const T v = r == 0   ? std::numeric_limits<T>::max()
                    : r == 1 ? std::numeric_limits<T>::min()
                    : r == 2 ? std::numeric_limits<T>::denorm_min()
                             : std::numeric_limits<T>::lowest();
        x[i] = (bits >> 8) & 1 ? -v : v;
        break;
      }
      case kind::random_bits: x[i] = from_bits<T>(bits); break;
    }
  }
  return x;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Direct codec calls on the host executor (no frame): payload bytes and the workspace.
template <class T>
struct direct {
  using C = hc::mpc_codec<T>;
  hcomm::exec::host ex{};
  std::vector<std::byte> ws;
  std::vector<std::byte> payload;

  std::vector<std::byte>& encode(const std::vector<T>& x, unsigned param) {
    ws.assign(C::workspace_bytes(x.size(), param) + 64, std::byte{0});
    payload.assign(C::max_payload_bytes(x.size(), param), std::byte{0xEE});
    std::uint64_t size = 0;
    hcomm_test::encode<C>(ex, x.data(), x.size(), param, payload.data(), &size, aligned_ws());
    REQUIRE(size <= payload.size());
    payload.resize(size);
    return payload;
  }
  void decode(const std::byte* p, std::size_t bytes, std::vector<T>& out, unsigned param) {
    ws.assign(C::workspace_bytes(out.size(), param) + 64, std::byte{0});
    hcomm_test::decode<C>(ex, p, bytes, out.size(), param, out.data(), aligned_ws());
  }
  std::byte* aligned_ws() {
    auto a = reinterpret_cast<std::uintptr_t>(ws.data());
    return ws.data() + ((64 - a % 64) % 64);
  }
};

template <class T>
unsigned stored_dim(const std::vector<std::byte>& payload) {
  return static_cast<unsigned>(payload.at(1));
}
template <class T>
unsigned stored_mode(const std::vector<std::byte>& payload) {
  return static_cast<unsigned>(payload.at(0));
}

}  // namespace mpc_test
