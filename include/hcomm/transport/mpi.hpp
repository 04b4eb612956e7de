// hcomm/transport/mpi.hpp: the thin layer between hcomm and the MPI C API.
//
//   HCOMM_MPI_CHECK(MPI_Send(buf, n, MPI_BYTE, peer, tag, comm));  // throws hcomm::error
//   hcomm::mpi::owned_comm c = hcomm::mpi::dup(MPI_COMM_WORLD);     // freed on destruction
//
// hcomm duplicates every communicator it is given, so its tags never meet the caller's,
// and switches the duplicate to MPI_ERRORS_RETURN, so MPI failures become hcomm::error
// (with file:line) instead of aborting: a rank that detects a problem can say what it was.
#pragma once
#include <mpi.h>

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hcomm/core/checksum.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"

namespace hcomm::mpi {

[[noreturn]] inline void fail_mpi(int rc, const char* call, const std::string& where) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  int cls = rc;
  MPI_Error_class(rc, &cls);
  if (cls == MPI_ERR_TRUNCATE)
    fail(errc::mismatch, std::string("a peer sent a longer message than this rank expected (") + text + ") in " +
                             call + " at " + where);
  fail(errc::mpi_failure, std::string(text) + " in " + call + " at " + where);
}

inline bool finalized() {
  int f = 0;
  MPI_Finalized(&f);
  return f != 0;
}

// A communicator this object frees (unless MPI is already finalized).
class owned_comm {
 public:
  owned_comm() = default;
  explicit owned_comm(MPI_Comm c) noexcept : c_(c) {}
  owned_comm(const owned_comm&) = delete;
  owned_comm& operator=(const owned_comm&) = delete;
  owned_comm(owned_comm&& o) noexcept : c_(std::exchange(o.c_, MPI_COMM_NULL)) {}
  owned_comm& operator=(owned_comm&& o) noexcept {
    if (this != &o) {
      reset();
      c_ = std::exchange(o.c_, MPI_COMM_NULL);
    }
    return *this;
  }
  ~owned_comm() { reset(); }
  MPI_Comm get() const noexcept { return c_; }
  void reset() noexcept {
    if (c_ != MPI_COMM_NULL && !finalized()) MPI_Comm_free(&c_);
    c_ = MPI_COMM_NULL;
  }
  // Forgets the communicator without freeing it (see algorithm::context::keep_comm_alive).
  void leak() noexcept { c_ = MPI_COMM_NULL; }

 private:
  MPI_Comm c_ = MPI_COMM_NULL;
};

}  // namespace hcomm::mpi

#define HCOMM_MPI_CHECK(call)                                                   \
  do {                                                                          \
    const int hcomm_rc_ = (call);                                               \
    if (hcomm_rc_ != MPI_SUCCESS) ::hcomm::mpi::fail_mpi(hcomm_rc_, #call, HCOMM_WHERE_); \
  } while (0)

namespace hcomm::mpi {

inline int rank(MPI_Comm c) {
  int r = 0;
  HCOMM_MPI_CHECK(MPI_Comm_rank(c, &r));
  return r;
}
inline int size(MPI_Comm c) {
  int s = 0;
  HCOMM_MPI_CHECK(MPI_Comm_size(c, &s));
  return s;
}

// Duplicate with MPI_ERRORS_RETURN (see the header comment for why).
inline owned_comm dup(MPI_Comm c) {
  if (c == MPI_COMM_NULL) fail(errc::invalid_argument, "MPI_COMM_NULL given where a communicator is needed");
  MPI_Comm d = MPI_COMM_NULL;
  HCOMM_MPI_CHECK(MPI_Comm_dup(c, &d));
  owned_comm out(d);
  HCOMM_MPI_CHECK(MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN));
  return out;
}

// MPI counts are int: messages above 2 GiB are split by the callers or refused here.
inline int count_of(std::size_t bytes, const char* what) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    fail(errc::unsupported, std::string(what) + ": one MPI message of " + std::to_string(bytes) +
                                " bytes exceeds MPI's int count");
  return static_cast<int>(bytes);
}

// How a waiting rank spends the time between two tests of its request (the resolved
// comm_options::idle_sleep_us): 0 is MPI_Wait (no tests of ours); yield_between_tests gives the
// core to any other runnable process (sched_yield) and tests again at once when there is none;
// any other value sleeps that many microseconds.
inline constexpr unsigned yield_between_tests = UINT_MAX;
inline void pause_between_tests(unsigned idle_us) {
  if (idle_us == yield_between_tests) {
    sched_yield();
  } else if (idle_us > 0) {
    const timespec pause{static_cast<time_t>(idle_us / 1000000), static_cast<long>(idle_us % 1000000) * 1000};
    nanosleep(&pause, nullptr);
  }
}

