// examples/gpt/params.hpp: the model's parameter list, its sharding over TP ranks and its
// layout per pipeline stage: what every grid agrees on, so that any grid trains the same model.
//
//   auto specs = gpt::global_specs(cfg);                       // canonical order, global shapes
//   auto mine = gpt::stage_tensors(cfg, {pp, pp_rank, tp, tp_rank});  // offsets in this stage's allocation
//   gpt::extract_shard(specs[i], global, tp, tp_rank, local);  // and insert_shard, its inverse
//
// Global tensor order (used by the PyTorch debug state and by initialisation):
//   gpt2: wte[V,C] wpe[T,C] {ln1_w ln1_b qkv_w[3C,C] qkv_b proj_w[C,C] proj_b ln2_w ln2_b
//         fc_w[4C,C] fc_b fcp_w[C,4C] fcp_b} x L  lnf_w lnf_b          (lm head = wte, tied)
//   neox: wte[V,C] {same 12 per layer} x L lnf_w lnf_b lm_w[V,C]       (untied, no wpe)
//   bert: wte[V,C] wpe[T,C] emb_ln_w emb_ln_b (post-LN) {same 12 per layer} x L
//         lnf_w lnf_b (pre-LN) mlm_w[C,C] mlm_b mlm_ln_w mlm_ln_b mlm_bias[V]  (decoder = wte, tied)
//   In BERT's post-LN blocks ln1 normalises x + attn(x) and ln2 x + mlp(x) (the block's output);
//   in pre-LN blocks they are GPT-2's.
// Sharding over TP ranks: qkv (q, k, v blocks each split by heads) and fc are column-parallel,
// proj and fcp are row-parallel (split along their input), wte/lm_w/mlm_bias are vocab-parallel
// (rows), everything else is replicated (BERT's MLM transform mlm_w is computed on every TP
// rank, as in Megatron-LM's BERT head).
#pragma once
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"

