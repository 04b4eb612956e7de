// hcomm-collective: one JSON object per measurement of a collective or point-to-point
// message, run under mpirun.
//
//   mpirun -n 4 hcomm-collective --op allreduce --codec zfp:8 --bytes 64M --iters 5
//   mpirun -n 4 hcomm-collective --op allreduce --bytes 64M --baseline      # MPI_Allreduce
//   mpirun -n 4 hcomm-collective --scheme zhybrid:16,8 --axis dp            # the scheme's DP codec
//   mpirun -n 2 hcomm-collective                                            # quick default sweep
//
// Fields: op, codec (or "mpi" for --baseline), scheme (when given), bytes (per rank message),
// ranks, seconds (median over iterations of the slowest rank), min_seconds, algbw_gbs
// (bytes / seconds), wire_bytes and raw_bytes (per iteration, summed over ranks), ratio,
// max_error (against a float64 reference computed from every rank's input), rel_error
// (max_error / largest reference magnitude), codec_seconds (slowest rank's encode+decode time
// in the last iteration), identical (every rank holds the same bytes;
// null where ranks hold different results), data, threshold, segment, idle_sleep_us and
// idle_wait_us (asked / resolved), validate (the per-collective cross-rank check, on unless
// --no-validate), round (0-based, with --rounds N), threads and threads_source (rank 0's
// host thread count, hcomm::exec::default_threads(), and why).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hcomm/hcomm.hpp"

