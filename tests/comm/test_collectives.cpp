// Compressed collectives and point-to-point against a float64 reference, on every rank.
//   lossless (none through hcomm's ring, none through MPI, mpc): within float rounding of the
//   float64 sum, and mpc bitwise equal to the uncompressed ring (same summation order);
//   lossy (zfp:R): within the rate's bound on smooth data;
//   always: bitwise identical on all ranks (allreduce, allgather, broadcast).
// Sizes cover 0, 1, fewer values than ranks, values not a multiple of 4, several segments.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <string>
#include <vector>

#include "hcomm/comm/communicator.hpp"
#include "mpi_check.hpp"

namespace {

// Smooth data (what ZFP's bound is about): a slow wave per rank plus a ramp.
template <class T>
T value(int rank, std::size_t i, std::size_t n) {
  const double x = static_cast<double>(i) / static_cast<double>(std::max<std::size_t>(n, 1));
  return static_cast<T>(std::sin(0.002 * static_cast<double>(i) + rank) * (1.0 + 0.25 * rank) + 0.5 * x - 0.1 * rank);
}

struct setting {
  std::string codec;
  bool native;  // uncompressed collectives through MPI's own
  std::size_t threshold;
  int idle_sleep_us = -1;  // comm_options::idle_sleep_us: -1 auto, 0 MPI_Wait, -2 test-and-yield, N test-and-sleep
};

// Error bound of one ZFP fixed-rate compression relative to the block's largest magnitude, as
// the tests use it: 2^(1 - (R - 3)) — about R - 3 bit planes per value survive the 1-D block
// header (9 bits / 4 values), minus 1 bit for the lifting transform's gain. Smooth data does
// much better; this bound has to catch a broken ring, not describe the codec.
double zfp_rel_bound(unsigned rate) { return std::ldexp(1.0, 4 - static_cast<int>(rate)); }

template <class T>
double eps() {
  return std::is_same_v<T, float> ? 1.2e-7 : 2.3e-16;
}

template <class T>
void run(const setting& s, std::size_t n, std::vector<T>& ring_none_result) {
  const int p = t::world_size(), r = t::world_rank();
  hcomm::comm_options opt;
  opt.threshold_bytes = s.threshold;
  opt.segment_bytes = 4096;  // several segments per chunk at these sizes
  opt.native_uncompressed = s.native;
  opt.idle_sleep_us = s.idle_sleep_us;
  hcomm::runtime_communicator comm(MPI_COMM_WORLD, s.codec, opt);
  const auto cfg = comm.config();
  const bool lossy = cfg.codec == hcomm::codec_id::zfp;
  const double rel = lossy ? zfp_rel_bound(cfg.param) : 0.0;
  const std::string tag = s.codec + (s.native ? "/native" : "/ring") + (s.idle_sleep_us == -1 ? "" : s.idle_sleep_us == -2 ? "/yield" : s.idle_sleep_us ? "/sleep" : "/mpi_wait") +
                          " n=" + std::to_string(n) +
                          (std::is_same_v<T, float> ? " f32" : " f64");
  // How the context waits: -2 yields, N > 0 sleeps N us, 0 is MPI_Wait, and auto (-1) yields
  // exactly when more ranks share this host than it has CPUs.
  {
    const int sharing = hcomm::mpi::ranks_sharing_this_host(MPI_COMM_WORLD);
    const unsigned want = s.idle_sleep_us == -2 ? hcomm::mpi::yield_between_tests
                          : s.idle_sleep_us >= 0 ? static_cast<unsigned>(s.idle_sleep_us)
                          : sharing > hcomm::mpi::online_cpus() ? hcomm::mpi::yield_between_tests
                                                                : 0u;
    CHECK(comm.context().idle_sleep_us() == want, tag + " waits as asked (" + std::to_string(sharing) + " ranks on " +
                                                      std::to_string(hcomm::mpi::online_cpus()) + " CPUs)");
  }

  // --- allreduce ---
  std::vector<T> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = value<T>(r, i, n);
  comm.allreduce(std::span<T>(x));
  double max_err = 0, max_abs = 0;
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) {
    double ref = 0, mag = 0;
    for (int q = 0; q < p; ++q) {
      ref += static_cast<double>(value<T>(q, i, n));
      mag += std::fabs(static_cast<double>(value<T>(q, i, n)));
    }
    const double err = std::fabs(static_cast<double>(x[i]) - ref);
    max_err = std::max(max_err, err);
    max_abs = std::max(max_abs, mag);
    if (!lossy && err > p * eps<T>() * mag + 1e-30) ok = false;
  }
  // Lossy: p compressions touch each chunk (p-1 partial sums + the owner's), each within rel of
  // the largest partial magnitude, which is at most max_abs.
  if (lossy) ok = max_err <= p * rel * max_abs;
  CHECK(ok, tag + " allreduce max error " + std::to_string(max_err) + " (scale " + std::to_string(max_abs) + ")");
  CHECK(t::identical(x.data(), x.size() * sizeof(T), MPI_COMM_WORLD), tag + " allreduce identical on all ranks");
  if (s.codec == "none" && !s.native) ring_none_result = x;
  if (s.codec.rfind("mpc", 0) == 0 && s.threshold == 0 && ring_none_result.size() == n)
    CHECK(std::equal(x.begin(), x.end(), ring_none_result.begin()), tag + " mpc ring == uncompressed ring bitwise");
  if (lossy && n > 0 && r == 0)
    std::printf("  %s allreduce max error %.3g relative to %.3g (bound %.3g)\n", tag.c_str(), max_err / max_abs,
                max_abs, p * rel);

