// examples/gpt/train_cuda.cu: train_gpt's --device cuda (train_cuda.hpp). The model and AdamW
// run in device memory through portable_ops<cuda, cublas_gemm> (ops_portable.hpp,
// gemm_cublas.hpp) on one stream of the rank's GPU; the DP, PP and TP collectives run on the
// same stream through hcomm::device_bundle over staged MPI (frames through pinned host
// memory: any MPI, several ranks per GPU); the trainer is trainer.hpp's.
#include "train_cuda.hpp"

#include <cuda_runtime.h>
#include <mpi.h>

#include <string>

#include "gemm_cublas.hpp"
#include "hcomm/comm/device_bundle.hpp"
#include "hcomm/exec/cuda.hpp"
#include "hcomm/transport/mpi_staged.hpp"
#include "ops_portable.hpp"
#include "trainer.hpp"

namespace gpt {

std::string cuda_unavailable(const node_place& node, bool share) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) return std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
  return gpu_sharing_refusal(node, devices, share);
}

run_result train_on_cuda(const config& c, const run_options& o, const hcomm::grid& g,
                         const hcomm::algorithm::options& opt, const node_place& node) {
  if (const std::string no = cuda_unavailable(node, o.share_gpu); !no.empty())
    hcomm::fail(hcomm::errc::unsupported, "--device cuda: " + no);
  int devices = 0;
  HCOMM_CUDA_CHECK(cudaGetDeviceCount(&devices));
  HCOMM_CUDA_CHECK(cudaSetDevice(gpu_of(node, devices)));
  cudaStream_t stream = nullptr;
  HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  run_result r;
  {
    using ops = portable_ops<hcomm::exec::cuda, cublas_gemm>;
    using bundle = hcomm::device_bundle<hcomm::scheme::none, hcomm::exec::cuda, hcomm::transport::mpi_staged>;
    bundle comm(g, opt, hcomm::exec::cuda{stream});
    trainer<bundle, ops> t(c, o, g, comm, ops{hcomm::exec::cuda{stream}, cublas_gemm{stream}});
    r = t.run();
  }
  HCOMM_CUDA_CHECK(cudaStreamDestroy(stream));
  return r;
}

}  // namespace gpt
