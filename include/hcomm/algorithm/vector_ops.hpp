// hcomm/algorithm/vector_ops.hpp: the element-wise steps of the collectives (sum into,
// loss of a compression, copies), run where the data lives.
//
//   hcomm::algorithm::add_into(ex, dst, src, n);   // dst[i] += src[i]
//
// A host executor runs them as plain loops in the calling thread (what the ring always did:
// segments are small, a parallel region would cost more than it saves); a device executor
// runs one work item per element.
//
// The 16-bit types (bf16, f16) are storage: a sum or difference widens both operands to
// float (exactly), computes in float and rounds the result once to nearest even. So a ring
// sum of 16-bit values rounds once per addition, in the ring's order.
#pragma once
#include <cstddef>
#include <cstring>

#include "hcomm/core/dtype.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/exec/executor.hpp"

namespace hcomm::algorithm {

// a + b and a - b of two values of an element type (16-bit ones in float, rounded once).
template <class T>
HCOMM_HOST_DEVICE T add_values(T a, T b) {
  if constexpr (half_element<T>) return T(static_cast<float>(a) + static_cast<float>(b));
  else return a + b;
}
template <class T>
HCOMM_HOST_DEVICE T sub_values(T a, T b) {
  if constexpr (half_element<T>) return T(static_cast<float>(a) - static_cast<float>(b));
  else return a - b;
}

namespace detail {
template <class T>
struct add_kernel {
  T* dst;
  const T* src;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { dst[i] = add_values(dst[i], src[i]); }
};
template <class T>
struct sum_kernel {
  T* out;
  const T* a;
  const T* b;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { out[i] = add_values(a[i], b[i]); }
};
template <class T>
struct loss_kernel {
  T* res;
  const T* src;
  const T* dec;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { res[i] = sub_values(src[i], dec[i]); }
};
}  // namespace detail

// dst[i] += src[i]
template <exec::executor Exec, class T>
void add_into(const Exec& ex, T* dst, const T* src, std::size_t n) {
  if constexpr (Exec::is_device) {
    if (n > 0) ex.for_each(n, detail::add_kernel<T>{dst, src});
  } else if constexpr (half_element<T>) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = add_values(dst[i], src[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
  }
}
// out[i] = a[i] + b[i]
template <exec::executor Exec, class T>
void sum_of(const Exec& ex, T* out, const T* a, const T* b, std::size_t n) {
  if constexpr (Exec::is_device) {
    if (n > 0) ex.for_each(n, detail::sum_kernel<T>{out, a, b});
  } else if constexpr (half_element<T>) {
    for (std::size_t i = 0; i < n; ++i) out[i] = add_values(a[i], b[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  }
}
// res[i] = src[i] - dec[i]: what a compression lost.
template <exec::executor Exec, class T>
void loss_of(const Exec& ex, T* res, const T* src, const T* dec, std::size_t n) {
  if constexpr (Exec::is_device) {
    if (n > 0) ex.for_each(n, detail::loss_kernel<T>{res, src, dec});
  } else if constexpr (half_element<T>) {
    for (std::size_t i = 0; i < n; ++i) res[i] = sub_values(src[i], dec[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) res[i] = src[i] - dec[i];
  }
}
template <exec::executor Exec, class T>
void copy_values(const Exec& ex, T* dst, const T* src, std::size_t n) {
  ex.copy(dst, src, n * sizeof(T));
}
template <exec::executor Exec, class T>
void zero_values(const Exec& ex, T* dst, std::size_t n) {
  ex.fill_zero(dst, n * sizeof(T));
}

}  // namespace hcomm::algorithm
