// hcomm/codec/mpc.hpp: MPC, a lossless float compressor built only from parallel steps
// (after Yang, Mukka, Hesaaraki and Burtscher, "MPC: A Massively Parallel Compression
// Algorithm for Scientific Data", IEEE Cluster 2015), for float32, float64 and the 16-bit
// types (bf16, f16: the same algorithm on 16-bit words, lossless like the others).
//
//   hcomm::codec::engine<> eng;
//   auto frame = eng.compress(hcomm::codec::parse_config("mpc"), std::span<const float>(x));   // auto stride
//   auto frame3 = eng.compress(hcomm::codec::parse_config("mpc:3"), std::span<const float>(x)); // stride 3
//   eng.decompress(frame, std::span<float>(y));  // y is bit-for-bit x, NaN payloads included
//
// The algorithm, on the values' bit patterns as unsigned words (W = 16, 32 or 64 bits):
//  1. independent chunks of 1024 values;
//  2. delta inside the chunk: v[i] -= v[i - dim] (wrapping integer subtraction);
//  3. bit transposition of every group of W consecutive words (W x W bit matrix), so that
//     word k holds bit W-1-k of all W values (word 0 = the sign bits);
//  4. a second delta over the transposed words of the group: t[k] -= t[k-1] (k >= 1);
//  5. zero-word elimination: one W-bit bitmap per group marks the non-zero words, which
//     are packed densely;
//  6. a prefix sum over the chunk sizes places every chunk.
// Steps 3-4 stay inside one group, so groups are independent given the input; step 2
// reaches at most 32 values back, into the same chunk.
//
// What differs from the original:
//  - no inter-block busy wait: encoding is two passes. Pass 1 compresses each chunk into a
//    worst-case slot of the workspace and records its size; an exclusive scan on the
//    executor gives the offsets; pass 2 moves each chunk into place. A device, or a host
//    executor with several threads, does this for all chunks at once; a one-thread host
//    executor goes in batches of 64 chunks, pass 2 of one batch alongside pass 1 of the
//    next, so that the slots stay in its L2 cache instead of going through memory twice.
//  - param 0 = automatic stride: a kernel runs steps 2-4 for every stride 1..32 on up to
//    64 sampled groups and keeps the stride with the fewest surviving words (a larger
//    stride must save over 1/64 of the words to beat a smaller one, so noise keeps stride
//    1, the fastest to decode). The chosen stride is stored in the payload header.
//  - raw fallback: when the packed payload would not be smaller than the raw values, the
//    payload is the header followed by the raw values, so it never exceeds raw + 16 bytes.
//  - any size: the last chunk may be short and its last group partial (its missing values
//    are zero residuals).
//  - a per-chunk size index, so that the decoder places chunks in parallel and can check
//    every size against the bitmaps before it writes anything.
//  Every decision (stride, raw or packed, payload size) is taken by kernels reading
//  executor memory: encoding never synchronises the host.
//  Device executors code float and 16-bit chunks with team kernels (codec/mpc/team.hpp: a
//  chunk per thread block, warp ballots, shuffles and bit transposes, words placed by team
//  scans). On x86-64 hosts the chunk kernels also carry an AVX2 version (an intrinsics path
//  for float and for double chunks, the portable body compiled for AVX2 for 16-bit ones),
//  picked at run time (codec/mpc/avx2/); the bytes do not depend on it.
//
// Payload layout (little-endian; the frame header in codec/frame.hpp comes before it):
//   offset 0   u8   mode: 0 = raw, 1 = packed
//          1   u8   delta stride 1..32 (the chosen one when param was 0)
//          2   u8   bytes per value (2, 4 or 8; bf16 and f16 are told apart by the frame's dtype)
//          3   u8   format version (1)
//          4   u32  zero
//          8   u64  chunk count = ceil(n / 1024)
//   raw:    16 + n * sizeof(T) bytes of values.
//   packed: 16  index: chunk count x u16, size of each chunk in words, zero-padded to a
//               multiple of 8 bytes (so chunks start word-aligned);
//           then the chunks back to back, each: G = ceil(values / W) bitmap words (bit k of
//           bitmap g: word k of group g is non-zero), then the non-zero words row by row:
//           word 0 of groups 0..G-1, word 1 of groups 0..G-1, ... (skipping zero words).
//           Words are W bits. (Row order lets the coder copy all-non-zero rows whole and
//           skip all-zero rows; it holds the same words as group order.)
//
// Decoding validates the mode, stride (and that it equals param when param is not 0), value
// size, version, chunk count, payload length, every chunk size against its value count and
// the body, the index padding, and every chunk's bitmap popcount against its size; it
// throws hcomm::error(errc::corrupt_frame) before writing any output when one fails.
//
// Costs: workspace ~1.04 x the input (the pass-1 slots) plus 24 bytes per chunk; the index
// is 2 bytes per 1024 values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "hcomm/codec/mpc/decode_kernels.hpp"
#include "hcomm/codec/mpc/encode_kernels.hpp"
#include "hcomm/codec/mpc/team.hpp"
#include "hcomm/core/checksum.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/codec/id.hpp"
#include "hcomm/codec/traits.hpp"

