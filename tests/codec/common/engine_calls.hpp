// hcomm::codec::engine<>'s host-memory calls for the codec tests, compiled once in
// codec_calls.cpp: the engine dispatches to every registered codec, so each file that
// instantiated it would compile all of them again. hcomm_test::engine is used as the
// engine is (one object, its workspace reused from call to call).
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "hcomm/codec/codec.hpp"

namespace hcomm_test {

class engine {
 public:
  // engine<>::compress(c, in) and decompress(frame, out), T = float or double.
  template <class T>
  std::vector<std::byte> compress(const hcomm::codec::config& c, std::span<const T> in);
  template <class T>
  hcomm::codec::frame_info decompress(std::span<const std::byte> frame, std::span<T> out);

 private:
  hcomm::codec::engine<> eng_;
};

}  // namespace hcomm_test
