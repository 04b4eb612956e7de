// msparse/layer/sparse_linear.hpp: a linear layer whose weight is sparse between topology
// updates, computed with sparse kernels (not a masked dense product).
//
//   msparse::layer::sparse_linear<> fc(/*in*/768, /*out*/3072);
//   fc.set_weight(w_dense.data(), mask.data());         // topology update: dense+mask -> CSR
//   fc.forward(x, tokens, y);                           // y  = x W^T + b      (SpMM)
//   fc.backward(dy, x, tokens, dx, dw_packed, db);      // dx = dY W           (SpMM on W^T)
//                                                       // dW = (dY^T X)[active] (SDDMM)
//   fc.weight().values()                                // packed weights for the optimizer
//   fc.dense_weight_grad(dy, x, tokens, dw_dense);      // dY^T X everywhere (sgemm), only
//                                                       // on topology-update steps (growth)
//
// Shapes: x (tokens x in), y and dy (tokens x out), row-major; W is out x in (PyTorch's
// nn.Linear layout), packed weights and gradients follow the format's entry order
// (format/csr.hpp: row by row, scrambled inside a row; the same for every replica).
// Cost model: conversion (set_weight) is O(out*in) once per topology update, and builds
// the kernels' panel-blocked copies of the index (format::blocked_pattern, ~12 bytes per
// active weight each for W and W^T); every step then costs 2*nnz*tokens FLOPs per product,
// O(nnz) to gather the values into the kernels' order (and scatter the SDDMM result back),
// plus O(tokens*(in+out)) for the tile transposes (x once per forward, dY once per
// backward; backward(dy, nullptr, ...) reuses the forward's x tiles). On one thread the
// backward goes tile by tile (fused_backward). Kernel work items keep R x 64 partial
// sums on the stack (up to 96 KB for the 384-line input-gradient items). Workspace grows
// to the largest token count seen and is reused, so a layer object must not run two
// calls at once. Measured speed: bench/msparse/RESULTS.md.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/exec/host.hpp"
#include "msparse/format/csr.hpp"
#include "msparse/kernels/launch.hpp"
#include "msparse/kernels/sddmm.hpp"
#include "msparse/kernels/spmm.hpp"
#include "msparse/kernels/tiles.hpp"

#if __has_include(<cblas.h>)
#include <cblas.h>
#define MSPARSE_HAS_CBLAS 1
#else
#define MSPARSE_HAS_CBLAS 0
#endif

namespace msparse::layer {

using format::index_t;

// Row boundaries of n_blocks blocks with about equal cost (active weights + row_cost per
// row), so that items of skewed patterns (a dense row, empty rows) take about equal time.
inline std::vector<index_t> balanced_row_bounds(const index_t* ptr, std::size_t rows, std::size_t n_blocks,
                                                std::size_t row_cost = 2) {
  n_blocks = std::max<std::size_t>(1, std::min(n_blocks, std::max<std::size_t>(rows, 1)));
  std::vector<index_t> b(n_blocks + 1, static_cast<index_t>(rows));
  b[0] = 0;
  const double total = static_cast<double>(ptr[rows]) + static_cast<double>(rows * row_cost);
  std::size_t k = 1;
  for (std::size_t r = 0; r < rows && k < n_blocks; ++r) {
    const double before = static_cast<double>(ptr[r]) + static_cast<double>(r * row_cost);
    while (k < n_blocks && before >= total * static_cast<double>(k) / static_cast<double>(n_blocks))
      b[k++] = static_cast<index_t>(r);
  }
  return b;
}

namespace detail {
// db[o] (+)= sum_t dy[t, o]; one item = 64 output columns.
struct bias_grad {
  const float* dy;
  float* db;
  std::size_t tokens, out;
  bool accumulate;
  HCOMM_HOST_DEVICE void operator()(std::size_t item) const {
    const std::size_t o0 = item * 64, o1 = kernels::min_of<std::size_t>(out, o0 + 64);
    float acc[64];
    for (std::size_t o = 0; o < 64; ++o) acc[o] = 0.0f;
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t o = o0; o < o1; ++o) acc[o - o0] += dy[t * out + o];
    for (std::size_t o = o0; o < o1; ++o) db[o] = accumulate ? db[o] + acc[o - o0] : acc[o - o0];
  }
};
}  // namespace detail

