// hcomm/codec/codec.hpp: compress and decompress whole buffers into frames, on any executor.
//
//   hcomm::codec::engine<> eng;                               // host executor
//   auto cfg   = hcomm::codec::parse_config("zfp:8", hcomm::dtype::f32);
//   auto frame = eng.compress(cfg, std::span<const float>(x)); // std::vector<std::byte>
//   eng.decompress(frame, std::span<float>(y));               // validates, then writes y
//
// A codec joins by satisfying `codec_kernel` and being named in codec/registry.hpp. The
// engine owns one workspace in the executor's memory, grown only when a larger call comes
// (never allocated per call), and writes the frame header on the executor, so CUDA
// compression is stream-ordered: compress_async never synchronises the host.
#pragma once
#include <algorithm>
#include <concepts>
#include <memory>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "hcomm/codec/frame.hpp"
#include "hcomm/codec/registry.hpp"
#include "hcomm/core/checksum.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/exec/executor.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/exec/team.hpp"
#include "hcomm/policy/compressor.hpp"

namespace hcomm::codec {

// What the engine needs of a codec (a class template over the element type).
template <class C>
concept codec_kernel = requires(std::size_t n, unsigned p) {
  { C::id } -> std::convertible_to<codec_id>;
  typename C::value_type;
  { C::valid_param(p) } -> std::same_as<bool>;
  { C::max_payload_bytes(n, p) } -> std::same_as<std::size_t>;
  { C::workspace_bytes(n, p) } -> std::same_as<std::size_t>;
  // encode(ex, in, n, param, payload, payload_bytes_out /*executor memory*/, workspace)
  //   optionally also encode(..., workspace, fused_checksum*): hashes payload blocks while it
  //   writes them (null: checksum off) and says which (core/checksum.hpp).
  // decode(ex, payload, payload_bytes, n, param, out, workspace): throws hcomm::error on a
  //   malformed payload before writing out, whatever the bytes (checksums can be off).
  // Optionally min_payload_bytes(n, param): the least payload the codec writes for n values
  //   (n <= max_count), so that validate_frame can refuse a count its payload cannot hold
  //   before anything is sized by it; a codec without it is bounded by the output cap only.
};

// A runtime description of one compression setting (what a frame header records).
struct config {
  codec_id codec = codec_id::none;
  dtype type = dtype::f32;
  unsigned param = 0;   // mpc: delta dim (0 = auto); zfp: rate in bits per value
  bool checksum = true; // payload checksum in the frame

