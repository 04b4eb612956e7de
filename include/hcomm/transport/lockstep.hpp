// hcomm/transport/lockstep.hpp: transports whose payloads move by NCCL's rules, built from a
// payload backend: transport/nccl.hpp (NCCL on device memory) and transport/mpi_exact.hpp
// (MPI held to the same rules: what CI runs, and a reference for new backends).
//
//   hcomm::algorithm::basic_context<hcomm::exec::cuda, hcomm::transport::nccl> cx(MPI_COMM_WORLD, {}, "dp", ex);
//   hcomm::algorithm::allreduce(cx, cfg, std::span<float>(d_grads, n));      // the rounds of ring_lockstep.hpp
//
// The rules (NCCL's point-to-point semantics): a receive names exactly the size the sender
// sends; there are no tags, a peer's payloads arrive in the order they were sent; operations
// are queued on a lane (an NCCL communicator and its stream) and run in the order queued,
// each group (sends and receives started together) finishing before the next one starts;
// a send finishes only once its receive has been queued. So a receive queued early blocks
// the sends queued after it, and sizes must be known before a receive is queued. What this
// transport adds to a backend:
// - sizes: every payload is announced by a small host message over MPI (the communicator the
//   context duplicated), and the receiver queues a receive of exactly that size;
// - the ring (algorithm/ring_lockstep.hpp, chosen by lockstep_rounds) runs in rounds: per
//   round a rank sends at most one frame to its right and receives at most one from its
//   left, as one group on the ring lane after the two sizes crossed; every rank queues the
//   same rounds in the same order, so the groups pair up and no wait closes a cycle;
// - point-to-point messages go on two lanes: up (to a higher rank) and down (to a lower
//   one), so that an exchange between two ranks, or a pipeline's activations going up while
//   its gradients come down, never has a receive queued behind a send that waits for it. A
//   receive's payload is queued when its request is waited for (after its announcement, and
//   after every receive posted earlier for the same peer): messages from one peer match the
//   receives in posting order, and their tags must agree (errc::mismatch otherwise, since
//   there is nothing else to match them by). A message to oneself is refused (a queued send
//   to oneself would wait for a receive queued behind it);
// - uncompressed data and the broadcast of frames: the backend's own collectives;
//   validation, frame sizes of the broadcast and the per-host thread fit: MPI.
// A payload that cannot be taken (larger than the receive's buffer, or under another tag)
// is still received, into a discard buffer, so that the lane's order stays intact, and the
// request reports errc::mismatch.
//
// Progress: NCCL connects two ranks on a communicator the first time a group between them
// runs there, and a blocking communicator would wait in that set-up for the peer's matching
// group; a point-to-point receive is queued only at wait, so two ranks that both send first
// would each wait in the other's. So backends set groups up in the background (NCCL's
// non-blocking communicators) and hold a lane's later groups on the host until the one
// before is set up. Held groups move only when the host calls into the backend, so every
// step of this transport that waits (for a ticket, a size, an announcement, a collective,
// the small values' MPI collectives) keeps calling test() or poll() meanwhile, and every
// wait moves every context's held groups (progress_registry below; transport::mpi_exact's
// only those of contexts made on the same thread). Between calls into hcomm a held group
// waits (a send queued behind another on one lane goes to NCCL at the next wait), as MPI's
// messages move only inside MPI's calls.
//
// A backend provides: name; reaches<Exec> and stages<Exec> (as transport/mpi_host.hpp);
// an endpoint made collectively from an MPI communicator, with group(lane) ... send(p,
// bytes, peer) / recv(p, bytes, peer) ... end_group() -> ticket, test(ticket) (has that
// group finished; moves the queues along, this context's and, through progress_registry,
// the others'), poll() (the same without a ticket), orphan() (drop what it holds and leave
// the registry: the context is going, or leaked), discard(bytes), and the collectives
// sum_allreduce, sum_reduce_scatter, allgather, broadcast_values and broadcast_bytes on the
// memory it reaches (returning once done, the held groups moved on meanwhile).
#pragma once
#include <mpi.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hcomm/core/error.hpp"
#include "hcomm/transport/mpi.hpp"
#include "hcomm/transport/threads.hpp"

