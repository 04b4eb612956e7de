// hcomm/codec/codec.hpp: the codec layer in one include: what a codec is (traits.hpp), codec
// lists and the library's (list.hpp, registry.hpp), frames (frame.hpp), runtime settings
// (config.hpp) and the engine that runs a codec on an executor (engine.hpp).
//
//   hcomm::codec::engine<> eng;                               // host executor
//   auto cfg   = hcomm::codec::parse_config("zfp:8", hcomm::dtype::f32);
//   auto frame = eng.compress(cfg, std::span<const float>(x)); // std::vector<std::byte>
//   eng.decompress(frame, std::span<float>(y));               // validates, then writes y
#pragma once
#include "hcomm/codec/config.hpp"
#include "hcomm/codec/engine.hpp"
#include "hcomm/codec/frame.hpp"
#include "hcomm/codec/id.hpp"
#include "hcomm/codec/list.hpp"
#include "hcomm/codec/registry.hpp"
#include "hcomm/codec/traits.hpp"
