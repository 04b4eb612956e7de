// examples/gpt/cli.hpp: train_gpt's command line (CLI11): typed, range-checked options and the
// generated --help.
//
//   gpt::cli c = gpt::parse_cli(argc, argv);   // throws CLI::ParseError (incl. --help) or
//                                             // hcomm::error(invalid_argument) with one line
//
// Every number is parsed here in decimal with its range (no wrap-around: 4294967299 is not 3,
// no octal or hex, no NaN or Inf); cross-field rules (divisibility by the grid, a readable
// data file) are checked by check_cli() before any rank communicates.
#pragma once
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "config.hpp"
#include "data.hpp"
#include "options.hpp"

namespace gpt {

struct cli {
  config cfg;
  run_options run;
  int dp = 1, pp = 1, tp = 1, threads = 0;
  std::string model = "tiny", arch;  // arch: empty = the preset's (gpt2, or bert for bert-*)
  bool pre_ln = false;
  std::string mask_unit = "word";
  std::string precision = "fp32";
};

namespace cli_detail {

// An integer option: decimal digits (a leading '-' where lo < 0), within [lo, hi].
template <class T>
CLI::Option* int_opt(CLI::App& app, const std::string& name, T& v, long long lo, unsigned long long hi,
                     const std::string& what) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  auto set = [&v, name, lo, hi, range](const std::string& s) {
    const char* b = s.data();
    const char* e = b + s.size();
    bool ok = false, in_range = false;
    if (!s.empty() && s[0] == '-') {
      long long x = 0;
      auto [p, ec] = std::from_chars(b, e, x);
      ok = ec == std::errc() && p == e;
      in_range = ok && x >= lo && (x < 0 || static_cast<unsigned long long>(x) <= hi);
      if (in_range) v = static_cast<T>(x);
      if (ec == std::errc::result_out_of_range) ok = true;
    } else {
      unsigned long long x = 0;
      auto [p, ec] = std::from_chars(b, e, x);
      ok = (ec == std::errc() && p == e) || ec == std::errc::result_out_of_range;
      in_range = ec == std::errc() && p == e && x <= hi && (lo <= 0 || x >= static_cast<unsigned long long>(lo));
      if (in_range) v = static_cast<T>(x);
    }
    if (!ok) throw CLI::ValidationError(name, "wants an integer, got '" + s + "'");
    if (!in_range) throw CLI::ValidationError(name, s + " is out of range " + range);
  };
  std::string def = std::to_string(v);
  return app.add_option_function<std::string>(name, set, what)->type_name("INT")->default_str(def);
}

// A real option: finite, within [lo, hi] (or (lo, hi] with lo_open).
template <class T>
CLI::Option* real_opt(CLI::App& app, const std::string& name, T& v, double lo, double hi, bool lo_open,
                      const std::string& what) {
  auto set = [&v, name, lo, hi, lo_open](const std::string& s) {
    char* end = nullptr;
    const double x = std::strtod(s.c_str(), &end);
    if (s.empty() || *end) throw CLI::ValidationError(name, "wants a number, got '" + s + "'");
    if (!std::isfinite(x)) throw CLI::ValidationError(name, "wants a finite number, got '" + s + "'");
    if (x < lo || x > hi || (lo_open && x == lo)) {
      std::ostringstream r;
      r << s << " is out of range " << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
      throw CLI::ValidationError(name, r.str());
    }
    v = static_cast<T>(x);
  };
  std::ostringstream def;
  def << v;
  return app.add_option_function<std::string>(name, set, what)->type_name("X")->default_str(def.str());
}

// N comma-separated reals, each finite and in [lo, hi].
inline std::vector<double> parse_reals(const std::string& name, const std::string& v, std::size_t n, double lo, double hi) {
  std::vector<double> got;
  std::size_t pos = 0;
  bool ok = true;
  while (ok) {
    const std::size_t e = v.find(',', pos);
    const std::string part = v.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    char* end = nullptr;
    const double x = std::strtod(part.c_str(), &end);
    ok = !part.empty() && !*end && std::isfinite(x) && x >= lo && x <= hi;
    if (ok) got.push_back(x);
    if (e == std::string::npos) break;
    pos = e + 1;
  }
  if (!ok || got.size() != n) {
    std::ostringstream r;
    r << "wants " << n << " comma-separated numbers in [" << lo << ", " << hi << "], got '" << v << "'";
    throw CLI::ValidationError(name, r.str());
  }
  return got;
}
// A comma-separated set of the axes dp, pp, tp, each at most once, returned in that order
// ("tp,dp" -> "dp,tp"); "" for none.
inline std::string parse_axes(const std::string& name, const std::string& v) {
  bool seen[3] = {false, false, false};
  const char* names[3] = {"dp", "pp", "tp"};
  std::size_t pos = 0;
  while (!v.empty()) {
    const std::size_t e = v.find(',', pos);
    const std::string part = v.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    const auto* it = std::find(std::begin(names), std::end(names), part);
    if (it == std::end(names) || seen[it - std::begin(names)])
      throw CLI::ValidationError(name, "wants distinct axes among dp, pp, tp, comma-separated; got '" + v + "'");
    seen[it - std::begin(names)] = true;
    if (e == std::string::npos) break;
    pos = e + 1;
  }
  std::string out;
  for (int a = 0; a < 3; ++a)
    if (seen[a]) out += (out.empty() ? "" : ",") + std::string(names[a]);
  return out;
}
inline CLI::Option* reals_opt(CLI::App& app, const std::string& name, std::vector<double*> out, double lo, double hi,
                              const std::string& what) {
  auto set = [out, name, lo, hi](const std::string& v) {
    const auto got = parse_reals(name, v, out.size(), lo, hi);
    for (std::size_t i = 0; i < out.size(); ++i) *out[i] = got[i];
  };
  return app.add_option_function<std::string>(name, set, what)->type_name("X,..");
}

inline CLI::Option* choice_opt(CLI::App& app, const std::string& name, std::string& v, std::vector<std::string> choices,
                               const std::string& what) {
  return app.add_option(name, v, what)->check(CLI::IsMember(choices))->capture_default_str();
}

// The preset named by --model (or --model=NAME) sets the defaults the other options override,
// in whatever order they come.
inline std::string preset_name(int argc, const char* const* argv) {
  std::string name = "tiny";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model" && i + 1 < argc) name = argv[i + 1];
    else if (a.rfind("--model=", 0) == 0) name = a.substr(8);
  }
  for (const std::string& p : preset_names())
    if (name == p) return name;
  return "tiny";  // not a preset: the --model option's check reports it
}

}  // namespace cli_detail

