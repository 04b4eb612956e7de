// hcomm/algorithm/context.hpp: what every compressed algorithm works in — the options, the
// per-communicator state (codec engine, frame buffers, error-feedback residual, counters)
// and the small steps the algorithms share (compress one segment, decode one segment, check
// that all ranks called the same thing).
//
//   hcomm::algorithm::context cx(MPI_COMM_WORLD, {.threshold_bytes = 0});
//   auto cfg = hcomm::codec::parse_config("zfp:8");
//   hcomm::algorithm::allreduce(cx, cfg, std::span<float>(grads));   // algorithm/ring.hpp
//
// Buffers grow to the largest call and are then reused: no allocation per call once warm.
// Host memory only here. Device buffers go through hcomm/comm/cuda_staging.hpp (pinned host
// staging around these algorithms). Not done: compressing on the GPU inside the ring (the
// engine runs on the CUDA executor already) and handing device frames to a CUDA-aware MPI.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "hcomm/codec/codec.hpp"
#include "hcomm/comm/mpi.hpp"
#include "hcomm/comm/threads.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"

namespace hcomm::algorithm {

struct options {
  // Messages (whole buffer, in bytes) below this go uncompressed: compression cannot pay
  // for its latency on small messages (MVAPICH-Plus uses 1 MB too).
  std::size_t threshold_bytes = std::size_t{1} << 20;
  // Raw bytes per pipelined segment: segment k+1 is compressed while segment k is on the wire.
  std::size_t segment_bytes = std::size_t{1} << 20;
  // Before each collective, one small MPI_Allreduce checks that all ranks pass the same
  // element count, dtype, codec and operation; on a difference every rank throws
  // errc::mismatch (so none hangs). Point-to-point needs no check: frame headers carry
  // count and dtype and the receiver compares. Costs one latency per collective.
  bool validate = true;
  // Payload checksum in every frame: a corrupted frame is detected by its receiver.
  bool checksum = true;
  // Uncompressed collectives use MPI's own (MPI_Allreduce, ...). false: hcomm's ring with
  // raw frames (tests the ring machinery with the none codec; slower).
  bool native_uncompressed = true;
  // How a rank waits for its messages (mpi::wait): 0 = MPI_Wait, polling without pause (best
  // when every rank has a core of its own); N > 0 = test, then sleep N microseconds, for ranks
  // that share cores (more ranks than cores, as in CI and the 8-rank example on 2 cores); keep
  // it below a segment's wire time (1 MiB at rate 8 over 1 Gbit/s: ~2 ms). -1 (idle_auto):
  // 100 if more ranks run on this host (mpi::ranks_sharing_this_host) than it has online CPUs,
  // else 0; decided once, when the context is created (later changes of this field do not
  // count). MPI's own collectives (uncompressed messages, below the threshold) and MPI_Bcast
  // still wait the MPI way (busy polling unless Open MPI knows the node is oversubscribed).
  static constexpr int idle_auto = -1;
  int idle_sleep_us = idle_auto;
  // Tests only: called on every frame a rank compresses, before it is sent (to corrupt it);
  // frames the ring's allgather forwards pass on as received.
  std::function<void(std::span<std::byte>)> tamper;
};

struct stats {
  std::uint64_t raw_bytes = 0;    // bytes this rank would have sent uncompressed (same algorithm)
  std::uint64_t wire_bytes = 0;   // bytes this rank sent (frames incl. headers)
  double compress_seconds = 0;    // encoding + decoding
  double comm_seconds = 0;        // the rest of the operations' wall time (transfer, waiting, adds)
  std::uint64_t calls = 0;
  double ratio() const noexcept { return wire_bytes ? double(raw_bytes) / double(wire_bytes) : 1.0; }
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

// Balanced split of n elements into p chunks (the first n % p chunks one longer).
struct chunks {
  std::size_t n = 0, p = 1;
  std::size_t len(std::size_t c) const noexcept { return n / p + (c < n % p ? 1 : 0); }
  std::size_t off(std::size_t c) const noexcept { return c * (n / p) + std::min(c, n % p); }
  std::size_t max_len() const noexcept { return n / p + (n % p ? 1 : 0); }
};

class context {
 public:
  context(MPI_Comm comm, options opt = {}, std::string label = "comm")
      : comm_(mpi::dup(comm)), opt_(std::move(opt)), label_(std::move(label)) {
    rank_ = mpi::rank(comm_.get());
    size_ = mpi::size(comm_.get());
    // (counted on every rank whatever its option says: a collective that some ranks skipped
    // would hang the others)
    const int sharing = mpi::ranks_sharing_this_host(comm_.get());
    mpi::fit_threads(comm_.get(), sharing);  // the default thread count, from the local ranks' masks
    if (opt_.idle_sleep_us < 0) idle_us_ = sharing > mpi::online_cpus() ? 100u : 0u;
    else idle_us_ = static_cast<unsigned>(opt_.idle_sleep_us);
  }
  // A communicator that may still receive messages nobody will match (an interrupted ring, a
  // point-to-point mismatch that left a sender's frames unreceived) is not freed: MPI may give
  // a freed communicator's context id to the next one created, and Open MPI then delivers the
  // stale messages there, where they break its message order (seen as a hang of a later
  // allreduce on another communicator in 2-5% of 4-rank runs). One leaked id per such failure.
  ~context() {
    if (keep_comm_ || interrupted_) comm_.leak();
  }
  void keep_comm_alive() noexcept { keep_comm_ = true; }
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  MPI_Comm comm() const noexcept { return comm_.get(); }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  const std::string& label() const noexcept { return label_; }
  // Microseconds a waiting rank sleeps between tests (options::idle_sleep_us, auto resolved).
  unsigned idle_sleep_us() const noexcept { return idle_us_; }
  options& opts() noexcept { return opt_; }
  const options& opts() const noexcept { return opt_; }
  stats& counters() noexcept { return st_; }
  codec::engine<>& engine() noexcept { return eng_; }