template <class Exec = hcomm::exec::host>
class sparse_linear {
  static_assert(!Exec::is_device,
                "msparse: sparse_linear keeps weights and workspace in host memory; on a device, run the "
                "kernels in msparse/kernels/ with device buffers");

 public:
  // Token tile of every kernel (kernels/tiles.hpp); each kernel sweeps at most 512 features
  // of a tile at a time (128 KB, in L2).
  static constexpr int tile = 64;
  // Rows of W per forward work item, rows of W^T per input-gradient item, rows of W per
  // SDDMM item, and the panel width (features of a tile swept at a time: F x 64 floats must
  // stay in L1). Compile-time knobs (-D...) for tuning on other CPUs.
#ifndef MSPARSE_ROWS_PER_ITEM
#define MSPARSE_ROWS_PER_ITEM 128
#endif
#ifndef MSPARSE_BWD_ROWS_PER_ITEM
#define MSPARSE_BWD_ROWS_PER_ITEM 384
#endif
#ifndef MSPARSE_GRAD_ROWS_PER_BLOCK
#define MSPARSE_GRAD_ROWS_PER_BLOCK 128
#endif
#ifndef MSPARSE_KERNEL_PANEL
#define MSPARSE_KERNEL_PANEL 96
#endif
#ifndef MSPARSE_GRAD_PANEL
#define MSPARSE_GRAD_PANEL MSPARSE_KERNEL_PANEL
#endif
  static constexpr int rows_per_item = MSPARSE_ROWS_PER_ITEM;
  static constexpr int bwd_rows_per_item = MSPARSE_BWD_ROWS_PER_ITEM;
  static constexpr int grad_rows_per_block = MSPARSE_GRAD_ROWS_PER_BLOCK;
  static constexpr std::size_t kernel_panel = MSPARSE_KERNEL_PANEL;
  static constexpr std::size_t grad_panel = MSPARSE_GRAD_PANEL;
  // The SDDMM uses the forward's blocked index when the block and panel sizes agree.
  static constexpr bool grad_shares_fwd =
      static_cast<std::size_t>(grad_rows_per_block) == static_cast<std::size_t>(rows_per_item) && grad_panel == kernel_panel;

  sparse_linear(std::size_t in_features, std::size_t out_features, bool has_bias = true, Exec ex = {})
      : in_(in_features), out_(out_features), has_bias_(has_bias), ex_(ex), bias_(has_bias ? out_features : 0, 0.0f) {
    std::vector<std::uint8_t> none(in_ * out_, 0);
    set_weight(nullptr, none.data());
  }

  // Topology update: the pattern from a byte mask (nonzero = active, out x in), the values
  // from a dense weight (null: zeros). Inactive entries of dense_w are ignored.
  template <class MaskT>
  void set_weight(const float* dense_w, const MaskT* mask) {
    set_weight(format::sparse_matrix::from_dense(dense_w, mask, out_, in_));
  }
  void set_weight(format::sparse_matrix w) {
    HCOMM_EXPECTS(w.rows() == out_ && w.cols() == in_, "msparse: sparse_linear weight must be out x in");
    w_ = std::move(w);
    // The kernels' panel-blocked copies of the index (format::blocked_pattern), rebuilt here
    // only, i.e. once per topology update: W by rows for the forward and the SDDMM, W^T (the
    // CSC) for the input gradient.
    fwd_ = format::blocked_pattern::build(w_.row_ptr(), w_.col_idx(), nullptr, out_, in_, rows_per_item, kernel_panel);
    bwd_ = format::blocked_pattern::build(w_.col_ptr(), w_.row_idx(), w_.csc_to_csr(), in_, out_, bwd_rows_per_item,
                                          kernel_panel);
    if constexpr (grad_shares_fwd)
      grad_ = format::blocked_pattern{};
    else
      grad_ = format::blocked_pattern::build(w_.row_ptr(), w_.col_idx(), nullptr, out_, in_, grad_rows_per_block,
                                             grad_panel);
  }
  // Dense weight (out x in): active values, zeros elsewhere.
  void get_weight(float* dense_w) const { w_.to_dense(dense_w); }

  format::sparse_matrix& weight() noexcept { return w_; }
  const format::sparse_matrix& weight() const noexcept { return w_; }
  std::span<float> bias() noexcept { return bias_; }
  std::size_t in_features() const noexcept { return in_; }
  std::size_t out_features() const noexcept { return out_; }
  bool has_bias() const noexcept { return has_bias_; }
  const Exec& executor() const noexcept { return ex_; }

