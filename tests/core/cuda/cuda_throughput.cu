// core_cuda_throughput: compress and decompress throughput of every registered codec on
// hcomm::exec::cuda (device memory in and out), one JSON object per line on stdout, for
// scripts/gpu-check.sh and bench/codec/RESULTS.md. Exits 77 ("SKIPPED: ...") without a GPU.
//
//   core_cuda_throughput [--mib 256] [--codecs none,mpc,zfp:8,zfp:16] [--dtype f32|f64|bf16|f16]
//
// First line: the roofline of the same run, a device-to-device cudaMemcpyAsync of the input's
// size ("codec": "d2d-copy"; GB/s count the bytes copied once, the copy reads and writes
// them); then one line per codec and data kind (a codec that does not take the dtype says so
// on stderr and is skipped).
// GB/s count raw input bytes over the time of the call, as bench_codecs does on the host.
// compress: back-to-back compress_async calls between two CUDA events (stream-ordered, no
// host synchronisation inside). decompress: the engine's decompress, which reads the frame
// header to the host (one synchronisation per call) before it decodes: timed on the host.
// Each round trip is checked once (bit-exact for lossless codecs, same count for lossy).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "hcomm/codec/codec.hpp"
#include "hcomm/exec/exec.hpp"

namespace {

namespace hc = hcomm::codec;
using hcomm::exec::cuda;

// x as T (16-bit types: through float, rounded to nearest even).
template <class T>
T of(double x) {
  if constexpr (hcomm::half_element<T>) return T(static_cast<float>(x));
  else return static_cast<T>(x);
}

template <class T>
std::vector<T> smooth(std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i);
    v[i] = of<T>(std::sin(x * 1e-4) * 50.0 + std::sin(x * 3e-3) * 2.0 + std::sin(x * 0.7) * 1e-3);
  }
  return v;
}
template <class T>
std::vector<T> noise(std::size_t n) {  // xorshift + Box-Muller-free sum of uniforms: fast
  std::vector<T> v(n);
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  for (std::size_t i = 0; i < n; ++i) {
    double acc = 0;
    for (int k = 0; k < 4; ++k) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      acc += static_cast<double>(s >> 11) * 0x1.0p-53 - 0.5;
    }
    v[i] = of<T>(acc * 1.7e-3);
  }
  return v;
}

