// hcomm/core/checksum.hpp: the 64-bit checksums of hcomm frames.
//
//   std::uint64_t h = hcomm::hash64(bytes, n, seed);        // headers, lists of hashes
//   std::uint64_t b = hcomm::block_hash64(bytes, n, seed);  // payload blocks
//   std::uint64_t c = hcomm::payload_checksum(payload, n);  // what a frame header records
//
// hash64 is XXH64-style: four multiply-rotate lanes over 8-byte words, then an avalanche
// (core/hash64.hpp).
// block_hash64 is built for speed on long inputs (XXH3-style): eight 64-bit lanes over
// 64-byte stripes; each 8-byte word d is xored with a key that changes with the stripe, the
// lane adds lo32 * hi32 of that, and its neighbour lane adds d itself. A flipped bit always
// changes one lane's sum, a moved stripe meets another key, and the lanes go through an
// avalanche at the end (core/block_hash_lanes.hpp). AVX2 does a stripe in a few instructions
// (core/avx2/block_hash_lanes.hpp), several times XXH64's speed, so hashing costs little
// beside a codec and runs at the memory's read speed from memory.
//
// Frames hash their payload in independent 64 KiB blocks (seed = block index) and then the
// block hashes with hash64 (seed = payload bytes), so the checksum runs in parallel on every
// executor (checksum_block_kernel / checksum_combine_kernel) and is the same on all of them.
// A codec may hash blocks itself while it writes them (block_hasher, fused_checksum): same
// result, one pass over the payload fewer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hcomm/core/avx2/block_hash_lanes.hpp"
#include "hcomm/core/block_hash_lanes.hpp"
#include "hcomm/core/cpu_features.hpp"
#include "hcomm/core/hash64.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm {

// ---- block_hash64 ----------------------------------------------------------------------------

namespace detail::bh {
// count whole stripes from p: the AVX2 variant on hosts with the AVX2 tier.
HCOMM_HOST_DEVICE void add_stripes(lanes& l, const unsigned char* p, std::size_t count) {
  cpu::dispatch(stripes{l}, p, count);
}
}  // namespace detail::bh

HCOMM_HOST_DEVICE std::uint64_t block_hash64(const void* data, std::size_t len, std::uint64_t seed) {
  using namespace detail::bh;
  const auto* p = static_cast<const unsigned char*>(data);
  lanes l(seed);
  const std::size_t whole = len / stripe_bytes;
  add_stripes(l, p, whole);
  return l.finish(p + whole * stripe_bytes, len % stripe_bytes, len, seed);
}

// ---- frame payload checksum ------------------------------------------------------------------

inline constexpr std::size_t checksum_block_bytes = 64 * 1024;

HCOMM_HOST_DEVICE constexpr std::size_t checksum_blocks(std::size_t bytes) noexcept {
  return (bytes + checksum_block_bytes - 1) / checksum_block_bytes;
}

// Hashes block i of a payload whose size lives in executor memory (so the size need not be
// known on the host: CUDA compression never synchronises to learn it).
//
// Work item j hashes block count - 1 - j: a one-thread host goes through the payload back to
// front, so that its front is what stays in the last-level cache for the decoder, which
// reads front to back next (payloads larger than that cache).
// Blocks in [skip_begin, skip_end) were hashed already (block_hasher, by the codec).
struct checksum_block_kernel {
  const unsigned char* data;
  const std::uint64_t* size;  // executor memory
  std::uint64_t* block_hashes;
  std::size_t count;          // work items (blocks of the largest possible payload)
  std::size_t skip_begin = 0, skip_end = 0;
  HCOMM_HOST_DEVICE void operator()(std::size_t j) const {
    const std::size_t i = count - 1 - j;
    if (i >= skip_begin && i < skip_end) return;
    const std::uint64_t n = *size;
    const std::uint64_t begin = static_cast<std::uint64_t>(i) * checksum_block_bytes;
    if (begin >= n) {
      block_hashes[i] = 0;
      return;
    }
    const std::uint64_t len = (n - begin) < checksum_block_bytes ? (n - begin) : checksum_block_bytes;
    block_hashes[i] = block_hash64(data + begin, static_cast<std::size_t>(len), i);
  }
};

