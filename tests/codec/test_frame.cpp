// Frame robustness for every codec in codec/registry.hpp, through the engine: truncation at
// every length, random byte flips (checksum on: always detected; off: an error or a decode,
// never a crash), foreign bytes, receiver mismatches, edited header fields, and that the
// output buffer is untouched whenever decompress throws. Run it under HCOMM_SANITIZE=ON too:
// out-of-bounds reads and writes are findings there even when the result looks right.
#include <catch2/catch.hpp>

#include <zfp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "hcomm/codec/codec.hpp"
#include "hcomm/core/cpu_features.hpp"

namespace {

namespace hc = hcomm::codec;
using hcomm::codec_id;
using hcomm::dtype;
using hcomm::errc;
using bytes = std::vector<unsigned char>;

template <template <class> class... Cs>
std::vector<codec_id> registered_ids(hc::codec_list<Cs...>) {
  return {Cs<float>::id...};
}

bool valid(const hc::config& c) {
  try {
    hc::validate(c);
    return true;
  } catch (const hcomm::error&) {
    return false;
  }
}

// Every registered codec with a spread of its valid parameters.
std::vector<hc::config> configs(dtype t, bool checksum) {
  std::vector<hc::config> out;
  for (codec_id id : registered_ids(hc::registered_codecs{}))
    for (unsigned p : {0u, 1u, 3u, 8u, 16u, 32u}) {
      const hc::config c{id, t, p, checksum};
      if (valid(c)) out.push_back(c);
    }
  return out;
}

std::string name(const hc::config& c, std::size_t n) {
  return hc::to_string(c) + "/" + std::string(hcomm::to_string(c.type)) + (c.checksum ? "/ck" : "/nock") + "/n=" +
         std::to_string(n);
}

// kind 0: smooth field + small noise; 1: gradient-like noise; 2: specials (NaN, +-Inf, +-0,
// denormals, extremes) mixed into noise.
template <class T>
  requires hcomm::floating_element<T>
std::vector<T> make_data(std::size_t n, int kind, std::uint64_t seed = 7) {
  std::mt19937_64 g(seed + n * 3 + static_cast<unsigned>(kind));
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i);
    v[i] = static_cast<T>(kind == 0 ? 2.0 * std::sin(0.013 * x) + 0.3 * std::cos(0.0021 * x) + 1e-4 * nd(g)
                                    : 1e-3 * nd(g));
  }
  if (kind == 2) {
    using L = std::numeric_limits<T>;
    const T specials[] = {L::quiet_NaN(), L::infinity(), -L::infinity(), T(0), -T(0), L::denorm_min(), L::max(),
                          -L::max(), L::min(), -L::quiet_NaN()};
    for (std::size_t i = 0; i < n; i += 3) v[i] = specials[(i / 3) % (sizeof specials / sizeof specials[0])];
  }
  return v;
}

// The 16-bit types: the float data rounded, with their own specials (NaN, signalling NaN,
// ±Inf, ±0, the smallest subnormal, the largest finite, the smallest normal).
template <hcomm::half_element H>
std::vector<H> make_data(std::size_t n, int kind, std::uint64_t seed = 7) {
  const std::vector<float> x = make_data<float>(n, kind == 2 ? 1 : kind, seed);
  std::vector<H> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = H(x[i]);
  if (kind == 2) {
    constexpr bool b = std::is_same_v<H, hcomm::bf16>;
    const std::uint16_t specials[] = {b ? 0x7FC0 : 0x7E00, b ? 0x7F81 : 0x7C01, b ? 0x7F80 : 0x7C00,
                                      b ? 0xFF80 : 0xFC00, 0x0000, 0x8000, 0x0001, b ? 0x7F7F : 0x7BFF,
                                      b ? 0x0080 : 0x0400, b ? 0xFFC0 : 0xFE00};
    for (std::size_t i = 0; i < n; i += 3) v[i] = H::from_bits(specials[(i / 3) % (sizeof specials / sizeof specials[0])]);
  }
  return v;
}

struct sample {
  hc::config cfg;
  std::size_t n = 0;
  bytes frame;
  bytes decoded;  // what decompress of the intact frame writes
};

std::string name(const sample& s) { return name(s.cfg, s.n); }

bytes to_bytes(const std::vector<std::byte>& v) {
  bytes b(v.size());
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size());
  return b;
}

template <class T>
sample make_sample(hc::engine<>& eng, const hc::config& c, std::size_t n, int kind) {
  const std::vector<T> x = make_data<T>(n, kind);
  sample s{c, n, to_bytes(eng.compress(c, std::span<const T>(x))), {}};
  std::vector<T> y(n);
  eng.decompress(s.frame.data(), s.frame.size(), y.data(), n, c.type);
  s.decoded.resize(n * sizeof(T));
  if (n) std::memcpy(s.decoded.data(), y.data(), n * sizeof(T));
  return s;
}

