// hcomm/algorithm/p2p.hpp: compressed point-to-point messages (pipeline-stage activations
// and their gradients).
//
//   hcomm::algorithm::send(cx, cfg, std::span<const float>(acts), next, /*tag=*/7);
//   auto req = hcomm::algorithm::irecv(cx, cfg, std::span<float>(grads), next, 8);
//   ...                       // compute while the message arrives
//   req.wait();               // decodes; throws hcomm::error on a bad or mismatched frame
//
// Wire format: a message of n values is a sequence of frames, one per segment, all with the
// caller's tag (MPI keeps their order). Small or uncompressed messages are one frame of the
// none codec whose payload is the caller's buffer itself (an MPI struct type of header +
// data, no copy). Either way the header tells the receiver the sender's count, dtype and
// codec, so a receiver that expects something else throws errc::mismatch saying what
// differed. A corrupted frame (checksum) is reported after the rest of the message has been
// received (the sender is not left blocked); a protocol mismatch cancels the receives not
// yet matched.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hcomm/algorithm/context.hpp"
#include "hcomm/codec/frame.hpp"

namespace hcomm::algorithm {

// A pending send or receive. wait() completes it (and decodes a receive); move-only. A
// request destroyed without wait() still completes its MPI transfers (so buffers and peers
// are safe), but a receive is then not decoded (its buffer is undefined) and errors are lost.
// A failed receive leaves the caller's buffer undefined too.
class request {
 public:
  request() = default;
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  request(request&& o) noexcept { *this = std::move(o); }
  request& operator=(request&& o) noexcept {
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
  ~request() { finish_quietly(); }

  bool pending() const noexcept { return cx_ != nullptr; }

  void wait() {
    if (!cx_) return;
    context& cx = *cx_;
    context::timer tm(cx);
    deferred_error err;
    const unsigned idle = cx.idle_sleep_us();
    if (!recv_) {
      int rc = MPI_SUCCESS;
      for (auto& r : reqs_) {
        const int rk = mpi::wait(&r, MPI_STATUS_IGNORE, idle);
        if (rc == MPI_SUCCESS) rc = rk;
      }
      release();
      if (rc != MPI_SUCCESS) mpi::fail_mpi(rc, "MPI_Wait (send)", HCOMM_WHERE_);
      return;
    }
    std::byte* buf = cx.slot(slot_).data();
    const std::string who = cx.label() + " recv from rank " + std::to_string(peer_);
    for (std::size_t k = 0; k < reqs_.size(); ++k) {
      MPI_Status st;
      const int rc = mpi::wait(&reqs_[k], &st, idle);
      try {
        if (rc != MPI_SUCCESS) mpi::fail_mpi(rc, "MPI_Wait (recv)", HCOMM_WHERE_);
        int got = 0;
        HCOMM_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &got));
        if (raw_) {
          check_raw(buf, static_cast<std::size_t>(got));
        } else {
          const std::size_t off = k * seg_, len = std::min(seg_, n_ - off);
          decode(cx, buf + k * slot_bytes_, static_cast<std::size_t>(got), off, len);
        }
      } catch (const error& e) {
        err.record(e, who + " segment " + std::to_string(k));
        if (e.code() != errc::corrupt_frame) {  // the protocol diverged: stop waiting
          cx.keep_comm_alive();  // (the sender's remaining frames stay unmatched)
          for (std::size_t j = k + 1; j < reqs_.size(); ++j) {
            MPI_Cancel(&reqs_[j]);
            MPI_Wait(&reqs_[j], MPI_STATUS_IGNORE);
          }
          break;
        }
      }
    }
    release();
    err.raise();
  }

 private:
  template <floating_element T>
  friend request isend(context&, codec::config, std::span<const T>, int, int);
  template <floating_element T>
  friend request irecv(context&, codec::config, std::span<T>, int, int);

