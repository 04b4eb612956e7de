// hcomm/codec/registry.hpp: the library's codec list, the default of every codec list
// parameter (engine, parse_config, read_header, the collectives' context).
//
//   using mine = hcomm::codec::registered_codecs::with<my_codec>;   // add one without editing this
//   hcomm::codec::engine<hcomm::exec::host, mine> eng;
//
// A codec of the library is a folder or a header beside this one and a name in this list.
#pragma once
#include "hcomm/codec/bf16.hpp"
#include "hcomm/codec/int8.hpp"
#include "hcomm/codec/list.hpp"
#include "hcomm/codec/mpc.hpp"
#include "hcomm/codec/none.hpp"
#include "hcomm/codec/zfp.hpp"

namespace hcomm::codec {

// bf16 and int8 are the baselines a user would pick instead of hcomm's hybrid schemes (what
// PyTorch DDP's bf16 hook and ZeRO++'s quantisation send), listed so that the same
// collectives and tools run them side by side.
using registered_codecs = codec_list<none_codec, mpc_codec, zfp_codec, bf16_codec, int8_codec>;
static_assert(codec_list_type<registered_codecs>);

}  // namespace hcomm::codec