  // --- reduce_scatter: in = p blocks of m ---
  const std::size_t m = n / static_cast<std::size_t>(p) + 1;
  std::vector<T> in(m * p), out(m, T(-7));
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = value<T>(r, i, in.size());
  comm.reduce_scatter(std::span<const T>(in), std::span<T>(out));
  ok = true;
  max_err = 0;
  for (std::size_t j = 0; j < m; ++j) {
    const std::size_t i = r * m + j;
    double ref = 0, mag = 0;
    for (int q = 0; q < p; ++q) {
      ref += value<T>(q, i, in.size());
      mag += std::fabs(static_cast<double>(value<T>(q, i, in.size())));
    }
    const double err = std::fabs(out[j] - ref);
    max_err = std::max(max_err, err);
    if (err > (lossy ? p * rel * mag * 4 : p * eps<T>() * mag + 1e-30)) ok = false;
  }
  CHECK(ok, tag + " reduce_scatter max error " + std::to_string(max_err));

  // --- allgather: every rank contributes m values ---
  std::vector<T> mine(m), all(m * p, T(-7));
  for (std::size_t i = 0; i < m; ++i) mine[i] = value<T>(r, i, m);
  comm.allgather(std::span<const T>(mine), std::span<T>(all));
  ok = true;
  for (int q = 0; q < p; ++q)
    for (std::size_t i = 0; i < m; ++i) {
      const double ref = value<T>(q, i, m), got = all[q * m + i];
      if (lossy ? std::fabs(got - ref) > rel * 2.5 : got != ref) ok = false;
    }
  CHECK(ok, tag + " allgather values");
  CHECK(t::identical(all.data(), all.size() * sizeof(T), MPI_COMM_WORLD), tag + " allgather identical");

  // --- broadcast from the last rank ---
  std::vector<T> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = value<T>(r, i, n);
  comm.broadcast(std::span<T>(b), p - 1);
  ok = true;
  for (std::size_t i = 0; i < n; ++i) {
    const double ref = value<T>(p - 1, i, n);
    if (lossy ? std::fabs(b[i] - ref) > rel * 2.5 : b[i] != static_cast<T>(ref)) ok = false;
  }
  CHECK(ok, tag + " broadcast values");
  CHECK(t::identical(b.data(), b.size() * sizeof(T), MPI_COMM_WORLD), tag + " broadcast identical");

  // --- point-to-point around the ring: isend right, recv from left ---
  std::vector<T> snd(n), rcv(n, T(-7));
  for (std::size_t i = 0; i < n; ++i) snd[i] = value<T>(r, i, n);
  {
    auto req = comm.isend(std::span<const T>(snd), (r + 1) % p, 11);
    comm.recv(std::span<T>(rcv), (r + p - 1) % p, 11);
    req.wait();
  }
  ok = true;
  for (std::size_t i = 0; i < n; ++i) {
    const double ref = value<T>((r + p - 1) % p, i, n);
    if (lossy ? std::fabs(rcv[i] - ref) > rel * 2.5 : rcv[i] != static_cast<T>(ref)) ok = false;
  }
  CHECK(ok, tag + " p2p values");

  const auto st = comm.stats();
  if (n * sizeof(T) >= s.threshold && n >= static_cast<std::size_t>(p) * 16 && p > 1) {
    CHECK(st.raw_bytes > 0 && st.wire_bytes > 0, tag + " stats count bytes");
    if (lossy) CHECK(st.wire_bytes * 1.5 < st.raw_bytes, tag + " lossy frames are smaller than raw");
  }
  CHECK(st.calls >= 5, tag + " stats count calls");
}

