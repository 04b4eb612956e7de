// tests/core/exec_probes.hpp: test code shared by test_executors.cpp (host, Kokkos) and the
// CUDA tests (cuda/). Everything here goes through the executor API only (allocate,
// from_host, the kernel, to_host), so one body checks every backend, and results come back
// as host vectors that the Catch2 files compare. No Catch2 here: nvcc compiles this too.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "hcomm/codec/codec.hpp"
#include "hcomm/core/error.hpp"

namespace hcomm_test {

// Frees executor memory on scope exit (tests throw on failure paths).
template <class Exec>
struct exec_buffer {
  const Exec& ex;
  void* p;
  exec_buffer(const Exec& e, std::size_t bytes) : ex(e), p(e.allocate(bytes)) {}
  ~exec_buffer() { ex.deallocate(p); }
  exec_buffer(const exec_buffer&) = delete;
  exec_buffer& operator=(const exec_buffer&) = delete;
  std::uint64_t* u64() const { return static_cast<std::uint64_t*>(p); }
  unsigned char* bytes() const { return static_cast<unsigned char*>(p); }
};

// ---- executor probes ----------------------------------------------------------------------

// Scans `in` on the executor; in_place runs with in == out. Returns the n+1 outputs.
template <class Exec>
std::vector<std::uint64_t> scan_probe(const Exec& ex, const std::vector<std::uint64_t>& in, bool in_place) {
  const std::size_t n = in.size();
  std::vector<std::uint64_t> out(n + 1, 0xdeadbeefdeadbeefull);
  exec_buffer<Exec> b_out(ex, (n + 1) * 8);
  // The slot past the inputs holds garbage first: the scan must overwrite it.
  ex.from_host(b_out.p, out.data(), (n + 1) * 8);
  if (in_place) {
    ex.from_host(b_out.p, in.data(), n * 8);
    ex.exclusive_scan(b_out.u64(), b_out.u64(), n);
  } else {
    exec_buffer<Exec> b_in(ex, n * 8 + 8);
    ex.from_host(b_in.p, in.data(), n * 8);
    ex.exclusive_scan(b_in.u64(), b_out.u64(), n);
    ex.to_host(out.data(), b_out.p, (n + 1) * 8);  // before b_in is freed
    return out;
  }
  ex.to_host(out.data(), b_out.p, (n + 1) * 8);
  return out;
}

// Every index must be visited exactly once: a[i] += (i << 8) + 1 from zero gives exactly
// (i << 8) + 1; a skipped index stays 0, a repeated one doubles, a wrong index shows too.
struct visit_kernel {
  std::uint64_t* a;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { a[i] += (static_cast<std::uint64_t>(i) << 8) + 1; }
};

template <class Exec>
std::vector<std::uint64_t> for_each_probe(const Exec& ex, std::size_t n) {
  std::vector<std::uint64_t> a(n + 1);
  exec_buffer<Exec> b(ex, (n + 1) * 8);
  ex.fill_zero(b.p, (n + 1) * 8);
  ex.for_each(n, visit_kernel{b.u64()});
  ex.to_host(a.data(), b.p, (n + 1) * 8);  // a[n] is a guard: must stay 0
  return a;
}

// from_host a pattern, copy a misaligned odd-length range to another buffer, zero a
// misaligned sub-range of it, read both back. Mirrors host_copy_fill_expected below.
template <class Exec>
std::vector<unsigned char> copy_fill_probe(const Exec& ex, std::size_t n) {
  // (A bound on n: without it GCC's -Wstringop-overflow sees n + 16 wrap and warns.)
  if (n > (std::size_t{1} << 40)) throw std::length_error("copy_fill_probe: n too large");
  std::vector<unsigned char> src(n + 16), dst(n + 16, 0xee);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131u + 7u);
  exec_buffer<Exec> a(ex, n + 16), b(ex, n + 16);
  ex.from_host(a.p, src.data(), n + 16);
  ex.from_host(b.p, dst.data(), n + 16);
  ex.copy(b.bytes() + 3, a.bytes() + 5, n);
  ex.fill_zero(b.bytes() + 1 + n / 3, n / 2);
  ex.copy(b.bytes(), b.bytes(), 0);  // zero bytes: no-op
  ex.fill_zero(b.p, 0);
  std::vector<unsigned char> out(n + 16);
  ex.to_host(out.data(), b.p, n + 16);
  return out;
}

inline std::vector<unsigned char> host_copy_fill_expected(std::size_t n) {
  std::vector<unsigned char> src(n + 16), dst(n + 16, 0xee);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131u + 7u);
  std::memcpy(dst.data() + 3, src.data() + 5, n);
  std::memset(dst.data() + 1 + n / 3, 0, n / 2);
  return dst;
}

inline std::vector<std::uint64_t> random_words(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> v(n);
  for (auto& x : v) x = rng() >> 24;  // sums of 2^20 of them stay far below 2^64
  return v;
}

