// Bad input: sizes, dtypes or codecs that differ across ranks, zero-length buffers, corrupted
// frames from a peer, arguments that cannot work. Each must end in an hcomm::error on the
// rank(s) that detect it, with a message saying what differed, and never hang (ctest timeout).
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

  // --- collectives: every rank learns of the difference and throws (none hangs) ---
  {
    hcomm::runtime_communicator c(MPI_COMM_WORLD, "mpc", small);
    std::vector<float> x(r == 0 ? 100 : 120, 1.0f);
    EXPECT_ERROR(c.allreduce(std::span<float>(x)), errc::mismatch,
                 "element count differs across ranks (min 100, max 120", "allreduce sizes differ");
    std::vector<float> f(64, 1.0f);
    std::vector<double> d(64, 1.0);
    EXPECT_ERROR(r == 0 ? c.allreduce(std::span<double>(d)) : c.allreduce(std::span<float>(f)), errc::mismatch,
                 "dtype differs across ranks (min f32, max f64", "allreduce dtypes differ");
    EXPECT_ERROR(c.broadcast(std::span<float>(f), r == 0 ? 0 : 1), errc::mismatch, "root differs across ranks",
                 "broadcast roots differ");
    // After the errors the communicator still works.
    std::vector<float> ok(1000, 1.0f);
    c.allreduce(std::span<float>(ok));
    CHECK(ok[0] == static_cast<float>(p) && ok[999] == static_cast<float>(p), "allreduce after errors");
  }
  {
    hcomm::runtime_communicator c(MPI_COMM_WORLD, r == 0 ? "mpc" : "none", small);
    std::vector<float> x(256, 1.0f);
    EXPECT_ERROR(c.allreduce(std::span<float>(x)), errc::mismatch, "codec differs across ranks",
                 "allreduce codecs differ");
  }
  {  // uncompressed path (MPI's own allreduce) is checked the same way
    hcomm::runtime_communicator c(MPI_COMM_WORLD, "none");
    std::vector<float> x(r == p - 1 ? 9 : 8, 1.0f);
    EXPECT_ERROR(c.allreduce(std::span<float>(x)), errc::mismatch, "element count differs", "native sizes differ");
    std::vector<float> in(8 * p), out(8);
    std::vector<float> bad(8 * p + 1);
    EXPECT_ERROR(c.reduce_scatter(std::span<const float>(bad), std::span<float>(out)), errc::invalid_argument,
                 "expected ranks x output", "reduce_scatter shape");
    EXPECT_ERROR(c.allgather(std::span<const float>(out), std::span<float>(bad)), errc::invalid_argument,
                 "expected ranks x input", "allgather shape");
    EXPECT_ERROR(c.broadcast(std::span<float>(out), p), errc::invalid_argument, "is not a rank", "broadcast root");
    EXPECT_ERROR(c.send(std::span<const float>(out), p + 3, 0), errc::invalid_argument, "is not a rank", "peer");
  }

  // --- zero-length buffers: no-ops on every path, no hang ---
  for (const char* codec : {"none", "mpc", "zfp:8"}) {
    hcomm::runtime_communicator c(MPI_COMM_WORLD, codec, small);
    std::vector<float> e;
    c.allreduce(std::span<float>(e));
    c.reduce_scatter(std::span<const float>(e), std::span<float>(e));
    c.allgather(std::span<const float>(e), std::span<float>(e));
    c.broadcast(std::span<float>(e), 0);
    auto q = c.isend(std::span<const float>(e), (r + 1) % p, 3);
    c.recv(std::span<float>(e), (r + p - 1) % p, 3);
    q.wait();
    CHECK(true, std::string("zero-length ops with ") + codec);
  }

  // --- point-to-point: the receiver sees what the sender's header says ---
  {  // (communicators are made by all ranks: MPI_Comm_dup is collective)
    hcomm::runtime_communicator c(MPI_COMM_WORLD, "none");
    hcomm::runtime_communicator z(MPI_COMM_WORLD, "mpc", small);
    std::vector<float> ten(10, 2.0f), twelve(12);
    std::vector<double> dbl(10, 2.0);
    std::vector<float> twenty(20);
    if (r == 0) {  // ranks 0 -> 1 only
      c.send(std::span<const float>(ten), 1, 1);
      c.send(std::span<const double>(dbl), 1, 2);  // 80 bytes, like 20 floats
    } else if (r == 1) {
      EXPECT_ERROR(c.recv(std::span<float>(twelve), 0, 1), errc::mismatch, "peer sent 10 values, this rank expects 12",
                   "p2p count differs");
      EXPECT_ERROR(c.recv(std::span<float>(twenty), 0, 2), errc::mismatch, "peer sent f64 values, this rank expects f32",
                   "p2p dtype differs");
    }
    std::vector<float> big(5000, 1.5f), other(3000);
    if (r == 0) {
      z.send(std::span<const float>(big), 1, 4);
    } else if (r == 1) {
      EXPECT_ERROR(z.recv(std::span<float>(other), 0, 4), errc::mismatch, "frame holds 1024 values, receiver expects",
                   "compressed p2p count differs");
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // --- a corrupted frame: detected by its receiver, which still completes the pattern ---
  {
    hcomm::comm_options o = small;
    int flips = 0;
    o.tamper = [&](std::span<std::byte> frame) {
      if (r == 0 && flips++ == 0) frame[hcomm::codec::header_bytes + 5] ^= std::byte{0x10};
    };
    hcomm::runtime_communicator c(MPI_COMM_WORLD, "mpc", o);
    std::vector<float> x(3000, 1.0f);
    if (p >= 2 && r < 2) {
      if (r == 0) c.send(std::span<const float>(x), 1, 9);
      else
        EXPECT_ERROR(c.recv(std::span<float>(x), 0, 9), errc::corrupt_frame, "payload checksum mismatch",
                     "p2p corrupted frame");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    flips = 0;  // rank 0 corrupts its first reduce-scatter frame; rank 1 receives it
    bool threw = false;
    try {
      c.allreduce(std::span<float>(x));
    } catch (const hcomm::error& e) {
      threw = true;
      CHECK(e.code() == errc::corrupt_frame && std::string(e.what()).find("from rank 0") != std::string::npos,
            std::string("ring corrupted frame: ") + e.what());
      if (r == 1) std::printf("  ok, rank 1 says: %s\n", e.what());
    }
    CHECK(threw == (r == 1), "only the receiver of the corrupted frame throws, rank " + std::to_string(r));
    flips = 1;  // no more corruption: the communicator keeps working
    std::fill(x.begin(), x.end(), 1.0f);
    c.allreduce(std::span<float>(x));
    CHECK(x[0] == static_cast<float>(p) && x[2999] == static_cast<float>(p), "allreduce after corruption");
  }

  // --- error feedback keeps one residual: a second buffer shape is refused ---
  {
    hcomm::runtime_communicator c(MPI_COMM_WORLD, "zfp:8", small, /*error_feedback=*/true);
    std::vector<float> a(400, 1.0f), b(500, 1.0f);
    c.allreduce(std::span<float>(a));
    EXPECT_ERROR(c.allreduce(std::span<float>(b)), errc::invalid_argument, "one residual per communicator",
                 "error feedback shape");
    EXPECT_ERROR(hcomm::runtime_communicator(MPI_COMM_WORLD, "mpc", small, true), errc::invalid_argument,
                 "needs a lossy codec", "error feedback on lossless");
    // ZFP below its stable rate: refused when the communicator is made, and for doubles (which
    // need rate 7) at the call, before the buffer or the residual is touched.
    EXPECT_ERROR(hcomm::runtime_communicator(MPI_COMM_WORLD, "zfp:4", small, true), errc::invalid_argument,
                 "residual grows", "error feedback over zfp:4");
    hcomm::runtime_communicator c6(MPI_COMM_WORLD, "zfp:6", small, true);
    std::vector<double> d(400, 1.0);
    EXPECT_ERROR(c6.allreduce(std::span<double>(d)), errc::invalid_argument, "7 or more for double",
                 "error feedback over zfp:6 on doubles");
    CHECK(d[0] == 1.0 && d[399] == 1.0 && c6.residual<double>().empty(), "the refused call changed nothing");
  }
  return t::finish("test_bad_input");
}
