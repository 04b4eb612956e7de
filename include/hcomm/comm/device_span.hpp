// hcomm/comm/device_span.hpp: a span of values in an executor's (device) memory, the buffer
// type of device_communicator (comm/device_communicator.hpp).
//
//   hcomm::device_span<float> g(d_grads, n);              // explicit: a pointer and a count
//   hcomm::device_span<const float> in = g;               // adds const, as std::span does
//
// Apart from std::span on purpose: nothing converts a std::span, a vector or an array into
// it, so a host buffer cannot reach a device communicator by accident at compile time; a
// host pointer wrapped explicitly is refused at run time by the context's check
// (exec::cuda: cudaPointerGetAttributes), with an error naming the argument.
#pragma once
#include <cstddef>
#include <type_traits>

namespace hcomm {

template <class T>
class device_span {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  constexpr device_span() noexcept = default;
  constexpr device_span(T* p, std::size_t n) noexcept : p_(p), n_(n) {}
  template <class U>
    requires(std::is_const_v<T> && std::is_same_v<std::remove_cv_t<T>, U>)
  constexpr device_span(device_span<U> o) noexcept : p_(o.data()), n_(o.size()) {}

  constexpr T* data() const noexcept { return p_; }
  constexpr std::size_t size() const noexcept { return n_; }
  constexpr std::size_t size_bytes() const noexcept { return n_ * sizeof(T); }
  constexpr bool empty() const noexcept { return n_ == 0; }
  // Values [off, off + n).
  constexpr device_span subspan(std::size_t off, std::size_t n) const noexcept { return {p_ + off, n}; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace hcomm
