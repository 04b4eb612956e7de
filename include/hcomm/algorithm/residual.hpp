// hcomm/algorithm/residual.hpp: the error-feedback residual of a communicator, in its
// executor's memory, bound to the shape of the first buffer it serves.
//
//   T* e = res.template get<float>(n, label);   // zeros on first use; later calls: the same n
//   res.reset();                                // forget it (a new buffer shape may follow)
#pragma once
#include <cstddef>
#include <span>
#include <string>

#include "hcomm/algorithm/buffer.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/exec/executor.hpp"

namespace hcomm::algorithm {

template <exec::executor Exec>
class residual {
 public:
  explicit residual(const Exec& ex) : ex_(ex), bytes_(ex) {}

  // The residual of n values of T; throws invalid_argument when it serves another shape.
  template <class T>
  T* get(std::size_t n, const std::string& label) {
    if (!held_) {
      n_ = n;
      type_ = dtype_of<T>;
      held_ = n > 0;
      ex_.fill_zero(bytes_.ensure(n * sizeof(T)), n * sizeof(T));
    } else if (n_ != n || type_ != dtype_of<T>) {
      fail(errc::invalid_argument,
           label + ": error feedback keeps one residual per communicator, made for " + std::to_string(n_) + " " +
               std::string(to_string(type_)) + " values; this call has " + std::to_string(n) + " " +
               std::string(to_string(dtype_of<T>)) + " (use one communicator per gradient buffer, or reset_residual())");
    }
    return reinterpret_cast<T*>(bytes_.data());
  }
  // The values' bytes in executor memory (empty until the first lossy call).
  std::span<const std::byte> bytes() const noexcept {
    return held_ ? std::span<const std::byte>(bytes_.data(), n_ * size_of(type_)) : std::span<const std::byte>{};
  }
  dtype type() const noexcept { return type_; }
  std::size_t size() const noexcept { return n_; }
  void reset() noexcept {
    held_ = false;
    n_ = 0;
  }
  // From host memory (a checkpoint).
  template <class T>
  void load(std::span<const T> r) {
    n_ = r.size();
    type_ = dtype_of<T>;
    held_ = !r.empty();
    if (!r.empty()) ex_.from_host(bytes_.ensure(r.size_bytes()), r.data(), r.size_bytes());
  }

 private:
  Exec ex_;
  exec_buffer<Exec> bytes_;
  std::size_t n_ = 0;
  dtype type_ = dtype::f32;
  bool held_ = false;
};

}  // namespace hcomm::algorithm
