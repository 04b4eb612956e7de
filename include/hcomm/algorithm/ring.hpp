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
// - each chunk is cut into segments (options::segment_bytes); a step posts all receives,
//   then compresses segment k+1 while segment k is already on the wire (MPI_Isend), and
//   decodes received segments while later ones are still arriving.
// Messages below options::threshold_bytes go uncompressed through MPI's own collectives.
//
// Error feedback (residual != nullptr): the input is x + e (e = the previous residual);
// every compression this rank performs (its contribution at step 0, the partial sums it
// forwards, its owned chunk) records what it lost into e. Summed over ranks, e is exactly
// the difference between the true and the decoded sum, so adding it back next step makes
// the running sum of results track the running true sum.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "hcomm/algorithm/context.hpp"

namespace hcomm::algorithm {

namespace detail {

inline constexpr int tag_reduce_scatter = 0x4843;  // "HC"
inline constexpr int tag_allgather = 0x4844;

// One ring step: receive `recv_len` values' frames from the left, send `send_len` values'
// frames to the right. make_frame(k, off, len) -> {ptr, bytes}; on_recv(k, off, len, ptr, bytes).
template <class T, class MakeFrame, class OnRecv>
void ring_step(context& cx, const codec::config& c, std::size_t send_len, std::size_t recv_len, int tag,
               MakeFrame&& make_frame, OnRecv&& on_recv, deferred_error& err, const char* phase, int step) {
  const int p = cx.size(), r = cx.rank();
  const int right = (r + 1) % p, left = (r - 1 + p) % p;
  const std::size_t E = cx.segment_elems<T>(), slot = cx.slot_bytes<T>(c);
  const std::size_t ns = cx.segments_of<T>(send_len), nr = cx.segments_of<T>(recv_len);
  std::byte* rbuf = cx.buffer(1, 0);  // sized by the caller
  MPI_Request* rr = cx.requests(0, nr);
  MPI_Request* sr = cx.requests(1, ns);
  for (std::size_t k = 0; k < nr; ++k)
    HCOMM_MPI_CHECK(MPI_Irecv(rbuf + k * slot, static_cast<int>(slot), MPI_BYTE, left, tag, cx.comm(), &rr[k]));
  for (std::size_t k = 0; k < ns; ++k) {
    const std::size_t off = k * E, len = std::min(E, send_len - off);
    auto [ptr, bytes] = make_frame(k, off, len);
    cx.before_send(ptr, bytes);
    HCOMM_MPI_CHECK(MPI_Isend(ptr, mpi::count_of(bytes, "frame"), MPI_BYTE, right, tag, cx.comm(), &sr[k]));
    cx.counters().raw_bytes += len * sizeof(T);
    cx.counters().wire_bytes += bytes;
  }
  for (std::size_t k = 0; k < nr; ++k) {
    const std::size_t off = k * E, len = std::min(E, recv_len - off);
    const std::string where = cx.label() + " " + phase + " step " + std::to_string(step) + " segment " +
                              std::to_string(k) + " from rank " + std::to_string(left);
    MPI_Status st;
    const int rc = MPI_Wait(&rr[k], &st);
    try {
      if (rc != MPI_SUCCESS) mpi::fail_mpi(rc, "MPI_Wait", HCOMM_WHERE_);
      int got = 0;
      HCOMM_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &got));
      on_recv(k, off, len, rbuf + k * slot, static_cast<std::size_t>(got));
    } catch (const error& e) {
      err.record(e, where);
    }
  }
  HCOMM_MPI_CHECK(MPI_Waitall(static_cast<int>(ns), sr, MPI_STATUSES_IGNORE));
}