  // Elements per segment: a multiple of 4 (one ZFP block) so segments never split a block.
  template <class T>
  std::size_t segment_elems() const noexcept {
    std::size_t e = std::max<std::size_t>(opt_.segment_bytes / sizeof(T), 4);
    return e / 4 * 4;
  }
  template <class T>
  std::size_t segments_of(std::size_t len) const noexcept {
    const std::size_t e = segment_elems<T>();
    return (len + e - 1) / e;
  }
  // Capacity of a point-to-point frame slot (p2p.hpp): a segment's worst-case frame, 64-byte
  // aligned. (A receiver posts its receives before it knows the frames' sizes, and a larger
  // frame would need a second message that only the receiver's wait() could take, making the
  // sender's completion depend on it: ZFP's worst case, ~2.25x the raw segment at rate 8, is
  // reserved instead.)
  template <class T>
  std::size_t p2p_slot_bytes(const codec::config& c) const {
    return (codec::max_frame_bytes(c, segment_elems<T>()) + 63) / 64 * 64;
  }

  // Capacity of a frame slot of the ring (ring.hpp), always more than the frame it holds whole
  // (a message of exactly the capacity is the first part of a larger frame): for ZFP the
  // segment's frame without non-finite values plus room for 1/64 of its values in the
  // non-finite side list, instead of ZFP's worst case (every value non-finite: ~9x the stream
  // at rate 8); a frame that does not fit travels as two messages. Other codecs' bound is close
  // to their typical frame, so their slot holds any frame.
  template <class T>
  std::size_t ring_slot_bytes(const codec::config& c) const {
    const std::size_t E = segment_elems<T>();
    const std::size_t above_bound = (codec::max_frame_bytes(c, E) + 1 + 63) / 64 * 64;
    if (c.codec != codec_id::zfp) return above_bound;
    using Z = codec::zfp_codec<T>;
    const std::size_t typical = codec::header_bytes + Z::stream_bytes(E, c.param) + 8 + (E / 64) * Z::entry_bytes(E);
    return std::min(above_bound, (typical + 63) / 64 * 64);
  }
  // Second parts of the ring's frames that did not fit their slot, per slot set (ring.hpp);
  // owned here so that they outlive any request on them.
  std::vector<std::vector<std::byte>>& overflow(int i, std::size_t n) {
    auto& v = overflow_[i];
    if (v.size() < n) v.resize(n);
    return v;
  }
  // A frame of up to max_frame_bytes for one segment (the ring compresses into it).
  template <class T>
  std::byte* frame_scratch(const codec::config& c) {
    const std::size_t bytes = codec::max_frame_bytes(c, segment_elems<T>());
    if (frame_scratch_.size() < bytes) frame_scratch_.resize(bytes);
    return frame_scratch_.data();
  }

  // Frame buffers, grown never shrunk. Three so that the allgather can forward what it
  // received while receiving the next chunk.
  std::byte* buffer(int i, std::size_t bytes) {
    auto& b = bufs_[i];
    if (b.size() < bytes) b.resize(bytes);
    return b.data();
  }
  void swap_buffers(int i, int j) { std::swap(bufs_[i], bufs_[j]); }
  template <class T>
  T* scratch(std::size_t n) {
    auto& b = scratch_;
    if (b.size() < n * sizeof(T)) b.resize(n * sizeof(T));
    return reinterpret_cast<T*>(b.data());
  }
  template <class T>
  T* work(std::size_t n) {
    auto& b = work_;
    if (b.size() < n * sizeof(T)) b.resize(n * sizeof(T));
    return reinterpret_cast<T*>(b.data());
  }

