// hcomm/algorithm/ring.hpp: compressed ring reduce-scatter, allgather and allreduce.
//
//   hcomm::algorithm::context cx(comm);
//   auto cfg = hcomm::codec::parse_config("zfp:8");
//   hcomm::algorithm::allreduce(cx, cfg, std::span<float>(g));            // in place, sum
//   hcomm::algorithm::reduce_scatter(cx, cfg, in /*p*m*/, out /*m*/);      // rank r gets block r
//   hcomm::algorithm::allgather(cx, cfg, in /*m*/, out /*p*m*/);
//
// Allreduce = reduce-scatter + allgather on a ring of p ranks, n split into p chunks:
// - reduce-scatter, p-1 steps: receive a chunk's partial sum from the left, decode, add the
//   local values, re-compress, pass it right. Rank r ends owning chunk r.
// - the owner compresses its reduced chunk once and, with a lossy codec, replaces its own copy
//   by the decoded frame; the allgather forwards that frame unchanged p-1 times and every
//   rank decodes the same bytes, so all ranks end bitwise identical (replicas never drift).
// - each chunk is cut into segments (options::segment_bytes) and the ring is pipelined per
//   segment across its steps: a segment is re-compressed and sent on as soon as it has been
//   received, decoded and added, while the later segments of the step are still arriving
//   (detail::ring_pipeline).
// Messages below options::threshold_bytes go uncompressed through the transport's own
// collectives. Every step runs on the context's executor, in its memory; the transport moves
// the frames (transport/mpi_host.hpp; with transport/mpi_staged.hpp the frame slots are host
// staging: each frame is copied there on the executor's stream before it is sent, and back
// into the executor's memory before it is decoded).
//
// Element types: float, double and the 16-bit storage types bf16 and f16. A 16-bit sum is
// kept in the 16-bit type: each addition widens both operands to float, adds in float and
// rounds once to nearest even (vector_ops.hpp; the uncompressed path's MPI operation,
// mpi::sum_op, adds the same way). So on 2 ranks an element's result is exactly
// T(float(x0) + float(x1)); on more ranks it carries one rounding per addition, in the
// ring's order (or MPI's, uncompressed), and all ranks end identical. Residuals of error
// feedback are 16-bit values too. Codecs must take the 16-bit type (none, MPC, ZFP).
//
// Error feedback (residual != nullptr): the input is x + e (e = the previous residual);
// every compression this rank performs (its contribution at step 0, the partial sums it
// forwards, its owned chunk) records what it lost into e. Summed over ranks, e is exactly
// the difference between the true and the decoded sum, so adding it back next step makes
// the running sum of results track the running true sum.
#pragma once
#include <algorithm>
#include <cstddef>
#include <exception>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hcomm/algorithm/context.hpp"
#include "hcomm/algorithm/native.hpp"
#include "hcomm/algorithm/ring_lockstep.hpp"
#include "hcomm/algorithm/vector_ops.hpp"

