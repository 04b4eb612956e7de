// msparse/kernels/sddmm.hpp: sampled dense-dense product (SDDMM): the weight gradient of a
// sparse linear layer at its active positions only.
//
// Two kernels: sddmm_tiles (CSR rows, whole-tile sweeps, the version kept for
// reference and its tests) and sddmm_blocked (below; what layer::sparse_linear runs).
//
//   // dW[p] = sum_t dY[t, row(p)] * X[t, col(p)] for every active p (CSR order)
//   sddmm_tiles k{row_ptr, col, dyt, xt, dw, rows, K, tokens, bounds, n_blocks, false};
//   msparse::kernels::launch(ex, k.items(), k);
//
// One item = a block of weight rows, so no two items write the same gradient value (no
// atomics, deterministic sums). Inside, token tiles (64 tokens) are the outer loop (dY^T and
// X^T in the tiled layout of tiles.hpp; the X tile stays in L2 across the block's rows).
// For half a tile (32 tokens) a row's dY values sit in 4 registers; the kernel takes 8
// active weights at once: 8 vector accumulators (8 independent FMA chains, one per weight,
// 8 token lanes each), 4 FMAs each against the weight's X^T row (one load per FMA), then
// one shuffle-tree reduction turns the 8 accumulators into 8 sums added to 8 consecutive
// packed gradients. (4 weights x 64 tokens has half the reductions but 4 chains of 8
// dependent FMAs: latency-bound.) Inactive positions do not exist in the output, so they
// are never written.
#pragma once
#include <cstddef>

#include "hcomm/core/macros.hpp"
#include "msparse/format/csr.hpp"
#include "msparse/kernels/launch.hpp"
#include "msparse/kernels/simd.hpp"
#include "msparse/kernels/tiles.hpp"

namespace msparse::kernels {

using format::index_t;

struct sddmm_tiles {
  static constexpr int T = 64;  // tokens per tile, done as two halves of 32 (4 f8 each)

  const index_t* row_ptr;     // rows + 1
  const index_t* col;         // nnz
  const float* dyt;           // dY in tiles: n_tiles * rows * T
  const float* xt;            // X in tiles: n_tiles * K * T
  float* out;                 // nnz, packed in the format's order
  std::size_t rows, K, tokens;
  const index_t* row_bounds;  // n_blocks + 1
  std::size_t n_blocks;
  bool accumulate;            // out += instead of out =

  HCOMM_HOST_DEVICE std::size_t items() const { return n_blocks; }

  HCOMM_HOST_DEVICE void operator()(std::size_t blk) const {
    const std::size_t r_begin = row_bounds[blk], r_end = row_bounds[blk + 1];
    if (!accumulate)
      for (index_t p = row_ptr[r_begin]; p < row_ptr[r_end]; ++p) out[p] = 0.0f;
    const std::size_t n_tiles = tile_count(tokens, T);
    for (std::size_t j = 0; j < n_tiles; ++j) {
      const float* dy = dyt + j * rows * T;
      const float* x = xt + j * K * T;
      for (std::size_t r = r_begin; r < r_end; ++r)
        for (std::size_t h = 0; h < static_cast<std::size_t>(T); h += 32) {
          f8 d0, d1, d2, d3;
          load8(d0, dy + r * T + h);
          load8(d1, dy + r * T + h + 8);
          load8(d2, dy + r * T + h + 16);
          load8(d3, dy + r * T + h + 24);
          const index_t pe = row_ptr[r + 1];
          for (index_t p = row_ptr[r]; p < pe; p += 8) {
            // 8 entries at once; a short last group repeats its first entry and keeps only
            // the real lanes.
            const index_t n = min_of<index_t>(8, pe - p);
            f8 acc[8], xv;
            MSPARSE_UNROLL
            for (int q = 0; q < 8; ++q) {
              const index_t pq = static_cast<index_t>(q) < n ? p + static_cast<index_t>(q) : p;
              const float* xq = x + static_cast<std::size_t>(col[pq]) * T + h;
              load8(xv, xq);
              acc[q] = d0 * xv;
              load8(xv, xq + 8);
              fma8(acc[q], d1, xv);
              load8(xv, xq + 16);
              fma8(acc[q], d2, xv);
              load8(xv, xq + 24);
              fma8(acc[q], d3, xv);
            }
            f8 sums;
            reduce8x8(sums, acc);
            if (n == 8) {
              f8 o;
              load8(o, out + p);
              o += sums;
              store8(out + p, o);
            } else {
              for (index_t q = 0; q < n; ++q) out[p + q] += sums[static_cast<int>(q)];
            }
          }
        }
    }
  }
};


// The same gradient over a panel-blocked index (format::blocked_pattern), written in that
// blocked order (the layer scatters it to the format's order). One item = a block of R
// weight rows (it owns their gradients: no atomics, deterministic sums). Token tiles are
// the outer loop; inside a tile the block's rows are swept once per panel of F features,
// so the panel of the X tile (F x 64 floats) stays in L1 (see spmm_blocked). A row's 64
// dY values of the tile sit in 8 registers; 4 active weights at a time: 4 accumulators of
// 8 FMAs each against the weights' X^T rows (one load per FMA), one shuffle-tree reduction
// for the 4 sums (half the reductions per FMA of the 32-token form above).
template <int R = 64>
struct sddmm_blocked {
  static constexpr int T = 64;