  std::vector<std::size_t>& sizes(int i, std::size_t n) {
    auto& v = sizes_[i];
    if (v.size() < n) v.resize(n);
    return v;
  }
  void swap_sizes(int i, int j) { std::swap(sizes_[i], sizes_[j]); }
  MPI_Request* requests(int i, std::size_t n) {
    auto& v = reqs_[i];
    if (v.size() < n) v.resize(n, MPI_REQUEST_NULL);
    return v.data();
  }

  // Slots for non-blocking point-to-point messages: each in-flight request holds one.
  std::size_t acquire_slot() {
    if (free_.empty()) {
      pool_.emplace_back();
      return pool_.size() - 1;
    }
    const std::size_t s = free_.back();
    free_.pop_back();
    return s;
  }
  std::vector<std::byte>& slot(std::size_t s) { return pool_[s]; }
  void release_slot(std::size_t s) { free_.push_back(s); }

  // --- error-feedback residual: one per communicator, bound to the first buffer's shape ---
  template <class T>
  T* residual_for(std::size_t n) {
    if (res_n_ == 0 && res_bytes_.empty()) {
      res_n_ = n;
      res_type_ = dtype_of<T>;
      res_bytes_.assign(n * sizeof(T), std::byte{0});
    } else if (res_n_ != n || res_type_ != dtype_of<T>) {
      fail(errc::invalid_argument,
           label_ + ": error feedback keeps one residual per communicator, made for " + std::to_string(res_n_) + " " +
               std::string(to_string(res_type_)) + " values; this call has " + std::to_string(n) + " " +
               std::string(to_string(dtype_of<T>)) + " (use one communicator per gradient buffer, or reset_residual())");
    }
    return reinterpret_cast<T*>(res_bytes_.data());
  }
  std::span<const std::byte> residual_bytes() const noexcept { return res_bytes_; }
  dtype residual_type() const noexcept { return res_type_; }
  std::size_t residual_size() const noexcept { return res_n_; }
  void reset_residual() noexcept {
    res_bytes_.clear();
    res_n_ = 0;
  }
  template <class T>
  void load_residual(std::span<const T> r) {
    res_n_ = r.size();
    res_type_ = dtype_of<T>;
    res_bytes_.resize(r.size_bytes());
    if (!r.empty()) std::memcpy(res_bytes_.data(), r.data(), r.size_bytes());
  }

  // --- after an interrupted operation ---
  // An exception in the middle of a ring operation (an MPI failure, an allocation, a throwing
  // test hook) leaves its message pattern half done: peers' messages under the ring's tags
  // still queued, sends freed while in flight from this context's buffers. A later operation
  // would match those stale messages or regrow buffers under such a send, so the context is
  // marked unusable and every later operation says so instead (and ~context leaves its MPI
  // communicator unfreed).
  void mark_interrupted(const char* op) noexcept { interrupted_ = op; }
  void check_usable() const {
    if (interrupted_)
      fail(errc::invalid_argument, label_ + ": this communicator is unusable: an earlier " + interrupted_ +
                                       " was interrupted by an exception in the middle of its messages "
                                       "(create a new communicator on every rank; this one's MPI communicator "
                                       "is not freed, so that the broken pattern's messages cannot reach one made later)");
  }

  // --- shared steps ---

  // Every rank passes (op, count, dtype, codec, extra); one MPI_Allreduce(MAX) of the values
  // and their negations gives min and max everywhere, so all ranks agree and all throw.
  void check_same(op_id op, std::size_t n, dtype t, const codec::config& c, long long extra = 0,
                  const char* extra_name = "root") {
    if (!opt_.validate) return;
    const long long cfg_code = static_cast<long long>(c.codec) * 1000 + c.param;
    const std::array<long long, 5> v{static_cast<long long>(op), static_cast<long long>(n),
                                     static_cast<long long>(t), cfg_code, extra};
    std::array<long long, 10> mm{};
    for (std::size_t i = 0; i < v.size(); ++i) {
      mm[2 * i] = v[i];
      mm[2 * i + 1] = -v[i];
    }
    HCOMM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, mm.data(), 10, MPI_LONG_LONG, MPI_MAX, comm_.get()));
    static const char* names[5] = {"operation", "element count", "dtype", "codec", nullptr};
    for (std::size_t i = 0; i < v.size(); ++i) {
      const long long hi = mm[2 * i], lo = -mm[2 * i + 1];
      if (hi == lo) continue;
      const std::string what = i == 4 ? extra_name : names[i];
      auto show = [&](long long x) -> std::string {
        if (i == 0) return to_string(static_cast<op_id>(x));
        if (i == 2) return std::string(hcomm::to_string(static_cast<dtype>(x)));
        if (i == 3) return codec::codec_name(static_cast<codec_id>(x / 1000)) + ":" + std::to_string(x % 1000);
        return std::to_string(x);
      };
      fail(errc::mismatch, label_ + " " + to_string(op) + ": " + what + " differs across ranks (min " + show(lo) +
                               ", max " + show(hi) + "; rank " + std::to_string(rank_) + " has " + show(v[i]) + ")");
    }
  }

