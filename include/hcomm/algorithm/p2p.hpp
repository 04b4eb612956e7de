// hcomm/algorithm/p2p.hpp: compressed point-to-point messages (pipeline-stage activations
// and their gradients).
//
//   hcomm::algorithm::send(cx, cfg, std::span<const float>(acts), next, /*tag=*/7);
//   auto req = hcomm::algorithm::irecv(cx, cfg, std::span<float>(grads), next, 8);
//   ...                       // compute while the message arrives
//   req.wait();               // decodes; throws hcomm::error on a bad or mismatched frame
//
// Element types: float, double and the 16-bit storage types bf16 and f16 (codecs that take
// 16-bit values: none, MPC, ZFP; the frames say the dtype, and a receiver of another dtype
// gets errc::mismatch).
//
// Wire format: a message of n values is a sequence of frames, one per segment, all with the
// caller's tag (MPI keeps their order). Small or uncompressed messages are one frame of the
// list's identity codec (none) whose payload is the caller's buffer itself (the transport
// sends header + data as one message, no copy). Either way the header tells the receiver the sender's count, dtype and
// codec, so a receiver that expects something else throws errc::mismatch saying what
// differed. A corrupted frame (checksum) is reported after the rest of the message has been
// received (the sender is not left blocked); a protocol mismatch cancels the receives not
// yet matched. Frame slots live in the context's executor memory, or, with a staging
// transport (transport/mpi_staged.hpp), in its host staging: a frame is compressed in the
// executor's memory and copied to its slot (the host waits for the stream once per frame
// before the send), a received frame is copied back before it is decoded, and an
// uncompressed message is staged whole as [header][values] (the same bytes on the wire).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hcomm/algorithm/context.hpp"
#include "hcomm/algorithm/native.hpp"
#include "hcomm/codec/frame.hpp"

namespace hcomm::algorithm {

// A pending send or receive. wait() completes it (and decodes a receive); move-only. A
// request destroyed without wait() still completes its MPI transfers (so buffers and peers
// are safe), but a receive is then not decoded (its buffer is undefined) and errors are lost.
// A failed receive leaves the caller's buffer undefined too.
template <class Cx>
class basic_request {
  using Tr = typename Cx::transport_type;

 public:
  basic_request() = default;
  basic_request(const basic_request&) = delete;
  basic_request& operator=(const basic_request&) = delete;
  basic_request(basic_request&& o) noexcept { *this = std::move(o); }
  basic_request& operator=(basic_request&& o) noexcept {
    if (this != &o) {
      finish_quietly();
      cx_ = std::exchange(o.cx_, nullptr);
      slot_ = o.slot_;
      recv_ = o.recv_;
      raw_ = o.raw_;
      type_ = o.type_;
      out_ = o.out_;
      n_ = o.n_;
      elem_ = o.elem_;
      seg_ = o.seg_;
      slot_bytes_ = o.slot_bytes_;
      peer_ = o.peer_;
      reqs_ = std::move(o.reqs_);
    }
    return *this;
  }
  ~basic_request() { finish_quietly(); }

  bool pending() const noexcept { return cx_ != nullptr; }

