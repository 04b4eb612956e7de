// hcomm/algorithm/context.hpp: what every compressed algorithm works in: the options, the
// counters, the codec engine, the workspace and the error-feedback residual of one
// communicator, on one executor and one transport, and the small steps the algorithms share
// (compress one segment, decode one segment, check that all ranks called the same thing).
//
//   hcomm::algorithm::context cx(MPI_COMM_WORLD, {.threshold_bytes = 0});    // host, MPI, library codecs
//   auto cfg = hcomm::codec::parse_config("zfp:8");
//   hcomm::algorithm::allreduce(cx, cfg, std::span<float>(grads));           // algorithm/ring.hpp
//
//   hcomm::algorithm::basic_context<hcomm::exec::host_check> dcx(comm);      // device code paths
//   hcomm::algorithm::basic_context<hcomm::exec::host, hcomm::transport::mpi_host,
//                                   hcomm::codec::registered_codecs::with<my_codec>> mcx(comm);
//
// Memory belongs to the executor: frame buffers, scratch, frame slots and the residual are
// allocated through it (the data the collectives are given lives there too); the transport
// moves bytes between ranks and must be able to reach that memory (transport::mpi_host:
// host memory; transport::mpi_staged: any executor with host staging, frames copied through
// it; transport::mpi_device: device memory, with a CUDA-aware MPI). Whole device buffers
// staged and coded on the host: hcomm/comm/cuda_staging.hpp.
//
//   hcomm::algorithm::basic_context<hcomm::exec::cuda, hcomm::transport::mpi_staged> gx(comm, {}, "dp", ex);
//
// A device context checks the buffers its collectives are given (executor hook
// check_device_pointer: a host buffer passed to exec::cuda is an hcomm::error naming it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "hcomm/algorithm/chunks.hpp"
#include "hcomm/algorithm/options.hpp"
#include "hcomm/algorithm/residual.hpp"
#include "hcomm/algorithm/stats.hpp"
#include "hcomm/algorithm/validation.hpp"
#include "hcomm/algorithm/workspace.hpp"
#include "hcomm/codec/codec.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/exec/executor.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/transport/mpi_host.hpp"

namespace hcomm::algorithm {

namespace detail {
// What a context is made from: the transport's user_comm_type where it has one (a lockstep
// transport makes its own state from an MPI communicator), else its comm_type.
template <class Tr>
struct user_comm_of {
  using type = typename Tr::comm_type;
};
template <class Tr>
  requires requires { typename Tr::user_comm_type; }
struct user_comm_of<Tr> {
  using type = typename Tr::user_comm_type;
};
}  // namespace detail

template <exec::executor Exec = exec::host, class Transport = transport::mpi_host,
          codec::codec_list_type Codecs = codec::registered_codecs>
class basic_context {
  static_assert(Transport::template reaches<Exec>,
                "hcomm: basic_context<Exec, Transport>: the transport cannot reach this executor's memory "
                "(transport::mpi_host needs host memory: for device memory use transport::mpi_staged "
                "(hcomm/transport/mpi_staged.hpp) or, with a CUDA-aware MPI, transport::mpi_device; or specialise "
                "transport::host_addressable for an executor whose memory is host memory)");
  static_assert(codec::has_identity<Codecs>(),
                "hcomm: basic_context<..., Codecs>: the codec list needs an identity codec (none_codec): "
                "uncompressed messages are its frames");

 public:
  using executor_type = Exec;
  using transport_type = Transport;
  using codecs = Codecs;
  using comm_type = typename Transport::comm_type;  // what the transport's calls take
  using user_comm_type = typename detail::user_comm_of<Transport>::type;
  using request_type = typename Transport::request_type;
  using buffer_type = exec_buffer<Exec>;

