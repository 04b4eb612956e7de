// hcomm/algorithm/ring_lockstep.hpp: the compressed ring of algorithm/ring.hpp in rounds,
// for transports whose payloads move by NCCL's rules (transport/lockstep.hpp: exact sizes,
// no tags, queued operations that block the ones queued after them).
//
//   hcomm::algorithm::basic_context<hcomm::exec::cuda, hcomm::transport::nccl> cx(comm, {}, "dp", ex);
//   hcomm::algorithm::allreduce(cx, cfg, std::span<float>(d_grads, n));   // ring.hpp picks this ring
//
// Same chunks, segments, frames, additions and error feedback as detail::ring_pipeline, so
// the results, residuals and byte counts are bitwise those of the message ring. What differs
// is how frames travel: as rounds. Round (phase, step, segment k) sends segment k of the
// chunk this rank passes on at that step to the right and receives segment k of the chunk
// coming from the left, as one group (transport round(): the sizes cross first, then both
// payloads together); a rank with fewer segments in one direction has rounds with only a
// receive or only a send, and its neighbours have the matching halves. Every rank queues
// rounds in the order (phase, step, segment), and a round only needs frames computed from
// rounds before it, so the groups of all ranks pair up and none waits in a cycle.
//
// The pipeline of ring_pipeline stays: the rounds of a step are queued as soon as their
// frames exist (segment k of step s+1 right after segment k of step s was received,
// decoded, added and re-compressed), and the host waits for a round only when it needs what
// it received, so on an asynchronous backend (NCCL's streams) later segments are on the wire
// while this rank codes. Waits are in queue order (a lane finishes its groups in order), so
// a slot is reused only after the rounds that used it finished.
//
// Slots hold a whole frame (the codec's bound for one segment: no second parts). With a
// staging transport they are host staging, as in ring_pipeline.
#pragma once
#include <algorithm>
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "hcomm/algorithm/context.hpp"
#include "hcomm/algorithm/native.hpp"
#include "hcomm/algorithm/vector_ops.hpp"

