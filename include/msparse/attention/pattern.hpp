// msparse/attention/pattern.hpp: attention sparsity patterns (Sparse Transformer: local
// band, strided, local+strided, fixed), causal (decoders) or bidirectional (encoders, BERT),
// and their block-granular layouts.
//
//   msparse::attention::pattern_spec p{msparse::attention::pattern::local_strided, /*stride*/128};
//   auto lay = msparse::attention::layout::cover(p, /*T*/1024, /*block*/64);  // exact pattern, empty blocks skipped
//   auto blk = msparse::attention::layout::blockwise(p, 1024, 64);            // the rule on block indices, whole blocks
//   double kept = lay.kept_fraction();            // of the T(T+1)/2 causal entries
//   double tiles = lay.computed_fraction();       // causal entries inside kept blocks
//   auto enc = msparse::attention::layout::cover({pattern::local_strided, 128, 1, /*causal*/ false}, 1024, 64);
//                                                 // bidirectional: of all T^2 entries
//
// Two ways to make a pattern block-granular (blocks are what a tile kernel, e.g. tensor
// cores, saves work on; the host kernels of block_sparse.hpp run over the element lists
// built here and do the kept entries only, with either):
//  - cover: every block the element pattern touches, the exact element pattern inside it.
//    Same function as the paper's mask; a tile kernel saves only where whole blocks are
//    empty (a block of B x B entries on a stride-l diagonal is computed for one entry).
//  - blockwise: apply the pattern's rule to block indices with the stride in blocks
//    (max(1, l / B)), keep whole blocks (causal inside diagonal blocks). Work = what is kept,
//    at the price of a coarser pattern than the paper's (see the report in the tests).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"

namespace msparse::attention {

enum class pattern : std::uint8_t { dense = 0, local = 1, strided = 2, local_strided = 3, fixed = 4 };

constexpr std::string_view to_string(pattern p) noexcept {
  switch (p) {
    case pattern::dense: return "dense";
    case pattern::local: return "local";
    case pattern::strided: return "strided";
    case pattern::local_strided: return "local+strided";
    case pattern::fixed: return "fixed";
  }
  return "unknown";
}

// Element-level rule (query i, key j). Sparse Transformer, stride l, distance |i - j|:
//   local: |i - j| < l;  strided: |i - j| mod l == 0;  local_strided: either;
//   fixed: same l-block (floor(i/l) == floor(j/l)) or j is one of the last `summary`
//   positions of its l-block (the "summary" columns every query reads).
// causal (the default) also drops every key j > i; bidirectional keeps both sides of the
// diagonal, so each rule is symmetric in i and j except fixed's summary columns.
struct pattern_spec {
  pattern kind = pattern::dense;
  std::size_t stride = 128;
  std::size_t summary = 1;
  bool causal = true;

  HCOMM_HOST_DEVICE bool keep(std::size_t i, std::size_t j) const {
    if (causal && j > i) return false;
    const std::size_t dist = i >= j ? i - j : j - i;
    switch (kind) {
      case pattern::dense: return true;
      case pattern::local: return dist < stride;
      case pattern::strided: return dist % stride == 0;
      case pattern::local_strided: return dist < stride || dist % stride == 0;
      case pattern::fixed: return i / stride == j / stride || j % stride >= stride - summary;
    }
    return false;
  }
};

// A block mask (over the lower triangle when causal, over all blocks when not) plus how to
// filter inside kept blocks. Row lists (key blocks per query block) drive the forward and
// dQ; column lists (query blocks per key block) drive dK/dV, so no two threads write the
// same output row.
class layout {
 public:
  layout() = default;

  // Every block the element pattern touches; the exact pattern applies inside.
  static layout cover(const pattern_spec& p, std::size_t T, std::size_t B) {
    layout L(T, B, p, /*exact*/ p.kind != pattern::dense);
    for (std::size_t qb = 0; qb < L.nb_; ++qb)
      for (std::size_t kb = 0; kb < L.kb_end(qb); ++kb) L.keep_[qb * L.nb_ + kb] = L.block_touched(p, qb, kb);
    L.finish();
    return L;
  }

  // The pattern's rule on block indices (stride in blocks = max(1, stride / B)); whole
  // blocks kept, causal inside diagonal blocks (when causal).
  static layout blockwise(const pattern_spec& p, std::size_t T, std::size_t B) {
    layout L(T, B, p, /*exact*/ false);
    pattern_spec q = p;
    q.stride = std::max<std::size_t>(1, p.stride / B);
    q.summary = std::max<std::size_t>(1, (p.summary + B - 1) / B);
    if (q.summary > q.stride) q.summary = q.stride;
    for (std::size_t qb = 0; qb < L.nb_; ++qb)
      for (std::size_t kb = 0; kb < L.kb_end(qb); ++kb) L.keep_[qb * L.nb_ + kb] = q.keep(qb, kb);
    L.finish();
    return L;
  }