inline std::vector<std::uint64_t> host_exclusive_scan(const std::vector<std::uint64_t>& in) {
  std::vector<std::uint64_t> out(in.size() + 1);
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    out[i] = acc;
    acc += in[i];
  }
  out[in.size()] = acc;
  return out;
}

// ---- engine runs --------------------------------------------------------------------------

enum class data_kind { smooth, noise, special, zeros };
inline const char* to_string(data_kind k) {
  switch (k) {
    case data_kind::smooth: return "smooth";
    case data_kind::noise: return "noise";
    case data_kind::special: return "special";
    case data_kind::zeros: return "zeros";
  }
  return "?";
}
inline constexpr data_kind all_kinds[] = {data_kind::smooth, data_kind::noise, data_kind::special, data_kind::zeros};

// Deterministic inputs: smooth fields, gradient-like Gaussian noise, a mix of special
// values (NaN, +-Inf, +-0, denormals, extremes) among ordinary ones, and all zeros. The
// 16-bit types get the float data rounded, with their own NaN and subnormal patterns mixed
// into the special kind.
template <class T>
std::vector<T> make_data(data_kind k, std::size_t n, std::uint64_t seed) {
  if constexpr (hcomm::half_element<T>) {
    const std::vector<float> x = make_data<float>(k, n, seed);
    std::vector<T> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = T(x[i]);
    if (k == data_kind::special)
      for (std::size_t i = 1; i < n; i += 7)
        v[i] = T::from_bits(static_cast<std::uint16_t>(i % 3 == 0 ? 0x0001 : 0x7C01 | (i & 0x8000)));
    return v;
  } else {
    std::vector<T> v(n);
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> gauss(0.0, 1e-3);
    for (std::size_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(i);
      switch (k) {
        case data_kind::smooth: v[i] = static_cast<T>(std::sin(x * 0.01) * 100.0 + std::cos(x * 0.003) * 3.0); break;
        case data_kind::noise: v[i] = static_cast<T>(gauss(rng)); break;
        case data_kind::zeros: v[i] = T(0); break;
        case data_kind::special: {
          const T specials[] = {std::numeric_limits<T>::quiet_NaN(),  std::numeric_limits<T>::infinity(),
                                -std::numeric_limits<T>::infinity(), T(0), -T(0),
                                std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max(),
                                std::numeric_limits<T>::lowest(),     std::numeric_limits<T>::min()};
          const std::uint64_t r = rng();
          v[i] = (r % 5 == 0) ? specials[(r >> 8) % 9] : static_cast<T>(gauss(rng) * 1e3);
          break;
        }
      }
    }
    return v;
  }
}

// What one executor made of one input: the frame bytes and the decoded bytes, or the error.
struct outcome {
  bool ok = false;
  hcomm::errc code{};
  std::string what;
  std::vector<unsigned char> frame;
  std::vector<unsigned char> decoded;
};

// Compresses host_in (n values of c.type) on the engine's executor with compress_async (the
// frame size read back from executor memory), copies the frame to the host, decompresses it
// again on the executor and copies the values back.
template <class Exec>
outcome run_engine(hcomm::codec::engine<Exec>& eng, const hcomm::codec::config& c, const void* host_in,
                   std::size_t n) {
  const Exec& ex = eng.executor();
  outcome r;
  try {
    const std::size_t bytes = n * hcomm::size_of(c.type);
    const std::size_t cap = hcomm::codec::max_frame_bytes(c, n);
    exec_buffer<Exec> d_in(ex, bytes), d_frame(ex, cap), d_out(ex, bytes), d_size(ex, 8);
    ex.from_host(d_in.p, host_in, bytes);
    eng.compress_async(c, d_in.p, n, d_frame.p, cap, d_size.u64());
    std::uint64_t frame_bytes = 0;
    ex.to_host(&frame_bytes, d_size.p, 8);
    if (frame_bytes < hcomm::codec::header_bytes || frame_bytes > cap)
      hcomm::fail(hcomm::errc::invalid_argument, "engine reported a frame of " + std::to_string(frame_bytes) +
                                                     " bytes (capacity " + std::to_string(cap) + ")");
    r.frame.resize(frame_bytes);
    ex.to_host(r.frame.data(), d_frame.p, frame_bytes);
    eng.decompress(d_frame.p, frame_bytes, d_out.p, n, c.type);
    r.decoded.resize(bytes);
    ex.to_host(r.decoded.data(), d_out.p, bytes);
    r.ok = true;
  } catch (const hcomm::error& e) {
    r.code = e.code();
    r.what = e.what();
  }
  return r;
}

// Parameters worth running for a codec: a spread over what it accepts (none: 0; mpc: auto
// and several dims; zfp: several rates), whatever codecs are registered.
template <class Codec>
std::vector<unsigned> params_of() {
  std::vector<unsigned> out;
  for (unsigned p : {0u, 1u, 3u, 4u, 8u, 16u, 32u, 64u})
    if (Codec::valid_param(p)) out.push_back(p);
  return out;
}

}  // namespace hcomm_test