namespace {

struct args {
  std::vector<std::string> ops;
  std::vector<std::string> codecs;
  std::string scheme, axis = "dp", data = "smooth";
  std::vector<std::size_t> bytes;
  int iters = 5, warmup = 1;
  int rounds = 1;  // the whole sweep repeated; codecs alternate within a round (A/B on the same link)
  bool baseline = false;
  std::size_t threshold = std::size_t{1} << 20, segment = std::size_t{1} << 20;
  bool checksum = true;
  bool validate = true;  // comm_options::validate: the per-collective cross-rank check
  int idle_sleep_us = -1;  // auto (comm_options::idle_auto)
};

std::size_t parse_bytes(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  std::string suf(end);
  double m = 1;
  if (suf == "K" || suf == "k" || suf == "KiB") m = 1024;
  else if (suf == "M" || suf == "m" || suf == "MiB") m = 1024.0 * 1024;
  else if (suf == "G" || suf == "g" || suf == "GiB") m = 1024.0 * 1024 * 1024;
  else if (!suf.empty()) hcomm::fail(hcomm::errc::invalid_argument, "bad size '" + s + "' (use e.g. 4M, 256K, 1G)");
  return static_cast<std::size_t>(v * m);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t a = 0;
  while (a <= s.size()) {
    const std::size_t b = s.find(',', a);
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

void usage() {
  std::puts(
      "usage: mpirun -n P hcomm-collective [--op allreduce|allgather|reduce_scatter|p2p|broadcast[,...]]\n"
      "         [--codec none|mpc|zfp:R[,...]] [--scheme NAME [--axis dp|pp|tp]] [--baseline]\n"
      "         [--bytes 4M[,64M...]] [--iters N] [--warmup N] [--rounds N] [--data smooth|random]\n"
      "         [--threshold BYTES] [--segment BYTES] [--no-checksum] [--no-validate] [--idle-sleep-us N|-1]\n"
      "With no flags: allreduce of 1M and 4M with none, mpc, zfp:16, zfp:8 and MPI_Allreduce.");
}

// Every rank's input is a function of (rank, index), so every rank can compute the reference.
float value(const std::string& kind, int rank, std::size_t i) {
  if (kind == "random") {
    std::uint64_t h = (static_cast<std::uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    const double u = static_cast<double>(h >> 11) / 9007199254740992.0;  // [0,1)
    return static_cast<float>(1e-3 * (u - 0.5) + 1e-4 * std::sin(0.001 * static_cast<double>(i)));
  }
  return static_cast<float>(std::sin(1e-4 * static_cast<double>(i) + rank) * (1.0 + 0.1 * rank));
}

std::string json_str(const std::string& s) { return "\"" + s + "\""; }

struct result {
  std::vector<double> times;
  double max_error = 0, max_ref = 0;
  int identical = -1;  // -1: not applicable
  std::uint64_t wire = 0, raw = 0;
};

void run_one(const args& a, const std::string& op, const std::string& codec, std::size_t bytes, int round, int rank,
             int p) {
  const bool base = codec == "mpi";
  const std::size_t n = bytes / sizeof(float);
  hcomm::comm_options opt;
  opt.threshold_bytes = a.threshold;
  opt.segment_bytes = a.segment;
  opt.checksum = a.checksum;
  opt.validate = a.validate;
  opt.idle_sleep_us = a.idle_sleep_us;
  bool ef = false;
  std::string codec_name = codec;
  hcomm::codec::config cfg{};
  if (!a.scheme.empty() && !base) {
    hcomm::dispatch_scheme(a.scheme, [&]<class S>() {
      if (a.axis == "dp") cfg = hcomm::codec::config::of<typename S::template compressor<hcomm::DP>, float>();
      else if (a.axis == "pp") cfg = hcomm::codec::config::of<typename S::template compressor<hcomm::PP>, float>();
      else if (a.axis == "tp") cfg = hcomm::codec::config::of<typename S::template compressor<hcomm::TP>, float>();
      else hcomm::fail(hcomm::errc::invalid_argument, "--axis takes dp, pp or tp");
      ef = S::error_feedback && a.axis == "dp";
    });
    codec_name = hcomm::codec::to_string(cfg);
  } else if (!base) {
    cfg = hcomm::codec::parse_config(codec);
  }
  hcomm::runtime_communicator comm(MPI_COMM_WORLD, cfg, opt, ef);

  // Inputs and buffers per op.
  std::size_t in_n = n, out_n = n;
  if (op == "allgather") out_n = n * p;
  if (op == "reduce_scatter") {
    in_n = n / p * p;
    out_n = n / p;
  }
  std::vector<float> input(in_n), in(in_n), out(out_n);
  for (std::size_t i = 0; i < in_n; ++i) input[i] = value(a.data, rank, i);

  result res;
  for (int it = -a.warmup; it < a.iters; ++it) {
    std::memcpy(in.data(), input.data(), in_n * sizeof(float));
    comm.reset_stats();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (op == "allreduce") {
      if (base) MPI_Allreduce(MPI_IN_PLACE, in.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else comm.allreduce(std::span<float>(in));
    } else if (op == "allgather") {
      if (base)
        MPI_Allgather(in.data(), static_cast<int>(n), MPI_FLOAT, out.data(), static_cast<int>(n), MPI_FLOAT,
                      MPI_COMM_WORLD);
      else comm.allgather(std::span<const float>(in), std::span<float>(out));
    } else if (op == "reduce_scatter") {
      if (base)
        MPI_Reduce_scatter_block(in.data(), out.data(), static_cast<int>(out_n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else comm.reduce_scatter(std::span<const float>(in), std::span<float>(out));
    } else if (op == "p2p") {  // pairs (0,1), (2,3), ...: even sends, odd receives
      const int peer = rank ^ 1;
      if (peer < p) {
        if (rank % 2 == 0) {
          if (base) MPI_Send(in.data(), static_cast<int>(n), MPI_FLOAT, peer, 5, MPI_COMM_WORLD);
          else comm.send(std::span<const float>(in), peer, 5);
        } else {
          if (base) MPI_Recv(out.data(), static_cast<int>(n), MPI_FLOAT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          else comm.recv(std::span<float>(out), peer, 5);
        }
      }
    } else if (op == "broadcast") {  // from rank 0
      if (base) MPI_Bcast(in.data(), static_cast<int>(n), MPI_FLOAT, 0, MPI_COMM_WORLD);
      else comm.broadcast(std::span<float>(in), 0);
    } else {
      hcomm::fail(hcomm::errc::invalid_argument, "unknown --op '" + op + "'");
    }
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it >= 0) res.times.push_back(dt);
  }
  // Bytes on the wire of the last iteration, summed over ranks.
  const auto st = comm.stats();
  std::uint64_t wr[2] = {st.wire_bytes, st.raw_bytes};
  MPI_Allreduce(MPI_IN_PLACE, wr, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  res.wire = wr[0];
  res.raw = wr[1];
  double codec_s = st.compress_seconds;  // slowest rank's codec time in the last iteration
  MPI_Allreduce(MPI_IN_PLACE, &codec_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (base) {  // what MPI's ring-equivalent moves (estimate; MPI does not report it)
    const double per = op == "allreduce" ? 2.0 * (p - 1) / p * bytes
                       : op == "p2p"     ? (rank % 2 == 0 && (rank ^ 1) < p ? double(bytes) : 0.0)
                       : op == "broadcast" ? (rank == 0 ? double(bytes) : 0.0)
                                         : double(p - 1) / p * bytes * (op == "allgather" ? p : 1);
    std::uint64_t w = static_cast<std::uint64_t>(per);
    MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    res.wire = res.raw = w;
  }

  // Accuracy against float64 references.
  double err = 0, ref_max = 0;
  const float* got = op == "allreduce" || op == "broadcast" ? in.data() : out.data();
  if (op == "allreduce") {
    for (std::size_t i = 0; i < n; ++i) {
      double ref = 0;
      for (int q = 0; q < p; ++q) ref += value(a.data, q, i);
      err = std::max(err, std::fabs(got[i] - ref));
      ref_max = std::max(ref_max, std::fabs(ref));
    }
  } else if (op == "reduce_scatter") {
    for (std::size_t j = 0; j < out_n; ++j) {
      double ref = 0;
      for (int q = 0; q < p; ++q) ref += value(a.data, q, rank * out_n + j);
      err = std::max(err, std::fabs(got[j] - ref));
      ref_max = std::max(ref_max, std::fabs(ref));
    }
  } else if (op == "allgather") {
    for (int q = 0; q < p; ++q)
      for (std::size_t i = 0; i < n; ++i) {
        const double ref = value(a.data, q, i);
        err = std::max(err, std::fabs(got[q * n + i] - ref));
        ref_max = std::max(ref_max, std::fabs(ref));
      }
  } else if (op == "broadcast") {
    for (std::size_t i = 0; i < n; ++i) {
      const double ref = value(a.data, 0, i);
      err = std::max(err, std::fabs(got[i] - ref));
      ref_max = std::max(ref_max, std::fabs(ref));
    }
  } else if (op == "p2p" && rank % 2 == 1) {
    for (std::size_t i = 0; i < n; ++i) {
      const double ref = value(a.data, rank ^ 1, i);
      err = std::max(err, std::fabs(got[i] - ref));
      ref_max = std::max(ref_max, std::fabs(ref));
    }
  }
  double e2[2] = {err, ref_max};
  MPI_Allreduce(MPI_IN_PLACE, e2, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  res.max_error = e2[0];
  res.max_ref = e2[1];
  if (op == "allreduce" || op == "allgather" || op == "broadcast") {
    const std::size_t len = op == "allgather" ? out_n : n;
    const std::uint64_t h = hcomm::hash64(reinterpret_cast<const unsigned char*>(got), len * sizeof(float), 1);
    std::uint64_t lo = h, hi = h;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    res.identical = lo == hi ? 1 : 0;
  }

  if (rank == 0) {
    std::vector<double> t = res.times;
    std::sort(t.begin(), t.end());
    const double med = t.empty() ? 0 : t[t.size() / 2];
    const double iters = 1;  // stats were reset each iteration: last iteration only
    std::printf(
        "{\"op\":%s,\"codec\":%s%s,\"bytes\":%zu,\"ranks\":%d,\"iters\":%d,\"seconds\":%.6g,\"min_seconds\":%.6g,"
        "\"algbw_gbs\":%.4g,\"wire_bytes\":%llu,\"raw_bytes\":%llu,\"ratio\":%.4g,\"max_error\":%.4g,"
        "\"rel_error\":%.4g,\"codec_seconds\":%.4g,\"identical\":%s,\"data\":%s,\"threshold\":%zu,\"segment\":%zu,\"idle_sleep_us\":%d,\"idle_wait_us\":%u,\"validate\":%s,\"round\":%d,"
        "\"threads\":%d,\"threads_source\":%s}\n",
        json_str(op).c_str(), json_str(codec_name).c_str(),
        a.scheme.empty() || base ? "" : (",\"scheme\":" + json_str(a.scheme) + ",\"axis\":" + json_str(a.axis)).c_str(),
        bytes, p, a.iters, med, t.empty() ? 0 : t.front(), med > 0 ? bytes / med / 1e9 : 0.0,
        static_cast<unsigned long long>(res.wire / iters), static_cast<unsigned long long>(res.raw / iters),
        res.wire ? double(res.raw) / double(res.wire) : 1.0, res.max_error,
        res.max_ref > 0 ? res.max_error / res.max_ref : 0.0, codec_s,
        res.identical < 0 ? "null" : res.identical ? "true" : "false", json_str(a.data).c_str(), a.threshold,
        a.segment, a.idle_sleep_us, comm.context().idle_sleep_us(), a.validate ? "true" : "false", round,
        hcomm::exec::default_threads(), json_str(hcomm::exec::threads_source()).c_str());
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  args a;
  int rc = 0;
  try {
    bool any = false;
    for (int i = 1; i < argc; ++i) {
      const std::string f = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) hcomm::fail(hcomm::errc::invalid_argument, f + " needs a value");
        return argv[++i];
      };
      any = true;
      if (f == "--op") a.ops = split(next());
      else if (f == "--codec") a.codecs = split(next());
      else if (f == "--scheme") a.scheme = next();
      else if (f == "--axis") a.axis = next();
      else if (f == "--bytes") for (auto& s : split(next())) a.bytes.push_back(parse_bytes(s));
      else if (f == "--iters") a.iters = std::max(1, std::atoi(next().c_str()));
      else if (f == "--warmup") a.warmup = std::max(0, std::atoi(next().c_str()));
      else if (f == "--rounds") a.rounds = std::max(1, std::atoi(next().c_str()));
      else if (f == "--baseline") a.baseline = true;
      else if (f == "--data") a.data = next();
      else if (f == "--threshold") a.threshold = parse_bytes(next());
      else if (f == "--segment") a.segment = parse_bytes(next());
      else if (f == "--no-checksum") a.checksum = false;
      else if (f == "--no-validate") a.validate = false;
      else if (f == "--idle-sleep-us") {
        const std::string v = next();
        char* end = nullptr;
        const long us = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end || us < -1 || us > 1000000)
          hcomm::fail(hcomm::errc::invalid_argument,
                      "--idle-sleep-us takes 0..1000000 microseconds or -1 (auto), not '" + v + "'");
        a.idle_sleep_us = static_cast<int>(us);
      }
      else if (f == "-h" || f == "--help") {
        if (rank == 0) usage();
        MPI_Finalize();
        return 0;
      } else hcomm::fail(hcomm::errc::invalid_argument, "unknown flag '" + f + "' (see --help)");
    }
    if (a.data != "smooth" && a.data != "random") hcomm::fail(hcomm::errc::invalid_argument, "--data smooth|random");
    if (!any) {  // quick default sweep
      a.ops = {"allreduce"};
      a.codecs = {"none", "mpc", "zfp:16", "zfp:8"};
      a.bytes = {std::size_t{1} << 20, std::size_t{4} << 20};
      a.iters = 3;
      a.baseline = true;
    }
    if (a.ops.empty()) a.ops = {"allreduce"};
    if (a.bytes.empty()) a.bytes = {std::size_t{4} << 20};
    std::vector<std::string> codecs = a.codecs;
    if (!a.scheme.empty()) codecs = {"scheme"};
    if (codecs.empty() && !a.baseline) codecs = {"none"};
    if (a.baseline) codecs.push_back("mpi");
    // Rounds outermost, so that every codec (and MPI's own collective) of a cell is measured
    // once per round, next to each other in time: on a noisy link, compare within rounds.
    for (int r = 0; r < a.rounds; ++r)
      for (const auto& op : a.ops)
        for (std::size_t b : a.bytes)
          for (const auto& c : codecs) run_one(a, op, c, b, r, rank, p);
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "hcomm-collective: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
