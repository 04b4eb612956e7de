// The ring collectives on bf16 and f16 (algorithm/ring.hpp): a 16-bit sum widens both
// operands to float, adds in float and rounds once to nearest even per addition
// (algorithm/vector_ops.hpp; the uncompressed path's MPI operation does the same). On 2 ranks
// every element is one addition, so lossless codecs (none, MPC) and the uncompressed path
// give exactly H(float(x0) + float(x1)), bit for bit; ZFP gives values within its error and
// the same bytes on every rank. Host and host-check (the device code paths) agree bitwise,
// residuals included. On more ranks the order of additions is the ring's: results are
// checked to be identical across ranks and close to the float sum. Point-to-point messages
// (algorithm/p2p.hpp) and the typed communicator carry 16-bit values too: lossless codecs
// deliver the sender's bits, host and host-check agree, and a receiver of the other 16-bit
// type gets errc::mismatch.
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "hcomm/algorithm/p2p.hpp"
#include "hcomm/algorithm/ring.hpp"
#include "hcomm/comm/communicator.hpp"
#include "hcomm/exec/host_check.hpp"
#include "mpi_check.hpp"

namespace {

namespace alg = hcomm::algorithm;
using host_cx = alg::basic_context<hcomm::exec::host, hcomm::transport::mpi_host>;
using check_cx = alg::basic_context<hcomm::exec::host_check, hcomm::transport::mpi_host>;

template <class H>
std::vector<H> data_of(int rank, std::size_t n) {
  std::vector<H> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = H(static_cast<float>(std::sin(0.013 * double(i) + rank) * (1.0 + 0.37 * rank) + 0.001 * double(i % 7)));
  return x;
}

template <class H>
bool same_bits(const std::vector<H>& a, const std::vector<H>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 2) == 0);
}

// The exact sum of all ranks' values as float, and (2 ranks) the defined 16-bit result.
template <class H>
void sums(std::size_t n, std::vector<double>& exact, std::vector<H>& two_ranks) {
  const int p = t::world_size();
  exact.assign(n, 0.0);
  two_ranks.resize(n);
  std::vector<std::vector<H>> all;
  for (int q = 0; q < p; ++q) all.push_back(data_of<H>(q, n));
  for (std::size_t i = 0; i < n; ++i) {
    for (int q = 0; q < p; ++q) exact[i] += static_cast<float>(all[q][i]);
    if (p == 2) two_ranks[i] = H(static_cast<float>(all[0][i]) + static_cast<float>(all[1][i]));
  }
}

