// hcomm/codec/int8.hpp: blockwise symmetric int8 quantisation, a baseline to compare hcomm's
// schemes with (ZeRO++'s quantised weights and gradients, LoCo's compressed gradients): each
// block of B values is sent as one scale and B signed bytes.
//
//   auto cfg   = hcomm::codec::parse_config("int8:256", hcomm::dtype::f32);   // "int8" = int8:256
//   auto frame = hcomm::codec::engine<>{}.compress(cfg, std::span<const float>(x));  // ~8.1 bits a value
//
// Parameter: the block B, a power of two from 8 to 512 values (default 256). Blocks are cut
// from the start of every buffer coded (in the collectives: each ring segment); the last one
// may be short. Segments are a power of two bytes by default, so blocks stay whole inside them.
//
// Per block, over its finite values x (m = the largest |x|; a block of zeros has m = 0):
//   scale s = m / 127, in the element type, rounded to nearest and then lowered by one ulp
//           when 127 * s would round above m (so no decoded value exceeds m: finite values
//           always come back finite); s = the smallest subnormal when m / 127 underflows
//           to 0 (then x / s is exact and small);
//   q       = x / s rounded to nearest, ties to even, clamped to -127..127 (0 when s = 0);
//   decoded = q * s.
// So |x - decoded| <= s/2 (plus the rounding of x / s and q * s) for blocks whose scale is a
// normal number; the sign of a zero is not kept.
// Non-finite values (NaN with its payload, ±Inf) come back exactly, as with zfp: they take
// no part in m, their byte is 0, and they travel in a side list after the bytes, the one of
// codec/zfp/side_list.hpp (the library's contract for bad input: nothing is lost silently).
//
// Payload layout (little-endian), for n values in nb = ceil(n / B) blocks:
//   [scales]  nb values of the element type (float32 for float32 data, float64 for float64)
//   [bytes]   n int8, value i at offset nb * sizeof(T) + i
//   [count]   u64: how many values are non-finite
//   [list]    count entries, strictly increasing index: index (u32 when n <= 2^32, else u64),
//             then the value's bit pattern.
// decode checks the size against n and B, the count, every list entry (index < n, strictly
// increasing, pattern non-finite), every scale (finite, sign bit clear) and every byte (not
// -128, which the coder never writes) before it writes anything.
// Work items: a block each (scales and bytes), a group of 256 values each (the list), a value
// each (decoding); the same bytes on every executor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "hcomm/codec/id.hpp"
#include "hcomm/codec/traits.hpp"
#include "hcomm/codec/zfp/side_list.hpp"
#include "hcomm/codec/zfp/traits.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec {

namespace int8_detail {
using zfp_detail::from_bits;
using zfp_detail::is_nonfinite_bits;
using zfp_detail::to_bits;
using u64 = std::uint64_t;

inline constexpr unsigned min_block = 8, max_block = 512, default_block = 256;
// Side-list groups (zfp's): group g holds values [256g, 256g + 256).
inline constexpr std::size_t group_values = zfp_detail::group_values;
// Blocks checked by one work item of decode.
inline constexpr std::size_t check_blocks = 64;

// v rounded to nearest, ties to even, then clamped to [-127, 127]; v is finite and |v| < 2^31.
// (No library call: the same result on every executor, whatever its rounding helpers.)
template <class T>
HCOMM_HOST_DEVICE int round_clamp(T v) {
  const T a = v < T(0) ? -v : v;
  std::int32_t t = static_cast<std::int32_t>(a);  // toward zero
  const T f = a - static_cast<T>(t);              // exact
  if (f > T(0.5) || (f == T(0.5) && (t & 1))) ++t;
  if (t > 127) t = 127;
  return v < T(0) ? -t : t;
}

// The block's scale for its largest finite magnitude m (see the header comment).
template <class T>
HCOMM_HOST_DEVICE T scale_of(T m) {
  T s = m / T(127);
  if (s > T(0) && s * T(127) > m) s = from_bits<T>(to_bits(s) - 1);
  if (s == T(0) && m > T(0)) s = from_bits<T>(typename zfp_detail::traits<T>::U{1});
  return s;
}

// Block b: its scale and its n bytes.
template <class T>
struct quantize_block_kernel {
  const T* in;
  std::size_t n;
  std::size_t block;
  unsigned char* scales;
  unsigned char* q;
  HCOMM_HOST_DEVICE void operator()(std::size_t b) const {
    const std::size_t first = b * block;
    const std::size_t last = n - first < block ? n : first + block;
    T m = T(0);
    for (std::size_t i = first; i < last; ++i) {
      const T x = in[i];
      if (is_nonfinite_bits<T>(to_bits(x))) continue;
      const T a = x < T(0) ? -x : x;
      if (a > m) m = a;
    }
    const T s = scale_of(m);
    std::memcpy(scales + b * sizeof(T), &s, sizeof(T));
    for (std::size_t i = first; i < last; ++i) {
      const T x = in[i];
      int v = 0;
      if (s > T(0) && !is_nonfinite_bits<T>(to_bits(x))) v = round_clamp(x / s);
      q[i] = static_cast<unsigned char>(static_cast<std::int8_t>(v));
    }
  }
};

// counts[g] = the non-finite values of side-list group g.
template <class T>
struct count_nonfinite_kernel {
  const T* in;
  std::size_t n;
  u64* counts;
  HCOMM_HOST_DEVICE void operator()(std::size_t g) const {
    const std::size_t first = g * group_values;
    const std::size_t last = n - first < group_values ? n : first + group_values;
    u64 c = 0;
    for (std::size_t i = first; i < last; ++i) c += is_nonfinite_bits<T>(to_bits(in[i])) ? 1u : 0u;
    counts[g] = c;
  }
};

// bad[c] = 1 when a scale of blocks [64c, 64c + 64) is not finite or negative, or one of
// their bytes is -128.
template <class T>
struct check_blocks_kernel {
  const unsigned char* scales;
  const unsigned char* q;
  std::size_t n;
  std::size_t block;
  std::size_t nb;
  u64* bad;
  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    const std::size_t b0 = c * check_blocks;
    const std::size_t b1 = nb - b0 < check_blocks ? nb : b0 + check_blocks;
    using U = typename zfp_detail::traits<T>::U;
    constexpr U sign = U{1} << (8 * sizeof(T) - 1);
    u64 ok = 1;
    for (std::size_t b = b0; b < b1; ++b) {
      U s;
      std::memcpy(&s, scales + b * sizeof(T), sizeof s);
      ok &= static_cast<u64>(!is_nonfinite_bits<T>(s) && (s & sign) == 0);
    }
    const std::size_t i1 = b1 * block < n ? b1 * block : n;
    for (std::size_t i = b0 * block; i < i1; ++i) ok &= static_cast<u64>(q[i] != 0x80u);
    bad[c] = ok ? 0 : 1;
  }
};

