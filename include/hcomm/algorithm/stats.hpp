// hcomm/algorithm/stats.hpp: what a communicator counts, and the timer that splits an
// operation's wall time into codec time and the rest.
//
//   auto s = dp.stats();   // s.ratio(): raw / wire bytes; s.compress_seconds, s.comm_seconds
#pragma once
#include <algorithm>
#include <cstdint>

namespace hcomm::algorithm {

struct stats {
  std::uint64_t raw_bytes = 0;    // bytes this rank would have sent uncompressed (same algorithm)
  std::uint64_t wire_bytes = 0;   // bytes this rank sent (frames incl. headers)
  double compress_seconds = 0;    // encoding + decoding
  double comm_seconds = 0;        // the rest of the operations' wall time (transfer, waiting, adds)
  std::uint64_t calls = 0;
  double ratio() const noexcept { return wire_bytes ? double(raw_bytes) / double(wire_bytes) : 1.0; }
};

// Bookkeeping of one operation's wall time: comm time = wall - codec time inside it. Clock:
// a type with static double now() (the transport's clock).
template <class Clock>
struct op_timer {
  stats& st;
  double t0, c0;
  bool count_call;
  explicit op_timer(stats& s, bool count = true) : st(s), t0(Clock::now()), c0(s.compress_seconds), count_call(count) {}
  op_timer(const op_timer&) = delete;
  op_timer& operator=(const op_timer&) = delete;
  ~op_timer() {
    const double wall = Clock::now() - t0;
    st.comm_seconds += std::max(0.0, wall - (st.compress_seconds - c0));
    if (count_call) st.calls += 1;
  }
};

}  // namespace hcomm::algorithm