// One work item: hashes the used block hashes into the final checksum.
struct checksum_combine_kernel {
  const std::uint64_t* size;
  const std::uint64_t* block_hashes;
  std::uint64_t* out;
  HCOMM_HOST_DEVICE void operator()(std::size_t) const {
    const std::uint64_t n = *size;
    *out = hash64(block_hashes, static_cast<std::size_t>(checksum_blocks(n)) * 8, n);
  }
};

// The team kernel of checksum_block_kernel (device executors): team i hashes block i, its
// threads taking stripes t, t + T, ...; a lane's sum is a sum of per-stripe terms, so the
// team's per-thread partial sums reduced in any order give the serial lanes exactly, and
// one thread finishes the block (tail stripe, length, avalanche).
inline constexpr int checksum_team_threads = 256;  // team size on device executors
struct checksum_block_team_kernel {
  static constexpr int max_team = 1024;
  static constexpr const char* name = "checksum_block";
  const unsigned char* data;
  const std::uint64_t* size;  // executor memory
  std::uint64_t* block_hashes;
  std::size_t skip_begin = 0, skip_end = 0;
  std::size_t scratch_bytes(int) const { return 0; }

  template <class Team>
  HCOMM_HOST_DEVICE void operator()(Team& team) const {
    using namespace detail::bh;
    const std::size_t i = team.league_rank();
    if (i >= skip_begin && i < skip_end) return;  // uniform: the whole team leaves
    const std::uint64_t n = *size;
    const std::uint64_t begin = static_cast<std::uint64_t>(i) * checksum_block_bytes;
    const std::uint64_t len = begin >= n ? 0 : ((n - begin) < checksum_block_bytes ? (n - begin) : checksum_block_bytes);
    const std::size_t whole = static_cast<std::size_t>(len / stripe_bytes);
    const unsigned char* p = data + begin;
    // acc[j] of the serial lanes = init(j) + seed + the sum of every stripe's term for j.
    decltype(team.template per_thread<std::uint64_t>()) part[8] = {
        team.template per_thread<std::uint64_t>(), team.template per_thread<std::uint64_t>(),
        team.template per_thread<std::uint64_t>(), team.template per_thread<std::uint64_t>(),
        team.template per_thread<std::uint64_t>(), team.template per_thread<std::uint64_t>(),
        team.template per_thread<std::uint64_t>(), team.template per_thread<std::uint64_t>()};
    team.for_threads([&](int t) {
      std::uint64_t acc[8] = {};
      for (std::size_t s = static_cast<std::size_t>(t); s < whole; s += static_cast<std::size_t>(team.size())) {
        const std::uint64_t shift = s * key_step;
        std::uint64_t d[8];
        for (int j = 0; j < 8; ++j) d[j] = detail::h64::load64(p + s * stripe_bytes + 8 * j);
        for (int j = 0; j < 8; ++j) {
          const std::uint64_t x = d[j] ^ (key(j) + shift);
          acc[j] += (x & 0xFFFFFFFFull) * (x >> 32);
        }
        for (int j = 0; j < 8; ++j) acc[j ^ 1] += d[j];
      }
      for (int j = 0; j < 8; ++j) part[j][t] = acc[j];
    });
    std::uint64_t total[8];
    for (int j = 0; j < 8; ++j) total[j] = team.reduce(part[j], exec::sum{});
    team.for_threads([&](int t) {
      if (t != 0) return;
      if (len == 0) {
        block_hashes[i] = 0;
        return;
      }
      lanes l(i);
      for (int j = 0; j < 8; ++j) l.acc[j] += total[j];
      l.stripe = whole;
      block_hashes[i] = l.finish(p + whole * stripe_bytes, static_cast<std::size_t>(len % stripe_bytes), len, i);
    });
  }
};

