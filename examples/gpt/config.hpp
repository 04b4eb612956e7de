// examples/gpt/config.hpp: the model + training configuration and its presets.
//
//   gpt::config c = gpt::preset("tiny");   // then per-field overrides: c.layers = 4; ...
//   c.validate(dp, pp, tp);                // throws with a message saying what does not divide
//
// The global batch (sequences per step) belongs to the configuration; the grid only decides
// how it is divided, so one configuration gives one loss curve on any grid.
//
// --arch bert is the same trainer with an encoder: bidirectional attention, post-LayerNorm
// blocks (pre-LN with --pre-ln), the MLM head, and masked-LM data (mlm.hpp); its vocabulary
// is the 256 bytes plus special tokens (bert_vocab).
#pragma once
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "hcomm/core/error.hpp"

namespace gpt {

enum class arch_kind : int { gpt2 = 0, neox = 1, bert = 2 };

inline const char* to_string(arch_kind a) {
  return a == arch_kind::gpt2 ? "gpt2" : a == arch_kind::neox ? "neox" : "bert";
}

// BERT's token ids: the 256 bytes, then the special tokens, then unused rows that pad the
// vocabulary to a multiple of 8 so that it divides over 1, 2, 4 or 8 TP ranks (BERT's own
// vocabulary has [unused] rows too; they are never inputs nor targets).
namespace bert_token {
constexpr int cls = 256, sep = 257, mask = 258, pad = 259;
}
constexpr int bert_vocab = 264;

struct config {
  // model
  arch_kind arch = arch_kind::gpt2;
  int vocab = 256;          // byte-level tokenizer
  int block = 32;           // T: sequence length (also the learned-position table size)
  int layers = 2;           // L
  int channels = 64;        // C
  int heads = 4;            // NH
  float rotary_pct = 0.25f; // neox: fraction of each head's dims that get rotary
  bool post_ln = true;      // bert: LayerNorm after each residual add (original BERT); false: pre-LN
  float mask_rate = 0.15f;  // bert: share of each sequence's positions that the MLM predicts
  bool mask_words = true;   // bert: mask whole words (BERT's whole-word masking); false: single bytes
  // precision
  bool bf16 = false;        // weights, activations and gradients stored as bfloat16 (fp32 master and optimizer)
  // batch
  int batch = 8;            // B: global sequences per optimizer step
  int micro_batch = 0;      // sequences per micro-batch on one DP rank (0: chosen from the grid)
  // optimisation
  int steps = 20;
  float lr = 1e-3f;
  float min_lr_frac = 0.1f; // cosine decays to lr * min_lr_frac
  int warmup = 2;
  float weight_decay = 0.1f;
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
  float grad_clip = 1.0f;   // <= 0: off
  std::uint64_t seed = 1337;
  // evaluation
  int eval_every = 0;       // 0: only at the end
  int eval_batches = 2;
  float val_frac = 0.1f;

  int head_dim() const { return channels / heads; }
  int rot_dim() const {
    if (arch != arch_kind::neox) return 0;
    int r = static_cast<int>(static_cast<float>(head_dim()) * rotary_pct);
    return r - (r % 2);
  }
  int hidden() const { return 4 * channels; }
  bool is_bert() const { return arch == arch_kind::bert; }
  bool causal() const { return arch != arch_kind::bert; }
  bool tied() const { return arch != arch_kind::neox; }        // output layer = token embedding
  bool bert_post_ln() const { return is_bert() && post_ln; }   // blocks x -> ln(x + f(x))

  // Micro-batch size for a grid: the configured one, else one sequence per micro-batch with
  // pipeline stages (so 1F1B has something to overlap) and the whole local batch without.
  int micro_for(int dp, int pp) const {
    if (micro_batch > 0) return micro_batch;
    return pp > 1 ? 1 : batch / dp;
  }

