// msparse/kernels/spmm.hpp: sparse x dense products over token tiles (SpMM).
//
// Two kernels: spmm_tiles (CSR rows with per-row panel pointers, 512-feature panels, the
// version kept for reference and its tests) and spmm_blocked (below; what
// layer::sparse_linear runs): the same register-blocked inner loop over a panel-blocked
// copy of the index with 96-feature panels that stay in L1.
//
//   // C (tokens x rows) = B (tokens x K) * A^T + bias, A sparse rows x K in CSR
//   spmm_tiles<> k{W.row_panels(), W.row_panel_count(), W.col_idx(), W.values().data(), bt, bias, c,
//                  rows, K, tokens, ldc, false};
//   msparse::kernels::launch(ex, k.items(), k);
//
// Forward of a sparse linear layer: A = W (out x in, CSR), B = x; backward input gradient:
// A = W^T (the CSC index of W with values gathered into CSC order), B = dY.
//
// One item = (token tile of T = 64 tokens, block of R rows of A). For each row the 64
// outputs are accumulated in 8 vector registers (f8, 8 independent FMA chains); an active
// weight w (r, k) adds w * B^T[k, tile] (64 contiguous floats of the tiled input, see
// tiles.hpp): one broadcast, 8 loads, 8 FMAs, no gathers, and 8 bytes of index+value per
// 128 FLOPs (32 tokens per tile would read the index stream twice as often). The part of the
// tile a sweep reads must stay in L2 while the block's rows are swept, so K is cut into
// panels of format::panel_columns (512) features (128 KB of tile): a row's entries are
// grouped by panel (format/csr.hpp), the rows are swept once per panel and their partial
// sums kept in a R x 64 buffer between panels (a sweep over the whole tile at large K loses
// the tile's lines to the index stream). Finished rows are written
// transposed into the row-major output, R consecutive floats per token.
#pragma once
#include <cstddef>
#include <cstdint>

#include "hcomm/core/macros.hpp"
#include "msparse/format/csr.hpp"
#include "msparse/kernels/launch.hpp"
#include "msparse/kernels/simd.hpp"
#include "msparse/kernels/tiles.hpp"

namespace msparse::kernels {

using format::index_t;

// T = 64 tokens per tile (8 f8 accumulators per row = 8 FMA chains), R rows per item.
template <int R = 64>
struct spmm_tiles {
  static constexpr int T = 64;
  static constexpr int rows_per_block = R;

  const index_t* panel_ptr;  // rows * (n_panels + 1): where each column panel of each row starts
  std::size_t n_panels;      // >= 1 (format::sparse_matrix::panel_columns wide)
  const index_t* col;        // nnz, column (feature of B) of each active weight
  const float* val;          // nnz
  const float* bt;           // B in tiles: n_tiles * K * T (tiles.hpp)
  const float* bias;         // rows, or null
  float* c;                  // tokens x ldc, row-major; columns [0, rows) written
  std::size_t rows, K, tokens, ldc;
  bool accumulate;           // c += instead of c =

  HCOMM_HOST_DEVICE std::size_t row_blocks() const { return (rows + R - 1) / R; }
  HCOMM_HOST_DEVICE std::size_t items() const { return tile_count(tokens, T) * row_blocks(); }