template <class T>
struct dequantize_kernel {
  const unsigned char* scales;
  const unsigned char* q;
  std::size_t block;
  T* out;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    T s;
    std::memcpy(&s, scales + (i / block) * sizeof(T), sizeof(T));
    out[i] = static_cast<T>(static_cast<std::int8_t>(q[i])) * s;
  }
};
}  // namespace int8_detail

template <floating_element T>
struct int8_codec {
  static constexpr codec_id id = codec_id::int8;
  static constexpr std::string_view name = "int8";
  static constexpr bool lossy = true;
  static constexpr param_use parameter = param_use::optional;
  static constexpr unsigned default_param = int8_detail::default_block;
  static constexpr std::string_view usage = "int8[:B]";
  static constexpr std::string_view param_help =
      "int8 takes a block of B = 8, 16, 32, 64, 128, 256 or 512 values (default 256)";
  using value_type = T;

  static constexpr bool valid_param(unsigned b) noexcept {
    return b >= int8_detail::min_block && b <= int8_detail::max_block && (b & (b - 1)) == 0;
  }
  static constexpr std::size_t blocks(std::size_t n, unsigned b) noexcept { return n / b + (n % b != 0); }
  static constexpr std::size_t groups(std::size_t n) noexcept {
    return n / int8_detail::group_values + (n % int8_detail::group_values != 0);
  }
  // Scales and bytes (invalid B: as if 1, so that the size functions never divide by 0).
  static constexpr std::size_t body_bytes(std::size_t n, unsigned b) noexcept {
    return blocks(n, b == 0 ? 1 : b) * sizeof(T) + n;
  }
  static constexpr unsigned index_bytes(std::size_t n) noexcept {
    return static_cast<std::uint64_t>(n) > 0xFFFFFFFFull ? 8u : 4u;
  }
  static constexpr std::size_t entry_bytes(std::size_t n) noexcept { return index_bytes(n) + sizeof(T); }

  // Body + count + every value non-finite (a bound; typical payloads are body + 8).
  static constexpr std::size_t max_payload_bytes(std::size_t n, unsigned b) noexcept {
    constexpr std::size_t big = std::numeric_limits<std::size_t>::max();
    const std::size_t e = entry_bytes(n);
    if (n > (big - 8) / (e + sizeof(T) + 1) / 2) return big;
    return body_bytes(n, b) + 8 + n * e;
  }
  // The least payload of n values: no non-finite entry. (P bytes hold at most P values.)
  static constexpr std::size_t min_payload_bytes(std::size_t n, unsigned b) noexcept { return body_bytes(n, b) + 8; }
  // What a frame slot of the ring reserves: room for one non-finite value in 256.
  static constexpr std::size_t typical_payload_bytes(std::size_t n, unsigned b) noexcept {
    return body_bytes(n, b) + 8 + (n / 256) * entry_bytes(n);
  }
  // Encode: per-group counts and their scan (G + 1 words); decode: per-item check flags.
  static constexpr std::size_t workspace_bytes(std::size_t n, unsigned b) noexcept {
    const std::size_t nb = blocks(n, b == 0 ? 1 : b);
    const std::size_t checks = nb / int8_detail::check_blocks + 1;
    const std::size_t g = groups(n);
    return 8 * ((g > checks ? g : checks) + 2);
  }

