// examples/gpt/exact_exchange.hpp: the TP exchanges that must be exact whatever the
// communication scheme, through any of the model's TP communicators.
//
//   gpt::exact_allreduce(tp, std::span<float>(sums));
//   gpt::exact_allgather(tp, std::span<const float>(mine), std::span<float>(all));
//
// The cross-entropy's statistics (row maxima, sums of exponentials, target logits) are
// exchanged exactly whatever the scheme: a lossy sum of exponentials can come out 0 or
// negative, and the loss -inf. Tp's allreduce_exact / allgather_exact where it has them
// (hcomm's communicators, host or device), else its own collectives (exact already: solo_tp,
// plain MPI). The buffers are the model's memory (comm_buffer.hpp).
#pragma once
#include <span>

#include "comm_buffer.hpp"

namespace gpt {

template <class Tp>
void exact_allreduce(Tp& tp, std::span<float> x) {
  const auto b = comm_buffer<Tp>(x);
  if constexpr (requires { tp.allreduce_exact(b); }) tp.allreduce_exact(b);
  else tp.allreduce(b);
}
template <class Tp>
void exact_allgather(Tp& tp, std::span<const float> in, std::span<float> out) {
  const auto i = comm_buffer<Tp>(in);
  const auto o = comm_buffer<Tp>(out);
  if constexpr (requires { tp.allgather_exact(i, o); }) tp.allgather_exact(i, o);
  else tp.allgather(i, o);
}

}  // namespace gpt
