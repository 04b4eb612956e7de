// A codec from outside the library (tests/codec/toy/toy_codec.hpp) in the collectives: a
// context over the test's own codec list runs the ring allreduce, reduce-scatter, allgather,
// broadcast and point-to-point with "toy:K", on the host executor and on the test executor
// (bitwise the same), and the library's list keeps refusing its frames.
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "../codec/toy/toy_codec.hpp"
#include "hcomm/algorithm/broadcast.hpp"
#include "hcomm/algorithm/p2p.hpp"
#include "hcomm/algorithm/ring.hpp"
#include "hcomm/exec/host_check.hpp"
#include "mpi_check.hpp"

namespace {

namespace alg = hcomm::algorithm;
using toy_codecs = hcomm::codec::registered_codecs::with<toy::toy_codec>;
using host_toy = alg::basic_context<hcomm::exec::host, hcomm::transport::mpi_host, toy_codecs>;
using check_toy = alg::basic_context<hcomm::exec::host_check, hcomm::transport::mpi_host, toy_codecs>;

template <class T>
std::vector<T> data_of(int rank, std::size_t n) {
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<T>(std::cos(0.01 * double(i) + rank) + 0.25 * rank);
  return x;
}

template <class T>
void run(std::size_t n) {
  const int p = t::world_size(), r = t::world_rank();
  alg::options opt;
  opt.threshold_bytes = 0;
  opt.segment_bytes = 512;
  host_toy hx(MPI_COMM_WORLD, opt, "toy");
  check_toy dx(MPI_COMM_WORLD, opt, "toy-check");
  const unsigned K = 6;
  const auto cfg = hcomm::codec::parse_config<toy_codecs>("toy:" + std::to_string(K));
  const std::string tag = "toy n=" + std::to_string(n) + (sizeof(T) == 4 ? " f32" : " f64");

  // allreduce: close to the exact sum, the same on every rank and on both executors
  std::vector<T> a = data_of<T>(r, n), b = a;
  alg::allreduce(hx, cfg, std::span<T>(a));
  alg::allreduce(dx, cfg, std::span<T>(b));
  CHECK(a.empty() || std::memcmp(a.data(), b.data(), n * sizeof(T)) == 0, tag + " allreduce host == host_check");
  CHECK(t::identical(a.data(), n * sizeof(T), MPI_COMM_WORLD), tag + " allreduce identical on all ranks");
  const double ulp = std::ldexp(1.0, static_cast<int>(K) - (sizeof(T) == 4 ? 23 : 52));
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double exact = 0, scale = 0;
    for (int q = 0; q < p; ++q) {
      exact += double(data_of<T>(q, n)[i]);
      scale += std::abs(double(data_of<T>(q, n)[i]));
    }
    worst = std::max(worst, std::abs(double(a[i]) - exact) / (scale + 1e-30));
  }
  CHECK(worst <= 4.0 * p * ulp, tag + " allreduce error " + std::to_string(worst));
  CHECK(hx.counters().wire_bytes > 0, tag + " frames were sent");

  // with error feedback: the residual is what the toy codec dropped
  std::vector<T> e(n), ed(n), c1 = data_of<T>(r, n), c2 = c1;
  alg::allreduce(hx, cfg, std::span<T>(c1), e.data());
  alg::allreduce(dx, cfg, std::span<T>(c2), ed.data());
  CHECK(e.empty() || std::memcmp(e.data(), ed.data(), n * sizeof(T)) == 0, tag + " residual host == host_check");

  // reduce-scatter, allgather, broadcast and point-to-point through the same list
  const std::size_t m = n / static_cast<std::size_t>(p);
  std::vector<T> in = data_of<T>(r, m * p), rs(m), ag(m * p), own = data_of<T>(r, m);
  alg::reduce_scatter(hx, cfg, std::span<const T>(in), std::span<T>(rs));
  alg::allgather(hx, cfg, std::span<const T>(own), std::span<T>(ag));
  CHECK(t::identical(ag.data(), ag.size() * sizeof(T), MPI_COMM_WORLD), tag + " allgather identical");
  std::vector<T> bc = data_of<T>(r, n);
  alg::broadcast(hx, cfg, std::span<T>(bc), 0);
  CHECK(t::identical(bc.data(), n * sizeof(T), MPI_COMM_WORLD), tag + " broadcast identical");
  std::vector<T> got(n);
  const std::vector<T> mine = data_of<T>(r, n);
  auto sr = alg::isend(hx, cfg, std::span<const T>(mine), (r + 1) % p, 3);
  alg::recv(hx, cfg, std::span<T>(got), (r + p - 1) % p, 3);
  sr.wait();
  const std::vector<T> sent = data_of<T>((r + p - 1) % p, n);
  bool close = true;
  for (std::size_t i = 0; i < n; ++i) close = close && std::abs(double(got[i]) - double(sent[i])) <= std::abs(double(sent[i])) * ulp;
  CHECK(close, tag + " send/recv within the toy's loss");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  try {
    for (std::size_t n : {std::size_t{2}, std::size_t{301}, std::size_t{4096}}) {
      run<float>(n);
      run<double>(n);
    }
  } catch (const hcomm::error& e) {
    CHECK(false, std::string("unexpected hcomm::error: ") + e.what());
  }
  return t::finish("toy codec ring");
}
