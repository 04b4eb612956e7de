// hcomm/codec/zfp.hpp: ZFP fixed-rate lossy codec (1-D blocks of 4, float32 and float64),
// our own implementation whose stream is bit for bit libzfp 1.0's fixed-rate 1-D stream
// (zfp_stream_set_rate(z, rate, type, 1, zfp_false), no header, 64-bit stream words), plus a
// side list that brings NaN and ±Inf back exactly.
//
// bf16 and f16 (hcomm/core/half.hpp) are coded as float32 ZFP of their widened values (exact),
// widened block by block inside the kernels, and decoded values are rounded to nearest, ties
// to even, back to the 16-bit type. So the stream is libzfp's float stream of the widened
// values, and the decoded values are libzfp's decoded floats rounded to the 16-bit type (a
// float decoded past the type's range rounds to ±Inf). The side list holds the 16-bit
// patterns (entries of 4 + 2 bytes); the frame's dtype says which 16-bit type it is.
//
//   auto cfg   = hcomm::codec::parse_config("zfp:8", hcomm::dtype::f32);
//   auto frame = hcomm::codec::engine<>{}.compress(cfg, std::span<const float>(x));
//
// Payload layout (all little-endian), for n values at rate R (3..64 bits per value):
//   [stream]  ceil(ceil(n/4) * R / 16) 64-bit words: block b (values 4b..4b+3) takes bits
//             [4R*b, 4R*b + 4R), bit j of the stream being bit j%64 of word j/64 — libzfp's
//             zfp_compress output padded with zero bits to a whole 64-bit word.
//   [count]   u64: how many values are non-finite (NaN, ±Inf).
//   [list]    count entries, strictly increasing index: index (u32 when n <= 2^32, else u64),
//             then the value's bit pattern (2, 4 or 8 bytes).
// Before coding, each non-finite value is replaced by the nearest finite value of its block
// (the left one first), or 0 when the block has none; so the block's exponent is that of its
// finite values and blocks without non-finite values are exactly libzfp's. The list costs 8
// bytes always, plus 8 (f32) or 12 (f64) bytes per non-finite value, and on encode one
// exclusive scan over ceil(n/256) group counts and a rescan of only the groups that have one.
//
// Blocks are coded in groups of 64 (64 * 4R bits = 4R whole words), one work item per group
// on host executors, a team of groups with a thread per block on device executors
// (zfp/team.hpp), so any executor produces the same bytes. decode checks sizes, the count, every list entry
// (index < n, strictly increasing, pattern non-finite) and the stream's zero tail padding
// before it writes anything; stream bits themselves cannot be checked (any bits decode).
// Finite values can come back non-finite, as in libzfp: at a fixed rate, values near the
// type's largest (FLT_MAX at f32 zfp:4..16, 1.79e308 at f64 zfp:4..32, a block of 1e308 at
// f64 zfp:4) round past it and decode to ±Inf. hcomm-codec's stats count them
// (finite_to_nonfinite); the side list only restores values that were non-finite already.
// Note inherited from libzfp 1.0 (kept for bit-exactness): blocks whose largest |v| is below
// 2^-98 (float) or 2^-962 (double) overflow libzfp's scale factor and decode to values of
// the same tiny magnitude that are not the inputs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "hcomm/codec/zfp/group_kernels.hpp"
#include "hcomm/codec/zfp/side_list.hpp"
#include "hcomm/codec/zfp/team.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/codec/id.hpp"
#include "hcomm/codec/traits.hpp"

namespace hcomm::codec {

template <element T>
struct zfp_codec {
  static constexpr codec_id id = codec_id::zfp;
  static constexpr std::string_view name = "zfp";
  static constexpr bool lossy = true;
  static constexpr param_use parameter = param_use::required;
  static constexpr std::string_view usage = "zfp:RATE";
  static constexpr std::string_view param_help = "zfp takes a rate of 3..64 bits per value";
  static constexpr std::size_t block_values = 4;  // 1-D blocks: segments never split one
  using value_type = T;

