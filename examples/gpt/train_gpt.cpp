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

const char* usage =
    "usage: train_gpt [options]\n"
    " model:   --arch gpt2|neox  --model tiny|small|medium  --layers L --channels C --heads NH\n"
    "          --block T  --rotary-pct F (neox)\n"
    " batch:   --batch B (global sequences per step)  --micro-batch S (sequences per micro-batch)\n"
    " optim:   --steps N --lr X --min-lr-frac F --warmup N --wd X --clip X --seed N\n"
    " eval:    --eval-every N --eval-batches N --val-frac F\n"
    " grid:    --dp N --pp N --tp N  (ranks = dp*pp*tp; rank = tp + TP*(dp + DP*pp))\n"
    " comm:    --scheme none|naive:R|mzhybrid:R|zhybrid:R1,R2[+ef]|plain (plain: uncompressed MPI, no hcomm)\n"
    "          --compress-min-bytes N (hcomm: smaller messages go uncompressed; default hcomm's, 1 MiB)\n"
    "          --idle-sleep-us N (hcomm: wait by testing and sleeping N us, 0: MPI_Wait; default -1: 100 when\n"
    "            more ranks share the host than it has CPUs, else 0)\n"
    " data:    --data FILE (default data/kjv.txt)\n"
    " output:  --metrics FILE (JSON lines) --losses-out FILE --quiet --sample N --prompt TEXT\n"
    " check:   --expect-losses FILE [--expect-rtol X, 0 = bitwise]\n"
    " ckpt:    --save PREFIX [--save-every N] [--stop-at STEP]  --resume PREFIX\n"
    " cpu:     --threads N (OpenMP + OpenBLAS threads per rank; default hcomm's: OMP_NUM_THREADS, else this\n"
    "            rank's CPUs / the ranks on this host sharing them)\n";

struct cli {
  gpt::config cfg;
  gpt::run_options run;
  int dp = 1, pp = 1, tp = 1, threads = 0;
};

[[noreturn]] void bad(const std::string& m) {
  hcomm::fail(hcomm::errc::invalid_argument, m + "\n" + usage + gpt::sparsity_usage);
}

cli parse(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  std::vector<std::string> flags;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      std::fputs(gpt::sparsity_usage, stdout);
      std::exit(0);
    }
    if (a.rfind("--", 0) != 0) bad("unexpected argument '" + a + "'");
    if (a == "--quiet") {
      flags.push_back(a);
      continue;
    }
    if (i + 1 >= argc) bad("missing value for " + a);
    kv[a] = argv[++i];
  }
  cli c;
  // the preset first, then per-field overrides in any order
  c.cfg = gpt::preset(kv.count("--model") ? kv["--model"] : "tiny");
  auto geti = [&](const char* k, int& v) {
    if (auto it = kv.find(k); it != kv.end()) {
      char* end = nullptr;
      long x = std::strtol(it->second.c_str(), &end, 10);
      if (*end || it->second.empty()) bad(std::string(k) + " wants an integer, got '" + it->second + "'");
      v = static_cast<int>(x);
      kv.erase(it);
    }
  };
  auto getf = [&](const char* k, float& v) {
    if (auto it = kv.find(k); it != kv.end()) {
      char* end = nullptr;
      v = std::strtof(it->second.c_str(), &end);
      if (*end || it->second.empty()) bad(std::string(k) + " wants a number, got '" + it->second + "'");
      kv.erase(it);
    }
  };
  auto gets = [&](const char* k, std::string& v) {
    if (auto it = kv.find(k); it != kv.end()) {
      v = it->second;
      kv.erase(it);
    }
  };
  kv.erase("--model");
  std::string arch = "gpt2";
  gets("--arch", arch);
  if (arch == "gpt2") c.cfg.arch = gpt::arch_kind::gpt2;
  else if (arch == "neox") c.cfg.arch = gpt::arch_kind::neox;
  else bad("--arch must be gpt2 or neox");
  geti("--layers", c.cfg.layers);
  geti("--channels", c.cfg.channels);
  geti("--heads", c.cfg.heads);
  geti("--block", c.cfg.block);
  getf("--rotary-pct", c.cfg.rotary_pct);
  geti("--batch", c.cfg.batch);
  geti("--micro-batch", c.cfg.micro_batch);
  geti("--steps", c.cfg.steps);
  getf("--lr", c.cfg.lr);
  getf("--min-lr-frac", c.cfg.min_lr_frac);
  geti("--warmup", c.cfg.warmup);
  getf("--wd", c.cfg.weight_decay);
  getf("--clip", c.cfg.grad_clip);
  int seed = static_cast<int>(c.cfg.seed);
  geti("--seed", seed);
  c.cfg.seed = static_cast<std::uint64_t>(seed);
  geti("--eval-every", c.cfg.eval_every);
  geti("--eval-batches", c.cfg.eval_batches);
  getf("--val-frac", c.cfg.val_frac);
  geti("--dp", c.dp);
  geti("--pp", c.pp);
  geti("--tp", c.tp);
  geti("--threads", c.threads);
  gets("--scheme", c.run.scheme);
  gets("--data", c.run.data);
  gets("--metrics", c.run.metrics);
  gets("--losses-out", c.run.losses_out);
  gets("--expect-losses", c.run.expect_losses);
  float rtol = static_cast<float>(c.run.expect_rtol);
  getf("--expect-rtol", rtol);
  c.run.expect_rtol = rtol;
  gets("--save", c.run.save);
  gets("--resume", c.run.resume);
  geti("--save-every", c.run.save_every);
  geti("--stop-at", c.run.stop_at);
  int min_bytes = -1;
  geti("--compress-min-bytes", min_bytes);
  c.run.compress_min_bytes = min_bytes;
  int idle_us = -1;
  geti("--idle-sleep-us", idle_us);
  if (idle_us < -1 || idle_us > 1000000) bad("--idle-sleep-us takes 0..1000000 microseconds or -1 (auto)");
  c.run.idle_sleep_us = idle_us;
  geti("--sample", c.run.sample);
  gets("--prompt", c.run.prompt);
  for (const auto& f : flags)
    if (f == "--quiet") c.run.quiet = true;
  gpt::take_sparsity_options(kv, c.run.sparsity);
  if (!kv.empty()) bad("unknown option " + kv.begin()->first);
  return c;
}

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

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  try {
    cli c = parse(argc, argv);
    const runner run = pick_scheme(c.run.scheme);
    c.cfg.validate(c.dp, c.pp, c.tp);
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
  } catch (const gpt::already_reported&) {
    rc = 2;
  } catch (const hcomm::error& e) {
    // Configuration errors are raised identically on every rank: report once, exit cleanly.
    if (rank == 0 || e.code() != hcomm::errc::invalid_argument) std::fprintf(stderr, "train_gpt: %s\n", e.what());
    rc = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_gpt (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  // Ranks agree on the exit code so that mpiexec reports failure from any rank.
  MPI_Allreduce(MPI_IN_PLACE, &rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