// Frames of every registered codec x parameter x dtype x checksum x size x data kind.
std::vector<sample> samples(hc::engine<>& eng, std::initializer_list<std::size_t> sizes, std::initializer_list<int> kinds,
                            std::initializer_list<bool> checksums = {true, false}) {
  std::vector<sample> out;
  for (dtype t : {dtype::f32, dtype::f64, dtype::bf16, dtype::f16})
    for (bool ck : checksums)
      for (const hc::config& c : configs(t, ck))
        for (std::size_t n : sizes)
          for (int k : kinds) {
            if (c.codec == codec_id::none && k == 1) continue;  // none does not care about the data
            switch (t) {
              case dtype::f32: out.push_back(make_sample<float>(eng, c, n, k)); break;
              case dtype::f64: out.push_back(make_sample<double>(eng, c, n, k)); break;
              case dtype::bf16: out.push_back(make_sample<hcomm::bf16>(eng, c, n, k)); break;
              case dtype::f16: out.push_back(make_sample<hcomm::f16>(eng, c, n, k)); break;
            }
          }
  return out;
}

constexpr unsigned char sentinel = 0xA5;
constexpr std::size_t guard = 64;

struct outcome {
  std::optional<errc> code;  // empty: decoded
  std::string what;
  bytes out;                 // the n values written (when decoded)
};

// Decodes an exactly sized copy of `frame` (so ASan sees over-reads) into a sentinel-filled
// buffer with a guard tail; fails the test when a throwing decompress touched the buffer or
// a successful one wrote past n values.
outcome decode(hc::engine<>& eng, const bytes& frame, std::size_t n, dtype t, const std::string& ctx) {
  const std::size_t vb = n * hcomm::size_of(t);
  const std::unique_ptr<unsigned char[]> in(new unsigned char[frame.empty() ? 1 : frame.size()]);
  if (!frame.empty()) std::memcpy(in.get(), frame.data(), frame.size());
  bytes out(vb + guard, sentinel);
  outcome r;
  try {
    eng.decompress(in.get(), frame.size(), out.data(), n, t);
  } catch (const hcomm::error& e) {
    r.code = e.code();
    r.what = e.what();
    if (std::any_of(out.begin(), out.end(), [](unsigned char b) { return b != sentinel; }))
      FAIL(ctx << ": output written before decompress threw: " << e.what());
    return r;
  }
  if (std::any_of(out.begin() + static_cast<std::ptrdiff_t>(vb), out.end(), [](unsigned char b) { return b != sentinel; }))
    FAIL(ctx << ": decompress wrote past the " << n << " values");
  out.resize(vb);
  r.out = std::move(out);
  return r;
}

outcome decode(hc::engine<>& eng, const sample& s, const bytes& frame, const std::string& ctx) {
  return decode(eng, frame, s.n, s.cfg.type, ctx);
}

std::string code_name(const outcome& o) { return o.code ? std::string(hcomm::to_string(*o.code)) : "decoded"; }

void put16(bytes& f, std::size_t at, std::uint16_t v) { std::memcpy(f.data() + at, &v, 2); }
void put32(bytes& f, std::size_t at, std::uint32_t v) { std::memcpy(f.data() + at, &v, 4); }
void put64(bytes& f, std::size_t at, std::uint64_t v) { std::memcpy(f.data() + at, &v, 8); }
std::uint64_t get64(const bytes& f, std::size_t at) {
  std::uint64_t v;
  std::memcpy(&v, f.data() + at, 8);
  return v;
}
// After editing header fields: a valid header checksum, so the edit itself is what is tested.
void reseal(bytes& f) { put64(f, 56, hcomm::hash64(f.data(), 56, 0)); }

// Every cut length for frames up to 1200 bytes; for larger ones every length in the header
// and the first 200 bytes, every 97th after that, and the last 64.
std::vector<std::size_t> cut_lengths(std::size_t size) {
  std::vector<std::size_t> out;
  for (std::size_t len = 0; len < size; ++len)
    if (size <= 1200 || len < 200 || len % 97 == 0 || len + 64 >= size) out.push_back(len);
  return out;
}

hc::engine<> make_engine(int threads = 1) { return hc::engine<>(hcomm::exec::host{threads}); }

}  // namespace

TEST_CASE("frame: every registered codec round trips through the engine", "[frame]") {
  auto eng = make_engine();
  const auto ids = registered_ids(hc::registered_codecs{});
  REQUIRE(std::find(ids.begin(), ids.end(), codec_id::none) != ids.end());
  for (codec_id id : ids) {
    bool any = false;
    for (const auto& c : configs(dtype::f32, true)) any |= c.codec == id;
    INFO("codec " << hc::codec_name(id));
    CHECK(any);
  }
  for (const sample& s : samples(eng, {0, 1, 5, 1025}, {0, 2})) {
    INFO(name(s));
    REQUIRE(s.frame.size() >= hc::header_bytes);
    const hc::frame_info f = hc::read_header(s.frame.data(), s.frame.size());
    CHECK(f.codec == s.cfg.codec);
    CHECK(f.type == s.cfg.type);
    CHECK(f.count == s.n);
    CHECK(f.has_checksum() == s.cfg.checksum);
    CHECK(f.frame_bytes() == s.frame.size());
    const outcome o = decode(eng, s, s.frame, name(s));
    REQUIRE_FALSE(o.code);
    CHECK(o.out == s.decoded);
  }
}

