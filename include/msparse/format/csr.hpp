// msparse/format/csr.hpp: the storage format of a sparse weight between topology updates.
//
//   std::vector<std::uint8_t> mask(rows * cols);     // 1 = active, row-major like the weight
//   auto W = msparse::format::sparse_matrix::from_dense(w.data(), mask.data(), rows, cols);
//   W.values()[p] -= lr * g[p];                       // optimizer on packed active values
//   W.to_dense(w.data());                             // back: active values, zeros elsewhere
//
// Layout, chosen for the kernels in msparse/kernels/: CSR by output rows (row_ptr, col_idx,
// values packed row by row; inside a row in a fixed scrambled order, see entry_order_key) so the forward SpMM and the SDDMM walk one row's active
// weights contiguously; plus a transposed index (CSC: col_ptr, row_idx, csc_to_csr) so
// the backward input gradient gathers by input column. Only the CSR values are the
// weight; the backward gathers them into CSC order per call (nnz floats, cheap next to the
// product) so an optimizer step never has to touch two copies.
//
// The mask is the plain dense byte mask (nonzero = active, rows x cols, row-major), the
// interchange with the topology code: building the format from it is one pass over the
// dense matrix, done once per topology update (every dT steps).
#pragma once
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"

namespace msparse::format {

using index_t = std::uint32_t;  // 4-byte indices: half the index traffic of size_t

// Order of the entries inside one row (CSR) or column (CSC): ascending by a fixed
// bijective hash of the index, not by the index. Why: with sorted columns the kernels walk
// the tiled activations in ascending address order with small random gaps, which the
// hardware stride prefetcher chases without gain, so sorted order runs much slower than
// the same work in scrambled order at moderate densities. The order is a pure function
// of the pattern, so every data-parallel replica packs its values identically.
// Within a row, entries are first grouped by panel of panel_columns columns (the kernels
// sweep one panel of the dense operand at a time, see kernels/spmm.hpp), then scrambled.
#ifndef MSPARSE_PANEL_COLUMNS
#define MSPARSE_PANEL_COLUMNS 512
#endif
inline constexpr std::size_t panel_columns = MSPARSE_PANEL_COLUMNS;

HCOMM_HOST_DEVICE constexpr std::uint64_t entry_order_key(std::uint32_t index) noexcept {
  return (static_cast<std::uint64_t>(index / panel_columns) << 32) |
         static_cast<std::uint32_t>(index * 0x9E3779B1u);  // odd multiplier: a bijection
}

inline std::size_t panel_count(std::size_t n) { return n == 0 ? 1 : (n + panel_columns - 1) / panel_columns; }

// ptr[r * (P + 1) + q]: first entry of line r (row of a CSR, column of a CSC) in panel q;
// ptr[r * (P + 1) + P]: the line's end. Entries must be grouped by panel.
inline std::vector<index_t> panel_pointers(const index_t* line_ptr, const index_t* idx, std::size_t lines,
                                           std::size_t extent) {
  const std::size_t np = panel_count(extent);
  std::vector<index_t> ptr(lines * (np + 1));
  for (std::size_t r = 0; r < lines; ++r) {
    index_t p = line_ptr[r];
    const index_t pe = line_ptr[r + 1];
    for (std::size_t q = 0; q < np; ++q) {
      ptr[r * (np + 1) + q] = p;
      while (p < pe && idx[p] / panel_columns == q) ++p;
    }
    ptr[r * (np + 1) + np] = pe;
  }
  return ptr;
}

// A copy of a pattern's index in "panel-blocked" order, for the CPU kernels (built once per
// topology update, next to the format; see kernels/spmm.hpp, spmm_blocked). The lines (rows
// of a CSR, columns of a CSC) are cut into blocks of R lines and the extent into panels of F
// indices; entries are ordered by (block, panel, line, then the source's order), so a
// kernel that sweeps one panel over a block's lines reads index and values strictly
// sequentially. Segment s = (b * n_panels + q) * R + i holds line b*R+i's entries in panel
// q: [seg[s], seg[s+1]) (lines past the end are empty). src[p] is the entry's position in
// the source's packed order (the CSR values), so values and gradients are moved between the
// two orders with one gather or scatter of nnz floats per call.
struct blocked_pattern {
  std::size_t lines = 0, extent = 0, rows_per_block = 1, panel_width = 1, n_panels = 1, n_blocks = 0;
  std::vector<index_t> seg{0}, idx, src;

