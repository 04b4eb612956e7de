// hcomm/transport/nccl.hpp: NCCL as a lockstep backend (transport/lockstep.hpp): frames and
// uncompressed values move between device buffers with ncclSend/ncclRecv and NCCL's own
// collectives; sizes, validation and the broadcast's frame sizes go over MPI.
//
//   hcomm::exec::cuda ex{stream};
//   hcomm::algorithm::basic_context<hcomm::exec::cuda, hcomm::transport::nccl> cx(MPI_COMM_WORLD, {}, "dp", ex);
//   hcomm::algorithm::allreduce(cx, hcomm::codec::parse_config("zfp:8"), std::span<float>(d_grads, n));
//
// A context makes three NCCL communicators over its ranks (one per lane: the ring's rounds
// and the collectives; point-to-point to higher ranks; to lower ranks), each with its own
// non-blocking stream, on the CUDA device current when the context is made. The codec
// work stays on the executor's stream: the host knows a frame is complete before it queues
// its send (it read the frame's size), and a received frame is decoded only after the host
// saw its lane's event. NCCL refuses two ranks on one GPU: the endpoint compares the ranks'
// GPU UUIDs first and stops all of them (errc::nccl_failure); share a GPU between ranks over
// transport::mpi_staged instead.
//
// The communicators are NCCL's non-blocking ones (the progress rule of transport/lockstep.hpp:
// NCCL sets up a connection the first time two ranks exchange on a communicator, and two
// ranks that both send first would each wait in a blocking set-up for the other). Each
// ncclGroupEnd then runs in a thread of NCCL's; a lane's later groups are held on the host,
// in order, until the one before is set up (NCCL takes no call on a communicator in
// progress), and a group's event is recorded once its kernels are on the lane's stream. The
// collectives (uncompressed data) are groups of the ring lane too, waited for on the host.
// Every wait moves the held groups of every NCCL context of the process (progress_registry;
// one that another thread is using is left to that thread), on that context's device.
//
// Errors: an NCCL call that fails, or an asynchronous error NCCL reports while the host
// waits, is an hcomm::error(errc::nccl_failure) naming the call, file:line and NCCL's text.
//
// This header needs nvcc (CUDA code) and <nccl.h>; link libnccl (CMake: the toolkit's
// libnccl, see tests/comm/CMakeLists.txt).
#pragma once

#if !defined(__CUDACC__)
#error "hcomm/transport/nccl.hpp is CUDA code: compile this file with nvcc"
#else

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <time.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/core/half.hpp"
#include "hcomm/exec/cuda.hpp"
#include "hcomm/transport/lockstep.hpp"
#include "hcomm/transport/mpi.hpp"