  template <compressor_policy C, floating_element T>
  static constexpr config of(bool checksum = true) {
    return config{C::codec, dtype_of<T>, C::param, checksum};
  }
  friend bool operator==(const config&, const config&) = default;
};

inline std::string to_string(const config& c) {
  std::string s = codec_name(c.codec);
  if (c.codec != codec_id::none) {
    s += ':';
    s += std::to_string(c.param);
  }
  return s;
}

namespace detail {
template <floating_element T, class F, template <class> class First, template <class> class... Rest>
decltype(auto) visit_codec(codec_id id, F&& f, codec_list<First, Rest...>) {
  if (First<T>::id == id) return f(First<T>{});
  if constexpr (sizeof...(Rest) > 0) {
    return visit_codec<T>(id, static_cast<F&&>(f), codec_list<Rest...>{});
  } else {
    fail(errc::invalid_argument, "codec " + codec_name(id) + " is not in this build's registry");
  }
}
}  // namespace detail

// Calls f(Codec<T>{}) for the codec and element type of a runtime config.
template <class F>
decltype(auto) visit(codec_id id, dtype type, F&& f) {
  if (type == dtype::f32) return detail::visit_codec<float>(id, static_cast<F&&>(f), registered_codecs{});
  if (type == dtype::f64) return detail::visit_codec<double>(id, static_cast<F&&>(f), registered_codecs{});
  fail(errc::invalid_argument, "unknown dtype");
}

namespace detail {
template <template <class> class... Codecs>
constexpr bool in_list(codec_id id, codec_list<Codecs...>) {
  return ((Codecs<float>::id == id) || ...);
}
}  // namespace detail

// Whether this build can encode/decode codec `id` (a frame may name a codec we lack).
constexpr bool is_registered(codec_id id) { return detail::in_list(id, registered_codecs{}); }

// Largest element count whose byte size fits in size_t (so no size computation wraps).
constexpr std::size_t max_count(dtype t) { return SIZE_MAX / 16 / size_of(t); }

inline void validate(const config& c) {
  if (!is_valid(c.type)) fail(errc::invalid_argument, "unknown dtype");
  if (!is_registered(c.codec)) fail(errc::unsupported, "codec " + codec_name(c.codec) + " is not in this build");
  const bool ok = visit(c.codec, c.type, [&](auto codec) { return decltype(codec)::valid_param(c.param); });
  if (!ok) {
    const char* what = c.codec == codec_id::mpc   ? "mpc takes a dimension 0 (auto) or 1..32"
                       : c.codec == codec_id::zfp ? "zfp takes a rate of 3..64 bits per value"
                                                  : "none takes no parameter";
    fail(errc::invalid_argument, "bad parameter " + std::to_string(c.param) + " for " + to_string(c) + ": " + what);
  }
}

// "none", "mpc", "mpc:4", "zfp:8"; throws invalid_argument with what was wrong.
inline config parse_config(std::string_view s, dtype type = dtype::f32, bool checksum = true) {
  config c;
  c.type = type;
  c.checksum = checksum;
  const auto colon = s.find(':');
  const std::string_view name = s.substr(0, colon);
  if (name == "none") c.codec = codec_id::none;
  else if (name == "mpc") c.codec = codec_id::mpc;
  else if (name == "zfp") c.codec = codec_id::zfp;
  else fail(errc::invalid_argument, "unknown codec '" + std::string(name) + "' (use none, mpc[:DIM] or zfp:RATE)");
  if (colon != std::string_view::npos) {
    const std::string_view num = s.substr(colon + 1);
    unsigned v = 0;
    if (num.empty() || num.size() > 3) fail(errc::invalid_argument, "bad codec parameter in '" + std::string(s) + "'");
    for (char ch : num) {
      if (ch < '0' || ch > '9') fail(errc::invalid_argument, "bad codec parameter in '" + std::string(s) + "'");
      v = v * 10 + static_cast<unsigned>(ch - '0');
    }
    c.param = v;
  } else if (c.codec == codec_id::zfp) {
    fail(errc::invalid_argument, "zfp needs a rate, e.g. zfp:8");
  }
  validate(c);
  return c;
}

inline std::size_t max_payload_bytes(const config& c, std::size_t n) {
  return visit(c.codec, c.type, [&](auto codec) { return decltype(codec)::max_payload_bytes(n, c.param); });
}
inline std::size_t max_frame_bytes(const config& c, std::size_t n) { return header_bytes + max_payload_bytes(c, n); }

// The least payload config c writes for n <= max_count(c.type) values (0 for a codec that
// does not say). For the registered codecs it is exact: all-zero MPC input, ZFP input without
// NaN/Inf and any none input produce payloads of exactly this size. So a payload of P bytes
// holds at most P bytes of values (none), about 8 * P / rate values (zfp), or about 31.5 * P
// (MPC float32) and 63 * P (MPC float64) bytes of values: two index bytes per 1024 values and
// one bitmap word per 32 (or 64) values.
inline std::size_t min_payload_bytes(const config& c, std::size_t n) {
  return visit(c.codec, c.type, [&](auto codec) -> std::size_t {
    using C = decltype(codec);
    if constexpr (requires { C::min_payload_bytes(n, c.param); }) return C::min_payload_bytes(n, c.param);
    else return 0;
  });
}

// The output a frame may announce where the receiver sizes its buffer by the frame's own
// count (hcomm-codec decompress): 2^40 bytes (1 TiB) unless the caller says otherwise.
inline constexpr std::uint64_t default_max_output_bytes = std::uint64_t{1} << 40;

// Checks what a header (read_header's result) says before anything is sized by its element
// count: the codec is in this build and takes the parameter, the count's bytes fit in size_t
// (max_count), the payload size lies between the least and the most the codec writes for that
// many values, and their bytes fit in max_output_bytes. Throws unsupported (codec not in this
// build), corrupt_frame (a header that cannot be true) or invalid_argument (a possible frame
// with more output than max_output_bytes), naming the numbers that disagree. It allocates
// nothing and reads no payload byte. The engine calls it with no cap: there the cap is the
// caller's buffer, whose size the count must equal.
inline void validate_frame(const frame_info& f, std::uint64_t max_output_bytes = default_max_output_bytes) {
  const config c{f.codec, f.type, f.param, f.has_checksum()};
  if (!is_registered(c.codec))
    fail(errc::unsupported, "frame uses codec " + codec_name(c.codec) + ", not in this build");
  if (f.count > max_count(f.type))
    fail(errc::corrupt_frame, "frame announces " + std::to_string(f.count) + " values, more than the " +
                                  std::to_string(max_count(f.type)) + " " + std::string(to_string(f.type)) +
                                  " values any buffer holds (its payload has " + std::to_string(f.payload_bytes) +
                                  " bytes)");
  try {
    validate(c);
  } catch (const error& e) {
    fail(errc::corrupt_frame, std::string("header parameter invalid: ") + e.what());
  }
  const auto n = static_cast<std::size_t>(f.count);
  const std::uint64_t out_bytes = f.count * size_of(f.type);  // no wrap: count <= max_count
  if (f.payload_bytes > max_payload_bytes(c, n))
    fail(errc::corrupt_frame, "payload of " + std::to_string(f.payload_bytes) + " bytes exceeds the codec's bound");
  const std::size_t least = min_payload_bytes(c, n);
  if (f.payload_bytes < least)
    fail(errc::corrupt_frame, "frame announces " + std::to_string(f.count) + " values (" + std::to_string(out_bytes) +
                                  " bytes of " + std::string(to_string(f.type)) + ") but its " + to_string(c) +
                                  " payload has " + std::to_string(f.payload_bytes) +
                                  " bytes; that many values need at least " + std::to_string(least));
  if (out_bytes > max_output_bytes)
    fail(errc::invalid_argument, "frame announces " + std::to_string(f.count) + " values (" +
                                     std::to_string(out_bytes) + " bytes), more than the output limit of " +
                                     std::to_string(max_output_bytes) + " bytes");
}

template <exec::executor Exec = exec::host>
class engine {
 public:
  explicit engine(Exec ex = {}) : ex_(std::move(ex)) {}
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  engine(engine&& o) noexcept : ex_(o.ex_), ws_(o.ws_), ws_bytes_(o.ws_bytes_) { o.ws_ = nullptr; o.ws_bytes_ = 0; }
  ~engine() { ex_.deallocate(ws_); }

