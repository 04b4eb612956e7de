// hcomm/algorithm/buffer.hpp: a grow-only byte buffer in an executor's memory (or any memory
// space, exec/memory_space.hpp: an executor's host staging, exec/host_staging.hpp).
//
//   hcomm::algorithm::exec_buffer<hcomm::exec::host> b{ex};
//   std::byte* p = b.ensure(1 << 20);   // allocated through ex; later calls reuse it
//
// Growth keeps the contents (the broadcast root compresses into a buffer that grows under
// it) and at least doubles the capacity, so a buffer grown step by step costs amortised
// linear copying; once the largest call has been seen no call allocates. New bytes are not
// initialised (as the executor's allocate leaves them).
#pragma once
#include <cstddef>
#include <utility>

#include "hcomm/exec/memory_space.hpp"

namespace hcomm::algorithm {

template <exec::memory_space Exec>
class exec_buffer {
 public:
  explicit exec_buffer(const Exec& ex = {}) : ex_(ex) {}
  exec_buffer(const exec_buffer&) = delete;
  exec_buffer& operator=(const exec_buffer&) = delete;
  exec_buffer(exec_buffer&& o) noexcept
      : ex_(o.ex_), p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  exec_buffer& operator=(exec_buffer&& o) noexcept {
    if (this != &o) {
      ex_.deallocate(p_);
      ex_ = o.ex_;
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~exec_buffer() { ex_.deallocate(p_); }

  // At least `bytes` bytes, the old contents kept.
  std::byte* ensure(std::size_t bytes) {
    if (bytes <= bytes_) return p_;
    const std::size_t cap = bytes > 2 * bytes_ ? bytes : 2 * bytes_;
    auto* q = static_cast<std::byte*>(ex_.allocate(cap));
    if (bytes_ > 0) ex_.copy(q, p_, bytes_);
    ex_.deallocate(p_);
    p_ = q;
    bytes_ = cap;
    return p_;
  }
  template <class T>
  T* as(std::size_t n) {
    return reinterpret_cast<T*>(ensure(n * sizeof(T)));
  }
  // Frees the memory (the next ensure allocates again).
  void release() noexcept {
    ex_.deallocate(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  std::byte* data() noexcept { return p_; }
  const std::byte* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return bytes_; }

 private:
  Exec ex_;
  std::byte* p_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace hcomm::algorithm