TEST_CASE("frame: every truncation length is truncated_frame and leaves out untouched", "[frame][truncation]") {
  auto eng = make_engine();
  std::size_t cases = 0;
  for (const sample& s : samples(eng, {0, 1, 5, 33, 257, 1025}, {0, 2})) {
    for (std::size_t len : cut_lengths(s.frame.size())) {
      const bytes cut(s.frame.begin(), s.frame.begin() + static_cast<std::ptrdiff_t>(len));
      const outcome o = decode(eng, s, cut, name(s));
      if (o.code != errc::truncated_frame)
        FAIL(name(s) << " cut to " << len << " of " << s.frame.size() << " bytes: " << code_name(o) << " " << o.what);
      ++cases;
    }
  }
  // A frame that spans several 64 KiB checksum blocks: the header, then sampled lengths.
  for (const sample& s : samples(eng, {70001}, {1}, {true})) {
    for (std::size_t len = 0; len < s.frame.size(); len += (len < 200 ? 1 : 4093)) {
      const bytes cut(s.frame.begin(), s.frame.begin() + static_cast<std::ptrdiff_t>(len));
      const outcome o = decode(eng, s, cut, name(s));
      if (o.code != errc::truncated_frame) FAIL(name(s) << " cut to " << len << ": " << code_name(o));
      ++cases;
    }
  }
  CHECK(cases > 10000);
}

TEST_CASE("frame: a longer buffer than the frame is corrupt_frame", "[frame][truncation]") {
  auto eng = make_engine();
  for (const sample& s : samples(eng, {0, 5, 1025}, {0})) {
    for (std::size_t extra : {1u, 7u, 64u}) {
      bytes f = s.frame;
      f.resize(f.size() + extra, 0);
      const outcome o = decode(eng, s, f, name(s));
      INFO(name(s) << " + " << extra << " bytes: " << o.what);
      CHECK(o.code == errc::corrupt_frame);
    }
  }
}

TEST_CASE("frame: payload cut short behind a consistent header is rejected", "[frame][truncation]") {
  // The header is edited to announce the shorter payload and resealed, as a buggy or hostile
  // sender would do. Checksum on: the payload checksum catches it. Checksum off: the codec's
  // own structural checks must reject it, or the lost bytes were padding and the decoded
  // values are exactly those of the intact frame.
  auto eng = make_engine();
  std::size_t rejected = 0, identical = 0;
  for (const sample& s : samples(eng, {1, 5, 33, 257, 1025}, {0, 2})) {
    const std::size_t payload = s.frame.size() - hc::header_bytes;
    for (std::size_t len : cut_lengths(payload)) {
      bytes f(s.frame.begin(), s.frame.begin() + static_cast<std::ptrdiff_t>(hc::header_bytes + len));
      put64(f, 24, len);
      reseal(f);
      const outcome o = decode(eng, s, f, name(s));
      if (s.cfg.checksum) {
        if (o.code != errc::corrupt_frame)
          FAIL(name(s) << " payload cut to " << len << " of " << payload << ": " << code_name(o) << " " << o.what);
      } else if (!o.code) {
        if (o.out != s.decoded)
          FAIL(name(s) << " payload cut to " << len << " of " << payload << " decoded to different values");
        ++identical;
      } else {
        ++rejected;
      }
    }
  }
  CHECK(rejected > 0);
  INFO("checksum off: " << rejected << " rejected, " << identical << " decoded identically (padding cut)");
  SUCCEED();
}

TEST_CASE("frame: random byte flips with the checksum on are always detected", "[frame][flips]") {
  auto eng = make_engine();
  std::mt19937_64 g(2024);
  std::size_t cases = 0;
  auto run = [&](const sample& s, int flips_per_frame) {
    for (int t = 0; t < flips_per_frame; ++t) {
      bytes f = s.frame;
      const int k = 1 + static_cast<int>(g() % 3);
      std::string where;
      for (int j = 0; j < k; ++j) {
        // a third of the flips in the header, the rest anywhere
        const std::size_t at = (g() % 3 == 0) ? g() % hc::header_bytes : g() % f.size();
        f[at] ^= static_cast<unsigned char>(1 + g() % 255);
        where += std::to_string(at) + " ";
      }
      if (f == s.frame) continue;  // two flips cancelled out
      const outcome o = decode(eng, s, f, name(s));
      const bool ok = o.code == errc::corrupt_frame || o.code == errc::truncated_frame || o.code == errc::foreign_frame;
      if (!ok) FAIL(name(s) << " bytes " << where << "flipped: " << code_name(o) << " " << o.what);
      ++cases;
    }
  };
  for (const sample& s : samples(eng, {0, 1, 5, 33, 1025}, {0, 1, 2}, {true})) run(s, 150);
  for (const sample& s : samples(eng, {70001}, {1}, {true})) run(s, 40);
  CHECK(cases > 10000);
}