  const Exec& executor() const noexcept { return ex_; }

  // Reserves the workspace for calls up to n elements of config c (optional: calls grow it).
  void reserve(const config& c, std::size_t n) { ensure_workspace(workspace_for(c, n)); }

  // Stream-ordered compression: in and out in executor memory; the frame size lands in
  // *frame_bytes_out (executor memory). out must hold max_frame_bytes(c, n).
  void compress_async(const config& c, const void* in, std::size_t n, void* out, std::size_t out_capacity,
                      std::uint64_t* frame_bytes_out) {
    validate(c);
    if (n > max_count(c.type)) fail(errc::invalid_argument, std::to_string(n) + " values is more than any buffer holds");
    const std::size_t need = max_frame_bytes(c, n);
    if (out_capacity < need)
      fail(errc::invalid_argument, "output holds " + std::to_string(out_capacity) + " bytes, " + to_string(c) +
                                       " may need " + std::to_string(need) + " for " + std::to_string(n) + " values");
    if (n > 0 && in == nullptr) fail(errc::invalid_argument, "null input");
    ensure_workspace(workspace_for(c, n));
    auto* payload = static_cast<std::byte*>(out) + header_bytes;
    slots s = slots_for(c, n);
    fused_checksum fused{s.block_hashes};
    visit(c.codec, c.type, [&](auto codec) {
      using C = decltype(codec);
      using T = typename C::value_type;
      const T* x = static_cast<const T*>(in);
      if constexpr (requires { C::encode(ex_, x, n, c.param, payload, s.payload_bytes, s.codec_ws, &fused); }) {
        C::encode(ex_, x, n, c.param, payload, s.payload_bytes, s.codec_ws, c.checksum ? &fused : nullptr);
      } else {
        C::encode(ex_, x, n, c.param, payload, s.payload_bytes, s.codec_ws);
      }
    });
    if (c.checksum)
      run_checksum(reinterpret_cast<const unsigned char*>(payload), s, max_payload_bytes(c, n), fused.begin, fused.end);
    ex_.for_each(1, write_header_kernel{static_cast<unsigned char*>(out), static_cast<std::uint8_t>(c.codec),
                                        static_cast<std::uint8_t>(c.type), c.param,
                                        c.checksum ? flag_checksum : 0u, n, s.payload_bytes, s.checksum,
                                        frame_bytes_out});
  }

