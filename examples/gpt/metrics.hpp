// examples/gpt/metrics.hpp: what rank 0 reports of each step and of the run: the step line
// on stdout, the JSON lines of --metrics, the summary lines at the end.
//
//   gpt::step_metrics m{...};              // filled by the trainer after a step
//   gpt::print_step(m);                    // "step    3/20 | loss 5.143837 | lr ... | MB raw->sent dp ..."
//   gpt::metrics_log log;  log.open("run.jsonl", /*append=*/false);  log.write(m);
//   gpt::run_totals t;  t.add(m, tokens);  gpt::print_summary(t, ...);
//
// The JSON keys and their order are an interface: scripts/plot_metrics.py, bench/model and
// bench/msparse read them.
#pragma once
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "hcomm/core/error.hpp"

namespace gpt {

// One axis' bytes: (raw, sent) summed over all ranks; and the step's encoding and decoding
// time on it, the ranks' maximum (0 uncompressed).
struct axis_bytes {
  double raw = 0, sent = 0;
  double codec_ms = 0;
};
using comm_bytes = std::array<axis_bytes, 3>;  // dp, pp, tp
inline constexpr const char* axis_names[3] = {"dp", "pp", "tp"};

struct flop_totals {
  double dense = 0, actual = 0;
};

// One optimizer step as rank 0 reports it. Sparse fields come from sparsity.hpp; a dense
// run has density 1 and phase "dense".
struct step_metrics {
  std::int64_t step = 0;       // steps done (1-based)
  int steps = 0;               // of the whole run
  double loss = 0;
  float lr = 0;
  double tokens_per_s = 0, ms = 0;
  double mfu = -1;             // model FLOPs utilisation of the step (mfu.hpp); < 0: no peak given
  double pipeline_ms = -1;     // the step's 1F1B pipeline (forward, backward, PP and TP), the ranks' maximum
  double dp_wait_ms = -1;      // then the wait for the DP gradient reduction: its exposed part, the ranks' maximum
  comm_bytes comm{};
  double val_loss = -1;        // < 0: no evaluation at this step
  double val_acc = -1;         // BERT: masked-token accuracy of that evaluation; < 0: none
  bool sparse = false;         // --sparsity other than dense: the step line shows the fields below
  flop_totals flops, flops_step;  // cumulative, this step
  double density = 1, target_density = 1, attention_density = 1;
  const char* phase = "dense";
  double dp_sparse_saved = 0;  // bytes the packed DP all-reduce did not send, all ranks
  bool topology_updated = false;
  std::uint64_t mask_checksum = 0;  // of DP replica 0's masks, after an update
};

// The step line on stdout.
inline void print_step(const step_metrics& m) {
  const auto& b = m.comm;
  std::printf("step %4lld/%d | loss %.6f | lr %.3e | %8.0f tok/s | %8.2f ms | MB raw->sent dp %.3f->%.3f pp %.3f->%.3f tp %.3f->%.3f",
              static_cast<long long>(m.step), m.steps, m.loss, m.lr, m.tokens_per_s, m.ms, b[0].raw / 1e6, b[0].sent / 1e6,
              b[1].raw / 1e6, b[1].sent / 1e6, b[2].raw / 1e6, b[2].sent / 1e6);
  if (m.mfu >= 0) std::printf(" | MFU %.1f%%", 100.0 * m.mfu);
  if (m.sparse)
    std::printf(" | %s density %.4f | GFLOP %.3f/%.3f | dp packed saved %.3f MB%s", m.phase, m.density,
                m.flops_step.actual / 1e9, m.flops_step.dense / 1e9, m.dp_sparse_saved / 1e6,
                m.topology_updated ? " | topology updated" : "");
  if (m.sparse && m.topology_updated) std::printf(" | masks %016llx", static_cast<unsigned long long>(m.mask_checksum));
  if (m.val_loss >= 0) std::printf(" | val %.6f", m.val_loss);
  if (m.val_acc >= 0) std::printf(" acc %.4f", m.val_acc);
  std::printf("\n");
  std::fflush(stdout);
}

// --metrics FILE: one JSON object per step, keys in this order (ordered_json).
inline nlohmann::ordered_json to_json(const step_metrics& m) {
  auto flops = [](const flop_totals& f) { return nlohmann::ordered_json{{"dense", f.dense}, {"actual", f.actual}}; };
  nlohmann::ordered_json j;
  j["step"] = m.step;
  j["loss"] = m.loss;
  j["lr"] = m.lr;
  j["tokens_per_s"] = m.tokens_per_s;
  if (m.mfu >= 0) j["mfu"] = m.mfu;
  j["ms"] = m.ms;
  if (m.pipeline_ms >= 0) j["pipeline_ms"] = m.pipeline_ms;
  if (m.dp_wait_ms >= 0) j["dp_wait_ms"] = m.dp_wait_ms;
  j["flops"] = flops(m.flops);
  j["flops_step"] = flops(m.flops_step);
  j["density"] = m.density;
  j["target_density"] = m.target_density;
  j["attention_density"] = m.attention_density;
  j["phase"] = m.phase;
  j["dp_sparse_saved"] = m.dp_sparse_saved;
  for (int a = 0; a < 3; ++a)
    j["comm"][axis_names[a]] = {{"raw", m.comm[a].raw}, {"sent", m.comm[a].sent}, {"codec_ms", m.comm[a].codec_ms}};
  if (m.val_loss >= 0) j["val_loss"] = m.val_loss;
  if (m.val_acc >= 0) j["val_acc"] = m.val_acc;
  return j;
}

class metrics_log {
 public:
  metrics_log() = default;
  metrics_log(const metrics_log&) = delete;
  metrics_log& operator=(const metrics_log&) = delete;
  ~metrics_log() {
    if (f_) std::fclose(f_);
  }
  // A resumed run appends to the file of the run it continues.
  void open(const std::string& path, bool append) {
    f_ = std::fopen(path.c_str(), append ? "a" : "w");
    if (!f_) hcomm::fail(hcomm::errc::io_failure, path + ": " + std::strerror(errno));
  }
  void close() {
    if (f_) std::fclose(f_);
    f_ = nullptr;
  }
  // NaN (a step skipped by --skip-nonfinite) is not JSON: it is written as null.
  void write(const step_metrics& m) {
    if (!f_) return;
    const std::string line = to_json(m).dump() + "\n";
    std::fputs(line.c_str(), f_);
    std::fflush(f_);
  }

