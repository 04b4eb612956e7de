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
// differed. Receives are posted ahead into slots sized for the typical frame
// (context::frame_slot_bytes); a larger frame (ZFP with many NaN/Inf) goes as a first message
// of exactly the slot's size, whose last 8 bytes are a marker and a tag, and the rest of the
// frame (plus the same 8 bytes) on the context's side communicator with that tag. A corrupted frame (checksum) is reported after the rest of the message has been
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

namespace detail {

// The last 8 bytes of the first part of a two-part frame, repeated at the end of the second
// part: a marker (high 32 bits) and the second part's tag on the side communicator.
inline constexpr std::size_t part_trailer_bytes = 8;
inline constexpr std::uint64_t part_marker = 0x48433250;  // "HC2P"
inline std::uint64_t read_trailer(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | static_cast<std::uint64_t>(p[i]);
  return v;
}
inline void write_trailer(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}

}  // namespace detail

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
      bound_ = o.bound_;
      peer_ = o.peer_;
      reqs_ = std::move(o.reqs_);
      parts_ = std::move(o.parts_);
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
    if (!recv_) {
      const int rc = MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
      release();
      if (rc != MPI_SUCCESS) mpi::fail_mpi(rc, "MPI_Waitall (send)", HCOMM_WHERE_);
      return;
    }
    std::byte* buf = cx.slot(slot_).data();
    const std::string who = cx.label() + " recv from rank " + std::to_string(peer_);
    for (std::size_t k = 0; k < reqs_.size(); ++k) {
      MPI_Status st;
      const int rc = MPI_Wait(&reqs_[k], &st);
      try {
        if (rc != MPI_SUCCESS) mpi::fail_mpi(rc, "MPI_Wait (recv)", HCOMM_WHERE_);
        int got = 0;
        HCOMM_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &got));
        if (raw_) {
          check_raw(buf, static_cast<std::size_t>(got));
        } else {
          const std::size_t off = k * seg_, len = std::min(seg_, n_ - off);
          const std::byte* frame = buf + k * slot_bytes_;
          std::size_t bytes = static_cast<std::size_t>(got);
          if (bytes == slot_bytes_) frame = join_parts(cx, frame, bytes);
          decode(cx, frame, bytes, off, len);
        }
      } catch (const error& e) {
        err.record(e, who + " segment " + std::to_string(k));
        if (e.code() != errc::corrupt_frame) {  // the protocol diverged: stop waiting
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
  // The first part of a frame larger than the slot has arrived (a message of exactly the
  // slot's size): receives the second part from the side communicator and returns the whole
  // frame, reassembled in the context's frame scratch (bytes: its size).
  const std::byte* join_parts(context& cx, const std::byte* first, std::size_t& bytes) {
    const std::size_t head = slot_bytes_ - detail::part_trailer_bytes;
    const std::uint64_t trailer = detail::read_trailer(first + head);
    const std::uint64_t tag = trailer & 0xffffffffu;
    if ((trailer >> 32) != detail::part_marker || tag > static_cast<std::uint64_t>(cx.tag_ub()))
      fail(errc::corrupt_frame, "a message of exactly the slot size (" + std::to_string(slot_bytes_) +
                                    " bytes) that is not the first part of a larger frame");
    MPI_Message msg;
    MPI_Status st;
    HCOMM_MPI_CHECK(MPI_Mprobe(peer_, static_cast<int>(tag), cx.side_comm(), &msg, &st));
    int more = 0;
    HCOMM_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &more));
    const std::size_t m = static_cast<std::size_t>(more);
    // (A second part that cannot belong to a frame of this codec is still received, so that the
    // sender is not left waiting, then reported.)
    std::byte* f = cx.frame_scratch(std::max(bound_, head + m));
    HCOMM_MPI_CHECK(MPI_Mrecv(f + head, more, MPI_BYTE, &msg, MPI_STATUS_IGNORE));
    if (m <= detail::part_trailer_bytes || head + m - detail::part_trailer_bytes > bound_ ||
        detail::read_trailer(f + head + m - detail::part_trailer_bytes) != trailer)
      fail(errc::corrupt_frame, "second part of a frame (" + std::to_string(m) + " bytes) does not match its first part");
    std::memcpy(f, first, head);
    bytes = head + m - detail::part_trailer_bytes;
    return f;
  }
  void release() noexcept {
    if (cx_) cx_->release_slot(slot_);
    cx_ = nullptr;
    reqs_.clear();
    parts_.clear();
  }
  // Completes the transfers without decoding; the second part of a two-part frame is still
  // received (the sender waits for it).
  void finish_quietly() noexcept {
    if (!cx_) return;
    for (auto& r : reqs_) {
      MPI_Status st;
      if (MPI_Wait(&r, &st) != MPI_SUCCESS || !recv_ || raw_) continue;
      int got = 0;
      MPI_Get_count(&st, MPI_BYTE, &got);
      if (static_cast<std::size_t>(got) != slot_bytes_) continue;
      const std::size_t k = static_cast<std::size_t>(&r - reqs_.data());
      try {
        std::size_t bytes = 0;
        (void)join_parts(*cx_, cx_->slot(slot_).data() + k * slot_bytes_, bytes);
      } catch (...) {  // (nothing to report to: the request was dropped)
      }
    }
    release();
  }

  context* cx_ = nullptr;
  std::size_t slot_ = 0;
  bool recv_ = false, raw_ = false;
  dtype type_ = dtype::f32;
  void* out_ = nullptr;
  std::size_t n_ = 0, elem_ = 4, seg_ = 0, slot_bytes_ = 0, bound_ = 0;
  int peer_ = -1;
  std::vector<MPI_Request> reqs_;               // a send: first parts, then second parts
  std::vector<std::vector<std::byte>> parts_;  // a send: second parts of frames over the slot
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
  const std::size_t E = cx.segment_elems<T>(), slot = cx.frame_slot_bytes<T>(c), ns = cx.segments_of<T>(n);
  const std::size_t bound = codec::max_frame_bytes(c, E), head = slot - detail::part_trailer_bytes;
  if (buf.size() < ns * slot) buf.resize(ns * slot);
  rq.reqs_.assign(2 * ns, MPI_REQUEST_NULL);
  for (std::size_t k = 0; k < ns; ++k) {  // compress k+1 while k is on the wire
    const std::size_t off = k * E, len = std::min(E, n - off);
    std::byte* s = buf.data() + k * slot;
    // A slot above the codec's bound takes any frame; otherwise compress aside and split.
    std::byte* f = slot > bound ? s : cx.frame_scratch(bound);
    const std::size_t bytes = cx.compress(c, x.data() + off, len, f, bound);
    cx.before_send(f, bytes);
    cx.counters().raw_bytes += len * sizeof(T);
    if (bytes < slot) {
      if (f != s) std::memcpy(s, f, bytes);
      HCOMM_MPI_CHECK(MPI_Isend(s, static_cast<int>(bytes), MPI_BYTE, peer, tag, cx.comm(), &rq.reqs_[k]));
      cx.counters().wire_bytes += bytes;
      continue;
    }
    const int tag2 = cx.part_tag(cx.next_part_seq());
    const std::uint64_t trailer = detail::part_marker << 32 | static_cast<std::uint32_t>(tag2);
    std::memcpy(s, f, head);
    detail::write_trailer(s + head, trailer);
    if (rq.parts_.size() < ns) rq.parts_.resize(ns);
    auto& rest = rq.parts_[k];
    rest.resize(bytes - head + detail::part_trailer_bytes);
    std::memcpy(rest.data(), f + head, bytes - head);
    detail::write_trailer(rest.data() + (bytes - head), trailer);
    HCOMM_MPI_CHECK(MPI_Isend(s, static_cast<int>(slot), MPI_BYTE, peer, tag, cx.comm(), &rq.reqs_[k]));
    HCOMM_MPI_CHECK(MPI_Isend(rest.data(), mpi::count_of(rest.size(), "second part of a frame"), MPI_BYTE, peer,
                              tag2, cx.side_comm(), &rq.reqs_[ns + k]));
    cx.counters().wire_bytes += slot + rest.size();
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
  const std::size_t slot = cx.frame_slot_bytes<T>(c), ns = cx.segments_of<T>(n);
  rq.seg_ = cx.segment_elems<T>();
  rq.slot_bytes_ = slot;
  rq.bound_ = codec::max_frame_bytes(c, rq.seg_);
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