namespace hcomm::transport {

// The ordered queues of a lockstep backend: the ring's rounds and the collectives; point-to-
// point messages to higher ranks; to lower ranks.
enum class lane : int { ring = 0, up = 1, down = 2 };
inline constexpr int lane_count = 3;

// The live endpoints of a backend in this process, so that a wait in one context moves the
// groups held in the others (a peer may wait for one of those before it comes to this
// context's operation), as a wait in any MPI call moves all of MPI's. An endpoint provides
// progress_mutex() (held by its own calls) and advance_quietly() (moves its queues, keeping
// any error for its own caller). Endpoints another thread is using are skipped, and so, where
// the backend says so (polled_from_any_thread == false: its progress calls MPI, and a
// program whose threads call MPI at once needs MPI_THREAD_MULTIPLE), are those made by
// another thread. An endpoint whose context is going, or leaked, leaves the list (its held
// groups name buffers gone with the context).
template <class Endpoint>
class progress_registry {
 public:
  static void add(Endpoint* e) {
    std::lock_guard<std::mutex> g(list().mu);
    list().all.push_back({e, std::this_thread::get_id()});
  }
  static void remove(Endpoint* e) noexcept {
    std::lock_guard<std::mutex> g(list().mu);
    auto& all = list().all;
    for (auto it = all.begin(); it != all.end(); ++it)
      if (it->e == e) {
        all.erase(it);
        return;
      }
  }
  static void poll_others(const Endpoint* self) noexcept {
    // (A thread that finds another polling leaves it to that one, where that one may move
    // every endpoint; else it waits its turn: the holder only try-locks endpoints.)
    std::unique_lock<std::mutex> g(list().mu, std::defer_lock);
    if constexpr (Endpoint::polled_from_any_thread) {
      if (!g.try_lock()) return;
    } else {
      g.lock();
    }
    const auto me = std::this_thread::get_id();
    for (const entry& x : list().all) {
      if (x.e == self || (!Endpoint::polled_from_any_thread && x.thread != me)) continue;
      std::unique_lock<std::mutex> held(x.e->progress_mutex(), std::try_to_lock);
      if (held.owns_lock()) x.e->advance_quietly();
    }
  }

 private:
  struct entry {
    Endpoint* e;
    std::thread::id thread;
  };
  struct registry {
    std::mutex mu;
    std::vector<entry> all;
  };
  static registry& list() {  // (never destroyed: a context may outlive static destruction)
    static registry* r = new registry;
    return *r;
  }
};

namespace lockstep_detail {
inline constexpr int tag_announce = 0x4850;  // point-to-point announcements {tag, bytes}
inline constexpr int tag_round = 0x4851;     // a round's frame size
inline constexpr int failed = -1;            // status code of a failure (see failure())
inline constexpr std::uint64_t no_payload = ~std::uint64_t{0};

// The failure a status code `failed` stands for (set where it happened, on this thread).
struct failure_note {
  errc code = errc::mpi_failure;
  std::string message;
};
inline failure_note& failure() {
  thread_local failure_note f;
  return f;
}

// Completes an MPI request the other ranks are in (a collective), calling poll() between
// tests. An error poll() raises comes only once the request is done: its buffers must outlive
// it, MPI cannot cancel it, and the other ranks are in it.
template <class Poll>
void finish_polling(MPI_Request* m, const char* what, Poll&& poll) {
  std::exception_ptr err;
  while (*m != MPI_REQUEST_NULL) {
    int done = 0;
    const int rc = MPI_Test(m, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) mpi::fail_mpi(rc, what, HCOMM_WHERE_);
    if (done) break;
    if (!err) {
      try {
        poll();
      } catch (...) {
        err = std::current_exception();
      }
    }
    mpi::pause_between_tests(mpi::yield_between_tests);
  }
  if (err) std::rethrow_exception(err);
}
}  // namespace lockstep_detail

template <class Backend>
struct lockstep {
  static constexpr const char* name = Backend::name;
  template <class Exec>
  static constexpr bool reaches = Backend::template reaches<Exec>;
  template <class Exec>
  static constexpr bool stages = Backend::template stages<Exec>;
  // The ring runs in rounds (algorithm/ring_lockstep.hpp), not as ring_pipeline's messages.
  static constexpr bool lockstep_rounds = true;
  static constexpr int success = MPI_SUCCESS;
  using endpoint_type = typename Backend::endpoint;
  using ticket_type = typename Backend::ticket;

