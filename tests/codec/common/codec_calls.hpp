// Direct host calls of the codec kernels (zfp_codec, mpc_codec) for the codec tests,
// compiled once in codec_calls.cpp for every test file of tests/codec/zfp/ and mpc/:
// instantiating a codec's encode and decode is most of what a codec test costs to build, so
// a test file names C::encode as hcomm_test::encode<C> and stays cheap to compile. C is one
// of zfp_codec<float>, zfp_codec<double>, mpc_codec<float>, mpc_codec<double>.
#pragma once
#include <cstddef>
#include <cstdint>

#include "hcomm/exec/host.hpp"

namespace hcomm_test {

// C::encode(ex, in, n, param, payload, payload_bytes, ws) on the host executor.
template <class C>
void encode(const hcomm::exec::host& ex, const typename C::value_type* in, std::size_t n, unsigned param,
            std::byte* payload, std::uint64_t* payload_bytes, std::byte* ws);

// C::decode(ex, payload, payload_bytes, n, param, out, ws) on the host executor.
template <class C>
void decode(const hcomm::exec::host& ex, const std::byte* payload, std::size_t payload_bytes, std::size_t n,
            unsigned param, typename C::value_type* out, std::byte* ws);

}  // namespace hcomm_test
