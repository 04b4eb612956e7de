// examples/gpt/checkpoint.hpp: per-rank checkpoints of the trainer, written atomically.
//
//   gpt::checkpoint_meta meta{cfg.fingerprint(), dp, pp, tp, world_rank, step, cursor};
//   gpt::save_checkpoint(prefix, meta, {params, m, v});   // PREFIX.rank<r>, via .tmp + rename
//   gpt::load_checkpoint(prefix, expected_meta, {params, m, v});  // throws with a clear reason
//
// A checkpoint from another configuration or grid, or a truncated/corrupt one, is refused
// before anything is modified: the file is read and verified completely (sizes, checksum)
// first, and only then copied into the live buffers.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "hcomm/core/error.hpp"

namespace gpt {

struct checkpoint_meta {
  std::string fingerprint;  // config::fingerprint() + scheme
  std::int32_t dp = 1, pp = 1, tp = 1, rank = 0;
  std::int64_t step = 0;    // next step to run
  std::uint64_t cursor = 0; // data position
  std::uint64_t rng = 0;    // sampling RNG state
};

inline std::string checkpoint_path(const std::string& prefix, int rank) { return prefix + ".rank" + std::to_string(rank); }

namespace detail {
constexpr char ckpt_magic[8] = {'G', 'P', 'T', 'C', 'K', 'P', 'T', '1'};
inline std::uint64_t fnv1a(const char* p, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  return h;
}
struct writer {
  std::vector<char> buf;
  template <class T>
  void put(const T& v) {
    const char* p = reinterpret_cast<const char*>(&v);
    buf.insert(buf.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* p, std::size_t n) {
    const char* c = static_cast<const char*>(p);
    buf.insert(buf.end(), c, c + n);
  }
};
struct reader {
  const std::vector<char>& buf;
  std::size_t pos = 0;
  std::string path;
  void need(std::size_t n) {
    if (pos + n > buf.size())
      hcomm::fail(hcomm::errc::truncated_frame, "refusing checkpoint " + path + ": file is truncated (" +
                                                    std::to_string(buf.size()) + " bytes)");
  }
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, buf.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  void get_bytes(void* p, std::size_t n) {
    need(n);
    std::memcpy(p, buf.data() + pos, n);
    pos += n;
  }
};
}  // namespace detail

inline void save_checkpoint(const std::string& prefix, const checkpoint_meta& meta,
                            std::initializer_list<std::span<const float>> arrays) {
  detail::writer w;
  w.put_bytes(detail::ckpt_magic, 8);
  w.put(static_cast<std::uint32_t>(meta.fingerprint.size()));
  w.put_bytes(meta.fingerprint.data(), meta.fingerprint.size());
  w.put(meta.dp); w.put(meta.pp); w.put(meta.tp); w.put(meta.rank);
  w.put(meta.step); w.put(meta.cursor); w.put(meta.rng);
  w.put(static_cast<std::uint32_t>(arrays.size()));
  for (auto a : arrays) {
    w.put(static_cast<std::uint64_t>(a.size()));
    w.put_bytes(a.data(), a.size_bytes());
  }
  w.put(detail::fnv1a(w.buf.data(), w.buf.size()));
  const std::string path = checkpoint_path(prefix, meta.rank), tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(w.buf.data(), static_cast<std::streamsize>(w.buf.size()));
    f.flush();
    if (!f) hcomm::fail(hcomm::errc::io_failure, "cannot write checkpoint " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) hcomm::fail(hcomm::errc::io_failure, "cannot rename " + tmp + " to " + path);
}

// Verifies everything, then fills `arrays` and returns the saved meta (step, cursor, rng).
inline checkpoint_meta load_checkpoint(const std::string& prefix, const checkpoint_meta& expect,
                                       std::initializer_list<std::span<float>> arrays) {
  const std::string path = checkpoint_path(prefix, expect.rank);
  std::ifstream f(path, std::ios::binary);
  if (!f) hcomm::fail(hcomm::errc::io_failure, "refusing to resume: cannot open checkpoint " + path);
  const std::vector<char> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  detail::reader r{buf, 0, path};
  char magic[8];
  r.get_bytes(magic, 8);
  if (std::memcmp(magic, detail::ckpt_magic, 8) != 0)
    hcomm::fail(hcomm::errc::foreign_frame, "refusing checkpoint " + path + ": not a train_gpt checkpoint");
  const auto flen = r.get<std::uint32_t>();
  if (flen > 4096) hcomm::fail(hcomm::errc::corrupt_frame, "refusing checkpoint " + path + ": corrupt header");
  checkpoint_meta m;
  m.fingerprint.resize(flen);
  r.get_bytes(m.fingerprint.data(), flen);
  m.dp = r.get<std::int32_t>(); m.pp = r.get<std::int32_t>(); m.tp = r.get<std::int32_t>(); m.rank = r.get<std::int32_t>();
  m.step = r.get<std::int64_t>(); m.cursor = r.get<std::uint64_t>(); m.rng = r.get<std::uint64_t>();
  if (m.fingerprint != expect.fingerprint)
    hcomm::fail(hcomm::errc::mismatch, "refusing checkpoint " + path + ": written by a different configuration\n  checkpoint: " +
                                           m.fingerprint + "\n  this run:   " + expect.fingerprint);
  if (m.dp != expect.dp || m.pp != expect.pp || m.tp != expect.tp || m.rank != expect.rank)
    hcomm::fail(hcomm::errc::mismatch, "refusing checkpoint " + path + ": written by grid dp" + std::to_string(m.dp) +
                                           " pp" + std::to_string(m.pp) + " tp" + std::to_string(m.tp) + " rank " +
                                           std::to_string(m.rank) + ", this run is dp" + std::to_string(expect.dp) +
                                           " pp" + std::to_string(expect.pp) + " tp" + std::to_string(expect.tp) +
                                           " rank " + std::to_string(expect.rank));
  const auto n = r.get<std::uint32_t>();
  if (n != arrays.size()) hcomm::fail(hcomm::errc::mismatch, "refusing checkpoint " + path + ": wrong number of arrays");
  std::vector<std::size_t> offsets;
  for (auto a : arrays) {
    const auto len = r.get<std::uint64_t>();
    if (len != a.size())
      hcomm::fail(hcomm::errc::mismatch, "refusing checkpoint " + path + ": array of " + std::to_string(len) +
                                             " floats, expected " + std::to_string(a.size()));
    offsets.push_back(r.pos);
    r.need(a.size_bytes());
    r.pos += a.size_bytes();
  }
  const std::size_t body = r.pos;
  const auto sum = r.get<std::uint64_t>();
  if (r.pos != buf.size()) hcomm::fail(hcomm::errc::corrupt_frame, "refusing checkpoint " + path + ": trailing bytes");
  if (sum != detail::fnv1a(buf.data(), body))
    hcomm::fail(hcomm::errc::corrupt_frame, "refusing checkpoint " + path + ": checksum mismatch (corrupt file)");
  std::size_t i = 0;
  for (auto a : arrays) std::memcpy(a.data(), buf.data() + offsets[i++], a.size_bytes());
  return m;
}

}  // namespace gpt
