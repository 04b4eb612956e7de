// tests/fuzz/fuzz_decode.cpp: feeds arbitrary bytes to hcomm::codec::engine::decompress for every
// registered codec and the four element types (f32, f64, bf16, f16). The only allowed outcomes are a successful decode
// or an hcomm::error that leaves the output untouched; anything else (a crash, an
// out-of-bounds access under ASan, UB under UBSan, another exception, a touched output after
// an error, a hang, an allocation sized by a count the payload cannot hold) is a finding.
//
// Input layout: byte 0 is a mode byte, the rest is the frame.
//   mode bit 0: recompute the header checksum after mutation (so the fuzzer gets past it
//               and reaches the header fields and the codec's payload parser)
//   mode bit 1: also recompute the payload checksum when the frame has one
//   mode bits 2-3: the receiver: 0 one that sizes its buffer by the frame's own count, as
//               hcomm-codec decompress does (validate_frame first, then the allocation);
//               1 one expecting count + 1, 2 count - 1 (buffers of their own); 3 the frame's
//               count with each other dtype only
// Counts go up to 2^64 - 1 (the header's field). A count whose values could fit the payload
// (at most 64 bytes of values per payload byte: MPC's all-zero float64 chunks come closest,
// at 63) gets a real, exactly sized buffer; a larger one is offered to the engine by a
// receiver that claims that many values but holds 64 bytes, so the frame must be refused
// before anything is sized by the count or written (under ASan, without
// allocator_may_return_null, a workspace sized by 2^40 values aborts the run).
//
// Built three ways:
//   libFuzzer (clang++ -fsanitize=fuzzer,address,undefined): scripts/fuzz.sh
//   -DHCOMM_FUZZ_STANDALONE with any compiler: a driver with its own main
//      fuzz_decode --write-seeds DIR   valid frames (mode byte + frame) for every codec x dtype
//      fuzz_decode --replay FILE...    runs files (e.g. crash artifacts) through the target
//      fuzz_decode --mutate N [SEED]   N deterministic random mutations of the seeds (ctest)
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "hcomm/codec/codec.hpp"

