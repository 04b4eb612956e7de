// hcomm/codec/engine.hpp: compress and decompress whole buffers into frames, on any executor,
// with any codec of a codec list.
//
//   hcomm::codec::engine<> eng;                               // host executor, the library's codecs
//   auto cfg   = hcomm::codec::parse_config("zfp:8", hcomm::dtype::f32);
//   auto frame = eng.compress(cfg, std::span<const float>(x)); // std::vector<std::byte>
//   eng.decompress(frame, std::span<float>(y));               // validates, then writes y
//   hcomm::codec::engine<hcomm::exec::host, my_codecs> mine;  // a list with a codec of one's own
//
// The engine owns one workspace in the executor's memory, sized by the codecs' workspace
// query and grown only when a larger call comes (never allocated per call), and writes the
// frame header on the executor, so device compression is stream-ordered: compress_async
// never synchronises the host.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hcomm/codec/config.hpp"
#include "hcomm/codec/frame.hpp"
#include "hcomm/codec/list.hpp"
#include "hcomm/codec/registry.hpp"
#include "hcomm/core/checksum.hpp"
#include "hcomm/core/dtype.hpp"
#include "hcomm/core/error.hpp"
#include "hcomm/exec/executor.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/exec/team.hpp"

namespace hcomm::codec {

template <exec::executor Exec = exec::host, codec_list_type Codecs = registered_codecs>
class engine {
 public:
  using codecs = Codecs;
  explicit engine(Exec ex = {}) : ex_(std::move(ex)) {}
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  engine(engine&& o) noexcept : ex_(o.ex_), ws_(o.ws_), ws_bytes_(o.ws_bytes_) { o.ws_ = nullptr; o.ws_bytes_ = 0; }
  ~engine() { ex_.deallocate(ws_); }

  const Exec& executor() const noexcept { return ex_; }

  // Reserves the workspace for calls up to n elements of config c (optional: calls grow it).
  void reserve(const config& c, std::size_t n) { ensure_workspace(workspace_for(c, n)); }

  // Stream-ordered compression: in and out in executor memory; the frame size lands in
  // *frame_bytes_out (executor memory). out must hold max_frame_bytes<Codecs>(c, n).
  void compress_async(const config& c, const void* in, std::size_t n, void* out, std::size_t out_capacity,
                      std::uint64_t* frame_bytes_out) {
    validate<Codecs>(c);
    if (n > max_count(c.type)) fail(errc::invalid_argument, std::to_string(n) + " values is more than any buffer holds");
    const std::size_t need = max_frame_bytes<Codecs>(c, n);
    if (out_capacity < need)
      fail(errc::invalid_argument, "output holds " + std::to_string(out_capacity) + " bytes, " + to_string<Codecs>(c) +
                                       " may need " + std::to_string(need) + " for " + std::to_string(n) + " values");
    if (n > 0 && in == nullptr) fail(errc::invalid_argument, "null input");
    ensure_workspace(workspace_for(c, n));
    auto* payload = static_cast<std::byte*>(out) + header_bytes;
    slots s = slots_for(c, n);
    fused_checksum fused{s.block_hashes};
    visit<Codecs>(c.codec, c.type, [&](auto codec) {
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
      run_checksum(reinterpret_cast<const unsigned char*>(payload), s, max_payload_bytes<Codecs>(c, n), fused.begin, fused.end);
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
    const frame_info f = read_header<Codecs>(head, frame_bytes);
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
    validate_frame<Codecs>(f, std::numeric_limits<std::uint64_t>::max());
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
    visit<Codecs>(c.codec, c.type, [&](auto codec) {
      using C = decltype(codec);
      using T = typename C::value_type;
      C::decode(ex_, payload, static_cast<std::size_t>(f.payload_bytes), static_cast<std::size_t>(f.count), c.param,
                static_cast<T*>(out), s.codec_ws);
    });
    return f;
  }

  // Host-memory conveniences.
  template <element T>
  std::vector<std::byte> compress(const config& c, std::span<const T> in)
    requires(!Exec::is_device)
  {
    if (c.type != dtype_of<T>)
      fail(errc::mismatch, "config says " + std::string(to_string(c.type)) + ", data is " +
                               std::string(to_string(dtype_of<T>)));
    // The bound assumes every value could need the codec's side channel (ZFP's non-finite
    // list), so it is several times the typical frame: compress into uninitialised scratch
    // and return an exact-size copy instead of zero-filling the bound.
    const std::size_t bound = max_frame_bytes<Codecs>(c, in.size());
    auto scratch = std::make_unique_for_overwrite<std::byte[]>(bound);
    const std::size_t used = compress(c, in.data(), in.size(), scratch.get(), bound);
    return std::vector<std::byte>(scratch.get(), scratch.get() + used);
  }
  template <element T>
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
    return visit<Codecs>(c.codec, c.type, [&](auto codec) { return decltype(codec)::workspace_bytes(n, c.param); });
  }
  static std::size_t workspace_for(const config& c, std::size_t n) {
    return align64(codec_ws_bytes(c, n)) + align64(checksum_blocks(max_payload_bytes<Codecs>(c, n)) * 8 + 8) + 64;
  }
  slots slots_for(const config& c, std::size_t n) const {
    auto* base = static_cast<std::byte*>(ws_);
    const std::size_t a = align64(codec_ws_bytes(c, n));
    const std::size_t b = align64(checksum_blocks(max_payload_bytes<Codecs>(c, n)) * 8 + 8);
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
