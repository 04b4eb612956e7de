// hcomm-collective's --device cuda: device buffers, each collective device-resident
// (cuda_resident: hcomm's collectives on exec::cuda over the run-time device transport) or
// through hcomm::cuda_staging (cuda_buffers: device -> pinned host -> host collective ->
// device), timed with CUDA events on the buffers' stream. Declarations and contract:
// device.hpp.
#include <cuda_runtime.h>
#include <mpi.h>

#include <limits>
#include <span>
#include <string>

#include "device.hpp"
#include "hcomm/algorithm/broadcast.hpp"
#include "hcomm/algorithm/p2p.hpp"
#include "hcomm/algorithm/ring.hpp"
#include "hcomm/comm/cuda_staging.hpp"
#include "hcomm/exec/cuda.hpp"
#include "hcomm/transport/device_transport.hpp"

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

// What both paths share: the stream, two events around one collective, and the kept input,
// the collective's input and its output in device memory.
class cuda_measurement : public device_buffers {
 public:
  cuda_measurement(const float* input, std::size_t in_n, std::size_t out_n) : in_n_(in_n), out_n_(out_n) {
    HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    HCOMM_CUDA_CHECK(cudaEventCreate(&start_));
    HCOMM_CUDA_CHECK(cudaEventCreate(&stop_));
    HCOMM_CUDA_CHECK(cudaMalloc(&kept_, bytes(in_n)));
    HCOMM_CUDA_CHECK(cudaMalloc(&in_, bytes(in_n)));
    HCOMM_CUDA_CHECK(cudaMalloc(&out_, bytes(out_n)));
    HCOMM_CUDA_CHECK(cudaMemcpy(kept_, input, in_n * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~cuda_measurement() override {
    if (stream_) cudaStreamSynchronize(stream_);
    cudaFree(res_);
    cudaFree(out_);
    cudaFree(in_);
    cudaFree(kept_);
    if (stop_) cudaEventDestroy(stop_);
    if (start_) cudaEventDestroy(start_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  cuda_measurement(const cuda_measurement&) = delete;
  cuda_measurement& operator=(const cuda_measurement&) = delete;

  void reset() override {
    HCOMM_CUDA_CHECK(cudaMemcpyAsync(in_, kept_, in_n_ * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
    HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void fetch(float* in, float* out) override {
    HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    HCOMM_CUDA_CHECK(cudaMemcpy(in, in_, in_n_ * sizeof(float), cudaMemcpyDeviceToHost));
    HCOMM_CUDA_CHECK(cudaMemcpy(out, out_, out_n_ * sizeof(float), cudaMemcpyDeviceToHost));
  }

 protected:
  // f() between two events on the stream; its seconds.
  template <class F>
  double timed(F&& f) {
    HCOMM_CUDA_CHECK(cudaEventRecord(start_, stream_));
    f();
    HCOMM_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    HCOMM_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    HCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms) / 1e3;
  }
  // An error-feedback residual of in_n values, zero.
  void add_residual() {
    HCOMM_CUDA_CHECK(cudaMalloc(&res_, bytes(in_n_)));
    HCOMM_CUDA_CHECK(cudaMemset(res_, 0, bytes(in_n_)));
  }
  static std::size_t bytes(std::size_t n) { return n == 0 ? sizeof(float) : n * sizeof(float); }

  std::size_t in_n_, out_n_;
  cudaStream_t stream_ = nullptr;
  float *kept_ = nullptr, *in_ = nullptr, *out_ = nullptr, *res_ = nullptr;

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// --device-path staging: whole buffers through hcomm::cuda_staging and the host collective.
class cuda_buffers final : public cuda_measurement {
 public:
  cuda_buffers(const float* input, std::size_t in_n, std::size_t out_n)
      : cuda_measurement(input, in_n, out_n), stage_(std::make_unique<hcomm::cuda_staging>(stream_)) {}
  ~cuda_buffers() override { stage_.reset(); }  // waits for its last copy

  double run(host_ops& comm, op_kind op, std::size_t n) override {
    return timed([&] {
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
    });
  }

 private:
  std::unique_ptr<hcomm::cuda_staging> stage_;
};

// --device-path resident: a context of its own on exec::cuda (the transport chosen at run
// time: CUDA-aware MPI where MPI says so, else frames through pinned host staging); coding,
// decoding and the reduction run on the GPU.
class cuda_resident final : public cuda_measurement {
  template <class Tr>
  using context = hcomm::algorithm::basic_context<hcomm::exec::cuda, Tr>;

 public:
  cuda_resident(const float* input, std::size_t in_n, std::size_t out_n, const resident_setup& s)
      : cuda_measurement(input, in_n, out_n) {
    if (s.error_feedback) add_residual();
    hcomm::algorithm::options opt;
    opt.threshold_bytes = s.baseline ? std::numeric_limits<std::size_t>::max() : s.threshold;
    opt.segment_bytes = s.segment;
    opt.checksum = s.checksum;
    opt.validate = s.validate;
    opt.idle_sleep_us = s.idle_sleep_us;
    cfg_ = s.baseline ? hcomm::codec::parse_config("none") : s.cfg;
    const hcomm::exec::cuda ex{stream_};
    hcomm::transport::with_device_transport([&]<class Tr>(Tr) {
      if constexpr (std::is_same_v<Tr, hcomm::transport::mpi_device>)
        device_ = std::make_unique<context<Tr>>(MPI_COMM_WORLD, opt, "device", ex);
      else
        staged_ = std::make_unique<context<Tr>>(MPI_COMM_WORLD, opt, "device", ex);
    });
  }
  ~cuda_resident() override {
    if (stream_) cudaStreamSynchronize(stream_);
    device_.reset();
    staged_.reset();
  }

  double run(host_ops&, op_kind op, std::size_t n) override {
    return timed([&] {
      if (device_) one(*device_, op, n);
      else one(*staged_, op, n);
    });
  }
  bool resident() const override { return true; }
  counters last_counters() const override { return last_; }
  std::string transport() const override {
    return device_ ? hcomm::transport::mpi_device::name : hcomm::transport::mpi_staged::name;
  }

 private:
  template <class Cx>
  void one(Cx& cx, op_kind op, std::size_t n) {
    namespace alg = hcomm::algorithm;
    cx.counters() = {};
    switch (op) {
      case op_kind::allreduce: alg::allreduce(cx, cfg_, std::span<float>(in_, n), res_); break;
      case op_kind::allgather:
        alg::allgather(cx, cfg_, std::span<const float>(in_, n), std::span<float>(out_, out_n_));
        break;
      case op_kind::reduce_scatter:
        alg::reduce_scatter(cx, cfg_, std::span<const float>(in_, in_n_), std::span<float>(out_, out_n_), res_);
        break;
      case op_kind::broadcast: alg::broadcast(cx, cfg_, std::span<float>(in_, n), 0); break;
      case op_kind::p2p: {
        const int peer = cx.rank() ^ 1;
        if (peer < cx.size()) {
          if (cx.rank() % 2 == 0) alg::send(cx, cfg_, std::span<const float>(in_, n), peer, 5);
          else alg::recv(cx, cfg_, std::span<float>(out_, n), peer, 5);
        }
        break;
      }
    }
    const auto& st = cx.counters();
    last_ = {st.wire_bytes, st.raw_bytes, st.compress_seconds};
  }

  hcomm::codec::config cfg_{};
  std::unique_ptr<context<hcomm::transport::mpi_device>> device_;
  std::unique_ptr<context<hcomm::transport::mpi_staged>> staged_;
  counters last_;
};

}  // namespace

std::unique_ptr<device_buffers> make_cuda_resident(const float* input, std::size_t in_n, std::size_t out_n,
                                                   const resident_setup& setup) {
  return std::make_unique<cuda_resident>(input, in_n, out_n, setup);
}

std::unique_ptr<device_buffers> make_cuda_buffers(const float* input, std::size_t in_n, std::size_t out_n) {
  return std::make_unique<cuda_buffers>(input, in_n, out_n);
}

}  // namespace collective_tool
