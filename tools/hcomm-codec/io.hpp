// tools/hcomm-codec/io.hpp: hcomm-codec's files and buffers, with as little work per byte as
// the data allows: a whole process should cost about what its kernel costs plus what `cat IN
// > OUT` of the same file costs.
//
//   input_file in(path);                     // a regular file: mapped read-only, pages populated
//   host_buffer out(bound);                  // uninitialised: only the pages written are touched
//   std::size_t used = eng.compress(cfg, in.data(), n, out.data(), bound);
//   write_file_atomic(path, out.data(), used, fsync);
//
// - input_file maps a regular file with MAP_POPULATE (one call maps every page of the page
//   cache, instead of a fault per 4 KiB page and a copy); pipes, devices and anything mmap
//   refuses are read until EOF into a host_buffer instead.
// - host_buffer is an anonymous mapping, never zero-filled by the process (the kernel gives
//   zero pages on first touch anyway), advised to use transparent huge pages (where the kernel
//   offers them on request) so that touching 64 MiB costs 32 faults, not 16384. A bound that is
//   several times what a frame needs (ZFP's side list) costs only address space.
// - write_file_atomic writes one buffer to a temporary file beside OUT and renames it over
//   OUT, so a failed run never leaves a partial OUT nor destroys an existing one. With `fsync`
//   the data reaches the disk before the rename (durable across a power loss); without it,
//   as cat, gzip and zstd do, the kernel writes it back later.
#pragma once
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hcomm/core/error.hpp"
#include "hcomm/exec/host.hpp"

namespace codec_tool {

[[noreturn]] inline void io_fail(const std::string& m) { hcomm::fail(hcomm::errc::io_failure, m); }

struct fd_guard {
  int fd = -1;
  fd_guard() = default;
  explicit fd_guard(int f) : fd(f) {}
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

// Uninitialised host memory in an anonymous mapping (64-byte aligned: page aligned).
class host_buffer {
 public:
  host_buffer() = default;
  explicit host_buffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    // (Not MAP_NORESERVE: a size the machine cannot hold is refused here, as malloc would.)
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      bytes_ = 0;
      hcomm::fail(hcomm::errc::invalid_argument,
                  "cannot allocate " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
    }
#ifdef MADV_HUGEPAGE
    if (bytes >= (std::size_t{4} << 20)) (void)::madvise(p, bytes, MADV_HUGEPAGE);  // advice: failure is harmless
#endif
    p_ = static_cast<std::byte*>(p);
  }
  host_buffer(host_buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  host_buffer& operator=(host_buffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~host_buffer() { release(); }

  std::byte* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return bytes_; }
  // Hands the mapping (data(), size(): unmap with munmap) to the caller.
  std::byte* release_ownership() noexcept {
    bytes_ = 0;
    return std::exchange(p_, nullptr);
  }

  // Grows to `bytes`, keeping the contents (mremap moves the pages, it does not copy them).
  void grow(std::size_t bytes) {
    if (bytes <= bytes_) return;
    if (p_ == nullptr) {
      *this = host_buffer(bytes);
      return;
    }
    void* q = ::mremap(p_, bytes_, bytes, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
      hcomm::fail(hcomm::errc::invalid_argument,
                  "cannot allocate " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
    p_ = static_cast<std::byte*>(q);
    bytes_ = bytes;
  }

 private:
  void release() noexcept {
    if (p_) ::munmap(p_, bytes_);
    p_ = nullptr;
    bytes_ = 0;
  }
  std::byte* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// The host executor with the engine's workspace in huge-page-advised mappings (host_buffer's
// memory) instead of aligned_alloc's 4 KiB pages: MPC's encoder writes tens of MiB of slots
// for a 64 MiB input, once per process here. The kernels are exec::host's own.
struct host_executor : hcomm::exec::host {
  void* allocate(std::size_t bytes) const {
    if (bytes == 0) return nullptr;
    host_buffer b(bytes + header);
    std::byte* p = b.data();
    const std::size_t total = b.size();
    std::memcpy(p, &total, sizeof total);
    (void)b.release_ownership();
    return p + header;
  }
  void deallocate(void* p) const noexcept {
    if (!p) return;
    std::byte* base = static_cast<std::byte*>(p) - header;
    std::size_t total = 0;
    std::memcpy(&total, base, sizeof total);
    ::munmap(base, total);
  }

 private:
  static constexpr std::size_t header = 64;  // keeps the 64-byte alignment exec::host gives
};

// A whole input file, mapped (regular files) or read (anything else).
class input_file {
 public:
  explicit input_file(const std::string& path) {
    fd_guard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) io_fail("cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) io_fail("cannot stat " + path + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) io_fail(path + " is a directory");
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
      const auto n = static_cast<std::size_t>(st.st_size);
      void* p = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, f.fd, 0);
      if (p != MAP_FAILED) {
        map_ = static_cast<const std::byte*>(p);
        size_ = n;
        return;
      }
    }
    read_all(f.fd, path, S_ISREG(st.st_mode) ? static_cast<std::size_t>(st.st_size) : 0);
  }
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;
  ~input_file() {
    if (map_) ::munmap(const_cast<std::byte*>(map_), size_);
  }

  const std::byte* data() const noexcept { return map_ ? map_ : buf_.data(); }
  std::size_t size() const noexcept { return size_; }

 private:
  // Reads until EOF (not just the size fstat gave), so pipes and growing files work too.
  void read_all(int fd, const std::string& path, std::size_t hint) {
    std::size_t used = 0;
    buf_ = host_buffer(std::max<std::size_t>(hint + 1, std::size_t{1} << 16));
    for (;;) {
      if (buf_.size() - used < (std::size_t{1} << 16)) buf_.grow(buf_.size() * 2);
      const ssize_t r = ::read(fd, buf_.data() + used, buf_.size() - used);
      if (r < 0) {
        if (errno == EINTR) continue;
        io_fail("cannot read " + path + ": " + std::strerror(errno));
      }
      if (r == 0) break;
      used += static_cast<std::size_t>(r);
    }
    size_ = used;
  }

  const std::byte* map_ = nullptr;
  host_buffer buf_;
  std::size_t size_ = 0;
};

// Writes to a temporary file beside `path` and renames it over `path` (with `sync`: flushed
// to disk first).
inline void write_file_atomic(const std::string& path, const void* data, std::size_t n, bool sync) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) io_fail("cannot create a temporary file for " + path + ": " + std::strerror(errno));
  bool ok = false;
  std::string err;
  {
    fd_guard g{fd};
    const mode_t mask = ::umask(0);  // mkstemp creates 0600; give OUT the usual 0666 & ~umask
    ::umask(mask);
    (void)::fchmod(fd, 0666 & ~mask);
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t done = 0;
    while (done < n) {
      const ssize_t w = ::write(fd, p + done, n - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        err = std::strerror(errno);
        break;
      }
      done += static_cast<std::size_t>(w);
    }
    if (done == n) {
      if (sync && ::fsync(fd) != 0) err = std::strerror(errno);
      else ok = true;
    }
    g.fd = -1;
    if (::close(fd) != 0 && ok) {
      ok = false;
      err = std::strerror(errno);
    }
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = std::strerror(errno);
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    io_fail("cannot write " + path + ": " + err);
  }
}

}  // namespace codec_tool
