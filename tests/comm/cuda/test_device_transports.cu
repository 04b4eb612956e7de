// The collectives on CUDA device memory through the transport policies (MPI program):
// - compile time: basic_context<exec::cuda, transport::mpi_staged> and <exec::cuda,
//   transport::mpi_device> instantiate every collective (allreduce and reduce-scatter with
//   and without error feedback, allgather, broadcast, send/recv) for float and double;
// - run time, on a device: the staged context (and the CUDA-aware one, when this MPI reports
//   CUDA support) gives exactly the bytes of the host context for none, mpc, zfp:8, zfp:16,
//   bf16 and int8:64, all ranks identical; a host buffer passed to a device context is an
//   hcomm::error naming the argument, through the context and through device_communicator.
// Without a usable device every rank prints "SKIPPED: ..." and exits 77 (ctest: skipped).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "hcomm/algorithm/broadcast.hpp"
#include "hcomm/algorithm/p2p.hpp"
#include "hcomm/algorithm/ring.hpp"
#include "hcomm/comm/device_communicator.hpp"
#include "hcomm/exec/cuda.hpp"
#include "hcomm/transport/device_transport.hpp"

namespace {

namespace alg = hcomm::algorithm;
namespace tr = hcomm::transport;
using staged_context = alg::basic_context<hcomm::exec::cuda, tr::mpi_staged>;
using device_context = alg::basic_context<hcomm::exec::cuda, tr::mpi_device>;
static_assert(tr::mpi_staged::reaches<hcomm::exec::cuda> && tr::mpi_staged::stages<hcomm::exec::cuda>);
static_assert(tr::mpi_device::reaches<hcomm::exec::cuda> && !tr::mpi_device::stages<hcomm::exec::cuda>);
static_assert(!tr::mpi_host::reaches<hcomm::exec::cuda>);
static_assert(hcomm::exec::host_staging<hcomm::exec::cuda>);

// Every collective of a context on T (instantiated for both transports below).
template <class T, class Cx>
void all_collectives(Cx& cx, const hcomm::codec::config& cfg, T* d, T* d_out, T* res, std::size_t m) {
  const int p = cx.size(), r = cx.rank();
  const std::size_t n = m * static_cast<std::size_t>(p);
  alg::allreduce(cx, cfg, std::span<T>(d, n));
  alg::allreduce(cx, cfg, std::span<T>(d, n), res);
  alg::reduce_scatter(cx, cfg, std::span<const T>(d, n), std::span<T>(d_out, m));
  alg::reduce_scatter(cx, cfg, std::span<const T>(d, n), std::span<T>(d_out, m), res);
  alg::allgather(cx, cfg, std::span<const T>(d_out, m), std::span<T>(d, n));
  alg::broadcast(cx, cfg, std::span<T>(d, n), p - 1);
  auto s = alg::isend(cx, cfg, std::span<const T>(d, n), (r + 1) % p, 21);
  alg::recv(cx, cfg, std::span<T>(d_out, n), (r + p - 1) % p, 21);
  s.wait();
}
template void all_collectives<float, staged_context>(staged_context&, const hcomm::codec::config&, float*, float*,
                                                     float*, std::size_t);
template void all_collectives<double, staged_context>(staged_context&, const hcomm::codec::config&, double*, double*,
                                                      double*, std::size_t);
template void all_collectives<float, device_context>(device_context&, const hcomm::codec::config&, float*, float*,
                                                     float*, std::size_t);
template void all_collectives<double, device_context>(device_context&, const hcomm::codec::config&, double*, double*,
                                                      double*, std::size_t);

}  // namespace

// The typed communicators on exec::cuda, every operation their axis offers, both transports.
template class hcomm::device_communicator<hcomm::exec::cuda, hcomm::transport::mpi_staged, hcomm::ParallelAxis<hcomm::DP>,
                                          hcomm::Compressor<hcomm::Lossy<8>>, hcomm::ErrorFeedback>;
template class hcomm::device_communicator<hcomm::exec::cuda, hcomm::transport::mpi_device, hcomm::ParallelAxis<hcomm::DP>,
                                          hcomm::Compressor<hcomm::Lossy<8>>, hcomm::ErrorFeedback>;
template class hcomm::device_communicator<hcomm::exec::cuda, hcomm::transport::mpi_staged, hcomm::ParallelAxis<hcomm::PP>,
                                          hcomm::Compressor<hcomm::Lossless>>;
template class hcomm::device_communicator<hcomm::exec::cuda, hcomm::transport::mpi_device, hcomm::ParallelAxis<hcomm::TP>,
                                          hcomm::Compressor<hcomm::Lossy<16>>>;

