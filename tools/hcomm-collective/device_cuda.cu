// hcomm-collective's --device cuda: device buffers, each collective through hcomm::cuda_staging
// (the device path of the library: device -> pinned host -> host collective -> device), timed
// with CUDA events on the staging stream. Declarations and contract: device.hpp.
#include <cuda_runtime.h>

#include <string>

#include "device.hpp"
#include "hcomm/comm/cuda_staging.hpp"
#include "hcomm/exec/cuda.hpp"

namespace collective_tool {

std::string cuda_unavailable() {
  std::string why;
  if (hcomm::exec::cuda_device_count(&why) > 0) return {};
  return "no CUDA device: " + why;
}

void cuda_select_device(int local_rank) {
  int count = 0;
  HCOMM_CUDA_CHECK(cudaGetDeviceCount(&count));
  HCOMM_CUDA_CHECK(cudaSetDevice(local_rank % count));
}

namespace {

class cuda_buffers final : public device_buffers {
 public:
  cuda_buffers(const float* input, std::size_t in_n, std::size_t out_n) : in_n_(in_n), out_n_(out_n) {
    HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    stage_ = std::make_unique<hcomm::cuda_staging>(stream_);
    HCOMM_CUDA_CHECK(cudaEventCreate(&start_));
    HCOMM_CUDA_CHECK(cudaEventCreate(&stop_));
    HCOMM_CUDA_CHECK(cudaMalloc(&kept_, bytes(in_n)));
    HCOMM_CUDA_CHECK(cudaMalloc(&in_, bytes(in_n)));
    HCOMM_CUDA_CHECK(cudaMalloc(&out_, bytes(out_n)));
    HCOMM_CUDA_CHECK(cudaMemcpy(kept_, input, in_n * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~cuda_buffers() override {
    stage_.reset();  // waits for its last copy
    cudaFree(out_);
    cudaFree(in_);
    cudaFree(kept_);
    if (stop_) cudaEventDestroy(stop_);
    if (start_) cudaEventDestroy(start_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  void reset() override {
    HCOMM_CUDA_CHECK(cudaMemcpyAsync(in_, kept_, in_n_ * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
    HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  double run(host_ops& comm, op_kind op, std::size_t n) override {
    HCOMM_CUDA_CHECK(cudaEventRecord(start_, stream_));
    switch (op) {
      case op_kind::allreduce: stage_->allreduce(comm, in_, n); break;
      case op_kind::allgather: stage_->allgather(comm, in_, n, out_); break;
      case op_kind::reduce_scatter: stage_->reduce_scatter(comm, in_, out_n_, out_); break;
      case op_kind::broadcast: stage_->broadcast(comm, in_, n, 0); break;
      case op_kind::p2p: {
        const int peer = comm.rank() ^ 1;
        if (peer < comm.size()) {
          if (comm.rank() % 2 == 0) stage_->send(comm, in_, n, peer, 5);
          else stage_->recv(comm, out_, n, peer, 5);
        }
        break;
      }
    }
    HCOMM_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    HCOMM_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    HCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms) / 1e3;
  }

  void fetch(float* in, float* out) override {
    HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    HCOMM_CUDA_CHECK(cudaMemcpy(in, in_, in_n_ * sizeof(float), cudaMemcpyDeviceToHost));
    HCOMM_CUDA_CHECK(cudaMemcpy(out, out_, out_n_ * sizeof(float), cudaMemcpyDeviceToHost));
  }

 private:
  static std::size_t bytes(std::size_t n) { return n == 0 ? sizeof(float) : n * sizeof(float); }
  std::size_t in_n_, out_n_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::unique_ptr<hcomm::cuda_staging> stage_;
  float *kept_ = nullptr, *in_ = nullptr, *out_ = nullptr;
};

}  // namespace

std::unique_ptr<device_buffers> make_cuda_buffers(const float* input, std::size_t in_n, std::size_t out_n) {
  return std::make_unique<cuda_buffers>(input, in_n, out_n);
}

}  // namespace collective_tool