// Point-to-point and broadcast with ZFP frames that carry long non-finite side lists (zfp:8,
// many NaN/Inf). Point-to-point: two messages with the same tag are received into two requests
// that are waited on in reverse order (MPI matched them in posting order), and a third request
// is dropped without wait() (its transfers still complete). Broadcast: the frames travel end
// to end in a buffer sized from their real sizes, so frames several times the typical size
// must arrive whole and in place.
void nonfinite_p2p_and_broadcast(hcomm::runtime_communicator& comm) {
  const int p = t::world_size(), r = t::world_rank();
  if (p < 2) return;
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  const std::size_t n = 9000;  // 9 segments of 1024 floats, the first 3 with NaN/Inf
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // Message m of rank q: smooth, with non-finite values in the first segments only.
  auto make = [&](int q, int m) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = value<float>(q, i, n) * static_cast<float>(m + 1);
      if (i < 3000 && i % (2 + m) == 0) v[i] = (i / 7) % 2 ? inf : nan;
    }
    return v;
  };
  auto matches = [&](const std::vector<float>& got, int q, int m) {
    const auto ref = make(q, m);
    const double rel = zfp_rel_bound(8) * 2.5 * (m + 1);
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isnan(ref[i]) ? !std::isnan(got[i]) : std::isinf(ref[i]) ? got[i] != ref[i]
                                                                           : std::fabs(got[i] - ref[i]) > rel)
        return false;
    }
    return true;
  };
  const std::string tag = "zfp:8 NaN/Inf-heavy frames, " + std::to_string(p) + " ranks:";
  const auto a = make(r, 0), b = make(r, 1), c = make(r, 2);
  std::vector<float> ga(n, -7.f), gb(n, -7.f), gc(n, -7.f);
  {
    auto sa = comm.isend(std::span<const float>(a), right, 21);
    auto sb = comm.isend(std::span<const float>(b), right, 21);
    auto sc = comm.isend(std::span<const float>(c), right, 22);
    auto ra = comm.irecv(std::span<float>(ga), left, 21);
    auto rb = comm.irecv(std::span<float>(gb), left, 21);
    {
      auto rc = comm.irecv(std::span<float>(gc), left, 22);  // dropped: transfers complete, no decode
    }
    rb.wait();
    ra.wait();
    sa.wait();
    sb.wait();
    sc.wait();
  }
  CHECK(matches(ga, left, 0), tag + " p2p first message (waited on second)");
  CHECK(matches(gb, left, 1), tag + " p2p second message (waited on first)");

  std::vector<float> bc = make(r, 0);
  comm.broadcast(std::span<float>(bc), p - 1);
  CHECK(matches(bc, p - 1, 0), tag + " broadcast values and NaN/Inf places");
  CHECK(t::identical(bc.data(), n * sizeof(float), MPI_COMM_WORLD), tag + " broadcast identical on all ranks");
}

// ZFP frames with many non-finite values outgrow the ring's slots (sized for the typical
// frame) and travel as two messages: NaN/Inf must come back where they were, the finite values
// within the rate's bound, every rank identical. Every 3rd value is +Inf on rank 0 in the
// first half, every 5th NaN on the last rank in the second half; the rest smooth.
// allreduce_exact / allgather_exact never compress, whatever the codec and threshold: sums of
// whole numbers (exact in float in any order) of a spread that ZFP at rate 4 would round, and
// a gather of every rank's bits.
void exact_paths() {
  const int p = t::world_size(), r = t::world_rank();
  hcomm::comm_options opt;
  opt.threshold_bytes = 0;
  hcomm::runtime_communicator comm(MPI_COMM_WORLD, "zfp:4", opt);
  const std::size_t n = 1000;
  std::vector<float> x(n), want(n, 0.f), mine(n), all(n * static_cast<std::size_t>(p));
  for (std::size_t i = 0; i < n; ++i) {
    for (int q = 0; q < p; ++q) want[i] += static_cast<float>(((i * 37 + static_cast<std::size_t>(q)) % 1001) * (i % 3 ? 1 : 4096));
    x[i] = static_cast<float>(((i * 37 + static_cast<std::size_t>(r)) % 1001) * (i % 3 ? 1 : 4096));
    mine[i] = 1.f / static_cast<float>(i + 3 + static_cast<std::size_t>(r));
  }
  comm.allreduce_exact(std::span<float>(x));
  CHECK(x == want, "allreduce_exact under zfp:4 gives the exact sums");
  comm.allgather_exact(std::span<const float>(mine), std::span<float>(all));
  bool same = true;
  for (int q = 0; q < p; ++q)
    for (std::size_t i = 0; i < n; ++i)
      same = same && all[static_cast<std::size_t>(q) * n + i] == 1.f / static_cast<float>(i + 3 + static_cast<std::size_t>(q));
  CHECK(same, "allgather_exact under zfp:4 gives every rank's values bit for bit");
}