  static layout causal(std::size_t T, std::size_t B) { return blockwise(pattern_spec{pattern::dense}, T, B); }
  // Dense attention of an encoder: every query attends to every key.
  static layout bidirectional(std::size_t T, std::size_t B) {
    return blockwise(pattern_spec{pattern::dense, 128, 1, false}, T, B);
  }

  // An explicit causal block mask (row-major nb x nb, upper triangle ignored; diagonal forced on).
  static layout from_blocks(const std::vector<std::uint8_t>& keep, std::size_t T, std::size_t B) {
    layout L(T, B, pattern_spec{pattern::dense}, false);
    HCOMM_EXPECTS(keep.size() == L.nb_ * L.nb_, "msparse: attention block mask must be nb x nb");
    for (std::size_t qb = 0; qb < L.nb_; ++qb)
      for (std::size_t kb = 0; kb <= qb; ++kb) L.keep_[qb * L.nb_ + kb] = keep[qb * L.nb_ + kb];
    L.finish();
    return L;
  }

  std::size_t T() const noexcept { return T_; }
  std::size_t block() const noexcept { return B_; }
  std::size_t blocks_per_side() const noexcept { return nb_; }
  bool exact() const noexcept { return exact_; }
  bool is_causal() const noexcept { return p_.causal; }
  const pattern_spec& spec() const noexcept { return p_; }
  bool block_kept(std::size_t qb, std::size_t kb) const { return kb < kb_end(qb) && keep_[qb * nb_ + kb]; }

  // The element rule the kernels implement: inside a kept block, causal (when causal) and
  // (when exact) the pattern.
  HCOMM_HOST_DEVICE bool keep_in_block(std::size_t i, std::size_t j) const {
    return (!p_.causal || j <= i) && (!exact_ || p_.keep(i, j));
  }
  bool keep(std::size_t i, std::size_t j) const { return block_kept(i / B_, j / B_) && keep_in_block(i, j); }

  // The explicit T x T element mask (row-major) for the dense reference.
  std::vector<std::uint8_t> element_mask() const {
    std::vector<std::uint8_t> m(T_ * T_, 0);
    for (std::size_t i = 0; i < T_; ++i)
      for (std::size_t j = 0; j < j_end(i); ++j) m[i * T_ + j] = keep(i, j) ? 1 : 0;
    return m;
  }

  std::size_t causal_entries() const noexcept { return T_ * (T_ + 1) / 2; }
  // The entries dense attention evaluates: T(T+1)/2 causal, T^2 bidirectional (the
  // denominator of the fractions below).
  std::size_t entries() const noexcept { return p_.causal ? causal_entries() : T_ * T_; }
  // Entries attended to (what the mask keeps). The kernels run over the element lists
  // below, which hold exactly these entries, so this is also their work.
  std::size_t kept_entries() const noexcept { return ent_col_.size(); }
  // Entries (causal ones when causal) inside kept blocks: the work of a kernel that computes
  // whole tiles (a tensor-core GPU kernel), and what the block layout alone guarantees to skip.
  std::size_t computed_entries() const {
    std::size_t n = 0;
    for (std::size_t qb = 0; qb < nb_; ++qb)
      for (std::size_t kb = 0; kb < kb_end(qb); ++kb)
        if (keep_[qb * nb_ + kb])
          for (std::size_t i = qb * B_; i < std::min(T_, (qb + 1) * B_); ++i) {
            const std::size_t j0 = kb * B_, j1 = std::min({T_, (kb + 1) * B_, j_end(i)});
            n += j1 > j0 ? j1 - j0 : 0;
          }
    return n;
  }
  double kept_fraction() const { return double(kept_entries()) / double(entries()); }
  double computed_fraction() const { return double(computed_entries()) / double(entries()); }
  std::size_t kept_blocks() const { return row_idx_.size(); }

  const std::vector<std::uint32_t>& row_ptr() const noexcept { return row_ptr_; }
  const std::vector<std::uint32_t>& row_idx() const noexcept { return row_idx_; }
  const std::vector<std::uint32_t>& col_ptr() const noexcept { return col_ptr_; }
  const std::vector<std::uint32_t>& col_idx() const noexcept { return col_idx_; }

  // Element lists (what the kernels run over): the kept keys of query row i are
  // ent_col()[ent_ptr()[i] .. ent_ptr()[i+1]) in ascending order, entry e = the position in
  // that row-major order; the kept queries of key column j are the t in
  // [key_ptr()[j], key_ptr()[j+1]) with query key_row()[t] and entry key_ent()[t],
  // ascending in the query. 12 bytes per kept entry.
  const std::vector<std::uint32_t>& ent_ptr() const noexcept { return ent_ptr_; }
  const std::vector<std::uint32_t>& ent_col() const noexcept { return ent_col_; }
  const std::vector<std::uint32_t>& key_ptr() const noexcept { return key_ptr_; }
  const std::vector<std::uint32_t>& key_row() const noexcept { return key_row_; }
  const std::vector<std::uint32_t>& key_ent() const noexcept { return key_ent_; }

