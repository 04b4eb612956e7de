// hcomm/codec/zfp/transform.hpp: libzfp's decorrelating transform of one 1-D block of four
// integers (non-orthogonal lifting) and its inverse, in wrapping arithmetic.
#pragma once
#include <type_traits>

#include "hcomm/core/macros.hpp"

namespace hcomm::codec::zfp_detail {

// Wrapping integer arithmetic (libzfp relies on two's complement wrap-around in corner
// cases; doing it in unsigned keeps the same bits without undefined behaviour).
template <class I>
HCOMM_HOST_DEVICE I wadd(I a, I b) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) + static_cast<U>(b));
}
template <class I>
HCOMM_HOST_DEVICE I wsub(I a, I b) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) - static_cast<U>(b));
}
template <class I>
HCOMM_HOST_DEVICE I wshl1(I a) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) << 1);
}

// libzfp's decorrelating transform of one 1-D block (non-orthogonal lifting).
template <class I>
HCOMM_HOST_DEVICE void fwd_lift(I& x, I& y, I& z, I& w) {
  x = wadd(x, w); x >>= 1; w = wsub(w, x);
  z = wadd(z, y); z >>= 1; y = wsub(y, z);
  x = wadd(x, z); x >>= 1; z = wsub(z, x);
  w = wadd(w, y); w >>= 1; y = wsub(y, w);
  w = wadd(w, static_cast<I>(y >> 1)); y = wsub(y, static_cast<I>(w >> 1));
}
template <class I>
HCOMM_HOST_DEVICE void inv_lift(I& x, I& y, I& z, I& w) {
  y = wadd(y, static_cast<I>(w >> 1)); w = wsub(w, static_cast<I>(y >> 1));
  y = wadd(y, w); w = wshl1(w); w = wsub(w, y);
  z = wadd(z, x); x = wshl1(x); x = wsub(x, z);
  y = wadd(y, z); z = wshl1(z); z = wsub(z, y);
  w = wadd(w, x); x = wshl1(x); x = wsub(x, w);
}
}  // namespace hcomm::codec::zfp_detail