template <class T>
int run(const std::vector<std::string>& codecs, std::size_t mib) {
  const std::size_t n = mib * (std::size_t{1} << 20) / sizeof(T);
  const std::size_t bytes = n * sizeof(T);
  cudaStream_t stream = nullptr;
  HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  HCOMM_CUDA_CHECK(cudaEventCreate(&e0));
  HCOMM_CUDA_CHECK(cudaEventCreate(&e1));
  int failures = 0;
  {  // the roofline: one device-to-device copy of the same size, timed the same way
    void *a = nullptr, *b = nullptr;
    HCOMM_CUDA_CHECK(cudaMalloc(&a, bytes));
    HCOMM_CUDA_CHECK(cudaMalloc(&b, bytes));
    HCOMM_CUDA_CHECK(cudaMemsetAsync(a, 1, bytes, stream));
    HCOMM_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
    const int iters = 20;
    HCOMM_CUDA_CHECK(cudaEventRecord(e0, stream));
    for (int i = 0; i < iters; ++i) HCOMM_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
    HCOMM_CUDA_CHECK(cudaEventRecord(e1, stream));
    HCOMM_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    HCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("{\"codec\": \"d2d-copy\", \"dtype\": \"%s\", \"mib\": %zu, \"iterations\": %d, \"copy_GBps\": %.2f}\n",
                std::string(hcomm::to_string(hcomm::dtype_of<T>)).c_str(), mib, iters, bytes / (ms / 1e3 / iters) / 1e9);
    std::fflush(stdout);
    cudaFree(a);
    cudaFree(b);
  }
  for (const char* data : {"smooth", "noise"}) {
    const std::vector<T> host = std::strcmp(data, "smooth") == 0 ? smooth<T>(n) : noise<T>(n);
    for (const auto& name : codecs) {
      hc::config c;
      try {
        c = hc::parse_config(name, hcomm::dtype_of<T>);
      } catch (const hcomm::error& e) {
        std::fprintf(stderr, "skipping %s: %s\n", name.c_str(), e.what());
        continue;
      }
      hc::engine<cuda> eng{cuda{stream}};
      const cuda& ex = eng.executor();
      const std::size_t cap = hc::max_frame_bytes(c, n);
      void* d_in = ex.allocate(bytes);
      void* d_out = ex.allocate(bytes);
      void* d_frame = ex.allocate(cap);
      auto* d_size = static_cast<std::uint64_t*>(ex.allocate(8));
      ex.from_host(d_in, host.data(), bytes);
      eng.reserve(c, n);

      // Warm-up (first launches, lazy module loading) and the iteration count.
      eng.compress_async(c, d_in, n, d_frame, cap, d_size);
      ex.synchronize();
      auto t0 = std::chrono::steady_clock::now();
      eng.compress_async(c, d_in, n, d_frame, cap, d_size);
      ex.synchronize();
      const double once = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const int iters = static_cast<int>(std::fmin(100.0, std::fmax(3.0, 0.3 / std::fmax(once, 1e-6))));

      HCOMM_CUDA_CHECK(cudaEventRecord(e0, stream));
      for (int i = 0; i < iters; ++i) eng.compress_async(c, d_in, n, d_frame, cap, d_size);
      HCOMM_CUDA_CHECK(cudaEventRecord(e1, stream));
      HCOMM_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      HCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      const double compress_s = ms / 1e3 / iters;

      std::uint64_t frame_bytes = 0;
      ex.to_host(&frame_bytes, d_size, 8);
      eng.decompress(d_frame, frame_bytes, d_out, n, c.type);  // warm-up
      ex.synchronize();
      t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) eng.decompress(d_frame, frame_bytes, d_out, n, c.type);
      ex.synchronize();
      const double decompress_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;

      std::vector<T> back(n);
      ex.to_host(back.data(), d_out, bytes);
      bool ok = true;
      if (c.codec != hcomm::codec_id::zfp) ok = std::memcmp(back.data(), host.data(), bytes) == 0;
      double max_err = 0;
      for (std::size_t i = 0; i < n; ++i)
        max_err = std::fmax(max_err, std::fabs(static_cast<double>(static_cast<float>(back[i])) -
                                               static_cast<double>(static_cast<float>(host[i]))));
      failures += !ok;
      std::printf(
          "{\"codec\": \"%s\", \"dtype\": \"%s\", \"data\": \"%s\", \"mib\": %zu, \"iterations\": %d, "
          "\"compress_GBps\": %.2f, \"decompress_GBps\": %.2f, \"ratio\": %.4f, \"max_abs_error\": %.3g, "
          "\"round_trip\": \"%s\"}\n",
          hc::to_string(c).c_str(), std::string(hcomm::to_string(c.type)).c_str(), data, mib, iters,
          bytes / compress_s / 1e9, bytes / decompress_s / 1e9, static_cast<double>(bytes) / frame_bytes, max_err,
          ok ? "ok" : "WRONG");
      std::fflush(stdout);
      ex.deallocate(d_in);
      ex.deallocate(d_out);
      ex.deallocate(d_frame);
      ex.deallocate(d_size);
      ex.synchronize();
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(stream);
  return failures == 0 ? 0 : 1;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 256;
  std::string codecs = "none,mpc,zfp:8,zfp:16", dtype = "f32";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--mib") mib = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--codecs") codecs = v;
    else if (k == "--dtype") dtype = v;
    else {
      std::fprintf(stderr, "usage: %s [--mib N] [--codecs LIST] [--dtype f32|f64|bf16|f16]\n", argv[0]);
      return 2;
    }
  }
  std::string why;
  if (hcomm::exec::cuda_device_count(&why) == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n", why.c_str());
    return 77;
  }
  try {
    if (dtype == "f64") return run<double>(split(codecs), mib);
    if (dtype == "bf16") return run<hcomm::bf16>(split(codecs), mib);
    if (dtype == "f16") return run<hcomm::f16>(split(codecs), mib);
    if (dtype != "f32") {
      std::fprintf(stderr, "core_cuda_throughput: --dtype %s: f32, f64, bf16 or f16\n", dtype.c_str());
      return 2;
    }
    return run<float>(split(codecs), mib);
  } catch (const hcomm::error& e) {
    std::fprintf(stderr, "core_cuda_throughput: %s\n", e.what());
    return 1;
  }
}
