// train_gpt: GPT-2 / GPT-NeoX training on MPI ranks, 3-D parallel (--dp --pp --tp), on any
// text file (bytes are tokens). See examples/gpt/README.md.
//
//   mpiexec -n 8 train_gpt --model tiny --dp 2 --pp 2 --tp 2 --steps 50 --metrics m.jsonl
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "cli.hpp"
#include "collective.hpp"
#include "hcomm/comm/bundle.hpp"
#include "hcomm/comm/device_bundle.hpp"
#include "hcomm/comm/registry.hpp"
#include "hcomm/transport/mpi_staged.hpp"
#include "hcomm/transport/threads.hpp"
#include "hcomm/topology/grid.hpp"
#include "losses.hpp"
#include "openblas_core.hpp"
#include "plain_comm.hpp"
#include "hcomm/exec/host.hpp"
#include "hcomm/exec/host_check.hpp"
#include "ops_portable.hpp"
#include "train_cuda.hpp"
#include "train_kokkos.hpp"
#include "trainer.hpp"

namespace {

using gpt::cli;

[[noreturn]] void bad(const std::string& m) { hcomm::fail(hcomm::errc::invalid_argument, m); }

// --scheme: hcomm's registered schemes (hcomm/comm/registry.hpp, each an instantiation of the
// trainer over hcomm::bundle<Scheme>), or `plain` (plain_comm.hpp).
void check_scheme(const std::string& s) {
  if (s == "plain" || hcomm::has_scheme(s, hcomm::default_schemes{})) return;
  const std::string name = s.substr(0, s.find(':'));
  if (name != "none" && name != "naive" && name != "mzhybrid" && name != "zhybrid" && name != "bf16" && name != "int8")
    bad("--scheme '" + s + "' is not one of none, naive:R, mzhybrid:R, zhybrid:R1,R2, bf16, int8:B");
  std::string known;
  for (const auto& k : hcomm::scheme_names()) known += " " + k;
  hcomm::fail(hcomm::errc::unsupported, "--scheme " + s + " is not instantiated in train_gpt; available:" + known +
                                            " plain (hcomm::default_schemes in hcomm/comm/registry.hpp lists them)");
}

template <class Bundle, class Ops = gpt::cpu_ops>
gpt::run_result train(const cli& c, const hcomm::grid& grid, Bundle& comm) {
  return gpt::trainer<Bundle, Ops>::make(c.cfg, c.run, grid, comm)->run();
}

// --device host | host-check: the portable backend, instantiated for the schemes check_cli
// lets through: none, zhybrid:16,8 for lossy collectives on every axis, and (host-check, as
// cuda) zhybrid:16,6+ef for error feedback on device memory. host communicates through the
// host bundle; host-check through the device bundle over staged MPI, the code --device cuda
// runs (train_cuda.cu), so that CI runs it on the CPU.
gpt::run_result run_portable(const cli& c, const hcomm::grid& grid, const hcomm::axis_options& opt) {
  auto on_host_check = [&]<class Scheme>() {
    using dev_bundle = hcomm::device_bundle<Scheme, hcomm::exec::host_check, hcomm::transport::mpi_staged>;
    dev_bundle comm(grid, opt);
    return train<dev_bundle, gpt::portable_ops<hcomm::exec::host_check>>(c, grid, comm);
  };
  auto on = [&]<class Scheme>() {
    if (c.run.device == "host") {
      hcomm::bundle<Scheme> comm(grid, opt);
      return train<hcomm::bundle<Scheme>, gpt::portable_ops<hcomm::exec::host>>(c, grid, comm);
    }
    return on_host_check.template operator()<Scheme>();
  };
  if (c.run.scheme == "none") return on.template operator()<hcomm::scheme::none>();
  if (c.run.scheme == "zhybrid:16,8") return on.template operator()<hcomm::scheme::zhybrid<16, 8>>();
  return on_host_check.template operator()<hcomm::scheme::with_error_feedback<hcomm::scheme::zhybrid<16, 6>>>();
}

// --uncompressed-axes: rank 0 says which axes go uncompressed and which by the scheme, on
// every backend.
void say_uncompressed_axes(const cli& c) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (c.run.uncompressed_axes.empty() || c.run.quiet || rank != 0) return;
  std::string raw, kept;
  for (const char* axis : {"dp", "pp", "tp"}) {
    std::string& s = c.run.uncompressed_axis(axis) ? raw : kept;
    s += s.empty() ? axis : std::string(", ") + axis;
  }
  std::printf("hcomm: --uncompressed-axes: uncompressed: %s; compressed by %s: %s\n", raw.c_str(),
              c.run.scheme.c_str(), kept.empty() ? "no axis" : kept.c_str());
}

// --compress-inside-node off: rank 0 says which axes hcomm found inside one node (of those
// --uncompressed-axes leaves to the scheme), so that the log shows what went uncompressed
// for that reason.
template <class Bundle>
void say_inside_node(Bundle& comm, const cli& c) {
  if (c.run.compress_inside_node || c.run.quiet) return;
  std::string raw, kept;
  auto add = [](std::string& s, const char* axis) { s += s.empty() ? axis : std::string(", ") + axis; };
  for (auto [axis, inside] : {std::pair{"dp", comm.dp().raw_inside_node()},
                              std::pair{"pp", comm.pp().raw_inside_node()},
                              std::pair{"tp", comm.tp().raw_inside_node()}})
    if (!c.run.uncompressed_axis(axis)) add(inside ? raw : kept, axis);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    std::printf("hcomm: --compress-inside-node off: uncompressed inside one node: %s; compressed by the scheme: %s\n",
                raw.empty() ? "none" : raw.c_str(), kept.empty() ? "none" : kept.c_str());
}