  struct state;
  struct request_state {
    enum kind_t { send, recv, round } kind = send;
    state* owner = nullptr;
    int peer = -1;                   // recv: the sender
    int tag = 0;
    void* in = nullptr;              // recv: where the payload goes (head part, with a header)
    std::size_t cap = 0;             // recv: its capacity
    void* data = nullptr;            // recv with a header: the rest
    std::size_t head_bytes = 0;      // recv with a header: the head part
    std::uint64_t ann[2] = {0, 0};   // announcement {tag, bytes} (recv: received into)
    std::size_t got = 0;             // payload bytes received
    MPI_Request mpi = MPI_REQUEST_NULL;
    ticket_type ticket{};
    bool queued = false;             // payload operations queued (ticket valid)
    bool bad = false;                // failed when queued: code and message below
    bool unwanted = false;           // abandoned: its payload goes to the discard buffer
    errc code = errc::mismatch;
    std::string message;
  };
  struct state {
    mpi::owned_comm comm;            // sizes, validation, the host's collectives
    int rank = 0, size = 1;
    endpoint_type ep;
    std::deque<request_state> pool;  // (a deque: states stay where they are)
    std::vector<request_state*> free;
    std::vector<std::deque<request_state*>> waiting;  // per peer: receives not queued yet, posting order
    explicit state(mpi::owned_comm c)
        : comm(std::move(c)), rank(mpi::rank(comm.get())), size(mpi::size(comm.get())), ep(comm.get()),
          waiting(static_cast<std::size_t>(size)) {}
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {  // announcements that never came (receives abandoned) are cancelled
      if (mpi::finalized()) return;
      for (auto& w : waiting)
        for (request_state* x : w)
          if (x->mpi != MPI_REQUEST_NULL) {
            MPI_Cancel(&x->mpi);
            MPI_Request_free(&x->mpi);
          }
    }
    request_state* acquire(typename request_state::kind_t k) {
      request_state* r;
      if (free.empty()) {
        r = &pool.emplace_back();
      } else {
        r = free.back();
        free.pop_back();
        *r = request_state{};
      }
      r->kind = k;
      r->owner = this;
      return r;
    }
    void release(request_state* r) { free.push_back(r); }
  };

  using user_comm_type = MPI_Comm;
  using comm_type = state*;
  using request_type = request_state*;
  struct status_type {
    std::size_t bytes = 0;
  };
  class owned_comm {
   public:
    owned_comm() = default;
    explicit owned_comm(std::unique_ptr<state> s) : s_(std::move(s)) {}
    comm_type get() const noexcept { return s_.get(); }
    // Kept, not destroyed: queued operations may still name its buffers and lanes. Groups the
    // backend still holds are dropped (orphan): the buffers they name go with the context.
    void leak() noexcept {
      quiesce();
      (void)s_.release();
    }
    // Drops what the backend still holds and takes it off the registry (its context is going).
    void quiesce() noexcept {
      if (s_) s_->ep.orphan();
    }

   private:
    std::unique_ptr<state> s_;
  };

  static request_type null_request() noexcept { return nullptr; }
  [[noreturn]] static void fail(int rc, const char* call, const std::string& where) {
    if (rc == lockstep_detail::failed) {
      const auto f = lockstep_detail::failure();
      hcomm::fail(f.code, f.message + " (" + call + " at " + where + ")");
    }
    mpi::fail_mpi(rc, call, where);
  }

  // --- the communicator ---
  static owned_comm dup(MPI_Comm c) { return owned_comm(std::make_unique<state>(mpi::dup(c))); }
  static int rank(comm_type c) noexcept { return c->rank; }
  static int size(comm_type c) noexcept { return c->size; }
  static double now() noexcept { return MPI_Wtime(); }
  static int ranks_sharing_host_and_fit_threads(comm_type c) {
    const int sharing = mpi::ranks_sharing_this_host(c->comm.get());
    mpi::fit_threads(c->comm.get(), sharing);
    return sharing;
  }
  static int online_cpus() { return mpi::online_cpus(); }
  static bool all_on_one_node(comm_type c) { return mpi::all_on_one_node(c->comm.get()); }

