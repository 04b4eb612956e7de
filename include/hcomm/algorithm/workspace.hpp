// hcomm/algorithm/workspace.hpp: the memory a communicator's collectives work in: frame
// buffers, scratch values, second parts of large frames and the slots of point-to-point
// messages in the executor's memory; frame sizes and requests on the host. With a transport
// that stages (Transport::stages<Exec>, transport/mpi_staged.hpp) the memory the transport
// touches (wire(): frame slots, second parts, point-to-point slots, staged uncompressed
// values) is the executor's host staging instead (exec/host_staging.hpp), and buffer() stays
// in the executor's memory; otherwise wire(i) is buffer(i).
//
//   hcomm::algorithm::workspace<hcomm::exec::host, hcomm::transport::mpi_host> ws{ex};
//   std::byte* frames = ws.buffer(0, nseg * slot);   // grown to the largest call, then reused
//
// Everything grows and never shrinks: no allocation per call once the largest call has been
// seen. Memory that a request still reads or writes is never regrown during that request
// (the algorithms size their buffers before they post anything).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <type_traits>
#include <vector>

#include "hcomm/algorithm/buffer.hpp"
#include "hcomm/exec/executor.hpp"
#include "hcomm/exec/host_staging.hpp"

namespace hcomm::algorithm {

namespace detail {
// The memory a transport reads and writes: the executor's own, or its host staging.
template <class Exec, bool Staged>
struct wire_memory_of {
  using type = Exec;
  static Exec make(const Exec& ex) { return ex; }
};
template <class Exec>
struct wire_memory_of<Exec, true> {
  using type = exec::host_staging_memory<Exec>;
  static type make(const Exec& ex) { return type{ex}; }
};
}  // namespace detail

template <exec::executor Exec, class Transport>
class workspace {
 public:
  using buffer_type = exec_buffer<Exec>;
  using request_type = typename Transport::request_type;
  // Whether the transport stages this executor's memory through host memory.
  static constexpr bool staged = Transport::template stages<Exec>;
  using wire_memory = typename detail::wire_memory_of<Exec, staged>::type;
  using wire_buffer_type = exec_buffer<wire_memory>;

  explicit workspace(const Exec& ex)
      : ex_(ex),
        wire_mem_(detail::wire_memory_of<Exec, staged>::make(ex)),
        bufs_{buffer_type(ex), buffer_type(ex), buffer_type(ex)},
        wire_{wire_buffer_type(wire_mem_), wire_buffer_type(wire_mem_), wire_buffer_type(wire_mem_)},
        scratch_(ex),
        work_(ex),
        frame_(ex),
        word_(ex),
        staging_(wire_mem_) {}
  workspace(const workspace&) = delete;
  workspace& operator=(const workspace&) = delete;

  // Frame buffers: three, so that the allgather can forward what it received while it
  // receives the next chunk.
  std::byte* buffer(int i, std::size_t bytes) { return bufs_[i].ensure(bytes); }
  // Frame buffer i where the transport reads and writes it (buffer(i) unless staged).
  std::byte* wire(int i, std::size_t bytes) {
    if constexpr (staged) return wire_[i].ensure(bytes);
    else return bufs_[i].ensure(bytes);
  }
  // Host staging of uncompressed values for the transport's own collectives (staged only).
  template <class T>
  T* staging(std::size_t n) { return staging_.template as<T>(n); }
  // Decoded values of one segment.
  template <class T>
  T* scratch(std::size_t n) { return scratch_.template as<T>(n); }
  // A copy of a whole buffer (reduce-scatter's input plus the residual).
  template <class T>
  T* work(std::size_t n) { return work_.template as<T>(n); }
  // One whole frame: compressed into, or reassembled from two parts.
  std::byte* frame(std::size_t bytes) { return frame_.ensure(bytes); }
  // One frame size, written by the codec engine on the executor (compress_async).
  std::uint64_t* size_word() { return word_.template as<std::uint64_t>(1); }
  // Second parts of the frames that did not fit their slot, per slot set; kept here so that
  // they outlive any request on them.
  std::vector<wire_buffer_type>& overflow(int i, std::size_t n) {
    auto& v = overflow_[i];
    while (v.size() < n) v.emplace_back(wire_mem_);
    return v;
  }

  // Host-side per-segment frame sizes and request handles.
  std::vector<std::size_t>& sizes(int i, std::size_t n) {
    auto& v = sizes_[i];
    if (v.size() < n) v.resize(n);
    return v;
  }
  request_type* requests(int i, std::size_t n) {
    auto& v = reqs_[i];
    if (v.size() < n) v.resize(n, Transport::null_request());
    return v.data();
  }

  // Slots for non-blocking point-to-point messages, where the transport reaches them: each
  // in-flight request holds one (a deque, so that a slot stays where it is while others are
  // added).
  std::size_t acquire_slot() {
    if (free_.empty()) {
      pool_.emplace_back(wire_mem_);
      return pool_.size() - 1;
    }
    const std::size_t s = free_.back();
    free_.pop_back();
    return s;
  }
  wire_buffer_type& slot(std::size_t s) { return pool_[s]; }
  void release_slot(std::size_t s) { free_.push_back(s); }

 private:
  Exec ex_;
  wire_memory wire_mem_;
  std::array<buffer_type, 3> bufs_;
  std::array<wire_buffer_type, 3> wire_;  // used when staged
  buffer_type scratch_, work_, frame_, word_;
  wire_buffer_type staging_;
  std::array<std::vector<wire_buffer_type>, 3> overflow_;
  std::array<std::vector<std::size_t>, 3> sizes_;
  std::array<std::vector<request_type>, 6> reqs_;
  std::deque<wire_buffer_type> pool_;
  std::vector<std::size_t> free_;
};

}  // namespace hcomm::algorithm