TEST_CASE("frame: random byte flips with the checksum off throw or decode, never crash", "[frame][flips]") {
  // Two executor widths, so the parallel validation paths see bad input too.
  for (int threads : {1, 2}) {
    auto eng = make_engine(threads);
    std::mt19937_64 g(99 + threads);
    std::size_t thrown = 0, decoded = 0;
    for (const sample& s : samples(eng, {1, 5, 33, 1025}, {0, 1, 2}, {false})) {
      for (int t = 0; t < 60; ++t) {
        bytes f = s.frame;
        const int k = 1 + static_cast<int>(g() % 4);
        const bool in_header = g() % 2 == 0;
        for (int j = 0; j < k; ++j) {
          const std::size_t at = in_header ? g() % 56 : hc::header_bytes + g() % (f.size() - hc::header_bytes);
          f[at] ^= static_cast<unsigned char>(1 + g() % 255);
        }
        if (in_header) reseal(f);  // reach the field checks and the codec, not just the header hash
        const outcome o = decode(eng, s, f, name(s));
        (o.code ? thrown : decoded) += 1;
      }
    }
    INFO("threads " << threads << ": " << thrown << " thrown, " << decoded << " decoded");
    CHECK(thrown > 0);
  }
}

TEST_CASE("frame: foreign bytes are foreign_frame (or truncated_frame when shorter than a header)", "[frame][foreign]") {
  auto eng = make_engine();
  std::mt19937_64 g(5);
  for (std::size_t len : {0u, 1u, 4u, 63u, 64u, 65u, 100u, 1000u, 5000u}) {
    for (int t = 0; t < 20; ++t) {
      bytes f(len);
      for (auto& b : f) b = static_cast<unsigned char>(g());
      if (len >= 4 && std::memcmp(f.data(), "HCF1", 4) == 0) f[0] = 0;
      for (dtype ty : {dtype::f32, dtype::f64})
        for (std::size_t n : {0u, 1u, 16u}) {
          const outcome o = decode(eng, f, n, ty, "random bytes");
          INFO(len << " random bytes: " << o.what);
          CHECK(o.code == (len < hc::header_bytes ? errc::truncated_frame : errc::foreign_frame));
        }
    }
  }
  // Valid frames under another magic: "HCF2", "HCF0", zeros, a zip, a PNG.
  for (const sample& s : samples(eng, {5, 1025}, {0}, {true})) {
    for (const char* magic : {"HCF2", "HCF0", "hcf1", "\0\0\0\0", "PK\3\4", "\x89PNG"}) {
      bytes f = s.frame;
      std::memcpy(f.data(), magic, 4);
      reseal(f);
      const outcome o = decode(eng, s, f, name(s));
      INFO(name(s) << " magic " << magic << ": " << o.what);
      CHECK(o.code == errc::foreign_frame);
    }
  }
}

TEST_CASE("frame: a libzfp stream (with its own header) is foreign_frame", "[frame][foreign]") {
  auto eng = make_engine();
  const std::vector<float> x = make_data<float>(4096, 0);
  zfp_field* field = zfp_field_1d(const_cast<float*>(x.data()), zfp_type_float, x.size());
  zfp_stream* zs = zfp_stream_open(nullptr);
  zfp_stream_set_rate(zs, 8, zfp_type_float, 1, zfp_false);
  bytes buf(zfp_stream_maximum_size(zs, field) + 64);
  bitstream* bs = stream_open(buf.data(), buf.size());
  zfp_stream_set_bit_stream(zs, bs);
  zfp_stream_rewind(zs);
  REQUIRE(zfp_write_header(zs, field, ZFP_HEADER_FULL) > 0);
  const std::size_t size = zfp_compress(zs, field);
  REQUIRE(size > 0);
  buf.resize(size);
  zfp_field_free(field);
  zfp_stream_close(zs);
  stream_close(bs);
  const outcome o = decode(eng, buf, x.size(), dtype::f32, "libzfp stream");
  INFO(o.what);
  CHECK(o.code == errc::foreign_frame);
}