// Registers every option of `c` on `app` (the defaults shown are the preset's).
inline void add_options(CLI::App& app, cli& c) {
  using namespace cli_detail;
  constexpr long long big = 1LL << 30;
  config& m = c.cfg;
  run_options& r = c.run;
  sparsity_config& s = r.sparsity;
  const char* G = "model";
  choice_opt(app, "--model", c.model, preset_names(),
             "preset; the options below override it")->group(G);
  choice_opt(app, "--arch", c.arch, {"gpt2", "neox", "bert"}, "architecture (default: the preset's)")->group(G);
  app.add_flag("--pre-ln", c.pre_ln, "bert: pre-LayerNorm blocks (GPT-2's) instead of BERT's post-LN")->group(G);
  real_opt(app, "--mask-rate", m.mask_rate, 0, 1, true, "bert: share of positions predicted, in (0, 1)")->group(G);
  choice_opt(app, "--mask-unit", c.mask_unit, {"word", "byte"},
             "bert: mask whole words (BERT's whole-word masking) or single bytes")->group(G);
  int_opt(app, "--layers", m.layers, 1, 4096, "transformer blocks L")->group(G);
  int_opt(app, "--channels", m.channels, 1, 65536, "channels C")->group(G);
  int_opt(app, "--heads", m.heads, 1, 4096, "attention heads NH (divides C)")->group(G);
  int_opt(app, "--block", m.block, 1, 1 << 20, "sequence length T")->group(G);
  real_opt(app, "--rotary-pct", m.rotary_pct, 0, 1, false, "neox: share of each head's dims with rotary")->group(G);
  choice_opt(app, "--precision", c.precision, {"fp32", "bf16"},
             "bf16: weights, activations and gradients rounded to bfloat16, fp32 master weights, optimizer and accumulation")
      ->group(G);
  choice_opt(app, "--device", c.run.device, {"cpu", "host", "host-check", "kokkos", "cuda"},
             "the model's backend: cpu (OpenBLAS and OpenMP loops), host (the GPU's portable kernels on the host "
             "executor), host-check (the same under host-check: shuffled threads, shadowed scratch), kokkos (the "
             "same kernels through Kokkos's default execution space, GEMMs by OpenBLAS), cuda (the same kernels "
             "and cuBLAS on the local rank's GPU); each trains dense models with --scheme none or zhybrid:16,8; "
             "host-check and cuda communicate through hcomm's device communicators (staged MPI)")
      ->group(G);
  app.add_flag("--share-gpu", c.run.share_gpu,
               "--device cuda: let more ranks of a node than it has GPUs share them, round robin (tests; NCCL "
               "refuses that, staged MPI does not)")
      ->group(G);
  app.add_option_function<std::string>(
         "--gemm-epilogues", [&c](const std::string& v) { c.run.gemm_epilogues = v == "on"; },
         "--device cuda: bias, bias + GELU and GELU's gradient fused into the GEMMs as cuBLASLt epilogues (off: "
         "cuBLAS GEMMs and the portable kernels; the host backends run separate kernels either way)")
      ->check(CLI::IsMember({"on", "off"}))->default_str("on")->group(G);
  app.add_option_function<std::string>(
         "--deterministic", [&c](const std::string& v) { c.run.deterministic = v == "on"; },
         "every kernel and reduction in a fixed order, on every backend, so that resume and a grid's equality "
         "with one rank hold bitwise: always on (off is refused: there is no faster non-deterministic mode)")
      ->check(CLI::IsMember({"on", "off"}))->default_str("on")->group(G);
  G = "batch";
  int_opt(app, "--batch", m.batch, 1, 1 << 20, "global sequences per optimizer step B")->group(G);
  int_opt(app, "--micro-batch", m.micro_batch, 0, 1 << 20, "sequences per micro-batch (0: 1 with --pp > 1, else all)")->group(G);
  G = "optimizer";
  int_opt(app, "--steps", m.steps, 1, 1000000000, "optimizer steps")->group(G);
  real_opt(app, "--lr", m.lr, 0, 1, true, "peak learning rate")->group(G);
  real_opt(app, "--min-lr-frac", m.min_lr_frac, 0, 1, false, "cosine decays to lr x this")->group(G);
  int_opt(app, "--warmup", m.warmup, 0, 1000000000, "linear warm-up steps")->group(G);
  real_opt(app, "--wd", m.weight_decay, 0, 1, false, "AdamW weight decay (matrices)")->group(G);
  real_opt(app, "--clip", m.grad_clip, 0, 1e6, false, "clip the global gradient norm to this (0: off)")->group(G);
  int_opt(app, "--seed", m.seed, 0, std::numeric_limits<std::uint64_t>::max(), "initialisation seed")->group(G);
  app.add_flag("--skip-nonfinite", r.skip_nonfinite,
               "skip the update of a step whose loss or gradient norm is NaN/Inf (default: stop with the step)")
      ->group(G);
  G = "evaluation";
  int_opt(app, "--eval-every", m.eval_every, 0, big, "validation loss every N steps (0: at the end only)")->group(G);
  int_opt(app, "--eval-batches", m.eval_batches, 1, 1 << 20, "validation batches per evaluation")->group(G);
  real_opt(app, "--val-frac", m.val_frac, 0, 0.5, false, "share of the data file held out for validation")->group(G);
  G = "grid (ranks = dp*pp*tp; rank = tp + TP*(dp + DP*pp))";
  int_opt(app, "--dp", c.dp, 1, 65536, "data-parallel replicas")->group(G);
  int_opt(app, "--pp", c.pp, 1, 65536, "pipeline stages")->group(G);
  int_opt(app, "--tp", c.tp, 1, 65536, "tensor-parallel shards (divides heads and 256)")->group(G);
  G = "communication";
  app.add_option("--scheme", r.scheme,
                 "none|naive:R|mzhybrid:R|zhybrid:R1,R2[+ef]|plain (plain: uncompressed MPI, no hcomm)")
      ->capture_default_str()->group(G);
  int_opt(app, "--compress-min-bytes", r.compress_min_bytes, 0, 1LL << 40,
          "hcomm: smaller messages go uncompressed (default: hcomm's, 1 MiB)")
      ->default_str("")->group(G);
  int_opt(app, "--idle-sleep-us", r.idle_sleep_us, -2, 1000000,
          "hcomm: wait by testing and sleeping N us (0: MPI_Wait; -2: test and yield the core; -1: -2 when more "
          "ranks share the host than it has CPUs, else 0)")->group(G);
  app.add_option_function<std::string>(
         "--compress-inside-node", [&r](const std::string& v) { r.compress_inside_node = v == "on"; },
         "hcomm: off sends the messages of an axis whose ranks all run on one node uncompressed (shared memory "
         "or NVLink faster than the codec); the axes that cross nodes keep the scheme")
      ->check(CLI::IsMember({"on", "off"}))->default_str("on")->group(G);
  app.add_option_function<std::string>(
         "--uncompressed-axes",
         [&r](const std::string& v) { r.uncompressed_axes = cli_detail::parse_axes("--uncompressed-axes", v); },
         "hcomm: these axes (comma-separated: dp, pp, tp) send every message uncompressed, the others keep the "
         "scheme (a layout known in advance, where --compress-inside-node off finds it from where ranks run)")
      ->type_name("AXIS,..")->group(G);
  app.add_option_function<std::string>(
         "--overlap", [&r](const std::string& v) { r.overlap = v == "on"; },
         "DP gradient buckets all-reduced (--zero 1: reduce-scattered) on a communication thread as backward "
         "finishes them (needs MPI_THREAD_MULTIPLE), or after backward")
      ->check(CLI::IsMember({"on", "off"}))->default_str("off")->group(G);
  choice_opt(app, "--wire", r.wire, {"auto", "bf16", "fp32"},
             "--precision bf16: 16-bit values on the wire (auto: where the scheme's codecs take them, DP of +ef "
             "schemes in float32; fp32: float32 containers)")
      ->group(G);
  int_opt(app, "--zero", r.zero, 0, 1,
          "ZeRO stage: 1 shards AdamW's moments and master weights over the DP replicas (reduce-scatter of "
          "the gradients through the scheme bucket by bucket, overlapped with --overlap on; AdamW on this "
          "replica's blocks; exact all-gather of the weights)")
      ->group(G);
  real_opt(app, "--bucket-mb", r.bucket_mb, 0, 1e6, false,
           "DP gradient bucket size in MiB, the same with --overlap on and off (0: one bucket; sparse and +ef "
           "runs: always one)")->group(G);
  real_opt(app, "--comm-timeout", r.comm_timeout, 0, 1e7, false,
           "watchdog: end the job when a rank stays longer than S seconds in one communicating phase (0: off)")
      ->group(G);
  G = "data and output";
  app.add_option("--data", r.data, "training text (bytes are tokens)")->capture_default_str()->group(G);
  app.add_option("--metrics", r.metrics, "JSON lines of per-step metrics (rank 0)")->group(G);
  app.add_option("--losses-out", r.losses_out, "'step loss' lines with 17 digits")->group(G);
  app.add_flag("--quiet", r.quiet, "no per-step lines")->group(G);
  app.add_flag("--kernel-times", r.kernel_times,
               "time each kernel and GEMM of the model's backend (CUDA events on cuda) and print rank 0's time per "
               "step by kernel at the end (from the run's second step on)")
      ->group(G);
  int_opt(app, "--sample", r.sample, 0, 1 << 20, "bytes of text to sample at the end")->group(G);
  app.add_option("--prompt", r.prompt, "prompt of the sample")->capture_default_str()->group(G);
  app.add_option("--expect-losses", r.expect_losses, "compare with a --losses-out file (exit 1 on mismatch)")->group(G);
  real_opt(app, "--expect-rtol", r.expect_rtol, 0, 1, false, "relative tolerance of --expect-losses (0: bitwise)")->group(G);
  app.add_option("--dump-tensors", r.dump_tensors,
                 "write one step's DP gradients, PP activations and TP partial sums as raw float32 files + "
                 "manifest.tsv into DIR (refused if any are there already)")
      ->type_name("DIR")->group(G);
  int_opt(app, "--dump-step", r.dump_step, 0, big, "the step --dump-tensors writes, numbered as the step lines (0: the run's first)")
      ->group(G);
  G = "checkpoints";
  app.add_option("--save", r.save, "checkpoint directory: one set DIR/step-N per save, current once complete")->group(G);
  int_opt(app, "--save-every", r.save_every, 0, big, "also save every N steps (0: only at the end / --stop-at)")->group(G);
  int_opt(app, "--stop-at", r.stop_at, 0, big, "stop (and save) before this step, as if interrupted")->default_str("")->group(G);
  int_opt(app, "--keep", r.keep, 1, 1000000, "complete sets kept in the --save directory")->group(G);
  choice_opt(app, "--on-save-error", r.on_save_error, {"stop", "continue"},
             "a save that fails on any rank stops the run, or is dropped and training goes on")->group(G);
  app.add_option("--resume", r.resume, "checkpoint directory: resume from its newest complete set")->group(G);
  app.add_flag("--reshard", r.reshard, "a set of another grid is re-cut for this one (dense sets)")->group(G);
  app.add_flag("--reshard-reset-residuals", r.reshard_reset_residuals,
               "with --reshard or --resume-block: a set with error-feedback residuals resumes with them reset to zero")
      ->group(G);
  int_opt(app, "--resume-block", r.resume_block, 1, 1 << 20,
          "the --resume set was written at this shorter --block (a sequence-length curriculum): its position rows "
          "are kept, the rows beyond start from their initialisation with zero AdamW moments")
      ->default_str("")->group(G);
  G = "cpu";
  int_opt(app, "--threads", c.threads, 0, 4096,
          "OpenMP + OpenBLAS threads per rank (0: OMP_NUM_THREADS, else this rank's CPUs / the ranks sharing them)")
      ->group(G);
  real_opt(app, "--peak-tflops", r.peak_tflops, 0, 1e6, false,
           "peak TFLOP/s of one rank's cores: the step lines and the summary show MFU against it (0: no MFU)")
      ->group(G);
  G = "sparse training (msparse)";
  choice_opt(app, "--sparsity", s.method, {"dense", "static", "set", "rigl", "mst"}, "method")->group(G);
  real_opt(app, "--sparsity-target", s.sparsity, 0, 0.999999, false, "static/set/rigl: overall sparsity")->group(G);
  reals_opt(app, "--mst-phases", {&s.warmup_frac, &s.ultra_frac}, 0, 1, "warm-up / ultra shares of the steps (0.15,0.6)")->group(G);
  reals_opt(app, "--mst-sparsity", {&s.initial_sparsity, &s.warmup_sparsity, &s.ultra_sparsity, &s.final_sparsity}, 0,
            0.999999, "initial, end of warm-up, ultra, final sparsity (0,0.8,0.9,0.85)")->group(G);
  app.add_option_function<std::string>(
         "--mst-stages",
         [&s](const std::string& v) {
           const auto got = cli_detail::parse_reals("--mst-stages", v, 2, 1, 1000);
           const double w = got[0], rs = got[1];
           if (w != std::floor(w) || rs != std::floor(rs)) throw CLI::ValidationError("--mst-stages", "wants integers, got '" + v + "'");
           s.warmup_stages = static_cast<int>(w);
           s.restore_stages = static_cast<int>(rs);
         },
         "warm-up / restore stages (4,3)")
      ->type_name("W,R")->group(G);
  int_opt(app, "--dt", s.update_interval, 0, big, "topology update interval (0: steps/20)")->group(G);
  real_opt(app, "--zeta", s.zeta, 0, 1, false, "prune/grow fraction per update")->group(G);
  int_opt(app, "--growth-ratio", s.growth_ratio, 0, 1000, "mst: r, r/(r+1) of the grown by gradient")->group(G);
  choice_opt(app, "--sparse-dist", s.distribution, {"erk", "uniform"}, "layer densities")->group(G);
  int_opt(app, "--sparse-seed", s.seed, -1, 0x7fffffff, "mask seed (-1: the model seed)")->group(G);
  real_opt(app, "--hsa-frac", s.hsa_frac, -1, 1, false, "mst: sparse attention share of the steps (< 0: the warm-up)")->group(G);
  choice_opt(app, "--hsa-pattern", s.hsa_pattern, {"local", "strided", "local_strided", "local+strided", "fixed", "dense"},
             "Hybrid Sparse Attention pattern")->group(G);
  int_opt(app, "--hsa-stride", s.hsa_stride, 0, 1 << 20, "pattern stride (0: T/8)")->group(G);
  int_opt(app, "--hsa-block", s.hsa_block, 0, 1 << 20, "pattern block (0: the stride)")->group(G);
  app.add_option_function<std::string>(
         "--sparse-dp", [&s](const std::string& v) { s.packed_dp = v == "packed"; },
         "DP all-reduce of active values only (packed) or of the dense gradient")
      ->check(CLI::IsMember({"packed", "dense"}))->default_str("packed")->group(G);
  real_opt(app, "--dense-above", s.dense_above, 0, 1e6, false,
           "sparse layers at mask density >= D run dense sgemm on the masked weight (2: never)")->group(G);
}