  std::size_t nnz() const noexcept { return idx.size(); }
  std::size_t segments() const noexcept { return n_blocks * n_panels * rows_per_block; }
  // First entry of block b (entries of a block are contiguous).
  index_t block_begin(std::size_t b) const noexcept { return seg[b * n_panels * rows_per_block]; }
  std::size_t bytes() const noexcept { return (seg.size() + idx.size() + src.size()) * sizeof(index_t); }
  // out[p] = packed[src[p]]
  void gather(const float* packed, float* out) const {
    const std::size_t n = nnz();
    for (std::size_t p = 0; p < n; ++p) out[p] = packed[src[p]];
  }
  // packed[src[p]] (+)= in[p]
  void scatter(const float* in, float* packed, bool accumulate) const {
    const std::size_t n = nnz();
    if (accumulate)
      for (std::size_t p = 0; p < n; ++p) packed[src[p]] += in[p];
    else
      for (std::size_t p = 0; p < n; ++p) packed[src[p]] = in[p];
  }

  // From line pointers (lines + 1), indices along the extent and (optional, null = identity)
  // source positions of a CSR or CSC.
  static blocked_pattern build(const index_t* line_ptr, const index_t* index, const index_t* source, std::size_t lines,
                               std::size_t extent, std::size_t R, std::size_t F) {
    blocked_pattern b;
    b.lines = lines;
    b.extent = extent;
    b.rows_per_block = R = std::max<std::size_t>(1, R);
    b.panel_width = F = std::max<std::size_t>(1, F);
    b.n_panels = extent == 0 ? 1 : (extent + F - 1) / F;
    b.n_blocks = (lines + R - 1) / R;
    const std::size_t P = b.n_panels, S = b.segments();
    std::vector<index_t> cnt(S + 1, 0);
    auto seg_of = [&](std::size_t r, index_t k) { return ((r / R) * P + k / F) * R + r % R; };
    for (std::size_t r = 0; r < lines; ++r)
      for (index_t p = line_ptr[r]; p < line_ptr[r + 1]; ++p) ++cnt[seg_of(r, index[p]) + 1];
    for (std::size_t s = 0; s < S; ++s) cnt[s + 1] += cnt[s];
    b.seg = cnt;
    const std::size_t n = line_ptr[lines];
    b.idx.resize(n);
    b.src.resize(n);
    for (std::size_t r = 0; r < lines; ++r)
      for (index_t p = line_ptr[r]; p < line_ptr[r + 1]; ++p) {
        const index_t q = cnt[seg_of(r, index[p])]++;
        b.idx[q] = index[p];
        b.src[q] = source ? source[p] : p;
      }
    return b;
  }
};

class sparse_matrix {
 public:
  sparse_matrix() = default;

  // Pattern from a byte mask (nonzero = active), values from a dense row-major matrix.
  // dense may be null: values start at zero.
  template <class MaskT>
  static sparse_matrix from_dense(const float* dense, const MaskT* mask, std::size_t rows, std::size_t cols) {
    static_assert(sizeof(MaskT) == 1, "msparse: masks are one byte (or bool) per weight");
    HCOMM_EXPECTS(mask != nullptr || rows * cols == 0, "msparse: from_dense needs a mask");
    HCOMM_EXPECTS(rows * cols < (std::size_t(1) << 32), "msparse: sparse_matrix holds at most 2^32-1 elements");
    sparse_matrix m;
    m.rows_ = rows;
    m.cols_ = cols;
    m.row_ptr_.assign(rows + 1, 0);
    for (std::size_t r = 0; r < rows; ++r) {
      const MaskT* mr = mask + r * cols;
      index_t c = 0;
      for (std::size_t k = 0; k < cols; ++k) c += mr[k] ? 1u : 0u;
      m.row_ptr_[r + 1] = m.row_ptr_[r] + c;
    }
    const std::size_t nnz = m.row_ptr_[rows];
    m.col_idx_.resize(nnz);
    m.values_.resize(nnz);
    for (std::size_t r = 0; r < rows; ++r) {
      const MaskT* mr = mask + r * cols;
      index_t p = m.row_ptr_[r];
      for (std::size_t k = 0; k < cols; ++k) {
        if (mr[k]) {
          m.col_idx_[p] = static_cast<index_t>(k);
          m.values_[p] = dense ? dense[r * cols + k] : 0.0f;
          ++p;
        }
      }
    }
    m.order_rows();
    m.build_transposed_index();
    return m;
  }