  // --- a round of the ring: a frame to `to` and one from `from`, either may be absent ---
  // The sizes cross first (MPI), then both payloads go as one group on the ring lane. out
  // absent: send == false; a present frame of 0 bytes (lost upstream) sends its size only.
  // The receive takes what `from` announced, at most in_cap bytes (more: received into the
  // discard buffer, and wait() reports errc::mismatch).
  static void round(const void* out, std::size_t out_bytes, bool send, void* in, std::size_t in_cap, bool recv, int to,
                    int from, comm_type c, request_type* r, unsigned idle_us) {
    request_state* q = c->acquire(request_state::round);
    *r = q;
    std::uint64_t mine = out_bytes, theirs = 0;
    MPI_Request sz[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (recv) HCOMM_MPI_CHECK(MPI_Irecv(&theirs, 1, MPI_UINT64_T, from, lockstep_detail::tag_round, c->comm.get(), &sz[0]));
    if (send) HCOMM_MPI_CHECK(MPI_Isend(&mine, 1, MPI_UINT64_T, to, lockstep_detail::tag_round, c->comm.get(), &sz[1]));
    for (MPI_Request& s : sz) wait_host(c, &s, "round sizes", idle_us);
    void* dst = in;
    if (recv && theirs > in_cap) {
      q->bad = true;
      q->message = "a frame of " + std::to_string(theirs) + " bytes from rank " + std::to_string(from) +
                   " exceeds this rank's slot of " + std::to_string(in_cap) + " bytes";
      dst = c->ep.discard(static_cast<std::size_t>(theirs));
    }
    q->got = recv ? static_cast<std::size_t>(theirs) : 0;
    const bool payload_out = send && out_bytes > 0, payload_in = recv && theirs > 0;
    if (payload_out || payload_in) {
      c->ep.group(lane::ring);
      if (payload_out) c->ep.send(out, out_bytes, to);
      if (payload_in) c->ep.recv(dst, static_cast<std::size_t>(theirs), from);
      q->ticket = c->ep.end_group();
      q->queued = true;
    }
  }

  // --- point-to-point ---
  static void isend(const void* p, std::size_t bytes, int peer, int tag, comm_type c, request_type* r) {
    isend_with_header(p, bytes, nullptr, 0, peer, tag, c, r);
  }
  static void irecv(void* p, std::size_t bytes, int peer, int tag, comm_type c, request_type* r) {
    irecv_with_header(p, bytes, nullptr, 0, peer, tag, c, r);
  }
  // One message of [head][data] (two payloads in one group, in order).
  static void isend_with_header(const void* head, std::size_t head_bytes, const void* data, std::size_t data_bytes,
                                int peer, int tag, comm_type c, request_type* r) {
    check_peer(c, peer, "send");
    request_state* q = c->acquire(request_state::send);
    *r = q;
    q->peer = peer;
    q->ann[0] = static_cast<std::uint64_t>(tag);
    q->ann[1] = head_bytes + data_bytes;
    HCOMM_MPI_CHECK(MPI_Isend(q->ann, 2, MPI_UINT64_T, peer, lockstep_detail::tag_announce, c->comm.get(), &q->mpi));
    if (head_bytes + data_bytes == 0) return;
    c->ep.group(lane_to(c, peer));
    if (head_bytes) c->ep.send(head, head_bytes, peer);
    if (data_bytes) c->ep.send(data, data_bytes, peer);
    q->ticket = c->ep.end_group();
    q->queued = true;
  }
  static void irecv_with_header(void* head, std::size_t head_bytes, void* data, std::size_t data_bytes, int peer,
                                int tag, comm_type c, request_type* r) {
    check_peer(c, peer, "recv");
    request_state* q = c->acquire(request_state::recv);
    *r = q;
    q->peer = peer;
    q->tag = tag;
    q->in = head;
    q->head_bytes = data ? head_bytes : 0;
    q->cap = head_bytes + data_bytes;
    q->data = data;
    HCOMM_MPI_CHECK(MPI_Irecv(q->ann, 2, MPI_UINT64_T, peer, lockstep_detail::tag_announce, c->comm.get(), &q->mpi));
    c->waiting[static_cast<std::size_t>(peer)].push_back(q);
  }

  // Completes r: a send once its payload left, a receive once its payload arrived (queued
  // here, after the receives posted before it for the same peer), a round once both did.
  static int wait(request_type* r, status_type* st, unsigned idle_us) {
    request_state* q = *r;
    if (!q) return success;
    state* c = q->owner;
    int rc = success;
    try {
      drain(c);
      if (q->kind == request_state::recv) queue_through(c, q, idle_us);
      wait_host(c, &q->mpi, "announcement", idle_us);
      if (q->queued) wait_ticket(c, q->ticket, idle_us);
      if (q->bad) {
        lockstep_detail::failure() = {q->code, q->message};
        rc = lockstep_detail::failed;
      }
    } catch (const error& e) {
      lockstep_detail::failure() = {e.code(), e.what()};
      rc = lockstep_detail::failed;
    }
    if (st) st->bytes = q->got;
    c->release(q);
    *r = nullptr;
    return rc;
  }
  static std::size_t received_bytes(const status_type& st) noexcept { return st.bytes; }
  // A receive not yet queued is not cancelled (its announcement would then be matched by the
  // next receive posted for that peer, out of order): it is marked unwanted, and its payload
  // is received into the discard buffer when its announcement comes (drain(), called by
  // every later wait on this communicator; or a wait for a receive posted after it). The
  // sender's request so completes. Anything queued finishes on its own.
  static void abandon(request_type* r) noexcept {
    request_state* q = *r;
    if (!q) return;
    state* c = q->owner;
    *r = nullptr;
    if (q->kind != request_state::recv || q->queued) {
      if (q->mpi != MPI_REQUEST_NULL) MPI_Request_free(&q->mpi);
      return;  // (the state is not reused: its ticket may still be pending)
    }
    q->unwanted = true;
    try {
      drain(c);
    } catch (...) {
    }
  }
  static void cancel(request_type* r) noexcept { abandon(r); }
  static void wait_quietly(request_type* r) noexcept {
    try {
      (void)wait(r, nullptr, 0);
    } catch (...) {
    }
  }

  // --- small values and the collectives ---
  // (The small values' MPI collectives are non-blocking ones, waited for as wait_host does:
  // a peer may wait for a group held on this rank before it joins.)
  static void max_allreduce(long long* v, int n, comm_type c) {
    MPI_Request m = MPI_REQUEST_NULL;
    HCOMM_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_LONG_LONG, MPI_MAX, c->comm.get(), &m));
    finish_host_collective(c, &m, "max allreduce");
  }
  template <class T>
  static void sum_allreduce(T* data, std::size_t n, comm_type c) {
    c->ep.sum_allreduce(data, n);
  }
  template <class T>
  static void sum_reduce_scatter(const T* in, T* out, std::size_t m, comm_type c) {
    c->ep.sum_reduce_scatter(in, out, m);
  }
  template <class T>
  static void allgather(const T* in, T* out, std::size_t m, comm_type c) {
    c->ep.allgather(in, out, m);
  }
  template <class T>
  static void broadcast_values(T* data, std::size_t n, int root, comm_type c) {
    c->ep.broadcast_values(data, n, root);
  }
  static void broadcast_words(std::uint64_t* w, std::size_t n, int root, comm_type c) {
    MPI_Request m = MPI_REQUEST_NULL;
    HCOMM_MPI_CHECK(MPI_Ibcast(w, mpi::count_of(n, "broadcast words"), MPI_UINT64_T, root, c->comm.get(), &m));
    finish_host_collective(c, &m, "broadcast words");
  }
  static void broadcast_bytes(void* p, std::size_t bytes, int root, comm_type c) { c->ep.broadcast_bytes(p, bytes, root); }