  // Compresses and returns the frame size (synchronises the executor once, to read it).
  std::size_t compress(const config& c, const void* in, std::size_t n, void* out, std::size_t out_capacity) {
    compress_async(c, in, n, out, out_capacity, nullptr);
    const slots s = slots_for(c, n);
    std::uint64_t payload = 0;
    ex_.to_host(&payload, s.payload_bytes, sizeof payload);  // synchronises
    return static_cast<std::size_t>(header_bytes + payload);
  }

  // Validates header, checksum and payload structure, then writes n_expected values of type
  // `expected` to out (executor memory). Throws hcomm::error and leaves out untouched on any
  // problem. Reads the header to the host (one synchronisation on device executors).
  frame_info decompress(const void* frame, std::size_t frame_bytes, void* out, std::size_t n_expected, dtype expected) {
    if (frame == nullptr && frame_bytes > 0) fail(errc::invalid_argument, "null frame");
    unsigned char head[header_bytes] = {};
    if (frame_bytes >= header_bytes) ex_.to_host(head, frame, header_bytes);
    const frame_info f = read_header(head, frame_bytes);
    if (f.type != expected)
      fail(errc::mismatch, "frame holds " + std::string(to_string(f.type)) + ", receiver expects " +
                               std::string(to_string(expected)));
    if (f.count != n_expected)
      fail(errc::mismatch, "frame holds " + std::to_string(f.count) + " values, receiver expects " +
                               std::to_string(n_expected));
    if (f.frame_bytes() != frame_bytes)
      fail(errc::corrupt_frame, "frame is " + std::to_string(frame_bytes) + " bytes, header says " +
                                    std::to_string(f.frame_bytes()));
    // Before the workspace is sized by the count.
    validate_frame(f, std::numeric_limits<std::uint64_t>::max());
    const config c{f.codec, f.type, f.param, f.has_checksum()};
    if (n_expected > 0 && out == nullptr) fail(errc::invalid_argument, "null output");
    ensure_workspace(workspace_for(c, f.count));
    const auto* payload = static_cast<const std::byte*>(frame) + header_bytes;
    slots s = slots_for(c, f.count);
    if (f.has_checksum()) {
      ex_.from_host(s.payload_bytes, &f.payload_bytes, sizeof(std::uint64_t));
      run_checksum(reinterpret_cast<const unsigned char*>(payload), s, f.payload_bytes);
      std::uint64_t got = 0;
      ex_.to_host(&got, s.checksum, sizeof got);
      if (got != f.payload_checksum) fail(errc::corrupt_frame, "payload checksum mismatch");
    }
    visit(c.codec, c.type, [&](auto codec) {
      using C = decltype(codec);
      using T = typename C::value_type;
      C::decode(ex_, payload, static_cast<std::size_t>(f.payload_bytes), static_cast<std::size_t>(f.count), c.param,
                static_cast<T*>(out), s.codec_ws);
    });
    return f;
  }

