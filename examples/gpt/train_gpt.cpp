// train_gpt: GPT-2 / GPT-NeoX training on MPI ranks, 3-D parallel (--dp --pp --tp), on any
// text file (bytes are tokens). See examples/gpt/README.md.
//
//   mpiexec -n 8 train_gpt --model tiny --dp 2 --pp 2 --tp 2 --steps 50 --metrics m.jsonl
#include <mpi.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <type_traits>
#include <string>
#include <vector>

#include "cli.hpp"
#include "collective.hpp"
#include "config.hpp"
#include "hcomm/comm/threads.hpp"
#include "plain_comm.hpp"
#include "trainer.hpp"

#if __has_include("hcomm/comm/bundle.hpp")
#include "hcomm/comm/bundle.hpp"
#define GPT_HAVE_HCOMM 1
#else
#define GPT_HAVE_HCOMM 0
#endif

namespace {

using gpt::cli;

[[noreturn]] void bad(const std::string& m) { hcomm::fail(hcomm::errc::invalid_argument, m); }

template <class Grid, class Bundle>
int run_with(const cli& c) {
  Grid grid(c.dp, c.pp, c.tp);
#if GPT_HAVE_HCOMM
  if constexpr (std::is_constructible_v<Bundle, const Grid&, const hcomm::comm_options&>) {
    hcomm::comm_options opt;
    if (c.run.compress_min_bytes >= 0) opt.threshold_bytes = static_cast<std::size_t>(c.run.compress_min_bytes);
    opt.idle_sleep_us = c.run.idle_sleep_us;
    Bundle comm(grid, opt);
    gpt::trainer<Grid, Bundle> t(c.cfg, c.run, grid, comm);
    return t.run();
  }
#endif
  Bundle comm(grid);
  gpt::trainer<Grid, Bundle> t(c.cfg, c.run, grid, comm);
  return t.run();
}

// --scheme -> a trainer instantiated for that communication scheme. The scheme is a
// compile-time parameter of hcomm::bundle, so the rates offered are a fixed table.
using runner = int (*)(const cli&);
std::map<std::string, runner> schemes() {
  std::map<std::string, runner> m;
  m["plain"] = &run_with<gpt::plain::grid, gpt::plain::bundle>;  // uncompressed MPI without hcomm
#if GPT_HAVE_HCOMM
  namespace hs = hcomm::scheme;
  m["none"] = &run_with<hcomm::grid, hcomm::bundle<hs::none>>;
  m["naive:4"] = &run_with<hcomm::grid, hcomm::bundle<hs::naive<4>>>;
  m["naive:8"] = &run_with<hcomm::grid, hcomm::bundle<hs::naive<8>>>;
  m["naive:16"] = &run_with<hcomm::grid, hcomm::bundle<hs::naive<16>>>;
  m["mzhybrid:4"] = &run_with<hcomm::grid, hcomm::bundle<hs::mzhybrid<4>>>;
  m["mzhybrid:8"] = &run_with<hcomm::grid, hcomm::bundle<hs::mzhybrid<8>>>;
  m["mzhybrid:16"] = &run_with<hcomm::grid, hcomm::bundle<hs::mzhybrid<16>>>;
  m["zhybrid:16,4"] = &run_with<hcomm::grid, hcomm::bundle<hs::zhybrid<16, 4>>>;
  m["zhybrid:16,8"] = &run_with<hcomm::grid, hcomm::bundle<hs::zhybrid<16, 8>>>;
  m["zhybrid:24,8"] = &run_with<hcomm::grid, hcomm::bundle<hs::zhybrid<24, 8>>>;
  // with error feedback on the DP gradients (not in the paper; its residual is checkpointed)
  m["mzhybrid:4+ef"] = &run_with<hcomm::grid, hcomm::bundle<hs::with_error_feedback<hs::mzhybrid<4>>>>;
  m["zhybrid:16,4+ef"] = &run_with<hcomm::grid, hcomm::bundle<hs::with_error_feedback<hs::zhybrid<16, 4>>>>;
#else
  m["none"] = &run_with<gpt::plain::grid, gpt::plain::bundle>;
#endif
  return m;
}

runner pick_scheme(const std::string& s) {
  const auto table = schemes();
  if (auto it = table.find(s); it != table.end()) return it->second;
  const auto colon = s.find(':');
  const std::string name = s.substr(0, colon);
  std::string known;
  for (const auto& [k, v] : table) known += " " + k;
  if (name != "none" && name != "naive" && name != "mzhybrid" && name != "zhybrid" && name != "plain")
    bad("--scheme '" + s + "' is not one of none, naive:R, mzhybrid:R, zhybrid:R1,R2");
  if (!GPT_HAVE_HCOMM)
    hcomm::fail(hcomm::errc::unsupported,
                "--scheme " + s + ": compressed schemes need hcomm::bundle (include/hcomm/comm/bundle.hpp), which this "
                "build does not have; available:" + known);
  hcomm::fail(hcomm::errc::unsupported, "--scheme " + s + " is not instantiated in train_gpt; available:" + known +
                                            " (add a line to schemes() in examples/gpt/train_gpt.cpp)");
}

// Local checks of the command line and the data file, before any rank communicates. Returns
// 0 (go on), 1 (--help printed: exit 0) or 2 (bad argument: `why` says what, in one line).
int check_arguments(int argc, char** argv, cli& c, runner& run, std::string& why, std::string& help) {
  try {
    c = gpt::parse_cli(argc, argv, &help);
    run = pick_scheme(c.run.scheme);
    gpt::check_cli(c);
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (static_cast<long long>(c.dp) * c.pp * c.tp != world)
      bad("--dp " + std::to_string(c.dp) + " x --pp " + std::to_string(c.pp) + " x --tp " + std::to_string(c.tp) +
          " = " + std::to_string(static_cast<long long>(c.dp) * c.pp * c.tp) + " ranks, but the job has " +
          std::to_string(world));
    return 0;
  } catch (const CLI::CallForHelp&) {
    return 1;
  } catch (const CLI::CallForAllHelp&) {
    return 1;
  } catch (const CLI::ParseError& e) {
    why = std::string(e.what()) + " (train_gpt --help lists the options)";
  } catch (const hcomm::error& e) {
    const std::string prefix = "hcomm: invalid_argument: ";
    why = e.what();
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
  } catch (const std::exception& e) {
    why = e.what();
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // 1. Arguments: every rank parses the same command line; the verdict is agreed anyway (a
  //    file may look different from another node) and printed once, by the lowest failing rank.
  cli c;
  runner run = nullptr;
  std::string why, help;
  int verdict = check_arguments(argc, argv, c, run, why, help);
  int worst = verdict;
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst == 1 && rank == 0) std::fputs(help.c_str(), stdout);
  if (worst == 2) {
    const gpt::verdict v = gpt::agree(verdict != 2, why);
    if (rank == 0) std::fprintf(stderr, "train_gpt: %s\n", v.what.c_str());
  }
  if (worst != 0) {
    MPI_Finalize();
    return worst == 1 ? 0 : 2;
  }
  // 2. Training. Errors that every rank reached together (gpt::stopped: a refused checkpoint,
  //    a failed save, a non-finite loss) end the run cleanly with their code; any other error
  //    is this rank's alone, and the others may be waiting for it in a collective: print it and
  //    end the whole job.
  int rc = 0;
  try {
    // Threads per rank: --threads, else hcomm's default fitted to the ranks sharing this host's
    // CPUs (hcomm/exec/threads.hpp; collective over the world, which sees every local rank).
    // OpenMP and OpenBLAS get the same count, for the loops outside hcomm.
    if (c.threads > 0) hcomm::exec::set_default_threads(c.threads);
    else hcomm::mpi::fit_threads(MPI_COMM_WORLD);
    const int threads = hcomm::exec::default_threads();
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    if (rank == 0 && !c.run.quiet)
      std::printf("train_gpt: %d threads per rank (%s)\n", threads, hcomm::exec::threads_source().c_str());
    rc = run(c);
  } catch (const gpt::stopped& e) {
    if (rank == 0 && !e.message.empty()) std::fprintf(stderr, "train_gpt: %s\n", e.what());
    rc = e.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_gpt (rank %d): %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  // Ranks agree on the exit code so that mpiexec reports failure from any rank.
  MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