// The payload checksum of n bytes in host memory, computed serially (tools and tests; the
// engine runs the two kernels on its executor).
inline std::uint64_t payload_checksum(const void* payload, std::size_t n) {
  const std::size_t blocks = checksum_blocks(n);
  std::vector<std::uint64_t> hashes(blocks + 1);  // (+1: never empty, the kernels index it)
  const std::uint64_t size = n;
  const checksum_block_kernel block{static_cast<const unsigned char*>(payload), &size, hashes.data(), blocks};
  for (std::size_t j = 0; j < blocks; ++j) block(j);
  std::uint64_t out = 0;
  checksum_combine_kernel{&size, hashes.data(), &out}(0);
  return out;
}

// What the engine hands a codec's encode that can hash while it writes: where block hashes
// go; the codec sets [begin, end) to the blocks it hashed (the engine hashes the others).
struct fused_checksum {
  std::uint64_t* block_hashes;
  std::size_t begin = 0, end = 0;
};

// The block hashes of a payload computed from the pieces a codec writes, in payload order,
// while they are still in its cache: a one-thread host encoder calls feed() with what it
// stores, so the checksum costs no second pass over the payload from memory. Gives exactly
// checksum_block_kernel's hashes. Blocks before first_block (where a codec writes its own
// header at the end) are left to the kernel, as is everything when the pieces were not
// contiguous (then the range [first(), end()) is empty).
class block_hasher {
 public:
  HCOMM_HOST_DEVICE block_hasher(std::uint64_t* block_hashes, std::size_t first_block)
      : hashes_(block_hashes), first_(first_block), block_(first_block), pos_(first_block * checksum_block_bytes),
        lanes_(first_block) {}

  // Bytes [at, at + len) of the payload. Bytes before the first block are skipped.
  HCOMM_HOST_DEVICE void feed(std::size_t at, const unsigned char* p, std::size_t len) {
    const std::size_t start = first_ * checksum_block_bytes;
    if (at + len <= start) return;
    if (at < start) {
      p += start - at;
      len -= start - at;
      at = start;
    }
    if (at != pos_) ok_ = false;
    if (!ok_) return;
    pos_ += len;
    while (len > 0) {
      const std::size_t room = checksum_block_bytes - fill_;
      const std::size_t take = len < room ? len : room;
      absorb(p, take);
      p += take;
      len -= take;
      if (fill_ == checksum_block_bytes) close_block();
    }
  }
  // The payload is `bytes` long: hashes its last, partial block (when fed up to there).
  HCOMM_HOST_DEVICE void finish(std::size_t bytes) {
    if (!ok_ || bytes < first_ * checksum_block_bytes || pos_ != bytes) {
      ok_ = false;
      return;
    }
    if (fill_ > 0) close_block();
  }
  // Blocks whose hashes are written: [first, end) (after finish; empty on a gap).
  HCOMM_HOST_DEVICE std::size_t first() const { return first_; }
  HCOMM_HOST_DEVICE std::size_t end() const { return ok_ ? block_ : first_; }

 private:
  static constexpr std::size_t S = detail::bh::stripe_bytes;
  HCOMM_HOST_DEVICE void absorb(const unsigned char* p, std::size_t len) {
    fill_ += len;
    if (tail_ > 0) {
      const std::size_t k = len < S - tail_ ? len : S - tail_;
      std::memcpy(buf_ + tail_, p, k);
      tail_ += k;
      p += k;
      len -= k;
      if (tail_ < S) return;
      lanes_.add_stripe(buf_);
      tail_ = 0;
    }
    detail::bh::add_stripes(lanes_, p, len / S);
    p += len / S * S;
    len %= S;
    std::memcpy(buf_, p, len);
    tail_ = len;
  }
  HCOMM_HOST_DEVICE void close_block() {
    hashes_[block_] = lanes_.finish(buf_, tail_, fill_, block_);
    ++block_;
    lanes_ = detail::bh::lanes(block_);
    fill_ = 0;
    tail_ = 0;
  }

  std::uint64_t* hashes_;
  std::size_t first_, block_, pos_;
  detail::bh::lanes lanes_;
  std::size_t fill_ = 0;  // bytes of the current block so far
  std::size_t tail_ = 0;  // of which not yet in a stripe (in buf_)
  unsigned char buf_[detail::bh::stripe_bytes] = {};
  bool ok_ = true;
};

}  // namespace hcomm