namespace hcomm::codec {

template <element T>
struct mpc_codec {
  static constexpr codec_id id = codec_id::mpc;
  static constexpr std::string_view name = "mpc";
  static constexpr bool lossy = false;
  static constexpr param_use parameter = param_use::optional;
  static constexpr std::string_view usage = "mpc[:DIM]";
  static constexpr std::string_view param_help = "mpc takes a dimension 0 (auto) or 1..32";
  using value_type = T;
  using word_type = word_of<T>;

  static constexpr bool valid_param(unsigned p) noexcept { return p <= mpc_detail::max_dim; }
  static constexpr std::size_t max_payload_bytes(std::size_t n, unsigned) noexcept {
    return mpc_detail::head_bytes + n * sizeof(T);
  }
  // The least payload of n values (n <= max_count): the raw fallback (header + values) or,
  // when smaller, a packed payload of all-zero groups (header, index, one zero bitmap word per
  // group of W values and no other word). All-zero chunks compress that far, so a payload of
  // P bytes holds at most about 15.75 (16-bit), 31.5 (float) or 63 (double) times P bytes of values.
  static std::size_t min_payload_bytes(std::size_t n, unsigned) noexcept {
    using namespace mpc_detail;
    constexpr std::size_t W = sizeof(word_type) * 8;
    const std::size_t raw = head_bytes + n * sizeof(T);
    if (n == 0) return raw;  // packed payloads hold at least one value
    const std::size_t packed = head_bytes + index_bytes(chunk_count(n)) + (n + W - 1) / W * sizeof(word_type);
    return packed < raw ? packed : raw;
  }
  static constexpr std::size_t workspace_bytes(std::size_t n, unsigned) noexcept {
    const layout w = layout_for(n);
    return w.total;
  }

  // Number of sampled groups for the automatic stride. One sample costs about as much as
  // encoding one chunk (it tries all 32 strides at once), so take one per 8 chunks: ~12% of
  // the encoding work up to 512 chunks, then at most 64 samples (~6% at 1 Mi floats).
  static constexpr std::size_t sample_count(std::size_t n) noexcept {
    constexpr std::size_t W = sizeof(word_type) * 8;
    const std::size_t groups = (n + W - 1) / W;
    std::size_t s = mpc_detail::chunk_count(n) / 8;
    if (s < 1) s = 1;
    if (s > mpc_detail::max_samples) s = mpc_detail::max_samples;
    return s < groups ? s : groups;
  }