  static constexpr bool valid_param(unsigned rate) noexcept { return rate >= 3 && rate <= 64; }
  // Error feedback needs every block's error below the block's norm. A 1-D block spends 9
  // (float) or 12 (double) of its 4 * rate bits on its exponent; with what is left, below
  // rate 6 (float, bf16, f16) or 7 (double) some blocks decode further from the input than
  // zero is (relative error up to about 4), and the residual then grows geometrically
  // (tests/codec/zfp/test_zfp_feedback.cpp measures both sides of the line).
  static constexpr unsigned min_feedback_rate = zfp_detail::traits<compute_of<T>>::ebits > 8 ? 7 : 6;
  static constexpr bool feedback_stable(unsigned rate) noexcept { return rate >= min_feedback_rate; }

  // Bits per block: libzfp's floor(4 * rate + 0.5), at least 1 + exponent bits.
  static constexpr unsigned maxbits(unsigned rate) noexcept {
    const unsigned b = 4 * rate, least = 1 + zfp_detail::traits<compute_of<T>>::ebits;
    return b > least ? b : least;
  }
  static constexpr std::size_t blocks(std::size_t n) noexcept { return n / 4 + (n % 4 != 0); }
  static constexpr std::size_t groups(std::size_t n) noexcept {
    return n / zfp_detail::group_values + (n % zfp_detail::group_values != 0);
  }
  static constexpr std::size_t stream_words(std::size_t n, unsigned rate) noexcept {
    const std::size_t nb = blocks(n), mb = maxbits(rate);
    // nb * mb / 64 rounded up, without overflowing for huge n (mb <= 256).
    return (nb / 64) * mb + ((nb % 64) * mb + 63) / 64;
  }
  static constexpr std::size_t stream_bytes(std::size_t n, unsigned rate) noexcept {
    return 8 * stream_words(n, rate);
  }
  static constexpr unsigned index_bytes(std::size_t n) noexcept {
    return static_cast<std::uint64_t>(n) > 0xFFFFFFFFull ? 8u : 4u;
  }
  static constexpr std::size_t entry_bytes(std::size_t n) noexcept { return index_bytes(n) + sizeof(T); }

  // Stream + count + every value non-finite (a bound; typical payloads are stream + 8).
  static constexpr std::size_t max_payload_bytes(std::size_t n, unsigned rate) noexcept {
    constexpr std::size_t big = std::numeric_limits<std::size_t>::max();
    const std::size_t e = entry_bytes(n);
    if (n > (big - 8) / e / 2) return big;
    return stream_bytes(n, rate) + 8 + n * e;
  }
  // The least payload of n values (n <= max_count): the stream and the count, no non-finite
  // entry. At rate bits per value (block padding aside), P bytes hold at most 8 * P / rate values.
  static constexpr std::size_t min_payload_bytes(std::size_t n, unsigned rate) noexcept {
    return stream_bytes(n, rate) + 8;
  }
  // What a frame slot of the ring reserves: the stream, the count and room for 1/64 of the
  // values in the non-finite list (the bound, every value non-finite, is about 9x the stream
  // at rate 8); a larger frame travels as two messages.
  static constexpr std::size_t typical_payload_bytes(std::size_t n, unsigned rate) noexcept {
    return stream_bytes(n, rate) + 8 + (n / 64) * entry_bytes(n);
  }
  // Per-group counts and their scan (G + 1 words) or, on decode, per-chunk check flags.
  static constexpr std::size_t workspace_bytes(std::size_t n, unsigned) noexcept { return 8 * (groups(n) + 2); }

  template <class Exec>
  static void encode(const Exec& ex, const T* in, std::size_t n, unsigned rate, std::byte* payload,
                     std::uint64_t* payload_bytes, std::byte* ws) {
    if (!valid_param(rate)) fail(errc::invalid_argument, "zfp takes a rate of 3..64 bits per value");
    const unsigned mb = maxbits(rate);
    const std::size_t G = groups(n);
    auto* counts = reinterpret_cast<std::uint64_t*>(ws);
    auto* bytes = reinterpret_cast<unsigned char*>(payload);
    const std::size_t sb = stream_bytes(n, rate);
    auto* stream = reinterpret_cast<std::uint64_t*>(payload);
    if constexpr (uses_team_kernels<Exec>) {
      if (G > 0)
        ex.launch(zfp_detail::team_league(n, zfp_detail::team_threads), zfp_detail::team_threads,
                  zfp_detail::encode_group_team<T>{in, n, mb, stream, counts});
    } else if (G > 0) {
      ex.for_each(G, zfp_detail::encode_group_kernel<T>{in, n, mb, stream, counts});
    }
    ex.exclusive_scan(counts, counts, G);
    if (G > 0)
      ex.for_each(G, zfp_detail::scatter_nonfinite_kernel<T>{in, n, counts, bytes + sb + 8, index_bytes(n)});
    ex.for_each(1, zfp_detail::finish_payload_kernel{counts + G, bytes + sb, sb, entry_bytes(n), payload_bytes});
  }

