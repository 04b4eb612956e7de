// hcomm-collective: one JSON object per measurement of a collective or point-to-point
// message, run under mpirun.
//
//   mpirun -n 4 hcomm-collective --op allreduce --codec zfp:8 --bytes 64M --iters 5
//   mpirun -n 4 hcomm-collective --op allreduce --bytes 64M --baseline      # MPI_Allreduce
//   mpirun -n 4 hcomm-collective --scheme zhybrid:16,8 --axis dp            # the scheme's DP codec
//   mpirun -n 2 hcomm-collective                                            # quick default sweep
//
// The command line is parsed by CLI11 (typed, range-checked options, generated --help) on
// every rank before MPI_Init; the parse depends only on the arguments, so all ranks agree: on
// a bad argument rank 0 (as the launcher numbers it) prints one line and every rank exits 2
// without starting MPI. What depends on the rank count (reduce_scatter's least size) is
// checked right after MPI_Init, before any communication, with the same outcome.
//
// --data smooth|random computes each rank's input from (rank, index); --data FILE[,FILE...]
// reads raw float32 files (e.g. train_gpt --dump-tensors: real gradients, activations, TP
// partial sums) once, before MPI_Init, on every rank: rank r sends the first values of file
// r mod K, and every rank holds all K files for the reference. A message larger than a file is
// refused (not tiled); --bytes defaults to the smallest file's size.
//
// --device cuda: the buffers live in device memory, timed with CUDA events (device_cuda.cu).
// --device-path resident (default): hcomm's collectives on exec::cuda, coding, decoding and
// reducing on the GPU, frames over the run-time device transport (CUDA-aware MPI where MPI
// says so, else pinned host staging); the baseline is then MPI on the staged (or CUDA-aware)
// values. --device-path staging: whole buffers through hcomm::cuda_staging and the host
// collective. Without CUDA in the build or without a device on some rank, one line says why
// and every rank exits 3.
//
// A failure while measuring prints one line per failing rank and aborts the job with status
// 1 (MPI_Abort: a rank left waiting in a collective cannot hang).
//
// Fields: op, codec (or "mpi" for --baseline), scheme (when given), bytes (per rank message),
// ranks, seconds (median over iterations of the slowest rank), min_seconds, algbw_gbs
// (bytes / seconds), wire_bytes and raw_bytes (per iteration, summed over ranks), ratio,
// max_error (against a float64 reference computed from every rank's input), rel_error
// (max_error / largest reference magnitude), codec_seconds (slowest rank's encode+decode time
// in the last iteration), identical (every rank holds the same bytes; null where ranks hold
// different results), data (smooth, random or the --data files as given), threshold,
// segment, idle_sleep_us and idle_wait_us (asked / resolved: -2 is yielding), validate (the per-collective
// cross-rank check, on unless --no-validate), compress_inside_node (off: an all-on-one-node
// communicator sends uncompressed) and one_node (its ranks all run on one node), round (0-based, with --rounds N), threads and
// threads_source (rank 0's host thread count, hcomm::exec::default_threads(), and why),
// device (cpu or cuda), and with cuda: device_path (resident or staging) and transport
// (resident: mpi_staged or mpi_device).
// Written with nlohmann::json, one compact object per line, keys in this order.
#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/cli.hpp"
#include "device.hpp"
#include "hcomm/hcomm.hpp"

