// hcomm/codec/registry.hpp: the library's codec list, the default of every codec list
// parameter (engine, parse_config, read_header, the collectives' context).
//
//   using mine = hcomm::codec::registered_codecs::with<my_codec>;   // add one without editing this
//   hcomm::codec::engine<hcomm::exec::host, mine> eng;
//
// A codec of the library is a folder or a header beside this one and a name in this list.
#pragma once
#include "hcomm/codec/list.hpp"
#include "hcomm/codec/mpc.hpp"
#include "hcomm/codec/none.hpp"
#include "hcomm/codec/zfp.hpp"

namespace hcomm::codec {

using registered_codecs = codec_list<none_codec, mpc_codec, zfp_codec>;
static_assert(codec_list_type<registered_codecs>);

}  // namespace hcomm::codec
