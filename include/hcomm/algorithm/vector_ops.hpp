// hcomm/algorithm/vector_ops.hpp: the element-wise steps of the collectives (sum into,
// loss of a compression, copies), run where the data lives.
//
//   hcomm::algorithm::add_into(ex, dst, src, n);   // dst[i] += src[i]
//
// A host executor runs them as plain loops in the calling thread (what the ring always did:
// segments are small, a parallel region would cost more than it saves); a device executor
// runs one work item per element.
#pragma once
#include <cstddef>
#include <cstring>

#include "hcomm/core/macros.hpp"
#include "hcomm/exec/executor.hpp"

namespace hcomm::algorithm {

namespace detail {
template <class T>
struct add_kernel {
  T* dst;
  const T* src;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { dst[i] += src[i]; }
};
template <class T>
struct sum_kernel {
  T* out;
  const T* a;
  const T* b;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { out[i] = a[i] + b[i]; }
};
template <class T>
struct loss_kernel {
  T* res;
  const T* src;
  const T* dec;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { res[i] = src[i] - dec[i]; }
};
}  // namespace detail

// dst[i] += src[i]
template <exec::executor Exec, class T>
void add_into(const Exec& ex, T* dst, const T* src, std::size_t n) {
  if constexpr (Exec::is_device) {
    if (n > 0) ex.for_each(n, detail::add_kernel<T>{dst, src});
  } else {
    for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
  }
}
// out[i] = a[i] + b[i]
template <exec::executor Exec, class T>
void sum_of(const Exec& ex, T* out, const T* a, const T* b, std::size_t n) {
  if constexpr (Exec::is_device) {
    if (n > 0) ex.for_each(n, detail::sum_kernel<T>{out, a, b});
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  }
}
// res[i] = src[i] - dec[i]: what a compression lost.
template <exec::executor Exec, class T>
void loss_of(const Exec& ex, T* res, const T* src, const T* dec, std::size_t n) {
  if constexpr (Exec::is_device) {
    if (n > 0) ex.for_each(n, detail::loss_kernel<T>{res, src, dec});
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
