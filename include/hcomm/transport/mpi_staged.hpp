// hcomm/transport/mpi_staged.hpp: MPI over host staging of frames, for executors whose
// memory MPI cannot read (device memory with an MPI not built for CUDA).
//
//   hcomm::algorithm::basic_context<hcomm::exec::cuda, hcomm::transport::mpi_staged> cx(comm, {}, "dp", ex);
//   hcomm::algorithm::allreduce(cx, cfg, std::span<float>(d_grads, n));   // d_grads: device memory
//
// The collectives code, decode and reduce on the executor, in its memory, as with any
// transport; only frames (compressed bytes) cross to the host: each frame is copied from the
// executor's memory into host staging (exec/host_staging.hpp: page-locked on CUDA) on the
// executor's stream, and the host waits for the stream where it needs the frame's size to
// send it. In the ring, for codecs whose ring slot is their typical frame (ZFP, bf16, int8),
// the slot's worth of bytes is copied right behind the encode, so that one wait per frame
// gives both the size and the staged bytes; for the others (MPC, none), and for
// point-to-point frames, the host reads the size, copies exactly the frame and waits for
// that copy. Received frames land in staging and are copied back on the stream before they
// are decoded. Uncompressed messages (below the threshold, or the identity codec with
// options::native_uncompressed) are staged whole for MPI's own collectives. With a host
// executor nothing is staged (stages<Exec> is false): it is then mpi_host.
//
// What overlaps, per segment of the ring (algorithm/ring.hpp): once segment k's frame is
// staged and its send posted, the rank goes on to segment k+1 (receive, copy in, decode,
// add, encode on the stream) while MPI moves segment k; error feedback's decode-back of
// segment k runs after k's send is posted, so it overlaps k's transfer too. Copy-out of k
// and encoding of k+1 do not overlap on the device: both are on the executor's one stream
// and the send of k needs the copy done (the copy is one frame, small next to the encode).
// The host also waits inside each decode (the engine reads the frame's header and its
// checksum on the host), which is what lets a staging slot be reused for the next receive as
// soon as the decode call returns.
//
// The MPI calls are mpi_host's: this struct only says that it reaches any executor with
// host staging and that it stages the memory of device executors (the test executor
// host_check included, so that CI runs the staging on the CPU).
#pragma once
#include "hcomm/exec/host_staging.hpp"
#include "hcomm/transport/mpi_host.hpp"

namespace hcomm::transport {

struct mpi_staged : mpi_host {
  static constexpr const char* name = "mpi_staged";
  template <class Exec>
  static constexpr bool reaches = !Exec::is_device || exec::host_staging<Exec>;
  template <class Exec>
  static constexpr bool stages = Exec::is_device;
};

}  // namespace hcomm::transport