 private:
  std::FILE* f_ = nullptr;
};

// What the summary lines add up over the steps of this run.
struct run_totals {
  double seconds = 0, tokens = 0;
  double flops = 0;            // executed FLOPs of these steps (for the run's MFU)
  comm_bytes comm{};
  double dp_sparse_saved = 0;
  double last_val = -1, last_acc = -1;
  double last_loss = 0;
  bool any_step = false;
  void add(const step_metrics& m, double tokens_per_step) {
    seconds += m.ms / 1e3;
    tokens += tokens_per_step;
    flops += m.flops_step.actual;
    for (int a = 0; a < 3; ++a) {
      comm[a].raw += m.comm[a].raw;
      comm[a].sent += m.comm[a].sent;
    }
    dp_sparse_saved += m.dp_sparse_saved;
    if (m.val_loss >= 0) last_val = m.val_loss;
    if (m.val_acc >= 0) last_acc = m.val_acc;
    last_loss = m.loss;
    any_step = true;
  }
};

// The end-of-run lines: losses, throughput and bytes saved per axis; FLOPs and sparsity.
// `tied_exchange`: GPT-2's tied-embedding gradients went over plain MPI (not in the axes).
// `mfu` < 0: no peak was given (no MFU printed).
inline void print_summary(const run_totals& t, bool tied_exchange, const flop_totals& flops, const std::string& method,
                          double density, double mfu = -1) {
  std::printf("summary: final train loss %.6f", t.any_step ? t.last_loss : 0.0);
  if (t.last_val >= 0) std::printf(", val loss %.6f", t.last_val);
  if (t.last_acc >= 0) std::printf(", val masked-token accuracy %.4f", t.last_acc);
  std::printf(", %.0f tokens/s", t.tokens / t.seconds);
  if (mfu >= 0) std::printf(", MFU %.2f%%", 100.0 * mfu);
  for (int a = 0; a < 3; ++a) {
    const double saved = t.comm[a].raw - t.comm[a].sent;
    std::printf(", %s %.2f MB saved of %.2f MB", axis_names[a], saved / 1e6, t.comm[a].raw / 1e6);
  }
  if (tied_exchange) std::printf(" (+ tied embedding exchange, plain MPI, on the first/last stage)");
  std::printf("\n");
  const double reduction = flops.actual > 0 ? flops.dense / flops.actual : 0.0;
  std::printf("summary: training FLOPs actual %.4g dense %.4g (%.2fx fewer), sparsity %s, final density %.4f, dp packed saved %.2f MB\n",
              flops.actual, flops.dense, reduction, method.c_str(), density, t.dp_sparse_saved / 1e6);
  std::fflush(stdout);
}

}  // namespace gpt