template <class H>
void run(const char* spec, std::size_t n, bool raw) {
  const int p = t::world_size(), r = t::world_rank();
  alg::options opt;
  opt.threshold_bytes = raw ? (std::size_t{1} << 30) : 0;
  opt.native_uncompressed = raw;  // "none" through the ring too
  opt.segment_bytes = 512;
  host_cx hx(MPI_COMM_WORLD, opt, "h16");
  check_cx dx(MPI_COMM_WORLD, opt, "c16");
  const auto cfg = hcomm::codec::parse_config(spec, hcomm::dtype_of<H>);
  const bool lossless = !hcomm::codec::is_lossy(cfg);
  const std::string tag = std::string(spec) + (raw ? " raw" : " ring") + " " +
                          std::string(hcomm::to_string(hcomm::dtype_of<H>)) + " n=" + std::to_string(n);
  std::vector<double> exact;
  std::vector<H> want;
  sums<H>(n, exact, want);
  // The error a 16-bit sum may carry: a rounding per addition (2^-8 bf16, 2^-11 f16, relative),
  // plus the codec's (ZFP at rate 8 on values of magnitude ~1: about 2^-5 of the block's largest).
  const double unit = std::is_same_v<H, hcomm::bf16> ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  const double tol = (p + 1) * unit * 4.0 * p + (lossless ? 0.0 : 0.25 * p);

  // allreduce
  std::vector<H> a = data_of<H>(r, n), b = a;
  alg::allreduce(hx, cfg, std::span<H>(a));
  alg::allreduce(dx, cfg, std::span<H>(b));
  CHECK(same_bits(a, b), tag + " allreduce host == host_check");
  CHECK(t::identical(a.data(), n * 2, MPI_COMM_WORLD), tag + " allreduce identical on all ranks");
  if (p == 2 && lossless) CHECK(same_bits(a, want), tag + " allreduce is the rounded float sum, bit for bit");
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(double(static_cast<float>(a[i])) - exact[i]));
  CHECK(worst <= tol, tag + " allreduce error " + std::to_string(worst) + " > " + std::to_string(tol));
  if (!raw) CHECK(hx.counters().wire_bytes > 0, tag + " frames were sent");

  // with error feedback: host and host-check keep the same residual
  if (!lossless) {
    std::vector<H> e(n, H(0.0f)), ed(n, H(0.0f)), c1 = data_of<H>(r, n), c2 = c1;
    alg::allreduce(hx, cfg, std::span<H>(c1), e.data());
    alg::allreduce(dx, cfg, std::span<H>(c2), ed.data());
    CHECK(same_bits(c1, c2) && same_bits(e, ed), tag + " error feedback host == host_check");
  }

  // reduce-scatter: block r of the sums; allgather: everyone's blocks
  const std::size_t m = n / static_cast<std::size_t>(p);
  std::vector<H> in = data_of<H>(r, m * p), rs(m), rs2(m);
  alg::reduce_scatter(hx, cfg, std::span<const H>(in), std::span<H>(rs));
  alg::reduce_scatter(dx, cfg, std::span<const H>(in), std::span<H>(rs2));
  CHECK(same_bits(rs, rs2), tag + " reduce_scatter host == host_check");
  if (p == 2 && lossless && m > 0) {
    std::vector<double> ex2;
    std::vector<H> want2;
    sums<H>(m * p, ex2, want2);
    CHECK(same_bits(rs, std::vector<H>(want2.begin() + r * m, want2.begin() + (r + 1) * m)),
          tag + " reduce_scatter is the rounded float sum");
  }
  std::vector<H> own = data_of<H>(r, m), ag(m * p), ag2(m * p);
  alg::allgather(hx, cfg, std::span<const H>(own), std::span<H>(ag));
  alg::allgather(dx, cfg, std::span<const H>(own), std::span<H>(ag2));
  CHECK(same_bits(ag, ag2), tag + " allgather host == host_check");
  CHECK(t::identical(ag.data(), ag.size() * 2, MPI_COMM_WORLD), tag + " allgather identical on all ranks");
  if (lossless) {
    bool all = true;
    for (int q = 0; q < p; ++q) {
      const auto theirs = data_of<H>(q, m);
      all = all && (m == 0 || std::memcmp(ag.data() + q * m, theirs.data(), m * 2) == 0);
    }
    CHECK(all, tag + " allgather holds every rank's values");
  }
  // point-to-point around the ring: send right, receive from the left
  {
    const int right = (r + 1) % p, left = (r + p - 1) % p;
    const std::vector<H> out = data_of<H>(r + 7, n);
    std::vector<H> a(n), b(n);
    auto sa = alg::isend(hx, cfg, std::span<const H>(out), right, 5);
    auto sb = alg::isend(dx, cfg, std::span<const H>(out), right, 5);
    alg::recv(hx, cfg, std::span<H>(a), left, 5);
    alg::recv(dx, cfg, std::span<H>(b), left, 5);
    sa.wait();
    sb.wait();
    CHECK(same_bits(a, b), tag + " send/recv host == host_check");
    if (lossless) CHECK(same_bits(a, data_of<H>(left + 7, n)), tag + " send/recv delivers the sender's bits");
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  try {
    for (std::size_t n : {std::size_t{1}, std::size_t{301}, std::size_t{5001}})
      for (const char* spec : {"none", "mpc", "mpc:1", "zfp:8", "zfp:16"})
        for (bool raw : {false, true}) {
          if (raw && std::string(spec) != "none") continue;  // one uncompressed path is enough
          run<hcomm::bf16>(spec, n, raw);
          run<hcomm::f16>(spec, n, raw);
        }
    {  // a receiver of the other 16-bit type: mismatch, whatever the codec
      alg::options opt;
      opt.threshold_bytes = 0;
      for (const char* spec : {"none", "mpc", "zfp:16"}) {
        host_cx cx(MPI_COMM_WORLD, opt, "h16 mismatch");
        cx.keep_comm_alive();
        const int p = t::world_size(), r = t::world_rank();
        const auto cfg = hcomm::codec::parse_config(spec);
        const std::vector<hcomm::bf16> out = data_of<hcomm::bf16>(r, 300);
        std::vector<hcomm::f16> in(300);
        auto s = alg::isend(cx, cfg, std::span<const hcomm::bf16>(out), (r + 1) % p, 6);
        EXPECT_ERROR(alg::recv(cx, cfg, std::span<hcomm::f16>(in), (r + p - 1) % p, 6), hcomm::errc::mismatch, "bf16",
                     std::string("f16 receive of a bf16 message, ") + spec);
        s.wait();
      }
    }
    {  // the typed communicators on 16-bit spans
      using tp_comm = hcomm::communicator<hcomm::ParallelAxis<hcomm::TP>, hcomm::Compressor<hcomm::Lossless>>;
      using pp_comm = hcomm::communicator<hcomm::ParallelAxis<hcomm::PP>, hcomm::Compressor<hcomm::Lossless>>;
      const int p = t::world_size(), r = t::world_rank();
      tp_comm tp(MPI_COMM_WORLD);
      pp_comm pp(MPI_COMM_WORLD);
      host_cx hx(MPI_COMM_WORLD, alg::options{}, "h16 typed");
      std::vector<hcomm::bf16> x = data_of<hcomm::bf16>(r, 4000), y = x;
      tp.allreduce(std::span<hcomm::bf16>(x));
      alg::allreduce(hx, tp_comm::config(), std::span<hcomm::bf16>(y));
      CHECK(same_bits(x, y), "typed TP communicator: bf16 allreduce as the algorithm's");
      const std::vector<hcomm::f16> out = data_of<hcomm::f16>(r, 2500);
      std::vector<hcomm::f16> in(2500);
      auto s = pp.isend(std::span<const hcomm::f16>(out), (r + 1) % p, 9);
      pp.recv(std::span<hcomm::f16>(in), (r + p - 1) % p, 9);
      s.wait();
      CHECK(same_bits(in, data_of<hcomm::f16>((r + p - 1) % p, 2500)), "typed PP communicator: f16 send/recv");
    }
    // The codecs that take no 16-bit values say so.
    host_cx hx(MPI_COMM_WORLD, alg::options{}, "h16");
    std::vector<hcomm::bf16> v(8, hcomm::bf16(1.0f));
    EXPECT_ERROR(alg::allreduce(hx, hcomm::codec::config{hcomm::codec_id::int8, hcomm::dtype::bf16, 256, true},
                                std::span<hcomm::bf16>(v)),
                 hcomm::errc::invalid_argument, "does not take bf16 values", "int8 on bf16");
  } catch (const hcomm::error& e) {
    CHECK(false, std::string("unexpected hcomm::error: ") + e.what());
  }
  return t::finish("16-bit ring collectives");
}
