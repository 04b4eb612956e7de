// hcomm/codec/id.hpp: the byte by which a frame names its codec.
//
//   static constexpr hcomm::codec_id id = hcomm::codec_id{7};   // a codec of one's own
//
// The set is open: any value names the codec in the registry (codec/registry.hpp) whose
// traits carry it, and nothing switches over it. The named values are the library's own
// codecs; frames on disk and on the wire hold them, so they never change.
#pragma once
#include <cstdint>

namespace hcomm {

enum class codec_id : std::uint8_t { none = 0, mpc = 1, zfp = 2, bf16 = 3, int8 = 4 };

}  // namespace hcomm
