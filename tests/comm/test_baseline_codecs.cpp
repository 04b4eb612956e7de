// The baseline codecs (bf16, int8:B) in the ring: allreduce, reduce-scatter and allgather on
// the host and the test executor (bitwise the same, results and error-feedback residuals),
// every rank bitwise identical, and the allreduce within the bound the codec's rounding gives
// over the ring's p compressions of each chunk (p - 1 partial sums and the owner's result):
//   bf16:    |sum - exact| <= 1.1 * p * 2^-8 * sum over ranks of |x|      (per value)
//   int8:B:  |sum - exact| <= 1.1 * p * M / 254, M = sum over ranks of the largest |x|
// (half a scale per compression; a block's largest partial sum is at most M).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "hcomm/algorithm/ring.hpp"
#include "hcomm/exec/host_check.hpp"
#include "mpi_check.hpp"

namespace {

namespace alg = hcomm::algorithm;
using check_context = alg::basic_context<hcomm::exec::host_check>;

template <class T>
std::vector<T> data_of(int rank, std::size_t n) {
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = static_cast<T>(std::sin(0.002 * double(i) * (rank + 1) + rank) * (1.0 + 0.5 * rank) * 1e-2 +
                          1e-4 * double((i * 7 + static_cast<std::size_t>(rank)) % 13));
  return x;
}

template <class T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
void run(const std::string& codec, std::size_t n) {
  const int p = t::world_size(), r = t::world_rank();
  alg::options opt;
  opt.threshold_bytes = 0;
  opt.segment_bytes = 4096;
  alg::context hx(MPI_COMM_WORLD, opt, "host");
  check_context dx(MPI_COMM_WORLD, opt, "host_check");
  const auto cfg = hcomm::codec::parse_config(codec);
  const bool is_bf16 = cfg.codec == hcomm::codec_id::bf16;
  const std::string tag = codec + " n=" + std::to_string(n) + (sizeof(T) == 4 ? " f32" : " f64");

  // allreduce
  std::vector<T> a = data_of<T>(r, n), b = a;
  alg::allreduce(hx, cfg, std::span<T>(a));
  alg::allreduce(dx, cfg, std::span<T>(b));
  CHECK(same(a, b), tag + " allreduce host == host_check");
  CHECK(t::identical(a.data(), n * sizeof(T), MPI_COMM_WORLD), tag + " allreduce identical on all ranks");
  std::vector<std::vector<T>> all;
  for (int q = 0; q < p; ++q) all.push_back(data_of<T>(q, n));
  double M = 0;
  for (int q = 0; q < p; ++q) {
    double m = 0;
    for (T v : all[q]) m = std::max(m, std::fabs(double(v)));
    M += m;
  }
  double worst = 0;  // error / bound, at most 1
  for (std::size_t i = 0; i < n; ++i) {
    double exact = 0, scale = 0;
    for (int q = 0; q < p; ++q) {
      exact += double(all[q][i]);
      scale += std::fabs(double(all[q][i]));
    }
    const double bound = 1.1 * p * (is_bf16 ? std::ldexp(scale, -8) : M / 254) + 4 * p * scale * 1e-7;
    worst = std::max(worst, std::fabs(double(a[i]) - exact) / bound);
  }
  CHECK(worst <= 1.0, tag + " allreduce error at " + std::to_string(worst) + " of its bound");
  // wire / raw: 1/2 (bf16), (1 + sizeof(T)/B) / sizeof(T) (int8:B), plus headers and counts
  // (at most 0.05 from 5000 values on; for smaller chunks the 64-byte frame headers weigh)
  const double ratio = is_bf16 ? 0.5 : (1.0 + double(sizeof(T)) / cfg.param) / double(sizeof(T));
  if (n >= 5000)
    CHECK(double(hx.counters().wire_bytes) < (ratio + 0.05) * double(hx.counters().raw_bytes),
          tag + " wire bytes " + std::to_string(hx.counters().wire_bytes) + " of " +
              std::to_string(hx.counters().raw_bytes) + " raw");

  // with error feedback, two steps: the residuals agree across executors too
  std::vector<T> ea(n), eb(n), c1 = data_of<T>(r, n), c2 = c1;
  for (int step = 0; step < 2; ++step) {
    alg::allreduce(hx, cfg, std::span<T>(c1), ea.data());
    alg::allreduce(dx, cfg, std::span<T>(c2), eb.data());
    CHECK(same(c1, c2) && same(ea, eb), tag + " error feedback step " + std::to_string(step) + " host == host_check");
  }
  CHECK(std::any_of(ea.begin(), ea.end(), [](T v) { return v != T(0); }), tag + " the residual holds the loss");

  // reduce-scatter and allgather
  const std::size_t m = n / static_cast<std::size_t>(p);
  const std::vector<T> in = data_of<T>(r, m * p), own = data_of<T>(r + 7, m);
  std::vector<T> rs1(m), rs2(m), ag1(m * p), ag2(m * p);
  alg::reduce_scatter(hx, cfg, std::span<const T>(in), std::span<T>(rs1));
  alg::reduce_scatter(dx, cfg, std::span<const T>(in), std::span<T>(rs2));
  CHECK(same(rs1, rs2), tag + " reduce_scatter host == host_check");
  alg::allgather(hx, cfg, std::span<const T>(own), std::span<T>(ag1));
  alg::allgather(dx, cfg, std::span<const T>(own), std::span<T>(ag2));
  CHECK(same(ag1, ag2), tag + " allgather host == host_check");
  CHECK(t::identical(ag1.data(), ag1.size() * sizeof(T), MPI_COMM_WORLD), tag + " allgather identical");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  try {
    for (const char* codec : {"bf16", "int8:256", "int8:8", "int8:512"})
      for (std::size_t n : {std::size_t{301}, std::size_t{5000}, std::size_t{70001}}) {
        run<float>(codec, n);
        run<double>(codec, n);
      }
  } catch (const hcomm::error& e) {
    CHECK(false, std::string("unexpected hcomm::error: ") + e.what());
  }
  return t::finish("baseline codecs in the ring");
}