// Parses the command line: the preset first, then the overrides. Throws CLI::ParseError
// (CLI::CallForHelp for --help) on a bad option.
inline cli parse_cli(int argc, const char* const* argv, std::string* help = nullptr) {
  cli c;
  c.model = cli_detail::preset_name(argc, argv);
  c.cfg = preset(c.model);
  CLI::App app("train_gpt: GPT-2 / GPT-NeoX training on MPI ranks, 3-D parallel (examples/gpt/README.md)",
               "train_gpt");
  app.get_formatter()->column_width(30);
  add_options(app, c);
  // a repeated option: the last one counts, as with the flags of most trainers
  for (CLI::Option* o : app.get_options()) o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  if (help) *help = app.help();
  app.parse(argc, argv);
  const bool bert_preset = c.model.rfind("bert-", 0) == 0;
  if (bert_preset && !c.arch.empty() && c.arch != "bert")
    hcomm::fail(hcomm::errc::invalid_argument, "--model " + c.model + " is a BERT preset, but --arch " + c.arch +
                                                   " needs a GPT preset (tiny|small|medium|gpt2-124m|gpt2-350m|neox-small)");
  if (!c.arch.empty())
    c.cfg.arch = c.arch == "neox" ? arch_kind::neox : c.arch == "bert" ? arch_kind::bert : arch_kind::gpt2;
  c.arch = to_string(c.cfg.arch);
  if (c.cfg.is_bert()) c.cfg.vocab = bert_vocab;
  if (c.pre_ln && !c.cfg.is_bert())
    hcomm::fail(hcomm::errc::invalid_argument, "--pre-ln is a bert option (GPT blocks are pre-LN)");
  c.cfg.post_ln = !c.pre_ln;
  if (c.mask_unit != "word" && !c.cfg.is_bert())
    hcomm::fail(hcomm::errc::invalid_argument, "--mask-unit is a bert option (GPT predicts every next byte)");
  c.cfg.mask_words = c.mask_unit == "word";
  c.cfg.bf16 = c.precision == "bf16";
  return c;
}

