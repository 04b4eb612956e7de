// hcomm-codec's --device cuda in a build without CUDA: cuda_unavailable() says so, and main
// exits with exit_no_device before it calls anything else here.
#include "device.hpp"

#include "hcomm/core/error.hpp"

namespace codec_tool {

std::string cuda_unavailable() { return "built without CUDA (configure with -DHCOMM_ENABLE_CUDA=ON and nvcc)"; }

namespace {
[[noreturn]] void no_cuda() { hcomm::fail(hcomm::errc::invalid_argument, cuda_unavailable()); }
}  // namespace

std::size_t cuda_compress(const hcomm::codec::config&, const void*, std::size_t, void*, std::size_t) { no_cuda(); }
void cuda_decompress(const void*, std::size_t, void*, std::size_t, hcomm::dtype) { no_cuda(); }
std::size_t cuda_round_trip(const hcomm::codec::config&, const void*, std::size_t, void*, int, double*, double*) {
  no_cuda();
}

}  // namespace codec_tool
