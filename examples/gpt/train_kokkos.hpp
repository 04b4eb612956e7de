// examples/gpt/train_kokkos.hpp: train_gpt's --device kokkos, in its own translation unit
// (train_kokkos.cpp, linked with Kokkos) when hcomm's Kokkos executor is built
// (HCOMM_GPT_KOKKOS); elsewhere the option says it is not in this build.
//
//   gpt::run_result r = gpt::train_on_kokkos(cfg, opts, grid, compress_options);
#pragma once
#include <string>

#include "config.hpp"
#include "hcomm/comm/axis_options.hpp"
#include "hcomm/topology/grid.hpp"
#include "options.hpp"

namespace gpt {

struct run_result;
// The trainer over portable_ops<hcomm::exec::kokkos<>, host_gemm> on Kokkos's default
// execution space (Serial in Debian's build): the portable kernels through Kokkos, the GEMMs
// by the host BLAS; Kokkos is initialised and finalised around the run. `scheme` is none or
// zhybrid:16,8 (check_cli refuses the others).
run_result train_on_kokkos(const config& c, const run_options& o, const hcomm::grid& g,
                           const hcomm::axis_options& opt);

}  // namespace gpt