namespace {

using dp_cuda = hcomm::device_communicator<hcomm::exec::cuda, tr::mpi_staged, hcomm::ParallelAxis<hcomm::DP>,
                                           hcomm::Compressor<hcomm::Lossy<8>>, hcomm::ErrorFeedback>;
using dp_host = hcomm::communicator<hcomm::ParallelAxis<hcomm::DP>, hcomm::Compressor<hcomm::Lossy<8>>, hcomm::ErrorFeedback>;

int failures = 0;
void check(bool ok, const std::string& what, int rank) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
  }
}

template <class T>
std::vector<T> field(std::size_t n, int rank, int salt) {
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = static_cast<T>(std::sin(1e-3 * static_cast<double>(i) * (rank + 1) + salt) + 0.01 * rank);
  return x;
}

template <class T>
struct dbuf {
  T* p = nullptr;
  std::size_t n;
  explicit dbuf(std::size_t n_) : n(n_) { HCOMM_CUDA_CHECK(cudaMalloc(&p, (n ? n : 1) * sizeof(T))); }
  ~dbuf() { cudaFree(p); }
  void put(const std::vector<T>& x) { HCOMM_CUDA_CHECK(cudaMemcpy(p, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice)); }
  std::vector<T> get() const {
    std::vector<T> x(n);
    HCOMM_CUDA_CHECK(cudaDeviceSynchronize());
    HCOMM_CUDA_CHECK(cudaMemcpy(x.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return x;
  }
};

template <class T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The device context against the host context: every collective, bitwise.
template <class T, class Dx>
void compare(Dx& dx, alg::context& hx, const char* codec, std::size_t m, int rank) {
  const int p = hx.size();
  const std::size_t n = m * static_cast<std::size_t>(p);
  const auto cfg = hcomm::codec::parse_config(codec);
  const bool lossy = hcomm::codec::is_lossy(cfg);
  const std::string tag = std::string(Dx::transport_type::name) + " " + codec + (sizeof(T) == 4 ? " f32" : " f64") +
                          " m=" + std::to_string(m);
  dbuf<T> d(n), dres(n), dout(n);
  {  // allreduce, with error feedback when lossy (twice)
    std::vector<T> a = field<T>(n, rank, 1), ra(n, T(0));
    d.put(a);
    dres.put(ra);
    for (int step = 0; step < (lossy ? 2 : 1); ++step) {
      alg::allreduce(hx, cfg, std::span<T>(a), lossy ? ra.data() : nullptr);
      alg::allreduce(dx, cfg, std::span<T>(d.p, n), lossy ? dres.p : nullptr);
      check(same(a, d.get()), tag + " allreduce", rank);
      check(same(ra, dres.get()), tag + " allreduce residual", rank);
    }
  }
  {  // reduce_scatter with error feedback when lossy
    const std::vector<T> in = field<T>(n, rank, 2);
    std::vector<T> a(m), ra(n, T(0));
    d.put(in);
    dres.put(ra);
    alg::reduce_scatter(hx, cfg, std::span<const T>(in), std::span<T>(a), lossy ? ra.data() : nullptr);
    alg::reduce_scatter(dx, cfg, std::span<const T>(d.p, n), std::span<T>(dout.p, m), lossy ? dres.p : nullptr);
    std::vector<T> got = dout.get();
    got.resize(m);
    check(same(a, got), tag + " reduce_scatter", rank);
    check(same(ra, dres.get()), tag + " reduce_scatter residual", rank);
  }
  {  // allgather
    const std::vector<T> in = field<T>(m, rank, 3);
    std::vector<T> a(n);
    std::vector<T> padded = in;
    padded.resize(n);
    dout.put(padded);
    alg::allgather(hx, cfg, std::span<const T>(in), std::span<T>(a));
    alg::allgather(dx, cfg, std::span<const T>(dout.p, m), std::span<T>(d.p, n));
    check(same(a, d.get()), tag + " allgather", rank);
  }
  {  // broadcast from the last rank
    std::vector<T> a = field<T>(n, rank, 4);
    d.put(a);
    alg::broadcast(hx, cfg, std::span<T>(a), p - 1);
    alg::broadcast(dx, cfg, std::span<T>(d.p, n), p - 1);
    check(same(a, d.get()), tag + " broadcast", rank);
  }
  {  // send right, receive from the left
    const std::vector<T> out = field<T>(n, rank, 5);
    std::vector<T> a(n);
    d.put(out);
    const int right = (rank + 1) % p, left = (rank + p - 1) % p;
    auto sh = alg::isend(hx, cfg, std::span<const T>(out), right, 11);
    auto sd = alg::isend(dx, cfg, std::span<const T>(d.p, n), right, 11);
    alg::recv(hx, cfg, std::span<T>(a), left, 11);
    alg::recv(dx, cfg, std::span<T>(dout.p, n), left, 11);
    sh.wait();
    sd.wait();
    check(same(a, dout.get()), tag + " send/recv", rank);
  }
  check(hx.counters().wire_bytes == dx.counters().wire_bytes, tag + " wire bytes", rank);
}

template <class Dx>
void run_all(Dx& dx, alg::context& hx, int rank) {
  for (const char* codec : {"none", "mpc", "zfp:8", "zfp:16", "bf16", "int8:64"})
    for (std::size_t m : {std::size_t{7}, std::size_t{1025}}) {
      compare<float>(dx, hx, codec, m, rank);
      compare<double>(dx, hx, codec, m, rank);
    }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string why;
  const int devices = hcomm::exec::cuda_device_count(&why);
  int usable = devices > 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!usable) {
    if (rank == 0) std::printf("SKIPPED: no CUDA device on every rank (%s)\n", why.empty() ? "none" : why.c_str());
    MPI_Finalize();
    return 77;
  }
  HCOMM_CUDA_CHECK(cudaSetDevice(rank % devices));
  cudaStream_t stream;
  HCOMM_CUDA_CHECK(cudaStreamCreate(&stream));
  try {
    alg::options opt;
    opt.threshold_bytes = 0;
    opt.segment_bytes = 1024;  // several segments per chunk
    hcomm::exec::cuda ex(stream);
    alg::context hx(MPI_COMM_WORLD, opt, "host");
    {
      staged_context sx(MPI_COMM_WORLD, opt, "staged", ex);
      run_all(sx, hx, rank);
      // a host buffer given to a device context: a clear error naming the argument
      std::vector<float> host(64);
      bool refused = false;
      try {
        alg::allreduce(sx, hcomm::codec::parse_config("zfp:8"), std::span<float>(host));
      } catch (const hcomm::error& e) {
        refused = e.code() == hcomm::errc::invalid_argument && std::string(e.what()).find("allreduce data") != std::string::npos;
        if (rank == 0) std::printf("host buffer refused: %s\n", e.what());
      }
      check(refused, "host buffer passed to exec::cuda: invalid_argument naming it", rank);
      // the typed communicator: the same bytes as the host's, and the same refusal
      {
        dp_cuda dp(MPI_COMM_WORLD, opt, ex);
        dp_host hp(MPI_COMM_WORLD, opt);
        const std::size_t n = 4099 * static_cast<std::size_t>(size);
        std::vector<float> a = field<float>(n, rank, 7);
        dbuf<float> d(n);
        d.put(a);
        for (int step = 0; step < 2; ++step) {
          hp.allreduce(std::span<float>(a));
          dp.allreduce(hcomm::device_span<float>(d.p, n));
          check(same(a, d.get()), "device_communicator allreduce step " + std::to_string(step), rank);
        }
        bool typed_refused = false;
        try {
          dp.allreduce(hcomm::device_span<float>(host.data(), host.size()));
        } catch (const hcomm::error& e) {
          typed_refused = e.code() == hcomm::errc::invalid_argument;
        }
        check(typed_refused, "host buffer passed to device_communicator<exec::cuda>", rank);
      }
      // uncompressed (below the threshold): MPI's own collectives over staging
      alg::options raw = opt;
      raw.threshold_bytes = std::size_t{1} << 30;
      staged_context rx(MPI_COMM_WORLD, raw, "staged raw", ex);
      alg::context rhx(MPI_COMM_WORLD, raw, "host raw");
      compare<float>(rx, rhx, "none", 1025, rank);
    }
    if (tr::default_device_transport() == tr::device_transport::mpi_device) {
      device_context gx(MPI_COMM_WORLD, opt, "cuda-aware", ex);
      run_all(gx, hx, rank);
    } else if (rank == 0) {
      std::printf("mpi_device not run: this MPI reports no CUDA support\n");
    }
  } catch (const hcomm::error& e) {
    check(false, std::string("unexpected hcomm::error: ") + e.what(), rank);
  }
  HCOMM_CUDA_CHECK(cudaStreamDestroy(stream));
  int bad = failures;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("device transports: %s (%d failures)\n", bad ? "FAIL" : "PASS", bad);
  MPI_Finalize();
  return bad ? 1 : 0;
}
