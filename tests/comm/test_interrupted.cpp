// An exception in the middle of a ring operation (here thrown by the test hook on every rank
// at its second compressed frame) leaves the ring's message pattern half done; the
// communicator must then refuse every later operation with a message that says so. Its own
// program: the broken pattern leaves messages in flight that nothing will receive (the
// context keeps its MPI communicator unfreed so that they cannot reach a later one).
#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "hcomm/comm/communicator.hpp"
#include "mpi_check.hpp"

using hcomm::errc;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int p = t::world_size(), r = t::world_rank();
  hcomm::comm_options small;  // compressed paths even for small test buffers
  small.threshold_bytes = 0;
  small.segment_bytes = 4096;

  // --- an exception in the middle of a ring operation: the communicator refuses later calls ---
  // Every rank's test hook throws at its second compressed frame (no rank waits on a peer
  // before that point, so none hangs); the peers' messages of the broken pattern may still be
  // queued, so a later operation must not run on this communicator.
  {
    hcomm::comm_options o = small;
    int frames = 0;
    o.tamper = [&](std::span<std::byte>) {
      if (++frames == 2) hcomm::fail(errc::invalid_argument, "test hook: stop here");
    };
    hcomm::runtime_communicator c(MPI_COMM_WORLD, "zfp:8", o);
    std::vector<float> x(4096 * p, 1.0f);  // 4 segments per chunk
    if (p >= 2) {
      EXPECT_ERROR(c.allreduce(std::span<float>(x)), errc::invalid_argument, "test hook: stop here",
                   "exception inside the ring");
      EXPECT_ERROR(c.allreduce(std::span<float>(x)), errc::invalid_argument,
                   "unusable: an earlier ring operation was interrupted", "allreduce after an interrupted ring");
      std::vector<float> y(16);
      EXPECT_ERROR(c.send(std::span<const float>(y), (r + 1) % p, 1), errc::invalid_argument, "unusable",
                   "send after an interrupted ring");
    }
  }

  return t::finish("test_interrupted");
}