namespace {

using collective_tool::host_ops;
using collective_tool::op_kind;

struct args {
  std::vector<std::string> ops;
  std::vector<std::string> codecs;
  std::string scheme, axis = "dp", data = "smooth";
  std::vector<std::vector<float>> files;  // --data FILE[,FILE...]: rank r's input is files[r % K]
  std::vector<std::size_t> bytes;
  int iters = 5, warmup = 1;
  int rounds = 1;  // the whole sweep repeated; codecs alternate within a round (A/B on the same link)
  bool baseline = false;
  std::size_t threshold = std::size_t{1} << 20, segment = std::size_t{1} << 20;
  bool checksum = true;
  bool validate = true;  // comm_options::validate: the per-collective cross-rank check
  int idle_sleep_us = -1;  // auto (comm_options::idle_auto)
  bool inside_node = true; // comm_options::compress_inside_node
  bool cuda = false;       // --device cuda: device buffers
  bool resident = true;    // --device-path resident (hcomm on the GPU) or staging (cuda_staging)
};

// The collectives of an hcomm communicator, and MPI's own (the baseline), as host_ops.
struct hcomm_ops final : host_ops {
  hcomm::runtime_communicator& c;
  explicit hcomm_ops(hcomm::runtime_communicator& comm) : c(comm) {}
  int rank() const override { return c.rank(); }
  int size() const override { return c.size(); }
  void allreduce(std::span<float> d) override { c.allreduce(d); }
  void allgather(std::span<const float> in, std::span<float> out) override { c.allgather(in, out); }
  void reduce_scatter(std::span<const float> in, std::span<float> out) override { c.reduce_scatter(in, out); }
  void broadcast(std::span<float> d, int root) override { c.broadcast(d, root); }
  void send(std::span<const float> d, int peer, int tag) override { c.send(d, peer, tag); }
  void recv(std::span<float> d, int peer, int tag) override { c.recv(d, peer, tag); }
};
struct mpi_ops final : host_ops {
  int r = 0, p = 1;
  mpi_ops() {
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
  }
  static int count(std::size_t n) { return static_cast<int>(n); }
  int rank() const override { return r; }
  int size() const override { return p; }
  void allreduce(std::span<float> d) override {
    MPI_Allreduce(MPI_IN_PLACE, d.data(), count(d.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  void allgather(std::span<const float> in, std::span<float> out) override {
    MPI_Allgather(in.data(), count(in.size()), MPI_FLOAT, out.data(), count(in.size()), MPI_FLOAT, MPI_COMM_WORLD);
  }
  void reduce_scatter(std::span<const float> in, std::span<float> out) override {
    MPI_Reduce_scatter_block(in.data(), out.data(), count(out.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  void broadcast(std::span<float> d, int root) override {
    MPI_Bcast(d.data(), count(d.size()), MPI_FLOAT, root, MPI_COMM_WORLD);
  }
  void send(std::span<const float> d, int peer, int tag) override {
    MPI_Send(d.data(), count(d.size()), MPI_FLOAT, peer, tag, MPI_COMM_WORLD);
  }
  void recv(std::span<float> d, int peer, int tag) override {
    MPI_Recv(d.data(), count(d.size()), MPI_FLOAT, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
};

op_kind op_of(const std::string& op) {
  if (op == "allreduce") return op_kind::allreduce;
  if (op == "allgather") return op_kind::allgather;
  if (op == "reduce_scatter") return op_kind::reduce_scatter;
  if (op == "p2p") return op_kind::p2p;
  if (op == "broadcast") return op_kind::broadcast;
  hcomm::fail(hcomm::errc::invalid_argument, "unknown --op '" + op + "'");
}

// One collective on host buffers: in (in_n values) and out (out_n); n values per rank.
void run_host(host_ops& c, op_kind op, std::vector<float>& in, std::vector<float>& out, std::size_t n) {
  switch (op) {
    case op_kind::allreduce: c.allreduce(std::span<float>(in.data(), n)); break;
    case op_kind::allgather: c.allgather(std::span<const float>(in.data(), n), std::span<float>(out)); break;
    case op_kind::reduce_scatter: c.reduce_scatter(std::span<const float>(in), std::span<float>(out)); break;
    case op_kind::broadcast: c.broadcast(std::span<float>(in.data(), n), 0); break;  // from rank 0
    case op_kind::p2p: {
      const int peer = c.rank() ^ 1;
      if (peer < c.size()) {
        if (c.rank() % 2 == 0) c.send(std::span<const float>(in.data(), n), peer, 5);
        else c.recv(std::span<float>(out.data(), n), peer, 5);
      }
      break;
    }
  }
}

// Every rank's input is a function of (rank, index), so every rank can compute the reference:
// a file's values (--data FILE), or synthetic ones.
float value(const args& a, int rank, std::size_t i) {
  if (!a.files.empty()) return a.files[static_cast<std::size_t>(rank) % a.files.size()][i];
  if (a.data == "random") {
    std::uint64_t h = (static_cast<std::uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    const double u = static_cast<double>(h >> 11) / 9007199254740992.0;  // [0,1)
    return static_cast<float>(1e-3 * (u - 0.5) + 1e-4 * std::sin(0.001 * static_cast<double>(i)));
  }
  return static_cast<float>(std::sin(1e-4 * static_cast<double>(i) + rank) * (1.0 + 0.1 * rank));
}

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
  opt.compress_inside_node = a.inside_node;
  bool ef = false;
  std::string codec_name = codec;
  hcomm::codec::config cfg{};
  if (!a.scheme.empty() && !base) {
    hcomm::dispatch_scheme(a.scheme, [&]<class S>() {
      if (a.axis == "dp") cfg = hcomm::codec::config::of<typename S::template compressor<hcomm::DP>, float>();
      else if (a.axis == "pp") cfg = hcomm::codec::config::of<typename S::template compressor<hcomm::PP>, float>();
      else cfg = hcomm::codec::config::of<typename S::template compressor<hcomm::TP>, float>();
      ef = S::error_feedback && a.axis == "dp";
    });
    codec_name = hcomm::codec::to_string(cfg);
  } else if (!base) {
    cfg = hcomm::codec::parse_config(codec);
    codec_name = hcomm::codec::to_string(cfg);  // canonical: int8 -> int8:256
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
  for (std::size_t i = 0; i < in_n; ++i) input[i] = value(a, rank, i);

  hcomm_ops hops(comm);
  mpi_ops mops;
  host_ops& ops = base ? static_cast<host_ops&>(mops) : static_cast<host_ops&>(hops);
  const op_kind kind = op_of(op);
  std::unique_ptr<collective_tool::device_buffers> dev;
  if (a.cuda && a.resident) {
    collective_tool::resident_setup rs;
    rs.cfg = cfg;
    rs.baseline = base;
    rs.error_feedback = ef;
    rs.threshold = a.threshold;
    rs.segment = a.segment;
    rs.checksum = a.checksum;
    rs.validate = a.validate;
    rs.idle_sleep_us = a.idle_sleep_us;
    dev = collective_tool::make_cuda_resident(input.data(), in_n, out_n, rs);
  } else if (a.cuda) {
    dev = collective_tool::make_cuda_buffers(input.data(), in_n, out_n);
  }

  result res;
  for (int it = -a.warmup; it < a.iters; ++it) {
    if (dev) dev->reset();
    else std::memcpy(in.data(), input.data(), in_n * sizeof(float));
    comm.reset_stats();
    MPI_Barrier(MPI_COMM_WORLD);
    double dt = 0;
    if (dev) {
      dt = dev->run(ops, kind, n);  // CUDA events around the device collective
    } else {
      const double t0 = MPI_Wtime();
      run_host(ops, kind, in, out, n);
      dt = MPI_Wtime() - t0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it >= 0) res.times.push_back(dt);
  }
  if (dev) dev->fetch(in.data(), out.data());
  // Bytes on the wire of the last iteration, summed over ranks (the device-resident path
  // counts its own).
  auto st = comm.stats();
  if (dev && dev->resident()) {
    const auto dc = dev->last_counters();
    st.wire_bytes = dc.wire_bytes;
    st.raw_bytes = dc.raw_bytes;
    st.compress_seconds = dc.codec_seconds;
  }
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
      for (int q = 0; q < p; ++q) ref += value(a, q, i);
      err = std::max(err, std::fabs(got[i] - ref));
      ref_max = std::max(ref_max, std::fabs(ref));
    }
  } else if (op == "reduce_scatter") {
    for (std::size_t j = 0; j < out_n; ++j) {
      double ref = 0;
      for (int q = 0; q < p; ++q) ref += value(a, q, rank * out_n + j);
      err = std::max(err, std::fabs(got[j] - ref));
      ref_max = std::max(ref_max, std::fabs(ref));
    }
  } else if (op == "allgather") {
    for (int q = 0; q < p; ++q)
      for (std::size_t i = 0; i < n; ++i) {
        const double ref = value(a, q, i);
        err = std::max(err, std::fabs(got[q * n + i] - ref));
        ref_max = std::max(ref_max, std::fabs(ref));
      }
  } else if (op == "broadcast") {
    for (std::size_t i = 0; i < n; ++i) {
      const double ref = value(a, 0, i);
      err = std::max(err, std::fabs(got[i] - ref));
      ref_max = std::max(ref_max, std::fabs(ref));
    }
  } else if (op == "p2p" && rank % 2 == 1) {
    for (std::size_t i = 0; i < n; ++i) {
      const double ref = value(a, rank ^ 1, i);
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
    const std::uint64_t iters = 1;  // stats were reset each iteration: last iteration only
    using tools::rounded;
    nlohmann::ordered_json j;
    j["op"] = op;
    j["codec"] = codec_name;
    if (!a.scheme.empty() && !base) {
      j["scheme"] = a.scheme;
      j["axis"] = a.axis;
    }
    j["bytes"] = bytes;
    j["ranks"] = p;
    j["iters"] = a.iters;
    j["seconds"] = rounded(med, 6);
    j["min_seconds"] = rounded(t.empty() ? 0 : t.front(), 6);
    j["algbw_gbs"] = rounded(med > 0 ? static_cast<double>(bytes) / med / 1e9 : 0.0, 4);
    j["wire_bytes"] = res.wire / iters;
    j["raw_bytes"] = res.raw / iters;
    j["ratio"] = rounded(res.wire ? double(res.raw) / double(res.wire) : 1.0, 4);
    j["max_error"] = rounded(res.max_error, 4);
    j["rel_error"] = rounded(res.max_ref > 0 ? res.max_error / res.max_ref : 0.0, 4);
    j["codec_seconds"] = rounded(codec_s, 4);
    j["identical"] = res.identical < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(res.identical == 1);
    j["data"] = a.data;
    j["threshold"] = a.threshold;
    j["segment"] = a.segment;
    j["idle_sleep_us"] = a.idle_sleep_us;
    const unsigned idle = comm.context().idle_sleep_us();
    j["idle_wait_us"] = idle == hcomm::mpi::yield_between_tests ? hcomm::comm_options::idle_yield : static_cast<long long>(idle);
    j["validate"] = a.validate;
    j["compress_inside_node"] = a.inside_node;
    j["one_node"] = comm.context().one_node();
    j["round"] = round;
    j["threads"] = hcomm::exec::default_threads();
    j["threads_source"] = hcomm::exec::threads_source();
    j["device"] = a.cuda ? "cuda" : "cpu";
    if (a.cuda) {
      j["device_path"] = a.resident ? "resident" : "staging";
      if (dev && dev->resident()) j["transport"] = dev->transport();
    }
    std::fputs((j.dump() + "\n").c_str(), stdout);
    std::fflush(stdout);
  }
}

constexpr const char* op_names[] = {"allreduce", "allgather", "reduce_scatter", "p2p", "broadcast"};

struct usage_error {
  std::string what;
};

// --data FILE: the whole file as float32 values (raw, little-endian), all finite.
std::vector<float> read_values(const std::string& path) {
  static_assert(std::endian::native == std::endian::little, "--data FILE is read as little-endian float32");
  namespace fs = std::filesystem;
  const std::string name = "--data " + path + ": ";
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) throw usage_error{name + "no such file (give smooth, random or files of raw float32 values)"};
  if (fs::is_directory(st)) throw usage_error{name + "is a directory, not a file of raw float32 values"};
  if (!fs::is_regular_file(st)) throw usage_error{name + "not a regular file"};
  std::ifstream f(path, std::ios::binary);
  if (!f) throw usage_error{name + "cannot be read (" + std::strerror(errno) + ")"};
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw usage_error{name + "cannot be read (" + ec.message() + ")"};
  if (size == 0) throw usage_error{name + "is empty"};
  if (size % sizeof(float) != 0)
    throw usage_error{name + std::to_string(size) + " bytes is not a whole number of float32 values"};
  std::vector<float> v(static_cast<std::size_t>(size / sizeof(float)));
  if (!f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(size)))
    throw usage_error{name + "cannot be read to its end"};
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw usage_error{name + "value " + std::to_string(i) + " is not finite (the error check needs finite values)"};
  return v;
}

// --data FILE[,FILE...]: reads the files; --bytes defaults to the smallest, and no message
// may be larger than it. Throws usage_error.
void read_files(args& a) {
  std::size_t least = 0;
  std::string smallest;
  const std::vector<std::string> paths = tools::split_list(a.data);
  if (paths.empty()) throw usage_error{"--data: give smooth, random or FILE[,FILE...]"};
  for (const std::string& path : paths) {
    a.files.push_back(read_values(path));
    const std::size_t b = a.files.back().size() * sizeof(float);
    if (smallest.empty() || b < least) {
      least = b;
      smallest = path;
    }
  }
  if (a.bytes.empty()) a.bytes = {std::min<std::size_t>(least, 4 * tools::GiB)};
  for (std::size_t b : a.bytes)
    if (b > least)
      throw usage_error{"--bytes " + std::to_string(b) + " is larger than --data " + smallest + " (" +
                        std::to_string(least) + " bytes); messages are not tiled: give --bytes " +
                        std::to_string(least) + " or less"};
}

// --codec entries: what hcomm::codec::parse_config accepts, or "mpi" (MPI's own collective).
CLI::Validator codec_spec() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (s == "mpi") return {};
        try {
          (void)hcomm::codec::parse_config(s);
          return {};
        } catch (const hcomm::error& e) {
          return tools::bare_message(e);
        }
      },
      hcomm::codec::list_usages<hcomm::codec::registered_codecs>([](auto) { return true; }, "|", "|"));
}

CLI::Validator scheme_spec() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (hcomm::has_scheme(s, hcomm::default_schemes{})) return {};
        std::string known;
        for (const auto& n : hcomm::scheme_names()) known += (known.empty() ? "" : ", ") + n;
        return "unknown scheme '" + s + "'; registered: " + known;
      },
      "NAME");
}

// This process's rank as the launcher announces it before MPI_Init (Open MPI, PMIx, MPICH's
// Hydra and PMI, MVAPICH, Slurm), so that the command line can be refused before MPI starts,
// by rank 0 alone; 0 when run without a launcher (a singleton). Under a launcher not listed
// here every rank counts as rank 0: each prints the line.
int launcher_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (const char* s = std::getenv(v); s != nullptr && *s != '\0') return std::atoi(s);
  return 0;
}