  basic_context(user_comm_type comm, options opt = {}, std::string label = "comm", Exec ex = {})
      : comm_(Transport::dup(comm)),
        opt_(std::move(opt)),
        label_(std::move(label)),
        ex_(ex),
        eng_(ex),
        ws_(ex),
        res_(ex) {
    // A transport that depends on the MPI library (CUDA-aware MPI) says here when it cannot run.
    if constexpr (requires { Transport::check_available(); }) Transport::check_available();
    rank_ = Transport::rank(comm_.get());
    size_ = Transport::size(comm_.get());
    const int sharing = Transport::ranks_sharing_host_and_fit_threads(comm_.get());
    if (opt_.idle_sleep_us == options::idle_yield) idle_us_ = mpi::yield_between_tests;
    else if (opt_.idle_sleep_us < 0) idle_us_ = sharing > Transport::online_cpus() ? mpi::yield_between_tests : 0u;
    else idle_us_ = static_cast<unsigned>(opt_.idle_sleep_us);
    // compress_inside_node: the same on every rank (else some would compress and the others
    // not), then whether this communicator stays on one node. Both collective, on all ranks.
    long long inside[2] = {opt_.compress_inside_node ? 1 : 0, opt_.compress_inside_node ? 0 : 1};
    Transport::max_allreduce(inside, 2, comm_.get());
    if (inside[0] != 1 - inside[1])
      fail(errc::mismatch, label_ + ": compress_inside_node differs across ranks (rank " + std::to_string(rank_) +
                               " has " + (opt_.compress_inside_node ? "true" : "false") + ")");
    bool one_node = false;
    if constexpr (requires { Transport::all_on_one_node(comm_.get()); })
      one_node = Transport::all_on_one_node(comm_.get());
    one_node_ = one_node;
    raw_inside_node_ = one_node && !opt_.compress_inside_node;
  }
  // A communicator that may still receive messages nobody will match (an interrupted ring, a
  // point-to-point mismatch that left a sender's frames unreceived) is not freed: MPI may give
  // a freed communicator's context id to the next one created, and Open MPI then delivers the
  // stale messages there, where they break its message order (a later collective on another
  // communicator can hang). One leaked id per such failure.
  // A lockstep transport drops the groups it still holds first (quiesce): they name the
  // workspace, which goes before the transport, and another context's wait would move them.
  ~basic_context() {
    if (keep_comm_ || interrupted_) comm_.leak();
    else if constexpr (requires { comm_.quiesce(); }) comm_.quiesce();
  }
  void keep_comm_alive() noexcept { keep_comm_ = true; }
  basic_context(const basic_context&) = delete;
  basic_context& operator=(const basic_context&) = delete;

  comm_type comm() const noexcept { return comm_.get(); }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  const std::string& label() const noexcept { return label_; }
  // What a waiting rank does between tests (options::idle_sleep_us, auto resolved): 0 MPI_Wait,
  // mpi::yield_between_tests, else the microseconds it sleeps (mpi::pause_between_tests).
  unsigned idle_sleep_us() const noexcept { return idle_us_; }
  // Whether all ranks of this communicator run on one node, and whether its messages go
  // uncompressed for that reason (options::compress_inside_node false).
  bool one_node() const noexcept { return one_node_; }
  bool raw_inside_node() const noexcept { return raw_inside_node_; }
  options& opts() noexcept { return opt_; }
  const options& opts() const noexcept { return opt_; }
  stats& counters() noexcept { return st_; }
  const Exec& executor() const noexcept { return ex_; }
  codec::engine<Exec, Codecs>& engine() noexcept { return eng_; }
  workspace<Exec, Transport>& memory() noexcept { return ws_; }

