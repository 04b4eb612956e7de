// hcomm/transport/device_transport.hpp: the run-time choice of transport for device
// memory: CUDA-aware MPI when the MPI library says it is (transport/mpi_device.hpp), else
// MPI over host staging of frames (transport/mpi_staged.hpp).
//
//   switch (hcomm::transport::default_device_transport()) { ... }
//   hcomm::transport::with_device_transport([&]<class Tr>(Tr) {
//     hcomm::algorithm::basic_context<hcomm::exec::cuda, Tr> cx(comm, {}, "dp", ex);
//     hcomm::algorithm::allreduce(cx, cfg, std::span<float>(d_grads, n));
//   });
//
// The transport is a compile-time policy of the context, so the choice instantiates both
// and runs one. Every rank must choose alike (the same MPI library and environment do).
// HCOMM_DEVICE_TRANSPORT=staged|device overrides the choice (device without support is then
// the context's clear error).
#pragma once
#include <cstdlib>
#include <cstring>
#include <string>

#include "hcomm/core/error.hpp"
#include "hcomm/transport/mpi_device.hpp"
#include "hcomm/transport/mpi_staged.hpp"

namespace hcomm::transport {

enum class device_transport { mpi_staged, mpi_device };

inline const char* to_string(device_transport t) noexcept {
  return t == device_transport::mpi_device ? mpi_device::name : mpi_staged::name;
}

// mpi_device when MPI reports CUDA support (mpi_cuda_aware), else mpi_staged; MPI must be
// initialised.
inline device_transport default_device_transport() {
  if (const char* e = std::getenv("HCOMM_DEVICE_TRANSPORT"); e != nullptr && *e != '\0') {
    if (std::strcmp(e, "staged") == 0) return device_transport::mpi_staged;
    if (std::strcmp(e, "device") == 0) return device_transport::mpi_device;
    fail(errc::invalid_argument,
         std::string("hcomm: HCOMM_DEVICE_TRANSPORT=") + e + " is not a device transport (staged or device)");
  }
  return mpi_cuda_aware() ? device_transport::mpi_device : device_transport::mpi_staged;
}

// Calls f(mpi_device{}) or f(mpi_staged{}) as t (default: the default) says; returns f's result.
template <class F>
decltype(auto) with_device_transport(F&& f, device_transport t = default_device_transport()) {
  if (t == device_transport::mpi_device) return f(mpi_device{});
  return f(mpi_staged{});
}

}  // namespace hcomm::transport
