// examples/gpt/sparsity.hpp: sparse training in train_gpt (--sparsity dense|static|set|rigl|mst),
// built on msparse: the topology (masks, schedule, prune/grow), the sparse linear layer
// (SpMM forward, transposed SpMM input gradient, SDDMM weight gradient at active positions),
// Hybrid Sparse Attention (block-sparse attention in the schedule's early window) and the
// FLOP counter.
//
//   gpt::sparse_trainer sp;
//   sp.setup(cfg, sparsity_cfg, model, adam, {dp, dp_rank, pp_rank, tp, tp_rank});  // masks at step 0
//   model.set_block_ops(&sp);                // the block's linears and attention go through sp
//   each step:  sp.begin_step(step);  forward, backward;  DP reduction of model.grads with
//               sp.packed_grads() (dp_reduce.hpp);  clip;  adam;
//               sp.end_step(step);                  // FLOPs counted, topology updated, checks
//
// Which weights are sparse: every block's QKV, attention-out, MLP-in and MLP-out weight. The
// LM head (tied to the token embedding in GPT-2, 256 x C here) stays dense; so do embeddings,
// norms and biases. The model keeps its dense parameter allocation (zeros at inactive
// positions, so AdamW over the whole allocation leaves them exactly zero: zero gradient, zero
// moments); between topology updates each sparse layer's active values are gathered into the
// sparse format once per step (O(nnz)) and all products run on it. The dense weight gradient
// (one sgemm) is computed only on topology-update steps of gradient-growth rules (RigL, MST),
// into a separate buffer that is DP-all-reduced and read by the growth rule only, so the
// optimizer never sees gradients at inactive positions. A layer whose mask is full (MST's
// dense first warm-up stage) runs the dense sgemm path; so does, on its masked weight, a
// layer whose mask density is at or above --dense-above (default 0.5, where the sparse
// kernels stop being faster than sgemm at C = 128; e.g. MST's early warm-up stages), keeping
// only the active positions of the weight gradient. Such a layer's FLOPs are counted dense
// (the counter gets the executed density, the metrics' "density" stays the masks').
//
// Parallelism. Masks are a pure function of (seed, step, global layer index, weights,
// gradients): the topology lists every block of the model (layers of other pipeline stages
// marked dense so they are skipped; ERK densities are unchanged because every block has the
// same shapes), so a pipeline stage's masks are the single-rank masks. DP replicas hold
// identical weights and all-reduced gradients, so they compute identical masks; a checksum
// is compared across DP replicas at every update (a mismatch fails the run). Under TP the
// topology works per shard (per-shard targets and top-k, msparse/topology.hpp), so masks,
// and hence losses, differ from the TP = 1 run; QKV's shard (three row blocks) is also not
// the topology's contiguous row shard, which only changes which random initial mask it gets.
// Resharding a checkpoint set (--reshard, checkpoint.hpp) may therefore change DP and PP (a
// layer's mask is the old owning stage's) but not TP (the masks are TP-specific).
//
// Sparsity-aware DP: each sparse layer hands the DP reduction its gradient packed to its
// active values (packed_grads(); sparse-format order, identical on every replica), so only
// those are sent (dp_reduce.hpp).
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"
#include "dp_reduce.hpp"
#include "kernels.hpp"
#include "model.hpp"
#include "msparse/msparse.hpp"
#include "optim.hpp"
#include "options.hpp"

