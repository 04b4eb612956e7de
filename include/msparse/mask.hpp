// msparse/mask.hpp: a layer's sparsity mask, the seeded counter-based RNG every replica
// shares, a 64-bit mask checksum, tensor-parallel sharding, and byte (de)serialisation.
//
//   msparse::mask m(3072, 768);                                  // all inactive
//   msparse::counter_rng rng(seed, /*step*/0, /*layer*/2);       // same stream on every rank
//   m.randomize(215000, rng);                                    // exactly 215000 active
//   std::uint64_t h = m.checksum();                              // compare across DP ranks
//   msparse::mask local = msparse::shard(m, msparse::shard_axis::rows, tp_size, tp_rank);
//   msparse::pack_active(m, grad, packed);   // DP all-reduce of active values only
//
// One byte per weight rather than a bitset: the topology update and the sparse-format
// conversion read and write single positions at random, and a byte is the cheapest unit
// for that; at 1/4 of an fp32 weight it is small next to the weight and its Adam moments.
// Layout is row-major (rows = output features, cols = input features), as the weight.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/host.hpp"

namespace msparse {

// --- byte I/O for checkpoints: little-endian PODs with a length prefix for arrays ---------

class byte_writer {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>, "msparse: byte_writer::put takes trivially copyable values");
    static_assert(std::endian::native == std::endian::little, "msparse: checkpoints assume a little-endian host");
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  template <class T>
  void put_array(const std::vector<T>& v) {
    put<std::uint64_t>(v.size());
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
    bytes_.insert(bytes_.end(), p, p + v.size() * sizeof(T));
  }
  void put_string(const std::string& s) {
    put<std::uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  const std::vector<std::uint8_t>& bytes() const noexcept { return bytes_; }
  std::vector<std::uint8_t> take() noexcept { return std::move(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

class byte_reader {
 public:
  byte_reader(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}
  explicit byte_reader(const std::vector<std::uint8_t>& v) : byte_reader(v.data(), v.size()) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>, "msparse: byte_reader::get takes trivially copyable values");
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <class T>
  std::vector<T> get_array() {
    const auto n = get<std::uint64_t>();
    hcomm::require(n <= (n_ - at_) / sizeof(T), hcomm::errc::truncated_frame, "msparse: array longer than the checkpoint");
    std::vector<T> v(n);
    std::memcpy(v.data(), p_ + at_, n * sizeof(T));
    at_ += n * sizeof(T);
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint64_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(p_ + at_), n);
    at_ += n;
    return s;
  }
  std::size_t offset() const noexcept { return at_; }
  bool done() const noexcept { return at_ == n_; }

 private:
  void need(std::size_t k) const {
    hcomm::require(k <= n_ - at_, hcomm::errc::truncated_frame, "msparse: checkpoint state ends early");
  }
  const std::uint8_t* p_;
  std::size_t n_;
  std::size_t at_ = 0;
};

// --- counter-based RNG ------------------------------------------------------------------
//
// A stream is a pure function of (seed, step, layer, counter): nothing is carried between
// steps, so every DP replica, a resumed run and an uninterrupted one draw the same numbers
// (the per-rank seeding of the reference code let replicas drift apart). SplitMix64's
// finaliser is a bijection with full avalanche, enough for choosing positions.

HCOMM_HOST_DEVICE std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// High 64 bits of a 64 x 64-bit product, portably (no __int128 in ISO C++).
HCOMM_HOST_DEVICE std::uint64_t mulhi(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
  const std::uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const std::uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

struct counter_rng {
  std::uint64_t key = 0;
  std::uint64_t counter = 0;

  counter_rng() = default;
  counter_rng(std::uint64_t seed, std::uint64_t step, std::uint64_t layer, std::uint64_t stream = 0)
      : key(splitmix64(splitmix64(splitmix64(seed) ^ step) ^ (layer * 0xD1B54A32D192ED03ull)) ^
            (stream * 0x8CB92BA72F3D8DD7ull)) {}

  HCOMM_HOST_DEVICE std::uint64_t at(std::uint64_t i) const { return splitmix64(key ^ splitmix64(i)); }
  std::uint64_t next() { return at(counter++); }
  // Uniform in [0, n) without modulo bias worth noticing (Lemire's multiply-shift; the
  // residual bias is n / 2^64).
  std::uint64_t below(std::uint64_t n) { return mulhi(next(), n); }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

// FNV-1a-style 64-bit hash over words, finalised with splitmix; used for mask checksums.
inline std::uint64_t hash_bytes(const std::uint8_t* p, std::size_t n, std::uint64_t h = 0xCBF29CE484222325ull) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001B3ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return splitmix64(h ^ n);
}

// --- the mask ---------------------------------------------------------------------------

class mask {
 public:
  mask() = default;
  mask(std::size_t rows, std::size_t cols, bool active = false)
      : rows_(rows), cols_(cols), bits_(rows * cols, active ? 1 : 0), active_(active ? rows * cols : 0) {}

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  std::size_t size() const noexcept { return bits_.size(); }
  std::size_t active() const noexcept { return active_; }
  double density() const noexcept { return size() ? double(active_) / double(size()) : 1.0; }
  const std::uint8_t* data() const noexcept { return bits_.data(); }
  bool operator[](std::size_t i) const noexcept { return bits_[i] != 0; }
  bool at(std::size_t r, std::size_t c) const noexcept { return bits_[r * cols_ + c] != 0; }

  void set(std::size_t i, bool on) noexcept {
    const bool was = bits_[i] != 0;
    if (was != on) {
      bits_[i] = on ? 1 : 0;
      active_ += on ? 1 : std::size_t(-1);
    }
  }
  void fill(bool on) {
    std::fill(bits_.begin(), bits_.end(), std::uint8_t(on ? 1 : 0));
    active_ = on ? size() : 0;
  }

  // Exactly k active positions, a uniformly random subset. Rejection sampling on the
  // smaller side (the k to turn on, or the size-k to turn off): O(min(k, n-k)) draws, no
  // index array, and a pure function of the RNG stream.
  void randomize(std::size_t k, counter_rng rng) {
    HCOMM_EXPECTS(k <= size(), "msparse: mask::randomize: more active positions than weights");
    const bool on = k <= size() / 2;
    fill(!on);
    const std::size_t flips = on ? k : size() - k;
    for (std::size_t done = 0; done < flips;) {
      const std::size_t i = static_cast<std::size_t>(rng.below(size()));
      if (bits_[i] != std::uint8_t(on)) {
        set(i, on);
        ++done;
      }
    }
  }

  // Recounts active positions from the bytes (after a bulk edit through raw()).
  void recount() { active_ = static_cast<std::size_t>(std::count_if(bits_.begin(), bits_.end(), [](auto b) { return b != 0; })); }
  std::uint8_t* raw() noexcept { return bits_.data(); }

  // A 64-bit hash of shape and bits: equal masks hash equal on every rank and platform.
  std::uint64_t checksum() const {
    std::uint64_t h = splitmix64(rows_ * 0x9E3779B97F4A7C15ull ^ cols_);
    return hash_bytes(bits_.data(), bits_.size(), h);
  }

  // Zeroes the weights (and any other per-weight arrays) at inactive positions.
  template <class T>
  void apply(T* w) const {
    for (std::size_t i = 0; i < size(); ++i)
      if (!bits_[i]) w[i] = T(0);
  }

  void save(byte_writer& out) const {
    out.put<std::uint64_t>(rows_);
    out.put<std::uint64_t>(cols_);
    // Packed to bits in checkpoints: 8x smaller, and the layout is fixed by the format.
    std::vector<std::uint8_t> packed((size() + 7) / 8, 0);
    for (std::size_t i = 0; i < size(); ++i)
      if (bits_[i]) packed[i >> 3] |= std::uint8_t(1u << (i & 7));
    out.put_array(packed);
    out.put<std::uint64_t>(checksum());
  }
  static mask load(byte_reader& in) {
    const auto r = in.get<std::uint64_t>();
    const auto c = in.get<std::uint64_t>();
    const auto packed = in.get_array<std::uint8_t>();
    hcomm::require(packed.size() == (r * c + 7) / 8, hcomm::errc::corrupt_frame, "msparse: mask bits do not match its shape");
    mask m(r, c);
    for (std::size_t i = 0; i < m.size(); ++i) m.bits_[i] = (packed[i >> 3] >> (i & 7)) & 1u;
    m.recount();
    hcomm::require(in.get<std::uint64_t>() == m.checksum(), hcomm::errc::corrupt_frame, "msparse: mask checksum mismatch");
    return m;
  }

  friend bool operator==(const mask& a, const mask& b) {
    return a.rows_ == b.rows_ && a.cols_ == b.cols_ && a.bits_ == b.bits_;
  }

 private:
  std::size_t rows_ = 0, cols_ = 0;
  std::vector<std::uint8_t> bits_;
  std::size_t active_ = 0;
};

// --- packed active values (sparsity-aware DP communication) -----------------------------
//
// Masks are identical on every DP replica, so a sparse layer's gradient can be all-reduced
// as its active values only, in index order: pack, all-reduce (and compress) the packed
// buffer, unpack. Chunks of the mask are counted, scanned and copied in parallel by an
// executor; the result is the same as a sequential loop.

namespace detail {
inline constexpr std::size_t pack_chunk = std::size_t(1) << 16;

struct count_chunk {
  const std::uint8_t* bits;
  std::size_t n;
  std::uint64_t* counts;
  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    const std::size_t b = c * pack_chunk, e = b + pack_chunk < n ? b + pack_chunk : n;
    std::uint64_t k = 0;
    for (std::size_t i = b; i < e; ++i) k += bits[i] != 0;
    counts[c] = k;
  }
};

template <bool Pack, class T>
struct copy_chunk {
  const std::uint8_t* bits;
  std::size_t n;
  const std::uint64_t* offsets;
  const T* src;
  T* dst;
  HCOMM_HOST_DEVICE void operator()(std::size_t c) const {
    const std::size_t b = c * pack_chunk, e = b + pack_chunk < n ? b + pack_chunk : n;
    std::uint64_t at = offsets[c];
    for (std::size_t i = b; i < e; ++i) {
      if (Pack) {
        if (bits[i]) dst[at++] = src[i];
      } else {
        dst[i] = bits[i] ? src[at++] : T(0);
      }
    }
  }
};

template <bool Pack, class T, class Exec>
std::size_t pack_impl(const mask& m, const T* src, T* dst, const Exec& ex) {
  const std::size_t chunks = (m.size() + pack_chunk - 1) / pack_chunk;
  std::vector<std::uint64_t> off(chunks + 1, 0);
  ex.for_each(chunks, count_chunk{m.data(), m.size(), off.data()});
  ex.exclusive_scan(off.data(), off.data(), chunks);
  ex.for_each(chunks, copy_chunk<Pack, T>{m.data(), m.size(), off.data(), src, dst});
  return static_cast<std::size_t>(off[chunks]);
}
}  // namespace detail

// packed[k] = dense[i] for the k-th active position i; returns m.active(). packed must
// hold m.active() values.
template <class T, class Exec = hcomm::exec::host>
std::size_t pack_active(const mask& m, const T* dense, T* packed, const Exec& ex = {}) {
  return detail::pack_impl<true>(m, dense, packed, ex);
}
// dense[i] = packed[k] at active positions, 0 elsewhere (the inverse of pack_active).
template <class T, class Exec = hcomm::exec::host>
std::size_t unpack_active(const mask& m, const T* packed, T* dense, const Exec& ex = {}) {
  return detail::pack_impl<false>(m, packed, dense, ex);
}

// --- tensor parallelism -----------------------------------------------------------------
//
// Under TP a weight is split by rows (column-parallel linear: output features) or by
// columns (row-parallel linear: input features); the mask goes with it, so the same
// contiguous part [begin, end) of the sharded axis. Parts differ by at most one row/column.

enum class shard_axis : unsigned char { rows = 0, cols = 1 };

struct shard_range {
  std::size_t begin = 0, end = 0;
};

inline shard_range shard_bounds(std::size_t extent, std::size_t parts, std::size_t index) {
  HCOMM_EXPECTS(parts > 0 && index < parts, "msparse: shard index out of range");
  const std::size_t base = extent / parts, extra = extent % parts;
  const std::size_t b = index * base + std::min(index, extra);
  return {b, b + base + (index < extra ? 1 : 0)};
}

inline mask shard(const mask& m, shard_axis axis, std::size_t parts, std::size_t index) {
  if (axis == shard_axis::rows) {
    const auto r = shard_bounds(m.rows(), parts, index);
    mask out(r.end - r.begin, m.cols());
    std::memcpy(out.raw(), m.data() + r.begin * m.cols(), out.size());
    out.recount();
    return out;
  }
  const auto c = shard_bounds(m.cols(), parts, index);
  mask out(m.rows(), c.end - c.begin);
  for (std::size_t i = 0; i < m.rows(); ++i)
    std::memcpy(out.raw() + i * out.cols(), m.data() + i * m.cols() + c.begin, out.cols());
  out.recount();
  return out;
}

// Same split for the weight (or gradient, or a moment) itself.
template <class T>
std::vector<T> shard(const T* full, std::size_t rows, std::size_t cols, shard_axis axis, std::size_t parts,
                     std::size_t index) {
  std::vector<T> out;
  if (axis == shard_axis::rows) {
    const auto r = shard_bounds(rows, parts, index);
    out.assign(full + r.begin * cols, full + r.end * cols);
  } else {
    const auto c = shard_bounds(cols, parts, index);
    out.reserve(rows * (c.end - c.begin));
    for (std::size_t i = 0; i < rows; ++i) out.insert(out.end(), full + i * cols + c.begin, full + i * cols + c.end);
  }
  return out;
}

// Inverse of shard(): reassembles the full mask from all parts (in index order).
inline mask unshard(const std::vector<mask>& parts, shard_axis axis) {
  HCOMM_EXPECTS(!parts.empty(), "msparse: unshard needs at least one part");
  std::size_t rows = 0, cols = 0;
  if (axis == shard_axis::rows) {
    cols = parts[0].cols();
    for (const auto& p : parts) rows += p.rows();
  } else {
    rows = parts[0].rows();
    for (const auto& p : parts) cols += p.cols();
  }
  mask out(rows, cols);
  std::size_t off = 0;
  for (const auto& p : parts) {
    HCOMM_EXPECTS(axis == shard_axis::rows ? p.cols() == cols : p.rows() == rows, "msparse: unshard: parts disagree in shape");
    if (axis == shard_axis::rows) {
      std::memcpy(out.raw() + off * cols, p.data(), p.size());
      off += p.rows();
    } else {
      for (std::size_t i = 0; i < rows; ++i) std::memcpy(out.raw() + i * cols + off, p.data() + i * p.cols(), p.cols());
      off += p.cols();
    }
  }
  out.recount();
  return out;
}

}  // namespace msparse