  // Elements per segment: a multiple of every listed codec's block (codec::block_multiple),
  // so that segments never split one.
  template <class T>
  std::size_t segment_elems() const noexcept {
    constexpr std::size_t B = codec::block_multiple<Codecs>();
    std::size_t e = opt_.segment_bytes / sizeof(T);
    if (e < B) e = B;
    return e / B * B;
  }
  template <class T>
  std::size_t segments_of(std::size_t len) const noexcept {
    const std::size_t e = segment_elems<T>();
    return (len + e - 1) / e;
  }
  // Capacity of a point-to-point frame slot (p2p.hpp): a segment's worst-case frame, 64-byte
  // aligned. (A receiver posts its receives before it knows the frames' sizes, and a larger
  // frame would need a second message that only the receiver's wait() could take, making the
  // sender's completion depend on it: the worst case is reserved instead.)
  template <class T>
  std::size_t p2p_slot_bytes(const codec::config& c) const {
    return (codec::max_frame_bytes<Codecs>(c, segment_elems<T>()) + 63) / 64 * 64;
  }
  // Capacity of a frame slot of the ring (ring.hpp): codec::slot_bytes for one segment, more
  // than any frame it holds whole; a frame that does not fit travels as two messages.
  template <class T>
  std::size_t ring_slot_bytes(const codec::config& c) const {
    return codec::slot_bytes<Codecs>(c, segment_elems<T>());
  }
  // A frame of up to max_frame_bytes for one segment (the ring compresses into it).
  template <class T>
  std::byte* frame_scratch(const codec::config& c) {
    return ws_.frame(codec::max_frame_bytes<Codecs>(c, segment_elems<T>()));
  }

  // --- error-feedback residual: one per communicator, bound to the first buffer's shape ---
  template <class T>
  T* residual_for(std::size_t n) {
    return res_.template get<T>(n, label_);
  }
  std::span<const std::byte> residual_bytes() const noexcept { return res_.bytes(); }
  dtype residual_type() const noexcept { return res_.type(); }
  std::size_t residual_size() const noexcept { return res_.size(); }
  void reset_residual() noexcept { res_.reset(); }
  template <class T>
  void load_residual(std::span<const T> r) {
    res_.load(r);
  }

  // --- after an interrupted operation ---
  // An exception in the middle of a ring operation (a transport failure, an allocation, a
  // throwing test hook) leaves its message pattern half done: peers' messages under the
  // ring's tags still queued, sends freed while in flight from this context's buffers. A later
  // operation would match those stale messages or regrow buffers under such a send, so the
  // context is marked unusable and every later operation says so instead (and the destructor
  // leaves its communicator unfreed).
  void mark_interrupted(const char* op) noexcept { interrupted_ = op; }
  void check_usable() const {
    if (interrupted_)
      fail(errc::invalid_argument, label_ + ": this communicator is unusable: an earlier " + interrupted_ +
                                       " was interrupted by an exception in the middle of its messages "
                                       "(create a new communicator on every rank; this one's MPI communicator "
                                       "is not freed, so that the broken pattern's messages cannot reach one made later)");
  }

  // --- shared steps ---
  // All ranks passed the same operation, count, dtype, codec and extra (validation.hpp).
  void check_same(op_id op, std::size_t n, dtype t, const codec::config& c, long long extra = 0,
                  const char* extra_name = "root") {
    if (!opt_.validate) return;
    check_same_call<Transport, Codecs>(comm_.get(), rank_, label_, op, n, t, c, extra, extra_name);
  }

  // Compresses len values into out (capacity cap); returns the frame size.
  template <class T>
  std::size_t compress(const codec::config& c, const T* in, std::size_t len, std::byte* out, std::size_t cap) {
    const double t0 = Transport::now();
    const std::size_t bytes = eng_.compress(c, in, len, out, cap);
    st_.compress_seconds += Transport::now() - t0;
    return bytes;
  }
  template <class T>
  void decompress(const std::byte* frame, std::size_t bytes, T* out, std::size_t len) {
    const double t0 = Transport::now();
    try {
      eng_.decompress(frame, bytes, out, len, dtype_of<T>);
    } catch (...) {
      st_.compress_seconds += Transport::now() - t0;
      throw;
    }
    st_.compress_seconds += Transport::now() - t0;
  }