namespace gpt {

// What a sparsity checkpoint holds (checkpoint.hpp): the topology (masks, schedule, last
// update step) and the FLOP totals. The growth RNG is counter-based on (seed, step, layer).
struct sparse_state {
  msparse::sparse_topology topology;
  msparse::flop_counter flops;
};

inline msparse::attention::pattern hsa_pattern_of(const std::string& n) {
  namespace at = msparse::attention;
  if (n == "local") return at::pattern::local;
  if (n == "strided") return at::pattern::strided;
  if (n == "local_strided" || n == "local+strided") return at::pattern::local_strided;
  if (n == "fixed") return at::pattern::fixed;
  if (n == "dense") return at::pattern::dense;
  hcomm::fail(hcomm::errc::invalid_argument, "--hsa-pattern must be local, strided, local_strided, fixed or dense");
}

struct grid_place {
  int dp = 1, dp_rank = 0, pp_rank = 0, tp = 1, tp_rank = 0;
};

// Model, Adam: the trainer's model and optimiser types (sparse runs need host memory: the
// sparse kernels are msparse's CPU ones; other backends run dense, for the FLOP counts).
template <class Model = stage_model, class Adam = adamw>
class basic_sparse_trainer final : public block_ops {
 public:
  struct local_layer {
    std::size_t topo = 0;     // index in the topology (= msparse::gpt_linear_layers order)
    int block = 0, which = 0;
    std::int64_t offset = 0, rows = 0, cols = 0;  // local shard in the stage's allocation
    bool dense_path = true;   // mask full: sgemm
    bool masked_dense = false;  // mask density >= dense_above: sgemm on the masked weight
    msparse::layer::sparse_linear<> lin{1, 1, false};
    std::vector<float> gpacked, gdense, gscratch;
    const float* tiled_x = nullptr;  // input whose tiles the layer holds (last forward/backward)
  };

  void setup(const config& c, const sparsity_config& s, Model& model, Adam& adam, grid_place g) {
    cfg_ = c;
    sc_ = s;
    model_ = &model;
    adam_ = &adam;
    g_ = g;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
    const msparse::gpt_shape shape = shape_at(c.block);
    flops_ = msparse::flop_counter(shape, static_cast<std::size_t>(c.batch));
    auto layers = msparse::gpt_linear_layers(shape);  // h<b>.{attn.qkv, attn.out, mlp.fc, mlp.proj}, lm_head
    // local blocks of this stage, from the model's tensor list
    std::vector<char> local_block(static_cast<std::size_t>(c.layers), 0);
    slot_.assign(static_cast<std::size_t>(c.layers) * 4, -1);
    const auto& specs = model.specs();
    for (const auto& t : model.tensors()) {
      const auto& sp = specs[t.global];
      if (sp.layer < 0) continue;
      local_block[sp.layer] = 1;
      int which = -1;
      const std::string leaf = sp.name.substr(sp.name.find('.') + 1);
      if (leaf == "qkv_w") which = 0;
      else if (leaf == "proj_w") which = 1;
      else if (leaf == "fc_w") which = 2;
      else if (leaf == "fcp_w") which = 3;
      if (which < 0) continue;
      local_layer L;
      L.topo = static_cast<std::size_t>(sp.layer) * 4 + which;
      L.block = sp.layer;
      L.which = which;
      L.offset = t.offset;
      const bool by_rows = which == 0 || which == 2;
      L.rows = by_rows ? sp.rows / g.tp : sp.rows;
      L.cols = by_rows ? sp.cols : sp.cols / g.tp;
      slot_[L.topo] = static_cast<int>(locals_.size());
      locals_.push_back(std::move(L));
    }
    for (std::size_t i = 0; i + 1 < layers.size(); ++i)
      layers[i].sparse = local_block[i / 4] != 0;  // other stages' layers: skipped here
    msparse::tp_sharding tp;
    tp.parts = static_cast<std::size_t>(g.tp);
    tp.index = static_cast<std::size_t>(g.tp_rank);
    for (std::size_t i = 0; i < layers.size(); ++i)
      tp.axes.push_back((i + 1 == layers.size() || i % 4 == 0 || i % 4 == 2) ? msparse::shard_axis::rows
                                                                            : msparse::shard_axis::cols);
    msparse::sparsity_options o;
    o.method = s.method;
    o.total_steps = c.steps;
    o.sparsity = s.sparsity;
    o.mst.warmup_fraction = s.warmup_frac;
    o.mst.ultra_fraction = s.ultra_frac;
    o.mst.initial_sparsity = s.initial_sparsity;
    o.mst.warmup_sparsity = s.warmup_sparsity;
    o.mst.ultra_sparsity = s.ultra_sparsity;
    o.mst.final_sparsity = s.final_sparsity;
    o.mst.warmup_stages = s.warmup_stages;
    o.mst.restore_stages = s.restore_stages;
    o.mst.hsa_fraction = s.hsa_frac;
    o.mixed_ratio = static_cast<unsigned>(s.growth_ratio);
    o.update_interval = s.interval_for(c.steps);
    o.zeta = s.zeta;
    o.distribution = s.distribution == "uniform" ? msparse::distribution_kind::uniform : msparse::distribution_kind::erk;
    o.seed = s.seed >= 0 ? static_cast<std::uint64_t>(s.seed) : c.seed;
    topo_ = msparse::make_topology(o, std::move(layers), std::move(tp));
    const std::size_t stride = s.hsa_stride > 0 ? static_cast<std::size_t>(s.hsa_stride)
                                                : std::max<std::size_t>(1, static_cast<std::size_t>(c.block) / 8);
    const std::size_t blk = s.hsa_block > 0 ? static_cast<std::size_t>(s.hsa_block) : stride;
    // BERT: the same patterns without the causal cut (msparse/attention/pattern.hpp)
    hsa_ = msparse::attention::hybrid({hsa_pattern_of(s.hsa_pattern), stride, 1, c.causal()},
                                      static_cast<std::size_t>(c.block), std::min<std::size_t>(blk, msparse::attention::max_block));
    if (sc_.sparse()) {
      topo_.init(tensors());  // step-0 masks; inactive weights zeroed
      rebuild();
    }
    global_densities();
  }

