// msparse/attention/hybrid.hpp: Hybrid Sparse Attention: a sparse pattern during the
// schedule's HSA window (the early phases), dense attention afterwards (causal, or
// bidirectional when the pattern is: pattern_spec::causal = false, an encoder's).
//
//   msparse::attention::hybrid h({msparse::attention::pattern::local_strided, 128}, T, /*block*/64);
//   const auto& lay = h.at(sched, step);          // the layout to run this step
//   msparse::attention::forward(lay, q, k, v, d, o, lse);
//   double dens = h.work_fraction(sched, step);   // attention density for FLOP accounting
#pragma once
#include <cstdint>

#include "msparse/attention/pattern.hpp"
#include "msparse/schedule.hpp"

namespace msparse::attention {

class hybrid {
 public:
  hybrid() = default;
  // exact = true: the paper's element pattern with empty blocks skipped (layout::cover);
  // false: the pattern's rule applied to whole blocks (layout::blockwise).
  hybrid(const pattern_spec& p, std::size_t T, std::size_t block, bool exact = true)
      : sparse_(exact ? layout::cover(p, T, block) : layout::blockwise(p, T, block)),
        dense_(p.causal ? layout::causal(T, block) : layout::bidirectional(T, block)) {}

  const layout& at(const schedule& s, std::int64_t step) const { return s.sparse_attention(step) ? sparse_ : dense_; }
  const layout& sparse() const noexcept { return sparse_; }
  const layout& dense() const noexcept { return dense_; }
  // Entries the kernels evaluate this step relative to dense attention of the same kind
  // (the attention density for msparse/flops.hpp).
  double work_fraction(const schedule& s, std::int64_t step) const { return at(s, step).kept_fraction(); }

 private:
  layout sparse_, dense_;
};

}  // namespace msparse::attention
