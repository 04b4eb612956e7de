// hcomm/transport/mpi_exact.hpp: MPI held to NCCL's rules, as a lockstep backend
// (transport/lockstep.hpp): transport::mpi_exact runs everything the NCCL transport runs,
// in host memory (device executors through host staging, as transport/mpi_staged.hpp), so
// that CI checks the rounds of the ring, the lanes and the announcements on the CPU.
//
//   hcomm::algorithm::basic_context<hcomm::exec::host_check, hcomm::transport::mpi_exact> cx(comm);
//
// Each lane is a duplicate of the communicator with one queue of groups; the group at the
// front has its operations posted (synchronous-mode sends, MPI_Issend, so a send completes
// only once its receive is posted, as in NCCL), the next one is posted when it has
// completed, and a receive must get exactly the size it asked for (errc::mismatch, where
// NCCL would hang or corrupt). NCCL's connection set-up is modelled too: the first group
// that sends to (or receives from) a peer on a lane exchanges a handshake with that peer's
// first group receiving from (sending to) this rank there, in the background, and the
// lane's groups are posted once it is done (the progress rule of transport/lockstep.hpp).
// The queues move whenever the host waits for a ticket or a collective, as held groups on
// NCCL do; a pattern that would deadlock on NCCL deadlocks here too (a test's timeout finds
// it).
#pragma once
#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/exec/host_staging.hpp"
#include "hcomm/transport/lockstep.hpp"
#include "hcomm/transport/mpi.hpp"

namespace hcomm::transport {

struct mpi_exact_backend {
  static constexpr const char* name = "mpi_exact";
  template <class Exec>
  static constexpr bool reaches = !Exec::is_device || exec::host_staging<Exec>;
  template <class Exec>
  static constexpr bool stages = Exec::is_device;

  struct ticket {
    int lane = 0;
    std::uint64_t seq = 0;
  };

  class endpoint {
   public:
    // (Other contexts' waits move this endpoint's queues only on the thread that made it: its
    // progress calls MPI, which need not take calls from two threads at once.)
    static constexpr bool polled_from_any_thread = false;

    explicit endpoint(MPI_Comm c) : comm_(c) {
      const int size = mpi::size(c);
      for (auto& l : lanes_) {
        l.comm = mpi::dup(c);
        l.to.resize(static_cast<std::size_t>(size));
        l.from.resize(static_cast<std::size_t>(size));
      }
      progress_registry<endpoint>::add(this);
    }
    endpoint(const endpoint&) = delete;
    endpoint& operator=(const endpoint&) = delete;
    ~endpoint() {
      progress_registry<endpoint>::remove(this);
      if (mpi::finalized()) return;
      const auto drop = [](MPI_Request& r) {
        if (r != MPI_REQUEST_NULL) {
          MPI_Cancel(&r);
          MPI_Request_free(&r);
        }
      };
      for (auto& l : lanes_) {  // operations still posted (an interrupted pattern) are cancelled or freed
        for (auto& g : l.q)
          for (auto& r : g.reqs) drop(r);
        for (auto* side : {&l.to, &l.from})
          for (auto& k : *side)
            for (auto& r : k.hs) drop(r);
      }
    }

    void group(lane l) {
      cur_ = static_cast<int>(l);
      open_ = {};
    }
    void send(const void* p, std::size_t bytes, int peer) { open_.ops.push_back({true, const_cast<void*>(p), bytes, peer}); }
    void recv(void* p, std::size_t bytes, int peer) { open_.ops.push_back({false, p, bytes, peer}); }
    ticket end_group() {
      std::lock_guard<std::mutex> g(mu_);
      if (pending_) {  // (an error met by another context's wait: raised before this group is queued)
        open_ = {};
        own_progress();
      }
      lane_state& l = lanes_[static_cast<std::size_t>(cur_)];
      for (const op& o : open_.ops) start_connect(l, o);
      const std::uint64_t seq = ++l.queued;
      open_.seq = seq;
      l.q.push_back(std::move(open_));
      open_ = {};
      own_progress();
      return {cur_, seq};
    }
    bool test(const ticket& t) {
      {
        std::lock_guard<std::mutex> g(mu_);
        own_progress();
        if (lanes_[static_cast<std::size_t>(t.lane)].done >= t.seq) return true;
      }
      progress_registry<endpoint>::poll_others(this);
      return false;
    }
    void poll() {
      {
        std::lock_guard<std::mutex> g(mu_);
        own_progress();
      }
      progress_registry<endpoint>::poll_others(this);
    }
    // The context is going (or leaked): groups not posted yet are dropped (the buffers they
    // name go with it), and no other context's wait moves it any more.
    void orphan() noexcept {
      progress_registry<endpoint>::remove(this);
      std::lock_guard<std::mutex> g(mu_);
      for (auto& l : lanes_)
        while (!l.q.empty() && !l.q.back().posted) l.q.pop_back();
    }
    // (progress_registry: with progress_mutex() held.) An error here is kept for this
    // endpoint's own next call.
    std::mutex& progress_mutex() noexcept { return mu_; }
    void advance_quietly() noexcept {
      if (pending_) return;
      try {
        progress();
      } catch (...) {
        pending_ = std::current_exception();
      }
    }
    // Receives nobody wants land here; grown buffers are kept (a queued receive may write
    // into an earlier one).
    void* discard(std::size_t bytes) {
      if (discard_.empty() || discard_.back().size() < bytes) discard_.emplace_back(bytes);
      return discard_.back().data();
    }

