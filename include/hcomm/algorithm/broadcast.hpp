// hcomm/algorithm/broadcast.hpp: compressed broadcast from one root.
//
//   hcomm::algorithm::broadcast(cx, hcomm::codec::parse_config("mpc"), std::span<float>(w), /*root=*/0);
//
// The root compresses the buffer segment by segment into one contiguous run of frames; the
// transport's broadcast carries the frame sizes, then the frames (MPI's own tree). Every rank decodes
// the same frames; with a lossy codec the root also replaces its buffer by the decoded
// values, so all ranks end bitwise identical. (No segment pipelining here: the frames are
// broadcast once all are compressed.) Below options::threshold_bytes: the transport's own
// broadcast of the values. Buffers live in the context's executor memory; a staging
// transport (transport/mpi_staged.hpp) gets the run of frames copied to host staging on the
// root and back into executor memory on the others before they decode.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "hcomm/algorithm/context.hpp"
#include "hcomm/algorithm/native.hpp"

namespace hcomm::algorithm {

template <element T, context_type Cx>
void broadcast(Cx& cx, codec::config cfg, std::span<T> data, int root) {
  using Tr = typename Cx::transport_type;
  auto& ws = cx.memory();
  cx.check_usable();
  const codec::config c = frame_config<T>(cx, cfg);
  typename Cx::timer tm(cx);
  const int p = cx.size(), r = cx.rank();
  if (root < 0 || root >= p)
    fail(errc::invalid_argument,
         cx.label() + " broadcast: root " + std::to_string(root) + " is not a rank of this communicator (size " +
             std::to_string(p) + ")");
  cx.check_buffer(data.data(), data.size(), "broadcast data");
  cx.check_same(op_id::broadcast, data.size(), dtype_of<T>, c, root, "root");
  const std::size_t n = data.size();
  if (n == 0 || p == 1) return;
  if (go_raw<T>(cx, c, n)) {
    native_broadcast(cx, data.data(), n, root);
    if (r == root) {
      cx.counters().raw_bytes += n * sizeof(T);
      cx.counters().wire_bytes += n * sizeof(T);
    }
    return;
  }
  // The frames lie end to end in buffer 0: the root grows it while compressing (nothing is in
  // flight yet), the others size it from the announced total. So memory follows the frames'
  // real size, not the codec's worst case (ZFP's: every value non-finite).
  const std::size_t E = cx.template segment_elems<T>(), ns = cx.template segments_of<T>(n);
  const std::size_t bound = codec::max_frame_bytes<typename Cx::codecs>(c, E);
  auto& sz = ws.sizes(0, ns);
  static_assert(sizeof(std::size_t) == sizeof(std::uint64_t), "hcomm: frame sizes travel as 64-bit words");
  if (r == root) {
    const bool lossy = codec::is_lossy<typename Cx::codecs>(c);
    std::size_t at = 0;
    for (std::size_t k = 0; k < ns; ++k) {
      const std::size_t off = k * E, len = std::min(E, n - off);
      std::byte* f = ws.buffer(0, at + bound) + at;  // (buffers grow geometrically, keeping their bytes)
      sz[k] = cx.compress(c, data.data() + off, len, f, bound);
      if (lossy) cx.decompress(f, sz[k], data.data() + off, len);
      cx.before_send(f, sz[k]);
      at += sz[k];
    }
    cx.counters().raw_bytes += n * sizeof(T);
    cx.counters().wire_bytes += at;
  }
  Tr::broadcast_words(reinterpret_cast<std::uint64_t*>(sz.data()), ns, root, cx.comm());
  std::size_t total = 0;
  for (std::size_t k = 0; k < ns; ++k) {
    if (sz[k] > bound) fail(errc::corrupt_frame, cx.label() + " broadcast: root announced a frame larger than possible");
    total += sz[k];
  }
  std::byte* buf = ws.buffer(0, total);
  if constexpr (detail::staged_v<Cx>) {
    const auto& ex = cx.executor();
    std::byte* wire = ws.wire(0, total);
    if (r == root) ex.copy(wire, buf, total);
    ex.synchronize();
    Tr::broadcast_bytes(wire, total, root, cx.comm());
    if (r != root) ex.copy(buf, wire, total);
  } else {
    detail::settle_executor(cx);  // the root's frames written; elsewhere, nothing left reading buf
    Tr::broadcast_bytes(buf, total, root, cx.comm());
  }
  if (r == root) return;
  deferred_error err;
  std::size_t at = 0;
  for (std::size_t k = 0; k < ns; ++k) {
    const std::size_t off = k * E, len = std::min(E, n - off);
    try {
      cx.decompress(buf + at, sz[k], data.data() + off, len);
    } catch (const error& e) {
      err.record(e, cx.label() + " broadcast segment " + std::to_string(k) + " from root " + std::to_string(root));
    }
    at += sz[k];
  }
  err.raise();
}

}  // namespace hcomm::algorithm