namespace {

namespace hc = hcomm::codec;
using hcomm::dtype;

// No registered codec holds more than this many bytes of values per payload byte.
constexpr std::uint64_t max_ratio = 64;

hc::engine<>& engine() {
  static hc::engine<> e{hcomm::exec::host{1}};
  return e;
}

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_decode: FINDING: %s: %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

std::uint64_t get64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
void put64(unsigned char* p, std::uint64_t v) { std::memcpy(p, &v, 8); }

// Whether n values of T could come out of a frame of `size` bytes (else no real buffer).
template <class T>
bool could_fit(std::uint64_t n, std::size_t size) {
  return n <= max_ratio * size / sizeof(T) + 64;
}

template <class T>
void decode_once(const unsigned char* frame, std::size_t size, std::size_t n) {
  const std::size_t bytes = n * sizeof(T);
  // Exactly sized, so ASan sees any write past the receiver's buffer.
  std::unique_ptr<unsigned char[]> out(new unsigned char[bytes == 0 ? 1 : bytes]);
  std::memset(out.get(), 0xA5, bytes);
  try {
    engine().decompress(frame, size, out.get(), n, hcomm::dtype_of<T>);
  } catch (const hcomm::error& e) {
    for (std::size_t i = 0; i < bytes; ++i)
      if (out[i] != 0xA5) finding("output written before an error", e.what());
  }
  // Any other exception escapes: libFuzzer reports it as a crash.
}

// A receiver that claims n values (more than the frame could hold) with a 64-byte buffer:
// decompress must throw before it sizes anything by n or writes a byte.
void decode_unbacked(const unsigned char* frame, std::size_t size, std::uint64_t n, dtype t) {
  if (size >= hc::header_bytes) {
    try {
      const hc::frame_info f = hc::read_header(frame, size);
      if (f.count == n && f.type == t) {
        hc::validate_frame(f);
        finding("validate_frame accepted a count the payload cannot hold",
                std::to_string(n) + " values in " + std::to_string(f.payload_bytes) + " payload bytes");
      }
    } catch (const hcomm::error&) {
    }
  }
  unsigned char out[64];
  std::memset(out, 0xA5, sizeof out);
  bool decoded = false;
  try {
    engine().decompress(frame, size, out, static_cast<std::size_t>(n), t);
    decoded = true;
  } catch (const hcomm::error& e) {
    for (unsigned char b : out)
      if (b != 0xA5) finding("output written before an error", e.what());
  }
  if (decoded) finding("decoded more values than the frame can hold", std::to_string(n) + " values");
}

// The receiver that sizes its output by the frame (hcomm-codec decompress): validate_frame
// must bound the count by the payload before the allocation.
template <class T>
void decode_sized_by_frame(const unsigned char* frame, std::size_t size) {
  hc::frame_info f;
  try {
    f = hc::read_header(frame, size);
    if (f.type != hcomm::dtype_of<T>) return;
    hc::validate_frame(f);
  } catch (const hcomm::error&) {
    if (size >= hc::header_bytes && f.type == hcomm::dtype_of<T> && !could_fit<T>(f.count, size))
      decode_unbacked(frame, size, f.count, f.type);
    return;
  }
  if (f.count > max_ratio * f.payload_bytes / sizeof(T) + 1)
    finding("validate_frame accepted a count the payload cannot hold",
            std::to_string(f.count) + " values in " + std::to_string(f.payload_bytes) + " payload bytes");
  decode_once<T>(frame, size, static_cast<std::size_t>(f.count));
}

template <class T>
void decode_all(const unsigned char* frame, std::size_t size, unsigned mode, bool have_count, std::uint64_t count) {
  const unsigned which = (mode >> 2) & 3u;
  if (which == 3) return;
  if (which == 0 && have_count) return decode_sized_by_frame<T>(frame, size);
  std::uint64_t n = count;
  if (which == 1) n = count + 1;
  if (which == 2) n = count ? count - 1 : 0;
  if (!have_count) n = 7;  // still runs all checks up to the count comparison
  if (could_fit<T>(n, size)) decode_once<T>(frame, size, static_cast<std::size_t>(n));
  else decode_unbacked(frame, size, n, hcomm::dtype_of<T>);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned mode = data[0];
  const std::size_t fsize = size - 1;
  // A private, exactly sized copy: we may patch checksums, and ASan sees reads past its end.
  std::unique_ptr<unsigned char[]> frame(new unsigned char[fsize == 0 ? 1 : fsize]);
  if (fsize) std::memcpy(frame.get(), data + 1, fsize);
  unsigned char* f = frame.get();
  bool have_count = false;
  std::uint64_t count = 0;
  dtype frame_type = dtype::f32;
  if (fsize >= hc::header_bytes) {
    if (mode & 2u) {
      const std::uint64_t pb = get64(f + 24);
      if ((f[12] & 1u) && pb <= fsize - hc::header_bytes) put64(f + 32, hcomm::payload_checksum(f + hc::header_bytes, pb));
    }
    if (mode & 3u) put64(f + 56, hcomm::hash64(f, 56, 0));
    count = get64(f + 16);
    have_count = true;
    if (f[7] >= 1 && f[7] <= 4) frame_type = static_cast<dtype>(f[7]);
  }
  decode_all<float>(f, fsize, mode, have_count, count);
  decode_all<double>(f, fsize, mode, have_count, count);
  decode_all<hcomm::bf16>(f, fsize, mode, have_count, count);
  decode_all<hcomm::f16>(f, fsize, mode, have_count, count);
  if (((mode >> 2) & 3u) == 3u && have_count) {
    // the frame's own count but another element type: must fail, never decode
    for (dtype other : {dtype::f32, dtype::f64, dtype::bf16, dtype::f16}) {
      if (other == frame_type) continue;
      if (!could_fit<double>(count, fsize)) {
        decode_unbacked(f, fsize, count, other);
        continue;
      }
      const std::size_t n = static_cast<std::size_t>(count);
      std::vector<unsigned char> out(n * 8 + 1);
      bool decoded = false;
      try {
        engine().decompress(f, fsize, out.data(), n, other);
        decoded = true;
      } catch (const hcomm::error&) {
      }
      if (decoded) finding("decoded a frame as another dtype", std::to_string(count) + " values");
    }
  }
  return 0;
}

#if defined(HCOMM_FUZZ_STANDALONE)
#include <filesystem>
#include <fstream>

namespace {

template <template <class> class... Cs>
std::vector<hcomm::codec_id> registered_ids(hc::codec_list<Cs...>) {
  return {Cs<float>::id...};
}

// Every registered codec with a few of its valid parameters.
std::vector<hc::config> configs(dtype t, bool checksum) {
  std::vector<hc::config> out;
  for (auto id : registered_ids(hc::registered_codecs{}))
    for (unsigned p : {0u, 3u, 8u, 16u}) {
      const hc::config c{id, t, p, checksum};
      try {
        hc::validate(c);
        out.push_back(c);
      } catch (const hcomm::error&) {
      }
    }
  return out;
}

template <class T>
std::vector<T> data(std::size_t n, int kind) {
  std::vector<T> v(n);
  std::mt19937_64 g(n * 31 + static_cast<unsigned>(kind));
  std::normal_distribution<double> nd(0.0, 1e-2);
  for (std::size_t i = 0; i < n; ++i) {
    double y = kind == 0 ? std::sin(0.01 * static_cast<double>(i)) * 4.0 + nd(g) * 1e-3 : nd(g);
    if (kind == 2 && i % 7 == 3)
      y = i % 2 ? std::numeric_limits<double>::quiet_NaN() : -std::numeric_limits<double>::infinity();
    if constexpr (hcomm::half_element<T>) v[i] = T(static_cast<float>(y));  // (rounded to nearest even)
    else v[i] = static_cast<T>(y);
  }
  return v;
}

// mode byte + valid frame, for every codec x dtype x checksum x size x data kind.
std::vector<std::vector<std::uint8_t>> seeds() {
  std::vector<std::vector<std::uint8_t>> out;
  hc::engine<> eng{hcomm::exec::host{1}};
  for (dtype t : {dtype::f32, dtype::f64, dtype::bf16, dtype::f16})
    for (bool ck : {false, true})
      for (const hc::config& c : configs(t, ck))
        for (std::size_t n : {0, 1, 5, 33, 1025, 4099})
          for (int kind : {0, 1, 2}) {
            std::vector<std::byte> fr;
            switch (t) {
              case dtype::f32: fr = eng.compress(c, std::span<const float>(data<float>(n, kind))); break;
              case dtype::f64: fr = eng.compress(c, std::span<const double>(data<double>(n, kind))); break;
              case dtype::bf16: fr = eng.compress(c, std::span<const hcomm::bf16>(data<hcomm::bf16>(n, kind))); break;
              case dtype::f16: fr = eng.compress(c, std::span<const hcomm::f16>(data<hcomm::f16>(n, kind))); break;
            }
            std::vector<std::uint8_t> s(fr.size() + 1);
            s[0] = static_cast<std::uint8_t>(1 | (kind == 1 ? 2 : 0));  // fix header checksum (+payload)
            std::memcpy(s.data() + 1, fr.data(), fr.size());
            out.push_back(std::move(s));
          }
  return out;
}

int write_seeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const auto s = seeds();
  for (std::size_t i = 0; i < s.size(); ++i) {
    std::ofstream f(dir + "/seed_" + std::to_string(i), std::ios::binary);
    f.write(reinterpret_cast<const char*>(s[i].data()), static_cast<std::streamsize>(s[i].size()));
    if (!f) {
      std::fprintf(stderr, "fuzz_decode: cannot write %s\n", dir.c_str());
      return 1;
    }
  }
  std::printf("fuzz_decode: wrote %zu seed frames to %s\n", s.size(), dir.c_str());
  return 0;
}

int replay(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    std::vector<std::uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(b.data(), b.size());
  }
  std::printf("fuzz_decode: replayed %d inputs\n", argc - 2);
  return 0;
}

