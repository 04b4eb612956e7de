// hcomm/exec/memory_space.hpp: what a grow-only buffer needs of the memory it lives in:
// allocate, deallocate and copy. Every executor is one (its own memory); so is an
// executor's host staging (exec/host_staging.hpp).
//
//   static_assert(hcomm::exec::memory_space<hcomm::exec::host>);
//   hcomm::algorithm::exec_buffer<hcomm::exec::host_staging_memory<E>> staging{{ex}};
#pragma once
#include <concepts>
#include <cstddef>

namespace hcomm::exec {

template <class M>
concept memory_space = std::copy_constructible<M> && requires(const M& m, void* p, const void* cp, std::size_t n) {
  { m.allocate(n) } -> std::same_as<void*>;
  m.deallocate(p);
  m.copy(p, cp, n);
};

}  // namespace hcomm::exec
