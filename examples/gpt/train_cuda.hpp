// examples/gpt/train_cuda.hpp: train_gpt's --device cuda, compiled by nvcc in its own
// translation unit (train_cuda.cu) when CUDA is built (HCOMM_GPT_CUDA); elsewhere the option
// says it is not in this build.
//
//   gpt::run_result r = gpt::train_on_cuda(cfg, opts, grid, compress_options);
#pragma once
#include <string>

#include "config.hpp"
#include "hcomm/algorithm/options.hpp"  // hcomm::algorithm::options (hcomm::comm_options)
#include "hcomm/topology/grid.hpp"
#include "options.hpp"

namespace gpt {

struct run_result;
// Why --device cuda cannot run on this rank ("" when a CUDA device is usable).
std::string cuda_unavailable();
// The trainer over portable_ops<hcomm::exec::cuda, cublas_gemm> on this rank's GPU (the local
// rank's, round robin), --scheme none; throws hcomm::error (unsupported) without a usable GPU.
run_result train_on_cuda(const config& c, const run_options& o, const hcomm::grid& g,
                         const hcomm::algorithm::options& opt);

}  // namespace gpt