TEST_CASE("frame: receiver expecting another dtype or count gets errc::mismatch", "[frame][mismatch]") {
  auto eng = make_engine();
  for (const sample& s : samples(eng, {0, 1, 5, 1025}, {0})) {
    // The 16-bit types against each other: the same size, told apart only by the dtype byte.
    const dtype other = s.cfg.type == dtype::f32    ? dtype::f64
                        : s.cfg.type == dtype::f64  ? dtype::f32
                        : s.cfg.type == dtype::bf16 ? dtype::f16
                                                    : dtype::bf16;
    for (std::size_t n : {s.n, s.n + 1, s.n * 2 + 3}) {
      const outcome o = decode(eng, s.frame, n, other, name(s));
      INFO(name(s) << " read as " << hcomm::to_string(other) << " x " << n << ": " << o.what);
      CHECK(o.code == errc::mismatch);
    }
    std::vector<std::size_t> counts{s.n + 1, s.n + 4, s.n * 2 + 1};
    if (s.n > 0) counts.insert(counts.end(), {s.n - 1, std::size_t{0}});
    for (std::size_t n : counts) {
      const outcome o = decode(eng, s.frame, n, s.cfg.type, name(s));
      INFO(name(s) << " read as " << n << " values: " << o.what);
      CHECK(o.code == errc::mismatch);
    }
  }
}

TEST_CASE("frame: edited header fields give the proper errc", "[frame][header]") {
  auto eng = make_engine();
  const auto ids = registered_ids(hc::registered_codecs{});
  for (const sample& s : samples(eng, {5, 1025}, {0, 2})) {
    const std::string ctx = name(s);
    auto edited = [&](auto&& edit, bool seal = true) {
      bytes f = s.frame;
      edit(f);
      if (seal) reseal(f);
      return decode(eng, s, f, ctx);
    };
    auto expect = [&](const outcome& o, errc want, const std::string& what) {
      INFO(ctx << ": " << what << " -> " << code_name(o) << " " << o.what);
      CHECK(o.code == want);
    };
    // Without resealing, any header edit is caught by the header checksum (the magic first).
    for (std::size_t at = 0; at < hc::header_bytes; ++at) {
      const outcome o = edited([&](bytes& f) { f[at] ^= 0x10; }, false);
      expect(o, at < 4 ? errc::foreign_frame : errc::corrupt_frame, "unsealed edit of byte " + std::to_string(at));
    }
    for (std::uint16_t v : {0, 1, 3, 0x100, 0xFFFF})  // (1: the payload hash before block_hash64)
      expect(edited([&](bytes& f) { put16(f, 4, v); }), errc::foreign_frame, "version " + std::to_string(v));
    for (unsigned c : {5u, 6u, 0x7Fu, 0xFFu})  // (ids the registry does not hold)
      expect(edited([&](bytes& f) { f[6] = static_cast<unsigned char>(c); }), errc::foreign_frame,
             "codec id " + std::to_string(c));
    for (unsigned d : {0u, 5u, 0x7Fu, 0xFFu})
      expect(edited([&](bytes& f) { f[7] = static_cast<unsigned char>(d); }), errc::foreign_frame,
             "dtype id " + std::to_string(d));
    for (unsigned d : {1u, 2u, 3u, 4u})  // another dtype than the receiver's
      if (d != static_cast<unsigned>(s.cfg.type))
        expect(edited([&](bytes& f) { f[7] = static_cast<unsigned char>(d); }), errc::mismatch,
               "dtype id " + std::to_string(d));
    for (std::uint32_t fl : {2u, 4u, 0x100u, 0x80000000u, 0xFFFFFFFEu})
      expect(edited([&](bytes& f) { put32(f, 12, fl | (s.cfg.checksum ? 1u : 0u)); }), errc::foreign_frame,
             "flags " + std::to_string(fl));
    for (std::size_t at = 40; at < 56; ++at)
      expect(edited([&](bytes& f) { f[at] = 1; }), errc::corrupt_frame, "reserved byte " + std::to_string(at));
    expect(edited([&](bytes& f) { f[60] ^= 1; }, false), errc::corrupt_frame, "header checksum");

    // Parameters the codec does not accept are corrupt_frame; accepted other ones must
    // throw or decode (e.g. another ZFP rate: the payload size no longer fits).
    for (std::uint32_t p : {0u, 1u, 2u, 3u, 4u, 7u, 8u, 9u, 16u, 31u, 32u, 33u, 64u, 65u, 255u, 1000u, 0xFFFFFFFFu}) {
      if (p == s.cfg.param) continue;
      const hc::config c{s.cfg.codec, s.cfg.type, p, s.cfg.checksum};
      const outcome o = edited([&](bytes& f) { put32(f, 8, p); });
      if (!valid(c)) expect(o, errc::corrupt_frame, "param " + std::to_string(p));
    }
    // Relabelled as another registered codec: its parser sees foreign bytes.
    for (codec_id id : ids) {
      if (id == s.cfg.codec) continue;
      const outcome o = edited([&](bytes& f) { f[6] = static_cast<unsigned char>(id); });
      INFO(ctx << " relabelled as " << hc::codec_name(id) << ": " << code_name(o));
      if (s.cfg.checksum) CHECK(o.code.has_value());  // payload intact, so only structure can object
    }
    // A known codec id that this build lacks would be corrupt_frame (validate rejects it).
    // Checksum flag: on -> off still decodes the intact payload; off -> on has no checksum.
    if (s.cfg.checksum) {
      const outcome o = edited([&](bytes& f) { put32(f, 12, 0); });
      REQUIRE_FALSE(o.code);
      CHECK(o.out == s.decoded);
    } else {
      expect(edited([&](bytes& f) { put32(f, 12, 1); }), errc::corrupt_frame, "checksum flag turned on");
    }
    // Payload size fields.
    const std::uint64_t pb = get64(s.frame, 24);
    expect(edited([&](bytes& f) { put64(f, 24, pb + 1); }), errc::truncated_frame, "payload bytes + 1");
    expect(edited([&](bytes& f) { put64(f, 24, ~0ull); }), errc::truncated_frame, "payload bytes 2^64-1");
    expect(edited([&](bytes& f) { put64(f, 24, pb - 1); }), errc::corrupt_frame, "payload bytes - 1 (frame longer)");
    {  // payload bytes beyond the codec's bound, with the bytes present
      const std::size_t bound = hc::max_payload_bytes(s.cfg, s.n);
      bytes f = s.frame;
      f.resize(hc::header_bytes + bound + 8, 0);
      put64(f, 24, bound + 8);
      reseal(f);
      expect(decode(eng, s, f, ctx), errc::corrupt_frame, "payload bytes above the codec's bound");
    }
    // Count: the receiver mismatch comes first; a receiver that believes the edited count
    // gets an error or a decode, never a crash or a write past its buffer.
    for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t(s.n - 1), std::uint64_t(s.n + 1), std::uint64_t(s.n + 4),
                            std::uint64_t(2 * s.n + 1)}) {
      bytes f = s.frame;
      put64(f, 16, n);
      reseal(f);
      expect(decode(eng, s, f, ctx), errc::mismatch, "count " + std::to_string(n) + ", receiver expects the original");
      const outcome o = decode(eng, f, static_cast<std::size_t>(n), s.cfg.type, ctx + " count edited");
      if (s.cfg.codec == codec_id::none) expect(o, errc::corrupt_frame, "none with count " + std::to_string(n));
    }
    for (std::uint64_t n : {std::uint64_t{1} << 40, (std::uint64_t{1} << 62) + 25, ~std::uint64_t{0}}) {
      bytes f = s.frame;
      put64(f, 16, n);
      reseal(f);
      expect(decode(eng, s, f, ctx), errc::mismatch, "huge count " + std::to_string(n));
    }
  }
}

