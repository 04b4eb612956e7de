// hcomm/codec/zfp/bit_stream.hpp: the bit writer and readers of the ZFP stream: a group's
// 64-bit little-endian words, and one block of at most 64 bits held in a register.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/codec/zfp/traits.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec::zfp_detail {

// The writer stores whole words (never or-ed), so the output need not be zeroed first.
struct word_writer {
  u64* out;
  u64 acc = 0;
  unsigned fill = 0;
  HCOMM_HOST_DEVICE void put(u64 v, unsigned len) {  // 0 <= len <= 64, v < 2^len
    acc |= v << fill;
    const unsigned nf = fill + len;
    if (nf >= 64) {
      *out++ = acc;
      acc = fill ? v >> (64 - fill) : 0;
      fill = nf - 64;
    } else {
      fill = nf;
    }
  }
  HCOMM_HOST_DEVICE void skip(unsigned len) {  // len zero bits
    fill += len;
    while (fill >= 64) {
      *out++ = acc;
      acc = 0;
      fill -= 64;
    }
  }
  HCOMM_HOST_DEVICE void flush() {
    if (fill) *out++ = acc;
    acc = 0;
    fill = 0;
  }
};

// Reads 64 bits from any bit position of the stream (little-endian words, possibly unaligned
// memory). It may read the one word after the stream: the payload always has the 8-byte
// count there, and every caller masks what it uses to the block's remaining budget.
struct word_reader {
  const unsigned char* base;
  HCOMM_HOST_DEVICE u64 word(std::size_t i) const {
    u64 w;
    std::memcpy(&w, base + 8 * i, 8);
    return w;
  }
  HCOMM_HOST_DEVICE u64 peek(std::size_t p) const {  // p < 64 * stream words
    const std::size_t i = p >> 6;
    const unsigned o = static_cast<unsigned>(p & 63u);
    return (word(i) >> o) | ((word(i + 1) << 1) << (63 - o));
  }
};

// A block of at most 64 bits is assembled in one register and stored with a single put
// (only called with pos < 64 when len > 0: the coder never writes once its budget is spent).
struct block_writer_small {
  u64 acc = 0;
  unsigned pos = 0;
  HCOMM_HOST_DEVICE void put(u64 v, unsigned len) {
    acc |= v << pos;
    pos += len;
  }
  HCOMM_HOST_DEVICE void skip(unsigned len) { pos += len; }
};
// ... and read from one register (bits past the block masked off).
struct block_source_small {
  u64 bits;
  HCOMM_HOST_DEVICE u64 peek(unsigned q) const { return bits >> q; }
};
// Larger blocks are read from the stream directly.
struct block_source_stream {
  const word_reader* rd;
  std::size_t p0;
  HCOMM_HOST_DEVICE u64 peek(unsigned q) const { return rd->peek(p0 + q); }
};
}  // namespace hcomm::codec::zfp_detail
