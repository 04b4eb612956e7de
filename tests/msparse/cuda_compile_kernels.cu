// Compile-only check that the sparse kernels' bodies build as CUDA device code, launched
// through msparse::kernels::launch on hcomm's CUDA executor (one grid-stride thread per
// work item); nothing is run. Build: nvcc -std=c++20 --expt-relaxed-constexpr -arch=sm_80 -c.
#include <cstddef>

#include "hcomm/exec/cuda.hpp"
#include "msparse/attention/block_sparse.hpp"
#include "msparse/kernels/launch.hpp"
#include "msparse/kernels/sddmm.hpp"
#include "msparse/kernels/spmm.hpp"
#include "msparse/kernels/tiles.hpp"
#include "msparse/layer/sparse_linear.hpp"  // layer::detail::bias_grad

static_assert(hcomm::exec::cuda::is_device, "msparse: the CUDA executor must be a device executor");

// Instantiates every kernel for the device; called by nobody.
void msparse_cuda_compile_kernels(cudaStream_t s) {
  using namespace msparse::kernels;
  hcomm::exec::cuda ex{s};
  to_tiles<64> t{nullptr, nullptr, 0, 0, 0};
  launch(ex, t.items(), t);
  spmm_tiles<64> f{nullptr, 1, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0, false};
  launch(ex, f.items(), f);
  sddmm_tiles g{nullptr, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, nullptr, 0, false};
  launch(ex, g.items(), g);
  spmm_blocked<64> fb{nullptr, 1, 1, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 0, false};
  launch(ex, fb.items(), fb);
  sddmm_blocked<64> gb{nullptr, 1, 1, nullptr, nullptr, nullptr, nullptr, 0, 0, 0};
  launch(ex, gb.items(), gb);
  msparse::layer::detail::bias_grad b{nullptr, nullptr, 0, 0, false};
  launch(ex, 1, b);
  // Block-sparse attention (Hybrid Sparse Attention): the compiled head sizes and the
  // run-time one (D = 0), forward and both backward passes, and the row packing.
  namespace att = msparse::attention;
  const att::detail::geometry geo{128, 64, 16, 64, 64, 64, 64, 0.125f};
  launch(ex, 1, att::forward_kernel<64>{geo, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr});
  launch(ex, 1, att::forward_kernel<0>{geo, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr});
  launch(ex, 1,
         att::backward_rows_kernel<64>{geo, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                       nullptr, nullptr, nullptr});
  launch(ex, 1,
         att::backward_rows_kernel<0>{geo, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                      nullptr, nullptr, nullptr});
  launch(ex, 1,
         att::backward_cols_kernel<64>{geo, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                       nullptr});
  launch(ex, 1,
         att::backward_cols_kernel<0>{geo, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                      nullptr});
  launch(ex, 1, att::pack_kernel{{nullptr, nullptr, nullptr, nullptr}, {64, 64, 64, 64},
                                 {nullptr, nullptr, nullptr, nullptr}, 4, 64});
}