template <class T>
void add_into(T* dst, const T* src, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

// Compresses data[0, len) segment by segment into buffer `b` (slot k at k * slot) and
// records the frame sizes in sizes(b); lossy: writes the decoded values back (the owner keeps
// what the others will decode) and, with a residual, what was lost.
template <class T>
void compress_owned(context& cx, const codec::config& c, T* data, std::size_t len, T* residual, int b) {
  const std::size_t E = cx.segment_elems<T>(), slot = cx.slot_bytes<T>(c);
  const std::size_t ns = cx.segments_of<T>(len);
  std::byte* buf = cx.buffer(b, 0);
  auto& sz = cx.sizes(b, ns);
  const bool lossy = c.codec == codec_id::zfp;
  for (std::size_t k = 0; k < ns; ++k) {
    const std::size_t off = k * E, l = std::min(E, len - off);
    T* src = data + off;
    sz[k] = cx.compress(c, src, l, buf + k * slot, slot);
    if (lossy) {
      T* dec = cx.scratch<T>(E);
      cx.decompress(buf + k * slot, sz[k], dec, l);
      if (residual)
        for (std::size_t i = 0; i < l; ++i) residual[off + i] = src[i] - dec[i];
      std::memcpy(src, dec, l * sizeof(T));
    } else if (residual) {
      std::memset(residual + off, 0, l * sizeof(T));
    }
  }
}

// p-1 steps of reduce-scatter over data (n values, chunked by ch); rank r ends owning chunk r.
template <class T>
void reduce_scatter_phase(context& cx, const codec::config& c, T* data, const chunks& ch, T* residual,
                          deferred_error& err) {
  const int p = cx.size(), r = cx.rank();
  const std::size_t E = cx.segment_elems<T>(), slot = cx.slot_bytes<T>(c);
  const bool lossy = c.codec == codec_id::zfp;
  std::byte* sbuf = cx.buffer(0, 0);
  for (int s = 0; s + 1 < p; ++s) {
    const std::size_t send_c = static_cast<std::size_t>((r - s - 1 + 2 * p) % p);
    const std::size_t recv_c = static_cast<std::size_t>((r - s - 2 + 2 * p) % p);
    T* send_base = data + ch.off(send_c);
    T* recv_base = data + ch.off(recv_c);
    ring_step<T>(
        cx, c, ch.len(send_c), ch.len(recv_c), tag_reduce_scatter,
        [&](std::size_t k, std::size_t off, std::size_t len) {
          std::byte* out = sbuf + k * slot;
          const std::size_t bytes = cx.compress(c, send_base + off, len, out, slot);
          if (residual) {
            T* res = residual + ch.off(send_c) + off;
            if (lossy) {
              T* dec = cx.scratch<T>(E);
              cx.decompress(out, bytes, dec, len);
              for (std::size_t i = 0; i < len; ++i) res[i] = send_base[off + i] - dec[i];
            } else {
              std::memset(res, 0, len * sizeof(T));
            }
          }
          return std::pair<std::byte*, std::size_t>(out, bytes);
        },
        [&](std::size_t, std::size_t off, std::size_t len, const std::byte* frame, std::size_t bytes) {
          T* dec = cx.scratch<T>(E);
          cx.decompress(frame, bytes, dec, len);
          add_into(recv_base + off, dec, len);
        },
        err, "reduce-scatter", s);
  }
}

// p-1 steps of allgather: starts with this rank's frames of chunk r in buffer 2 (sizes(2)),
// forwards frames without re-compressing and decodes each received chunk into data.
template <class T>
void allgather_phase(context& cx, const codec::config& c, T* data, const chunks& ch, deferred_error& err) {
  const int p = cx.size(), r = cx.rank();
  const std::size_t slot = cx.slot_bytes<T>(c);
  for (int s = 0; s + 1 < p; ++s) {
    const std::size_t send_c = static_cast<std::size_t>((r - s + 2 * p) % p);
    const std::size_t recv_c = static_cast<std::size_t>((r - s - 1 + 2 * p) % p);
    std::byte* fwd = cx.buffer(2, 0);
    auto& fwd_sizes = cx.sizes(2, 0);
    auto& got_sizes = cx.sizes(1, cx.segments_of<T>(ch.len(recv_c)));
    T* recv_base = data + ch.off(recv_c);
    ring_step<T>(
        cx, c, ch.len(send_c), ch.len(recv_c), tag_allgather,
        [&](std::size_t k, std::size_t, std::size_t) {
          return std::pair<std::byte*, std::size_t>(fwd + k * slot, fwd_sizes[k]);
        },
        [&](std::size_t k, std::size_t off, std::size_t len, const std::byte* frame, std::size_t bytes) {
          got_sizes[k] = bytes;  // forwarded next step even if it does not decode here
          cx.decompress(frame, bytes, recv_base + off, len);
        },
        err, "allgather", s);
    cx.swap_buffers(1, 2);
    cx.swap_sizes(1, 2);
  }
}

// Sizes the three frame buffers for chunks of up to max_len values.
template <class T>
void reserve_frames(context& cx, const codec::config& c, std::size_t max_len) {
  const std::size_t bytes = cx.segments_of<T>(max_len) * cx.slot_bytes<T>(c);
  for (int i = 0; i < 3; ++i) cx.buffer(i, bytes);
  for (int i = 0; i < 3; ++i) cx.sizes(i, cx.segments_of<T>(max_len));
}

template <class T>
void ring_bytes_estimate(context& cx, std::size_t bytes) {
  cx.counters().raw_bytes += bytes;
  cx.counters().wire_bytes += bytes;
}

}  // namespace detail

