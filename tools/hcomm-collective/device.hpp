// tools/hcomm-collective/device.hpp: the collective a measurement runs (host_ops), and the
// --device cuda backend behind portable declarations. device_cuda.cu (nvcc, builds with
// HCOMM_ENABLE_CUDA) keeps the buffers in device memory and runs each collective either
// device-resident (--device-path resident: a basic_context<exec::cuda, transport> of its own,
// coding, decoding and reducing on the GPU, frames through the run-time device transport,
// transport/device_transport.hpp) or through hcomm::cuda_staging (--device-path staging:
// device -> pinned host -> the host collective -> device), timed with CUDA events;
// device_none.cpp (every other build) only says why it cannot.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "hcomm/codec/config.hpp"

namespace collective_tool {

// hcomm-collective's exit status when --device names a device this run cannot use.
inline constexpr int exit_no_device = 3;

// One measurement's collective on host float32 buffers: an hcomm communicator or MPI's own.
// (The shape hcomm::cuda_staging expects of a communicator.)
struct host_ops {
  virtual ~host_ops() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void allreduce(std::span<float> data) = 0;
  virtual void allgather(std::span<const float> in, std::span<float> out) = 0;
  virtual void reduce_scatter(std::span<const float> in, std::span<float> out) = 0;
  virtual void broadcast(std::span<float> data, int root) = 0;
  virtual void send(std::span<const float> data, int peer, int tag) = 0;
  virtual void recv(std::span<float> data, int peer, int tag) = 0;
};

// The operations of --op. p2p: pairs (0,1), (2,3), ...: even ranks send, odd ranks receive.
enum class op_kind { allreduce, allgather, reduce_scatter, p2p, broadcast };

// Empty when --device cuda can run on this rank; else the one-line reason ("built without
// CUDA ...", "no CUDA device: <cudaGetErrorString>").
std::string cuda_unavailable();

// Makes device (local_rank mod the device count) this rank's current device, so that ranks
// sharing a node spread over its GPUs.
void cuda_select_device(int local_rank);

// A measurement's buffers in device memory: the input (in_n values, kept), the collective's
// input (in_n) and output (out_n).
class device_buffers {
 public:
  virtual ~device_buffers() = default;
  // Restores the collective's input from the kept input and waits for the copy.
  virtual void reset() = 0;
  // One collective of `n` values per rank (the message size) through host staging; returns
  // its seconds between CUDA events on the stream, the copies included.
  virtual double run(host_ops& comm, op_kind op, std::size_t n) = 0;
  // Copies the collective's input (in_n values) and output (out_n) to the host.
  virtual void fetch(float* in, float* out) = 0;
  // The device-resident path counts its own bytes (the host communicator passed to run() is
  // not used there); the staging path leaves them to that communicator.
  struct counters {
    std::uint64_t wire_bytes = 0, raw_bytes = 0;
    double codec_seconds = 0;
  };
  virtual bool resident() const { return false; }
  virtual counters last_counters() const { return {}; }
  // The transport the device-resident path runs on (mpi_staged or mpi_device), else "".
  virtual std::string transport() const { return {}; }
};
std::unique_ptr<device_buffers> make_cuda_buffers(const float* input, std::size_t in_n, std::size_t out_n);

// What the device-resident path needs of the measurement: the codec (baseline: MPI's own
// collectives on the staged or CUDA-aware values, uncompressed) and the communicator options.
struct resident_setup {
  hcomm::codec::config cfg{};
  bool baseline = false;
  bool error_feedback = false;  // a residual of in_n values on the device
  std::size_t threshold = 0, segment = 0;
  bool checksum = true, validate = true;
  int idle_sleep_us = -1;
};
std::unique_ptr<device_buffers> make_cuda_resident(const float* input, std::size_t in_n, std::size_t out_n,
                                                   const resident_setup& setup);

}  // namespace collective_tool