  // checksum (optional): a one-thread host hashes the packed chunks while it moves them into
  // place (they are in its cache then) and leaves the header blocks and a raw fallback to the
  // engine.
  template <class Exec>
  static void encode(const Exec& ex, const T* in, std::size_t n, unsigned param, std::byte* payload,
                     std::uint64_t* payload_bytes, std::byte* workspace, fused_checksum* checksum = nullptr) {
    using namespace mpc_detail;
    if (!valid_param(param)) fail(errc::invalid_argument, "mpc takes a dimension 0 (auto) or 1..32");
    const slots s = slots_for(workspace, n);
    const std::size_t chunks = chunk_count(n);
    if (param != 0 || n == 0) {
      ex.for_each(1, set_dim_kernel{s.control, param != 0 ? param : 1u});
    } else {
      const std::size_t samples = sample_count(n);
      ex.for_each(samples, sample_dims_kernel<T>{in, n, samples, s.counts});
      ex.for_each(1, pick_dim_kernel{s.counts, samples, s.control});
    }
    auto* out = reinterpret_cast<unsigned char*>(payload);
    // One host thread moves the chunks into place in order and hashes them on the way; the
    // body starts after the header and the index, which are written last.
    block_hasher hasher(checksum ? checksum->block_hashes : nullptr, checksum_blocks(head_bytes + index_bytes(chunks)));
    block_hasher* fused = checksum != nullptr && one_thread(ex) ? &hasher : nullptr;
    std::uint64_t* done = s.control + 1;  // packed words placed so far
    ex.fill_zero(done, sizeof(std::uint64_t));
    if constexpr (Exec::is_device) {
      // All chunks at once.
      if (chunks > 0) {
        if constexpr (uses_team_kernels<Exec> && sizeof(T) == 2)
          ex.launch(chunks, team_threads,
                    encode_chunk_team_16{reinterpret_cast<const unsigned char*>(in), n, s.control, s.scratch, s.sizes});
        else if constexpr (uses_team_kernels<Exec>)
          ex.launch(chunks, team_threads, encode_chunk_team_f32{in, n, s.control, s.scratch, s.sizes});
        else
          ex.for_each(chunks, encode_chunk_kernel<T>{in, n, s.control, s.scratch, s.sizes, 0});
        ex.exclusive_scan(s.sizes, s.offsets, chunks);
        ex.for_each(chunks, gather_kernel<T>{n, chunks, 0, s.scratch, s.offsets, done, out});
        ex.for_each(1, advance_kernel{done, s.offsets + chunks});
      }
    } else {
      // One thread goes through the input in batches whose slots stay in its L2 cache, two
      // sets of slots in turn: while batch b is encoded into one set, batch b - 1 is moved
      // out of the other (its offsets are the scan of its sizes, *done the words before it).
      // Several threads take one batch of everything (host_batch).
      constexpr std::size_t slot = geometry<word_type>::slot_words;
      const std::size_t batch = host_batch(ex, chunks);
      std::size_t prev_first = 0, prev_count = 0;
      for (std::size_t first = 0, b = 0; first < chunks + batch; first += batch, ++b) {
        const std::size_t count = first < chunks ? (chunks - first < batch ? chunks - first : batch) : 0;
        if (count == 0 && prev_count == 0) break;
        // (one batch of everything only ever uses set 0)
        word_type* cur = s.scratch + (batch < chunks ? (b % 2) * batch * slot : 0);
        const word_type* prev = s.scratch + (batch < chunks ? ((b + 1) % 2) * batch * slot : 0);
        ex.for_each(count > prev_count ? count : prev_count,
                    encode_gather_kernel<T>{encode_chunk_kernel<T>{in, n, s.control, cur, s.sizes, first}, count,
                                            gather_kernel<T>{n, chunks, prev_first, prev, s.offsets, done, out, fused},
                                            prev_count});
        if (prev_count > 0) ex.for_each(1, advance_kernel{done, s.offsets + prev_count});
        if (count > 0) ex.exclusive_scan(s.sizes + first, s.offsets, count);
        prev_first = first;
        prev_count = count;
      }
    }
    if constexpr (Exec::is_device) {
      if (chunks > 0) ex.for_each(chunks, raw_fallback_kernel<T>{in, n, chunks, done, out});
    } else if (chunks > 0) {
      // A host executor reads the total (to_host: a fence where the executor needs one), so
      // that the usual case costs no parallel region.
      std::uint64_t total = 0;
      ex.to_host(&total, done, sizeof total);
      const std::size_t packed_bytes = head_bytes + index_bytes(chunks) + total * sizeof(word_type);
      if (packed_bytes >= head_bytes + n * sizeof(T)) {
        ex.for_each(chunks, raw_fallback_kernel<T>{in, n, chunks, done, out});
      } else if (fused != nullptr) {
        fused->finish(packed_bytes);
        checksum->begin = fused->first();
        checksum->end = fused->end();
      }
    }
    ex.for_each(1, finish_kernel<T>{n, chunks, done, s.control, out, payload_bytes});
  }