namespace hcomm::algorithm {

namespace detail {

// Tags of the ring's messages on the context's communicator (user point-to-point tags should
// avoid 0x4843..0x4846). One per phase is enough: every rank sends and posts receives in the
// same (step, segment) order and MPI keeps the order of messages with one tag. The second part
// of a frame larger than its slot goes with tag + tag_second_part.
inline constexpr int tag_reduce_scatter = 0x4843;  // "HC"
inline constexpr int tag_allgather = 0x4844;
inline constexpr int tag_second_part = 2;

// The ring of reduce-scatter and/or allgather, pipelined segment by segment across steps.
//
// Segment k of the chunk sent at reduce-scatter step s+1 is the one received at step s, so it
// is re-compressed and sent as soon as that one segment is decoded and added, not after the
// whole step: the steps of the ring overlap, the wire stays busy while the codec works, and
// the MPI calls between segments keep MPI's progress going. Likewise the owner compresses
// each reduced segment and starts the allgather with it at once, and the allgather forwards
// each received frame before decoding it.
//
// Frame slots: three sets of segments_of(max chunk) slots. Set 0 receives the reduce-scatter
// frames and then holds this rank's own frames for the allgather; sets 1 and 2 alternate by
// step between frames sent in the reduce-scatter and frames received (and forwarded) in the
// allgather. Before a slot is reused its previous requests are completed. A slot holds a
// typical frame (context::ring_slot_bytes); a larger one (ZFP with many NaN/Inf) is sent as
// its first slot-size bytes and then the rest (tag + tag_second_part), kept in the slot's
// overflow buffer. Whole frames are shorter than the slot, so the length of the first message
// says whether a second follows, whatever the frame's bytes say.
//
// Error feedback (residual != nullptr): every compression of this rank (its contribution at
// step 0, each partial sum it forwards, its owned chunk) records what it lost into residual
// (laid out like data). A frame that fails to decode is recorded in err and the pattern goes
// on (the peers are not left waiting); the error is thrown by the caller at the end.
//
// With a staging transport (Transport::stages<Exec>) the slots and second parts are host
// staging (workspace::wire): a frame is compressed into the executor's frame scratch and
// copied into its slot on the stream. Where the slot is the codec's typical frame (a slot
// below the codec's bound: ZFP, bf16, int8) the slot's worth of bytes is copied right behind
// the encode, before the host knows the size, so the host waits for the stream once per
// frame, for its size, and finds the bytes staged (a frame longer than the slot has its rest
// copied after); otherwise (a slot above the bound: MPC, none) the host reads the size, then
// copies exactly the frame and waits again. A received frame is copied from its slot into
// the frame scratch and decoded there (the engine's decode reads the header on the host, so
// the copy is complete, and the slot free for its next receive, when the decode returns).
template <class T, class Cx>
void ring_pipeline(Cx& cx, const codec::config& c, T* data, const chunks& ch, T* residual, bool do_rs, bool do_ag,
                   deferred_error& err) {
  using Tr = typename Cx::transport_type;
  using request_type = typename Cx::request_type;
  const auto& ex = cx.executor();
  auto& ws = cx.memory();
  using wire_buffer = typename std::remove_reference_t<decltype(ws)>::wire_buffer_type;
  constexpr bool staged = detail::staged_v<Cx>;
  const int p = cx.size(), r = cx.rank();
  const int right = (r + 1) % p, left = (r - 1 + p) % p;
  const std::size_t E = cx.template segment_elems<T>(), slot = cx.template ring_slot_bytes<T>(c);
  const std::size_t bound = codec::max_frame_bytes<typename Cx::codecs>(c, E);
  const std::size_t nseg = cx.template segments_of<T>(ch.max_len());
  const bool lossy = codec::is_lossy<typename Cx::codecs>(c);
  std::byte* set[3];
  request_type *req[3], *req2[3];        // per slot: the (first) message, the second part
  std::vector<wire_buffer>* rest[3];     // per slot: a second part, when there is one
  for (int i = 0; i < 3; ++i) {
    set[i] = ws.wire(i, nseg * slot);
    req[i] = ws.requests(i, nseg);
    req2[i] = ws.requests(3 + i, nseg);
    rest[i] = &ws.overflow(i, nseg);
  }
  // If anything throws (an MPI error, an allocation), no request handle may outlive this call
  // in the context (a later call would wait on it or match its messages): pending receives are
  // cancelled, sends freed to finish on their own from the context's buffers, and the context
  // is marked unusable (context::check_usable), since the peers' messages of this pattern
  // may still arrive and a later call could regrow the buffers under a freed send.
  struct unwind_guard {
    Cx& cx;
    request_type** req;
    request_type** req2;
    std::size_t n;
    int uncaught = std::uncaught_exceptions();
    ~unwind_guard() {
      if (std::uncaught_exceptions() == uncaught) return;
      cx.mark_interrupted("ring operation");
      for (int i = 0; i < 3; ++i)
        for (request_type* r : {req[i], req2[i]})
          for (std::size_t k = 0; k < n; ++k) Tr::abandon(&r[k]);  // cancelled, or freed to finish
    }
  } guard{cx, req, req2, nseg};
  std::byte* frame = cx.template frame_scratch<T>(c);  // a whole frame: compressed into, or reassembled
  auto chunk_of = [&](int q) { return static_cast<std::size_t>(((q % p) + p) % p); };
  auto slot_at = [&](int i, std::size_t k) { return set[i] + k * slot; };
  const unsigned idle = cx.idle_sleep_us();
  const request_type null = Tr::null_request();
  auto settle = [&](int i, std::size_t k) {
    for (request_type* q : {&req[i][k], &req2[i][k]})
      if (*q != null) {
        const int rc = Tr::wait(q, nullptr, idle);
        if (rc != Tr::success) Tr::fail(rc, "wait", HCOMM_WHERE_);
      }
  };
  auto post_recv = [&](int i, std::size_t k, int tag) {
    settle(i, k);
    // unstaged device memory: no decode or copy still reading the slot
    if constexpr (!staged) detail::settle_executor(cx);
    Tr::irecv(slot_at(i, k), slot, left, tag, cx.comm(), &req[i][k]);
  };
  // Sends the frame in slot (i, k) (and its second part, when bytes >= slot).
  auto send = [&](int i, std::size_t k, std::size_t bytes, std::size_t raw, int tag) {
    std::byte* f = slot_at(i, k);
    const std::size_t first = std::min(bytes, slot);
    Tr::isend(f, first, right, tag, cx.comm(), &req[i][k]);
    if (bytes >= slot) Tr::isend((*rest[i])[k].data(), bytes - slot, right, tag + tag_second_part, cx.comm(), &req2[i][k]);
    cx.counters().raw_bytes += raw * sizeof(T);
    cx.counters().wire_bytes += bytes;
  };
  // Puts a frame from `frame` into slot (i, k) (the part past the slot into its overflow
  // buffer), after the test hook. Staged: the host waits for the copies (the send follows).
  auto place = [&](int i, std::size_t k, std::size_t bytes) {
    cx.before_send(frame, bytes);
    if (bytes < slot) {
      ex.copy(slot_at(i, k), frame, bytes);
    } else {
      ex.copy(slot_at(i, k), frame, slot);
      ex.copy((*rest[i])[k].ensure(bytes - slot), frame + slot, bytes - slot);
    }
    if constexpr (staged) ex.synchronize();
    else detail::settle_executor(cx);  // the copies done before the transport reads the slot
  };
  // Completes the receive in slot (i, k) (and receives a second part): the frame's size, or 0
  // with the error recorded.
  auto wait_recv = [&](int i, std::size_t k, const char* phase, int step, int tag) -> std::size_t {
    typename Tr::status_type st;
    const int rc = Tr::wait(&req[i][k], &st, idle);
    try {
      if (rc != Tr::success) Tr::fail(rc, "wait", HCOMM_WHERE_);
      const std::size_t got = Tr::received_bytes(st);
      // (A frame is never shorter than its header: an empty message is a frame lost upstream,
      // which the sender has reported; this rank reports it too rather than skip the segment.)
      if (got < codec::header_bytes) fail(errc::corrupt_frame, "frame of " + std::to_string(got) + " bytes (lost upstream)");
      if (got < slot) return got;
      typename Tr::message_type msg;
      const std::size_t more = Tr::probe(left, tag + tag_second_part, cx.comm(), &msg);
      Tr::recv_probed(&msg, (*rest[i])[k].ensure(more), more);
      return slot + more;
    } catch (const error& e) {
      err.record(e, cx.label() + " " + phase + " step " + std::to_string(step) + " segment " + std::to_string(k) +
                        " from rank " + std::to_string(left));
      return 0;
    }
  };
  // Decodes the frame received in slot (i, k) into dst; a bad frame is recorded (dst untouched)
  // and false returned.
  auto decode = [&](int i, std::size_t k, std::size_t bytes, T* dst, std::size_t len, const char* phase, int step) {
    try {
      if constexpr (!staged) {
        if (bytes < slot) {
          cx.decompress(slot_at(i, k), bytes, dst, len);
          return true;
        }
      }
      if (bytes > bound) fail(errc::corrupt_frame, "frame of " + std::to_string(bytes) + " bytes exceeds the codec's bound");
      ex.copy(frame, slot_at(i, k), std::min(bytes, slot));
      if (bytes > slot) ex.copy(frame + slot, (*rest[i])[k].data(), bytes - slot);
      cx.decompress(frame, bytes, dst, len);
      return true;
    } catch (const error& e) {
      err.record(e, cx.label() + " " + phase + " step " + std::to_string(step) + " segment " + std::to_string(k) +
                        " from rank " + std::to_string(left));
      return false;
    }
  };
  // Staged, slot below the bound: encode, copy the slot's worth behind it, one wait for the
  // size (the copy is before it on the stream), the rest of a longer frame after. The frame
  // size on the host.
  std::uint64_t* size_word = staged ? ws.size_word() : nullptr;
  const bool copy_ahead = staged && slot <= bound;
  auto compress_staged = [&](const T* src, std::size_t len, int i, std::size_t k) -> std::size_t {
    const double t0 = Tr::now();
    cx.engine().compress_async(c, src, len, frame, bound, size_word);
    ex.copy(slot_at(i, k), frame, slot);
    std::uint64_t got = 0;
    ex.to_host(&got, size_word, sizeof got);  // waits for the stream: the size, and the slot staged
    const std::size_t bytes = static_cast<std::size_t>(got);
    if (bytes >= slot) {
      ex.copy((*rest[i])[k].ensure(bytes - slot), frame + slot, bytes - slot);
      ex.synchronize();
    }
    cx.counters().compress_seconds += Tr::now() - t0;
    return bytes;
  };
  // Compresses src[0, len) into slot (i, k) and sends it with tag. Lossy codecs record the
  // loss into res; with keep_decoded the source is replaced by the decoded values (the owner
  // keeps what the others will decode). The send is posted before the decode-back, which so
  // runs while the frame is on the wire.
  auto compress_send = [&](T* src, T* res, std::size_t len, int i, std::size_t k, bool keep_decoded, int tag) {
    std::size_t bytes = 0;
    if (copy_ahead && !cx.opts().tamper) {  // (the test hook sees the frame before it is staged)
      bytes = compress_staged(src, len, i, k);
    } else {
      bytes = cx.compress(c, src, len, frame, bound);
      place(i, k, bytes);
    }
    send(i, k, bytes, len, tag);
    if (lossy && (res || keep_decoded)) {
      T* dec = ws.template scratch<T>(E);
      cx.decompress(frame, bytes, dec, len);
      if (res) loss_of(ex, res, src, dec, len);
      if (keep_decoded) copy_values(ex, src, dec, len);
    } else if (res) {
      zero_values(ex, res, len);
    }
  };
  auto seg_len = [&](std::size_t chunk, std::size_t k) { return std::min(E, ch.len(chunk) - k * E); };
  auto at = [&](T* base, std::size_t chunk, std::size_t k) { return base ? base + ch.off(chunk) + k * E : nullptr; };
  auto send_set = [](int step) { return 1 + (step & 1); };  // sets 1 and 2 alternate

  auto segs = [&](std::size_t chunk) { return cx.template segments_of<T>(ch.len(chunk)); };
  // Receives of segments [from, to) of a step (chunks may differ by one segment).
  auto post_recvs = [&](int i, std::size_t from, std::size_t to, int tag) {
    for (std::size_t k = from; k < to; ++k) post_recv(i, k, tag);
  };

  // This rank's own (reduced) segment k: compressed once, kept decoded, sent as allgather step 0.
  const std::size_t own = static_cast<std::size_t>(r), ag_in0 = chunk_of(r - 1);
  auto start_allgather = [&](std::size_t k) {
    const std::size_t len = seg_len(own, k);
    if (k < segs(ag_in0)) post_recv(send_set(0), k, tag_allgather);
    compress_send(at(data, own, k), at(residual, own, k), len, 0, k, true, tag_allgather);
  };

  if (do_rs) {
    const std::size_t first_in = chunk_of(r - 2), first_out = chunk_of(r - 1);
    post_recvs(0, 0, segs(first_in), tag_reduce_scatter);
    for (std::size_t k = 0; k < segs(first_out); ++k) {
      const std::size_t len = seg_len(first_out, k);
      const int o = send_set(0);
      settle(o, k);
      compress_send(at(data, first_out, k), at(residual, first_out, k), len, o, k, false, tag_reduce_scatter);
    }
    for (int s = 0; s + 1 < p; ++s) {
      const std::size_t in = chunk_of(r - s - 2);  // = the chunk sent at step s + 1
      const std::size_t next_in = chunk_of(r - s - 3);
      const bool last = s + 2 == p;  // in == own
      for (std::size_t k = 0; k < segs(in); ++k) {
        const std::size_t len = seg_len(in, k);
        const std::size_t bytes = wait_recv(0, k, "reduce-scatter", s, tag_reduce_scatter);
        T* dec = ws.template scratch<T>(E);
        if (bytes && decode(0, k, bytes, dec, len, "reduce-scatter", s)) add_into(ex, at(data, in, k), dec, len);
        if (!last) {
          if (k < segs(next_in)) post_recv(0, k, tag_reduce_scatter);
          const int o = send_set(s + 1);
          settle(o, k);
          compress_send(at(data, in, k), at(residual, in, k), len, o, k, false, tag_reduce_scatter);
        } else if (do_ag) {
          start_allgather(k);
        }
      }
      if (!last) post_recvs(0, segs(in), segs(next_in), tag_reduce_scatter);
    }
  } else if (do_ag) {
    for (std::size_t k = 0; k < segs(own); ++k) start_allgather(k);
  }
  if (do_ag) post_recvs(send_set(0), segs(own), segs(ag_in0), tag_allgather);

  if (do_ag) {
    for (int s = 0; s + 1 < p; ++s) {
      const std::size_t in = chunk_of(r - s - 1);  // forwarded at step s + 1
      const std::size_t next_in = chunk_of(r - s - 2);
      const int i = send_set(s), next = send_set(s + 1);
      const bool forward = s + 2 < p;
      for (std::size_t k = 0; k < segs(in); ++k) {
        const std::size_t len = seg_len(in, k);
        const std::size_t bytes = wait_recv(i, k, "allgather", s, tag_allgather);
        if (forward) {  // forwarded even if it does not decode here: the peers see the same bytes
          if (k < segs(next_in)) post_recv(next, k, tag_allgather);
          send(i, k, bytes, len, tag_allgather);
        }
        if (bytes) decode(i, k, bytes, at(data, in, k), len, "allgather", s);
      }
      if (forward) post_recvs(next, segs(in), segs(next_in), tag_allgather);
    }
  }
  for (int i = 0; i < 3; ++i)
    for (std::size_t k = 0; k < nseg; ++k) settle(i, k);
}

// The ring on the context's transport: in rounds where the transport moves payloads by
// NCCL's rules (ring_lockstep.hpp), else as messages (ring_pipeline).
template <class T, class Cx>
void ring(Cx& cx, const codec::config& c, T* data, const chunks& ch, T* residual, bool do_rs, bool do_ag,
          deferred_error& err) {
  if constexpr (requires { Cx::transport_type::lockstep_rounds; })
    ring_lockstep(cx, c, data, ch, residual, do_rs, do_ag, err);
  else
    ring_pipeline(cx, c, data, ch, residual, do_rs, do_ag, err);
}

template <class T, class Cx>
void ring_bytes_estimate(Cx& cx, std::size_t bytes) {
  cx.counters().raw_bytes += bytes;
  cx.counters().wire_bytes += bytes;
}

}  // namespace detail

// In-place sum over all ranks. residual: error-feedback state of data.size() values or null.
template <element T, context_type Cx>
void allreduce(Cx& cx, codec::config cfg, std::span<T> data, T* residual = nullptr) {
  cx.check_usable();
  const auto& ex = cx.executor();
  const codec::config c = frame_config<T>(cx, cfg);
  typename Cx::timer tm(cx);
  cx.check_buffer(data.data(), data.size(), "allreduce data");
  if (residual) {
    cx.check_buffer(residual, data.size(), "allreduce residual");
    check_feedback_stable<typename Cx::codecs>(c, cx.label());
  }
  cx.check_same(op_id::allreduce, data.size(), dtype_of<T>, c);
  const std::size_t n = data.size();
  const int p = cx.size();
  if (n == 0) return;
  if (residual) add_into(ex, data.data(), static_cast<const T*>(residual), n);
  if (p == 1) {
    if (residual) zero_values(ex, residual, n);
    return;
  }
  if (go_raw<T>(cx, c, n)) {
    if (residual) zero_values(ex, residual, n);
    native_sum_allreduce(cx, data.data(), n);
    detail::ring_bytes_estimate<T>(cx, 2 * (p - 1) * (n / p) * sizeof(T));
    return;
  }
  const chunks ch{n, static_cast<std::size_t>(p)};
  deferred_error err;
  detail::ring(cx, c, data.data(), ch, residual, true, true, err);
  err.raise();
}

// in holds p blocks of out.size() values; rank r gets the sum of everyone's block r.
template <element T, context_type Cx>
void reduce_scatter(Cx& cx, codec::config cfg, std::span<const T> in, std::span<T> out, T* residual = nullptr) {
  cx.check_usable();
  const auto& ex = cx.executor();
  auto& ws = cx.memory();
  const codec::config c = frame_config<T>(cx, cfg);
  typename Cx::timer tm(cx);
  const int p = cx.size(), r = cx.rank();
  const std::size_t m = out.size(), n = in.size();
  if (n != m * static_cast<std::size_t>(p))
    fail(errc::invalid_argument, cx.label() + " reduce_scatter: input has " + std::to_string(n) +
                                     " values, expected ranks x output = " + std::to_string(p) + " x " +
                                     std::to_string(m));
  cx.check_buffer(in.data(), n, "reduce_scatter input");
  cx.check_buffer(out.data(), m, "reduce_scatter output");
  if (residual) {
    cx.check_buffer(residual, n, "reduce_scatter residual");
    check_feedback_stable<typename Cx::codecs>(c, cx.label());
  }
  cx.check_same(op_id::reduce_scatter, n, dtype_of<T>, c);
  if (n == 0) return;
  const T* src = in.data();
  if (residual) {
    T* w = ws.template work<T>(n);
    sum_of(ex, w, in.data(), static_cast<const T*>(residual), n);
    src = w;
  }
  if (p == 1 || go_raw<T>(cx, c, n)) {
    if (residual) zero_values(ex, residual, n);
    if (p == 1) {
      copy_values(ex, out.data(), src, m);
      return;
    }
    native_sum_reduce_scatter(cx, src, out.data(), m);
    detail::ring_bytes_estimate<T>(cx, (p - 1) * m * sizeof(T));
    return;
  }
  T* w = ws.template work<T>(n);
  if (src != w) copy_values(ex, w, src, n);
  const chunks ch{n, static_cast<std::size_t>(p)};
  deferred_error err;
  detail::ring(cx, c, w, ch, residual, true, false, err);
  if (residual) zero_values(ex, residual + ch.off(r), m);  // own block never compressed
  copy_values(ex, out.data(), static_cast<const T*>(w + ch.off(r)), m);
  err.raise();
}

// out holds p blocks of in.size() values; block q = rank q's input (decoded, so with a lossy
// codec rank r's own block is what the others decode too: all ranks end identical).
template <element T, context_type Cx>
void allgather(Cx& cx, codec::config cfg, std::span<const T> in, std::span<T> out) {
  cx.check_usable();
  const auto& ex = cx.executor();
  const codec::config c = frame_config<T>(cx, cfg);
  typename Cx::timer tm(cx);
  const int p = cx.size(), r = cx.rank();
  const std::size_t m = in.size(), n = out.size();
  if (n != m * static_cast<std::size_t>(p))
    fail(errc::invalid_argument, cx.label() + " allgather: output has " + std::to_string(n) +
                                     " values, expected ranks x input = " + std::to_string(p) + " x " +
                                     std::to_string(m));
  cx.check_buffer(in.data(), m, "allgather input");
  cx.check_buffer(out.data(), n, "allgather output");
  cx.check_same(op_id::allgather, m, dtype_of<T>, c);
  if (m == 0) return;
  if (p == 1 || go_raw<T>(cx, c, n)) {
    if (p == 1) {
      copy_values(ex, out.data(), in.data(), m);
      return;
    }
    native_allgather(cx, in.data(), out.data(), m);
    detail::ring_bytes_estimate<T>(cx, (p - 1) * m * sizeof(T));
    return;
  }
  const chunks ch{n, static_cast<std::size_t>(p)};
  copy_values(ex, out.data() + ch.off(r), in.data(), m);
  deferred_error err;
  detail::ring(cx, c, out.data(), ch, static_cast<T*>(nullptr), false, true, err);
  err.raise();
}

}  // namespace hcomm::algorithm
