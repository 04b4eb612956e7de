// The typed communicators on a device executor: device_communicator<exec::host_check,
// transport::mpi_staged, policies...> (device code paths, frames through host staging) must
// give bitwise what communicator<policies...> gives on the host: DP with ZFP rate 8 and error
// feedback (allreduce twice, reduce_scatter, allgather, broadcast, residuals), TP with MPC,
// PP with ZFP rate 16 (send/recv around the ring); the exact TP sum and gather equal MPI's;
// device_bundle<S> equals bundle<S> on a grid; device_span takes no host containers.
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hcomm/comm/bundle.hpp"
#include "hcomm/comm/device_bundle.hpp"
#include "hcomm/comm/device_communicator.hpp"
#include "hcomm/exec/host_check.hpp"
#include "hcomm/transport/mpi_staged.hpp"
#include "mpi_check.hpp"

namespace {

using hcomm::device_span;
using dp_policies = hcomm::communicator<hcomm::ParallelAxis<hcomm::DP>, hcomm::Compressor<hcomm::Lossy<8>>,
                                        hcomm::ErrorFeedback>;
template <class... P>
using dev = hcomm::device_communicator<hcomm::exec::host_check, hcomm::transport::mpi_staged, P...>;
using dp_dev = dev<hcomm::ParallelAxis<hcomm::DP>, hcomm::Compressor<hcomm::Lossy<8>>, hcomm::ErrorFeedback>;
using tp_host = hcomm::communicator<hcomm::ParallelAxis<hcomm::TP>, hcomm::Compressor<hcomm::Lossless>>;
using tp_dev = dev<hcomm::ParallelAxis<hcomm::TP>, hcomm::Compressor<hcomm::Lossless>>;
using pp_host = hcomm::communicator<hcomm::ParallelAxis<hcomm::PP>, hcomm::Compressor<hcomm::Lossy<16>>>;
using pp_dev = dev<hcomm::ParallelAxis<hcomm::PP>, hcomm::Compressor<hcomm::Lossy<16>>>;

// A host container does not convert to a device span (the compile-time half of the mix-up check).
static_assert(!std::is_convertible_v<std::span<float>, device_span<float>>);
static_assert(!std::is_convertible_v<std::vector<float>&, device_span<float>>);
static_assert(std::is_convertible_v<device_span<float>, device_span<const float>>);
static_assert(!std::is_convertible_v<device_span<const float>, device_span<float>>);
template <class C>
concept can_allreduce_host_span = requires(C& c, std::span<float> s) { c.allreduce(s); };
static_assert(!can_allreduce_host_span<dp_dev>);
static_assert(can_allreduce_host_span<dp_policies>);

std::vector<float> data_of(int rank, std::size_t n, int salt) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(std::sin(0.002 * double(i) + rank + salt) * (1.0 + 0.25 * rank));
  return x;
}
bool same(const float* a, const float* b, std::size_t n) { return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0; }
template <class T>
device_span<T> dspan(std::vector<T>& v) {
  return {v.data(), v.size()};
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  try {
    const int p = t::world_size(), r = t::world_rank();
    hcomm::comm_options opt;
    opt.threshold_bytes = 0;
    opt.segment_bytes = 4096;
    const std::size_t m = 3001, n = m * static_cast<std::size_t>(p);
    {
      dp_policies h(MPI_COMM_WORLD, opt);
      dp_dev d(MPI_COMM_WORLD, opt);
      std::vector<float> a = data_of(r, n, 1), b = a;
      for (int step = 0; step < 2; ++step) {
        h.allreduce(std::span<float>(a));
        d.allreduce(dspan(b));
        CHECK(same(a.data(), b.data(), n), "dp allreduce step " + std::to_string(step));
        const auto hr = h.residual<float>();
        const auto dr = d.residual<float>();
        CHECK(hr.size() == dr.size() && same(hr.data(), dr.data(), hr.size()), "dp residual step " + std::to_string(step));
      }
      CHECK(t::identical(b.data(), n * sizeof(float), MPI_COMM_WORLD), "dp allreduce on all ranks");
      h.reset_residual();
      d.reset_residual();
      std::vector<float> in = data_of(r, n, 2), oa(m), ob(m);
      h.reduce_scatter(std::span<const float>(in), std::span<float>(oa));
      d.reduce_scatter(dspan(in), dspan(ob));
      CHECK(same(oa.data(), ob.data(), m), "dp reduce_scatter");
      std::vector<float> g = data_of(r, m, 3), ga(n), gb(n);
      h.allgather(std::span<const float>(g), std::span<float>(ga));
      d.allgather(device_span<const float>(g.data(), m), dspan(gb));
      CHECK(same(ga.data(), gb.data(), n), "dp allgather");
      std::vector<float> w = data_of(r, n, 4), wb = w;
      h.broadcast(std::span<float>(w), 0);
      d.broadcast(dspan(wb), 0);
      CHECK(same(w.data(), wb.data(), n), "dp broadcast");
      CHECK(h.stats().wire_bytes == d.stats().wire_bytes, "dp wire bytes");
    }
    {
      tp_host h(MPI_COMM_WORLD, opt);
      tp_dev d(MPI_COMM_WORLD, opt);
      std::vector<float> a = data_of(r, n, 5), b = a;
      h.allreduce(std::span<float>(a));
      d.allreduce(dspan(b));
      CHECK(same(a.data(), b.data(), n), "tp allreduce");
      // exact whatever the codec: MPI's own sum and gather, bitwise
      std::vector<float> e = data_of(r, n, 7), f = e, ref = e;
      MPI_Allreduce(MPI_IN_PLACE, ref.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      h.allreduce_exact(std::span<float>(e));
      d.allreduce_exact(dspan(f));
      CHECK(same(e.data(), ref.data(), n) && same(f.data(), ref.data(), n), "tp allreduce_exact");
      std::vector<float> g = data_of(r, m, 8), ga(n), gb(n);
      MPI_Allgather(g.data(), static_cast<int>(m), MPI_FLOAT, ga.data(), static_cast<int>(m), MPI_FLOAT, MPI_COMM_WORLD);
      d.allgather_exact(device_span<const float>(g.data(), m), dspan(gb));
      CHECK(same(ga.data(), gb.data(), n), "tp allgather_exact");
    }
    {
      pp_host h(MPI_COMM_WORLD, opt);
      pp_dev d(MPI_COMM_WORLD, opt);
      std::vector<float> x = data_of(r, n, 6), a(n), b(n);
      const int right = (r + 1) % p, left = (r + p - 1) % p;
      auto sh = h.isend(std::span<const float>(x), right, 3);
      auto sd = d.isend(dspan(x), right, 3);
      h.recv(std::span<float>(a), left, 3);
      d.recv(dspan(b), left, 3);
      sh.wait();
      sd.wait();
      CHECK(same(a.data(), b.data(), n), "pp send/recv");
    }
    {
      // device_bundle<S>: bundle<S>'s axes and peers, on the executor (even ranks: dp 2 x tp p/2)
      if (p % 2 == 0) {
        using S = hcomm::scheme::zhybrid<16, 8>;
        hcomm::grid g(2, 1, p / 2);
        hcomm::bundle<S> h(g, opt);
        hcomm::device_bundle<S, hcomm::exec::host_check, hcomm::transport::mpi_staged> d(g, opt);
        static_assert(std::is_same_v<decltype(d)::dp_comm,
                                     dev<hcomm::ParallelAxis<hcomm::DP>, hcomm::Compressor<hcomm::Lossy<8>>>>);
        std::vector<float> a = data_of(r, n, 9), b = a, c = data_of(r, n, 10), e = c;
        h.dp().allreduce(std::span<float>(a));
        d.dp().allreduce(dspan(b));
        CHECK(same(a.data(), b.data(), n), "device_bundle dp allreduce");
        h.tp().allreduce(std::span<float>(c));
        d.tp().allreduce(dspan(e));
        CHECK(same(c.data(), e.data(), n), "device_bundle tp allreduce");
        CHECK(h.dp().stats().wire_bytes == d.dp().stats().wire_bytes && d.tp().size() == p / 2 && d.pp().size() == p,
              "device_bundle stats and axis sizes");
      }
    }
  } catch (const hcomm::error& e) {
    CHECK(false, std::string("unexpected hcomm::error: ") + e.what());
  }
  return t::finish("device communicator");
}
