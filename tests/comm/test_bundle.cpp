// A bundle per registered scheme on a DP x PP x TP grid, used the way the GPT trainer uses
// it: TP allreduce and allgather, PP send/recv between neighbouring stages, DP allreduce and
// broadcast; results checked against float64 references, identical within each group, stats
// counted per axis. Grid from argv: test_bundle DP PP TP.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hcomm/comm/bundle.hpp"
#include "hcomm/comm/registry.hpp"
#include "mpi_check.hpp"

namespace {
float val(int who, std::size_t i) { return static_cast<float>(std::sin(0.01 * i + who) + 0.1 * who); }

template <class S>
void exercise(const hcomm::grid& g) {
  const std::string name = S::name();
  hcomm::comm_options o;
  o.threshold_bytes = 0;  // compress even these small test messages
  o.segment_bytes = 8192;
  hcomm::bundle<S> b(g, o);
  using tp_c = typename S::template compressor<hcomm::TP>;
  using dp_c = typename S::template compressor<hcomm::DP>;
  using pp_c = typename S::template compressor<hcomm::PP>;
  auto tol = [](auto c, double scale, int hops) {
    using C = decltype(c);
    if constexpr (C::is_lossless) return 1e-6 * scale * hops;
    else return std::ldexp(1.0, 4 - static_cast<int>(C::param)) * scale * hops;
  };
  const std::size_t n = 5000;

  // TP allreduce
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = val(g.tp_rank(), i);
  b.tp().allreduce(std::span<float>(x));
  double err = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double ref = 0;
    for (int q = 0; q < g.tp_size(); ++q) ref += val(q, i);
    err = std::max(err, std::fabs(x[i] - ref));
  }
  CHECK(err <= tol(tp_c{}, 1.5 * g.tp_size(), g.tp_size()), name + " tp allreduce error " + std::to_string(err));
  CHECK(t::identical(x.data(), n * 4, g.comm(hcomm::axis_id::tp)), name + " tp identical");

  // TP allgather
  std::vector<float> part(1000), all(1000 * g.tp_size());
  for (std::size_t i = 0; i < part.size(); ++i) part[i] = val(g.tp_rank(), i);
  b.tp().allgather(std::span<const float>(part), std::span<float>(all));
  err = 0;
  for (int q = 0; q < g.tp_size(); ++q)
    for (std::size_t i = 0; i < part.size(); ++i) err = std::max(err, double(std::fabs(all[q * 1000 + i] - val(q, i))));
  CHECK(err <= tol(tp_c{}, 1.5, 1), name + " tp allgather error " + std::to_string(err));

  // PP: activations forward to next_stage, gradients backward
  std::vector<float> act(n), got(n);
  for (std::size_t i = 0; i < n; ++i) act[i] = val(g.pp_rank() * 7, i);
  if (g.next_stage() >= 0) b.pp().send(std::span<const float>(act), g.next_stage(), 1);
  if (g.prev_stage() >= 0) {
    b.pp().recv(std::span<float>(got), g.prev_stage(), 1);
    err = 0;
    for (std::size_t i = 0; i < n; ++i) err = std::max(err, double(std::fabs(got[i] - val((g.pp_rank() - 1) * 7, i))));
    CHECK(err <= tol(pp_c{}, 1.5, 1), name + " pp forward error " + std::to_string(err));
    if constexpr (pp_c::is_lossless)
      CHECK(std::equal(got.begin(), got.end(), std::vector<float>([&] {
              std::vector<float> r(n);
              for (std::size_t i = 0; i < n; ++i) r[i] = val((g.pp_rank() - 1) * 7, i);
              return r;
            }()).begin()),
            name + " pp lossless is exact");
    auto req = b.pp().isend(std::span<const float>(got), g.prev_stage(), 2);  // gradient back
    req.wait();
  }
  if (g.next_stage() >= 0) {
    auto req = b.pp().irecv(std::span<float>(got), g.next_stage(), 2);
    req.wait();
    err = 0;
    for (std::size_t i = 0; i < n; ++i) err = std::max(err, double(std::fabs(got[i] - act[i])));
    CHECK(err <= tol(pp_c{}, 1.5, 2), name + " pp backward error " + std::to_string(err));
  }

