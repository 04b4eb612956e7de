// hcomm/hcomm.hpp: everything public in hcomm, in one include.
//
//   #include <hcomm/hcomm.hpp>
//   hcomm::grid g(dp, pp, tp);
//   hcomm::bundle<hcomm::scheme::zhybrid<16, 8>> b(g);
//   b.dp().allreduce(std::span<float>(grads));
//
// Layers from the bottom: core, exec, policy, codec, transport, topology, algorithm, comm
// (the facade). The codec kernels come through their codecs; the CUDA and Kokkos executors
// through exec/exec.hpp when the build and the compiler can use them. The MPI layers
// (transport, topology, algorithm, comm) need HCOMM_HAS_MPI.
#pragma once
#include "hcomm/core/config.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/core/checksum.hpp"
#include "hcomm/exec/exec.hpp"
#include "hcomm/policy/axis.hpp"
#include "hcomm/policy/compressor.hpp"
#include "hcomm/codec/id.hpp"
#include "hcomm/codec/traits.hpp"
#include "hcomm/codec/list.hpp"
#include "hcomm/codec/none.hpp"
#include "hcomm/codec/mpc.hpp"
#include "hcomm/codec/zfp.hpp"
#include "hcomm/codec/registry.hpp"
#include "hcomm/codec/frame.hpp"
#include "hcomm/codec/config.hpp"
#include "hcomm/codec/engine.hpp"
#include "hcomm/codec/codec.hpp"
#if HCOMM_HAS_MPI
#include "hcomm/transport/mpi.hpp"
#include "hcomm/transport/threads.hpp"
#include "hcomm/transport/mpi_host.hpp"
#include "hcomm/transport/mpi_staged.hpp"
#include "hcomm/transport/mpi_device.hpp"
#include "hcomm/transport/device_transport.hpp"
#include "hcomm/topology/grid.hpp"
#include "hcomm/algorithm/options.hpp"
#include "hcomm/algorithm/stats.hpp"
#include "hcomm/algorithm/chunks.hpp"
#include "hcomm/algorithm/buffer.hpp"
#include "hcomm/algorithm/workspace.hpp"
#include "hcomm/algorithm/residual.hpp"
#include "hcomm/algorithm/validation.hpp"
#include "hcomm/algorithm/vector_ops.hpp"
#include "hcomm/algorithm/context.hpp"
#include "hcomm/algorithm/p2p.hpp"
#include "hcomm/algorithm/ring.hpp"
#include "hcomm/algorithm/broadcast.hpp"
#include "hcomm/comm/communicator.hpp"
#include "hcomm/comm/device_span.hpp"
#include "hcomm/comm/device_communicator.hpp"
#include "hcomm/comm/scheme.hpp"
#include "hcomm/comm/bundle.hpp"
#include "hcomm/comm/device_bundle.hpp"
#include "hcomm/comm/registry.hpp"
#endif
