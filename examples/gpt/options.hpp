// examples/gpt/options.hpp: the run's options beside the model configuration (config.hpp):
// data, scheme, output files, checkpoints, fault handling, and the sparse-training options.
//
//   gpt::run_options o;                     // cli.hpp fills it from the command line
//   o.sparsity.method = "mst";
//   std::string f = o.sparsity.describe(cfg.steps);   // part of the checkpoint fingerprint
//
// Plain values with their defaults; the command line (cli.hpp) range-checks them.
#pragma once
#include <algorithm>
#include <cstdio>
#include <string>

namespace gpt {

// --sparsity and its schedule (msparse::sparsity_options, built in sparsity.hpp).
struct sparsity_config {
  std::string method = "dense";      // dense | static | set | rigl | mst
  double sparsity = 0.9;             // static / set / rigl: constant overall sparsity
  // mst schedule (msparse::mst_options): warm-up and ultra-sparse shares of the steps, the
  // sparsities at the phase boundaries, the stages of warm-up and restoration. The defaults
  // are the schedule chosen with bench/msparse/mst_experiment.sh (bench/msparse/RESULTS.md).
  double warmup_frac = 0.15, ultra_frac = 0.6;
  double initial_sparsity = 0.0, warmup_sparsity = 0.8, ultra_sparsity = 0.9, final_sparsity = 0.85;
  int warmup_stages = 4, restore_stages = 3;
  int update_interval = 0;           // dT; 0: max(1, steps / 20)
  double zeta = 0.3;
  int growth_ratio = 3;              // mst: r, r/(r+1) of the grown by gradient
  double hsa_frac = 0.5;             // mst: sparse attention for this share of steps (< 0: warm-up)
  std::string hsa_pattern = "local_strided";  // local | strided | local_strided | fixed | dense
  int hsa_stride = 0;                // 0: max(1, T / 8)
  int hsa_block = 0;                 // 0: the stride
  std::string distribution = "erk";  // erk | uniform
  int seed = -1;                     // -1: the model seed
  bool packed_dp = true;             // sparsity-aware DP all-reduce
  // A sparse layer whose mask density is >= this runs dense sgemm on its masked weight (the
  // zeros at inactive positions make it the same product) and keeps only the active
  // positions of the weight gradient; its FLOPs are counted dense. 0.5: about where the
  // sparse kernels stop beating sgemm at C = 128 (bench/msparse/RESULTS.md); > 1: never.
  double dense_above = 0.5;

  bool sparse() const { return method != "dense"; }
  int interval_for(int steps) const { return update_interval > 0 ? update_interval : std::max(1, steps / 20); }
  // Everything that shapes the training: part of the checkpoint fingerprint.
  std::string describe(int steps) const {
    if (!sparse()) return "sparsity dense";
    char b[512];
    std::snprintf(b, sizeof b,
                  "sparsity %s s%g mst %g,%g %g,%g,%g,%g %d,%d dT%d zeta%g r%d hsa %g %s %d %d dist %s seed %d",
                  method.c_str(), sparsity, warmup_frac, ultra_frac, initial_sparsity, warmup_sparsity, ultra_sparsity,
                  final_sparsity, warmup_stages, restore_stages, interval_for(steps), zeta, growth_ratio, hsa_frac,
                  hsa_pattern.c_str(), hsa_stride, hsa_block, distribution.c_str(), seed);
    return b;
  }
};

struct run_options {
  std::string data = "data/kjv.txt";
  std::string scheme = "none";
  std::string metrics;        // JSON lines file (rank 0)
  std::string losses_out;     // "step loss" lines, %.17g (rank 0)
  std::string expect_losses;  // compare with such a file at the end; non-zero exit on mismatch
  double expect_rtol = 1e-5;
  std::string save, resume;   // checkpoint directories
  long long compress_min_bytes = -1;  // hcomm: messages below this go uncompressed (-1: hcomm's default)
  int idle_sleep_us = -1;              // hcomm: comm_options::idle_sleep_us (-1: auto, 0: MPI_Wait, -2: yield)
  bool compress_inside_node = true;   // hcomm: comm_options::compress_inside_node (--compress-inside-node)
  std::string uncompressed_axes;      // --uncompressed-axes: "" or some of dp, pp, tp, comma-separated, in that order
  bool uncompressed_axis(const std::string& axis) const {
    return ("," + uncompressed_axes + ",").find("," + axis + ",") != std::string::npos;
  }
  int save_every = 0;         // also save every k steps (0: only at the end / stop)
  int stop_at = -1;           // stop (and save) before this step, as if interrupted
  int keep = 1;               // complete checkpoint sets kept in the --save directory
  std::string on_save_error = "stop";  // a failed save: stop | continue (training goes on)
  double comm_timeout = 0;    // watchdog seconds (0: off)
  bool overlap = false;       // DP buckets reduced on a communication thread during backward
  // --precision bf16: what the communicators carry (wire.hpp): auto (16-bit values where the
  // scheme's codecs take them: not plain, bf16, int8; DP of +ef schemes stays float32),
  // bf16 (the same, refused where impossible), fp32 (float32 containers of bf16 values).
  std::string wire = "auto";
  int zero = 0;               // ZeRO stage: 0 (replicated AdamW) | 1 (AdamW state sharded over DP, zero.hpp)
  double bucket_mb = 25;      // DP bucket size in MiB (0: one bucket); sparse and +ef runs: one bucket
  bool skip_nonfinite = false;  // NaN/Inf loss or gradient norm: skip the update (else stop)
  bool reshard = false;       // --resume a set of another grid, re-cut for this one
  bool reshard_reset_residuals = false;  // ... and drop its error-feedback residuals
  int resume_block = 0;       // the --resume set's --block when shorter than this run's (0: the same)
  int sample = 64;            // bytes of text to sample at the end (0: none)
  std::string prompt = "And God said";
  std::string dump_tensors;   // directory for one step's communicated tensors (dump.hpp)
  int dump_step = 0;          // that step, as the step lines number it (0: the run's first)
  bool quiet = false;
  bool kernel_times = false;  // time every kernel of the model's backend; rank 0 prints the table at the end
  double peak_tflops = 0;     // one rank's device peak for the MFU figures (0: unknown, no MFU)
  std::string device = "cpu"; // the model's backend: cpu | host | host-check | kokkos (portable kernels) | cuda
  bool share_gpu = false;     // --device cuda: more ranks on a node than GPUs (round robin; tests)
  bool gemm_epilogues = true; // --device cuda: bias and GELU fused into cuBLASLt's GEMMs
  bool deterministic = true;  // --deterministic: on is the only mode (off is refused: cli.hpp)
  sparsity_config sparsity;   // --sparsity and its schedule options
};

// Schemes whose codecs take 16-bit values (none, MPC, ZFP); plain MPI has no bfloat16 sum, and
// the bf16 and int8 codecs code float32 (the bf16 cast is 16 bits on the wire already).
inline bool scheme_takes_16bit(const std::string& scheme) {
  return !(scheme == "plain" || scheme == "bf16" || scheme.starts_with("bf16+") || scheme.starts_with("int8"));
}

}  // namespace gpt
