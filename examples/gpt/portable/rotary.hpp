// examples/gpt/portable/rotary.hpp: GPT-NeoX's rotary position embedding ("rotate_half" on the
// first `rot` dims of every head of q and k, in place) as a flat kernel of the execution
// model, one index per (row, q or k, head, pair), written once for every executor with
// kernels.hpp's rotary_apply arithmetic (its bits). inverse applies the transpose rotation
// (the backward).
//
//   ex.for_each(gpt::portable::rotary::size(N, nh, rot), gpt::portable::rotary{qkv, cos_t, sin_t, T, nh, hd, rot, false});
#pragma once
#include <cstddef>

#include "hcomm/core/macros.hpp"

namespace gpt::portable {

struct rotary {
  float* qkv;          // [N, 3 nh hd]
  const float* cos_t;  // [T, rot / 2]
  const float* sin_t;
  int T, nh, hd, rot;
  bool inverse;
  static std::size_t size(std::size_t N, int nh, int rot) { return N * 2 * static_cast<std::size_t>(nh) * (rot / 2); }
  HCOMM_HOST_DEVICE void operator()(std::size_t e) const {
    const std::size_t half = static_cast<std::size_t>(rot / 2);
    const std::size_t i = e % half, h = (e / half) % static_cast<std::size_t>(nh);
    const std::size_t which = (e / half / nh) % 2, n = e / half / nh / 2;
    const std::size_t t = n % static_cast<std::size_t>(T), Cl = static_cast<std::size_t>(nh) * hd;
    float* x = qkv + n * 3 * Cl + which * Cl + h * hd;
    const float c = cos_t[t * half + i], s = (inverse ? -1.f : 1.f) * sin_t[t * half + i];
    const float a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = b * c + a * s;
  }
};

}  // namespace gpt::portable