  // Builds the pattern from CSR arrays (row_ptr of rows+1 entries, sorted unique columns);
  // entries are then reordered within each row (entry_order_key), values with them.
  static sparse_matrix from_csr(std::size_t rows, std::size_t cols, std::vector<index_t> row_ptr,
                                std::vector<index_t> col_idx, std::vector<float> values) {
    HCOMM_EXPECTS(row_ptr.size() == rows + 1 && row_ptr[0] == 0, "msparse: row_ptr must have rows+1 entries from 0");
    HCOMM_EXPECTS(col_idx.size() == row_ptr[rows] && values.size() == col_idx.size(),
                  "msparse: col_idx/values must have row_ptr[rows] entries");
    for (std::size_t r = 0; r < rows; ++r) {
      HCOMM_EXPECTS(row_ptr[r] <= row_ptr[r + 1], "msparse: row_ptr must not decrease");
      for (index_t p = row_ptr[r]; p < row_ptr[r + 1]; ++p) {
        HCOMM_EXPECTS(col_idx[p] < cols, "msparse: column index out of range");
        HCOMM_EXPECTS(p == row_ptr[r] || col_idx[p - 1] < col_idx[p], "msparse: columns must be sorted and unique");
      }
    }
    sparse_matrix m;
    m.rows_ = rows;
    m.cols_ = cols;
    m.row_ptr_ = std::move(row_ptr);
    m.col_idx_ = std::move(col_idx);
    m.values_ = std::move(values);
    m.order_rows();
    m.build_transposed_index();
    return m;
  }

  // Writes the whole dense matrix: active values, zeros elsewhere.
  void to_dense(float* dense) const {
    if (rows_ != 0 && cols_ != 0) std::memset(dense, 0, rows_ * cols_ * sizeof(float));
    scatter_to(dense);
  }
  // Writes only active positions of a dense matrix (inactive ones are left as they are).
  void scatter_to(float* dense) const { scatter_values(values_.data(), dense); }
  // Any packed array in this pattern's CSR order (a gradient, an Adam moment) to dense.
  void scatter_values(const float* packed, float* dense) const {
    for (std::size_t r = 0; r < rows_; ++r)
      for (index_t p = row_ptr_[r]; p < row_ptr_[r + 1]; ++p) dense[r * cols_ + col_idx_[p]] = packed[p];
  }
  // Reads active positions of a dense matrix into a packed array (CSR order).
  void gather_values(const float* dense, float* packed) const {
    for (std::size_t r = 0; r < rows_; ++r)
      for (index_t p = row_ptr_[r]; p < row_ptr_[r + 1]; ++p) packed[p] = dense[r * cols_ + col_idx_[p]];
  }
  void gather_from(const float* dense) { gather_values(dense, values_.data()); }
  // The pattern as a byte mask (1 = active).
  void to_mask(std::uint8_t* mask) const {
    if (rows_ != 0 && cols_ != 0) std::memset(mask, 0, rows_ * cols_);
    for (std::size_t r = 0; r < rows_; ++r)
      for (index_t p = row_ptr_[r]; p < row_ptr_[r + 1]; ++p) mask[r * cols_ + col_idx_[p]] = 1;
  }
  // Values in CSC order (column by column), e.g. for the backward input gradient.
  void transposed_values(float* out) const {
    const std::size_t n = nnz();
    for (std::size_t q = 0; q < n; ++q) out[q] = values_[csc_to_csr_[q]];
  }

