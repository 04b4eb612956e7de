// libzfp 1.0 as the oracle of the ZFP tests (tests/codec/zfp/): its fixed-rate 1-D stream of
// the same values, its decoding of our stream, and the check that ours are the same bits.
#pragma once
#include <zfp.h>

#include <cstddef>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "zfp_test_util.hpp"

namespace zfp_test {

template <class T>
constexpr zfp_type zfp_type_of = std::is_same_v<T, float> ? zfp_type_float : zfp_type_double;

// libzfp fixed-rate 1-D compression of n values: the raw stream (no header).
template <class T>
std::vector<unsigned char> oracle_compress(const std::vector<T>& x, unsigned rate) {
  if (x.empty()) return {};
  zfp_field* f = zfp_field_1d(const_cast<T*>(x.data()), zfp_type_of<T>, x.size());
  zfp_stream* z = zfp_stream_open(nullptr);
  zfp_stream_set_rate(z, rate, zfp_type_of<T>, 1, zfp_false);
  std::vector<unsigned char> buf(zfp_stream_maximum_size(z, f) + 64);
  bitstream* s = stream_open(buf.data(), buf.size());
  zfp_stream_set_bit_stream(z, s);
  zfp_stream_rewind(z);
  const size_t bytes = zfp_compress(z, f);
  REQUIRE(bytes > 0);
  buf.resize(bytes);
  stream_close(s);
  zfp_stream_close(z);
  zfp_field_free(f);
  return buf;
}

// libzfp decompression of our stream (prefix of the payload).
template <class T>
std::vector<T> oracle_decompress(const unsigned char* stream, std::size_t bytes, std::size_t n, unsigned rate) {
  std::vector<T> out(n);
  if (n == 0) return out;
  std::vector<unsigned char> copy(stream, stream + bytes);
  copy.resize(copy.size() + 64, 0);
  zfp_field* f = zfp_field_1d(out.data(), zfp_type_of<T>, n);
  zfp_stream* z = zfp_stream_open(nullptr);
  zfp_stream_set_rate(z, rate, zfp_type_of<T>, 1, zfp_false);
  bitstream* s = stream_open(copy.data(), copy.size());
  zfp_stream_set_bit_stream(z, s);
  zfp_stream_rewind(z);
  REQUIRE(zfp_decompress(z, f) > 0);
  stream_close(s);
  zfp_stream_close(z);
  zfp_field_free(f);
  return out;
}

// Our stream must be libzfp's, followed by zero padding to a whole 64-bit word.
template <class T>
void check_stream_equal(const encoded<T>& ours, const std::vector<unsigned char>& ref) {
  REQUIRE(ours.stream_bytes >= ref.size());
  REQUIRE(ours.stream_bytes - ref.size() < 8);
  const auto* p = reinterpret_cast<const unsigned char*>(ours.payload.data());
  std::size_t first_diff = ref.size();
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (p[i] != ref[i]) { first_diff = i; break; }
  INFO("first differing byte " << first_diff << " of " << ref.size());
  REQUIRE(first_diff == ref.size());
  for (std::size_t i = ref.size(); i < ours.stream_bytes; ++i) REQUIRE(p[i] == 0);
}

// Our stream for x at rate is libzfp's, and our decoding of it is libzfp's, bit for bit.
// Returns our encoding for further checks.
template <class T>
encoded<T> check_like_libzfp(const std::vector<T>& x, unsigned rate) {
  auto ours = our_encode(x, rate);
  check_stream_equal(ours, oracle_compress(x, rate));
  REQUIRE(same_bits(our_decode<T>(ours.payload, x.size(), rate),
                    oracle_decompress<T>(reinterpret_cast<const unsigned char*>(ours.payload.data()),
                                         ours.stream_bytes, x.size(), rate)));
  return ours;
}

}  // namespace zfp_test
