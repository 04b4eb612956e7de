// examples/gpt/train_cuda.cu: train_gpt's --device cuda (train_cuda.hpp). The model and AdamW
// run in device memory through portable_ops<cuda, cublas_gemm> (ops_portable.hpp,
// gemm_cublas.hpp) on one stream of the local rank's GPU; the trainer is trainer.hpp's.
#include "train_cuda.hpp"

#include <cuda_runtime.h>
#include <mpi.h>

#include <string>

#include "gemm_cublas.hpp"
#include "hcomm/comm/bundle.hpp"
#include "hcomm/exec/cuda.hpp"
#include "ops_portable.hpp"
#include "trainer.hpp"

namespace gpt {

std::string cuda_unavailable() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) return std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
  if (devices == 0) return "no CUDA device";
  return "";
}

run_result train_on_cuda(const config& c, const run_options& o, const hcomm::grid& g,
                         const hcomm::algorithm::options& opt) {
  if (const std::string no = cuda_unavailable(); !no.empty()) hcomm::fail(hcomm::errc::unsupported, "--device cuda: " + no);
  int devices = 0;
  HCOMM_CUDA_CHECK(cudaGetDeviceCount(&devices));
  // The rank's GPU: its index among the ranks of its node, round robin over the node's GPUs.
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  HCOMM_CUDA_CHECK(cudaSetDevice(local % devices));
  cudaStream_t stream = nullptr;
  HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  run_result r;
  {
    using ops = portable_ops<hcomm::exec::cuda, cublas_gemm>;
    hcomm::bundle<hcomm::scheme::none> comm(g, opt);
    trainer<hcomm::bundle<hcomm::scheme::none>, ops> t(c, o, g, comm, ops{hcomm::exec::cuda{stream}, cublas_gemm{stream}});
    r = t.run();
  }
  HCOMM_CUDA_CHECK(cudaStreamDestroy(stream));
  return r;
}

}  // namespace gpt
