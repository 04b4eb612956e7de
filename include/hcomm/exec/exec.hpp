// hcomm/exec/exec.hpp: every executor this build and this compiler can offer.
//
//   #include "hcomm/exec/exec.hpp"
//   hcomm::exec::host ex;                      // always
//   hcomm::exec::host_check chk;               // always (tests: device paths with race checks)
//   hcomm::exec::host_stream q;                // always: host work on a stream thread
//   hcomm::exec::host_async aex{&q};
//   #if HCOMM_EXEC_HAS_KOKKOS
//   hcomm::exec::kokkos<> kex;                 // Kokkos enabled and its headers reachable
//   #endif
//   #if HCOMM_EXEC_HAS_CUDA
//   hcomm::exec::cuda cex{stream};             // CUDA enabled and this file compiled by nvcc
//   #endif
//
// The generated config says what the build was configured with; a translation unit gets
// the Kokkos executor only if it can also see Kokkos' headers (links Kokkos::kokkos), and
// the CUDA executor only under nvcc, so including this umbrella never breaks a plain g++
// file of a CUDA- or Kokkos-enabled build.
#pragma once
#include "hcomm/core/config.hpp"
#include "hcomm/exec/executor.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/exec/host_check.hpp"
#include "hcomm/exec/host_stream.hpp"
#include "hcomm/exec/team.hpp"

#if HCOMM_HAS_KOKKOS && __has_include(<Kokkos_Core.hpp>)
#include "hcomm/exec/kokkos.hpp"
#define HCOMM_EXEC_HAS_KOKKOS 1
#else
#define HCOMM_EXEC_HAS_KOKKOS 0
#endif

#if HCOMM_HAS_CUDA && defined(__CUDACC__)
#include "hcomm/exec/cuda.hpp"
#define HCOMM_EXEC_HAS_CUDA 1
#else
#define HCOMM_EXEC_HAS_CUDA 0
#endif