// The communicators' options: the --compress-min-bytes, --idle-sleep-us and
// --compress-inside-node of every axis, and the axes of --uncompressed-axes uncompressed.
hcomm::axis_options comm_options_of(const gpt::run_options& r) {
  hcomm::comm_options opt;
  if (r.compress_min_bytes >= 0) opt.threshold_bytes = static_cast<std::size_t>(r.compress_min_bytes);
  opt.idle_sleep_us = r.idle_sleep_us;
  opt.compress_inside_node = r.compress_inside_node;
  hcomm::axis_options axes(opt);
  for (auto [name, axis] : {std::pair{"dp", hcomm::axis_id::dp}, std::pair{"pp", hcomm::axis_id::pp},
                            std::pair{"tp", hcomm::axis_id::tp}})
    if (r.uncompressed_axis(name)) axes.uncompressed(axis);
  return axes;
}

gpt::run_result run_scheme(const cli& c, [[maybe_unused]] const gpt::node_place& node) {
  hcomm::grid grid(c.dp, c.pp, c.tp);
  if (c.run.scheme == "plain") {
    gpt::plain_bundle comm(grid);
    return train(c, grid, comm);
  }
  const hcomm::axis_options opt = comm_options_of(c.run);
  say_uncompressed_axes(c);
#if HCOMM_GPT_CUDA
  if (c.run.device == "cuda") return gpt::train_on_cuda(c.cfg, c.run, grid, opt, node);
#endif
#if HCOMM_GPT_KOKKOS
  if (c.run.device == "kokkos") return gpt::train_on_kokkos(c.cfg, c.run, grid, opt);
#endif
  if (c.run.device != "cpu") return run_portable(c, grid, opt);
  return hcomm::dispatch_scheme(c.run.scheme, [&]<class Scheme>() {
    hcomm::bundle<Scheme> comm(grid, opt);
    say_inside_node(comm, c);
    return train(c, grid, comm);
  });
}

// --losses-out and --expect-losses (losses.hpp), on rank 0: the curve the tests compare.
int finish_losses(const gpt::run_options& o, const gpt::loss_curve& c) {
  if (!o.losses_out.empty()) gpt::write_losses(o.losses_out, c);
  return o.expect_losses.empty() ? 0 : gpt::expect_losses(o.expect_losses, c, o.expect_rtol);
}

// --overlap on (the last one counts, as for every option) asks MPI for MPI_THREAD_MULTIPLE:
// known before MPI_Init, so read from argv here; parse_cli() reads it again.
bool wants_overlap(int argc, char** argv) {
  bool on = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--overlap" && i + 1 < argc) on = std::string(argv[i + 1]) == "on";
    else if (a.rfind("--overlap=", 0) == 0) on = a.substr(10) == "on";
  }
  return on;
}
int mpi_thread_level = MPI_THREAD_SINGLE;  // what MPI_Init_thread provided (MPI_Init: single)

std::string thread_level_name(int l) {
  return l == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE" : l == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED"
       : l == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED" : l == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE"
       : std::to_string(l);
}

// Local checks of the command line and the data file, before any rank communicates. Returns
// 0 (go on), 1 (--help printed: exit 0) or 2 (bad argument: `why` says what, in one line).
int check_arguments(int argc, char** argv, [[maybe_unused]] const gpt::node_place& node, cli& c, std::string& why, std::string& help) {
  try {
    c = gpt::parse_cli(argc, argv, &help);
    check_scheme(c.run.scheme);
    gpt::check_cli(c);
    if (c.run.device == "cuda") {
#if HCOMM_GPT_CUDA
      if (const std::string no = gpt::cuda_unavailable(node, c.run.share_gpu); !no.empty()) bad("--device cuda: " + no);
#else
      bad("--device cuda: this train_gpt was built without CUDA (configure where nvcc is found, or with "
          "-DHCOMM_ENABLE_CUDA=ON)");
#endif
    }
#if !HCOMM_GPT_KOKKOS
    if (c.run.device == "kokkos")
      bad("--device kokkos: this train_gpt was built without hcomm's Kokkos executor (install Kokkos, e.g. Debian's "
          "libtrilinos-kokkos-dev, and configure with -DHCOMM_ENABLE_KOKKOS=ON)");
#endif
    if (c.run.overlap && mpi_thread_level < MPI_THREAD_MULTIPLE)
      bad("--overlap on needs MPI_THREAD_MULTIPLE (a DP thread beside the pipeline's calls); this MPI provides " +
          thread_level_name(mpi_thread_level) + " (use --overlap off)");
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
  // OpenBLAS's kernels for this CPU, not its SSE fallback (may restart the program: first).
  gpt::openblas_core::match_cpu();
  // --overlap on: the DP communication thread (overlap.hpp) calls MPI beside the main thread.
  if (wants_overlap(argc, argv)) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &mpi_thread_level);
  else MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // 1. Arguments: every rank parses the same command line; the verdict is agreed anyway (a
  //    file may look different from another node) and printed once, by the lowest failing rank.
  cli c;
  std::string why, help;
  const gpt::node_place node = gpt::node_place_of(MPI_COMM_WORLD);  // the ranks sharing this node's GPUs
  int verdict = check_arguments(argc, argv, node, c, why, help);
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
      std::printf("train_gpt: %d threads per rank (%s); %s\n", threads, hcomm::exec::threads_source().c_str(),
                  gpt::openblas_core::describe().c_str());
    const gpt::run_result r = run_scheme(c, node);
    rc = std::max(r.rc, rank == 0 ? finish_losses(c.run, r.losses) : 0);
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
