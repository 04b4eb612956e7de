// msparse/kernels/tiles.hpp: the token-tiled transposed layout the sparse kernels read.
//
//   // x: tokens x k, row-major (leading dimension ld)  ->  tiles of T tokens, k x T each
//   msparse::kernels::launch(ex, n_tiles * k_blocks, to_tiles<64>{x, xt, tokens, k, ld});
//
// Tile j holds tokens [j*T, j*T+T) of every feature: element (feature f, token t) sits at
// xt[j*K*T + f*T + (t - j*T)], tokens past the end are zero. Why: a sparse weight row
// touches a few scattered features; in this layout each touched feature is T contiguous
// floats (T/8 AVX registers worth of tokens per weight, one load per FMA), and a tile of
// K*T floats is small enough to stay in L2 while every output row is computed against it.
// Tiles are contiguous, so no power-of-two row stride aliases in the cache.
#pragma once
#include <cstddef>

#include "hcomm/core/macros.hpp"
#include "msparse/kernels/launch.hpp"
#include "msparse/kernels/simd.hpp"

namespace msparse::kernels {

inline constexpr std::size_t tile_k_block = 256;  // features per transpose work item

HCOMM_HOST_DEVICE std::size_t tile_count(std::size_t tokens, std::size_t T) { return (tokens + T - 1) / T; }

// One item = (tile, block of tile_k_block features): copies tokens x features into the tile.
template <int T>
struct to_tiles {
  const float* src;  // tokens x K, row-major, leading dimension ld
  float* dst;        // n_tiles * K * T
  std::size_t tokens, K, ld;

  HCOMM_HOST_DEVICE std::size_t items() const { return tile_count(tokens, T) * ((K + tile_k_block - 1) / tile_k_block); }

  HCOMM_HOST_DEVICE void operator()(std::size_t item) const {
    const std::size_t kb = (K + tile_k_block - 1) / tile_k_block;
    const std::size_t j = item / kb, k0 = (item % kb) * tile_k_block;
    const std::size_t k1 = min_of(K, k0 + tile_k_block);
    const std::size_t t0 = j * T;
    const std::size_t nt = min_of<std::size_t>(T, tokens - t0);
    float* d = dst + j * K * T;
    // 8 tokens x 8 features at a time: 8 row loads, an in-register transpose, 8 stores.
    const std::size_t k8 = k0 + (k1 - k0) / 8 * 8;
    for (std::size_t tb = 0; tb < static_cast<std::size_t>(T); tb += 8) {
      if (tb + 8 <= nt) {
        for (std::size_t k = k0; k < k8; k += 8) {
          f8 blk[8];
          MSPARSE_UNROLL
          for (int u = 0; u < 8; ++u) load8(blk[u], src + (t0 + tb + u) * ld + k);
          transpose8x8(blk);
          MSPARSE_UNROLL
          for (int u = 0; u < 8; ++u) store8(d + (k + u) * T + tb, blk[u]);
        }
      }
      for (std::size_t k = (tb + 8 <= nt ? k8 : k0); k < k1; ++k)
        for (std::size_t u = 0; u < 8; ++u) {
          const std::size_t t = tb + u;
          d[k * T + t] = t < nt ? src[(t0 + t) * ld + k] : 0.0f;
        }
    }
  }
};

}  // namespace msparse::kernels