// Deterministic mutations of the seeds: bit flips, random bytes, truncations, extensions,
// header-field overwrites, all with every mode byte.
int mutate(std::size_t iterations, std::uint64_t seed) {
  const auto base = seeds();
  std::mt19937_64 g(seed);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(g() % (n ? n : 1)); };
  std::size_t ok = 0;
  for (auto& s : base) {  // every seed unmodified first
    LLVMFuzzerTestOneInput(s.data(), s.size());
    ++ok;
  }
  for (std::size_t it = 0; it < iterations; ++it) {
    std::vector<std::uint8_t> s = base[pick(base.size())];
    s[0] = static_cast<std::uint8_t>(g());
    const int edits = 1 + static_cast<int>(pick(4));
    for (int e = 0; e < edits; ++e) {
      switch (pick(6)) {
        case 0: if (s.size() > 1) s[1 + pick(s.size() - 1)] ^= static_cast<std::uint8_t>(1u << pick(8)); break;
        case 1: if (s.size() > 1) s[1 + pick(s.size() - 1)] = static_cast<std::uint8_t>(g()); break;
        case 2: s.resize(1 + pick(s.size())); break;
        case 3: for (std::size_t k = pick(64); k > 0; --k) s.push_back(static_cast<std::uint8_t>(g())); break;
        case 4: {  // overwrite one header field (param, flags, count, payload bytes) with a nasty value
          const std::size_t offs[] = {8, 12, 16, 24};
          const std::size_t o = 1 + offs[pick(4)];
          const std::uint64_t vals[] = {0, 1, 2, 3, 4, 5, 31, 32, 33, 64, 65, 0xFFFFFFFFull, 1ull << 32, 1ull << 40,
                                        (1ull << 57) - 1, 1ull << 57, (1ull << 58) - 1, 1ull << 58, 1ull << 62,
                                        (1ull << 62) + 25, 1ull << 63, ~0ull, g(), g() >> (g() % 64)};
          const std::uint64_t v = vals[pick(sizeof vals / sizeof vals[0])];
          const std::size_t w = (o - 1) < 16 ? 4 : 8;
          if (s.size() >= o + w) std::memcpy(s.data() + o, &v, w);
          break;
        }
        default: if (s.size() > 1 + 6) s[1 + 6 + pick(2)] = static_cast<std::uint8_t>(pick(5)); break;  // codec/dtype id
      }
    }
    LLVMFuzzerTestOneInput(s.data(), s.size());
    ++ok;
  }
  std::printf("fuzz_decode: %zu inputs (%zu seeds + %zu mutations), no finding\n", ok, base.size(), iterations);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "--mutate";
  try {
    if (cmd == "--write-seeds" && argc == 3) return write_seeds(argv[2]);
    if (cmd == "--replay") return replay(argc, argv);
    if (cmd == "--mutate")
      return mutate(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20000,
                    argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
  } catch (const std::exception& e) {
    finding("exception escaped", e.what());
  }
  std::fprintf(stderr, "usage: fuzz_decode --write-seeds DIR | --replay FILE... | --mutate [N [SEED]]\n");
  return 2;
}
#endif
