// transport::nccl (hcomm/transport/nccl.hpp), an MPI program:
// - compile time: basic_context<exec::cuda, transport::nccl> instantiates every collective
//   (the ring in rounds, broadcast, point-to-point on the lanes, the uncompressed
//   collectives) for float and bf16 (the other element types share that code: the
//   dtype only changes the codec's and the addition's element);
// - run time on 1 rank (what one GPU allows: NCCL refuses two ranks on one GPU): the three
//   lanes' communicators come up; a round to itself (sizes over MPI, both payloads in one
//   NCCL group) moves a frame; NCCL's all-reduce, reduce-scatter, all-gather and broadcast
//   of one rank leave the values as they were; a host buffer is refused by the context;
// - on 2 or more ranks sharing one GPU: the context refuses to start with
//   errc::nccl_failure saying why (the endpoint compares the ranks' GPU UUIDs before NCCL
//   starts), on every rank; with a GPU
//   per rank: every collective equals the host context's bytes (as comm_lockstep_transport
//   checks for mpi_exact on the CPU).
// Without a usable device every rank prints "SKIPPED: ..." and exits 77 (ctest: skipped).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "hcomm/algorithm/broadcast.hpp"
#include "hcomm/algorithm/p2p.hpp"
#include "hcomm/algorithm/ring.hpp"
#include "hcomm/core/half.hpp"
#include "hcomm/exec/cuda.hpp"
#include "hcomm/transport/nccl.hpp"

namespace {

namespace alg = hcomm::algorithm;
namespace tr = hcomm::transport;
using nccl_context = alg::basic_context<hcomm::exec::cuda, tr::nccl>;
static_assert(tr::nccl::reaches<hcomm::exec::cuda> && !tr::nccl::stages<hcomm::exec::cuda>);
static_assert(!tr::nccl::reaches<hcomm::exec::host>);

template <class T, class Cx>
void ring_collectives(Cx& cx, const hcomm::codec::config& cfg, T* d, T* d_out, T* res, std::size_t m) {
  const std::size_t n = m * static_cast<std::size_t>(cx.size());
  alg::allreduce(cx, cfg, std::span<T>(d, n));
  alg::allreduce(cx, cfg, std::span<T>(d, n), res);
  alg::reduce_scatter(cx, cfg, std::span<const T>(d, n), std::span<T>(d_out, m));
  alg::allgather(cx, cfg, std::span<const T>(d_out, m), std::span<T>(d, n));
  alg::broadcast(cx, cfg, std::span<T>(d, n), cx.size() - 1);
}
template <class T, class Cx>
void p2p(Cx& cx, const hcomm::codec::config& cfg, T* d, T* d_out, std::size_t n) {
  const int p = cx.size(), r = cx.rank();
  auto s = alg::isend(cx, cfg, std::span<const T>(d, n), (r + 1) % p, 21);
  alg::recv(cx, cfg, std::span<T>(d_out, n), (r + p - 1) % p, 21);
  s.wait();
}
template void ring_collectives<float, nccl_context>(nccl_context&, const hcomm::codec::config&, float*, float*, float*,
                                                    std::size_t);
template void ring_collectives<hcomm::bf16, nccl_context>(nccl_context&, const hcomm::codec::config&, hcomm::bf16*,
                                                          hcomm::bf16*, hcomm::bf16*, std::size_t);
template void p2p<float, nccl_context>(nccl_context&, const hcomm::codec::config&, float*, float*, std::size_t);
template void p2p<hcomm::bf16, nccl_context>(nccl_context&, const hcomm::codec::config&, hcomm::bf16*, hcomm::bf16*,
                                             std::size_t);

int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::printf("FAIL %s\n", what.c_str());
  }
}

template <class T>
std::vector<T> values(int rank, std::size_t n) {
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<T>(std::sin(0.01 * double(i) + rank) + 1e-3 * double(i % 13));
  return x;
}