  // y (tokens x out) = x (tokens x in) W^T + b.
  void forward(const float* x, std::size_t tokens, float* y) {
    if (tokens == 0) return;
    const float* xt = to_tiles(x, tokens, in_, xt_);
    xt_tokens_ = tokens;
    vals_.resize(w_.nnz());
    fwd_.gather(w_.values().data(), vals_.data());
    kernels::spmm_blocked<rows_per_item> k{fwd_.seg.data(), fwd_.n_panels, fwd_.panel_width, fwd_.idx.data(), vals_.data(), xt,
                                           has_bias_ ? bias_.data() : nullptr, y, out_, in_, tokens, out_, false};
    kernels::launch(ex_, k.items(), k);
  }

  // dx (tokens x in) (+)= dy (tokens x out) W.
  void backward_input(const float* dy, std::size_t tokens, float* dx, bool accumulate = false) {
    if (tokens == 0) return;
    input_grad_from_tiles(to_tiles(dy, tokens, out_, dyt_), tokens, dx, accumulate);
  }

  // dw_packed (nnz, the format's order) (+)= (dy^T x)[active]. x == nullptr: the input of
  // the most recent forward (its tiles are kept, which saves re-tiling x).
  void backward_weight(const float* dy, const float* x, std::size_t tokens, float* dw_packed, bool accumulate = false) {
    if (tokens == 0) {
      if (!accumulate) std::fill(dw_packed, dw_packed + w_.nnz(), 0.0f);
      return;
    }
    weight_grad_from_tiles(to_tiles(dy, tokens, out_, dyt_), x, tokens, dw_packed, accumulate);
  }

  // db (out) (+)= column sums of dy.
  void backward_bias(const float* dy, std::size_t tokens, float* db, bool accumulate = false) {
    detail::bias_grad k{dy, db, tokens, out_, accumulate};
    kernels::launch(ex_, (out_ + 63) / 64, k);
  }

  // All three gradients (null output pointers skip one); dY is transposed into tiles once for
  // both sparse products. x == nullptr: the input of the most recent forward.
  void backward(const float* dy, const float* x, std::size_t tokens, float* dx, float* dw_packed, float* db,
                bool accumulate = false) {
    if (tokens == 0) {
      if (dw_packed) backward_weight(dy, x, 0, dw_packed, accumulate);
      if (db && has_bias_ && !accumulate) std::fill(db, db + out_, 0.0f);
      return;
    }
#ifndef MSPARSE_NO_FUSED_BACKWARD  // (the unfused order, for comparisons)
    // Tile by tile only on one thread: with more, each of the 3 launches per tile ends in a
    // barrier, and on a loaded machine (more runnable threads than cores) a barrier waits
    // for a descheduled thread, which makes the step several times slower at every
    // sparsity. Both orders give bitwise the same gradients (same sums in
    // the same order), so the choice does not change results.
    const bool fuse = dx && dw_packed && kernels::executor_threads(ex_) == 1;
#else
    const bool fuse = false;
#endif
    if (fuse) {
      fused_backward(dy, x, tokens, dx, dw_packed, accumulate);
    } else if (dx || dw_packed) {
      const float* dyt = to_tiles(dy, tokens, out_, dyt_);
      if (dx) input_grad_from_tiles(dyt, tokens, dx, accumulate);
      if (dw_packed) weight_grad_from_tiles(dyt, x, tokens, dw_packed, accumulate);
    }
    if (db && has_bias_) backward_bias(dy, tokens, db, accumulate);
  }

#if MSPARSE_HAS_CBLAS
  // dw_dense (out x in) = dy^T x at every position (OpenBLAS sgemm): what gradient-based
  // growth reads on topology-update steps. Not part of an ordinary step.
  void dense_weight_grad(const float* dy, const float* x, std::size_t tokens, float* dw_dense) const {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(out_), static_cast<int>(in_),
                static_cast<int>(tokens), 1.0f, dy, static_cast<int>(out_), x, static_cast<int>(in_), 0.0f, dw_dense,
                static_cast<int>(in_));
  }