  // Sizes are checked for range before anything divides by them (a zero --heads or --tp must
  // be an error message, not SIGFPE), then for divisibility by the grid; rates must be finite
  // and in range. The command line range-checks every option as it parses; this is the same
  // check for configurations built in code.
  void validate(int dp, int pp, int tp) const {
    auto bad = [](const std::string& m) { hcomm::fail(hcomm::errc::invalid_argument, "gpt config: " + m); };
    auto positive = [&](const char* what, long long v) {
      if (v < 1) bad(std::string(what) + " must be at least 1 (got " + std::to_string(v) + ")");
    };
    positive("--layers", layers);
    positive("--channels", channels);
    positive("--heads", heads);
    positive("--block", block);
    positive("--batch", batch);
    positive("--steps", steps);
    positive("vocab", vocab);
    positive("--dp", dp);
    positive("--pp", pp);
    positive("--tp", tp);
    if (micro_batch < 0) bad("--micro-batch must be >= 0 (0: chosen from the grid)");
    if (warmup < 0) bad("--warmup must be >= 0");
    if (eval_every < 0) bad("--eval-every must be >= 0");
    if (eval_batches < 1) bad("--eval-batches must be at least 1");
    // element counts of the largest buffers must fit the int arithmetic of the kernels
    constexpr long long int_max = 0x7fffffffLL;
    if (4LL * channels > int_max || static_cast<long long>(batch) * block > int_max ||
        static_cast<long long>(vocab) * channels > int_max || static_cast<long long>(block) * 4 * channels > int_max ||
        static_cast<long long>(batch) * block * vocab > 0x7fffffffffffLL)
      bad("sizes too large: batch x block, 4 x channels and vocab x channels must fit a 32-bit int");
    auto finite_in = [&](const char* what, double v, double lo, double hi, bool lo_open) {
      if (!std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo))
        bad(std::string(what) + " must be a finite number in " + (lo_open ? "(" : "[") + std::to_string(lo) + ", " +
            std::to_string(hi) + "] (got " + std::to_string(v) + ")");
    };
    finite_in("--lr", lr, 0.0, 1.0, true);
    finite_in("--min-lr-frac", min_lr_frac, 0.0, 1.0, false);
    finite_in("--wd", weight_decay, 0.0, 1.0, false);
    finite_in("--clip", grad_clip, 0.0, 1e6, false);
    finite_in("--val-frac", val_frac, 0.0, 0.5, false);
    finite_in("beta1", beta1, 0.0, 1.0, false);
    finite_in("beta2", beta2, 0.0, 1.0, false);
    finite_in("eps", eps, 0.0, 1.0, true);
    if (arch == arch_kind::neox) finite_in("--rotary-pct", rotary_pct, 0.0, 1.0, false);
    if (is_bert()) {
      if (!std::isfinite(mask_rate) || mask_rate <= 0.f || mask_rate >= 1.f)
        bad("--mask-rate must be a finite number in (0, 1) (got " + std::to_string(mask_rate) + ")");
      if (block < 3) bad("bert: --block must be at least 3 ([CLS], one byte, [SEP]; got " + std::to_string(block) + ")");
      if (vocab != bert_vocab) bad("bert: the vocabulary is " + std::to_string(bert_vocab) + " (bytes + special tokens)");
    }
    if (channels % heads) bad("channels (" + std::to_string(channels) + ") must be divisible by heads");
    if (heads % tp) bad("heads (" + std::to_string(heads) + ") must be divisible by --tp " + std::to_string(tp));
    if (vocab % tp) bad("vocab (" + std::to_string(vocab) + ") must be divisible by --tp " + std::to_string(tp));
    if (layers < pp) bad("--pp " + std::to_string(pp) + " exceeds the number of layers (" + std::to_string(layers) + ")");
    if (batch % dp) bad("batch (" + std::to_string(batch) + ") must be divisible by --dp " + std::to_string(dp));
    const int mb = micro_for(dp, pp);
    if (mb < 1 || (batch / dp) % mb)
      bad("per-DP-rank batch (" + std::to_string(batch / dp) + ") must be divisible by --micro-batch " +
          std::to_string(mb));
  }