struct device_buffer {
  void* p = nullptr;
  explicit device_buffer(std::size_t bytes) { HCOMM_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1)); }
  ~device_buffer() { cudaFree(p); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

// One rank: everything NCCL can do with itself.
void one_rank(hcomm::exec::cuda ex) {
  alg::options opt;
  opt.threshold_bytes = 0;
  opt.segment_bytes = 4096;
  nccl_context cx(MPI_COMM_WORLD, opt, "nccl", ex);
  const std::size_t n = 10000;
  const std::vector<float> h = values<float>(0, n);
  device_buffer a(n * 4), b(n * 4);
  HCOMM_CUDA_CHECK(cudaMemcpy(a.p, h.data(), n * 4, cudaMemcpyHostToDevice));
  HCOMM_CUDA_CHECK(cudaMemset(b.p, 0, n * 4));
  // a round to itself: the sizes cross over MPI, both payloads go in one NCCL group
  tr::nccl::request_type q = tr::nccl::null_request();
  tr::nccl::round(a.p, n * 4, true, b.p, n * 4, true, 0, 0, cx.comm(), &q, 0);
  tr::nccl::status_type st;
  check(tr::nccl::wait(&q, &st, 0) == tr::nccl::success, "self round completes");
  check(tr::nccl::received_bytes(st) == n * 4, "self round: the announced size");
  std::vector<float> back(n);
  HCOMM_CUDA_CHECK(cudaMemcpy(back.data(), b.p, n * 4, cudaMemcpyDeviceToHost));
  check(std::memcmp(back.data(), h.data(), n * 4) == 0, "self round: the bytes");
  // NCCL's collectives of one rank
  tr::nccl::sum_allreduce(a.as<float>(), n, cx.comm());
  tr::nccl::broadcast_values(a.as<float>(), n, 0, cx.comm());
  tr::nccl::sum_reduce_scatter(a.as<float>(), b.as<float>(), n, cx.comm());
  tr::nccl::allgather(b.as<float>(), a.as<float>(), n, cx.comm());
  HCOMM_CUDA_CHECK(cudaMemcpy(back.data(), a.p, n * 4, cudaMemcpyDeviceToHost));
  check(std::memcmp(back.data(), h.data(), n * 4) == 0, "NCCL collectives of one rank keep the values");
  // the algorithms on one rank (nothing leaves the device), and a host buffer refused
  alg::allreduce(cx, hcomm::codec::parse_config("zfp:8"), std::span<float>(a.as<float>(), n));
  std::vector<float> host(n);
  bool refused = false;
  try {
    alg::allreduce(cx, hcomm::codec::parse_config("mpc"), std::span<float>(host));
  } catch (const hcomm::error& e) {
    refused = std::string(e.what()).find("allreduce data") != std::string::npos;
  }
  check(refused, "a host buffer passed to an NCCL context: refused, naming the argument");
  std::printf("nccl: one rank: three lanes, a self round and the collectives ok\n");
}

// Several ranks: with a GPU each, the collectives against the host; sharing one, a clear refusal.
void ranks(hcomm::exec::cuda ex, int devices, int local_ranks) {
  const int p = hcomm::mpi::size(MPI_COMM_WORLD), r = hcomm::mpi::rank(MPI_COMM_WORLD);
  alg::options opt;
  opt.threshold_bytes = 0;
  opt.segment_bytes = 4096;
  if (devices < local_ranks) {
    bool refused = false;
    try {
      nccl_context cx(MPI_COMM_WORLD, opt, "nccl", ex);
    } catch (const hcomm::error& e) {
      refused = e.code() == hcomm::errc::nccl_failure;
      if (r == 0) std::printf("nccl on %d ranks per node sharing %d GPU(s): %s\n", local_ranks, devices, e.what());
    }
    check(refused, "ranks sharing a GPU: errc::nccl_failure");
    return;
  }
  nccl_context cx(MPI_COMM_WORLD, opt, "nccl", ex);
  alg::context hx(MPI_COMM_WORLD, opt, "host");
  for (const char* codec : {"none", "mpc", "zfp:8", "zfp:16"})
    for (std::size_t m : {std::size_t{1}, std::size_t{1025}, std::size_t{40000}}) {
      const auto cfg = hcomm::codec::parse_config(codec);
      const std::size_t n = m * static_cast<std::size_t>(p);
      std::vector<float> h = values<float>(r, n), g(n);
      device_buffer d(n * 4);
      HCOMM_CUDA_CHECK(cudaMemcpy(d.p, h.data(), n * 4, cudaMemcpyHostToDevice));
      alg::allreduce(hx, cfg, std::span<float>(h));
      alg::allreduce(cx, cfg, std::span<float>(d.as<float>(), n));
      HCOMM_CUDA_CHECK(cudaMemcpy(g.data(), d.p, n * 4, cudaMemcpyDeviceToHost));
      check(std::memcmp(g.data(), h.data(), n * 4) == 0, std::string("allreduce ") + codec + " m=" + std::to_string(m));
      std::vector<float> hr(n);
      device_buffer dr(n * 4);
      p2p(cx, cfg, d.as<float>(), dr.as<float>(), n);
      p2p(hx, cfg, h.data(), hr.data(), n);
      HCOMM_CUDA_CHECK(cudaMemcpy(g.data(), dr.p, n * 4, cudaMemcpyDeviceToHost));
      check(std::memcmp(g.data(), hr.data(), n * 4) == 0, std::string("send/recv ") + codec + " m=" + std::to_string(m));
    }
  if (r == 0) std::printf("nccl: %d ranks, a GPU each: collectives equal the host's\n", p);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int p = hcomm::mpi::size(MPI_COMM_WORLD), r = hcomm::mpi::rank(MPI_COMM_WORLD);
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  int any = e == cudaSuccess && devices > 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&any, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (r == 0) std::printf("SKIPPED: no CUDA device (%s)\n", e == cudaSuccess ? "none found" : cudaGetErrorString(e));
    MPI_Finalize();
    return 77;
  }
  int local = 0, local_ranks = p;
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) local = std::atoi(v);
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local_ranks = std::atoi(v);
  HCOMM_CUDA_CHECK(cudaSetDevice(local % devices));
  cudaStream_t s = nullptr;
  HCOMM_CUDA_CHECK(cudaStreamCreate(&s));
  try {
    hcomm::exec::cuda ex{s};
    if (p == 1) one_rank(ex);
    else ranks(ex, devices, local_ranks);
  } catch (const hcomm::error& x) {
    check(false, std::string("unexpected hcomm::error: ") + x.what());
  }
  cudaStreamDestroy(s);
  int bad = failures, sum = 0;
  MPI_Allreduce(&bad, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (r == 0) std::printf("transport::nccl on %d rank(s): %s\n", p, sum == 0 ? "PASS" : "FAIL");
  MPI_Finalize();
  return sum == 0 ? 0 : 1;
}
