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
#include <string>
#include <vector>

#include "config.hpp"
#include "plain_comm.hpp"
#include "trainer.hpp"

namespace {

const char* usage =
    "usage: train_gpt [options]\n"
    " model:   --arch gpt2|neox  --model tiny|small|medium  --layers L --channels C --heads NH\n"
    "          --block T  --rotary-pct F (neox)\n"
    " batch:   --batch B (global sequences per step)  --micro-batch S (sequences per micro-batch)\n"
    " optim:   --steps N --lr X --min-lr-frac F --warmup N --wd X --clip X --seed N\n"
    " eval:    --eval-every N --eval-batches N --val-frac F\n"
    " grid:    --dp N --pp N --tp N  (ranks = dp*pp*tp; rank = tp + TP*(dp + DP*pp))\n"
    " comm:    --scheme none|naive:R|mzhybrid:R|zhybrid:R1,R2\n"
    " data:    --data FILE (default data/kjv.txt)\n"
    " output:  --metrics FILE (JSON lines) --losses-out FILE --quiet --sample N --prompt TEXT\n"
    " check:   --expect-losses FILE [--expect-rtol X, 0 = bitwise]\n"
    " ckpt:    --save PREFIX [--save-every N] [--stop-at STEP]  --resume PREFIX\n"
    " cpu:     --threads N (OpenMP + OpenBLAS threads per rank)\n";

struct cli {
  gpt::config cfg;
  gpt::run_options run;
  int dp = 1, pp = 1, tp = 1, threads = 0;
};

[[noreturn]] void bad(const std::string& m) { hcomm::fail(hcomm::errc::invalid_argument, m + "\n" + usage); }

cli parse(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  std::vector<std::string> flags;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
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
  geti("--sample", c.run.sample);
  gets("--prompt", c.run.prompt);
  for (const auto& f : flags)
    if (f == "--quiet") c.run.quiet = true;
  if (!kv.empty()) bad("unknown option " + kv.begin()->first);
  return c;
}

// The scheme names train_gpt knows; which of them this build can run.
void check_scheme(const std::string& s) {
  auto rate_ok = [](const std::string& r) {
    char* end = nullptr;
    long v = std::strtol(r.c_str(), &end, 10);
    return !r.empty() && !*end && v >= 3 && v <= 32;
  };
  const auto colon = s.find(':');
  const std::string name = s.substr(0, colon), arg = colon == std::string::npos ? "" : s.substr(colon + 1);
  bool well_formed = false;
  if (name == "none") well_formed = arg.empty();
  else if (name == "naive" || name == "mzhybrid") well_formed = rate_ok(arg);
  else if (name == "zhybrid") {
    const auto comma = arg.find(',');
    well_formed = comma != std::string::npos && rate_ok(arg.substr(0, comma)) && rate_ok(arg.substr(comma + 1));
  }
  if (!well_formed)
    bad("--scheme '" + s + "' is not one of none, naive:R, mzhybrid:R, zhybrid:R1,R2 (R: ZFP rate 3..32 bits per value)");
  if (name != "none")
    hcomm::fail(hcomm::errc::unsupported,
                "--scheme " + s + ": compressed schemes need hcomm::bundle (include/hcomm/comm/bundle.hpp), which this "
                "build does not have yet; only --scheme none (plain MPI) is available");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  try {
    cli c = parse(argc, argv);
    check_scheme(c.run.scheme);
    c.cfg.validate(c.dp, c.pp, c.tp);
    if (c.threads > 0) {
      omp_set_num_threads(c.threads);
      openblas_set_num_threads(c.threads);
    }
    gpt::plain::grid grid(c.dp, c.pp, c.tp);
    gpt::plain::bundle comm(grid);
    gpt::trainer<gpt::plain::grid, gpt::plain::bundle> t(c.cfg, c.run, grid, comm);
    rc = t.run();
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
