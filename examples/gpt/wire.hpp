// examples/gpt/wire.hpp: --precision bf16's traffic as 16-bit values (--wire bf16, the default
// with bf16). A buffer of the model goes to its communicator as a bfloat16 copy, made where
// that communicator runs (its executor: the host, or its stream on a device), and comes back
// widened to float (exact). The values the model keeps as bfloat16 roundings (weights, block
// outputs and the gradients flowing into them: what PP sends, ZeRO's weights, the DP
// gradients) travel exactly, at half the bytes. Sums (DP, TP) are summed in bfloat16 by hcomm,
// each addition widened to float and rounded once (hcomm/algorithm/ring.hpp), as a bf16
// all-reduce on GPUs is. Codecs code the 16-bit values (none, MPC, ZFP); only where the codec
// keeps each value's width does that halve the bytes (wire_saves_bytes: ZFP's rate R is R
// bits a value for either type).
//
//   gpt::wire16<hcomm::exec::host> w;               // or on a device communicator's executor
//   auto b = w.pack(x, n);                          // staging area 0 holds x as bf16
//   comm.allreduce(gpt::comm_buffer<Comm>(b));
//   w.unpack(b, x);                                 // x = the widened values
//
// Each user (an axis; the pipeline's outstanding sends) keeps its own areas: one wire16 is
// used by one thread.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "comm_buffer.hpp"
#include "device_array.hpp"
#include "hcomm/codec/id.hpp"
#include "hcomm/core/half.hpp"
#include "hcomm/exec/host.hpp"
#include "portable/elementwise.hpp"

namespace gpt {

template <class Exec>
class wire16 {
 public:
  explicit wire16(Exec ex = {}) : ex_(std::move(ex)) {}

  // Staging area `slot`, at least n values (kept between calls; grown when too small).
  std::span<hcomm::bf16> area(std::size_t n, std::size_t slot = 0) {
    if (slots_.size() <= slot) slots_.resize(slot + 1);
    auto& a = slots_[slot];
    if (a.size() < n) a = device_array<hcomm::bf16, Exec>(ex_, n);
    return {a.data(), n};
  }
  // x (n floats) as bfloat16 in area `slot`.
  std::span<hcomm::bf16> pack(const float* x, std::size_t n, std::size_t slot = 0) {
    const auto w = area(n, slot);
    if (n) ex_.for_each(n, portable::to_bf16{x, w.data()});
    return w;
  }
  void unpack(std::span<const hcomm::bf16> w, float* x) const {
    if (!w.empty()) ex_.for_each(w.size(), portable::from_bf16{w.data(), x});
  }

 private:
  Exec ex_;
  std::vector<device_array<hcomm::bf16, Exec>> slots_;
};

// Where a communicator's 16-bit copies are made: a device communicator's executor, else the host.
template <class Comm>
struct wire_exec_of {
  using type = hcomm::exec::host;
};
template <class Comm>
  requires takes_device_span<Comm>
struct wire_exec_of<Comm> {
  using type = typename std::remove_cvref_t<Comm>::executor_type;
};
template <class Comm>
using wire_exec_t = typename wire_exec_of<Comm>::type;

// Communicators that take bfloat16 buffers (hcomm's; plain MPI's do not).
template <class Comm>
concept sums_bf16 = requires(Comm& c, std::span<hcomm::bf16> s) { c.allreduce(comm_buffer<Comm>(s)); };
template <class Comm>
concept sends_bf16 = requires(Comm& c, std::span<const hcomm::bf16> s) { c.send(comm_buffer<Comm>(s), 0, 0); };

// Whether 16-bit values shrink a communicator's traffic: its codec keeps each value's width
// (none, MPC). ZFP codes R bits a value whatever the type, so there a 16-bit copy would only
// round; the bf16 and int8 codecs code float32.
template <class Comm>
constexpr bool wire_saves_bytes() {
  using C = std::remove_cvref_t<Comm>;
  if constexpr (requires { C::config(); }) {
    constexpr hcomm::codec_id id = C::config().codec;
    return id == hcomm::codec_id::none || id == hcomm::codec_id::mpc;
  } else {
    return false;
  }
}

// The sum of x over c, in place: as bfloat16 copies in w's area 0 when w is given (and c
// takes them), else as float32.
template <class Comm>
void allreduce_on(Comm& c, std::span<float> x, wire16<wire_exec_t<Comm>>* w) {
  if constexpr (sums_bf16<Comm>) {
    if (w) {
      const auto b = w->pack(x.data(), x.size());
      c.allreduce(comm_buffer<Comm>(b));
      w->unpack(b, x.data());
      return;
    }
  }
  c.allreduce(comm_buffer<Comm>(x));
}

// A wire for communicator c, on its executor (device communicators) or the host.
template <class Comm>
std::unique_ptr<wire16<wire_exec_t<Comm>>> make_wire(Comm& c) {
  if constexpr (takes_device_span<Comm>) return std::make_unique<wire16<wire_exec_t<Comm>>>(c.executor());
  else return std::make_unique<wire16<wire_exec_t<Comm>>>();
}

}  // namespace gpt
