// tools/hcomm-codec/device.hpp: hcomm-codec's --device cuda backend, behind portable
// declarations. device_cuda.cu (nvcc, builds with HCOMM_ENABLE_CUDA) runs the codec engine
// on the CUDA executor; device_none.cpp (every other build) only says why it cannot.
//
// Every function takes and returns host memory: the backend copies the input to the device,
// runs the engine there and copies the result back. The kernels are timed with CUDA events
// (the copies are not in the figure), as the host path times the engine alone.
#pragma once
#include <cstddef>
#include <string>

#include "hcomm/codec/config.hpp"
#include "hcomm/core/dtype.hpp"

namespace codec_tool {

// hcomm-codec's exit status when --device names a device this run cannot use.
inline constexpr int exit_no_device = 3;

// Empty when --device cuda can run; else the one-line reason ("built without CUDA ...",
// "no CUDA device: <cudaGetErrorString>").
std::string cuda_unavailable();

// Compresses n values (host memory, c.type) on the device into out (host memory, capacity
// cap bytes, at least hcomm::codec::max_frame_bytes(c, n)); returns the frame's size.
std::size_t cuda_compress(const hcomm::codec::config& c, const void* in, std::size_t n, void* out, std::size_t cap);

// Decodes a frame (host memory) on the device into n values of `type` at out (host memory).
// The engine validates the frame first, as on the host.
void cuda_decompress(const void* frame, std::size_t frame_bytes, void* out, std::size_t n, hcomm::dtype type);

// stats on the device: compresses and decompresses `reps` times, the best kernel times (CUDA
// events, seconds) in *best_compress and *best_decompress; the decoded values land in out
// (host) and the frame's size is returned.
std::size_t cuda_round_trip(const hcomm::codec::config& c, const void* in, std::size_t n, void* out, int reps,
                            double* best_compress, double* best_decompress);

}  // namespace codec_tool
