// hcomm/transport/mpi_host.hpp: the transport policy the collectives use by default: MPI,
// reading and writing the executor's memory directly, so the executor's memory must be host
// memory (host_addressable).
//
//   hcomm::algorithm::basic_context<hcomm::exec::host, hcomm::transport::mpi_host> cx(comm);
//   static_assert(hcomm::transport::mpi_host::reaches<hcomm::exec::host_check>);
//
// What an algorithm needs of a transport, and nothing else: byte messages with a request to
// complete (and a second part received by probing), a message of a header and a caller's
// buffer without a copy, a maximum over small values (cross-rank validation), the native
// collectives that carry uncompressed data, a clock, and the communicator's setup (duplicate,
// ranks, the idle wait and thread fit of ranks that share a host). Status codes are ints:
// success is 0, anything else is turned into an hcomm::error by fail().
// Beside them: reaches<Exec> (may the transport be used with that executor's memory) and
// stages<Exec> (does it move frames through host staging, transport/mpi_staged.hpp; then the
// collectives keep what the transport touches in the executor's host staging and copy frames
// to and from it on the executor's stream). Other transports: mpi_staged (device memory over
// pinned host staging), mpi_device (CUDA-aware MPI), chosen at run time by
// transport/device_transport.hpp.
#pragma once
#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "hcomm/core/error.hpp"
#include "hcomm/exec/host_check.hpp"
#include "hcomm/transport/mpi.hpp"
#include "hcomm/transport/threads.hpp"

namespace hcomm::transport {

// Whether MPI may read and write an executor's memory as it is. Host executors: yes; device
// executors: no, unless their memory is host memory (the test executor). Specialise it for an
// executor of one's own (e.g. managed memory).
template <class Exec>
struct host_addressable : std::bool_constant<!Exec::is_device> {};
template <>
struct host_addressable<exec::host_check> : std::true_type {};

struct mpi_host {
  static constexpr const char* name = "mpi_host";
  using comm_type = MPI_Comm;
  using owned_comm = mpi::owned_comm;
  using request_type = MPI_Request;
  using status_type = MPI_Status;
  using message_type = MPI_Message;
  static constexpr int success = MPI_SUCCESS;

  template <class Exec>
  static constexpr bool reaches = host_addressable<Exec>::value;
  template <class Exec>
  static constexpr bool stages = false;

  static request_type null_request() noexcept { return MPI_REQUEST_NULL; }
  [[noreturn]] static void fail(int rc, const char* call, const std::string& where) { mpi::fail_mpi(rc, call, where); }

  // --- the communicator ---
  static owned_comm dup(comm_type c) { return mpi::dup(c); }
  static int rank(comm_type c) { return mpi::rank(c); }
  static int size(comm_type c) { return mpi::size(c); }
  static double now() noexcept { return MPI_Wtime(); }
  // Collective over c: how many ranks share this host (all ranks count, whatever their
  // options, since a collective some ranks skipped would hang the others), after fitting the
  // default thread count to them.
  static int ranks_sharing_host_and_fit_threads(comm_type c) {
    const int sharing = mpi::ranks_sharing_this_host(c);
    mpi::fit_threads(c, sharing);
    return sharing;
  }
  static int online_cpus() { return mpi::online_cpus(); }
  // Collective over c: whether all its ranks run on one node (mpi::all_on_one_node).
  static bool all_on_one_node(comm_type c) { return mpi::all_on_one_node(c); }

