// hcomm-codec's --device cuda: the codec engine on the CUDA executor (hcomm/exec/cuda.hpp),
// device buffers, kernels timed with CUDA events. Declarations and contract: device.hpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "device.hpp"
#include "hcomm/codec/codec.hpp"
#include "hcomm/exec/exec.hpp"

namespace codec_tool {

namespace {

namespace hc = hcomm::codec;
using hcomm::exec::cuda;

// A stream and two timing events, destroyed in order.
struct cuda_session {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cuda_session() {
    HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    HCOMM_CUDA_CHECK(cudaEventCreate(&start));
    HCOMM_CUDA_CHECK(cudaEventCreate(&stop));
  }
  cuda_session(const cuda_session&) = delete;
  cuda_session& operator=(const cuda_session&) = delete;
  ~cuda_session() {
    if (stop) cudaEventDestroy(stop);
    if (start) cudaEventDestroy(start);
    if (stream) cudaStreamDestroy(stream);
  }
  // Seconds between the two events (the caller recorded both).
  double elapsed() const {
    HCOMM_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    HCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return static_cast<double>(ms) / 1e3;
  }
};

// Device memory of the executor, freed with it.
struct device_bytes {
  const cuda* ex = nullptr;
  void* p = nullptr;
  device_bytes(const cuda& e, std::size_t bytes) : ex(&e), p(bytes ? e.allocate(bytes) : nullptr) {}
  device_bytes(const device_bytes&) = delete;
  device_bytes& operator=(const device_bytes&) = delete;
  ~device_bytes() {
    if (p) ex->deallocate(p);
  }
};

}  // namespace

std::string cuda_unavailable() {
  std::string why;
  if (hcomm::exec::cuda_device_count(&why) > 0) return {};
  return "no CUDA device: " + why;
}

std::size_t cuda_compress(const hc::config& c, const void* in, std::size_t n, void* out, std::size_t cap) {
  cuda_session s;
  hc::engine<cuda> eng{cuda{s.stream}};
  const cuda& ex = eng.executor();
  const std::size_t bytes = n * hcomm::size_of(c.type);
  const std::size_t bound = hc::max_frame_bytes(c, n);
  device_bytes d_in(ex, bytes), d_frame(ex, bound), d_size(ex, sizeof(std::uint64_t));
  ex.from_host(d_in.p, in, bytes);
  eng.compress_async(c, d_in.p, n, d_frame.p, bound, static_cast<std::uint64_t*>(d_size.p));
  std::uint64_t frame_bytes = 0;
  ex.to_host(&frame_bytes, d_size.p, sizeof frame_bytes);  // synchronises
  if (frame_bytes > cap)
    hcomm::fail(hcomm::errc::invalid_argument, "frame of " + std::to_string(frame_bytes) + " bytes, buffer holds " +
                                                   std::to_string(cap));
  ex.to_host(out, d_frame.p, static_cast<std::size_t>(frame_bytes));
  return static_cast<std::size_t>(frame_bytes);
}

void cuda_decompress(const void* frame, std::size_t frame_bytes, void* out, std::size_t n, hcomm::dtype type) {
  cuda_session s;
  hc::engine<cuda> eng{cuda{s.stream}};
  const cuda& ex = eng.executor();
  const std::size_t bytes = n * hcomm::size_of(type);
  device_bytes d_frame(ex, frame_bytes), d_out(ex, bytes);
  ex.from_host(d_frame.p, frame, frame_bytes);
  eng.decompress(d_frame.p, frame_bytes, d_out.p, n, type);
  ex.to_host(out, d_out.p, bytes);
}

std::size_t cuda_round_trip(const hc::config& c, const void* in, std::size_t n, void* out, int reps,
                            double* best_compress, double* best_decompress) {
  cuda_session s;
  hc::engine<cuda> eng{cuda{s.stream}};
  const cuda& ex = eng.executor();
  const std::size_t bytes = n * hcomm::size_of(c.type);
  const std::size_t bound = hc::max_frame_bytes(c, n);
  device_bytes d_in(ex, bytes), d_out(ex, bytes), d_frame(ex, bound), d_size(ex, sizeof(std::uint64_t));
  ex.from_host(d_in.p, in, bytes);
  eng.reserve(c, n);
  auto* size_slot = static_cast<std::uint64_t*>(d_size.p);
  // One untimed call each first: lazy module loading and the first launches.
  eng.compress_async(c, d_in.p, n, d_frame.p, bound, size_slot);
  std::uint64_t frame_bytes = 0;
  ex.to_host(&frame_bytes, size_slot, sizeof frame_bytes);
  double best_c = std::numeric_limits<double>::infinity(), best_d = best_c;
  for (int r = 0; r < reps; ++r) {
    HCOMM_CUDA_CHECK(cudaEventRecord(s.start, s.stream));
    eng.compress_async(c, d_in.p, n, d_frame.p, bound, size_slot);
    HCOMM_CUDA_CHECK(cudaEventRecord(s.stop, s.stream));
    best_c = std::min(best_c, s.elapsed());
  }
  ex.to_host(&frame_bytes, size_slot, sizeof frame_bytes);
  const auto fb = static_cast<std::size_t>(frame_bytes);
  eng.decompress(d_frame.p, fb, d_out.p, n, c.type);
  for (int r = 0; r < reps; ++r) {
    // decompress reads the header to the host first (one synchronisation), inside the events.
    HCOMM_CUDA_CHECK(cudaEventRecord(s.start, s.stream));
    eng.decompress(d_frame.p, fb, d_out.p, n, c.type);
    HCOMM_CUDA_CHECK(cudaEventRecord(s.stop, s.stream));
    best_d = std::min(best_d, s.elapsed());
  }
  ex.to_host(out, d_out.p, bytes);
  *best_compress = best_c;
  *best_decompress = best_d;
  return fb;
}

}  // namespace codec_tool
