// hcomm/comm/cuda_staging.hpp: compressed communicators on CUDA device memory, through host
// staging (works with any MPI; the other way is a transport that reaches device memory,
// e.g. a CUDA-aware MPI, beside transport::mpi_host).
//
//   hcomm::cuda_staging stage(stream);            // pinned host buffers, grown to the largest call
//   stage.allreduce(dp, d_grads, n);              // dp: any communicator that offers allreduce
//   stage.send(pp, d_acts, n, peer, tag);         // PP: send / recv of device activations
//   stage.allgather(tp, d_in, m, d_out);          // TP/DP: allgather, reduce_scatter, broadcast
//
// Every call copies its device input to pinned host memory on the stream, waits for that copy
// (MPI reads host memory), runs the host communicator (compression on the CPU, exactly as for
// host buffers, so the results are the bytes a host caller gets), and enqueues the copy of
// the result back to the device on the stream; it returns without waiting for that copy:
// kernels launched later on the same stream see the result. The host buffers stay valid
// until the next call on this object, which waits for the stream first.
//
// Costs: two PCIe copies per call and the codec on the CPU. Faster on a GPU cluster:
// compressing on the GPU (algorithm::basic_context<exec::cuda, T> with a transport T that
// stages only the frames, or a CUDA-aware MPI).
//
// CUDA code: include it from sources compiled by nvcc (tests/comm/cuda/ does).
#pragma once

#if !defined(__CUDACC__)
#error "hcomm/comm/cuda_staging.hpp is CUDA code: compile this file with nvcc (a .cu source)"
#else

#include <cuda_runtime.h>

#include <cstddef>
#include <span>
#include <string>

#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/exec/cuda.hpp"

namespace hcomm {

class cuda_staging {
 public:
  explicit cuda_staging(cudaStream_t stream = nullptr) : stream_(stream) {}
  cuda_staging(const cuda_staging&) = delete;
  cuda_staging& operator=(const cuda_staging&) = delete;
  ~cuda_staging() {
    if (copy_in_flight_) cudaStreamSynchronize(stream_);  // (no throw from a destructor)
    for (auto& b : bufs_) cudaFreeHost(b.ptr);
  }

  // In place on n device values: every rank ends with the same sum (see the communicator).
  template <class Comm, floating_element T>
  void allreduce(Comm& comm, T* d_data, std::size_t n) {
    T* h = stage_in(0, d_data, n);
    comm.allreduce(std::span<T>(h, n));
    stage_out(d_data, h, n);
  }
  // d_in: ranks x m values; d_out: m values (this rank's block of the sum).
  template <class Comm, floating_element T>
  void reduce_scatter(Comm& comm, const T* d_in, std::size_t m, T* d_out) {
    const std::size_t n = m * static_cast<std::size_t>(comm.size());
    T* in = stage_in(0, d_in, n);
    T* out = host<T>(1, m);
    comm.reduce_scatter(std::span<const T>(in, n), std::span<T>(out, m));
    stage_out(d_out, out, m);
  }
  // d_in: m values; d_out: ranks x m values.
  template <class Comm, floating_element T>
  void allgather(Comm& comm, const T* d_in, std::size_t m, T* d_out) {
    const std::size_t n = m * static_cast<std::size_t>(comm.size());
    T* in = stage_in(0, d_in, m);
    T* out = host<T>(1, n);
    comm.allgather(std::span<const T>(in, m), std::span<T>(out, n));
    stage_out(d_out, out, n);
  }
  template <class Comm, floating_element T>
  void broadcast(Comm& comm, T* d_data, std::size_t n, int root) {
    T* h = comm.rank() == root ? stage_in(0, d_data, n) : host<T>(0, n);
    comm.broadcast(std::span<T>(h, n), root);
    stage_out(d_data, h, n);
  }
  template <class Comm, floating_element T>
  void send(Comm& comm, const T* d_data, std::size_t n, int peer, int tag) {
    T* h = stage_in(0, d_data, n);
    comm.send(std::span<const T>(h, n), peer, tag);
  }
  template <class Comm, floating_element T>
  void recv(Comm& comm, T* d_data, std::size_t n, int peer, int tag) {
    T* h = host<T>(0, n);
    comm.recv(std::span<T>(h, n), peer, tag);
    stage_out(d_data, h, n);
  }

  cudaStream_t stream() const noexcept { return stream_; }

 private:
  struct pinned {
    void* ptr = nullptr;
    std::size_t bytes = 0;
  };

  // Pinned host buffer i for n values of T (grown, never shrunk). Waits for the stream first:
  // the previous call's copy back may still be reading the buffer.
  template <class T>
  T* host(int i, std::size_t n) {
    if (copy_in_flight_) HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    copy_in_flight_ = false;
    pinned& b = bufs_[i];
    const std::size_t bytes = n * sizeof(T);
    if (b.bytes < bytes) {
      HCOMM_CUDA_CHECK(cudaFreeHost(b.ptr));
      b = pinned{};
      HCOMM_CUDA_CHECK(cudaMallocHost(&b.ptr, bytes));
      b.bytes = bytes;
    }
    return static_cast<T*>(b.ptr);
  }
  template <class T>
  T* stage_in(int i, const T* d_src, std::size_t n) {
    if (n > 0 && d_src == nullptr) fail(errc::invalid_argument, "cuda_staging: null device pointer");
    T* h = host<T>(i, n);
    if (n > 0) {
      HCOMM_CUDA_CHECK(cudaMemcpyAsync(h, d_src, n * sizeof(T), cudaMemcpyDeviceToHost, stream_));
      HCOMM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    return h;
  }
  template <class T>
  void stage_out(T* d_dst, const T* h, std::size_t n) {
    if (n == 0) return;
    if (d_dst == nullptr) fail(errc::invalid_argument, "cuda_staging: null device pointer");
    HCOMM_CUDA_CHECK(cudaMemcpyAsync(d_dst, h, n * sizeof(T), cudaMemcpyHostToDevice, stream_));
    copy_in_flight_ = true;  // a copy is in flight: the next call waits before reusing the buffers
  }

  cudaStream_t stream_;
  pinned bufs_[2];
  bool copy_in_flight_ = false;
};

}  // namespace hcomm

#endif  // __CUDACC__