// In-place sum over all ranks. residual: error-feedback state of data.size() values or null.
template <floating_element T>
void allreduce(context& cx, codec::config cfg, std::span<T> data, T* residual = nullptr) {
  const codec::config c = frame_config<T>(cx, cfg);
  context::timer tm(cx);
  cx.check_same(op_id::allreduce, data.size(), dtype_of<T>, c);
  const std::size_t n = data.size();
  const int p = cx.size();
  if (n == 0) return;
  if (residual)
    for (std::size_t i = 0; i < n; ++i) data[i] += residual[i];
  if (p == 1) {
    if (residual) std::memset(residual, 0, n * sizeof(T));
    return;
  }
  if (go_raw<T>(cx, c, n)) {
    if (residual) std::memset(residual, 0, n * sizeof(T));
    HCOMM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data.data(), mpi::count_of(n, "allreduce elements"),
                                  mpi::datatype_of<T>(), MPI_SUM, cx.comm()));
    detail::ring_bytes_estimate<T>(cx, 2 * (p - 1) * (n / p) * sizeof(T));
    return;
  }
  const chunks ch{n, static_cast<std::size_t>(p)};
  detail::reserve_frames<T>(cx, c, ch.max_len());
  deferred_error err;
  detail::reduce_scatter_phase(cx, c, data.data(), ch, residual, err);
  const int r = cx.rank();
  detail::compress_owned(cx, c, data.data() + ch.off(r), ch.len(r), residual ? residual + ch.off(r) : nullptr, 2);
  detail::allgather_phase(cx, c, data.data(), ch, err);
  err.raise();
}

// in holds p blocks of out.size() values; rank r gets the sum of everyone's block r.
template <floating_element T>
void reduce_scatter(context& cx, codec::config cfg, std::span<const T> in, std::span<T> out, T* residual = nullptr) {
  const codec::config c = frame_config<T>(cx, cfg);
  context::timer tm(cx);
  const int p = cx.size(), r = cx.rank();
  const std::size_t m = out.size(), n = in.size();
  if (n != m * static_cast<std::size_t>(p))
    fail(errc::invalid_argument, cx.label() + " reduce_scatter: input has " + std::to_string(n) +
                                     " values, expected ranks x output = " + std::to_string(p) + " x " +
                                     std::to_string(m));
  cx.check_same(op_id::reduce_scatter, n, dtype_of<T>, c);
  if (n == 0) return;
  const T* src = in.data();
  if (residual) {
    T* w = cx.work<T>(n);
    for (std::size_t i = 0; i < n; ++i) w[i] = in[i] + residual[i];
    src = w;
  }
  if (p == 1 || go_raw<T>(cx, c, n)) {
    if (residual) std::memset(residual, 0, n * sizeof(T));
    if (p == 1) {
      std::memcpy(out.data(), src, m * sizeof(T));
      return;
    }
    HCOMM_MPI_CHECK(MPI_Reduce_scatter_block(src, out.data(), mpi::count_of(m, "reduce_scatter elements"),
                                             mpi::datatype_of<T>(), MPI_SUM, cx.comm()));
    detail::ring_bytes_estimate<T>(cx, (p - 1) * m * sizeof(T));
    return;
  }
  T* w = cx.work<T>(n);
  if (src != w) std::memcpy(w, src, n * sizeof(T));
  const chunks ch{n, static_cast<std::size_t>(p)};
  detail::reserve_frames<T>(cx, c, ch.max_len());
  deferred_error err;
  detail::reduce_scatter_phase(cx, c, w, ch, residual, err);
  if (residual) std::memset(residual + ch.off(r), 0, m * sizeof(T));  // own block never compressed
  std::memcpy(out.data(), w + ch.off(r), m * sizeof(T));
  err.raise();
}

// out holds p blocks of in.size() values; block q = rank q's input (decoded, so with a lossy
// codec rank r's own block is what the others decode too: all ranks end identical).
template <floating_element T>
void allgather(context& cx, codec::config cfg, std::span<const T> in, std::span<T> out) {
  const codec::config c = frame_config<T>(cx, cfg);
  context::timer tm(cx);
  const int p = cx.size(), r = cx.rank();
  const std::size_t m = in.size(), n = out.size();
  if (n != m * static_cast<std::size_t>(p))
    fail(errc::invalid_argument, cx.label() + " allgather: output has " + std::to_string(n) +
                                     " values, expected ranks x input = " + std::to_string(p) + " x " +
                                     std::to_string(m));
  cx.check_same(op_id::allgather, m, dtype_of<T>, c);
  if (m == 0) return;
  if (p == 1 || go_raw<T>(cx, c, n)) {
    if (p == 1) {
      std::memcpy(out.data(), in.data(), m * sizeof(T));
      return;
    }
    HCOMM_MPI_CHECK(MPI_Allgather(in.data(), mpi::count_of(m, "allgather elements"), mpi::datatype_of<T>(),
                                  out.data(), static_cast<int>(m), mpi::datatype_of<T>(), cx.comm()));
    detail::ring_bytes_estimate<T>(cx, (p - 1) * m * sizeof(T));
    return;
  }
  const chunks ch{n, static_cast<std::size_t>(p)};
  detail::reserve_frames<T>(cx, c, m);
  std::memcpy(out.data() + ch.off(r), in.data(), m * sizeof(T));
  detail::compress_owned(cx, c, out.data() + ch.off(r), m, static_cast<T*>(nullptr), 2);
  deferred_error err;
  detail::allgather_phase(cx, c, out.data(), ch, err);
  err.raise();
}

}  // namespace hcomm::algorithm