  // DP allreduce (gradients) and broadcast (parameters)
  for (std::size_t i = 0; i < n; ++i) x[i] = val(g.dp_rank(), i) * 1e-2f;
  b.dp().allreduce(std::span<float>(x));
  err = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double ref = 0;
    for (int q = 0; q < g.dp_size(); ++q) ref += val(q, i) * 1e-2f;
    err = std::max(err, std::fabs(x[i] - ref));
  }
  CHECK(err <= tol(dp_c{}, 0.015 * g.dp_size(), g.dp_size()), name + " dp allreduce error " + std::to_string(err));
  CHECK(t::identical(x.data(), n * 4, g.comm(hcomm::axis_id::dp)), name + " dp identical");
  for (std::size_t i = 0; i < n; ++i) x[i] = val(g.dp_rank() + 3, i);
  b.dp().broadcast(std::span<float>(x), 0);
  CHECK(t::identical(x.data(), n * 4, g.comm(hcomm::axis_id::dp)), name + " dp broadcast identical");

  // Per-axis accounting
  const auto sd = b.dp().stats(), st = b.tp().stats(), sp = b.pp().stats();
  if (g.dp_size() > 1) CHECK(sd.raw_bytes > 0 && sd.calls == 2, name + " dp stats");
  if (g.tp_size() > 1) CHECK(st.raw_bytes > 0 && st.calls == 2, name + " tp stats");
  if (g.pp_size() > 1) CHECK(sp.calls >= 1 && sp.wire_bytes > 0, name + " pp stats");
  if constexpr (!dp_c::is_lossless)
    if (g.dp_size() > 1) CHECK(sd.wire_bytes < sd.raw_bytes, name + " dp compresses");
  b.reset_stats();
  CHECK(b.dp().stats().raw_bytes == 0 && b.tp().stats().calls == 0, name + " reset_stats");
  if (t::world_rank() == 0) std::printf("  %s ok\n", name.c_str());
}
// compress_inside_node = false: every axis of a one-node job (as mpiexec runs this test) sends
// raw, so ZHybrid's lossy sums are MPI's exact ones; true compresses as before. A value that
// differs across ranks is errc::mismatch at construction, on every rank.
void inside_node(const hcomm::grid& g) {
  using S = hcomm::scheme::zhybrid<16, 8>;
  hcomm::comm_options o;
  o.threshold_bytes = 0;
  o.compress_inside_node = false;
  hcomm::bundle<S> b(g, o);
  CHECK(b.dp().raw_inside_node() && b.pp().raw_inside_node() && b.tp().raw_inside_node(),
        "inside-node off on one node: every axis raw");
  const std::size_t n = 5000;
  for (auto axis : {hcomm::axis_id::dp, hcomm::axis_id::tp}) {
    std::vector<float> x(n), ref(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = ref[i] = val(t::world_rank(), i);
    MPI_Allreduce(MPI_IN_PLACE, ref.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, g.comm(axis));
    if (axis == hcomm::axis_id::dp) b.dp().allreduce(std::span<float>(x));
    else b.tp().allreduce(std::span<float>(x));
    CHECK(x == ref, std::string("inside-node off: ") + (axis == hcomm::axis_id::dp ? "dp" : "tp") +
                        " allreduce is MPI's exact sum");
  }
  const auto sd = b.dp().stats(), st = b.tp().stats();
  if (g.dp_size() > 1) CHECK(sd.wire_bytes == sd.raw_bytes && sd.raw_bytes > 0, "inside-node off: dp sent raw");
  if (g.tp_size() > 1) CHECK(st.wire_bytes == st.raw_bytes && st.raw_bytes > 0, "inside-node off: tp sent raw");
  if (g.pp_rank() + 1 < g.pp_size()) {
    std::vector<float> act(n);
    for (std::size_t i = 0; i < n; ++i) act[i] = val(t::world_rank(), i);
    b.pp().send(std::span<const float>(act), g.next_stage(), 0);
  }
  if (g.pp_rank() > 0) {
    std::vector<float> got(n), want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = val(g.prev_stage(), i);
    b.pp().recv(std::span<float>(got), g.prev_stage(), 0);
    CHECK(got == want, "inside-node off: pp message arrives exact");
  }
  o.compress_inside_node = true;
  hcomm::bundle<S> on(g, o);
  CHECK(!on.dp().raw_inside_node() && !on.tp().raw_inside_node(), "inside-node on: compressed");

  // Differing across the ranks of a communicator: all of them throw errc::mismatch.
  o.compress_inside_node = t::world_rank() != 0;
  bool threw = false;
  try {
    hcomm::runtime_communicator bad(MPI_COMM_WORLD, "zfp:8", o);
  } catch (const hcomm::error& e) {
    threw = e.code() == hcomm::errc::mismatch && std::string(e.what()).find("compress_inside_node differs") !=
                                                     std::string::npos;
    if (!threw) CHECK(false, std::string("inside-node mismatch: wrong error: ") + e.what());
  }
  CHECK(threw, "inside-node differing across ranks: errc::mismatch on every rank");
  if (t::world_rank() == 0) std::printf("  compress_inside_node ok\n");
}
// axis_options: TP uncompressed by name (its sums MPI's exact ones, its bytes sent raw) while
// DP and PP keep the scheme (fewer bytes sent than raw).
void per_axis(const hcomm::grid& g) {
  using S = hcomm::scheme::zhybrid<16, 8>;
  hcomm::comm_options o;
  o.threshold_bytes = 0;
  hcomm::bundle<S> b(g, hcomm::axis_options(o).uncompressed(hcomm::axis_id::tp));
  const std::size_t n = 5000;
  std::vector<float> x(n), ref(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = ref[i] = val(t::world_rank(), i);
  MPI_Allreduce(MPI_IN_PLACE, ref.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, g.comm(hcomm::axis_id::tp));
  b.tp().allreduce(std::span<float>(x));
  CHECK(x == ref, "axis_options: tp allreduce is MPI's exact sum");
  for (std::size_t i = 0; i < n; ++i) x[i] = val(t::world_rank(), i);
  b.dp().allreduce(std::span<float>(x));
  if (g.pp_rank() + 1 < g.pp_size()) b.pp().send(std::span<const float>(x), g.next_stage(), 0);
  if (g.pp_rank() > 0) {
    std::vector<float> got(n);
    b.pp().recv(std::span<float>(got), g.prev_stage(), 0);
  }
  const auto sd = b.dp().stats(), st = b.tp().stats(), sp = b.pp().stats();
  if (g.tp_size() > 1) CHECK(st.wire_bytes == st.raw_bytes && st.raw_bytes > 0, "axis_options: tp sent raw");
  if (g.dp_size() > 1) CHECK(sd.wire_bytes < sd.raw_bytes, "axis_options: dp compressed");
  if (g.pp_rank() + 1 < g.pp_size()) CHECK(sp.wire_bytes < sp.raw_bytes, "axis_options: pp compressed");
  if (t::world_rank() == 0) std::printf("  axis_options ok\n");
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc < 4) {
    std::fprintf(stderr, "usage: test_bundle DP PP TP\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  hcomm::grid g(std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3]));
  for (const char* name : {"none", "naive:8", "mzhybrid:8", "zhybrid:16,8", "zhybrid:16,6+ef"})
    hcomm::dispatch_scheme(name, [&]<class S>() { exercise<S>(g); });
  inside_node(g);
  per_axis(g);
  return t::finish("test_bundle");
}