 private:
  layout(std::size_t T, std::size_t B, const pattern_spec& p, bool exact)
      : T_(T), B_(B), nb_(B ? (T + B - 1) / B : 0), p_(p), exact_(exact) {
    HCOMM_EXPECTS(T > 0 && B > 0, "msparse: attention layout needs T > 0 and block > 0");
    HCOMM_EXPECTS(T <= 65536, "msparse: attention layout T must be <= 65536 (32-bit entry indices)");
    HCOMM_EXPECTS(p.kind == pattern::dense || p.stride > 0, "msparse: attention pattern stride must be > 0");
    HCOMM_EXPECTS(p.kind != pattern::fixed || (p.summary >= 1 && p.summary <= p.stride),
                  "msparse: fixed pattern summary must be in [1, stride]");
    keep_.assign(nb_ * nb_, 0);
  }
  // Key blocks [0, kb_end(qb)) of a query block and keys [0, j_end(i)) of a query that
  // the layout may keep: up to the diagonal when causal, all of them when not.
  HCOMM_HOST_DEVICE std::size_t kb_end(std::size_t qb) const { return p_.causal ? qb + 1 : nb_; }
  HCOMM_HOST_DEVICE std::size_t j_end(std::size_t i) const { return p_.causal ? i + 1 : T_; }
  bool block_touched(const pattern_spec& p, std::size_t qb, std::size_t kb) const {
    for (std::size_t i = qb * B_; i < std::min(T_, (qb + 1) * B_); ++i)
      for (std::size_t j = kb * B_; j < std::min({T_, (kb + 1) * B_, j_end(i)}); ++j)
        if (p.keep(i, j)) return true;
    return false;
  }
  void finish() {
    // Diagonal blocks always: every query attends at least to itself (i == i is kept by
    // every pattern), so softmax rows are never empty.
    for (std::size_t b = 0; b < nb_; ++b) keep_[b * nb_ + b] = 1;
    row_ptr_.assign(nb_ + 1, 0);
    col_ptr_.assign(nb_ + 1, 0);
    row_idx_.clear();
    col_idx_.clear();
    for (std::size_t qb = 0; qb < nb_; ++qb) {
      for (std::size_t kb = 0; kb < kb_end(qb); ++kb)
        if (keep_[qb * nb_ + kb]) row_idx_.push_back(std::uint32_t(kb));
      row_ptr_[qb + 1] = std::uint32_t(row_idx_.size());
    }
    for (std::size_t kb = 0; kb < nb_; ++kb) {
      for (std::size_t qb = p_.causal ? kb : 0; qb < nb_; ++qb)
        if (keep_[qb * nb_ + kb]) col_idx_.push_back(std::uint32_t(qb));
      col_ptr_[kb + 1] = std::uint32_t(col_idx_.size());
    }
    // Element lists: rows through their kept blocks, then the transpose (a counting sort
    // by key, stable in the query).
    ent_ptr_.assign(T_ + 1, 0);
    ent_col_.clear();
    for (std::size_t i = 0; i < T_; ++i) {
      const std::size_t qb = i / B_;
      for (std::uint32_t r = row_ptr_[qb]; r < row_ptr_[qb + 1]; ++r) {
        const std::size_t j0 = std::size_t(row_idx_[r]) * B_, j1 = std::min({T_, j0 + B_, j_end(i)});
        for (std::size_t j = j0; j < j1; ++j)
          if (keep_in_block(i, j)) ent_col_.push_back(std::uint32_t(j));
      }
      ent_ptr_[i + 1] = std::uint32_t(ent_col_.size());
    }
    key_ptr_.assign(T_ + 1, 0);
    for (const auto j : ent_col_) ++key_ptr_[j + 1];
    for (std::size_t j = 0; j < T_; ++j) key_ptr_[j + 1] += key_ptr_[j];
    key_row_.assign(ent_col_.size(), 0);
    key_ent_.assign(ent_col_.size(), 0);
    std::vector<std::uint32_t> fill(key_ptr_.begin(), key_ptr_.end() - 1);
    for (std::size_t i = 0; i < T_; ++i)
      for (std::uint32_t e = ent_ptr_[i]; e < ent_ptr_[i + 1]; ++e) {
        const std::uint32_t t = fill[ent_col_[e]]++;
        key_row_[t] = std::uint32_t(i);
        key_ent_[t] = e;
      }
  }

  std::size_t T_ = 0, B_ = 0, nb_ = 0;
  pattern_spec p_{};
  bool exact_ = false;
  std::vector<std::uint8_t> keep_;
  std::vector<std::uint32_t> row_ptr_, row_idx_, col_ptr_, col_idx_;
  std::vector<std::uint32_t> ent_ptr_, ent_col_, key_ptr_, key_row_, key_ent_;
};

}  // namespace msparse::attention