 private:
  static lane lane_to(comm_type c, int peer) noexcept { return peer > c->rank ? lane::up : lane::down; }
  static lane lane_from(comm_type c, int peer) noexcept { return peer < c->rank ? lane::up : lane::down; }
  static void check_peer(comm_type c, int peer, const char* what) {
    if (peer == c->rank)
      hcomm::fail(errc::unsupported, std::string("transport::") + name + ": point-to-point " + what +
                                         " to this rank itself: a lockstep transport queues the send before the "
                                         "receive on one lane, where the send would wait forever; copy locally");
  }
  // Waits for a group to finish, draining abandoned receives meanwhile.
  static void wait_ticket(state* c, const ticket_type& t, unsigned idle_us) {
    while (!c->ep.test(t)) {
      drain(c);
      mpi::pause_between_tests(idle_us);
    }
  }
  // Receives the payloads of abandoned receives whose announcements came (non-blocking).
  static void drain(state* c) {
    for (auto& w : c->waiting)
      while (!w.empty() && w.front()->unwanted) {
        request_state* x = w.front();
        int done = 0;
        if (x->mpi != MPI_REQUEST_NULL) HCOMM_MPI_CHECK(MPI_Test(&x->mpi, &done, MPI_STATUS_IGNORE));
        if (!done && x->mpi != MPI_REQUEST_NULL) break;
        queue_through(c, x, 0);
      }
  }
  // Completes a host message (sizes, announcements), keeping the backend's queues moving
  // meanwhile (a peer may be waiting for a payload this rank has queued).
  static void wait_host(state* c, MPI_Request* m, const char* what, unsigned idle_us) {
    while (*m != MPI_REQUEST_NULL) {
      int done = 0;
      const int rc = MPI_Test(m, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) mpi::fail_mpi(rc, what, HCOMM_WHERE_);
      if (done) return;
      drain(c);
      c->ep.poll();
      mpi::pause_between_tests(idle_us);
    }
  }
  // Completes one of this transport's small MPI collectives, the backend's queues moving
  // meanwhile.
  static void finish_host_collective(state* c, MPI_Request* m, const char* what) {
    lockstep_detail::finish_polling(m, what, [c] {
      drain(c);
      c->ep.poll();
    });
  }
  // Queues the payload receives of the requests posted for q's peer up to q, in posting order:
  // each after its announcement (which says the size and carries the tag).
  static void queue_through(state* c, request_state* q, unsigned idle_us) {
    auto& w = c->waiting[static_cast<std::size_t>(q->peer)];
    bool found = false;
    for (request_state* x : w) found = found || x == q;
    if (!found) return;  // queued already
    while (!w.empty()) {
      request_state* x = w.front();
      w.pop_front();
      wait_host(c, &x->mpi, "announcement", idle_us);
      const std::uint64_t tag = x->ann[0], bytes = x->ann[1];
      x->got = static_cast<std::size_t>(bytes);
      const bool split = x->data != nullptr;
      if (static_cast<int>(tag) != x->tag) {
        x->bad = true;
        x->message = "the next message from rank " + std::to_string(x->peer) + " has tag " + std::to_string(tag) +
                     " where this receive has tag " + std::to_string(x->tag) + " (transport::" + name +
                     " matches a peer's messages in the order posted: post receives in the order the peer sends)";
      } else if (bytes > x->cap || (split && bytes != x->cap)) {
        x->bad = true;
        x->message = "rank " + std::to_string(x->peer) + " sent " + std::to_string(bytes) +
                     " bytes where this receive takes " + (split ? "exactly " : "at most ") + std::to_string(x->cap);
      }
      if (bytes > 0) {
        c->ep.group(lane_from(c, x->peer));
        if (x->bad || x->unwanted) {
          c->ep.recv(c->ep.discard(static_cast<std::size_t>(bytes)), static_cast<std::size_t>(bytes), x->peer);
        } else if (split) {
          if (x->head_bytes) c->ep.recv(x->in, x->head_bytes, x->peer);
          if (bytes > x->head_bytes) c->ep.recv(x->data, static_cast<std::size_t>(bytes) - x->head_bytes, x->peer);
        } else {
          c->ep.recv(x->in, static_cast<std::size_t>(bytes), x->peer);
        }
        x->ticket = c->ep.end_group();
        x->queued = true;
      }
      if (x == q) return;
    }
  }
};

}  // namespace hcomm::transport