namespace gpt {

enum class shard_kind : int { replicated, rows, qkv_rows, cols };

struct param_spec {
  std::string name;
  int layer = -1;          // -1: not in a transformer block
  std::int64_t rows = 0;   // global shape [rows, cols]; vectors have cols = 1
  std::int64_t cols = 1;
  shard_kind shard = shard_kind::replicated;
  bool decay = false;      // AdamW weight decay: matrices only
  float init_std = 0.f;    // 0: constant init_value
  float init_value = 0.f;
  std::int64_t numel() const { return rows * cols; }
};

// Tensors before the first block (first stage) and after the last (last stage).
inline int embed_tensor_count(const config& c) {
  return c.arch == arch_kind::neox ? 1 : c.bert_post_ln() ? 4 : 2;
}
inline int head_tensor_count(const config& c) {
  return c.arch == arch_kind::gpt2 ? 2 : c.arch == arch_kind::neox ? 3 : (c.post_ln ? 0 : 2) + 5;
}

// The global parameter list in canonical order.
inline std::vector<param_spec> global_specs(const config& c) {
  const std::int64_t V = c.vocab, C = c.channels, T = c.block, H = c.hidden();
  // BERT initialises every matrix N(0, 0.02); GPT-2 scales the residual projections by 1/sqrt(2L)
  const float std0 = 0.02f, std_res = c.is_bert() ? std0 : 0.02f / std::sqrt(2.f * static_cast<float>(c.layers));
  std::vector<param_spec> s;
  s.push_back({"wte", -1, V, C, shard_kind::rows, true, std0, 0});
  if (c.arch == arch_kind::gpt2) s.push_back({"wpe", -1, T, C, shard_kind::replicated, true, std0 / 2, 0});
  if (c.is_bert()) s.push_back({"wpe", -1, T, C, shard_kind::replicated, true, std0, 0});
  if (c.bert_post_ln()) {
    s.push_back({"emb_ln_w", -1, C, 1, shard_kind::replicated, false, 0, 1});
    s.push_back({"emb_ln_b", -1, C, 1, shard_kind::replicated, false, 0, 0});
  }
  for (int l = 0; l < c.layers; ++l) {
    auto n = [&](const char* x) {  // appended piecewise: GCC 12 warns (-Wrestrict) on "h" + std::string
      std::string r("h");
      r.append(std::to_string(l)).append(".").append(x);
      return r;
    };
    s.push_back({n("ln1_w"), l, C, 1, shard_kind::replicated, false, 0, 1});
    s.push_back({n("ln1_b"), l, C, 1, shard_kind::replicated, false, 0, 0});
    s.push_back({n("qkv_w"), l, 3 * C, C, shard_kind::qkv_rows, true, std0, 0});
    s.push_back({n("qkv_b"), l, 3 * C, 1, shard_kind::qkv_rows, false, 0, 0});
    s.push_back({n("proj_w"), l, C, C, shard_kind::cols, true, std_res, 0});
    s.push_back({n("proj_b"), l, C, 1, shard_kind::replicated, false, 0, 0});
    s.push_back({n("ln2_w"), l, C, 1, shard_kind::replicated, false, 0, 1});
    s.push_back({n("ln2_b"), l, C, 1, shard_kind::replicated, false, 0, 0});
    s.push_back({n("fc_w"), l, H, C, shard_kind::rows, true, std0, 0});
    s.push_back({n("fc_b"), l, H, 1, shard_kind::rows, false, 0, 0});
    s.push_back({n("fcp_w"), l, C, H, shard_kind::cols, true, std_res, 0});
    s.push_back({n("fcp_b"), l, C, 1, shard_kind::replicated, false, 0, 0});
  }
  if (!c.bert_post_ln()) {
    s.push_back({"lnf_w", -1, C, 1, shard_kind::replicated, false, 0, 1});
    s.push_back({"lnf_b", -1, C, 1, shard_kind::replicated, false, 0, 0});
  }
  if (c.arch == arch_kind::neox) s.push_back({"lm_w", -1, V, C, shard_kind::rows, true, std0, 0});
  if (c.is_bert()) {  // the MLM head: dense + GELU + LayerNorm, decoder = wte plus its own bias
    s.push_back({"mlm_w", -1, C, C, shard_kind::replicated, true, std0, 0});
    s.push_back({"mlm_b", -1, C, 1, shard_kind::replicated, false, 0, 0});
    s.push_back({"mlm_ln_w", -1, C, 1, shard_kind::replicated, false, 0, 1});
    s.push_back({"mlm_ln_b", -1, C, 1, shard_kind::replicated, false, 0, 0});
    s.push_back({"mlm_bias", -1, V, 1, shard_kind::rows, false, 0, 0});
  }
  return s;
}

constexpr int params_per_layer = 12;

// Index of a tensor in global_specs().
inline int global_index_of_layer(const config& c, int layer) { return embed_tensor_count(c) + layer * params_per_layer; }

// Copies the TP shard of global tensor g (row-major [rows, cols]) into out.
inline void extract_shard(const param_spec& s, const float* g, int tp, int r, float* out) {
  const std::int64_t R = s.rows, K = s.cols;
  switch (s.shard) {
    case shard_kind::replicated:
      for (std::int64_t i = 0; i < R * K; ++i) out[i] = g[i];
      break;
    case shard_kind::rows: {
      const std::int64_t rl = R / tp;
      for (std::int64_t i = 0; i < rl * K; ++i) out[i] = g[r * rl * K + i];
      break;
    }
    case shard_kind::qkv_rows: {  // three blocks of R/3 rows, each split by heads
      const std::int64_t blk = R / 3, bl = blk / tp;
      for (int j = 0; j < 3; ++j)
        for (std::int64_t i = 0; i < bl * K; ++i) out[j * bl * K + i] = g[(j * blk + r * bl) * K + i];
      break;
    }
    case shard_kind::cols: {
      const std::int64_t kl = K / tp;
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t j = 0; j < kl; ++j) out[i * kl + j] = g[i * K + r * kl + j];
      break;
    }
  }
}