  void wait() {
    if (!cx_) return;
    Cx& cx = *cx_;
    typename Cx::timer tm(cx);
    deferred_error err;
    const unsigned idle = cx.idle_sleep_us();
    if (!recv_) {
      int rc = Tr::success;
      for (auto& r : reqs_) {
        const int rk = Tr::wait(&r, nullptr, idle);
        if (rc == Tr::success) rc = rk;
      }
      release();
      if (rc != Tr::success) Tr::fail(rc, "wait (send)", HCOMM_WHERE_);
      return;
    }
    std::byte* buf = cx.memory().slot(slot_).data();
    const std::string who = cx.label() + " recv from rank " + std::to_string(peer_);
    for (std::size_t k = 0; k < reqs_.size(); ++k) {
      typename Tr::status_type st;
      const int rc = Tr::wait(&reqs_[k], &st, idle);
      try {
        if (rc != Tr::success) Tr::fail(rc, "wait (recv)", HCOMM_WHERE_);
        const std::size_t got = Tr::received_bytes(st);
        if (raw_) {
          check_raw(cx, buf, got);
          if constexpr (detail::staged_v<Cx>) cx.executor().copy(out_, buf + codec::header_bytes, n_ * elem_);
        } else {
          const std::size_t off = k * seg_, len = std::min(seg_, n_ - off);
          decode(cx, buf + k * slot_bytes_, got, off, len);
        }
      } catch (const error& e) {
        err.record(e, who + " segment " + std::to_string(k));
        if (e.code() != errc::corrupt_frame) {  // the protocol diverged: stop waiting
          cx.keep_comm_alive();  // (the sender's remaining frames stay unmatched)
          for (std::size_t j = k + 1; j < reqs_.size(); ++j) Tr::cancel(&reqs_[j]);
          break;
        }
      }
    }
    // No copy or decode reading the slot may be pending when it goes back to the pool (a
    // device executor's stream runs behind the host).
    if constexpr (detail::staged_v<Cx>) cx.executor().synchronize();
    else detail::settle_executor(cx);
    release();
    err.raise();
  }

 private:
  template <element T, class C>
  friend basic_request<C> isend(C&, codec::config, std::span<const T>, int, int);
  template <element T, class C>
  friend basic_request<C> irecv(C&, codec::config, std::span<T>, int, int);

  void decode(Cx& cx, const std::byte* frame, std::size_t bytes, std::size_t off, std::size_t len) {
    if constexpr (detail::staged_v<Cx>) {  // from the staging slot into the executor's memory
      std::byte* f = cx.memory().frame(slot_bytes_);
      cx.executor().copy(f, frame, bytes);
      frame = f;
    }
    switch (type_) {
      case dtype::f32: cx.decompress(frame, bytes, static_cast<float*>(out_) + off, len); break;
      case dtype::f64: cx.decompress(frame, bytes, static_cast<double*>(out_) + off, len); break;
      case dtype::bf16: cx.decompress(frame, bytes, static_cast<bf16*>(out_) + off, len); break;
      case dtype::f16: cx.decompress(frame, bytes, static_cast<f16*>(out_) + off, len); break;
    }
  }
  // The raw message was received as [header][caller's buffer]; check the header agrees.
  void check_raw(Cx& cx, const std::byte* head, std::size_t got) const {
    using Codecs = typename Cx::codecs;
    const void* h = head;
    unsigned char host_head[codec::header_bytes] = {};
    if constexpr (Cx::executor_type::is_device && !detail::staged_v<Cx>) {
      if (got >= codec::header_bytes) cx.executor().to_host(host_head, head, codec::header_bytes);
      h = host_head;
    }
    const codec::frame_info f = codec::read_header<Codecs>(h, got);
    if (f.codec != codec::identity_id<Codecs>())
      fail(errc::mismatch, "peer sent a " + codec::codec_name<Codecs>(f.codec) + " frame of " + std::to_string(f.count) +
                               " values where this rank expected " + std::to_string(n_) +
                               " uncompressed values (sizes or codecs differ between the two ranks)");
    if (f.type != type_)
      fail(errc::mismatch, "peer sent " + std::string(to_string(f.type)) + " values, this rank expects " +
                               std::string(to_string(type_)));
    if (f.count != n_)
      fail(errc::mismatch, "peer sent " + std::to_string(f.count) + " values, this rank expects " + std::to_string(n_));
    if (f.payload_bytes != n_ * elem_ || got != codec::header_bytes + n_ * elem_)
      fail(errc::corrupt_frame, "raw message of " + std::to_string(got) + " bytes does not match its header");
  }
  void release() noexcept {
    if (cx_) cx_->memory().release_slot(slot_);
    cx_ = nullptr;
    reqs_.clear();
  }
  void finish_quietly() noexcept {
    if (!cx_) return;
    for (auto& r : reqs_) Tr::wait_quietly(&r);
    release();
  }

