// examples/gpt/train_cuda.cu: train_gpt's --device cuda (train_cuda.hpp). The model and AdamW
// run in device memory through portable_ops<cuda, cublas_gemm, cuda_kernel_clock>
// (ops_portable.hpp, gemm_cublas.hpp with cuBLASLt's epilogues unless --gemm-epilogues off,
// kernel_clock_cuda.hpp) on one stream of the rank's GPU;
// the DP, PP and TP collectives run on the same stream (DP on a second one with --overlap on)
// through hcomm::device_bundle over staged MPI (frames through pinned host memory: any MPI,
// several ranks per GPU), ZFP coding on the GPU with zhybrid:16,8 and zhybrid:16,6+ef (its
// residual in device memory); the trainer is trainer.hpp's.
#include "train_cuda.hpp"

#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <string>

#include "cublas_library.hpp"
#include "gemm_cublas.hpp"
#include "hcomm/comm/device_bundle.hpp"
#include "hcomm/exec/cuda.hpp"
#include "hcomm/transport/mpi_staged.hpp"
#include "kernel_clock_cuda.hpp"
#include "mfu.hpp"
#include "ops_portable.hpp"
#include "trainer.hpp"

namespace gpt {

std::string cuda_unavailable(const node_place& node, bool share) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) return std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
  if (std::string no = gpu_sharing_refusal(node, devices, share); !no.empty()) return no;
  return cublas_library::unavailable();  // loaded here, the first time: only --device cuda needs it
}

run_result train_on_cuda(const config& c, const run_options& o, const hcomm::grid& g,
                         const hcomm::axis_options& opt, const node_place& node) {
  if (const std::string no = cuda_unavailable(node, o.share_gpu); !no.empty())
    hcomm::fail(hcomm::errc::unsupported, "--device cuda: " + no);
  int devices = 0;
  HCOMM_CUDA_CHECK(cudaGetDeviceCount(&devices));
  const int gpu = gpu_of(node, devices);
  HCOMM_CUDA_CHECK(cudaSetDevice(gpu));
  // MFU against the device's peak for what the GEMMs run: fp32, cuBLAS sgemm without TF32 (the
  // fp32 CUDA-core peak); bf16, bf16 operands on tensor cores (gemm_cublas.hpp: the dense bf16
  // peak); --peak-tflops wins.
  run_options ro = o;
  cudaDeviceProp prop{};
  HCOMM_CUDA_CHECK(cudaGetDeviceProperties(&prop, gpu));
  if (ro.peak_tflops <= 0) ro.peak_tflops = peak_tflops(prop.name, c.bf16 ? peak_precision::bf16 : peak_precision::fp32);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (world_rank == 0 && !o.quiet)
    std::printf("device cuda: %s (GPU %d of %d on rank 0's node, %d rank(s) there), MFU peak %.1f TFLOP/s%s\n", prop.name,
                gpu, devices, node.local_size, ro.peak_tflops,
                o.peak_tflops > 0       ? " (--peak-tflops)"
                : ro.peak_tflops <= 0 ? " (unknown device)"
                : c.bf16              ? " (dense bf16: tensor-core GEMMs)"
                                      : " (fp32: sgemm, no TF32)");
  // The compute stream (the model, AdamW, PP and TP) and, with --overlap on, a communication
  // stream for the DP buckets (trainer.hpp orders the two with events).
  cudaStream_t stream = nullptr, comm_stream = nullptr;
  HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (o.overlap) HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking));
  run_result r;
  auto on = [&]<class Scheme>() {
    using ops = portable_ops<hcomm::exec::cuda, cublas_gemm, cuda_kernel_clock>;
    using bundle = hcomm::device_bundle<Scheme, hcomm::exec::cuda, hcomm::transport::mpi_staged>;
    bundle comm(g, opt, hcomm::exec::cuda{stream}, hcomm::exec::cuda{comm_stream ? comm_stream : stream});
    const cublas_gemm gemm{stream, cublas_options{.epilogues = o.gemm_epilogues}};
    run_result res = trainer<bundle, ops>::make(c, ro, g, comm, ops{hcomm::exec::cuda{stream}, gemm})->run();
    if (world_rank == 0 && o.gemm_epilogues) {
      const auto [fused, unfused] = gemm.fusion_counts();
      std::printf("cuBLASLt epilogues (rank 0): %zu GEMMs fused, %zu ran unfused (a shape or alignment cuBLASLt "
                  "has no algorithm for)\n",
                  fused, unfused);
    }
    return res;
  };
  if (o.scheme == "none") r = on.template operator()<hcomm::scheme::none>();
  else if (o.scheme == "zhybrid:16,8") r = on.template operator()<hcomm::scheme::zhybrid<16, 8>>();
  else r = on.template operator()<hcomm::scheme::with_error_feedback<hcomm::scheme::zhybrid<16, 6>>>();
  if (comm_stream) HCOMM_CUDA_CHECK(cudaStreamDestroy(comm_stream));
  HCOMM_CUDA_CHECK(cudaStreamDestroy(stream));
  return r;
}

}  // namespace gpt