// The inverse: writes a shard back into its place in the global tensor.
inline void insert_shard(const param_spec& s, const float* in, int tp, int r, float* g) {
  const std::int64_t R = s.rows, K = s.cols;
  switch (s.shard) {
    case shard_kind::replicated:
      for (std::int64_t i = 0; i < R * K; ++i) g[i] = in[i];
      break;
    case shard_kind::rows: {
      const std::int64_t rl = R / tp;
      for (std::int64_t i = 0; i < rl * K; ++i) g[r * rl * K + i] = in[i];
      break;
    }
    case shard_kind::qkv_rows: {
      const std::int64_t blk = R / 3, bl = blk / tp;
      for (int j = 0; j < 3; ++j)
        for (std::int64_t i = 0; i < bl * K; ++i) g[(j * blk + r * bl) * K + i] = in[j * bl * K + i];
      break;
    }
    case shard_kind::cols: {
      const std::int64_t kl = K / tp;
      for (std::int64_t i = 0; i < R; ++i)
        for (std::int64_t j = 0; j < kl; ++j) g[i * K + r * kl + j] = in[i * kl + j];
      break;
    }
  }
}

inline std::int64_t shard_numel(const param_spec& s, int tp) {
  return s.shard == shard_kind::replicated ? s.numel() : s.numel() / tp;
}

// Deterministic N(0, std) from a 64-bit seed (splitmix64 + Box-Muller): the same on every
// platform and grid, unlike std::normal_distribution.
struct rng {
  std::uint64_t state;
  std::uint64_t next_u64() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }  // [0,1)
  double normal() {
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
};

// The initial values of global tensor `index`: its own seeded stream, so that every grid
// draws the same, and a tensor's first k values do not depend on how many follow (a position
// table grown at resume, checkpoint.hpp, continues the draw of a run started at that length).
inline std::vector<float> initial_values(const param_spec& s, int index, std::uint64_t seed) {
  std::vector<float> g(static_cast<std::size_t>(s.numel()), s.init_value);
  if (s.init_std > 0.f) {
    rng r{seed * 1000003ull + static_cast<std::uint64_t>(index) * 7919ull};
    for (auto& x : g) x = static_cast<float>(r.normal() * s.init_std);
  }
  return g;
}

struct stage_place {
  int pp = 1, pp_rank = 0, tp = 1, tp_rank = 0;
};

// Layers [first, last) of stage s: as even as possible, earlier stages take the remainder.
inline std::pair<int, int> stage_layers(int L, int pp, int s) {
  const int base = L / pp, extra = L % pp;
  const int first = s * base + (s < extra ? s : extra);
  return {first, first + base + (s < extra ? 1 : 0)};
}

struct local_tensor {
  int global = 0;          // index into global_specs
  std::int64_t offset = 0; // into the stage's parameter allocation
  std::int64_t numel = 0;
  bool tied_copy = false;  // gpt2 with pp > 1: the last stage's copy of wte
  bool counts_in_norm = true;  // false for TP-replicated tensors on tp_rank > 0 and for tied copies
};

// The tensors of one stage and TP shard, in the order of its parameter allocation (also
// used to re-cut checkpoints of another grid: examples/gpt/checkpoint.hpp, --reshard).
inline std::vector<local_tensor> stage_tensors(const config& c, stage_place place) {
  const auto specs = global_specs(c);
  const bool first = place.pp_rank == 0, last = place.pp_rank == place.pp - 1;
  const auto [l0, l1] = stage_layers(c.layers, place.pp, place.pp_rank);
  const int tp = place.tp;
  std::vector<local_tensor> out;
  std::int64_t off = 0;
  auto add = [&](int g, bool tied_copy) {
    local_tensor t;
    t.global = g;
    t.offset = off;
    t.numel = shard_numel(specs[g], tp);
    t.tied_copy = tied_copy;
    t.counts_in_norm = !tied_copy && (specs[g].shard != shard_kind::replicated || place.tp_rank == 0);
    off += t.numel;
    out.push_back(t);
  };
  if (first)
    for (int j = 0; j < embed_tensor_count(c); ++j) add(j, false);
  for (int l = l0; l < l1; ++l)
    for (int j = 0; j < params_per_layer; ++j) add(global_index_of_layer(c, l) + j, false);
  if (last) {
    const int head = global_index_of_layer(c, c.layers);
    for (int j = 0; j < head_tensor_count(c); ++j) add(head + j, false);
    if (c.tied() && !first) add(0, true);  // tied lm head lives on another stage: keep a synchronised copy
  }
  return out;
}

}  // namespace gpt