// ---- element counts checked against the payload before anything is sized by them ----------

TEST_CASE("frame: every real frame passes validate_frame, and all-zero input meets min_payload_bytes exactly",
          "[frame][count]") {
  auto eng = make_engine();
  for (const sample& s : samples(eng, {0, 1, 5, 33, 1025, 4099}, {0, 1, 2})) {
    const hc::frame_info f = hc::read_header(s.frame.data(), s.frame.size());
    INFO(name(s) << ": payload " << f.payload_bytes << ", least " << hc::min_payload_bytes(s.cfg, s.n));
    CHECK_NOTHROW(hc::validate_frame(f));
    CHECK(f.payload_bytes >= hc::min_payload_bytes(s.cfg, s.n));
  }
  // The least payload is attained (so the bound is the codec's true largest ratio): MPC on
  // all-zero chunks, ZFP without NaN/Inf, none always.
  for (dtype t : {dtype::f32, dtype::f64})
    for (const hc::config& c : configs(t, true))
      for (std::size_t n : {1, 31, 32, 33, 64, 65, 1023, 1024, 1025, 4097, 70001}) {
        std::vector<std::byte> fr;
        if (t == dtype::f32) fr = eng.compress(c, std::span<const float>(std::vector<float>(n, 0.0f)));
        else fr = eng.compress(c, std::span<const double>(std::vector<double>(n, 0.0)));
        const hc::frame_info f = hc::read_header(fr.data(), fr.size());
        INFO(name(c, n));
        CHECK(f.payload_bytes == hc::min_payload_bytes(c, n));
      }
  // The ratios that makes: all-zero float64 MPC holds 63 bytes of values per payload byte.
  const hc::config mpc64{codec_id::mpc, dtype::f64, 0, true};
  const std::size_t n = std::size_t{1} << 20;
  const double ratio = static_cast<double>(n * 8) / static_cast<double>(hc::min_payload_bytes(mpc64, n));
  CHECK(ratio > 62.9);
  CHECK(ratio < 64.0);
}