  bool active() const { return sc_.sparse(); }
  // One line for the banner: method, stages (begin:sparsity), dT, HSA window and pattern.
  std::string describe() const {
    if (!active()) return "sparsity: dense";
    const auto& c = topo_.sched().config();
    std::string r = "sparsity: " + sc_.method + ", stages";
    char b[96];
    for (const auto& st : c.stages) {
      std::snprintf(b, sizeof b, " %lld:%.3g", static_cast<long long>(st.begin), st.sparsity);
      r += b;
    }
    std::snprintf(b, sizeof b, ", dT %lld, zeta %.3g, %s", static_cast<long long>(c.update_interval), c.zeta,
                  sc_.distribution.c_str());
    r += b;
    if (c.hsa_end > 0) {
      std::snprintf(b, sizeof b, ", HSA %s steps [0, %lld) at %.3f of %s entries", sc_.hsa_pattern.c_str(),
                    static_cast<long long>(c.hsa_end), hsa_.sparse().kept_fraction(),
                    hsa_.sparse().is_causal() ? "causal" : "all");
      r += b;
    }
    return r;
  }
  const msparse::sparse_topology& topology() const { return topo_; }

  // ---- per step --------------------------------------------------------------------------
  void begin_step(std::int64_t step) {
    step_ = step;
    if (!active()) return;
    dense_grad_ = topo_.needs_dense_gradient(step);
    sparse_attn_ = topo_.sched().sparse_attention(step);
    packed_.clear();
    growth_.clear();
    for (auto& L : locals_) {
      L.tiled_x = nullptr;  // the buffers get new activations this step
      if (L.dense_path) continue;
      if (!L.masked_dense) L.lin.weight().gather_from(model_->params.data() + L.offset);  // AdamW moved the values
      std::fill(L.gpacked.begin(), L.gpacked.end(), 0.f);
      packed_.push_back({L.offset, L.rows * L.cols, std::span<float>(L.gpacked), &L.lin.weight()});
      if (dense_grad_) {
        L.gdense.assign(static_cast<std::size_t>(L.rows * L.cols), 0.f);
        growth_.push_back(std::span<float>(L.gdense));
      }
    }
  }