  template <class Exec>
  static void decode(const Exec& ex, const std::byte* payload, std::size_t payload_bytes, std::size_t n,
                     unsigned rate, T* out, std::byte* ws) {
    if (!valid_param(rate)) fail(errc::corrupt_frame, "zfp rate " + std::to_string(rate) + " is not 3..64");
    const std::size_t sb = stream_bytes(n, rate);
    if (payload_bytes < sb + 8)
      fail(errc::corrupt_frame, "zfp payload has " + std::to_string(payload_bytes) + " bytes, " +
                                    std::to_string(n) + " values at rate " + std::to_string(rate) + " need at least " +
                                    std::to_string(sb + 8));
    const auto* bytes = reinterpret_cast<const unsigned char*>(payload);
    // The stream's last word and the count, in one copy.
    unsigned char tail[16] = {};
    const std::size_t at = sb >= 8 ? sb - 8 : sb;
    ex.to_host(tail + (sb >= 8 ? 0 : 8), bytes + at, sb >= 8 ? 16 : 8);
    std::uint64_t last = 0, count = 0;
    std::memcpy(&last, tail, 8);
    std::memcpy(&count, tail + 8, 8);
    if (sb >= 8) {
      const std::size_t used = (blocks(n) % 64) * maxbits(rate) % 64;  // bits used in the last word (0: all)
      if (used != 0 && (last >> used) != 0) fail(errc::corrupt_frame, "zfp stream padding is not zero");
    }
    const std::size_t e = entry_bytes(n);
    if (count > n) fail(errc::corrupt_frame, "zfp payload lists " + std::to_string(count) + " non-finite values of " +
                                                 std::to_string(n));
    if (payload_bytes - sb - 8 != count * e)
      fail(errc::corrupt_frame, "zfp payload has " + std::to_string(payload_bytes) + " bytes, its " +
                                    std::to_string(count) + " non-finite entries need " +
                                    std::to_string(sb + 8 + count * e));
    const unsigned char* list = bytes + sb + 8;
    if (count > 0) {
      const std::size_t chunks = static_cast<std::size_t>((count + zfp_detail::check_chunk - 1) / zfp_detail::check_chunk);
      auto* flags = reinterpret_cast<std::uint64_t*>(ws);
      ex.for_each(chunks, zfp_detail::validate_nonfinite_kernel<T>{list, count, n, index_bytes(n), flags});
      ex.for_each(1, zfp_detail::or_reduce_kernel{flags, chunks});
      std::uint64_t bad = 0;
      ex.to_host(&bad, flags + chunks, 8);
      if (bad)
        fail(errc::corrupt_frame,
             "zfp non-finite list is malformed (index out of range, not increasing, or a finite pattern)");
    }
    const std::size_t G = groups(n);
    if constexpr (uses_team_kernels<Exec>) {
      if (G > 0)
        ex.launch(zfp_detail::team_league(n, zfp_detail::team_threads), zfp_detail::team_threads,
                  zfp_detail::decode_group_team<T>{bytes, n, maxbits(rate), out});
    } else if (G > 0) {
      ex.for_each(G, zfp_detail::decode_group_kernel<T>{bytes, stream_words(n, rate), n, maxbits(rate), out});
    }
    if (count > 0)
      ex.for_each(static_cast<std::size_t>(count), zfp_detail::patch_nonfinite_kernel<T>{list, index_bytes(n), out});
  }

  // Device executors that run team kernels code a team of groups at a time, a thread per
  // block (codec/zfp/team.hpp); host executors, and executors without launch, run the group
  // kernels (AVX2 where the CPU has it). The bytes are the same.
  template <class Exec>
  static constexpr bool uses_team_kernels = Exec::is_device && exec::team_executor<Exec>;
};

}  // namespace hcomm::codec