  void decode(context& cx, const std::byte* frame, std::size_t bytes, std::size_t off, std::size_t len) {
    if (type_ == dtype::f32) cx.decompress(frame, bytes, static_cast<float*>(out_) + off, len);
    else cx.decompress(frame, bytes, static_cast<double*>(out_) + off, len);
  }
  // The raw message was received as [header][caller's buffer]; check the header agrees.
  void check_raw(const std::byte* head, std::size_t got) const {
    const codec::frame_info f = codec::read_header(head, got);
    if (f.codec != codec_id::none)
      fail(errc::mismatch, "peer sent a " + codec::codec_name(f.codec) + " frame of " + std::to_string(f.count) +
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
    if (cx_) cx_->release_slot(slot_);
    cx_ = nullptr;
    reqs_.clear();
  }
  void finish_quietly() noexcept {
    if (!cx_) return;
    for (auto& r : reqs_) MPI_Wait(&r, MPI_STATUS_IGNORE);
    release();
  }

  context* cx_ = nullptr;
  std::size_t slot_ = 0;
  bool recv_ = false, raw_ = false;
  dtype type_ = dtype::f32;
  void* out_ = nullptr;
  std::size_t n_ = 0, elem_ = 4, seg_ = 0, slot_bytes_ = 0;
  int peer_ = -1;
  std::vector<MPI_Request> reqs_;
};

namespace detail {

// MPI type for [64-byte header at `head`][bytes at `data`], addressed from MPI_BOTTOM.
inline MPI_Datatype header_plus_data(const void* head, const void* data, std::size_t data_bytes) {
  int lens[2] = {static_cast<int>(codec::header_bytes), mpi::count_of(data_bytes, "uncompressed message")};
  MPI_Aint disp[2];
  HCOMM_MPI_CHECK(MPI_Get_address(head, &disp[0]));
  HCOMM_MPI_CHECK(MPI_Get_address(data ? data : head, &disp[1]));
  MPI_Datatype t;
  HCOMM_MPI_CHECK(MPI_Type_create_hindexed(data_bytes ? 2 : 1, lens, disp, MPI_BYTE, &t));
  HCOMM_MPI_CHECK(MPI_Type_commit(&t));
  return t;
}

inline void check_peer(const context& cx, int peer, int tag, const char* what) {
  if (peer < 0 || peer >= cx.size())
    fail(errc::invalid_argument, cx.label() + " " + what + ": peer " + std::to_string(peer) +
                                     " is not a rank of this communicator (size " + std::to_string(cx.size()) + ")");
  if (tag < 0) fail(errc::invalid_argument, cx.label() + " " + what + ": negative tag " + std::to_string(tag));
}

}  // namespace detail

template <floating_element T>
request isend(context& cx, codec::config cfg, std::span<const T> x, int peer, int tag) {
  cx.check_usable();
  detail::check_peer(cx, peer, tag, "send");
  const codec::config c = frame_config<T>(cx, cfg);
  context::timer tm(cx, false);
  request rq;
  rq.cx_ = &cx;
  rq.slot_ = cx.acquire_slot();
  rq.peer_ = peer;
  auto& buf = cx.slot(rq.slot_);
  const std::size_t n = x.size();
  if (go_raw<T>(cx, c, n)) {
    if (buf.size() < codec::header_bytes) buf.resize(codec::header_bytes);
    std::uint64_t payload = n * sizeof(T);
    codec::write_header_kernel{reinterpret_cast<unsigned char*>(buf.data()), static_cast<std::uint8_t>(codec_id::none),
                               static_cast<std::uint8_t>(dtype_of<T>), 0, 0, n, &payload, nullptr, nullptr}(0);
    MPI_Datatype t = detail::header_plus_data(buf.data(), x.data(), n * sizeof(T));
    rq.reqs_.resize(1);
    const int rc = MPI_Isend(MPI_BOTTOM, 1, t, peer, tag, cx.comm(), &rq.reqs_[0]);
    MPI_Type_free(&t);
    if (rc != MPI_SUCCESS) mpi::fail_mpi(rc, "MPI_Isend", HCOMM_WHERE_);
    cx.counters().raw_bytes += n * sizeof(T);
    cx.counters().wire_bytes += n * sizeof(T) + codec::header_bytes;
    return rq;
  }
  const std::size_t E = cx.segment_elems<T>(), slot = cx.p2p_slot_bytes<T>(c), ns = cx.segments_of<T>(n);
  if (buf.size() < ns * slot) buf.resize(ns * slot);
  rq.reqs_.assign(ns, MPI_REQUEST_NULL);
  for (std::size_t k = 0; k < ns; ++k) {  // compress k+1 while k is on the wire
    const std::size_t off = k * E, len = std::min(E, n - off);
    const std::size_t bytes = cx.compress(c, x.data() + off, len, buf.data() + k * slot, slot);
    cx.before_send(buf.data() + k * slot, bytes);
    HCOMM_MPI_CHECK(MPI_Isend(buf.data() + k * slot, static_cast<int>(bytes), MPI_BYTE, peer, tag, cx.comm(),
                              &rq.reqs_[k]));
    cx.counters().raw_bytes += len * sizeof(T);
    cx.counters().wire_bytes += bytes;
  }
  return rq;
}

template <floating_element T>
request irecv(context& cx, codec::config cfg, std::span<T> x, int peer, int tag) {
  cx.check_usable();
  detail::check_peer(cx, peer, tag, "recv");
  const codec::config c = frame_config<T>(cx, cfg);
  context::timer tm(cx, false);
  request rq;
  rq.cx_ = &cx;
  rq.slot_ = cx.acquire_slot();
  rq.peer_ = peer;
  rq.recv_ = true;
  rq.type_ = dtype_of<T>;
  rq.elem_ = sizeof(T);
  rq.out_ = x.data();
  rq.n_ = x.size();
  auto& buf = cx.slot(rq.slot_);
  const std::size_t n = x.size();
  if (go_raw<T>(cx, c, n)) {
    rq.raw_ = true;
    if (buf.size() < codec::header_bytes) buf.resize(codec::header_bytes);
    MPI_Datatype t = detail::header_plus_data(buf.data(), x.data(), n * sizeof(T));
    rq.reqs_.resize(1);
    const int rc = MPI_Irecv(MPI_BOTTOM, 1, t, peer, tag, cx.comm(), &rq.reqs_[0]);
    MPI_Type_free(&t);
    if (rc != MPI_SUCCESS) mpi::fail_mpi(rc, "MPI_Irecv", HCOMM_WHERE_);
    return rq;
  }
  const std::size_t slot = cx.p2p_slot_bytes<T>(c), ns = cx.segments_of<T>(n);
  rq.seg_ = cx.segment_elems<T>();
  rq.slot_bytes_ = slot;
  if (buf.size() < ns * slot) buf.resize(ns * slot);
  rq.reqs_.assign(ns, MPI_REQUEST_NULL);
  for (std::size_t k = 0; k < ns; ++k)
    HCOMM_MPI_CHECK(MPI_Irecv(buf.data() + k * slot, static_cast<int>(slot), MPI_BYTE, peer, tag, cx.comm(),
                              &rq.reqs_[k]));
  return rq;
}

template <floating_element T>
void send(context& cx, const codec::config& cfg, std::span<const T> x, int peer, int tag) {
  isend(cx, cfg, x, peer, tag).wait();
}

template <floating_element T>
void recv(context& cx, const codec::config& cfg, std::span<T> x, int peer, int tag) {
  irecv(cx, cfg, x, peer, tag).wait();
}

}  // namespace hcomm::algorithm