  Cx* cx_ = nullptr;
  std::size_t slot_ = 0;
  bool recv_ = false, raw_ = false;
  dtype type_ = dtype::f32;
  void* out_ = nullptr;
  std::size_t n_ = 0, elem_ = 4, seg_ = 0, slot_bytes_ = 0;
  int peer_ = -1;
  std::vector<typename Tr::request_type> reqs_;
};

// The request of the host executor, MPI and the library's codecs.
using request = basic_request<context>;

namespace detail {

template <class Cx>
void check_peer(const Cx& cx, int peer, int tag, const char* what) {
  if (peer < 0 || peer >= cx.size())
    fail(errc::invalid_argument, cx.label() + " " + what + ": peer " + std::to_string(peer) +
                                     " is not a rank of this communicator (size " + std::to_string(cx.size()) + ")");
  if (tag < 0) fail(errc::invalid_argument, cx.label() + " " + what + ": negative tag " + std::to_string(tag));
}

}  // namespace detail

template <element T, class Cx>
basic_request<Cx> isend(Cx& cx, codec::config cfg, std::span<const T> x, int peer, int tag) {
  static_assert(context_type<Cx>, "hcomm: isend takes a basic_context<...>");
  using Tr = typename Cx::transport_type;
  using Codecs = typename Cx::codecs;
  const auto& ex = cx.executor();
  cx.check_usable();
  detail::check_peer(cx, peer, tag, "send");
  cx.check_buffer(x.data(), x.size(), "send data");
  const codec::config c = frame_config<T>(cx, cfg);
  typename Cx::timer tm(cx, false);
  basic_request<Cx> rq;
  rq.cx_ = &cx;
  rq.slot_ = cx.memory().acquire_slot();
  rq.peer_ = peer;
  auto& buf = cx.memory().slot(rq.slot_);
  const std::size_t n = x.size();
  if (go_raw<T>(cx, c, n)) {
    std::uint64_t payload = n * sizeof(T);
    codec::write_header_kernel hk{nullptr, static_cast<std::uint8_t>(codec::identity_id<Codecs>()),
                                  static_cast<std::uint8_t>(dtype_of<T>), 0, 0, n, &payload, nullptr, nullptr};
    if constexpr (detail::staged_v<Cx>) {  // [header][values] in the staging slot, one message
      std::byte* head = buf.ensure(codec::header_bytes + n * sizeof(T));
      hk.out = reinterpret_cast<unsigned char*>(head);
      hk(0);
      ex.copy(head + codec::header_bytes, x.data(), n * sizeof(T));
      ex.synchronize();
      rq.reqs_.resize(1);
      Tr::isend(head, codec::header_bytes + n * sizeof(T), peer, tag, cx.comm(), &rq.reqs_[0]);
      cx.counters().raw_bytes += n * sizeof(T);
      cx.counters().wire_bytes += n * sizeof(T) + codec::header_bytes;
      return rq;
    }
    std::byte* head = buf.ensure(codec::header_bytes);
    if constexpr (Cx::executor_type::is_device) {  // written on the host, then moved
      unsigned char h[codec::header_bytes];
      hk.out = h;
      hk(0);
      ex.from_host(head, h, codec::header_bytes);
      ex.synchronize();
    } else {
      hk.out = reinterpret_cast<unsigned char*>(head);
      hk(0);
    }
    rq.reqs_.resize(1);
    Tr::isend_with_header(head, codec::header_bytes, x.data(), n * sizeof(T), peer, tag, cx.comm(), &rq.reqs_[0]);
    cx.counters().raw_bytes += n * sizeof(T);
    cx.counters().wire_bytes += n * sizeof(T) + codec::header_bytes;
    return rq;
  }
  const std::size_t E = cx.template segment_elems<T>(), slot = cx.template p2p_slot_bytes<T>(c),
                    ns = cx.template segments_of<T>(n);
  std::byte* frames = buf.ensure(ns * slot);
  if constexpr (!detail::staged_v<Cx>) detail::settle_executor(cx);  // the grown slot's copy
  rq.reqs_.assign(ns, Tr::null_request());
  for (std::size_t k = 0; k < ns; ++k) {  // compress k+1 while k is on the wire
    const std::size_t off = k * E, len = std::min(E, n - off);
    std::size_t bytes = 0;
    if constexpr (detail::staged_v<Cx>) {  // compressed in executor memory, then staged
      std::byte* f = cx.memory().frame(slot);
      bytes = cx.compress(c, x.data() + off, len, f, slot);
      cx.before_send(f, bytes);
      ex.copy(frames + k * slot, f, bytes);
      ex.synchronize();
    } else {
      bytes = cx.compress(c, x.data() + off, len, frames + k * slot, slot);
      cx.before_send(frames + k * slot, bytes);
    }
    Tr::isend(frames + k * slot, bytes, peer, tag, cx.comm(), &rq.reqs_[k]);
    cx.counters().raw_bytes += len * sizeof(T);
    cx.counters().wire_bytes += bytes;
  }
  return rq;
}

template <element T, class Cx>
basic_request<Cx> irecv(Cx& cx, codec::config cfg, std::span<T> x, int peer, int tag) {
  static_assert(context_type<Cx>, "hcomm: irecv takes a basic_context<...>");
  using Tr = typename Cx::transport_type;
  cx.check_usable();
  detail::check_peer(cx, peer, tag, "recv");
  cx.check_buffer(x.data(), x.size(), "recv data");
  const codec::config c = frame_config<T>(cx, cfg);
  typename Cx::timer tm(cx, false);
  basic_request<Cx> rq;
  rq.cx_ = &cx;
  rq.slot_ = cx.memory().acquire_slot();
  rq.peer_ = peer;
  rq.recv_ = true;
  rq.type_ = dtype_of<T>;
  rq.elem_ = sizeof(T);
  rq.out_ = x.data();
  rq.n_ = x.size();
  auto& buf = cx.memory().slot(rq.slot_);
  const std::size_t n = x.size();
  if (go_raw<T>(cx, c, n)) {
    rq.raw_ = true;
    rq.reqs_.resize(1);
    if constexpr (detail::staged_v<Cx>) {  // [header][values] into the staging slot, copied out by wait()
      std::byte* head = buf.ensure(codec::header_bytes + n * sizeof(T));
      Tr::irecv(head, codec::header_bytes + n * sizeof(T), peer, tag, cx.comm(), &rq.reqs_[0]);
      return rq;
    }
    std::byte* head = buf.ensure(codec::header_bytes);
    // a device executor's queued work (a copy into the grown slot, kernels on x) done before
    // the transport writes them
    detail::settle_executor(cx);
    Tr::irecv_with_header(head, codec::header_bytes, x.data(), n * sizeof(T), peer, tag, cx.comm(), &rq.reqs_[0]);
    return rq;
  }
  const std::size_t slot = cx.template p2p_slot_bytes<T>(c), ns = cx.template segments_of<T>(n);
  rq.seg_ = cx.template segment_elems<T>();
  rq.slot_bytes_ = slot;
  std::byte* frames = buf.ensure(ns * slot);
  if constexpr (!detail::staged_v<Cx>) detail::settle_executor(cx);  // the grown slot's copy
  rq.reqs_.assign(ns, Tr::null_request());
  for (std::size_t k = 0; k < ns; ++k) Tr::irecv(frames + k * slot, slot, peer, tag, cx.comm(), &rq.reqs_[k]);
  return rq;
}

template <element T, class Cx>
void send(Cx& cx, const codec::config& cfg, std::span<const T> x, int peer, int tag) {
  isend(cx, cfg, x, peer, tag).wait();
}

template <element T, class Cx>
void recv(Cx& cx, const codec::config& cfg, std::span<T> x, int peer, int tag) {
  irecv(cx, cfg, x, peer, tag).wait();
}

}  // namespace hcomm::algorithm