  // The sparse layers' gradients for the DP reduction (dp_reduce.hpp), valid from
  // begin_step() to end_step(): packed active values, and on topology-update steps of
  // gradient-growth rules the dense gradients the growth rule reads.
  std::span<const packed_grad> packed_grads() const { return packed_; }
  std::span<const std::span<float>> growth_grads() const { return growth_; }

  // After the optimizer: count this step's FLOPs (with the masks it ran with), update the
  // topology on update steps, check the invariants. Collective (MPI_COMM_WORLD).
  void end_step(std::int64_t step) {
    last_ = flops_.step(exec_densities_, attention_density(step), active() && topo_.needs_dense_gradient(step));
    updated_ = false;
    if (!active() || !topo_.is_update_step(step)) return;
    auto t = tensors();
    for (auto& L : locals_)  // growth reads the all-reduced dense gradient
      t[L.topo].grad = L.dense_path ? model_->grads.data() + L.offset : (L.gdense.empty() ? nullptr : L.gdense.data());
    topo_.update(step, t);
    rebuild();
    global_densities();
    check(step);
    updated_ = true;
  }

  // ---- reporting ---------------------------------------------------------------------------
  const msparse::step_flops& step_flops() const { return last_; }
  const msparse::step_flops& total_flops() const { return flops_.total(); }
  bool updated() const { return updated_; }
  // Overall density of the sparse weights (whole model, all stages and shards).
  double density() const { return density_; }
  double target_density(std::int64_t step) const { return 1.0 - topo_.target_sparsity(step); }
  const char* phase(std::int64_t step) const {
    if (!active()) return "dense";
    switch (topo_.sched().phase(step)) {
      case msparse::phase_id::warmup: return "warmup";
      case msparse::phase_id::ultra: return "ultra";
      default: return "restore";
    }
  }
  double attention_density(std::int64_t step) const {
    return active() && topo_.sched().sparse_attention(step) ? hsa_.sparse().kept_fraction() : 1.0;
  }
  std::uint64_t checksum() const { return checksum_; }  // XOR over ranks of the DP-replica-0 masks
  int failures() const { return failures_; }

  // The model's shape for FLOP counting, at sequence length T.
  msparse::gpt_shape shape_at(int T) const {
    return {static_cast<std::size_t>(cfg_.layers), static_cast<std::size_t>(cfg_.channels),
            static_cast<std::size_t>(cfg_.heads), static_cast<std::size_t>(T), static_cast<std::size_t>(cfg_.vocab),
            false, cfg_.causal(), cfg_.is_bert()};
  }

  // ---- state, for checkpoints (checkpoint.hpp) --------------------------------------------
  const msparse::flop_counter& flops() const { return flops_; }
  // After the parameters were loaded at `step`: a saved topology and FLOP totals (sparse), or
  // for a dense run the cumulative FLOPs recounted (every step is the same; at the set's
  // sequence length `saved_block`, shorter than this run's after --resume-block).
  void restore(std::int64_t step, std::optional<sparse_state> saved, int saved_block) {
    step_ = step;
    if (!active()) {
      msparse::flop_counter before(shape_at(saved_block), static_cast<std::size_t>(cfg_.batch));
      for (std::int64_t s = 0; s < step; ++s) before.step(densities_, 1.0, false);
      flops_.continue_from(before);
      return;
    }
    if (!saved) return;
    topo_ = std::move(saved->topology);
    flops_ = std::move(saved->flops);
    rebuild();
    global_densities();
  }