    // The collectives: MPI's, once every rank has come to them (a non-blocking barrier, the
    // lanes' queues moved on meanwhile: a peer may wait for a group held here before it comes).
    // (MPI's blocking collectives, not its non-blocking ones: those may sum in another order.)
    template <class T>
    void sum_allreduce(T* data, std::size_t n) {
      all_here();
      HCOMM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, mpi::count_of(n, "allreduce elements"), mpi::datatype_of<T>(),
                                    mpi::sum_op<T>(), comm_));
    }
    template <class T>
    void sum_reduce_scatter(const T* in, T* out, std::size_t m) {
      all_here();
      HCOMM_MPI_CHECK(MPI_Reduce_scatter_block(in, out, mpi::count_of(m, "reduce_scatter elements"),
                                               mpi::datatype_of<T>(), mpi::sum_op<T>(), comm_));
    }
    template <class T>
    void allgather(const T* in, T* out, std::size_t m) {
      all_here();
      HCOMM_MPI_CHECK(MPI_Allgather(in, mpi::count_of(m, "allgather elements"), mpi::datatype_of<T>(), out,
                                    static_cast<int>(m), mpi::datatype_of<T>(), comm_));
    }
    template <class T>
    void broadcast_values(T* data, std::size_t n, int root) {
      all_here();
      HCOMM_MPI_CHECK(MPI_Bcast(data, mpi::count_of(n, "broadcast elements"), mpi::datatype_of<T>(), root, comm_));
    }
    void broadcast_bytes(void* p, std::size_t bytes, int root) {
      all_here();
      auto* b = static_cast<unsigned char*>(p);
      for (std::size_t at = 0; at < bytes;) {
        const std::size_t piece = bytes - at < (std::size_t{1} << 30) ? bytes - at : (std::size_t{1} << 30);
        HCOMM_MPI_CHECK(MPI_Bcast(b + at, static_cast<int>(piece), MPI_BYTE, root, comm_));
        at += piece;
      }
    }

