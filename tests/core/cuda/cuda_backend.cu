// The CUDA half of core_test_cuda: see cuda_backend.hpp.
#include "cuda_backend.hpp"

#include "hcomm/codec/codec.hpp"
#include "hcomm/exec/exec.hpp"

#if !HCOMM_EXEC_HAS_CUDA
#error "cuda_backend.cu needs the CUDA executor: configure with -DHCOMM_ENABLE_CUDA=ON and compile with nvcc"
#endif

static_assert(hcomm::exec::executor<hcomm::exec::cuda>);
static_assert(hcomm::exec::cuda::is_device);
// engine<exec::cuda> must be default-constructible the way users write it (Exec ex = {}).
[[maybe_unused]] static void engine_default_constructs() { hcomm::codec::engine<hcomm::exec::cuda> eng; }

namespace hcomm_test::cuda_side {

namespace {
// One stream per test process, so the tests exercise a non-default stream.
hcomm::exec::cuda make_executor() {
  static cudaStream_t stream = [] {
    cudaStream_t s = nullptr;
    HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }();
  return hcomm::exec::cuda{stream};
}
}  // namespace

int device_count(std::string* why) { return hcomm::exec::cuda_device_count(why); }

std::string device_name() {
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) return "unknown";
  return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ")";
}

std::vector<std::uint64_t> scan(const std::vector<std::uint64_t>& in, bool in_place) {
  return scan_probe(make_executor(), in, in_place);
}
std::vector<std::uint64_t> for_each(std::size_t n) { return for_each_probe(make_executor(), n); }
std::vector<unsigned char> copy_fill(std::size_t n) { return copy_fill_probe(make_executor(), n); }

std::vector<std::size_t> scan_workspace_sizes(std::size_t n_big) {
  const auto ex = make_executor();
  std::vector<std::size_t> sizes;
  exec_buffer<hcomm::exec::cuda> buf(ex, (n_big + 1) * 8);
  ex.fill_zero(buf.p, (n_big + 1) * 8);
  auto* w = buf.u64();
  ex.exclusive_scan(w, w, n_big);
  sizes.push_back(ex.scan_workspace_bytes());
  ex.exclusive_scan(w, w, n_big);
  sizes.push_back(ex.scan_workspace_bytes());
  ex.exclusive_scan(w, w, 10);
  sizes.push_back(ex.scan_workspace_bytes());
  ex.exclusive_scan(w, w, n_big);
  sizes.push_back(ex.scan_workspace_bytes());
  ex.synchronize();
  return sizes;
}

outcome run_engine(const hcomm::codec::config& c, const void* host_in, std::size_t n) {
  hcomm::codec::engine<hcomm::exec::cuda> eng{make_executor()};
  return hcomm_test::run_engine(eng, c, host_in, n);
}

}  // namespace hcomm_test::cuda_side