  // ---- block_ops -------------------------------------------------------------------------
  bool linear_forward(int layer, int which, float* out, const float* x, std::int64_t N) override {
    local_layer* L = sparse_layer(layer, which);
    if (!L) return false;
    if (L->masked_dense) {  // out[N, rows] = x[N, cols] W^T, W with zeros at inactive positions
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(N), static_cast<int>(L->rows),
                  static_cast<int>(L->cols), 1.f, x, static_cast<int>(L->cols), model_->params.data() + L->offset,
                  static_cast<int>(L->cols), 0.f, out, static_cast<int>(L->rows));
      return true;
    }
    L->lin.forward(x, static_cast<std::size_t>(N), out);
    L->tiled_x = x;  // the layer keeps x's tiles: its backward on the same micro-batch reuses them
    return true;
  }
  bool linear_backward(int layer, int which, float* dx, const float* dout, const float* x, std::int64_t N,
                       bool accumulate_dx) override {
    local_layer* L = sparse_layer(layer, which);
    if (!L) return false;
    const auto n = static_cast<std::size_t>(N);
    if (L->masked_dense) {
      // dX (+)= dY W; dW = dY^T X everywhere (sgemm), of which the active positions go to the
      // packed gradient (the optimizer's) and, on update steps, all to the growth buffer
      const int r = static_cast<int>(L->rows), c = static_cast<int>(L->cols), nn = static_cast<int>(N);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nn, c, r, 1.f, dout, r, model_->params.data() + L->offset, c,
                  accumulate_dx ? 1.f : 0.f, dx, c);
      float* gw = L->gscratch.data();
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, c, nn, 1.f, dout, r, x, c, 0.f, gw, c);
      const auto& w = L->lin.weight();
      const auto* rp = w.row_ptr();
      const auto* ci = w.col_idx();
      float* gp = L->gpacked.data();
      for (std::size_t row = 0; row < static_cast<std::size_t>(L->rows); ++row)
        for (auto p = rp[row]; p < rp[row + 1]; ++p) gp[p] += gw[row * static_cast<std::size_t>(L->cols) + ci[p]];
      if (dense_grad_)  // accumulated over micro-batches like the sparse path's sgemm
        for (std::size_t i = 0; i < L->gdense.size(); ++i) L->gdense[i] += gw[i];
      return true;
    }
    // dX = dY W (SpMM on W^T) and dW[active] += (dY^T X) (SDDMM, accumulated over micro-
    // batches) in one call, dY tiled once; x's tiles come from the forward when it was the
    // last forward of this layer (activations are per micro-batch, so the pointer says which)
    if (!accumulate_dx) std::fill(dx, dx + n * static_cast<std::size_t>(L->cols), 0.f);
    const bool reuse = L->tiled_x == x;
    L->lin.backward(dout, reuse ? nullptr : x, n, dx, L->gpacked.data(), nullptr, true);
    L->tiled_x = x;
    if (dense_grad_)  // topology-update step of a gradient-growth rule: dW everywhere (sgemm)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(L->rows), static_cast<int>(L->cols),
                  static_cast<int>(N), 1.f, dout, static_cast<int>(L->rows), x, static_cast<int>(L->cols), 1.f,
                  L->gdense.data(), static_cast<int>(L->cols));
    return true;
  }
  bool attention_forward(float* out, float* att, const float* qkv, int S, int T, int nh, int hd) override {
    if (!active() || !sparse_attn_) return false;
    const std::size_t Cl = static_cast<std::size_t>(nh) * hd, ld = 3 * Cl;
    const auto& lay = hsa_.sparse();
    attn_ws_.resize(msparse::attention::forward_workspace(lay, static_cast<std::size_t>(hd), ld));  // packed K, V
    for (int s = 0; s < S; ++s)
      for (int h = 0; h < nh; ++h) {
        const float* q = qkv + static_cast<std::size_t>(s) * T * ld + static_cast<std::size_t>(h) * hd;
        float* lse = att + (static_cast<std::size_t>(s) * nh + h) * T;  // the probability buffer is free
        msparse::attention::forward(lay, q, q + Cl, q + 2 * Cl, static_cast<std::size_t>(hd),
                                    out + static_cast<std::size_t>(s) * T * Cl + static_cast<std::size_t>(h) * hd, lse, ld, Cl,
                                    attn_ws_.data());
      }
    return true;
  }
  bool attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, const float* out, int S,
                          int T, int nh, int hd) override {
    if (!active() || !sparse_attn_) return false;
    const std::size_t Cl = static_cast<std::size_t>(nh) * hd, ld = 3 * Cl;
    const auto& lay = hsa_.sparse();
    attn_ws_.resize(msparse::attention::backward_workspace(lay, static_cast<std::size_t>(hd), ld, Cl));  // P, dS, packed rows
    for (int s = 0; s < S; ++s)
      for (int h = 0; h < nh; ++h) {
        const std::size_t qo = static_cast<std::size_t>(s) * T * ld + static_cast<std::size_t>(h) * hd;
        const std::size_t oo = static_cast<std::size_t>(s) * T * Cl + static_cast<std::size_t>(h) * hd;
        const float* q = qkv + qo;
        float* dq = dqkv + qo;
        msparse::attention::backward(lay, q, q + Cl, q + 2 * Cl, out + oo,
                                     att + (static_cast<std::size_t>(s) * nh + h) * T, dout + oo,
                                     static_cast<std::size_t>(hd), dq, dq + Cl, dq + 2 * Cl, ld, Cl, attn_ws_.data());
      }
    return true;
  }

 private:
  local_layer* sparse_layer(int layer, int which) {
    if (!active()) return nullptr;
    const int s = slot_[static_cast<std::size_t>(layer) * 4 + which];
    if (s < 0 || locals_[s].dense_path) return nullptr;
    return &locals_[s];
  }
  int slot_of_offset(std::int64_t off) const {
    for (std::size_t i = 0; i < locals_.size(); ++i)
      if (locals_[i].offset == off) return static_cast<int>(i);
    return -1;
  }
  // One tensor set per topology layer (null for other stages' layers and the dense LM head).
  std::vector<msparse::layer_tensors> tensors() {
    std::vector<msparse::layer_tensors> t(topo_.size());
    for (const auto& L : locals_)
      t[L.topo] = {model_->params.data() + L.offset, nullptr, adam_->m.data() + L.offset, adam_->v.data() + L.offset};
    return t;
  }
  // Masks -> sparse formats (a full mask keeps the dense path).
  void rebuild() {
    for (auto& L : locals_) {
      const auto& m = topo_.mask_of(L.topo);
      if (m.rows() != static_cast<std::size_t>(L.rows) || m.cols() != static_cast<std::size_t>(L.cols))
        hcomm::fail(hcomm::errc::mismatch, "sparsity: mask shape differs from the weight shard");
      L.dense_path = m.active() == m.size();
      if (L.dense_path) {
        L.masked_dense = false;
        L.gpacked = {};
        L.gdense = {};
        L.gscratch = {};
        continue;
      }
      if (L.lin.in_features() != static_cast<std::size_t>(L.cols) || L.lin.out_features() != static_cast<std::size_t>(L.rows))
        L.lin = msparse::layer::sparse_linear<>(static_cast<std::size_t>(L.cols), static_cast<std::size_t>(L.rows), false);
      L.lin.set_weight(model_->params.data() + L.offset, m.data());
      L.gpacked.assign(L.lin.weight().nnz(), 0.f);
      L.masked_dense = static_cast<double>(m.active()) >= sc_.dense_above * static_cast<double>(m.size());
      if (L.masked_dense) L.gscratch.assign(m.size(), 0.f);
      else L.gscratch = {};
    }
  }
  // Per-layer densities of the whole model (masks) and as executed (a masked-dense layer
  // runs every product dense: density 1 for the FLOP counter), the overall density and a
  // checksum of DP replica 0's masks: sums over the ranks of DP replica 0.
  void global_densities() {
    const std::size_t n = topo_.size();
    std::vector<double> v(2 * n, 0.0);
    std::uint64_t h = 0;
    if (g_.dp_rank == 0)
      for (const auto& L : locals_) {
        const auto& m = topo_.mask_of(L.topo);
        v[L.topo] = static_cast<double>(m.active());
        v[n + L.topo] = static_cast<double>(L.masked_dense ? m.size() : m.active());
        h ^= msparse::splitmix64(m.checksum() ^ (L.topo * 0x9E3779B97F4A7C15ull) ^ g_.tp_rank);
      }
    MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(2 * n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &h, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD);
    checksum_ = h;
    densities_.assign(n, 1.0);
    exec_densities_.assign(n, 1.0);
    double on = 0, all = 0;
    for (std::size_t i = 0; i + 1 < n; ++i) {  // every block layer (the LM head stays dense)
      const double size = static_cast<double>(topo_.layer(i).size());
      densities_[i] = active() ? v[i] / size : 1.0;
      exec_densities_[i] = active() ? v[n + i] / size : 1.0;
      on += densities_[i] * size;
      all += size;
    }
    density_ = all > 0 ? on / all : 1.0;
  }
  // After an update: per-layer counts at their targets, inactive weights and moments exactly
  // zero, masks identical on every DP replica. Failures are printed and make the run fail.
  void check(std::int64_t step) {
    int bad = 0;
    const auto want = topo_.target_active(step);
    for (const auto& L : locals_) {
      const auto& m = topo_.mask_of(L.topo);
      if (m.active() != want[L.topo]) {
        std::fprintf(stderr, "sparsity check (rank %d, step %lld): %s has %zu active weights, target %zu\n", world_rank_,
                     static_cast<long long>(step), topo_.layer(L.topo).name.c_str(), m.active(), want[L.topo]);
        ++bad;
      }
      const float* w = model_->params.data() + L.offset;
      const float* am = adam_->m.data() + L.offset;
      const float* av = adam_->v.data() + L.offset;
      std::size_t nz = 0;
      for (std::size_t j = 0; j < m.size(); ++j)
        if (!m[j] && (w[j] != 0.f || am[j] != 0.f || av[j] != 0.f)) ++nz;
      if (nz) {
        std::fprintf(stderr, "sparsity check (rank %d, step %lld): %s has %zu inactive weights or moments != 0\n",
                     world_rank_, static_cast<long long>(step), topo_.layer(L.topo).name.c_str(), nz);
        ++bad;
      }
    }
    // the whole model's density against the schedule (per-layer rounding: well under 1e-3)
    if (std::fabs(density_ - target_density(step)) > 1e-3) {
      if (world_rank_ == 0)
        std::fprintf(stderr, "sparsity check (step %lld): overall density %.6f, schedule target %.6f\n",
                     static_cast<long long>(step), density_, target_density(step));
      ++bad;
    }
    // DP replicas: every rank's mask checksum against DP replica 0 of its (pp, tp) place
    std::uint64_t mine = topo_.checksum();
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size));
    MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
    // rank = tp + TP * (dp + DP * pp): replica 0 of my place is rank - TP * dp_rank
    const int ref = world_rank_ - g_.tp * g_.dp_rank;
    if (all[static_cast<std::size_t>(ref)] != mine) {
      std::fprintf(stderr, "sparsity check (rank %d, step %lld): masks differ from DP replica 0 (rank %d): %016llx vs %016llx\n",
                   world_rank_, static_cast<long long>(step), ref, static_cast<unsigned long long>(mine),
                   static_cast<unsigned long long>(all[static_cast<std::size_t>(ref)]));
      ++bad;
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    failures_ += bad;
  }

  config cfg_;
  sparsity_config sc_;
  Model* model_ = nullptr;
  Adam* adam_ = nullptr;
  grid_place g_;
  int world_rank_ = 0;
  msparse::sparse_topology topo_;
  msparse::attention::hybrid hsa_;
  msparse::flop_counter flops_;
  msparse::step_flops last_{};
  std::vector<local_layer> locals_;
  std::vector<int> slot_;
  std::vector<double> densities_, exec_densities_;
  std::vector<float> buf_, attn_ws_;
  double density_ = 1.0;
  std::uint64_t checksum_ = 0;
  std::int64_t step_ = 0;
  bool dense_grad_ = false, sparse_attn_ = false, updated_ = false;
  int failures_ = 0;
  std::vector<packed_grad> packed_;
  std::vector<std::span<float>> growth_;
};

using sparse_trainer = basic_sparse_trainer<>;

}  // namespace gpt