#define HCOMM_NCCL_CHECK(expr)                                                                        \
  do {                                                                                                \
    const ncclResult_t hcomm_nccl_rc_ = (expr);                                                       \
    if (hcomm_nccl_rc_ != ncclSuccess)                                                                \
      ::hcomm::fail(::hcomm::errc::nccl_failure, std::string(#expr) + " at " + HCOMM_WHERE_ + ": " +  \
                                                     ::ncclGetErrorString(hcomm_nccl_rc_));           \
  } while (0)

namespace hcomm::transport {

struct nccl_backend {
  static constexpr const char* name = "nccl";
  // Device memory of the CUDA executor only (NCCL does not read pageable host memory).
  template <class Exec>
  static constexpr bool reaches = std::is_same_v<Exec, exec::cuda>;
  template <class Exec>
  static constexpr bool stages = false;

  struct group_record;
  struct ticket {
    group_record* group = nullptr;
  };
  // A group's operations, kept on the host until its lane takes it; its event is recorded
  // once NCCL has put its kernels on the lane's stream.
  struct group_record {
    enum kind_t { send, recv, allreduce, reduce_scatter, allgather, broadcast };
    struct op {
      kind_t kind;
      const void* in;
      void* out;
      std::size_t count;
      ncclDataType_t type;
      int peer;  // send, recv: the peer; broadcast: the root
    };
    std::vector<op> ops;
    int lane = 0;
    cudaEvent_t event = nullptr;
    std::string failure;  // why NCCL refused it or failed it (test() raises it)
  };

  class endpoint {
   public:
    // (Other contexts' waits may move this endpoint's queues from any thread: NCCL and CUDA
    // take calls on one communicator from one thread at a time, which progress_mutex keeps.)
    static constexpr bool polled_from_any_thread = true;

    explicit endpoint(MPI_Comm c) {
      int rank = 0, size = 1;
      HCOMM_MPI_CHECK(MPI_Comm_rank(c, &rank));
      HCOMM_MPI_CHECK(MPI_Comm_size(c, &size));
      HCOMM_CUDA_CHECK(cudaGetDevice(&device_));
      refuse_shared_gpu(c, rank, size);
      try {
        for (auto& l : lanes_) {
          // rank 0's id and whether it got one, so that a failure there stops every rank
          struct {
            ncclUniqueId id;
            int rc;
          } got{};
          if (rank == 0) got.rc = static_cast<int>(ncclGetUniqueId(&got.id));
          HCOMM_MPI_CHECK(MPI_Bcast(&got, sizeof got, MPI_BYTE, 0, c));
          if (got.rc != ncclSuccess)
            hcomm::fail(errc::nccl_failure, std::string("ncclGetUniqueId on rank 0 failed: ") +
                                                ncclGetErrorString(static_cast<ncclResult_t>(got.rc)));
          HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking));
          ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
          config.blocking = 0;
          ncclResult_t rc = ncclCommInitRankConfig(&l.comm, size, got.id, rank, &config);
          if (rc == ncclInProgress) rc = settled_state(l.comm);
          if (rc != ncclSuccess)  // (release() aborts the handle, which also joins NCCL's set-up thread)
            hcomm::fail(errc::nccl_failure,
                        std::string("ncclCommInitRankConfig (rank ") + std::to_string(rank) + " of " +
                            std::to_string(size) + ", CUDA device " + std::to_string(device_) + ") at " + HCOMM_WHERE_ +
                            ": " + ncclGetErrorString(rc) +
                            (rc == ncclInvalidUsage ? " (NCCL refuses two ranks on one GPU: give each rank its own "
                                                      "device, or share one over transport::mpi_staged)"
                                                    : ""));
        }
        progress_registry<endpoint>::add(this);
      } catch (...) {
        release();
        throw;
      }
    }
    endpoint(const endpoint&) = delete;
    endpoint& operator=(const endpoint&) = delete;
    ~endpoint() {
      progress_registry<endpoint>::remove(this);
      std::lock_guard<std::mutex> g(mu_);
      release();
    }

    // NCCL refuses two ranks on one GPU, but only on the ranks that share it; the others would
    // wait in ncclCommInitRank for ever. So every rank compares the GPUs' UUIDs first, and all
    // stop with the same message.
    void refuse_shared_gpu(MPI_Comm c, int rank, int size) const {
      cudaDeviceProp prop{};
      HCOMM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
      std::vector<cudaUUID_t> all(static_cast<std::size_t>(size));
      HCOMM_MPI_CHECK(MPI_Allgather(&prop.uuid, sizeof(cudaUUID_t), MPI_BYTE, all.data(), sizeof(cudaUUID_t), MPI_BYTE, c));
      for (int a = 0; a < size; ++a)
        for (int b = a + 1; b < size; ++b)
          if (std::memcmp(&all[static_cast<std::size_t>(a)], &all[static_cast<std::size_t>(b)], sizeof(cudaUUID_t)) == 0)
            hcomm::fail(errc::nccl_failure,
                        "transport::nccl: ranks " + std::to_string(a) + " and " + std::to_string(b) +
                            " of the communicator share one GPU (this is rank " + std::to_string(rank) +
                            "); NCCL refuses two ranks on one GPU: give each rank its own device, or share one "
                            "over transport::mpi_staged");
    }

    void group(lane l) {
      open_ = take_record();
      open_->lane = static_cast<int>(l);
    }
    void send(const void* p, std::size_t bytes, int peer) {
      open_->ops.push_back({group_record::send, p, nullptr, bytes, ncclUint8, peer});
    }
    void recv(void* p, std::size_t bytes, int peer) {
      open_->ops.push_back({group_record::recv, nullptr, p, bytes, ncclUint8, peer});
    }
    // Queues the group on its lane (given to NCCL now if the lane is free). Whatever fails
    // is kept in the group's record, and its ticket raises it.
    ticket end_group() {
      std::lock_guard<std::mutex> g(mu_);
      const on_device d(device_);
      lane_state& l = lanes_[static_cast<std::size_t>(open_->lane)];
      l.held.push_back(open_);
      const ticket t{open_};
      open_ = nullptr;
      advance_lane(l);
      return t;
    }
    // Whether the group finished: its failure, or NCCL's asynchronous error on its lane (a
    // peer that failed would otherwise leave this rank waiting for ever), is raised. A
    // finished ticket's record goes back to the pool: test it no more.
    bool test(const ticket& t) {
      std::lock_guard<std::mutex> g(mu_);
      const on_device d(device_);
      advance();
      progress_registry<endpoint>::poll_others(this);
      group_record* r = t.group;
      if (!r->failure.empty()) {
        const std::string why = r->failure;
        recycle(r);
        hcomm::fail(errc::nccl_failure, why);
      }
      if (!r->event) {
        check_async(lanes_[static_cast<std::size_t>(r->lane)]);
        return false;
      }
      const cudaError_t q = cudaEventQuery(r->event);
      if (q == cudaErrorNotReady) {
        check_async(lanes_[static_cast<std::size_t>(r->lane)]);
        return false;
      }
      if (q != cudaSuccess) r->event = nullptr;  // (not reused; destroyed with the endpoint)
      recycle(r);
      HCOMM_CUDA_CHECK(q);
      return true;
    }
    // NCCL's kernels move on their own; held groups move on when their lane is set up.
    void poll() {
      std::lock_guard<std::mutex> g(mu_);
      const on_device d(device_);
      advance();
      progress_registry<endpoint>::poll_others(this);
    }
    // The context is going (or leaked): its held groups are dropped (the buffers they name go
    // with it), and no other context's wait moves it any more.
    void orphan() noexcept {
      progress_registry<endpoint>::remove(this);
      std::lock_guard<std::mutex> g(mu_);
      for (auto& l : lanes_) l.held.clear();
    }
    // (progress_registry: with progress_mutex() held.)
    std::mutex& progress_mutex() noexcept { return mu_; }
    void advance_quietly() noexcept {
      const on_device d(device_);
      advance();
    }
    // Receives nobody wants land here; earlier buffers are kept until the endpoint goes (a
    // queued receive may still write into one).
    void* discard(std::size_t bytes) {
      std::lock_guard<std::mutex> g(mu_);
      const on_device d(device_);
      if (discard_.empty() || discard_sizes_.back() < bytes) {
        void* p = nullptr;
        HCOMM_CUDA_CHECK(cudaMalloc(&p, bytes));
        discard_.push_back(p);
        discard_sizes_.push_back(bytes);
      }
      return discard_.back();
    }

    // The collectives: a group of the ring lane each, waited for on the host (the held
    // groups moved on meanwhile).
    template <class T>
    void sum_allreduce(T* data, std::size_t n) {
      collective({group_record::allreduce, data, data, n, type_of<T>(), 0});
    }
    template <class T>
    void sum_reduce_scatter(const T* in, T* out, std::size_t m) {
      collective({group_record::reduce_scatter, in, out, m, type_of<T>(), 0});
    }
    template <class T>
    void allgather(const T* in, T* out, std::size_t m) {
      collective({group_record::allgather, in, out, m, type_of<T>(), 0});
    }
    template <class T>
    void broadcast_values(T* data, std::size_t n, int root) {
      collective({group_record::broadcast, data, data, n, type_of<T>(), root});
    }
    void broadcast_bytes(void* p, std::size_t bytes, int root) {
      collective({group_record::broadcast, p, p, bytes, ncclUint8, root});
    }

   private:
    struct lane_state {
      ncclComm_t comm = nullptr;
      cudaStream_t stream = nullptr;
      std::deque<group_record*> held;      // queued on the host, not yet given to NCCL
      group_record* setting_up = nullptr;  // given to NCCL, its communicator still in progress
      bool finalizing = false;             // (release)
    };
    // Makes the endpoint's device current for a scope (its events and streams are there; the
    // calling thread may be another context's, on another device).
    struct on_device {
      int saved = -1;
      explicit on_device(int dev) noexcept {
        int cur = 0;
        if (cudaGetDevice(&cur) == cudaSuccess && cur != dev && cudaSetDevice(dev) == cudaSuccess) saved = cur;
      }
      ~on_device() {
        if (saved >= 0) (void)cudaSetDevice(saved);
      }
      on_device(const on_device&) = delete;
      on_device& operator=(const on_device&) = delete;
    };
    // A communicator's state once it is no longer in progress (a non-blocking one's set-up or
    // finalize), or ncclInProgress still at the deadline (seconds_now()).
    static ncclResult_t settled_state(ncclComm_t comm, double deadline = HUGE_VAL) noexcept {
      const timespec tick{0, 20000};
      for (;;) {
        ncclResult_t st = ncclSuccess;
        const ncclResult_t rc = ncclCommGetAsyncError(comm, &st);
        if (rc != ncclSuccess) return rc;
        if (st != ncclInProgress || seconds_now() > deadline) return st;
        nanosleep(&tick, nullptr);
      }
    }
    // (With mu_ held, on device_.) Gives each lane's held groups to NCCL in order: on a
    // non-blocking communicator the next only once the one before is set up (its kernels on
    // the stream, where its event goes). Never throws: a group that fails keeps why.
    void advance() noexcept {
      for (auto& l : lanes_) advance_lane(l);
    }
    void advance_lane(lane_state& l) noexcept {
      if (l.setting_up) {
        ncclResult_t st = ncclSuccess;
        const ncclResult_t rc = ncclCommGetAsyncError(l.comm, &st);
        if (rc == ncclSuccess && st == ncclInProgress) return;
        group_record* g = l.setting_up;
        l.setting_up = nullptr;
        if (rc != ncclSuccess || st != ncclSuccess)
          g->failure = std::string("NCCL failed while setting up a group: ") +
                       ncclGetErrorString(rc != ncclSuccess ? rc : st) + " (" + HCOMM_WHERE_ + ")";
        else
          mark_queued(l, g);
      }
      while (!l.setting_up && !l.held.empty()) {
        group_record* g = l.held.front();
        l.held.pop_front();
        ncclResult_t rc = ncclGroupStart();
        for (std::size_t i = 0; i < g->ops.size() && (rc == ncclSuccess || rc == ncclInProgress); ++i)
          rc = issue(g->ops[i], l);
        if (rc == ncclSuccess || rc == ncclInProgress) rc = ncclGroupEnd();
        else (void)ncclGroupEnd();
        if (rc == ncclInProgress) l.setting_up = g;
        else if (rc == ncclSuccess) mark_queued(l, g);
        else g->failure = std::string("NCCL refused a group: ") + ncclGetErrorString(rc) + " (" + HCOMM_WHERE_ + ")";
      }
    }
    static ncclResult_t issue(const group_record::op& o, lane_state& l) {
      switch (o.kind) {
        case group_record::send: return ncclSend(o.in, o.count, o.type, o.peer, l.comm, l.stream);
        case group_record::recv: return ncclRecv(o.out, o.count, o.type, o.peer, l.comm, l.stream);
        case group_record::allreduce: return ncclAllReduce(o.in, o.out, o.count, o.type, ncclSum, l.comm, l.stream);
        case group_record::reduce_scatter: return ncclReduceScatter(o.in, o.out, o.count, o.type, ncclSum, l.comm, l.stream);
        case group_record::allgather: return ncclAllGather(o.in, o.out, o.count, o.type, l.comm, l.stream);
        case group_record::broadcast: return ncclBroadcast(o.in, o.out, o.count, o.type, o.peer, l.comm, l.stream);
      }
      return ncclInternalError;
    }
    void collective(const group_record::op& o) {
      group(lane::ring);
      open_->ops.push_back(o);
      const ticket t = end_group();
      const timespec tick{0, 20000};
      while (!test(t)) nanosleep(&tick, nullptr);
    }
    // The group's kernels are on the lane's stream: an event marks their end.
    void mark_queued(lane_state& l, group_record* g) noexcept {
      cudaEvent_t e = nullptr;
      if (!events_.empty()) {
        e = events_.back();
        events_.pop_back();
      } else if (const cudaError_t c = cudaEventCreateWithFlags(&e, cudaEventDisableTiming); c != cudaSuccess) {
        (void)cudaGetLastError();
        g->failure = std::string("cudaEventCreateWithFlags for an NCCL group: ") + cudaGetErrorString(c);
        return;
      } else {
        all_events_.push_back(e);
      }
      if (const cudaError_t c = cudaEventRecord(e, l.stream); c != cudaSuccess) {
        (void)cudaGetLastError();
        events_.push_back(e);
        g->failure = std::string("cudaEventRecord after an NCCL group: ") + cudaGetErrorString(c);
        return;
      }
      g->event = e;
    }
    group_record* take_record() {
      std::lock_guard<std::mutex> g(mu_);
      group_record* r;
      if (records_free_.empty()) {
        r = &records_.emplace_back();
      } else {
        r = records_free_.back();
        records_free_.pop_back();
      }
      r->ops.clear();
      r->event = nullptr;
      r->failure.clear();
      return r;
    }
    // (With mu_ held.) A record whose ticket is done: its event and itself back to the pools.
    void recycle(group_record* r) {
      if (r->event) events_.push_back(r->event);
      r->event = nullptr;
      records_free_.push_back(r);
    }
    template <class T>
    static ncclDataType_t type_of() {
      if constexpr (std::is_same_v<T, float>) return ncclFloat32;
      else if constexpr (std::is_same_v<T, double>) return ncclFloat64;
      else if constexpr (std::is_same_v<T, bf16>) return ncclBfloat16;
      else if constexpr (std::is_same_v<T, f16>) return ncclFloat16;
      else static_assert(sizeof(T) == 0, "hcomm: transport::nccl: no NCCL type for this element");
    }
    void check_async(lane_state& l) {
      ncclResult_t async = ncclSuccess;
      HCOMM_NCCL_CHECK(ncclCommGetAsyncError(l.comm, &async));
      if (async != ncclSuccess && async != ncclInProgress)
        hcomm::fail(errc::nccl_failure, std::string("NCCL reported an asynchronous error while this rank waited: ") +
                                            ncclGetErrorString(async) + " (" + HCOMM_WHERE_ + ")");
    }
    // Destroys what was made. Groups still held are dropped (the buffers they name may be gone
    // with their context); those NCCL is setting up are let finish and the communicators
    // finalized, as NCCL asks of non-blocking ones, within 10 s in all (a peer that stopped
    // would hold them for ever); after an error, or past that time, the communicators are
    // aborted, not destroyed (destroy would wait for operations that cannot finish).
    void release() noexcept {
      const on_device d(device_);
      const double deadline = seconds_now() + 10.0;
      const timespec tick{0, 100000};
      for (auto& l : lanes_) l.held.clear();
      for (;;) {
        advance();
        bool idle = true;
        for (auto& l : lanes_) idle = idle && !l.setting_up;
        if (idle || seconds_now() > deadline) break;
        nanosleep(&tick, nullptr);
      }
      for (auto& l : lanes_) {
        if (!l.comm) continue;
        ncclResult_t async = ncclSuccess;
        l.finalizing = ncclCommGetAsyncError(l.comm, &async) == ncclSuccess && async == ncclSuccess;
        if (l.finalizing) {
          const ncclResult_t rc = ncclCommFinalize(l.comm);
          l.finalizing = rc == ncclSuccess || rc == ncclInProgress;
        }
      }
      for (auto& l : lanes_) {
        if (!l.comm) continue;
        const bool healthy = l.finalizing && settled_state(l.comm, deadline) == ncclSuccess;
        if (healthy) ncclCommDestroy(l.comm);
        else ncclCommAbort(l.comm);
        l.comm = nullptr;
      }
      for (auto& l : lanes_) {
        l.setting_up = nullptr;
        if (l.stream) cudaStreamDestroy(l.stream);
        l.stream = nullptr;
      }
      for (cudaEvent_t e : all_events_) cudaEventDestroy(e);
      all_events_.clear();
      events_.clear();
      for (void* p : discard_) cudaFree(p);
      discard_.clear();
      discard_sizes_.clear();
    }
    static double seconds_now() noexcept {
      timespec t{};
      clock_gettime(CLOCK_MONOTONIC, &t);
      return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
    }

    int device_ = 0;
    std::array<lane_state, lane_count> lanes_{};
    group_record* open_ = nullptr;      // (its caller's only, between group() and end_group())
    std::deque<group_record> records_;  // (a deque: records stay where they are)
    std::vector<group_record*> records_free_;
    std::vector<cudaEvent_t> events_, all_events_;
    std::vector<void*> discard_;
    std::vector<std::size_t> discard_sizes_;
    std::mutex mu_;  // the lanes, events and records: this endpoint's caller, or another context's wait
  };
};

// NCCL, with the lockstep transport's sizes, rounds and lanes (transport/lockstep.hpp).
using nccl = lockstep<nccl_backend>;

}  // namespace hcomm::transport

#endif  // __CUDACC__