  // --- byte messages ---
  static void isend(const void* p, std::size_t bytes, int peer, int tag, comm_type c, request_type* r) {
    HCOMM_MPI_CHECK(MPI_Isend(p, mpi::count_of(bytes, "frame"), MPI_BYTE, peer, tag, c, r));
  }
  static void irecv(void* p, std::size_t bytes, int peer, int tag, comm_type c, request_type* r) {
    HCOMM_MPI_CHECK(MPI_Irecv(p, mpi::count_of(bytes, "frame slot"), MPI_BYTE, peer, tag, c, r));
  }
  // Completes r (st may be null); returns the status code. idle_us: see mpi::wait.
  static int wait(request_type* r, status_type* st, unsigned idle_us) {
    return mpi::wait(r, st ? st : MPI_STATUS_IGNORE, idle_us);
  }
  static std::size_t received_bytes(const status_type& st) {
    int got = 0;
    HCOMM_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &got));
    return static_cast<std::size_t>(got);
  }
  // The next message from peer with tag: its size, and a handle to receive exactly it.
  static std::size_t probe(int peer, int tag, comm_type c, message_type* m) {
    MPI_Status st;
    HCOMM_MPI_CHECK(MPI_Mprobe(peer, tag, c, m, &st));
    return received_bytes(st);
  }
  static void recv_probed(message_type* m, void* p, std::size_t bytes) {
    HCOMM_MPI_CHECK(MPI_Mrecv(p, mpi::count_of(bytes, "frame"), MPI_BYTE, m, MPI_STATUS_IGNORE));
  }
  // A receive not yet matched is cancelled (and completes here); a send, or a receive under
  // way, cannot be recalled: it is freed and finishes on its own.
  static void abandon(request_type* r) noexcept {
    if (*r == MPI_REQUEST_NULL) return;
    MPI_Cancel(r);
    int done = 0;
    MPI_Test(r, &done, MPI_STATUS_IGNORE);
    if (*r != MPI_REQUEST_NULL) MPI_Request_free(r);
  }
  // Cancels a receive and waits for it (it completes, matched or cancelled).
  static void cancel(request_type* r) noexcept {
    MPI_Cancel(r);
    MPI_Wait(r, MPI_STATUS_IGNORE);
  }
  static void wait_quietly(request_type* r) noexcept { MPI_Wait(r, MPI_STATUS_IGNORE); }

  // --- one message of [header][caller's buffer], no copy (an MPI struct type) ---
  static void isend_with_header(const void* head, std::size_t head_bytes, const void* data, std::size_t data_bytes,
                                int peer, int tag, comm_type c, request_type* r) {
    MPI_Datatype t = header_plus_data(head, head_bytes, data, data_bytes);
    const int rc = MPI_Isend(MPI_BOTTOM, 1, t, peer, tag, c, r);
    MPI_Type_free(&t);
    if (rc != MPI_SUCCESS) fail(rc, "MPI_Isend", HCOMM_WHERE_);
  }
  static void irecv_with_header(void* head, std::size_t head_bytes, void* data, std::size_t data_bytes, int peer,
                                int tag, comm_type c, request_type* r) {
    MPI_Datatype t = header_plus_data(head, head_bytes, data, data_bytes);
    const int rc = MPI_Irecv(MPI_BOTTOM, 1, t, peer, tag, c, r);
    MPI_Type_free(&t);
    if (rc != MPI_SUCCESS) fail(rc, "MPI_Irecv", HCOMM_WHERE_);
  }

  // --- small values and the native collectives (uncompressed data) ---
  static void max_allreduce(long long* v, int n, comm_type c) {
    HCOMM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_LONG_LONG, MPI_MAX, c));
  }
  template <class T>
  static void sum_allreduce(T* data, std::size_t n, comm_type c) {
    HCOMM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, mpi::count_of(n, "allreduce elements"), mpi::datatype_of<T>(),
                                  mpi::sum_op<T>(), c));
  }
  template <class T>
  static void sum_reduce_scatter(const T* in, T* out, std::size_t m, comm_type c) {
    HCOMM_MPI_CHECK(MPI_Reduce_scatter_block(in, out, mpi::count_of(m, "reduce_scatter elements"),
                                             mpi::datatype_of<T>(), mpi::sum_op<T>(), c));
  }
  template <class T>
  static void allgather(const T* in, T* out, std::size_t m, comm_type c) {
    HCOMM_MPI_CHECK(MPI_Allgather(in, mpi::count_of(m, "allgather elements"), mpi::datatype_of<T>(), out,
                                  static_cast<int>(m), mpi::datatype_of<T>(), c));
  }
  template <class T>
  static void broadcast_values(T* data, std::size_t n, int root, comm_type c) {
    HCOMM_MPI_CHECK(MPI_Bcast(data, mpi::count_of(n, "broadcast elements"), mpi::datatype_of<T>(), root, c));
  }
  static void broadcast_words(std::uint64_t* w, std::size_t n, int root, comm_type c) {
    HCOMM_MPI_CHECK(MPI_Bcast(w, static_cast<int>(n), MPI_UINT64_T, root, c));
  }
  // Any number of bytes, in pieces below MPI's int count.
  static void broadcast_bytes(void* p, std::size_t bytes, int root, comm_type c) {
    auto* b = static_cast<unsigned char*>(p);
    for (std::size_t at = 0; at < bytes;) {
      const std::size_t piece = bytes - at < (std::size_t{1} << 30) ? bytes - at : (std::size_t{1} << 30);
      HCOMM_MPI_CHECK(MPI_Bcast(b + at, static_cast<int>(piece), MPI_BYTE, root, c));
      at += piece;
    }
  }

 private:
  // MPI type for [head_bytes at `head`][data_bytes at `data`], addressed from MPI_BOTTOM.
  static MPI_Datatype header_plus_data(const void* head, std::size_t head_bytes, const void* data,
                                       std::size_t data_bytes) {
    int lens[2] = {static_cast<int>(head_bytes), mpi::count_of(data_bytes, "uncompressed message")};
    MPI_Aint disp[2];
    HCOMM_MPI_CHECK(MPI_Get_address(head, &disp[0]));
    HCOMM_MPI_CHECK(MPI_Get_address(data ? data : head, &disp[1]));
    MPI_Datatype t;
    HCOMM_MPI_CHECK(MPI_Type_create_hindexed(data_bytes ? 2 : 1, lens, disp, MPI_BYTE, &t));
    HCOMM_MPI_CHECK(MPI_Type_commit(&t));
    return t;
  }
};

}  // namespace hcomm::transport
