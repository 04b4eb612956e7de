// hcomm/transport/mpi_device.hpp: CUDA-aware MPI: the collectives hand device pointers to
// MPI as they are (frames, slots and uncompressed values stay in device memory; nothing is
// staged by hcomm).
//
//   if (hcomm::transport::mpi_cuda_aware())
//     hcomm::algorithm::basic_context<hcomm::exec::cuda, hcomm::transport::mpi_device> cx(comm, {}, "dp", ex);
//
// Whether the MPI library can read device memory is known only at run time: Open MPI says
// so through MPIX_Query_cuda_support() (<mpi-ext.h>, where the header defines
// MPIX_CUDA_AWARE_SUPPORT; Debian's Open MPI is built without CUDA and answers 0). Other
// MPIs (MVAPICH2, Cray MPICH) have no such query: HCOMM_MPI_CUDA_AWARE=1 in the environment
// says yes, =0 says no, whatever the library answers. A context on this transport refuses
// to start (errc::unsupported, on every rank alike) when the answer is no, instead of
// letting MPI read a device pointer as host memory. transport/device_transport.hpp picks
// this transport or mpi_staged at run time.
//
// Every call is mpi_host's (MPI over whatever memory the pointers name); the executor's
// queued work is finished before MPI reads it, as for any device executor.
#pragma once
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <cstdlib>
#include <cstring>
#include <string>

#include "hcomm/core/error.hpp"
#include "hcomm/transport/mpi_host.hpp"

namespace hcomm::transport {

// What the MPI library says about device memory (MPI must be initialised): 1 yes, 0 no,
// -1 it has no way to say. HCOMM_MPI_CUDA_AWARE (0 or 1) is not consulted here.
inline int mpi_library_cuda_support() noexcept {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1 ? 1 : 0;
#else
  return -1;
#endif
}

// Whether MPI may be given device pointers: HCOMM_MPI_CUDA_AWARE=0/1 when set, else the
// library's answer (no answer counts as no).
inline bool mpi_cuda_aware() noexcept {
  if (const char* e = std::getenv("HCOMM_MPI_CUDA_AWARE"); e != nullptr && *e != '\0')
    return std::strcmp(e, "0") != 0;
  return mpi_library_cuda_support() == 1;
}

struct mpi_device : mpi_host {
  static constexpr const char* name = "mpi_device";
  template <class Exec>
  static constexpr bool reaches = true;
  template <class Exec>
  static constexpr bool stages = false;

  // Called by basic_context's constructor: a clear error rather than MPI reading a device
  // pointer as host memory.
  static void check_available() {
    if (mpi_cuda_aware()) return;
    const int lib = mpi_library_cuda_support();
    hcomm::fail(errc::unsupported,
         std::string("transport::mpi_device needs a CUDA-aware MPI, and this one ") +
             (lib == 0 ? "reports no CUDA support (MPIX_Query_cuda_support() == 0)"
                       : "has no CUDA-support query (set HCOMM_MPI_CUDA_AWARE=1 if it is CUDA-aware)") +
             "; use transport::mpi_staged (or transport::default_device_transport() to choose at run time)");
  }
};

}  // namespace hcomm::transport