namespace hcomm::algorithm::detail {

template <class T, class Cx>
void ring_lockstep(Cx& cx, const codec::config& c, T* data, const chunks& ch, T* residual, bool do_rs, bool do_ag,
                   deferred_error& err) {
  using Tr = typename Cx::transport_type;
  using request_type = typename Cx::request_type;
  const auto& ex = cx.executor();
  auto& ws = cx.memory();
  constexpr bool staged = detail::staged_v<Cx>;
  const int p = cx.size(), r = cx.rank();
  const int right = (r + 1) % p, left = (r - 1 + p) % p;
  const std::size_t E = cx.template segment_elems<T>();
  const std::size_t bound = codec::max_frame_bytes<typename Cx::codecs>(c, E);
  const std::size_t slot = (bound + 63) / 64 * 64;
  const std::size_t nseg = cx.template segments_of<T>(ch.max_len());
  const bool lossy = codec::is_lossy<typename Cx::codecs>(c);
  const unsigned idle = cx.idle_sleep_us();
  std::byte* set[3];
  for (int i = 0; i < 3; ++i) set[i] = ws.wire(i, nseg * slot);
  auto slot_at = [&](int i, std::size_t k) { return set[i] + k * slot; };
  std::byte* frame = cx.template frame_scratch<T>(c);

  // The rounds queued, in order; waited for in that order.
  struct queued_round {
    request_type req;
    std::size_t got = 0;
    bool ok = true;
  };
  std::vector<queued_round> rounds;
  std::size_t waited = 0;
  struct unwind_guard {  // as ring_pipeline's: nothing may outlive an exception
    Cx& cx;
    std::vector<queued_round>& rounds;
    int uncaught = std::uncaught_exceptions();
    ~unwind_guard() {
      if (std::uncaught_exceptions() == uncaught) return;
      cx.mark_interrupted("ring operation");
      for (auto& q : rounds) Tr::abandon(&q.req);
    }
  } guard{cx, rounds};
  auto finish_through = [&](std::size_t j) {
    for (; waited <= j && waited < rounds.size(); ++waited) {
      queued_round& q = rounds[waited];
      typename Tr::status_type st;
      const int rc = Tr::wait(&q.req, &st, idle);
      q.got = Tr::received_bytes(st);
      if (rc != Tr::success) {
        q.ok = false;
        try {
          Tr::fail(rc, "round", HCOMM_WHERE_);
        } catch (const error& e) {
          err.record(e, cx.label() + " ring round from rank " + std::to_string(left));
        }
      }
    }
  };
  // Queues a round: out_bytes of slot (oi, k) to the right (out_bytes == npos: nothing),
  // and, if recv, a frame from the left into slot (ii, k). Returns the round's index.
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  auto round = [&](int oi, std::size_t k, std::size_t out_bytes, std::size_t raw, bool recv, int ii) {
    const bool send = out_bytes != none;
    if (send) {
      cx.counters().raw_bytes += raw * sizeof(T);
      cx.counters().wire_bytes += out_bytes;
    }
    // A device executor may still be decoding from the slot this round receives into.
    if constexpr (Cx::executor_type::is_device && !staged)
      if (recv) ex.synchronize();
    queued_round q{Tr::null_request()};
    Tr::round(send ? slot_at(oi, k) : nullptr, send ? out_bytes : 0, send, recv ? slot_at(ii, k) : nullptr, slot,
              recv, right, left, cx.comm(), &q.req, idle);
    rounds.push_back(q);
    return rounds.size() - 1;
  };
  // The frame received by round j, or 0 (a failed round, or a frame lost upstream: recorded).
  auto received = [&](std::size_t j, const char* phase, int step, std::size_t k) -> std::size_t {
    if (j >= rounds.size()) fail(errc::invalid_argument, cx.label() + " ring_lockstep: no round receives segment " +
                                                             std::to_string(k) + " (an internal error)");
    finish_through(j);
    const queued_round& q = rounds[j];
    if (!q.ok) return 0;
    if (q.got < codec::header_bytes) {
      err.record(error(errc::corrupt_frame, "frame of " + std::to_string(q.got) + " bytes (lost upstream)"),
                 cx.label() + " " + phase + " step " + std::to_string(step) + " segment " + std::to_string(k) +
                     " from rank " + std::to_string(left));
      return 0;
    }
    return q.got;
  };
  auto decode = [&](int i, std::size_t k, std::size_t bytes, T* dst, std::size_t len, const char* phase, int step) {
    try {
      const std::byte* f = slot_at(i, k);
      if constexpr (staged) {
        ex.copy(frame, f, bytes);
        f = frame;
      }
      cx.decompress(f, bytes, dst, len);
      return true;
    } catch (const error& e) {
      err.record(e, cx.label() + " " + phase + " step " + std::to_string(step) + " segment " + std::to_string(k) +
                        " from rank " + std::to_string(left));
      return false;
    }
  };
  // Compresses src[0, len) into slot (i, k), with error feedback and keep_decoded as
  // ring_pipeline's compress_send; returns the frame's size. The frame is complete in the
  // slot (the executor synchronised) before the transport reads it.
  auto compress_into = [&](T* src, T* res, std::size_t len, int i, std::size_t k, bool keep_decoded) {
    const std::size_t bytes = cx.compress(c, src, len, frame, bound);
    cx.before_send(frame, bytes);
    ex.copy(slot_at(i, k), frame, bytes);
    if constexpr (Cx::executor_type::is_device) ex.synchronize();
    if (lossy && (res || keep_decoded)) {
      T* dec = ws.template scratch<T>(E);
      cx.decompress(frame, bytes, dec, len);
      if (res) loss_of(ex, res, src, dec, len);
      if (keep_decoded) copy_values(ex, src, dec, len);
    } else if (res) {
      zero_values(ex, res, len);
    }
    return bytes;
  };
  auto chunk_of = [&](int q) { return static_cast<std::size_t>(((q % p) + p) % p); };
  auto segs = [&](std::size_t chunk) { return cx.template segments_of<T>(ch.len(chunk)); };
  auto seg_len = [&](std::size_t chunk, std::size_t k) { return std::min(E, ch.len(chunk) - k * E); };
  auto at = [&](T* base, std::size_t chunk, std::size_t k) { return base ? base + ch.off(chunk) + k * E : nullptr; };
  auto send_set = [](int step) { return 1 + (step & 1); };
  // Round indices of the frames expected per slot: in_round[i][k].
  std::vector<std::size_t> in_round[3];
  for (auto& v : in_round) v.assign(nseg, none);

  const std::size_t own = static_cast<std::size_t>(r), ag_in0 = chunk_of(r - 1);
  // Allgather step 0, segment k: this rank's reduced segment, compressed once and kept decoded.
  auto allgather_round0 = [&](std::size_t k) {
    std::size_t bytes = none, raw = 0;
    if (k < segs(own)) {
      raw = seg_len(own, k);
      bytes = compress_into(at(data, own, k), at(residual, own, k), raw, 0, k, true);
    }
    const bool recv = k < segs(ag_in0);
    const std::size_t j = round(0, k, bytes, raw, recv, send_set(0));
    if (recv) in_round[send_set(0)][k] = j;
  };

  if (do_rs) {
    const std::size_t first_in = chunk_of(r - 2), first_out = chunk_of(r - 1);
    for (std::size_t k = 0; k < std::max(segs(first_out), segs(first_in)); ++k) {
      std::size_t bytes = none, raw = 0;
      if (k < segs(first_out)) {
        raw = seg_len(first_out, k);
        bytes = compress_into(at(data, first_out, k), at(residual, first_out, k), raw, send_set(0), k, false);
      }
      const bool recv = k < segs(first_in);
      const std::size_t j = round(send_set(0), k, bytes, raw, recv, 0);
      if (recv) in_round[0][k] = j;
    }
    for (int s = 0; s + 1 < p; ++s) {
      const std::size_t in = chunk_of(r - s - 2);  // = the chunk sent at step s + 1
      const std::size_t next_in = chunk_of(r - s - 3);
      const bool last = s + 2 == p;  // in == own
      for (std::size_t k = 0; k < segs(in); ++k) {
        const std::size_t len = seg_len(in, k);
        const std::size_t bytes = received(in_round[0][k], "reduce-scatter", s, k);
        T* dec = ws.template scratch<T>(E);
        if (bytes && decode(0, k, bytes, dec, len, "reduce-scatter", s)) add_into(ex, at(data, in, k), dec, len);
        if (!last) {
          const int o = send_set(s + 1);
          const std::size_t out = compress_into(at(data, in, k), at(residual, in, k), len, o, k, false);
          const bool recv = k < segs(next_in);
          const std::size_t j = round(o, k, out, len, recv, 0);
          in_round[0][k] = recv ? j : none;
        } else if (do_ag) {
          allgather_round0(k);
        }
      }
      // Receive-only rounds: the next chunk has more segments than this one.
      if (!last) {
        for (std::size_t k = segs(in); k < segs(next_in); ++k) in_round[0][k] = round(0, k, none, 0, true, 0);
      } else if (do_ag) {
        for (std::size_t k = segs(own); k < segs(ag_in0); ++k) allgather_round0(k);
      }
    }
  } else if (do_ag) {
    for (std::size_t k = 0; k < std::max(segs(own), segs(ag_in0)); ++k) allgather_round0(k);
  }

  if (do_ag) {
    for (int s = 0; s + 1 < p; ++s) {
      const std::size_t in = chunk_of(r - s - 1);  // forwarded at step s + 1
      const std::size_t next_in = chunk_of(r - s - 2);
      const int i = send_set(s), next = send_set(s + 1);
      const bool forward = s + 2 < p;
      for (std::size_t k = 0; k < segs(in); ++k) {
        const std::size_t len = seg_len(in, k);
        const std::size_t bytes = received(in_round[i][k], "allgather", s, k);
        if (forward) {  // forwarded even if it does not decode here: the peers see the same bytes
          const bool recv = k < segs(next_in);
          const std::size_t j = round(i, k, bytes, len, recv, next);
          if (recv) in_round[next][k] = j;
        }
        if (bytes) decode(i, k, bytes, at(data, in, k), len, "allgather", s);
      }
      if (forward)
        for (std::size_t k = segs(in); k < segs(next_in); ++k) in_round[next][k] = round(i, k, none, 0, true, next);
    }
  }
  if (!rounds.empty()) finish_through(rounds.size() - 1);
}

}  // namespace hcomm::algorithm::detail
