// hcomm-collective's --device cuda in a build without CUDA: cuda_unavailable() says so, and
// main exits with exit_no_device before it asks for device buffers.
#include "device.hpp"

#include "hcomm/core/error.hpp"

namespace collective_tool {

std::string cuda_unavailable() { return "built without CUDA (configure with -DHCOMM_ENABLE_CUDA=ON and nvcc)"; }

void cuda_select_device(int) { hcomm::fail(hcomm::errc::invalid_argument, cuda_unavailable()); }

std::unique_ptr<device_buffers> make_cuda_buffers(const float*, std::size_t, std::size_t) {
  hcomm::fail(hcomm::errc::invalid_argument, cuda_unavailable());
}

std::unique_ptr<device_buffers> make_cuda_resident(const float*, std::size_t, std::size_t, const resident_setup&) {
  hcomm::fail(hcomm::errc::invalid_argument, cuda_unavailable());
}

}  // namespace collective_tool