  // Test hook (options::tamper): applied to each frame this rank compresses before it is
  // sent, in the executor's memory (so only where that is host memory).
  void before_send(std::byte* frame, std::size_t bytes) {
    if (!opt_.tamper) return;
    if constexpr (!transport::host_addressable<Exec>::value)
      fail(errc::invalid_argument, label_ + ": options::tamper needs an executor whose memory is host memory");
    else opt_.tamper(std::span<std::byte>(frame, bytes));
  }

  // Entry points: a buffer of n values given to a device context must be the executor's
  // memory (executor hook check_device_pointer; host executors have nothing to check).
  // `what` names the operation and argument, e.g. "allreduce data".
  void check_buffer(const void* p, std::size_t n, const char* what) const {
    if constexpr (Exec::is_device && requires { ex_.check_device_pointer(p, what); }) {
      if (n == 0 || p == nullptr) return;
      const std::string name = label_ + " " + what;
      ex_.check_device_pointer(p, name.c_str());
    }
  }

  // Bookkeeping of one operation's wall time (stats.hpp).
  struct timer : op_timer<Transport> {
    explicit timer(basic_context& c, bool count = true) : op_timer<Transport>(c.st_, count) {}
  };

 private:
  typename Transport::owned_comm comm_;
  options opt_;
  std::string label_;
  const char* interrupted_ = nullptr;  // the operation that was interrupted, see check_usable
  unsigned idle_us_ = 0;               // options::idle_sleep_us, resolved at construction
  bool keep_comm_ = false;             // see ~basic_context
  bool one_node_ = false;              // all ranks on one node (Transport::all_on_one_node)
  bool raw_inside_node_ = false;       // one_node_ and not options::compress_inside_node
  int rank_ = 0, size_ = 1;
  stats st_;
  Exec ex_;
  codec::engine<Exec, Codecs> eng_;
  workspace<Exec, Transport> ws_;
  residual<Exec> res_;
};

// The context of the host executor, MPI and the library's codecs.
using context = basic_context<>;

template <class C>
struct is_context : std::false_type {};
template <class E, class Tr, class Cs>
struct is_context<basic_context<E, Tr, Cs>> : std::true_type {};
// A basic_context<...> (what the collectives take).
template <class C>
concept context_type = is_context<C>::value;

// True when this call takes the uncompressed path.
// (Both sides of every message decide the same way: from values the validation compares, and
// from raw_inside_node(), agreed by all ranks when the context was made.)
template <class T, class Cx>
bool go_raw(const Cx& cx, const codec::config& c, std::size_t n) {
  if (n == 0 || n * sizeof(T) < cx.opts().threshold_bytes || cx.raw_inside_node()) return true;
  return codec::is_identity<typename Cx::codecs>(c) && cx.opts().native_uncompressed;
}

// Config actually used for frames of T (dtype and the options' checksum setting applied).
// For 16-bit T the codec is checked to take T here, so that a codec without 16-bit support
// (bf16, int8) is refused whatever the size, not only above the uncompressed threshold.
template <class T, class Cx>
codec::config frame_config(const Cx& cx, codec::config c) {
  c.type = dtype_of<T>;
  c.checksum = cx.opts().checksum;
  if constexpr (half_element<T>) codec::validate<typename Cx::codecs>(c);
  return c;
}

// Error feedback adds what each step lost to the next step's input; over a codec whose error
// can exceed the values themselves (ZFP below rate 6 on floats) that residual grows without
// bound, so such a pairing is refused (invalid_argument) rather than left to diverge.
template <codec::codec_list_type Codecs = codec::registered_codecs>
void check_feedback_stable(const codec::config& c, const std::string& label) {
  if (!codec::is_feedback_stable<Codecs>(c))
    fail(errc::invalid_argument,
         label + ": error feedback over " + codec::to_string<Codecs>(c) + " on " + std::string(to_string(c.type)) +
             " values diverges: the codec's error on some blocks is larger than the blocks, so the residual grows "
             "every step; use a higher rate (zfp: 6 or more for float, bf16 and f16, 7 or more for double) or no "
             "error feedback");
}

}  // namespace hcomm::algorithm