  HCOMM_HOST_DEVICE void operator()(std::size_t item) const {
    const std::size_t nb = row_blocks();
    const std::size_t j = item / nb, r0 = (item % nb) * R;
    const std::size_t nr = min_of<std::size_t>(R, rows - r0);
    const float* xt = bt + j * K * T;
    const std::size_t t0 = j * T;
    const std::size_t nt = min_of<std::size_t>(T, tokens - t0);
    float part[R * T];  // the block's finished rows, row-major R x T, written out transposed
    for (std::size_t pn = 0; pn < n_panels; ++pn)
    for (std::size_t g = 0; g < nr; ++g) {
      const index_t* pp = panel_ptr + (r0 + g) * (n_panels + 1) + pn;
      index_t p = pp[0];
      const index_t pe = pp[1];
      float* prow = part + g * T;
      f8 a0, a1, a2, a3, a4, a5, a6, a7, x;
      if (pn == 0) {
        splat8(a0, bias ? bias[r0 + g] : 0.0f);
        a1 = a0; a2 = a0; a3 = a0; a4 = a0; a5 = a0; a6 = a0; a7 = a0;
      } else {
        if (p == pe) continue;
        load8(a0, prow);      load8(a1, prow + 8);  load8(a2, prow + 16); load8(a3, prow + 24);
        load8(a4, prow + 32); load8(a5, prow + 40); load8(a6, prow + 48); load8(a7, prow + 56);
      }
      for (; p < pe; ++p) {
        const float w = val[p];
        const float* xr = xt + static_cast<std::size_t>(col[p]) * T;
        load8(x, xr);      fma8(a0, w, x);
        load8(x, xr + 8);  fma8(a1, w, x);
        load8(x, xr + 16); fma8(a2, w, x);
        load8(x, xr + 24); fma8(a3, w, x);
        load8(x, xr + 32); fma8(a4, w, x);
        load8(x, xr + 40); fma8(a5, w, x);
        load8(x, xr + 48); fma8(a6, w, x);
        load8(x, xr + 56); fma8(a7, w, x);
      }
      store8(prow, a0);      store8(prow + 8, a1);  store8(prow + 16, a2); store8(prow + 24, a3);
      store8(prow + 32, a4); store8(prow + 40, a5); store8(prow + 48, a6); store8(prow + 56, a7);
    }
    // Transposed write: 8 rows x 8 tokens at a time through an in-register transpose.
    const std::size_t nt8 = nt / 8 * 8, nr8 = nr / 8 * 8;
    for (std::size_t t = 0; t < nt8; t += 8)
      for (std::size_t g = 0; g < nr8; g += 8) {
        f8 blk[8];
        MSPARSE_UNROLL
        for (int i = 0; i < 8; ++i) load8(blk[i], part + (g + i) * T + t);
        transpose8x8(blk);
        MSPARSE_UNROLL
        for (int i = 0; i < 8; ++i) {
          float* out = c + (t0 + t + i) * ldc + r0 + g;
          if (accumulate) {
            f8 o;
            load8(o, out);
            blk[i] += o;
          }
          store8(out, blk[i]);
        }
      }
    for (std::size_t t = 0; t < nt; ++t) {
      float* out = c + (t0 + t) * ldc + r0;
      for (std::size_t g = t < nt8 ? nr8 : 0; g < nr; ++g) out[g] = accumulate ? out[g] + part[g * T + t] : part[g * T + t];
    }
  }
};


// The same product over a panel-blocked index (format::blocked_pattern): one item = (token
// tile of 64 tokens, block of R lines of A). The block's lines are swept once per panel of
// F features; F is chosen so that the panel of the tile (F x 64 floats, 24 KB at F = 96)
// stays in L1 while the whole block is swept (a 512-feature panel lives in L2, whose
// random-access loads cannot keep up with the FMAs), and the index/values are read in the
// order they are stored (a sweep of small panels over plain CSR rows stalls on scattered
// index reads). The R x 64 partial sums between panels live in a per-item buffer (L2), R
// consecutive rows' worth.
template <int R = 64>
struct spmm_blocked {
  static constexpr int T = 64;
  static constexpr int rows_per_block = R;

  const index_t* seg;        // n_blocks * n_panels * R + 1 (format::blocked_pattern)
  std::size_t n_panels;      // >= 1
  std::size_t panel_width;   // features per panel
  const index_t* col;        // nnz, blocked order: feature of B
  const float* val;          // nnz, blocked order
  const float* bt;           // B in tiles: n_tiles * K * T (tiles.hpp)
  const float* bias;         // rows, or null
  float* c;                  // tokens x ldc, row-major; columns [0, rows) written
  std::size_t rows, K, tokens, ldc;
  bool accumulate;           // c += instead of c =

  HCOMM_HOST_DEVICE std::size_t row_blocks() const { return (rows + R - 1) / R; }
  HCOMM_HOST_DEVICE std::size_t items() const { return tile_count(tokens, T) * row_blocks(); }