  std::size_t rows() const noexcept { return rows_; }
  std::size_t cols() const noexcept { return cols_; }
  std::size_t nnz() const noexcept { return col_idx_.size(); }
  double density() const noexcept {
    return rows_ != 0 && cols_ != 0 ? static_cast<double>(nnz()) / static_cast<double>(rows_ * cols_) : 0.0;
  }
  std::span<float> values() noexcept { return values_; }
  std::span<const float> values() const noexcept { return values_; }
  const index_t* row_ptr() const noexcept { return row_ptr_.data(); }
  const index_t* col_idx() const noexcept { return col_idx_.data(); }
  const index_t* col_ptr() const noexcept { return col_ptr_.data(); }
  const index_t* row_idx() const noexcept { return row_idx_.data(); }
  const index_t* csc_to_csr() const noexcept { return csc_to_csr_.data(); }
  // Panel pointers (panel_pointers above) of the CSR over column panels and of the CSC over
  // row panels, and their panel counts.
  const index_t* row_panels() const noexcept { return row_panels_.data(); }
  std::size_t row_panel_count() const noexcept { return panel_count(cols_); }
  const index_t* col_panels() const noexcept { return col_panels_.data(); }
  std::size_t col_panel_count() const noexcept { return panel_count(rows_); }
  // Bytes held (pattern + values + transposed index).
  std::size_t bytes() const noexcept {
    return (row_ptr_.size() + col_idx_.size() + col_ptr_.size() + row_idx_.size() + csc_to_csr_.size() +
            row_panels_.size() + col_panels_.size()) *
               sizeof(index_t) +
           values_.size() * sizeof(float);
  }

 private:
  // Sorts each row's entries by entry_order_key(column), values along.
  void order_rows() {
    std::vector<std::pair<std::uint32_t, float>> tmp;
    for (std::size_t r = 0; r < rows_; ++r) {
      const index_t b = row_ptr_[r], e = row_ptr_[r + 1];
      tmp.clear();
      for (index_t p = b; p < e; ++p) tmp.emplace_back(col_idx_[p], values_[p]);
      std::sort(tmp.begin(), tmp.end(),
                [](const auto& x, const auto& y) { return entry_order_key(x.first) < entry_order_key(y.first); });
      for (index_t p = b; p < e; ++p) {
        col_idx_[p] = tmp[p - b].first;
        values_[p] = tmp[p - b].second;
      }
    }
  }

  void build_transposed_index() {
    const std::size_t n = nnz();
    col_ptr_.assign(cols_ + 1, 0);
    for (std::size_t p = 0; p < n; ++p) ++col_ptr_[col_idx_[p] + 1];
    for (std::size_t c = 0; c < cols_; ++c) col_ptr_[c + 1] += col_ptr_[c];
    row_idx_.resize(n);
    csc_to_csr_.resize(n);
    std::vector<index_t> fill(col_ptr_.begin(), col_ptr_.end() - 1);
    for (std::size_t r = 0; r < rows_; ++r)
      for (index_t p = row_ptr_[r]; p < row_ptr_[r + 1]; ++p) {
        const index_t q = fill[col_idx_[p]]++;
        row_idx_[q] = static_cast<index_t>(r);
        csc_to_csr_[q] = p;
      }
    // Same scrambled order inside each column.
    std::vector<std::pair<index_t, index_t>> tmp;
    for (std::size_t c = 0; c < cols_; ++c) {
      const index_t b = col_ptr_[c], e = col_ptr_[c + 1];
      tmp.clear();
      for (index_t q = b; q < e; ++q) tmp.emplace_back(row_idx_[q], csc_to_csr_[q]);
      std::sort(tmp.begin(), tmp.end(),
                [](const auto& x, const auto& y) { return entry_order_key(x.first) < entry_order_key(y.first); });
      for (index_t q = b; q < e; ++q) {
        row_idx_[q] = tmp[q - b].first;
        csc_to_csr_[q] = tmp[q - b].second;
      }
    }
    row_panels_ = panel_pointers(row_ptr_.data(), col_idx_.data(), rows_, cols_);
    col_panels_ = panel_pointers(col_ptr_.data(), row_idx_.data(), cols_, rows_);
  }

  std::size_t rows_ = 0, cols_ = 0;
  std::vector<index_t> row_ptr_{0}, col_idx_;
  std::vector<float> values_;
  std::vector<index_t> col_ptr_{0}, row_idx_, csc_to_csr_;
  std::vector<index_t> row_panels_, col_panels_;
};

}  // namespace msparse::format
