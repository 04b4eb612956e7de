// hcomm/algorithm/options.hpp: what a user may set on a communicator, and the operations
// the collectives name in their checks and messages.
//
//   hcomm::algorithm::options opt{.threshold_bytes = 0, .segment_bytes = 1 << 18};
//   hcomm::communicator<hcomm::ParallelAxis<hcomm::DP>, hcomm::Compressor<hcomm::Lossy<8>>> dp(comm, opt);
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

namespace hcomm::algorithm {

struct options {
  // Messages (whole buffer, in bytes) below this go uncompressed: compression cannot pay
  // for its latency on small messages (MVAPICH-Plus uses 1 MB too).
  std::size_t threshold_bytes = std::size_t{1} << 20;
  // Raw bytes per pipelined segment: segment k+1 is compressed while segment k is on the wire.
  std::size_t segment_bytes = std::size_t{1} << 20;
  // Before each collective, one small allreduce checks that all ranks pass the same element
  // count, dtype, codec and operation; on a difference every rank throws errc::mismatch (so
  // none hangs). Point-to-point needs no check: frame headers carry count and dtype and the
  // receiver compares. Costs one latency per collective.
  bool validate = true;
  // false: a communicator whose ranks all run on one node (transport::mpi::all_on_one_node)
  // sends uncompressed, as messages below threshold_bytes do: where shared memory or NVLink
  // moves bytes faster than the codec encodes them, compressing only adds the codec's time
  // (and its error). Decided once, when the context is created; all ranks must pass the same
  // value (a difference is errc::mismatch at construction).
  bool compress_inside_node = true;
  // Payload checksum in every frame: a corrupted frame is detected by its receiver.
  bool checksum = true;
  // Uncompressed collectives use the transport's own (MPI_Allreduce, ...). false: hcomm's
  // ring with raw frames (tests the ring machinery with the identity codec; slower).
  bool native_uncompressed = true;
  // How a rank waits for its messages (mpi::wait): 0 = MPI_Wait, polling without pause (best
  // when every rank has a core of its own); -2 (idle_yield) = test, then yield the core to any
  // other runnable process, for ranks that share cores (more ranks than cores); N > 0 = test,
  // then sleep N microseconds (each sleep adds up to N us to a message's latency: the many
  // small messages of a training step add up, so keep N far below a message's wire time).
  // -1 (idle_auto): idle_yield if more ranks run on this host
  // (mpi::ranks_sharing_this_host) than it has online CPUs, else 0; decided once, when the
  // context is created (later changes of this field do not count). MPI's own collectives
  // (uncompressed messages, below the threshold) and MPI_Bcast still wait the MPI way (busy
  // polling unless Open MPI knows the node is oversubscribed).
  static constexpr int idle_auto = -1;
  static constexpr int idle_yield = -2;
  int idle_sleep_us = idle_auto;
  // Tests only: called on every frame a rank compresses, before it is sent (to corrupt it);
  // frames the ring's allgather forwards pass on as received.
  std::function<void(std::span<std::byte>)> tamper;
};

enum class op_id : std::int64_t { allreduce = 1, reduce_scatter, allgather, broadcast };
inline const char* to_string(op_id o) {
  switch (o) {
    case op_id::allreduce: return "allreduce";
    case op_id::reduce_scatter: return "reduce_scatter";
    case op_id::allgather: return "allgather";
    case op_id::broadcast: return "broadcast";
  }
  return "?";
}

}  // namespace hcomm::algorithm
