// examples/gpt/comm_buffer.hpp: the model's memory as the buffer a communicator takes:
// std::span for hcomm::communicator, plain MPI (plain_comm.hpp) and solo_tp, device_span
// for hcomm::device_communicator (the communicators of hcomm::device_bundle).
//
//   comm.tp().allreduce(gpt::comm_buffer<decltype(comm.tp())>(x, n));   // x: the model's memory
//
// The trainer and the model pass every buffer through it, so one source serves the host
// bundles and the device ones; device_span is explicit by design (a host container never
// becomes one by accident), and this is the one place that makes it from the model's arrays.
#pragma once
#include <cstddef>
#include <span>
#include <type_traits>

#include "hcomm/comm/device_span.hpp"

namespace gpt {

// Communicators on an executor's memory (hcomm::device_communicator) name their executor.
template <class Comm>
inline constexpr bool takes_device_span = requires { typename std::remove_cvref_t<Comm>::executor_type; };

template <class Comm, class T>
auto comm_buffer(T* p, std::size_t n) {
  if constexpr (takes_device_span<Comm>) return hcomm::device_span<T>(p, n);
  else return std::span<T>(p, n);
}
template <class Comm, class T>
auto comm_buffer(std::span<T> s) {
  return comm_buffer<Comm>(s.data(), s.size());
}

}  // namespace gpt