TEST_CASE("frame: a count its payload cannot hold is corrupt_frame before anything is sized by it",
          "[frame][count]") {
  // Under ASan (HCOMM_SANITIZE=ON, no allocator_may_return_null) any attempt to allocate a
  // workspace for 2^40 values aborts the test, so passing shows that nothing was allocated.
  auto eng = make_engine();
  for (const sample& s : samples(eng, {5, 1025}, {0, 2})) {
    const std::uint64_t pb = get64(s.frame, 24);
    const std::uint64_t mc = hc::max_count(s.cfg.type);
    for (std::uint64_t n : {std::uint64_t{1} << 24, std::uint64_t{1} << 40, std::uint64_t{1} << 50, mc, mc + 1,
                            std::uint64_t{1} << 58, (std::uint64_t{1} << 62) + 25, std::uint64_t{1} << 63,
                            ~std::uint64_t{0}}) {
      bytes f = s.frame;
      put64(f, 16, n);
      reseal(f);
      const std::string ctx = name(s) + " announcing " + std::to_string(n) + " values";
      // The check alone, as hcomm-codec runs it before allocating the output.
      try {
        hc::validate_frame(hc::read_header(f.data(), f.size()));
        FAIL(ctx << ": validate_frame accepted it");
      } catch (const hcomm::error& e) {
        INFO(ctx << ": " << e.what());
        CHECK(e.code() == errc::corrupt_frame);
        const std::string m = e.what();
        CHECK(m.find(std::to_string(n)) != std::string::npos);   // both numbers named
        CHECK(m.find(std::to_string(pb)) != std::string::npos);
      }
      // Through the engine, a receiver claiming a buffer of that count (it has 64 bytes: the
      // engine must fail before it sizes its workspace by the count or writes anything).
      unsigned char out[64];
      std::memset(out, sentinel, sizeof out);
      try {
        eng.decompress(f.data(), f.size(), out, static_cast<std::size_t>(n), s.cfg.type);
        FAIL(ctx << ": decompress accepted it");
      } catch (const hcomm::error& e) {
        INFO(ctx << ": " << e.what());
        CHECK(e.code() == errc::corrupt_frame);
      }
      CHECK(std::all_of(out, out + sizeof out, [](unsigned char b) { return b == sentinel; }));
    }
  }
}

TEST_CASE("frame: validate_frame's output cap refuses a possible frame as invalid_argument", "[frame][count]") {
  auto eng = make_engine();
  const std::vector<float> x(1000, 1.5f);
  const auto fr = eng.compress(hc::parse_config("mpc"), std::span<const float>(x));
  const hc::frame_info f = hc::read_header(fr.data(), fr.size());
  CHECK_NOTHROW(hc::validate_frame(f, 4000));
  try {
    hc::validate_frame(f, 3999);
    FAIL("a 4000-byte output passed a 3999-byte cap");
  } catch (const hcomm::error& e) {
    CHECK(e.code() == errc::invalid_argument);
    CHECK(std::string(e.what()).find("3999") != std::string::npos);
  }
  CHECK(hc::default_max_output_bytes == std::uint64_t{1} << 40);
}

// ---- the payload checksum hashed while the codec writes (block_hasher) ----------------------

namespace {
// checksum_block_kernel's hash of every block of p.
std::vector<std::uint64_t> kernel_hashes(const bytes& p) {
  const std::size_t blocks = hcomm::checksum_blocks(p.size());
  std::vector<std::uint64_t> h(blocks + 1, 0);
  const std::uint64_t size = p.size();
  const hcomm::checksum_block_kernel k{p.data(), &size, h.data(), blocks};
  for (std::size_t j = 0; j < blocks; ++j) k(j);
  h.resize(blocks);
  return h;
}
}  // namespace

TEST_CASE("frame: block_hasher fed in pieces gives the kernel's block hashes", "[frame][checksum]") {
  constexpr std::size_t B = hcomm::checksum_block_bytes;
  std::mt19937_64 rng(77);
  for (std::size_t size : {std::size_t(0), std::size_t(31), std::size_t(32), B - 1, B, B + 1, 2 * B + 33,
                           3 * B + 4100, 5 * B}) {
    bytes p(size);
    for (auto& b : p) b = static_cast<unsigned char>(rng());
    const auto want = kernel_hashes(p);
    for (std::size_t first : {std::size_t(0), std::size_t(1), std::size_t(2)}) {
      for (int trial = 0; trial < 4; ++trial) {
        INFO("size " << size << " first block " << first << " trial " << trial);
        std::vector<std::uint64_t> got(want.size() + 1, 0xdead);
        hcomm::block_hasher h(got.data(), first);
        // pieces of 1..5000 bytes (some of 4 and 8, like codec words), in payload order
        for (std::size_t at = 0; at < size;) {
          const std::size_t len = std::min<std::size_t>(size - at, trial == 0 ? 4 : 1 + rng() % 5000);
          h.feed(at, p.data() + at, len);
          at += len;
        }
        h.finish(size);
        if (size < first * B) {
          CHECK(h.end() == h.first());  // nothing to hash: all left to the kernel
          continue;
        }
        REQUIRE(h.first() == first);
        REQUIRE(h.end() == want.size());
        for (std::size_t b = first; b < want.size(); ++b) CHECK(got[b] == want[b]);
      }
    }
  }
}

