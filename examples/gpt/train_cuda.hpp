// examples/gpt/train_cuda.hpp: train_gpt's --device cuda, compiled by nvcc in its own
// translation unit (train_cuda.cu) when CUDA is built (HCOMM_GPT_CUDA); elsewhere the option
// says it is not in this build.
//
//   const gpt::node_place node = gpt::node_place_of(MPI_COMM_WORLD);   // gpu_placement.hpp; collective
//   if (auto no = gpt::cuda_unavailable(node, share); !no.empty()) ...  // agreed, exit 2
//   gpt::run_result r = gpt::train_on_cuda(cfg, opts, grid, compress_options, node);
#pragma once
#include <string>

#include "config.hpp"
#include "gpu_placement.hpp"
#include "hcomm/comm/axis_options.hpp"
#include "hcomm/topology/grid.hpp"
#include "options.hpp"

namespace gpt {

struct run_result;

// Why --device cuda cannot run on this rank ("" when it can): no usable CUDA device, more
// ranks on the node than GPUs without `share` (--share-gpu), or no cuBLAS to load
// (cublas_library.hpp: train_gpt opens it at run time, for this device only).
std::string cuda_unavailable(const node_place& node, bool share);
// The trainer over portable_ops<hcomm::exec::cuda, cublas_gemm> on this rank's GPU, its
// collectives through hcomm::device_bundle over staged MPI, --scheme none, zhybrid:16,8 or zhybrid:16,6+ef
// (check_cli refuses the others); throws
// hcomm::error (unsupported) where cuda_unavailable() says why.
run_result train_on_cuda(const config& c, const run_options& o, const hcomm::grid& g,
                         const hcomm::axis_options& opt, const node_place& node);

}  // namespace gpt
