// examples/gpt/device_array.hpp: an owning array of n values of T in an executor's memory
// (device memory on CUDA, host memory on the host executors), zeroed when made. The model's
// buffers on the portable backend (ops_portable.hpp); the CPU backend uses std::vector.
// Element access is the kernels' business: from the host only through to_host/from_host.
//
//   gpt::device_array<float, hcomm::exec::cuda> a(ex, n);   // n zeros on the device
//   a.from_host(host.data(), host.size());  std::vector<float> h = a.to_host();
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hcomm/core/error.hpp"

namespace gpt {

template <class T, class Exec>
class device_array {
 public:
  using value_type = T;
  device_array() = default;
  device_array(const Exec& ex, std::size_t n) : ex_(ex) { assign(n); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  device_array(device_array&& o) noexcept
      : ex_(o.ex_), p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  device_array& operator=(device_array&& o) noexcept {
    if (this != &o) {
      ex_.deallocate(p_);
      ex_ = o.ex_;
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  ~device_array() { ex_.deallocate(p_); }

  // n zeros (the old contents are dropped).
  void assign(std::size_t n) {
    ex_.deallocate(p_);
    p_ = n ? static_cast<T*>(ex_.allocate(n * sizeof(T))) : nullptr;
    n_ = n;
    ex_.fill_zero(p_, n * sizeof(T));
  }
  T* data() noexcept { return p_; }
  const T* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  const Exec& executor() const noexcept { return ex_; }

  // Copies n = size() values from host memory (fewer: the first ones).
  void from_host(const T* h, std::size_t n) {
    if (n > n_)
      hcomm::fail(hcomm::errc::invalid_argument, "device_array: " + std::to_string(n) + " values into an array of " +
                                                     std::to_string(n_));
    ex_.from_host(p_, h, n * sizeof(T));
  }
  // The values, on the host (waits for the executor's work before them).
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    ex_.to_host(h.data(), p_, n_ * sizeof(T));
    return h;
  }

 private:
  Exec ex_{};
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace gpt