  // A fingerprint of everything that shapes parameters, optimizer state or data order:
  // a checkpoint from a different configuration is refused when this differs.
  std::string fingerprint() const {
    std::ostringstream s;
    s << to_string(arch) << " V" << vocab << " T" << block << " L" << layers << " C" << channels << " NH" << heads
      << " rot" << rot_dim() << " B" << batch << " steps" << steps << " lr" << lr << " min" << min_lr_frac << " wu"
      << warmup << " wd" << weight_decay << " b" << beta1 << "," << beta2 << " eps" << eps << " clip" << grad_clip
      << " seed" << seed << " val" << val_frac;
    if (is_bert()) s << (post_ln ? " post-ln" : " pre-ln") << " mask" << mask_rate << (mask_words ? "" : " bytes");
    if (bf16) s << " precision bf16";
    return s.str();
  }
};

// Presets; fields can be overridden on the command line afterwards.
inline const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"tiny",       "small",     "medium",     "gpt2-124m", "gpt2-350m",
                                                 "neox-small", "bert-tiny", "bert-small", "bert-base"};
  return names;
}
inline std::string preset_list() {  // "tiny|small|..."
  std::string s;
  for (const std::string& n : preset_names()) s += (s.empty() ? "" : "|") + n;
  return s;
}
inline config preset(const std::string& name) {
  config c;
  if (name == "tiny") {  // fast enough for tests: ~0.1M parameters
    c.layers = 2; c.channels = 64; c.heads = 4; c.block = 32; c.batch = 8;
  } else if (name == "small") {  // RESEARCH.md's PyTorch yardstick: 0.84M parameters
    c.layers = 4; c.channels = 128; c.heads = 4; c.block = 128; c.batch = 8; c.lr = 1e-3f;
  } else if (name == "medium") {  // for machines with more cores than the tests use
    c.layers = 8; c.channels = 256; c.heads = 8; c.block = 256; c.batch = 16; c.lr = 6e-4f;
  } else if (name == "gpt2-124m") {  // GPT-2 small's shape (86.0M parameters with the byte vocabulary)
    c.layers = 12; c.channels = 768; c.heads = 12; c.block = 1024; c.batch = 8; c.lr = 6e-4f; c.warmup = 100;
  } else if (name == "gpt2-350m") {  // GPT-2 medium's shape (303.6M parameters with the byte vocabulary)
    c.layers = 24; c.channels = 1024; c.heads = 16; c.block = 1024; c.batch = 8; c.lr = 3e-4f; c.warmup = 100;
  } else if (name == "neox-small") {  // a GPT-NeoX block at GPT-2 small's width (Pythia-160M's shape, T 2048)
    c.arch = arch_kind::neox;
    c.layers = 12; c.channels = 768; c.heads = 12; c.block = 2048; c.batch = 4; c.lr = 6e-4f; c.warmup = 100;
  } else if (name == "bert-tiny") {  // tests: the tiny shape as an encoder
    c.arch = arch_kind::bert; c.vocab = bert_vocab;
    c.layers = 2; c.channels = 64; c.heads = 4; c.block = 32; c.batch = 8;
  } else if (name == "bert-small") {
    c.arch = arch_kind::bert; c.vocab = bert_vocab;
    c.layers = 4; c.channels = 256; c.heads = 4; c.block = 128; c.batch = 16; c.lr = 5e-4f;
  } else if (name == "bert-base") {  // BERT-base's shape (L12 C768 NH12 T512), byte vocabulary
    c.arch = arch_kind::bert; c.vocab = bert_vocab;
    c.layers = 12; c.channels = 768; c.heads = 12; c.block = 512; c.batch = 32; c.lr = 1e-4f; c.warmup = 100;
    c.weight_decay = 0.01f; c.beta2 = 0.999f; c.eps = 1e-6f;
  } else {
    hcomm::fail(hcomm::errc::invalid_argument,
                "unknown --model preset '" + name + "' (" + preset_list() + ")");
  }
  return c;
}

}  // namespace gpt
