// hcomm/exec/host_staging.hpp: executors that can lend host memory for staging (page-locked
// where the device has such a thing), and that memory as a memory space of its own.
//
//   static_assert(hcomm::exec::host_staging<hcomm::exec::cuda>);
//   hcomm::exec::host_staging_memory<hcomm::exec::cuda> m{ex};
//   void* h = m.allocate(bytes);          // cudaHostAlloc: host memory the copy engines reach
//   m.copy(h, d_frame, bytes);            // on ex's stream (ex.copy), then ex.synchronize()
//
// The hooks: allocate_host_pinned(bytes) gives host memory that the executor's copy reaches
// asynchronously on its stream (CUDA: page-locked, cudaHostAlloc); deallocate_host_pinned(p)
// frees it once work already queued on the stream no longer uses it. Host executors hand out
// ordinary host memory (the test executor host_check poisons it, as its allocate does). A
// transport that stages frames through host memory (transport/mpi_staged.hpp) keeps the
// memory MPI touches here; copies between it and the executor's memory are the executor's
// copy(), ordered on its stream.
#pragma once
#include <concepts>
#include <cstddef>

#include "hcomm/exec/executor.hpp"

namespace hcomm::exec {

template <class E>
concept host_staging = executor<E> && requires(const E& e, void* p, std::size_t n) {
  { e.allocate_host_pinned(n) } -> std::same_as<void*>;
  e.deallocate_host_pinned(p);
};

// An executor's host staging as a memory space (exec/memory_space.hpp): what exec_buffer
// allocates from; copy is the executor's (stream-ordered on device executors).
template <host_staging Exec>
struct host_staging_memory {
  Exec ex{};
  void* allocate(std::size_t bytes) const { return ex.allocate_host_pinned(bytes); }
  void deallocate(void* p) const noexcept { ex.deallocate_host_pinned(p); }
  void copy(void* dst, const void* src, std::size_t bytes) const { ex.copy(dst, src, bytes); }
};

}  // namespace hcomm::exec
