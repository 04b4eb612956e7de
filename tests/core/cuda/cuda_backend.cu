// The CUDA half of core_test_cuda: see cuda_backend.hpp.
#include "cuda_backend.hpp"

#include "../team_probes.hpp"
#include "hcomm/codec/codec.hpp"
#include "hcomm/exec/exec.hpp"

#if !HCOMM_EXEC_HAS_CUDA
#error "cuda_backend.cu needs the CUDA executor: configure with -DHCOMM_ENABLE_CUDA=ON and compile with nvcc"
#endif

static_assert(hcomm::exec::executor<hcomm::exec::cuda>);
static_assert(hcomm::exec::cuda::is_device);
static_assert(hcomm::exec::stream_executor<hcomm::exec::cuda>);
static_assert(hcomm::exec::team_executor<hcomm::exec::cuda>);
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

std::vector<std::uint32_t> team_collectives(const std::vector<std::uint32_t>& in, int team) {
  const auto ex = make_executor();
  const std::size_t out_n = static_cast<std::size_t>(team) * 8 + 2;
  exec_buffer<hcomm::exec::cuda> d_in(ex, in.size() * 4), d_out(ex, out_n * 4);
  ex.from_host(d_in.p, in.data(), in.size() * 4);
  ex.launch(1, team, collectives_kernel{static_cast<const std::uint32_t*>(d_in.p), static_cast<std::uint32_t*>(d_out.p)});
  std::vector<std::uint32_t> out(out_n);
  ex.to_host(out.data(), d_out.p, out_n * 4);
  return out;
}

std::vector<float> team_mma(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                            const std::vector<float>& c, const hcomm::exec::mma_shape& s, int team) {
  const auto ex = make_executor();
  exec_buffer<hcomm::exec::cuda> d_a(ex, a.size() * 2), d_b(ex, b.size() * 2), d_c(ex, c.size() * 4);
  ex.from_host(d_a.p, a.data(), a.size() * 2);
  ex.from_host(d_b.p, b.data(), b.size() * 2);
  ex.from_host(d_c.p, c.data(), c.size() * 4);
  ex.launch(1, team,
            mma_probe{static_cast<const std::uint16_t*>(d_a.p), static_cast<const std::uint16_t*>(d_b.p),
                      static_cast<float*>(d_c.p), s, static_cast<int>(a.size()), static_cast<int>(b.size()),
                      static_cast<int>(c.size())});
  std::vector<float> out(c.size());
  ex.to_host(out.data(), d_c.p, c.size() * 4);
  return out;
}

namespace {
struct spin_until_flag_kernel {
  volatile int* flag;
  int* seen;
  HCOMM_HOST_DEVICE void operator()(std::size_t) const {
#if defined(__CUDA_ARCH__)
    const long long until = clock64() + 20000000000ll;  // ~10 s at 2 GHz
    while (*flag == 0 && clock64() < until) {
    }
#endif
    *seen = *flag;
  }
};
struct set_flag_kernel {
  volatile int* flag;
  HCOMM_HOST_DEVICE void operator()(std::size_t) const { *flag = 1; }
};
struct fill_kernel {
  std::uint64_t* a;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { a[i] = 3 * i + 1; }
};
struct double_kernel {
  const std::uint64_t* a;
  std::uint64_t* b;
  HCOMM_HOST_DEVICE void operator()(std::size_t i) const { b[i] = 2 * a[i]; }
};
}  // namespace

std::vector<std::uint64_t> two_streams(std::size_t n) {
  cudaStream_t sa = nullptr, sb = nullptr;
  HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  HCOMM_CUDA_CHECK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  std::vector<std::uint64_t> result(2, 0);
  {
    const hcomm::exec::cuda a{sa}, b{sb};
    exec_buffer<hcomm::exec::cuda> flags(a, 8), x(a, n * 8), y(a, n * 8);
    a.fill_zero(flags.p, 8);
    a.synchronize();
    auto* flag = static_cast<volatile int*>(flags.p);
    int* seen = static_cast<int*>(flags.p) + 1;
    a.for_each(1, spin_until_flag_kernel{flag, seen});
    b.for_each(1, set_flag_kernel{flag});
    a.for_each(n, fill_kernel{x.u64()});
    const hcomm::exec::cuda_event e = a.record();
    b.wait(e);
    b.for_each(n, double_kernel{x.u64(), y.u64()});
    b.synchronize();
    int seen_host = 0;
    a.to_host(&seen_host, seen, 4);
    std::vector<std::uint64_t> got(n);
    b.to_host(got.data(), y.p, n * 8);
    result[0] = static_cast<std::uint64_t>(seen_host);
    for (std::size_t i = 0; i < n; ++i) result[1] += got[i] != 2 * (3 * i + 1);
  }
  HCOMM_CUDA_CHECK(cudaStreamDestroy(sa));
  HCOMM_CUDA_CHECK(cudaStreamDestroy(sb));
  return result;
}

}  // namespace hcomm_test::cuda_side