  const index_t* seg;     // n_blocks * n_panels * R + 1
  std::size_t n_panels;   // >= 1
  std::size_t panel_width;  // features per panel
  const index_t* col;     // nnz, blocked order
  const float* dyt;       // dY in tiles: n_tiles * rows * T
  const float* xt;        // X in tiles: n_tiles * K * T
  float* out;             // nnz, blocked order
  std::size_t rows, K, tokens;
  bool accumulate = false;  // out += instead of out =

  HCOMM_HOST_DEVICE std::size_t items() const { return (rows + R - 1) / R; }

  HCOMM_HOST_DEVICE void operator()(std::size_t b) const {
    const std::size_t r0 = b * R;
    const std::size_t nr = min_of<std::size_t>(R, rows - r0);
    const index_t pb = seg[b * n_panels * R], pbe = seg[(b + 1) * n_panels * R];
    if (!accumulate)
      for (index_t p = pb; p < pbe; ++p) out[p] = 0.0f;
    const std::size_t n_tiles = tile_count(tokens, T);
    for (std::size_t j = 0; j < n_tiles; ++j) {
      const float* dy = dyt + j * rows * T;
      const float* x = xt + j * K * T;
      for (std::size_t pn = 0; pn < n_panels; ++pn) {
        const index_t* sp = seg + (b * n_panels + pn) * R;
        // Prefetch the next panel of X (the next tile's first one after the last), a few
        // lines per row.
        const float* nx = pn + 1 < n_panels ? x + (pn + 1) * panel_width * T : x + K * T;
        const std::size_t nfe = pn + 1 < n_panels ? min_of(K, (pn + 2) * panel_width) - (pn + 1) * panel_width
                                                  : (j + 1 < n_tiles ? min_of(K, panel_width) : 0);
        const char* pf = reinterpret_cast<const char*>(nx);
        const std::size_t pf_lines = nfe * T * sizeof(float) / 64, pf_step = (pf_lines + nr - 1) / nr;
        for (std::size_t g = 0; g < nr; ++g) {
          for (std::size_t l = g * pf_step; l < min_of(pf_lines, g * pf_step + pf_step); ++l) prefetch_l1(pf + l * 64);
          const index_t pe = sp[g + 1];
          index_t p = sp[g];
          if (p == pe) continue;
          const float* dr = dy + (r0 + g) * T;
          f8 d0, d1, d2, d3, d4, d5, d6, d7;
          load8(d0, dr);      load8(d1, dr + 8);  load8(d2, dr + 16); load8(d3, dr + 24);
          load8(d4, dr + 32); load8(d5, dr + 40); load8(d6, dr + 48); load8(d7, dr + 56);
          for (; p < pe; p += 4) {
            // 4 entries at once; a short last group repeats its first entry and keeps only
            // the real lanes.
            const index_t n = min_of<index_t>(4, pe - p);
            f8 acc[4], xv;
            MSPARSE_UNROLL
            for (int q = 0; q < 4; ++q) {
              const index_t pq = static_cast<index_t>(q) < n ? p + static_cast<index_t>(q) : p;
              const float* xq = x + static_cast<std::size_t>(col[pq]) * T;
              load8(xv, xq);      acc[q] = d0 * xv;
              load8(xv, xq + 8);  fma8(acc[q], d1, xv);
              load8(xv, xq + 16); fma8(acc[q], d2, xv);
              load8(xv, xq + 24); fma8(acc[q], d3, xv);
              load8(xv, xq + 32); fma8(acc[q], d4, xv);
              load8(xv, xq + 40); fma8(acc[q], d5, xv);
              load8(xv, xq + 48); fma8(acc[q], d6, xv);
              load8(xv, xq + 56); fma8(acc[q], d7, xv);
            }
            f8 sums;
            reduce4x8(sums, acc);
            if (n == 4) {
              add4(out + p, sums);
            } else {
              for (index_t q = 0; q < n; ++q) out[p + q] += sums[static_cast<int>(q)];
            }
          }
        }
      }
    }
  }
};

}  // namespace msparse::kernels