// Completes one request. idle_us = 0: MPI_Wait, which polls the network without pause (the
// lowest latency when every rank has a core of its own). Otherwise MPI_Test, with
// pause_between_tests between tests: yielding, so that ranks sharing cores leave them to the
// ranks that are computing, or sleeping (MPI makes progress only inside the tests, so sleeps
// much longer than a message's wire time leave the link idle, and every sleep adds its length
// to the latency of a small message).
inline int wait(MPI_Request* r, MPI_Status* st, unsigned idle_us) {
  if (idle_us == 0) return MPI_Wait(r, st);
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(r, &done, st);
    if (rc != MPI_SUCCESS || done) return rc;
    pause_between_tests(idle_us);
  }
}

// Online CPUs of this host (not the process's affinity: MPI may bind each rank to one core).
inline int online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}
// This machine's identity: the kernel's boot id, which every process on one kernel reads
// alike, whatever network or UTS namespace it runs in (the emulated nodes of
// scripts/netns-mpirun.sh each have a host name of their own, and share the CPUs); the host
// name where /proc does not have it. A 64-bit hash, read once.
inline std::uint64_t machine_id() {
  static const std::uint64_t id = [] {
    std::string key;
    if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
      char buf[128] = {};
      if (std::fgets(buf, sizeof buf, f)) buf[std::strcspn(buf, "\n")] = '\0';
      std::fclose(f);
      if (buf[0] != '\0') key = std::string("boot ") + buf;
    }
    if (key.empty()) {
      char name[256] = {};
      gethostname(name, sizeof name - 1);
      key = std::string("host ") + name;
    }
    return hash64(key.data(), key.size(), 0);
  }();
  return id;
}
// Whether all ranks of c run on one node as MPI groups them (MPI_COMM_TYPE_SHARED: the ranks
// that can share memory; the emulated nodes of scripts/netns-mpirun.sh are separate nodes to
// Open MPI). Collective over c; every rank gets the same answer.
inline bool all_on_one_node(MPI_Comm c) {
  MPI_Comm node = MPI_COMM_NULL;
  HCOMM_MPI_CHECK(MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int here = 0, all = 0;
  const int rc = MPI_Comm_size(node, &here);
  MPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) fail_mpi(rc, "MPI_Comm_size", HCOMM_WHERE_);
  HCOMM_MPI_CHECK(MPI_Comm_size(c, &all));
  return here == all;
}
// How many ranks of c run on this machine (machine_id; collective over c). Ranks that MPI sees
// as separate nodes in namespaces of one machine count too.
inline int ranks_on_this_host(MPI_Comm c) {
  const std::uint64_t h = machine_id();
  int p = 1;
  HCOMM_MPI_CHECK(MPI_Comm_size(c, &p));
  std::vector<std::uint64_t> all(static_cast<std::size_t>(p));
  HCOMM_MPI_CHECK(MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, c));
  int n = 0;
  for (std::uint64_t x : all) n += x == h;
  return n;
}
namespace detail {
// The most ranks on this machine that any count of this process saw (a sub-communicator sees
// only its own members; the count over the whole job, where one was made, holds for it too).
inline std::atomic<int>& most_ranks_seen_on_host() {
  static std::atomic<int> n{0};
  return n;
}
}  // namespace detail
// Ranks on this machine as far as known: those of c by machine_id, the whole job's ranks on
// this node as the launcher reports them (Open MPI, MPICH/Hydra), or the most that an earlier
// count of this process saw (e.g. over MPI_COMM_WORLD), whichever is largest. Collective over c.
inline int ranks_sharing_this_host(MPI_Comm c) {
  int n = ranks_on_this_host(c);
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* v = std::getenv(var)) n = std::max(n, std::atoi(v));
  auto& seen = detail::most_ranks_seen_on_host();
  int prev = seen.load();
  while (n > prev && !seen.compare_exchange_weak(prev, n)) {
  }
  return std::max(n, prev);
}

// The MPI datatype of an element type; the 16-bit types travel as 16-bit words (MPI has no
// bfloat16 or binary16 of its own), summed by sum_op<T>.
template <class T>
MPI_Datatype datatype_of() {
  if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  else return MPI_UINT16_T;
}

namespace detail {
template <class T>
void half_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = T(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}
}  // namespace detail

// The sum of the native collectives for T: MPI_SUM, or for a 16-bit type an operation (made
// once, commutative) that adds in float and rounds each sum once to nearest even.
template <class T>
MPI_Op sum_op() {
  if constexpr (half_element<T>) {
    static const MPI_Op op = [] {
      MPI_Op o = MPI_OP_NULL;
      HCOMM_MPI_CHECK(MPI_Op_create(&detail::half_sum<T>, 1, &o));
      return o;
    }();
    return op;
  } else {
    return MPI_SUM;
  }
}

}  // namespace hcomm::mpi