  template <class Exec>
  static void encode(const Exec& ex, const T* in, std::size_t n, unsigned b, std::byte* payload,
                     std::uint64_t* payload_bytes, std::byte* ws) {
    using namespace int8_detail;
    if (!valid_param(b)) fail(errc::invalid_argument, std::string(param_help));
    const std::size_t nb = blocks(n, b), G = groups(n), body = body_bytes(n, b);
    auto* bytes = reinterpret_cast<unsigned char*>(payload);
    auto* counts = reinterpret_cast<u64*>(ws);
    if (nb > 0) ex.for_each(nb, quantize_block_kernel<T>{in, n, b, bytes, bytes + nb * sizeof(T)});
    if (G > 0) ex.for_each(G, count_nonfinite_kernel<T>{in, n, counts});
    ex.exclusive_scan(counts, counts, G);
    if (G > 0) ex.for_each(G, zfp_detail::scatter_nonfinite_kernel<T>{in, n, counts, bytes + body + 8, index_bytes(n)});
    ex.for_each(1, zfp_detail::finish_payload_kernel{counts + G, bytes + body, body, entry_bytes(n), payload_bytes});
  }

  template <class Exec>
  static void decode(const Exec& ex, const std::byte* payload, std::size_t payload_bytes, std::size_t n, unsigned b,
                     T* out, std::byte* ws) {
    using namespace int8_detail;
    if (!valid_param(b)) fail(errc::corrupt_frame, "int8 block " + std::to_string(b) + ": " + std::string(param_help));
    const std::size_t nb = blocks(n, b), body = body_bytes(n, b);
    if (payload_bytes < body + 8)
      fail(errc::corrupt_frame, "int8 payload has " + std::to_string(payload_bytes) + " bytes, " + std::to_string(n) +
                                    " values in blocks of " + std::to_string(b) + " need at least " +
                                    std::to_string(body + 8));
    const auto* bytes = reinterpret_cast<const unsigned char*>(payload);
    std::uint64_t count = 0;
    ex.to_host(&count, bytes + body, 8);
    const std::size_t e = entry_bytes(n);
    if (count > n)
      fail(errc::corrupt_frame,
           "int8 payload lists " + std::to_string(count) + " non-finite values of " + std::to_string(n));
    if (payload_bytes - body - 8 != count * e)
      fail(errc::corrupt_frame, "int8 payload has " + std::to_string(payload_bytes) + " bytes, its " +
                                    std::to_string(count) + " non-finite entries need " +
                                    std::to_string(body + 8 + count * e));
    auto* flags = reinterpret_cast<u64*>(ws);
    std::uint64_t bad = 0;
    if (nb > 0) {
      const std::size_t checks = (nb + check_blocks - 1) / check_blocks;
      ex.for_each(checks, check_blocks_kernel<T>{bytes, bytes + nb * sizeof(T), n, b, nb, flags});
      ex.for_each(1, zfp_detail::or_reduce_kernel{flags, checks});
      ex.to_host(&bad, flags + checks, 8);
      if (bad) fail(errc::corrupt_frame, "int8 payload has a scale that is negative or not finite, or a byte -128");
    }
    const unsigned char* list = bytes + body + 8;
    if (count > 0) {
      const std::size_t chunks =
          static_cast<std::size_t>((count + zfp_detail::check_chunk - 1) / zfp_detail::check_chunk);
      ex.for_each(chunks, zfp_detail::validate_nonfinite_kernel<T>{list, count, n, index_bytes(n), flags});
      ex.for_each(1, zfp_detail::or_reduce_kernel{flags, chunks});
      ex.to_host(&bad, flags + chunks, 8);
      if (bad)
        fail(errc::corrupt_frame,
             "int8 non-finite list is malformed (index out of range, not increasing, or a finite pattern)");
    }
    if (n > 0) ex.for_each(n, dequantize_kernel<T>{bytes, bytes + nb * sizeof(T), b, out});
    if (count > 0)
      ex.for_each(static_cast<std::size_t>(count), zfp_detail::patch_nonfinite_kernel<T>{list, index_bytes(n), out});
  }
};

}  // namespace hcomm::codec