  // Compresses len values into out (capacity cap); returns the frame size.
  template <class T>
  std::size_t compress(const codec::config& c, const T* in, std::size_t len, std::byte* out, std::size_t cap) {
    const double t0 = MPI_Wtime();
    const std::size_t bytes = eng_.compress(c, in, len, out, cap);
    st_.compress_seconds += MPI_Wtime() - t0;
    return bytes;
  }
  template <class T>
  void decompress(const std::byte* frame, std::size_t bytes, T* out, std::size_t len) {
    const double t0 = MPI_Wtime();
    try {
      eng_.decompress(frame, bytes, out, len, dtype_of<T>);
    } catch (...) {
      st_.compress_seconds += MPI_Wtime() - t0;
      throw;
    }
    st_.compress_seconds += MPI_Wtime() - t0;
  }

  // Test hook (options::tamper): applied to each frame this rank compresses before it is sent.
  void before_send(std::byte* frame, std::size_t bytes) {
    if (opt_.tamper) opt_.tamper(std::span<std::byte>(frame, bytes));
  }

  // Bookkeeping of one operation's wall time: comm time = wall - codec time inside it.
  struct timer {
    context& cx;
    double t0, c0;
    bool count_call;
    explicit timer(context& c, bool count = true)
        : cx(c), t0(MPI_Wtime()), c0(c.st_.compress_seconds), count_call(count) {}
    ~timer() {
      const double wall = MPI_Wtime() - t0;
      cx.st_.comm_seconds += std::max(0.0, wall - (cx.st_.compress_seconds - c0));
      if (count_call) cx.st_.calls += 1;
    }
  };

 private:
  mpi::owned_comm comm_;
  options opt_;
  std::string label_;
  const char* interrupted_ = nullptr;
  // the operation that was interrupted, see check_usable
  unsigned idle_us_ = 0;  // options::idle_sleep_us, resolved at construction
  bool keep_comm_ = false;             // see ~context
  int rank_ = 0, size_ = 1;
  stats st_;
  codec::engine<> eng_;
  std::array<std::vector<std::byte>, 3> bufs_;
  std::array<std::vector<std::size_t>, 3> sizes_;
  std::array<std::vector<MPI_Request>, 6> reqs_;
  std::vector<std::byte> scratch_, work_, frame_scratch_;
  std::array<std::vector<std::vector<std::byte>>, 3> overflow_;
  std::deque<std::vector<std::byte>> pool_;
  std::vector<std::size_t> free_;
  std::vector<std::byte> res_bytes_;
  std::size_t res_n_ = 0;
  dtype res_type_ = dtype::f32;
};

// Records the first error of an operation and lets it finish its message pattern, so the
// peers are not left waiting; the error is thrown when the pattern is complete.
struct deferred_error {
  std::string message;
  errc code = errc::corrupt_frame;
  bool set = false;
  void record(const error& e, const std::string& where) {
    if (set) return;
    set = true;
    code = e.code();
    message = where + ": " + e.what();
  }
  void raise() const {
    if (set) fail(code, message);
  }
};

// True when this call takes the uncompressed path.
// (Both sides of every message decide the same way from values the validation compares.)
template <class T>
bool go_raw(const context& cx, const codec::config& c, std::size_t n) {
  if (n == 0 || n * sizeof(T) < cx.opts().threshold_bytes) return true;
  return c.codec == codec_id::none && cx.opts().native_uncompressed;
}

// Config actually used for frames of T (dtype and the options' checksum setting applied).
template <class T>
codec::config frame_config(const context& cx, codec::config c) {
  c.type = dtype_of<T>;
  c.checksum = cx.opts().checksum;
  return c;
}

}  // namespace hcomm::algorithm