  HCOMM_HOST_DEVICE void operator()(std::size_t item) const {
    const std::size_t nb = row_blocks();
    const std::size_t j = item / nb, b = item % nb, r0 = b * R;
    const std::size_t nr = min_of<std::size_t>(R, rows - r0);
    const float* xt = bt + j * K * T;
    const std::size_t t0 = j * T;
    const std::size_t nt = min_of<std::size_t>(T, tokens - t0);
    float part[R * T];  // the block's rows, row-major R x T, written out transposed
    for (std::size_t pn = 0; pn < n_panels; ++pn) {
      const index_t* sp = seg + (b * n_panels + pn) * R;
      // While this panel is swept, the next one is prefetched, a few lines per row (the
      // input gradient's 3072-feature tile does not fit L2 and comes from L3).
      const std::size_t nf0 = min_of(K, (pn + 1) * panel_width), nf1 = min_of(K, (pn + 2) * panel_width);
      const char* pf = reinterpret_cast<const char*>(xt + nf0 * T);
      const std::size_t pf_lines = (nf1 - nf0) * T * sizeof(float) / 64, pf_step = (pf_lines + nr - 1) / nr;
      for (std::size_t g = 0; g < nr; ++g) {
        for (std::size_t l = g * pf_step; l < min_of(pf_lines, g * pf_step + pf_step); ++l) prefetch_l1(pf + l * 64);
        index_t p = sp[g];
        const index_t pe = sp[g + 1];
        float* prow = part + g * T;
        f8 a0, a1, a2, a3, a4, a5, a6, a7, x;
        if (pn == 0) {
          splat8(a0, bias ? bias[r0 + g] : 0.0f);
          a1 = a0; a2 = a0; a3 = a0; a4 = a0; a5 = a0; a6 = a0; a7 = a0;
        } else {
          if (p == pe) continue;
          load8(a0, prow);      load8(a1, prow + 8);  load8(a2, prow + 16); load8(a3, prow + 24);
          load8(a4, prow + 32); load8(a5, prow + 40); load8(a6, prow + 48); load8(a7, prow + 56);
        }
        for (; p < pe; ++p) {
          const float w = val[p];
          const float* xr = xt + static_cast<std::size_t>(col[p]) * T;
          load8(x, xr);      fma8(a0, w, x);
          load8(x, xr + 8);  fma8(a1, w, x);
          load8(x, xr + 16); fma8(a2, w, x);
          load8(x, xr + 24); fma8(a3, w, x);
          load8(x, xr + 32); fma8(a4, w, x);
          load8(x, xr + 40); fma8(a5, w, x);
          load8(x, xr + 48); fma8(a6, w, x);
          load8(x, xr + 56); fma8(a7, w, x);
        }
        store8(prow, a0);      store8(prow + 8, a1);  store8(prow + 16, a2); store8(prow + 24, a3);
        store8(prow + 32, a4); store8(prow + 40, a5); store8(prow + 48, a6); store8(prow + 56, a7);
      }
    }
    write_transposed(part, c + t0 * ldc + r0, ldc, nr, nt, accumulate);
  }

  // out[t * ldc + g] (+)= part[g * T + t] for g < nr, t < nt: 8 rows x 8 tokens at a time
  // through an in-register transpose.
  HCOMM_HOST_DEVICE static void write_transposed(const float* part, float* out0, std::size_t ldc, std::size_t nr,
                                                 std::size_t nt, bool accumulate) {
    const std::size_t nt8 = nt / 8 * 8, nr8 = nr / 8 * 8;
    for (std::size_t t = 0; t < nt8; t += 8)
      for (std::size_t g = 0; g < nr8; g += 8) {
        f8 blk[8];
        MSPARSE_UNROLL
        for (int i = 0; i < 8; ++i) load8(blk[i], part + (g + i) * T + t);
        transpose8x8(blk);
        MSPARSE_UNROLL
        for (int i = 0; i < 8; ++i) {
          float* out = out0 + (t + i) * ldc + g;
          if (accumulate) {
            f8 o;
            load8(o, out);
            blk[i] += o;
          }
          store8(out, blk[i]);
        }
      }
    for (std::size_t t = 0; t < nt; ++t) {
      float* out = out0 + t * ldc;
      for (std::size_t g = t < nt8 ? nr8 : 0; g < nr; ++g) out[g] = accumulate ? out[g] + part[g * T + t] : part[g * T + t];
    }
  }
};

}  // namespace msparse::kernels