  template <class Exec>
  static void decode(const Exec& ex, const std::byte* payload, std::size_t payload_bytes, std::size_t n,
                     unsigned param, T* out, std::byte* workspace) {
    using namespace mpc_detail;
    const auto* p = reinterpret_cast<const unsigned char*>(payload);
    if (payload_bytes < head_bytes)
      fail(errc::corrupt_frame, "mpc payload of " + std::to_string(payload_bytes) + " bytes has no header");
    unsigned char h[head_bytes];
    ex.to_host(h, p, head_bytes);
    const unsigned mode = h[0], dim = h[1], value_bytes = h[2], version = h[3];
    std::uint32_t zero;
    std::uint64_t chunks;
    std::memcpy(&zero, h + 4, 4);
    std::memcpy(&chunks, h + 8, 8);
    if (version != format_version) fail(errc::corrupt_frame, "mpc payload version " + std::to_string(version));
    if (value_bytes != sizeof(T))
      fail(errc::corrupt_frame, "mpc payload holds " + std::to_string(value_bytes) + "-byte values, expected " +
                                    std::to_string(sizeof(T)));
    if (zero != 0) fail(errc::corrupt_frame, "mpc payload header: reserved field is not zero");
    if (dim < 1 || dim > max_dim) fail(errc::corrupt_frame, "mpc payload: stride " + std::to_string(dim));
    if (param != 0 && dim != param)
      fail(errc::corrupt_frame, "mpc payload stride " + std::to_string(dim) + " differs from the frame's " +
                                    std::to_string(param));
    if (chunks != chunk_count(n))
      fail(errc::corrupt_frame, "mpc payload has " + std::to_string(chunks) + " chunks, " + std::to_string(n) +
                                    " values need " + std::to_string(chunk_count(n)));
    if (mode == mode_raw) {
      if (payload_bytes != head_bytes + n * sizeof(T))
        fail(errc::corrupt_frame, "raw mpc payload has " + std::to_string(payload_bytes) + " bytes, expected " +
                                      std::to_string(head_bytes + n * sizeof(T)));
      ex.copy(out, p + head_bytes, n * sizeof(T));
      return;
    }
    if (mode != mode_mpc) fail(errc::corrupt_frame, "mpc payload mode " + std::to_string(mode));
    if (n == 0) fail(errc::corrupt_frame, "packed mpc payload without values");
    const std::size_t ib = index_bytes(chunks);
    if (payload_bytes < head_bytes + ib || (payload_bytes - head_bytes - ib) % sizeof(word_type) != 0 ||
        payload_bytes >= head_bytes + n * sizeof(T))
      fail(errc::corrupt_frame, "packed mpc payload of " + std::to_string(payload_bytes) +
                                    " bytes cannot hold " + std::to_string(chunks) + " chunks");
    const std::size_t body_words = (payload_bytes - head_bytes - ib) / sizeof(word_type);
    const slots s = slots_for(workspace, n);
    ex.for_each(chunks, read_index_kernel{p, s.sizes});
    ex.exclusive_scan(s.sizes, s.sizes, chunks);
    ex.for_each(chunks, check_chunk_kernel<T>{p, n, chunks, body_words, s.sizes, s.bad});
    ex.exclusive_scan(s.bad, s.bad, chunks);
    std::uint64_t total = 0, bad = 0;
    ex.to_host(&total, s.sizes + chunks, sizeof total);
    ex.to_host(&bad, s.bad + chunks, sizeof bad);
    if (total != body_words)
      fail(errc::corrupt_frame, "mpc chunk index sums to " + std::to_string(total) + " words, the payload has " +
                                    std::to_string(body_words));
    if (bad != 0)
      fail(errc::corrupt_frame, "mpc payload: " + std::to_string(bad) +
                                    " chunk(s) with a size that does not match their bitmaps");
    if constexpr (uses_team_kernels<Exec> && sizeof(T) == 2)
      ex.launch(chunks, team_threads,
                decode_chunk_team_16{p, n, chunks, dim, s.sizes, reinterpret_cast<unsigned char*>(out)});
    else if constexpr (uses_team_kernels<Exec>)
      ex.launch(chunks, team_threads, decode_chunk_team_f32{p, n, chunks, dim, s.sizes, out});
    else
      ex.for_each(chunks, decode_chunk_kernel<T>{p, n, chunks, dim, s.sizes, out});
  }

