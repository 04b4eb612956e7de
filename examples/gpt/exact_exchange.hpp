// examples/gpt/exact_exchange.hpp: the TP exchanges that must be exact whatever the
// communication scheme, through any of the model's TP communicators.
//
//   gpt::exact_allreduce(tp, std::span<float>(sums));
//   gpt::exact_allgather(tp, std::span<const float>(mine), std::span<float>(all));
//
// The cross-entropy's statistics (row maxima, sums of exponentials, target logits) are
// exchanged exactly whatever the scheme: a lossy sum of exponentials can come out 0 or
// negative, and the loss -inf. Tp's allreduce_exact / allgather_exact where it has them
// (hcomm's communicators), else its own collectives (exact already: solo_tp, plain MPI).
#pragma once
#include <span>

namespace gpt {

template <class Tp>
void exact_allreduce(Tp& tp, std::span<float> x) {
  if constexpr (requires { tp.allreduce_exact(x); }) tp.allreduce_exact(x);
  else tp.allreduce(x);
}
template <class Tp>
void exact_allgather(Tp& tp, std::span<const float> in, std::span<float> out) {
  if constexpr (requires { tp.allgather_exact(in, out); }) tp.allgather_exact(in, out);
  else tp.allgather(in, out);
}

}  // namespace gpt