   private:
    struct op {
      bool send;
      void* p;
      std::size_t bytes;
      int peer;
    };
    struct group_ops {
      std::vector<op> ops;
      std::vector<MPI_Request> reqs;
      std::uint64_t seq = 0;
      bool posted = false;
    };
    // One direction of a connection (this rank's sending or receiving side toward a peer):
    // unset until a group first uses it, then a handshake {this side's note, the peer's}.
    struct connector {
      bool started = false;
      MPI_Request hs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    };
    struct lane_state {
      mpi::owned_comm comm;
      std::deque<group_ops> q;
      std::uint64_t queued = 0, done = 0;
      std::vector<connector> to, from;  // per peer: the sending side, the receiving side
    };
    // Handshake tags (payloads use tag 0): a sending side's note, a receiving side's note.
    static constexpr int tag_sender = 1, tag_receiver = 2;
    static connector& connector_of(lane_state& l, const op& o) {
      return (o.send ? l.to : l.from)[static_cast<std::size_t>(o.peer)];
    }
    void start_connect(lane_state& l, const op& o) {
      connector& k = connector_of(l, o);
      if (k.started) return;
      k.started = true;
      static const char note = 0;
      HCOMM_MPI_CHECK(MPI_Isend(&note, 0, MPI_BYTE, o.peer, o.send ? tag_sender : tag_receiver, l.comm.get(), &k.hs[0]));
      HCOMM_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, o.peer, o.send ? tag_receiver : tag_sender, l.comm.get(), &k.hs[1]));
    }
    // Whether every connection g uses is set up (moving the handshakes on).
    bool connected(lane_state& l, const group_ops& g) {
      for (const op& o : g.ops) {
        connector& k = connector_of(l, o);
        int flag = 0;
        HCOMM_MPI_CHECK(MPI_Testall(2, k.hs, &flag, MPI_STATUSES_IGNORE));
        if (!flag) return false;
      }
      return true;
    }

    // Posts the front group of each lane once its connections are set up; retires it when
    // all its operations completed (each receive with exactly its size), and posts the next.
    void progress() {
      for (auto& l : lanes_) {
        while (!l.q.empty()) {
          group_ops& g = l.q.front();
          if (!g.posted) {
            if (!connected(l, g)) break;
            post(l, g);
          }
          int flag = 0;
          std::vector<MPI_Status> st(g.reqs.size());
          const int rc = MPI_Testall(static_cast<int>(g.reqs.size()), g.reqs.data(), &flag, st.data());
          if (rc != MPI_SUCCESS) {
            for (std::size_t i = 0; i < st.size(); ++i)
              if (st[i].MPI_ERROR != MPI_SUCCESS && st[i].MPI_ERROR != MPI_ERR_PENDING)
                fail_op(g.ops[i], st[i].MPI_ERROR);
            mpi::fail_mpi(rc, "MPI_Testall", HCOMM_WHERE_);
          }
          if (!flag) break;
          for (std::size_t i = 0; i < g.ops.size(); ++i)
            if (!g.ops[i].send) {
              int got = 0;
              MPI_Get_count(&st[i], MPI_BYTE, &got);
              if (static_cast<std::size_t>(got) != g.ops[i].bytes)
                hcomm::fail(errc::mismatch, std::string("transport::mpi_exact: rank ") + std::to_string(g.ops[i].peer) +
                                                " sent " + std::to_string(got) + " bytes where the receive takes exactly " +
                                                std::to_string(g.ops[i].bytes) + " (NCCL's rule)");
            }
          l.done = g.seq;
          l.q.pop_front();
        }
      }
    }
    void post(lane_state& l, group_ops& g) {
      g.reqs.assign(g.ops.size(), MPI_REQUEST_NULL);
      for (std::size_t i = 0; i < g.ops.size(); ++i) {
        const op& o = g.ops[i];
        const int n = mpi::count_of(o.bytes, "payload");
        if (o.send) HCOMM_MPI_CHECK(MPI_Issend(o.p, n, MPI_BYTE, o.peer, 0, l.comm.get(), &g.reqs[i]));
        else HCOMM_MPI_CHECK(MPI_Irecv(o.p, n, MPI_BYTE, o.peer, 0, l.comm.get(), &g.reqs[i]));
      }
      g.posted = true;
    }
    void all_here() {
      MPI_Request m = MPI_REQUEST_NULL;
      HCOMM_MPI_CHECK(MPI_Ibarrier(comm_, &m));
      lockstep_detail::finish_polling(&m, "barrier", [this] { poll(); });
    }
    // (With mu_ held.) An error another context's wait met here comes first.
    void own_progress() {
      if (pending_) {
        const std::exception_ptr e = pending_;
        pending_ = nullptr;
        std::rethrow_exception(e);
      }
      progress();
    }
    [[noreturn]] static void fail_op(const op& o, int rc) {
      int cls = rc;
      MPI_Error_class(rc, &cls);
      if (cls == MPI_ERR_TRUNCATE)
        hcomm::fail(errc::mismatch, std::string("transport::mpi_exact: rank ") + std::to_string(o.peer) +
                                        " sent more than the " + std::to_string(o.bytes) +
                                        " bytes the receive takes exactly (NCCL's rule)");
      mpi::fail_mpi(rc, o.send ? "MPI_Issend" : "MPI_Irecv", HCOMM_WHERE_);
    }

    MPI_Comm comm_;
    std::array<lane_state, lane_count> lanes_;
    group_ops open_;
    int cur_ = 0;
    std::vector<std::vector<unsigned char>> discard_;
    std::exception_ptr pending_;  // (advance_quietly)
    std::mutex mu_;               // the lanes: this endpoint's caller, or another context's wait
  };
};

// MPI with NCCL's rules (see the header comment): what CI runs in place of transport::nccl.
using mpi_exact = lockstep<mpi_exact_backend>;

}  // namespace hcomm::transport