#endif

 private:
  const float* to_tiles(const float* src, std::size_t tokens, std::size_t K, std::vector<float>& buf) {
    const std::size_t need = kernels::tile_count(tokens, tile) * K * tile;
    if (buf.size() < need) buf.resize(need);
    kernels::to_tiles<tile> k{src, buf.data(), tokens, K, K};
    kernels::launch(ex_, k.items(), k);
    return buf.data();
  }

  void input_grad_from_tiles(const float* dyt, std::size_t tokens, float* dx, bool accumulate) {
    vals_.resize(w_.nnz());
    bwd_.gather(w_.values().data(), vals_.data());
    kernels::spmm_blocked<bwd_rows_per_item> k{bwd_.seg.data(), bwd_.n_panels, bwd_.panel_width, bwd_.idx.data(), vals_.data(), dyt,
                                               nullptr, dx, in_, out_, tokens, in_, accumulate};
    kernels::launch(ex_, k.items(), k);
  }

  // The tiles of x for the backward: transposed now, or (x == nullptr) the forward's.
  const float* x_tiles(const float* x, std::size_t tokens) {
    if (!x) {
      HCOMM_EXPECTS(xt_tokens_ == tokens, "msparse: x == nullptr needs a forward over the same token count first");
      return xt_.data();
    }
    const float* xt = to_tiles(x, tokens, in_, xt_);
    xt_tokens_ = tokens;
    return xt;
  }

  void weight_grad_from_tiles(const float* dyt, const float* x, std::size_t tokens, float* dw, bool accumulate) {
    const float* xt = x_tiles(x, tokens);
    gblk_.resize(w_.nnz());
    const format::blocked_pattern& gp = grad_pattern();
    kernels::sddmm_blocked<grad_rows_per_block> k{gp.seg.data(), gp.n_panels, gp.panel_width, gp.idx.data(), dyt, xt,
                                                  gblk_.data(), out_, in_, tokens};
    kernels::launch(ex_, k.items(), k);
    gp.scatter(gblk_.data(), dw, accumulate);
  }

  // Both products one token tile at a time: dY's tile j is transposed into a one-tile
  // buffer (out x 64 floats) and consumed at once by the input gradient (tokens of tile j)
  // and the SDDMM (which adds tile j's contribution to every active gradient), so the
  // transposed dY never makes a round trip through DRAM (2048 x 3072: 25 MB written and
  // read twice otherwise). Three launches per tile.
  void fused_backward(const float* dy, const float* x, std::size_t tokens, float* dx, float* dw, bool accumulate) {
    const float* xt = x_tiles(x, tokens);
    const std::size_t n_tiles = kernels::tile_count(tokens, tile);
    const format::blocked_pattern& gp = grad_pattern();
    if (dyt_.size() < out_ * tile) dyt_.resize(out_ * tile);
    vals_.resize(w_.nnz());
    bwd_.gather(w_.values().data(), vals_.data());
    gblk_.resize(w_.nnz());
    for (std::size_t j = 0; j < n_tiles; ++j) {
      const std::size_t t0 = j * tile, nt = std::min<std::size_t>(tile, tokens - t0);
      kernels::to_tiles<tile> tk{dy + t0 * out_, dyt_.data(), nt, out_, out_};
      kernels::launch(ex_, tk.items(), tk);
      kernels::spmm_blocked<bwd_rows_per_item> ig{bwd_.seg.data(), bwd_.n_panels, bwd_.panel_width, bwd_.idx.data(),
                                                  vals_.data(), dyt_.data(), nullptr, dx + t0 * in_, in_, out_, nt, in_,
                                                  accumulate};
      kernels::launch(ex_, ig.items(), ig);
      kernels::sddmm_blocked<grad_rows_per_block> wg{gp.seg.data(), gp.n_panels, gp.panel_width, gp.idx.data(), dyt_.data(), xt + j * in_ * tile,
                                                     gblk_.data(), out_, in_, nt, j > 0};
      kernels::launch(ex_, wg.items(), wg);
    }
    gp.scatter(gblk_.data(), dw, accumulate);
  }

  const format::blocked_pattern& grad_pattern() const noexcept { return grad_shares_fwd ? fwd_ : grad_; }

  std::size_t in_, out_;
  bool has_bias_;
  Exec ex_;
  format::sparse_matrix w_;
  std::vector<float> bias_;
  format::blocked_pattern fwd_, bwd_, grad_;
  std::vector<float> xt_, dyt_, vals_, gblk_;
  std::size_t xt_tokens_ = static_cast<std::size_t>(-1);  // tokens of the x held in xt_
};

}  // namespace msparse::layer