// Parses the command line (the same on every rank: it reads nothing but argv), before
// MPI_Init. Returns false after --help (printed by rank 0); throws usage_error with one line.
bool parse_args(int argc, char** argv, int rank, args& a) {
  CLI::App app{"Measure hcomm's compressed collectives (and MPI's own) under mpirun; one JSON object per "
               "measurement on stdout.",
               "hcomm-collective"};
  app.footer(
      "With no flags: allreduce of 1M and 4M with none, mpc, zfp:16, zfp:8 and MPI_Allreduce.\n"
      "Sizes are bytes per rank with an optional K, M, G suffix (powers of 1024); messages are float32, so\n"
      "--bytes must be a multiple of 4, and reduce_scatter needs at least 4 bytes per rank (it reduces\n"
      "the largest multiple of RANKS values).\n"
      "--data FILE[,FILE...]: raw little-endian float32 values (e.g. train_gpt --dump-tensors), read once\n"
      "before MPI starts; rank r sends the first --bytes of file r mod K. A message larger than a file is\n"
      "refused, not tiled; --bytes defaults to the smallest file's size.\n"
      "--device cuda keeps the buffers in device memory, timed with CUDA events; --device-path resident (default)\n"
      "runs hcomm's collectives on the GPU (frames over CUDA-aware MPI or pinned host staging), staging runs each\n"
      "through hcomm::cuda_staging (device -> pinned host -> the host collective -> device).\n"
      "exit status: 0 ok, 1 a failure while measuring, 2 bad command line (one line, from rank 0),\n"
      "3 --device cuda without a usable CUDA device or in a build without CUDA (one line)");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one counts
  std::string ops, codecs, bytes;  // comma-separated lists
  std::uint64_t threshold = a.threshold, segment = a.segment;
  bool no_checksum = false, no_validate = false;
  app.add_option("--op", ops, "operations to measure (default allreduce)")
      ->transform(tools::list_of(CLI::IsMember(std::vector<std::string>(std::begin(op_names), std::end(op_names)))));
  app.add_option("--codec", codecs, "codecs to measure (default none)")
      ->transform(tools::list_of(codec_spec()));
  app.add_option("--scheme", a.scheme, "a registered scheme (its codec on --axis), e.g. zhybrid:16,8")
      ->transform(scheme_spec());
  app.add_option("--axis", a.axis, "the scheme's axis (default dp)")->check(CLI::IsMember({"dp", "pp", "tp"}));
  app.add_flag("--baseline", a.baseline, "also measure MPI's own collective (codec \"mpi\")");
  app.add_option("--bytes", bytes, "message sizes in bytes per rank (default 4M)")
      ->transform(tools::list_of(tools::size_bytes(4, 4 * tools::GiB, sizeof(float), "whole float32 values")));
  app.add_option("--iters", a.iters, "timed iterations per measurement (default 5)")
      ->transform(tools::whole_number(1, 1000000));
  app.add_option("--warmup", a.warmup, "untimed iterations first (default 1)")
      ->transform(tools::whole_number(0, 1000000));
  app.add_option("--rounds", a.rounds, "repeat the whole sweep, every codec once per round (default 1)")
      ->transform(tools::whole_number(1, 100000));
  app.add_option("--data", a.data,
                 "the input values: smooth (default), random, or FILE[,FILE...] of raw float32 (rank r: file r mod K)")
      ->type_name("smooth|random|FILE");
  app.add_option("--threshold", threshold, "messages below this go uncompressed (default 1M; 0: compress all)")
      ->transform(tools::size_bytes(0, tools::TiB));
  app.add_option("--segment", segment, "raw bytes per pipelined segment (default 1M)")
      ->transform(tools::size_bytes(4, 4 * tools::GiB, sizeof(float), "whole float32 values"));
  std::string device = "cpu";
  app.add_option("--device", device, "where the buffers live: cpu (default) or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  std::string device_path = "resident";
  app.add_option("--device-path", device_path,
                 "with --device cuda: resident (hcomm on the GPU, default) or staging (whole buffers via the host)")
      ->check(CLI::IsMember({"resident", "staging"}));
  app.add_flag("--no-checksum", no_checksum, "no payload checksum in the frames");
  app.add_flag("--no-validate", no_validate, "no per-collective cross-rank check");
  app.add_option("--idle-sleep-us", a.idle_sleep_us,
                 "how ranks wait: 0 MPI_Wait, N test then sleep N us, -2 test then yield the core, -1 auto "
                 "(default: -2 when more ranks share the host than it has CPUs, else 0)")
      ->transform(tools::whole_number_or(0, 1000000, {-1, -2}));
  std::string inside_node = "on";
  app.add_option("--compress-inside-node", inside_node,
                 "off: ranks that all run on one node (MPI_COMM_TYPE_SHARED) send uncompressed (default on)")
      ->check(CLI::IsMember({"on", "off"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (rank == 0) std::fputs(app.help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError& e) {
    throw usage_error{e.what()};
  }
  a.ops = tools::split_list(ops);
  a.codecs = tools::split_list(codecs);
  for (const std::string& b : tools::split_list(bytes)) a.bytes.push_back(std::stoull(b));  // the transform above wrote plain decimal
  a.threshold = static_cast<std::size_t>(threshold);
  a.segment = static_cast<std::size_t>(segment);
  a.checksum = !no_checksum;
  a.validate = !no_validate;
  a.inside_node = inside_node == "on";
  a.cuda = device == "cuda";
  a.resident = device_path == "resident";
  if (argc <= 1) {  // quick default sweep
    a.ops = {"allreduce"};
    a.codecs = {"none", "mpc", "zfp:16", "zfp:8"};
    a.bytes = {std::size_t{1} << 20, std::size_t{4} << 20};
    a.iters = 3;
    a.baseline = true;
  }
  if (a.ops.empty()) a.ops = {"allreduce"};
  if (a.data != "smooth" && a.data != "random") read_files(a);
  if (a.bytes.empty()) a.bytes = {std::size_t{4} << 20};
  return true;
}

// What the command line asks of the rank count (after MPI_Init); throws usage_error.
void check_ranks(const args& a, int p) {
  if (std::find(a.ops.begin(), a.ops.end(), "reduce_scatter") != a.ops.end())
    for (std::size_t b : a.bytes)
      if (b / sizeof(float) < static_cast<std::size_t>(p))
        throw usage_error{"--bytes: " + std::to_string(b) + " is too small for reduce_scatter on " + std::to_string(p) +
                          " ranks: it needs one float32 value per rank, at least " +
                          std::to_string(sizeof(float) * static_cast<std::size_t>(p)) + " bytes"};
}

}  // namespace

int main(int argc, char** argv) {
  // The command line first, before MPI_Init: it reads nothing but argv, so every rank reaches
  // the same verdict, and a bad one costs no MPI start-up.
  const int launched_rank = launcher_rank();
  args a;
  try {
    if (!parse_args(argc, argv, launched_rank, a)) return 0;
  } catch (const usage_error& e) {
    if (launched_rank == 0) std::fprintf(stderr, "hcomm-collective: %s\n", tools::one_line(e.what).c_str());
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  // Before any communication of the measurements; every rank agrees.
  try {
    check_ranks(a, p);
  } catch (const usage_error& e) {
    if (rank == 0) std::fprintf(stderr, "hcomm-collective: %s\n", tools::one_line(e.what).c_str());
    MPI_Finalize();
    return 2;
  }
  if (a.cuda) {  // every rank needs a device: the lowest rank without one says why
    const std::string why = collective_tool::cuda_unavailable();
    int first = why.empty() ? p : rank;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first < p) {
      if (rank == first)
        std::fprintf(stderr, "hcomm-collective: --device cuda: %s%s\n",
                     p > 1 ? ("rank " + std::to_string(rank) + ": ").c_str() : "", tools::one_line(why).c_str());
      MPI_Finalize();
      return collective_tool::exit_no_device;
    }
  }
  try {
    if (a.cuda) {  // ranks on one node spread over its devices
      MPI_Comm node;
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
      int local = 0;
      MPI_Comm_rank(node, &local);
      MPI_Comm_free(&node);
      collective_tool::cuda_select_device(local);
    }
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
    std::fprintf(stderr, "hcomm-collective: rank %d: %s\n", rank, tools::one_line(e.what()).c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return 0;
}