// The rules between options, and the data file; throws hcomm::error(invalid_argument) with
// one line. Local to the rank (no communication); the caller agrees on the outcome.
inline void check_cli(const cli& c) {
  auto bad = [](const std::string& m) { hcomm::fail(hcomm::errc::invalid_argument, m); };
  c.cfg.validate(c.dp, c.pp, c.tp);
  const auto& s = c.run.sparsity;
  if (c.run.reshard && c.run.resume.empty()) bad("--reshard needs --resume DIR");
  if (!c.run.deterministic)
    bad("--deterministic off: train_gpt has no non-deterministic mode to switch to (its kernels use no "
        "atomics, its reductions and cuBLAS run in a fixed order), so every run is deterministic; leave it on");
  if (c.cfg.bf16 && s.method != "dense")
    bad("--precision bf16 trains dense models only (--sparsity " + s.method + " updates the weights outside the optimizer)");
  if (c.run.reshard_reset_residuals && !c.run.reshard && c.run.resume_block == 0)
    bad("--reshard-reset-residuals needs --reshard or --resume-block");
  if (c.run.resume_block > 0 && c.run.resume.empty()) bad("--resume-block needs --resume DIR");
  if (c.run.resume_block >= c.cfg.block)
    bad("--resume-block " + std::to_string(c.run.resume_block) + " must be shorter than this run's --block " +
        std::to_string(c.cfg.block) + " (a set of the same length resumes without it)");
  if (c.cfg.is_bert() && c.run.resume_block > 0 && c.run.resume_block < 3)
    bad("--resume-block: a BERT set has at least 3 positions ([CLS], one byte, [SEP])");
  if (c.run.overlap && s.sparse())
    bad("--overlap on: sparse runs (--sparsity " + s.method + ") reduce their packed DP gradients after backward, "
        "as one bucket; use --overlap off");
  if (c.run.overlap && c.run.scheme.size() > 3 && c.run.scheme.ends_with("+ef"))
    bad("--overlap on: error-feedback schemes (" + c.run.scheme + ") keep one residual per DP communicator and "
        "reduce one bucket after backward; use --overlap off");
  if (c.run.wire == "bf16" && !c.cfg.bf16) bad("--wire bf16 needs --precision bf16 (--scheme bf16 casts fp32 traffic)");
  if (c.run.wire == "bf16" && !scheme_takes_16bit(c.run.scheme))
    bad("--wire bf16: --scheme " + c.run.scheme + " does not carry 16-bit values (plain MPI has no bfloat16 sum; the "
        "bf16 and int8 codecs code float32); use --wire auto or fp32");
  if (c.run.zero == 1 && s.sparse())
    bad("--zero 1: sparse runs (--sparsity " + s.method + ") update their masked weights in the sparse trainer, "
        "which holds the whole optimizer state; use --zero 0");
  if (c.run.zero == 1 && c.run.scheme.ends_with("+ef"))
    bad("--zero 1: error-feedback schemes (" + c.run.scheme + ") keep one residual per DP communicator, for one "
        "buffer; ZeRO reduces the gradient in several (each bucket's reduce-scatter, the replicated ranges' "
        "all-reduces); use --zero 0");
  if (c.run.device != "cpu" && s.sparse())
    bad("--device " + c.run.device + ": sparse runs (--sparsity " + s.method + ") use msparse's CPU kernels; use --device cpu");
  if ((c.run.device == "cuda" || c.run.device == "host-check") && !c.run.dump_tensors.empty())
    bad("--device " + c.run.device + ": --dump-tensors reads the model's memory from the host; use --device host or cpu");
  if (c.run.share_gpu && c.run.device != "cuda") bad("--share-gpu is for --device cuda");
  // the device trainers' instantiations (train_gpt.cpp, train_cuda.cu, train_kokkos.cpp)
  const bool device_ef = c.run.device == "host-check" || c.run.device == "cuda";
  if (c.run.device != "cpu" && c.run.scheme != "none" && c.run.scheme != "zhybrid:16,8" &&
      !(device_ef && c.run.scheme == "zhybrid:16,6+ef"))
    bad("--device " + c.run.device + " is instantiated with --scheme none and zhybrid:16,8" +
        (device_ef ? std::string(" and zhybrid:16,6+ef") : std::string()) + " only, not " + c.run.scheme);
  if (s.warmup_frac + s.ultra_frac > 1) bad("--mst-phases: the warm-up and ultra shares add up to more than 1");
  if (c.run.dump_step > 0 && c.run.dump_tensors.empty()) bad("--dump-step needs --dump-tensors DIR");
  if (c.run.dump_step > c.cfg.steps)
    bad("--dump-step " + std::to_string(c.run.dump_step) + " is after the last step (--steps " + std::to_string(c.cfg.steps) + ")");
  if (!c.run.dump_tensors.empty() && s.sparse())
    bad("--dump-tensors: sparse runs (--sparsity " + s.method + ") hand DP packed active values, not the gradient "
        "allocation; dump a dense run");
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(c.run.data, ec);
  if (!fs::exists(st)) bad("--data " + c.run.data + ": no such file (run scripts/setup.sh for data/kjv.txt)");
  if (fs::is_directory(st)) bad("--data " + c.run.data + ": is a directory, not a text file");
  if (!fs::is_regular_file(st)) bad("--data " + c.run.data + ": not a regular file");
  if (!std::ifstream(c.run.data, std::ios::binary)) bad("--data " + c.run.data + ": cannot be read (" + std::strerror(errno) + ")");
  text_data::check_size(c.run.data, static_cast<std::int64_t>(fs::file_size(c.run.data, ec)), c.cfg.val_frac, c.cfg.block);
  if (!c.run.save.empty() && fs::exists(c.run.save, ec) && !fs::is_directory(c.run.save, ec))
    bad("--save " + c.run.save + ": exists and is not a directory");
}

}  // namespace gpt
