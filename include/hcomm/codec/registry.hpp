// hcomm/codec/registry.hpp: the codecs the engine can dispatch to at run time. A new codec
// is a class template satisfying codec_kernel (codec/codec.hpp); add it to the list here.
#pragma once
#include "hcomm/codec/mpc.hpp"
#include "hcomm/codec/none.hpp"
#include "hcomm/codec/zfp.hpp"

namespace hcomm::codec {

template <template <class> class... Codecs>
struct codec_list {};

using registered_codecs = codec_list<none_codec, mpc_codec, zfp_codec>;

}  // namespace hcomm::codec