void two_part_frames() {
  const int p = t::world_size(), r = t::world_rank();
  hcomm::comm_options opt;
  opt.threshold_bytes = 0;
  opt.segment_bytes = 4096;
  hcomm::runtime_communicator comm(MPI_COMM_WORLD, "zfp:8", opt);
  const std::size_t n = 40000;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = value<float>(r, i, n);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  auto is_inf_at = [&](std::size_t i) { return i < n / 2 && i % 3 == 0; };
  auto is_nan_at = [&](std::size_t i) { return i >= n / 2 && i % 5 == 0; };
  for (std::size_t i = 0; i < n; ++i) {
    if (r == 0 && is_inf_at(i)) x[i] = inf;
    if (r == p - 1 && is_nan_at(i)) x[i] = nan;
  }
  comm.allreduce(std::span<float>(x));
  bool places = true, finite_ok = true;
  double max_abs = 0, max_err = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double ref = 0;
    for (int q = 0; q < p; ++q) ref += value<double>(q, i, n);
    if (is_inf_at(i)) {
      places &= x[i] == inf;
    } else if (is_nan_at(i)) {
      places &= std::isnan(x[i]);
    } else {
      finite_ok &= std::isfinite(x[i]);
      max_abs = std::max(max_abs, std::fabs(ref));
      max_err = std::max(max_err, std::fabs(static_cast<double>(x[i]) - ref));
    }
  }
  const std::string tag = "zfp:8 two-part frames, " + std::to_string(p) + " ranks:";
  CHECK(places, tag + " NaN/Inf where they were");
  CHECK(finite_ok && max_err <= zfp_rel_bound(8) * max_abs * p,
        tag + " finite values within the bound, max error " + std::to_string(max_err));
  CHECK(t::identical(x.data(), n * sizeof(float), MPI_COMM_WORLD), tag + " identical on all ranks");
  // The side lists went over the wire: frames several times a typical slot (1280 bytes for
  // these 1024-value segments at rate 8), so the two-part path ran.
  const auto st = comm.stats();
  if (p > 1) CHECK(st.wire_bytes * 3 > st.raw_bytes, tag + " frames carry the side lists");
  nonfinite_p2p_and_broadcast(comm);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int p = t::world_size();
  std::vector<setting> settings = {
      {"none", false, 0},           // hcomm's ring with raw frames
      {"none", true, 0},            // MPI's collectives
      {"mpc", false, 0},            // lossless MPC through the ring
      {"mpc", false, 1u << 20},     // below the threshold: uncompressed path
      {"zfp:16", false, 0},
      {"zfp:8", false, 0},
      {"zfp:8", false, 0, 20},      // waits that test and sleep 20 us
      {"mpc", false, 0, 0},         // MPI_Wait (the others: auto, i.e. yields where ranks share cores)
      {"zfp:8", false, 0, -2},      // waits that test and yield the core
  };
  // p * E + 1 (E = values per 4096-byte segment: 1024 float, 512 double; doubles run at the
  // second): chunk 0 has one segment more than the others, so a ring step sends and receives
  // different segment counts.
  const std::size_t P = static_cast<std::size_t>(p);
  const std::vector<std::size_t> sizes = {0, 1, P - 1, 7, 1000, 12347, P * 1024 + 1, P * 512 + 1};
  // The uncompressed ring's result per size: mpc through the same ring must equal it bitwise.
  std::vector<std::vector<float>> none_f(sizes.size());
  std::vector<std::vector<double>> none_d(sizes.size());
  for (const auto& s : settings) {
    try {
      (void)hcomm::codec::parse_config(s.codec);
    } catch (const hcomm::error& e) {
      CHECK(false, s.codec + " is not available in this build: " + e.what());
      continue;
    }
    for (std::size_t idx = 0; idx < sizes.size(); ++idx) {
      const std::size_t n = sizes[idx];
      run<float>(s, n, none_f[idx]);
      if (n == 1000 || n == 7 || n == P * 512 + 1) run<double>(s, n, none_d[idx]);
    }
  }
  two_part_frames();
  exact_paths();
  return t::finish("test_collectives");
}