  // Host-memory conveniences.
  template <floating_element T>
  std::vector<std::byte> compress(const config& c, std::span<const T> in)
    requires(!Exec::is_device)
  {
    if (c.type != dtype_of<T>)
      fail(errc::mismatch, "config says " + std::string(to_string(c.type)) + ", data is " +
                               std::string(to_string(dtype_of<T>)));
    // The bound assumes every value could need the codec's side channel (ZFP's non-finite
    // list), so it is several times the typical frame: compress into uninitialised scratch
    // and return an exact-size copy instead of zero-filling the bound.
    const std::size_t bound = max_frame_bytes(c, in.size());
    auto scratch = std::make_unique_for_overwrite<std::byte[]>(bound);
    const std::size_t used = compress(c, in.data(), in.size(), scratch.get(), bound);
    return std::vector<std::byte>(scratch.get(), scratch.get() + used);
  }
  template <floating_element T>
  frame_info decompress(std::span<const std::byte> frame, std::span<T> out)
    requires(!Exec::is_device)
  {
    return decompress(frame.data(), frame.size(), out.data(), out.size(), dtype_of<T>);
  }

 private:
  struct slots {
    std::byte* codec_ws;
    std::uint64_t* block_hashes;
    std::uint64_t* payload_bytes;
    std::uint64_t* checksum;
  };
  static std::size_t align64(std::size_t b) { return (b + 63) / 64 * 64; }
  static std::size_t codec_ws_bytes(const config& c, std::size_t n) {
    return visit(c.codec, c.type, [&](auto codec) { return decltype(codec)::workspace_bytes(n, c.param); });
  }
  static std::size_t workspace_for(const config& c, std::size_t n) {
    return align64(codec_ws_bytes(c, n)) + align64(checksum_blocks(max_payload_bytes(c, n)) * 8 + 8) + 64;
  }
  slots slots_for(const config& c, std::size_t n) const {
    auto* base = static_cast<std::byte*>(ws_);
    const std::size_t a = align64(codec_ws_bytes(c, n));
    const std::size_t b = align64(checksum_blocks(max_payload_bytes(c, n)) * 8 + 8);
    return slots{base, reinterpret_cast<std::uint64_t*>(base + a), reinterpret_cast<std::uint64_t*>(base + a + b),
                 reinterpret_cast<std::uint64_t*>(base + a + b + 8)};
  }
  void ensure_workspace(std::size_t bytes) {
    if (bytes <= ws_bytes_) return;
    ex_.deallocate(ws_);
    ws_ = nullptr;
    ws_bytes_ = 0;
    ws_ = ex_.allocate(bytes);
    ws_bytes_ = bytes;
  }
  // Hashes the payload's blocks except [done_begin, done_end) (hashed by the codec already).
  void run_checksum(const unsigned char* payload, const slots& s, std::size_t max_payload, std::size_t done_begin = 0,
                    std::size_t done_end = 0) {
    const std::size_t blocks = checksum_blocks(max_payload);
    if constexpr (Exec::is_device && exec::team_executor<Exec>) {
      // A team per 64 KiB block (the flat kernel would hash a block in one GPU thread).
      if (blocks > 0)
        ex_.launch(blocks, checksum_team_threads,
                   checksum_block_team_kernel{payload, s.payload_bytes, s.block_hashes, done_begin, done_end});
    } else if (blocks > 0) {
      ex_.for_each(blocks,
                   checksum_block_kernel{payload, s.payload_bytes, s.block_hashes, blocks, done_begin, done_end});
    }
    ex_.for_each(1, checksum_combine_kernel{s.payload_bytes, s.block_hashes, s.checksum});
  }

  Exec ex_;
  void* ws_ = nullptr;
  std::size_t ws_bytes_ = 0;
};

}  // namespace hcomm::codec
