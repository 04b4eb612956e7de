// hcomm/hcomm.hpp: everything public in hcomm, in one include.
//
//   #include <hcomm/hcomm.hpp>
//   hcomm::grid g(dp, pp, tp);
//   hcomm::bundle<hcomm::scheme::zhybrid<16, 8>> b(g);
//   b.dp().allreduce(std::span<float>(grads));
//
// The codec kernels (codec/*_kernels.hpp) come through their codecs; the CUDA and Kokkos
// executors through exec/exec.hpp when the build and the compiler can use them. The MPI
// layers (topology, algorithm, comm) need HCOMM_HAS_MPI.
#pragma once
#include "hcomm/core/config.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/core/macros.hpp"
#include "hcomm/core/checksum.hpp"
#include "hcomm/exec/exec.hpp"
#include "hcomm/policy/axis.hpp"
#include "hcomm/policy/compressor.hpp"
#include "hcomm/codec/frame.hpp"
#include "hcomm/codec/none.hpp"
#include "hcomm/codec/mpc.hpp"
#include "hcomm/codec/zfp.hpp"
#include "hcomm/codec/registry.hpp"
#include "hcomm/codec/codec.hpp"
#if HCOMM_HAS_MPI
#include "hcomm/comm/mpi.hpp"
#include "hcomm/topology/grid.hpp"
#include "hcomm/algorithm/context.hpp"
#include "hcomm/algorithm/p2p.hpp"
#include "hcomm/algorithm/ring.hpp"
#include "hcomm/algorithm/broadcast.hpp"
#include "hcomm/comm/communicator.hpp"
#include "hcomm/comm/scheme.hpp"
#include "hcomm/comm/bundle.hpp"
#include "hcomm/comm/registry.hpp"
#endif