TEST_CASE("frame: block_hash64's AVX2 path equals the portable lanes, and its bits are fixed", "[frame][checksum]") {
  std::mt19937_64 rng(5);
  bytes p(70000);
  for (auto& b : p) b = static_cast<unsigned char>(rng());
  for (std::size_t len : {std::size_t(0), std::size_t(1), std::size_t(63), std::size_t(64), std::size_t(65),
                          std::size_t(1000), std::size_t(65536), std::size_t(70000)}) {
    for (std::uint64_t seed : {std::uint64_t(0), std::uint64_t(3), ~std::uint64_t(0)}) {
      hcomm::detail::bh::lanes l(seed);  // the portable stripe, one at a time
      for (std::size_t s = 0; s < len / 64; ++s) l.add_stripe(p.data() + 64 * s);
      const std::uint64_t portable = l.finish(p.data() + len / 64 * 64, len % 64, len, seed);
      INFO("len " << len << " seed " << seed);
      CHECK(hcomm::block_hash64(p.data(), len, seed) == portable);
      const hcomm::cpu::force_portable guard;  // and the dispatch's portable path
      CHECK(hcomm::block_hash64(p.data(), len, seed) == portable);
    }
  }
  // Frames on disk and on other machines depend on these bits: a change needs a new frame version.
  bytes q(200);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<unsigned char>(i * 7 + 1);
  CHECK(hcomm::block_hash64(q.data(), q.size(), 9) == 0x9C3C93667A93AC0Dull);
  // Moving a stripe, or flipping any single bit, changes the hash.
  const std::uint64_t h = hcomm::block_hash64(p.data(), 4096, 1);
  bytes swapped(p.begin(), p.begin() + 4096);
  std::swap_ranges(swapped.begin(), swapped.begin() + 64, swapped.begin() + 64);
  CHECK(hcomm::block_hash64(swapped.data(), 4096, 1) != h);
  for (std::size_t bit = 0; bit < 4096 * 8; bit += 61) {
    bytes f(p.begin(), p.begin() + 4096);
    f[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    CHECK(hcomm::block_hash64(f.data(), 4096, 1) != h);
  }
}

TEST_CASE("frame: block_hasher hashes nothing when the pieces leave a gap", "[frame][checksum]") {
  constexpr std::size_t B = hcomm::checksum_block_bytes;
  bytes p(3 * B, 1);
  std::vector<std::uint64_t> got(4, 0);
  hcomm::block_hasher h(got.data(), 0);
  h.feed(0, p.data(), 100);
  h.feed(200, p.data() + 200, p.size() - 200);  // bytes 100..199 never came
  h.finish(p.size());
  CHECK(h.end() == h.first());
  hcomm::block_hasher short_of_end(got.data(), 0);
  short_of_end.feed(0, p.data(), B + 5);
  short_of_end.finish(p.size());  // the payload is longer than what was fed
  CHECK(short_of_end.end() == short_of_end.first());
}

TEST_CASE("frame: one thread hashing while it writes gives the same frames as two threads", "[frame][checksum]") {
  // The one-thread host MPC encoder hashes its chunks as it moves them (fused checksum); the
  // two-thread one hashes the payload afterwards. Frames must be identical, and decode.
  // (2^21 + 3 floats: above 8 MiB, where the encoder moves chunks with streaming stores)
  for (std::size_t n : {std::size_t(1000), std::size_t(70000), std::size_t(400003), std::size_t(2097155)}) {
    for (int k = 0; k < 3; ++k) {
      std::vector<float> x(n);
      std::mt19937 rng(static_cast<unsigned>(n + k));
      std::normal_distribution<float> g(0.f, 1e-3f);
      for (std::size_t i = 0; i < n; ++i)
        x[i] = k == 0 ? g(rng) : k == 1 ? static_cast<float>(std::sin(1e-3 * static_cast<double>(i))) : 0.f;
      hcomm::exec::host one, two;
      one.threads = 1;
      two.threads = 2;
      hc::engine<> e1(one), e2(two);
      for (const char* codec : {"mpc", "mpc:2", "none"}) {
        INFO("n " << n << " data " << k << " codec " << codec);
        const hc::config c = hc::parse_config(codec, dtype::f32, true);
        const auto a = e1.compress(c, std::span<const float>(x));
        const auto b = e2.compress(c, std::span<const float>(x));
        REQUIRE(a == b);
        std::vector<float> y(n);
        e1.decompress(std::span<const std::byte>(a), std::span<float>(y));
        CHECK(std::memcmp(x.data(), y.data(), n * sizeof(float)) == 0);
      }
    }
  }
}
