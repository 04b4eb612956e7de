// The one instantiation of the codecs and the engine for the codec tests (codec_calls.hpp,
// engine_calls.hpp).
#include "codec_calls.hpp"

#include "engine_calls.hpp"
#include "hcomm/codec/mpc.hpp"
#include "hcomm/codec/zfp.hpp"

namespace hcomm_test {

template <class C>
void encode(const hcomm::exec::host& ex, const typename C::value_type* in, std::size_t n, unsigned param,
            std::byte* payload, std::uint64_t* payload_bytes, std::byte* ws) {
  C::encode(ex, in, n, param, payload, payload_bytes, ws);
}

template <class C>
void decode(const hcomm::exec::host& ex, const std::byte* payload, std::size_t payload_bytes, std::size_t n,
            unsigned param, typename C::value_type* out, std::byte* ws) {
  C::decode(ex, payload, payload_bytes, n, param, out, ws);
}

template <class T>
std::vector<std::byte> engine::compress(const hcomm::codec::config& c, std::span<const T> in) {
  return eng_.compress(c, in);
}

template <class T>
hcomm::codec::frame_info engine::decompress(std::span<const std::byte> frame, std::span<T> out) {
  return eng_.decompress(frame, out);
}

#define HCOMM_TEST_CODEC(C)                                                                              \
  template void encode<C>(const hcomm::exec::host&, const C::value_type*, std::size_t, unsigned, std::byte*, \
                          std::uint64_t*, std::byte*);                                                   \
  template void decode<C>(const hcomm::exec::host&, const std::byte*, std::size_t, std::size_t, unsigned,    \
                          C::value_type*, std::byte*);
HCOMM_TEST_CODEC(hcomm::codec::zfp_codec<float>)
HCOMM_TEST_CODEC(hcomm::codec::zfp_codec<double>)
HCOMM_TEST_CODEC(hcomm::codec::mpc_codec<float>)
HCOMM_TEST_CODEC(hcomm::codec::mpc_codec<double>)
#undef HCOMM_TEST_CODEC

template std::vector<std::byte> engine::compress<float>(const hcomm::codec::config&, std::span<const float>);
template std::vector<std::byte> engine::compress<double>(const hcomm::codec::config&, std::span<const double>);
template hcomm::codec::frame_info engine::decompress<float>(std::span<const std::byte>, std::span<float>);
template hcomm::codec::frame_info engine::decompress<double>(std::span<const std::byte>, std::span<double>);

}  // namespace hcomm_test