 private:
  // Device executors that run team kernels code float and 16-bit chunks a team per chunk
  // (codec/mpc/team.hpp); double chunks, and executors without launch, take the flat kernels.
  template <class Exec>
  static constexpr bool uses_team_kernels =
      Exec::is_device && exec::team_executor<Exec> && (sizeof(T) == 4 || sizeof(T) == 2);

  // Chunks per encoding batch on the host. One thread: 64 chunks (256 KiB of float input and
  // twice ~270 KiB of slots stay in L2; larger batches go through memory). Several threads:
  // every batch is one parallel region, whose barrier waits out a scheduler time slice
  // whenever a thread is preempted, so several threads, or an executor that does not say its
  // thread count, take all chunks in one batch, as a device does.
  template <class Exec>
  static std::size_t host_batch(const Exec& ex, std::size_t chunks) noexcept {
    if (one_thread(ex)) return 64;
    return chunks > 0 ? chunks : 1;
  }

  // True for a host executor that runs for_each on one thread (threads = 1, or OpenMP's
  // default of one thread, e.g. OMP_NUM_THREADS=1 under MPI).
  template <class Exec>
  static bool one_thread(const Exec& ex) noexcept {
    if constexpr (requires { ex.effective_threads(); }) return ex.effective_threads() == 1;
    return false;
  }

  struct layout {
    std::size_t counts, sizes, offsets, bad, scratch, total;
  };
  static constexpr std::size_t align64(std::size_t b) noexcept { return (b + 63) / 64 * 64; }
  static constexpr layout layout_for(std::size_t n) noexcept {
    const std::size_t chunks = mpc_detail::chunk_count(n);
    layout w{};
    w.counts = 64;  // [0, 64): control words (the stride, the packed words placed so far)
    w.sizes = w.counts + align64(mpc_detail::max_samples * mpc_detail::max_dim * 8);
    w.offsets = w.sizes + align64((chunks + 1) * 8);
    w.bad = w.offsets + align64((chunks + 1) * 8);
    w.scratch = w.bad + align64((chunks + 1) * 8);
    // A device encodes all chunks in one batch, so the slots are sized for all of them (the
    // host touches only two batches' worth).
    w.total = w.scratch + chunks * mpc_detail::geometry<word_type>::slot_words * sizeof(word_type);
    return w;
  }
  struct slots {
    std::uint64_t* control;
    std::uint64_t* counts;
    std::uint64_t* sizes;
    std::uint64_t* offsets;
    std::uint64_t* bad;
    word_type* scratch;
  };
  static slots slots_for(std::byte* ws, std::size_t n) {
    const layout w = layout_for(n);
    return slots{reinterpret_cast<std::uint64_t*>(ws),           reinterpret_cast<std::uint64_t*>(ws + w.counts),
                 reinterpret_cast<std::uint64_t*>(ws + w.sizes), reinterpret_cast<std::uint64_t*>(ws + w.offsets),
                 reinterpret_cast<std::uint64_t*>(ws + w.bad),   reinterpret_cast<word_type*>(ws + w.scratch)};
  }
};

}  // namespace hcomm::codec
