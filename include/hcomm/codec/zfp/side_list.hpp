// hcomm/codec/zfp/side_list.hpp: the list of non-finite values after the ZFP stream (the
// coder replaces them, the decoder puts them back): writing it, validating it, patching it.
//
// Entry = index (idx_bytes: 4 when n <= 2^32, else 8) then the value's bit pattern, LE.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hcomm/codec/zfp/traits.hpp"
#include "hcomm/core/macros.hpp"

namespace hcomm::codec::zfp_detail {

template <class T>
struct scatter_nonfinite_kernel {
  const T* in;
  std::size_t n;
  const u64* offsets;  // exclusive scan of the per-group counts (G+1 entries)
  unsigned char* list; // first entry
  unsigned idx_bytes;
  HCOMM_HOST_DEVICE void operator()(std::size_t g) const {
    u64 off = offsets[g];
    if (offsets[g + 1] == off) return;
    const std::size_t entry = idx_bytes + sizeof(T);
    const std::size_t first = g * group_values;
    const std::size_t last = n - first < group_values ? n : first + group_values;
    for (std::size_t i = first; i < last; ++i) {
      const auto b = to_bits(in[i]);
      if (!is_nonfinite_bits<T>(b)) continue;
      unsigned char* e = list + off * entry;
      if (idx_bytes == 4) {
        const std::uint32_t i32 = static_cast<std::uint32_t>(i);
        std::memcpy(e, &i32, 4);
      } else {
        const u64 i64 = i;
        std::memcpy(e, &i64, 8);
      }
      std::memcpy(e + idx_bytes, &b, sizeof b);
      ++off;
    }
  }
};

// Writes the count after the stream and the payload size (one work item).
struct finish_payload_kernel {
  const u64* total;  // offsets[G]
  unsigned char* count_at;
  u64 stream_bytes;
  u64 entry_bytes;
  u64* payload_bytes;
  HCOMM_HOST_DEVICE void operator()(std::size_t) const {
    const u64 c = *total;
    std::memcpy(count_at, &c, 8);
    *payload_bytes = stream_bytes + 8 + c * entry_bytes;
  }
};

inline constexpr std::size_t check_chunk = 256;

// Checks entries [256c, 256c+256) of the side list: indices in range and strictly increasing
// (also across the chunk boundary), patterns really non-finite. bad[c] = 0 when all hold.
template <class T>
struct validate_nonfinite_kernel {
  const unsigned char* list;
  u64 count;
  std::size_t n;
  unsigned idx_bytes;
  u64* bad;
  HCOMM_HOST_DEVICE u64 index(u64 i) const {
    const unsigned char* e = list + i * (idx_bytes + sizeof(T));
    if (idx_bytes == 4) {
      std::uint32_t v;
      std::memcpy(&v, e, 4);
      return v;
    }
    u64 v;
    std::memcpy(&v, e, 8);
    return v;
  }
  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    const u64 first = static_cast<u64>(c) * check_chunk;
    const u64 last = count - first < check_chunk ? count : first + check_chunk;
    u64 ok = 1;
    u64 prev = first > 0 ? index(first - 1) : 0;
    bool have_prev = first > 0;
    for (u64 i = first; i < last; ++i) {
      const u64 idx = index(i);
      typename traits<T>::U b;
      std::memcpy(&b, list + i * (idx_bytes + sizeof(T)) + idx_bytes, sizeof b);
      ok &= static_cast<u64>(idx < n) & static_cast<u64>(!have_prev || idx > prev) &
            static_cast<u64>(is_nonfinite_bits<T>(b));
      prev = idx;
      have_prev = true;
    }
    bad[c] = ok ? 0 : 1;
  }
};

struct or_reduce_kernel {
  u64* flags;
  std::size_t m;  // result in flags[m]
  HCOMM_HOST_DEVICE void operator()(std::size_t) const {
    u64 r = 0;
    for (std::size_t i = 0; i < m; ++i) r |= flags[i];
    flags[m] = r;
  }
};

// Puts the non-finite values back (after the stream was decoded; indices are distinct).
template <class T>
struct patch_nonfinite_kernel {
  const unsigned char* list;
  unsigned idx_bytes;
  T* out;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const {
    const unsigned char* e = list + i * (idx_bytes + sizeof(T));
    u64 idx;
    if (idx_bytes == 4) {
      std::uint32_t v;
      std::memcpy(&v, e, 4);
      idx = v;
    } else {
      std::memcpy(&idx, e, 8);
    }
    std::memcpy(out + idx, e + idx_bytes, sizeof(T));
  }
};
}  // namespace hcomm::codec::zfp_detail
