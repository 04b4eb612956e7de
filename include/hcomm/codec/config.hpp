// hcomm/codec/config.hpp: one compression setting at run time (what a frame header records),
// read from text, checked against a codec list, and the frame-size bounds it implies.
//
//   auto cfg = hcomm::codec::parse_config("zfp:8", hcomm::dtype::f32);   // or config::of<Policy, T>()
//   std::size_t cap = hcomm::codec::max_frame_bytes(cfg, n);              // worst case, for buffers
//   hcomm::codec::validate_frame(hcomm::codec::read_header(p, bytes));    // before trusting a count
//
// Every function takes the codec list as its first template argument (the library's list by
// default) and asks the codecs' traits (codec/traits.hpp); none names a codec.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "hcomm/codec/frame.hpp"
#include "hcomm/codec/id.hpp"
#include "hcomm/codec/list.hpp"
#include "hcomm/codec/registry.hpp"
#include "hcomm/codec/traits.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/policy/compressor.hpp"

namespace hcomm::codec {

struct config {
  codec_id codec = codec_id::none;
  dtype type = dtype::f32;
  unsigned param = 0;   // the codec's parameter (its traits' param_help says what it means)
  bool checksum = true; // payload checksum in the frame

  template <compressor_policy C, element T>
  static constexpr config of(bool checksum = true) {
    return config{C::codec, dtype_of<T>, C::param, checksum};
  }
  friend bool operator==(const config&, const config&) = default;
};

// Calls f(Codec<T>{}) for the codec and element type of a runtime setting.
template <codec_list_type Codecs = registered_codecs, class F>
decltype(auto) visit(codec_id id, dtype type, F&& f) {
  return list_visit<Codecs>(id, type, static_cast<F&&>(f));
}

// Whether this build can encode/decode codec `id` (a frame may name a codec we lack).
template <codec_list_type Codecs = registered_codecs>
constexpr bool is_registered(codec_id id) {
  return list_contains<Codecs>(id);
}

// Whether the codec of c loses information (error feedback, decoded copies of the owner).
template <codec_list_type Codecs = registered_codecs>
constexpr bool is_lossy(const config& c) {
  return list_ask<Codecs>(c.codec, [](auto t) { return bool(decltype(t)::lossy); });
}
// Whether error feedback over the codec of c keeps a bounded residual (traits.hpp:
// feedback_stable); unregistered codecs and element types answer false.
template <codec_list_type Codecs = registered_codecs>
bool is_feedback_stable(const config& c) {
  if (!is_registered<Codecs>(c.codec) || !is_valid(c.type)) return false;
  return visit<Codecs>(c.codec, c.type, [&](auto codec) { return feedback_stable_of<decltype(codec)>(c.param); });
}
// Whether the codec of c sends the raw values (the collectives use MPI's own operations).
template <codec_list_type Codecs = registered_codecs>
constexpr bool is_identity(const config& c) {
  return list_ask<Codecs>(c.codec, [](auto t) { return identity_of<decltype(t)>(); });
}

// "zfp:8", "mpc:0", "none" (a codec without a parameter shows none).
template <codec_list_type Codecs = registered_codecs>
std::string to_string(const config& c) {
  std::string s = codec_name<Codecs>(c.codec);
  const bool shows_param =
      !list_contains<Codecs>(c.codec) ||
      list_ask<Codecs>(c.codec, [](auto t) { return decltype(t)::parameter != param_use::none; });
  if (shows_param) {
    s += ':';
    s += std::to_string(c.param);
  }
  return s;
}

// Largest element count whose byte size fits in size_t (so no size computation wraps).
constexpr std::size_t max_count(dtype t) { return size_of(t) != 0 ? SIZE_MAX / 16 / size_of(t) : 0; }

template <codec_list_type Codecs = registered_codecs>
void validate(const config& c) {
  if (!is_valid(c.type)) fail(errc::invalid_argument, "unknown dtype");
  if (!is_registered<Codecs>(c.codec))
    fail(errc::unsupported, "codec " + codec_name<Codecs>(c.codec) + " is not in this build");
  std::string_view help;
  const bool ok = visit<Codecs>(c.codec, c.type, [&](auto codec) {
    help = decltype(codec)::param_help;
    return decltype(codec)::valid_param(c.param);
  });
  if (!ok)
    fail(errc::invalid_argument,
         "bad parameter " + std::to_string(c.param) + " for " + to_string<Codecs>(c) + ": " + std::string(help));
}

// "NAME" or "NAME:PARAM" for a codec of the list ("none", "mpc", "mpc:4", "zfp:8"; "NAME"
// alone takes the codec's default_param, 0 unless it says); throws invalid_argument with
// what was wrong.
template <codec_list_type Codecs = registered_codecs>
config parse_config(std::string_view s, dtype type = dtype::f32, bool checksum = true) {
  config c;
  c.type = type;
  c.checksum = checksum;
  const auto colon = s.find(':');
  const std::string_view name = s.substr(0, colon);
  bool found = false;
  param_use use = param_use::none;
  std::string_view help;
  for_each_codec<Codecs>([&](auto t) {
    using C = decltype(t);
    if (found || std::string_view(C::name) != name) return;
    found = true;
    c.codec = C::id;
    c.param = default_param_of<C>();
    use = C::parameter;
    help = C::param_help;
  });
  if (!found)
    fail(errc::invalid_argument, "unknown codec '" + std::string(name) + "' (use " +
                                     list_usages<Codecs>([](auto) { return true; }) + ")");
  if (colon != std::string_view::npos) {
    const std::string_view num = s.substr(colon + 1);
    unsigned v = 0;
    if (num.empty() || num.size() > 3) fail(errc::invalid_argument, "bad codec parameter in '" + std::string(s) + "'");
    for (char ch : num) {
      if (ch < '0' || ch > '9') fail(errc::invalid_argument, "bad codec parameter in '" + std::string(s) + "'");
      v = v * 10 + static_cast<unsigned>(ch - '0');
    }
    c.param = v;
  } else if (use == param_use::required) {
    fail(errc::invalid_argument, std::string(name) + " needs a parameter: " + std::string(help));
  }
  validate<Codecs>(c);
  return c;
}

template <codec_list_type Codecs = registered_codecs>
std::size_t max_payload_bytes(const config& c, std::size_t n) {
  return visit<Codecs>(c.codec, c.type, [&](auto codec) { return decltype(codec)::max_payload_bytes(n, c.param); });
}
template <codec_list_type Codecs = registered_codecs>
std::size_t max_frame_bytes(const config& c, std::size_t n) {
  return header_bytes + max_payload_bytes<Codecs>(c, n);
}

// The least payload config c writes for n <= max_count(c.type) values (0 for a codec that
// does not say). The library's codecs give it exactly: a payload of P bytes holds at most P
// bytes of values (none), about 8 * P / rate values (zfp), or about 31.5 * P (MPC float32)
// and 63 * P (MPC float64) bytes of values.
template <codec_list_type Codecs = registered_codecs>
std::size_t min_payload_bytes(const config& c, std::size_t n) {
  return visit<Codecs>(c.codec, c.type,
                       [&](auto codec) { return min_payload_bytes_of<decltype(codec)>(n, c.param); });
}

// A capacity for one frame of n values that holds any frame whole and is more than every
// frame (so a message of exactly the capacity announces a second part), or, for a codec
// whose typical frame is far below its bound, a 64-byte multiple of the typical frame
// (frames that do not fit travel in two parts; algorithm/ring.hpp).
template <codec_list_type Codecs = registered_codecs>
std::size_t slot_bytes(const config& c, std::size_t n) {
  const std::size_t above_bound = (max_frame_bytes<Codecs>(c, n) + 1 + 63) / 64 * 64;
  return visit<Codecs>(c.codec, c.type, [&](auto codec) -> std::size_t {
    using C = decltype(codec);
    if constexpr (has_typical_payload<C>) {
      const std::size_t typical = (header_bytes + C::typical_payload_bytes(n, c.param) + 63) / 64 * 64;
      return typical < above_bound ? typical : above_bound;
    } else {
      return above_bound;
    }
  });
}

// The output a frame may announce where the receiver sizes its buffer by the frame's own
// count (hcomm-codec decompress): 2^40 bytes (1 TiB) unless the caller says otherwise.
inline constexpr std::uint64_t default_max_output_bytes = std::uint64_t{1} << 40;

// Checks what a header (read_header's result) says before anything is sized by its element
// count: the codec is in the list and takes the parameter, the count's bytes fit in size_t
// (max_count), the payload size lies between the least and the most the codec writes for that
// many values, and their bytes fit in max_output_bytes. Throws unsupported (codec not in the
// list), corrupt_frame (a header that cannot be true) or invalid_argument (a possible frame
// with more output than max_output_bytes), naming the numbers that disagree. It allocates
// nothing and reads no payload byte. The engine calls it with no cap: there the cap is the
// caller's buffer, whose size the count must equal.
template <codec_list_type Codecs = registered_codecs>
void validate_frame(const frame_info& f, std::uint64_t max_output_bytes = default_max_output_bytes) {
  const config c{f.codec, f.type, f.param, f.has_checksum()};
  if (!is_registered<Codecs>(c.codec))
    fail(errc::unsupported, "frame uses codec " + codec_name<Codecs>(c.codec) + ", not in this build");
  if (f.count > max_count(f.type))
    fail(errc::corrupt_frame, "frame announces " + std::to_string(f.count) + " values, more than the " +
                                  std::to_string(max_count(f.type)) + " " + std::string(to_string(f.type)) +
                                  " values any buffer holds (its payload has " + std::to_string(f.payload_bytes) +
                                  " bytes)");
  try {
    validate<Codecs>(c);
  } catch (const error& e) {
    fail(errc::corrupt_frame, std::string("header parameter invalid: ") + e.what());
  }
  const auto n = static_cast<std::size_t>(f.count);
  const std::uint64_t out_bytes = f.count * size_of(f.type);  // no wrap: count <= max_count
  if (f.payload_bytes > max_payload_bytes<Codecs>(c, n))
    fail(errc::corrupt_frame, "payload of " + std::to_string(f.payload_bytes) + " bytes exceeds the codec's bound");
  const std::size_t least = min_payload_bytes<Codecs>(c, n);
  if (f.payload_bytes < least)
    fail(errc::corrupt_frame, "frame announces " + std::to_string(f.count) + " values (" + std::to_string(out_bytes) +
                                  " bytes of " + std::string(to_string(f.type)) + ") but its " +
                                  to_string<Codecs>(c) + " payload has " + std::to_string(f.payload_bytes) +
                                  " bytes; that many values need at least " + std::to_string(least));
  if (out_bytes > max_output_bytes)
    fail(errc::invalid_argument, "frame announces " + std::to_string(f.count) + " values (" +
                                     std::to_string(out_bytes) + " bytes), more than the output limit of " +
                                     std::to_string(max_output_bytes) + " bytes");
}

}  // namespace hcomm::codec
