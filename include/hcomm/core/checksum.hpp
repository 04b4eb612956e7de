// hcomm/core/checksum.hpp: the 64-bit payload checksum of hcomm frames.
//
//   std::uint64_t h = hcomm::hash64(bytes, n, seed);
//
// XXH64-style: four multiply-rotate lanes over 8-byte words, then an avalanche. Any single
// bit flip changes the result. Frames hash their payload in independent 64 KiB blocks and
// then hash the block hashes, so the checksum runs in parallel on every executor
// (checksum_block_kernel / checksum_combine_kernel) and is the same on all of them. A codec
// may hash blocks itself while it writes them (block_hasher, fused_checksum): same result,
// one pass over the payload fewer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/core/macros.hpp"

namespace hcomm {

namespace detail::h64 {
inline constexpr std::uint64_t p1 = 0x9E3779B185EBCA87ull;
inline constexpr std::uint64_t p2 = 0xC2B2AE3D27D4EB4Full;
inline constexpr std::uint64_t p3 = 0x165667B19E3779F9ull;
inline constexpr std::uint64_t p4 = 0x85EBCA77C2B2AE63ull;
inline constexpr std::uint64_t p5 = 0x27D4EB2F165667C5ull;

HCOMM_HOST_DEVICE std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
HCOMM_HOST_DEVICE std::uint64_t round(std::uint64_t acc, std::uint64_t in) {
  acc += in * p2;
  acc = rotl(acc, 31);
  return acc * p1;
}
HCOMM_HOST_DEVICE std::uint64_t merge(std::uint64_t acc, std::uint64_t v) {
  acc ^= round(0, v);
  return acc * p1 + p4;
}
// Unaligned little-endian loads (memcpy compiles to one mov on x86 and is legal in CUDA).
HCOMM_HOST_DEVICE std::uint64_t load64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
HCOMM_HOST_DEVICE std::uint32_t load32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
}  // namespace detail::h64

namespace detail::h64 {
// The four lanes over whole 32-byte stripes (inputs of 32 bytes or more).
struct lanes {
  std::uint64_t v1, v2, v3, v4;
  HCOMM_HOST_DEVICE explicit lanes(std::uint64_t seed) : v1(seed + p1 + p2), v2(seed + p2), v3(seed), v4(seed - p1) {}
  HCOMM_HOST_DEVICE void stripe(const unsigned char* p) {
    v1 = round(v1, load64(p));
    v2 = round(v2, load64(p + 8));
    v3 = round(v3, load64(p + 16));
    v4 = round(v4, load64(p + 24));
  }
  HCOMM_HOST_DEVICE std::uint64_t merged() const {
    std::uint64_t h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(h, v1);
    h = merge(h, v2);
    h = merge(h, v3);
    return merge(h, v4);
  }
};
// Adds the length, the last len % 32 bytes [p, end) and the avalanche to h.
HCOMM_HOST_DEVICE std::uint64_t finish(std::uint64_t h, std::uint64_t len, const unsigned char* p,
                                       const unsigned char* end) {
  h += len;
  while (end - p >= 8) {  // (not p + 8 <= end: no pointer past the end)
    h ^= round(0, load64(p));
    h = rotl(h, 27) * p1 + p4;
    p += 8;
  }
  if (end - p >= 4) {
    h ^= static_cast<std::uint64_t>(load32(p)) * p1;
    h = rotl(h, 23) * p2 + p3;
    p += 4;
  }
  while (p < end) {
    h ^= (*p) * p5;
    h = rotl(h, 11) * p1;
    ++p;
  }
  h ^= h >> 33;
  h *= p2;
  h ^= h >> 29;
  h *= p3;
  h ^= h >> 32;
  return h;
}
}  // namespace detail::h64

HCOMM_HOST_DEVICE std::uint64_t hash64(const void* data, std::size_t len, std::uint64_t seed) {
  using namespace detail::h64;
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + len;
  std::uint64_t h;
  if (len >= 32) {
    lanes l(seed);
    const unsigned char* const limit = end - 32;
    do {
      l.stripe(p);
      p += 32;
    } while (p <= limit);
    h = l.merged();
  } else {
    h = seed + p5;
  }
  return finish(h, len, p, end);
}

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
    block_hashes[i] = hash64(data + begin, static_cast<std::size_t>(len), i);
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
// contiguous (then range() is empty).
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
  HCOMM_HOST_DEVICE void absorb(const unsigned char* p, std::size_t len) {
    fill_ += len;
    if (tail_ > 0) {
      const std::size_t k = len < 32 - tail_ ? len : 32 - tail_;
      std::memcpy(buf_ + tail_, p, k);
      tail_ += k;
      p += k;
      len -= k;
      if (tail_ < 32) return;
      lanes_.stripe(buf_);
      tail_ = 0;
    }
    for (; len >= 32; len -= 32, p += 32) lanes_.stripe(p);
    std::memcpy(buf_, p, len);
    tail_ = len;
  }
  HCOMM_HOST_DEVICE void close_block() {
    const std::uint64_t h = fill_ >= 32 ? lanes_.merged() : block_ + detail::h64::p5;
    hashes_[block_] = detail::h64::finish(h, fill_, buf_, buf_ + tail_);
    ++block_;
    lanes_ = detail::h64::lanes(block_);
    fill_ = 0;
    tail_ = 0;
  }

  std::uint64_t* hashes_;
  std::size_t first_, block_, pos_;
  detail::h64::lanes lanes_;
  std::size_t fill_ = 0;  // bytes of the current block so far
  std::size_t tail_ = 0;  // of which not yet in a stripe (in buf_)
  unsigned char buf_[32] = {};
  bool ok_ = true;
};

}  // namespace hcomm
