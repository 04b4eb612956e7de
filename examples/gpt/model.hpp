// examples/gpt/model.hpp: one pipeline stage of a GPT-2 / GPT-NeoX / BERT model, sharded for
// tensor parallelism as in Megatron-LM, fp32, its layers run by a backend (ops_cpu.hpp: the
// CPU's sgemm and loops; ops_portable.hpp: kernels of the execution model on an executor).
//
//   gpt::stage_model m(cfg, {.pp = 1, .pp_rank = 0, .tp = 1, .tp_rank = 0}, micro, n_micro);
//   gpt::basic_stage_model<gpt::portable_ops<hcomm::exec::host_check>> p(cfg, place, micro, n_micro);
//   m.init_params();                       // same values on every grid (global tensors, then shards)
//   double loss_sum = m.forward(0, tokens, targets, tp, 1.f / (B * T));  // last stage: sum of token losses
//   m.backward(0, tokens, tp);             // gradients accumulate into m.grads
//
// Layout: all parameters of the stage live in ONE allocation (`params`), carved into tensors
// in the order of params.hpp's stage_tensors(); gradients and Adam moments mirror it.
// Memory: every buffer is the backend's (Ops::array: std::vector on the CPU, device memory on
// CUDA); tokens and targets come as host arrays and are staged where the backend's memory is
// not the host's (Ops::host_memory), and the loss's per-row sums come back to the host.
// logits() is a host view; params_host()/grads_host() copy out.
// Column-parallel layers split their outputs over TP ranks, row-parallel ones their inputs;
// row-parallel biases are added once, after the allreduce.
//
// BERT (--arch bert) runs the same layers: bidirectional attention, post-LN blocks
// x -> ln1(x + attn(x)) -> ln2(. + mlp(.)) after an embedding LayerNorm (pre-LN blocks are
// GPT-2's), and the MLM head dense -> GELU -> LayerNorm -> wte^T + bias. Targets < 0 (the
// unmasked positions) are left out of the loss.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"
#include "exact_exchange.hpp"
#include "kernels.hpp"
#include "ops_cpu.hpp"
#include "params.hpp"

namespace gpt {

// Tensor-parallel communicator of a single rank: what the model uses when TP = 1 without MPI.
struct solo_tp {
  void allreduce(std::span<float>) {}
  void allgather(std::span<const float> in, std::span<float> out) { std::copy(in.begin(), in.end(), out.begin()); }
};

// The sum of squares of several ranges (pointer, count) of a backend's memory, added in
// order; backends with their own memory (sum_squares_each) take one round trip for all.
template <class Ops>
double sum_squares_of(const Ops& be, const std::vector<std::pair<const float*, std::ptrdiff_t>>& ranges) {
  double s = 0.0;
  if constexpr (requires(double* o) { be.sum_squares_each(ranges, o); }) {
    std::vector<double> each(ranges.size());
    be.sum_squares_each(ranges, each.data());
    for (double x : each) s += x;
  } else {
    for (const auto& [p, n] : ranges) s += be.sum_squares(p, n);
  }
  return s;
}

// Optional replacement of a block's four linear layers and its attention (sparse training:
// examples/gpt/sparsity.hpp). Each call returns false to let the model run its dense kernel.
// which: 0 qkv, 1 attention out, 2 mlp fc, 3 mlp out. Linear calls leave biases to the model.
struct block_ops {
  virtual ~block_ops() = default;
  virtual bool linear_forward(int layer, int which, float* out, const float* x, std::int64_t N) = 0;
  // dx (= or += when accumulate_dx) dout W; the weight gradient is the hook's business.
  virtual bool linear_backward(int layer, int which, float* dx, const float* dout, const float* x, std::int64_t N,
                               bool accumulate_dx) = 0;
  // att: the model's [S, nh, T, T] probability buffer of this layer (scratch for the hook).
  virtual bool attention_forward(float* out, float* att, const float* qkv, int S, int T, int nh, int hd) = 0;
  virtual bool attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, const float* out,
                                  int S, int T, int nh, int hd) = 0;
};

template <class Ops = cpu_ops>
class basic_stage_model {
 public:
  using ops_type = Ops;
  template <class T>
  using array = typename Ops::template array<T>;
  struct layer_p {  // parameter (or gradient) pointers of one block, local shards
    float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b, *ln2_w, *ln2_b, *fc_w, *fc_b, *fcp_w, *fcp_b;
  };
  struct layer_a {  // activations of one block for one micro-batch
    float *ln1, *mean1, *rstd1, *qkv, *att, *atty, *r1, *ln2, *mean2, *rstd2, *h, *g, *out;
  };
  struct head_a {  // the final LayerNorm (GPT, pre-LN BERT); BERT's MLM transform
    float *lnf, *meanf, *rstdf, *mh, *mg, *mln, *meanm, *rstdm;
  };
  struct embed_a {  // BERT post-LN: the embedding sum before its LayerNorm
    float *sum, *mean, *rstd;
  };

  basic_stage_model(const config& c, stage_place place, int micro, int n_micro, Ops ops = {})
      : cfg_(c), place_(place), S_(micro), M_(n_micro), be_(std::move(ops)) {
    specs_ = global_specs(c);
    first_ = place.pp_rank == 0;
    last_ = place.pp_rank == place.pp - 1;
    std::tie(l0_, l1_) = stage_layers(c.layers, place.pp, place.pp_rank);
    const int tp = place.tp;
    T_ = c.block; C_ = c.channels; N_ = static_cast<std::int64_t>(S_) * T_;
    nh_ = c.heads / tp; hd_ = c.head_dim(); Cl_ = nh_ * hd_; Hl_ = c.hidden() / tp; Vl_ = c.vocab / tp;
    rot_ = c.rot_dim();
    causal_ = c.causal();
    // bf16: bfloat16 GEMM operands, fp32 accumulation. Room for the largest operands made with
    // the model: A is an input or output gradient [N, widest], B a weight [widest, C] or an
    // input [N, C or H] (widest: the layers' output widths, the vocabulary on the last stage).
    if (c.bf16) {
      const std::int64_t widest = std::max<std::int64_t>({C_, 3 * Cl_, Hl_, last_ ? Vl_ : 0});
      be_.bf16_gemms(z(N_ * widest), z(std::max<std::int64_t>(widest * C_, N_ * std::max(C_, Hl_))));
    }
    be_.reserve_gemm_workspace();  // cuBLASLt's, for fused epilogues (gemm_cublas.hpp)
    // the column sums' scratch (bias and LayerNorm gradients: 2 C), widest the vocabulary's
    // bias on BERT's last stage
    be_.reserve_column_sums(z(N_), z(std::max<std::int64_t>({2 * C_, 3 * Cl_, Hl_, last_ && c.is_bert() ? Vl_ : 0})));

    tensors_ = stage_tensors(c, place);
    const std::int64_t off = tensors_.empty() ? 0 : tensors_.back().offset + tensors_.back().numel;
    params = be_.template make_array<float>(z(off));
    grads = be_.template make_array<float>(z(off));

    // activations: one region per micro-batch (1F1B keeps up to pp of them alive; we keep all)
    // attention's saved state: the probabilities on the cpu backend (T x T per sequence and
    // head), the flash kernel's row statistics on the portable one (2 T): ops' attention_floats
    att_numel_ = S_ * nh_ * be_.attention_floats(T_);
    per_layer_ = N_ * C_ * 4 + N_ * 4 + N_ * 3 * Cl_ + att_numel_ + N_ * Cl_ + 2 * N_ * Hl_;
    // head: the final LayerNorm (not in post-LN BERT), BERT's MLM transform (head_of());
    // BERT post-LN's first stage: the embedding sum and its LayerNorm statistics (embed_of())
    if (last_ && !c.bert_post_ln()) head_numel_ = N_ * C_ + 2 * N_;
    if (last_ && c.is_bert()) head_numel_ += 3 * N_ * C_ + 2 * N_;
    embed_numel_ = first_ && c.bert_post_ln() ? N_ * C_ + 2 * N_ : 0;
    act_stride_ = N_ * C_ + per_layer_ * (l1_ - l0_) + head_numel_ + embed_numel_;
    acts_ = be_.template make_array<float>(z(act_stride_ * M_));
    // bf16: the block linear layers' inputs as bfloat16 (kept_of), per micro-batch and layer:
    // qkv's, attention out's, fc's and mlp out's, each 256-byte aligned (cuBLASLt, vector loads)
    if (c.bf16) {
      const std::int64_t width[4] = {C_, Cl_, C_, Hl_};
      for (int w = 0; w < 4; ++w) {
        keep_at_[w] = keep_per_layer_;
        keep_per_layer_ += (N_ * width[w] + 127) / 128 * 128;
      }
      keep_ = be_.template make_array<hcomm::bf16>(z(keep_per_layer_ * (l1_ - l0_) * M_));
      kept_ok_.assign(z(4 * (l1_ - l0_) * M_), 0);
    }
    dres_ = be_.template make_array<float>(z(N_ * C_));
    dln_a_ = be_.template make_array<float>(z(N_ * C_));
    dln_b_ = be_.template make_array<float>(z(N_ * C_));
    dhid_ = be_.template make_array<float>(z(N_ * Hl_));
    dqkv_ = be_.template make_array<float>(z(N_ * 3 * Cl_));
    datty_ = be_.template make_array<float>(z(N_ * Cl_));
    dP_ = be_.template make_array<float>(z(std::max<std::int64_t>(1, be_.attention_scratch_floats(T_))));
    if (last_) {
      logits_ = be_.template make_array<float>(z(N_ * Vl_));
      ce_max_ = be_.template make_array<float>(z(N_));
      ce_gather_ = be_.template make_array<float>(z(N_ * tp));
      ce_sums_ = be_.template make_array<float>(z(2 * N_));
    }
    if constexpr (!Ops::host_memory) {
      if (first_) tokens_ = be_.template make_array<int>(z(N_));
      if (last_) targets_ = be_.template make_array<int>(z(N_));
    }
    if (rot_ > 0) {
      const int half = rot_ / 2;
      std::vector<float> cs(static_cast<std::size_t>(T_) * half), sn(cs.size());
      for (int t = 0; t < T_; ++t)
        for (int i = 0; i < half; ++i) {
          // inv_freq = 10000^(-2i/rot), computed in float like PyTorch's reference
          const float inv = 1.f / std::pow(10000.f, static_cast<float>(2 * i) / static_cast<float>(rot_));
          const float a = static_cast<float>(t) * inv;
          cs[t * half + i] = std::cos(a);
          sn[t * half + i] = std::sin(a);
        }
      cos_ = be_.template make_array<float>(cs.size());
      sin_ = be_.template make_array<float>(sn.size());
      be_.upload(cos_.data(), cs.data(), cs.size());
      be_.upload(sin_.data(), sn.data(), sn.size());
    }
  }

  // ---- parameters -------------------------------------------------------------------------
  const config& cfg() const { return cfg_; }
  const Ops& ops() const { return be_; }
  const std::vector<param_spec>& specs() const { return specs_; }
  const std::vector<local_tensor>& tensors() const { return tensors_; }
  bool is_first() const { return first_; }
  bool is_last() const { return last_; }
  int micro() const { return S_; }
  int n_micro() const { return M_; }
  std::int64_t rows() const { return N_; }  // N = micro x T
  std::int64_t act_numel() const { return N_ * C_; }
  std::int64_t local_vocab() const { return Vl_; }

  // Same values on every grid: each global tensor is drawn from its own seeded stream.
  void init_params() {
    std::vector<float> staged;
    float* dst = host_target(staged);
    for (const auto& t : tensors_) {
      const auto& s = specs_[t.global];
      const std::vector<float> g = initial_values(s, t.global, cfg_.seed);
      extract_shard(s, g.data(), place_.tp, place_.tp_rank, dst + t.offset);
    }
    if constexpr (!Ops::host_memory) be_.upload(params.data(), staged.data(), staged.size());
  }
  // Loads from global tensors (e.g. the PyTorch debug state): global[i] is tensor i of global_specs.
  void load_global(const std::vector<std::vector<float>>& global) {
    std::vector<float> staged;
    float* dst = host_target(staged);
    for (const auto& t : tensors_)
      extract_shard(specs_[t.global], global[t.global].data(), place_.tp, place_.tp_rank, dst + t.offset);
    if constexpr (!Ops::host_memory) be_.upload(params.data(), staged.data(), staged.size());
  }
  // Host copies of the parameters and gradients (the arrays themselves on the CPU backend).
  std::vector<float> params_host() const { return host_copy(params); }
  std::vector<float> grads_host() const { return host_copy(grads); }
  void zero_grads() { zero(grads); }
  void set_block_ops(block_ops* ops) { ops_ = ops; }

  // Sum of squared gradients this rank contributes to the global norm: TP-replicated tensors
  // only from tp rank 0 and the tied copy never, so summing over TP and PP counts each once.
  double local_grad_sq() const {
    std::vector<std::pair<const float*, std::ptrdiff_t>> ranges;
    for (const auto& t : tensors_)
      if (t.counts_in_norm) ranges.emplace_back(grads.data() + t.offset, t.numel);
    return sum_squares_of(be_, ranges);
  }
  void scale_grads(float f) { be_.scale(grads.data(), static_cast<std::int64_t>(grads.size()), f); }

  // ---- forward / backward of one micro-batch ------------------------------------------------
  // First stage: tokens[N] are embedded; other stages: input(mb) must hold the received
  // activations. Last stage: returns the sum of token losses over targets[N] and leaves
  // d loss / d logits (scaled by loss_scale) for backward(). Others return 0.
  template <class Tp>
  double forward(int mb, const int* tokens, const int* targets, Tp& tp, float loss_scale, bool want_grad = true) {
    float* x = input(mb);
    if (first_) embed_forward(mb, x, staged(tokens_, tokens), tp);
    if (first_) to_storage(x);
    for (int l = l0_; l < l1_; ++l) {
      layer_forward(l, mb, x, tp);
      x = acts_of(mb, l).out;
      to_storage(x);
    }
    if (!last_) return 0.0;
    head_a ha = head_of(mb);
    if (cfg_.is_bert()) {
      mlm_head_forward(ha, x);
      return cross_entropy(targets, tp, loss_scale, want_grad);
    }
    be_.layernorm_forward(ha.lnf, ha.meanf, ha.rstdf, x, p_lnf_w(), p_lnf_b(), N_, C_);
    be_.matmul_forward(logits_.data(), ha.lnf, p_lm(), nullptr, N_, C_, Vl_);  // [N, V/tp]
    return cross_entropy(targets, tp, loss_scale, want_grad);
  }
  // Last stage: how many predicted positions of the last forward() had their target as the
  // arg-max logit (ties count), for the masked-token accuracy; 0 elsewhere.
  std::int64_t correct() const { return correct_; }
  // Output activations of the stage for micro-batch mb ([N, C], to send to the next stage).
  const float* output(int mb) { return acts_of(mb, l1_ - 1).out; }
  float* input(int mb) { return acts_.data() + act_stride_ * mb; }
  // Gradient w.r.t. the stage output (to fill from the next stage before backward) and,
  // after backward, w.r.t. the stage input (to send to the previous stage).
  float* dres() { return dres_.data(); }
  // The last forward's logits [N, V/tp] on the host (copied there on backends with their own
  // memory; valid until the next forward); logits_data() is the backend's buffer.
  const float* logits() const {
    if constexpr (Ops::host_memory) return logits_.data();
    else {
      logits_host_.resize(logits_.size());
      be_.download(logits_host_.data(), logits_.data(), logits_.size());
      return logits_host_.data();
    }
  }
  float* logits_data() { return logits_.data(); }

  // `final_from(offset)` (optional) is called as backward goes: every gradient at
  // allocation offsets >= offset has received this micro-batch's contribution (after the
  // head, after each block, in reverse layer order). The trainer passes it on the last
  // micro-batch to start the DP reduction of finished buckets (trainer.hpp, --overlap).
  // The embedding tensors (offset 0 upward) are never announced: they are final on return.
  struct no_progress {
    void operator()(std::int64_t) const {}
  };
  template <class Tp, class Progress = no_progress>
  void backward(int mb, const int* tokens, Tp& tp, Progress&& final_from = {}) {
    if (last_ && cfg_.is_bert()) {
      mlm_head_backward(head_of(mb), acts_of(mb, l1_ - 1).out, tp);
    } else if (last_) {
      head_a ha = head_of(mb);
      // logits_ now holds d loss / d logits [N, V/tp]; the lm head is column-parallel over
      // the vocabulary, so the input gradient is a partial sum over TP ranks.
      zero(dln_a_);
      be_.matmul_backward(dln_a_.data(), g_lm(), nullptr, logits_.data(), ha.lnf, p_lm(), N_, C_, Vl_, false);
      tp.allreduce(sp(dln_a_));
      zero(dres_);
      be_.layernorm_backward(dres_.data(), g_lnf_w(), g_lnf_b(), dln_a_.data(), acts_of(mb, l1_ - 1).out, p_lnf_w(),
                            ha.meanf, ha.rstdf, N_, C_);
    }
    auto announce = [&](int tensor) {
      if (const std::int64_t off = tensors_[tensor].offset; off > 0) final_from(off);
    };
    if (last_) announce(head_tensor());
    if (last_) to_storage(dres_.data());
    for (int l = l1_ - 1; l >= l0_; --l) {
      layer_backward(l, mb, tp);
      to_storage(dres_.data());
      announce(local_layer_tensor(l));
    }
    if (first_) embed_backward(mb, tokens);
  }

  // ---- pointers ----------------------------------------------------------------------------
  layer_p layer_params(int l, float* base) const {
    float* p = base + tensors_[local_layer_tensor(l)].offset;
    std::int64_t C = C_, Cl = Cl_, H = Hl_;
    layer_p r{};
    r.ln1_w = p; p += C;
    r.ln1_b = p; p += C;
    r.qkv_w = p; p += 3 * Cl * C;
    r.qkv_b = p; p += 3 * Cl;
    r.proj_w = p; p += C * Cl;
    r.proj_b = p; p += C;
    r.ln2_w = p; p += C;
    r.ln2_b = p; p += C;
    r.fc_w = p; p += H * C;
    r.fc_b = p; p += H;
    r.fcp_w = p; p += C * H;
    r.fcp_b = p;
    return r;
  }

 private:
  // --precision bf16: an activation [N, C] (a block's output, or the gradient flowing into one)
  // is stored as its bfloat16 rounding, as it would be sent over PP.
  void zero(array<float>& v) const { be_.fill(v.data(), static_cast<std::int64_t>(v.size()), 0.f); }
  static std::size_t z(std::int64_t n) { return static_cast<std::size_t>(n); }
  static std::span<float> sp(array<float>& v) { return {v.data(), v.size()}; }
  // Where the host writes a whole parameter image: the array itself when the host may, else
  // `staged`, sized for it (the caller uploads it).
  float* host_target(std::vector<float>& staged) {
    if constexpr (Ops::host_memory) return params.data();
    else {
      staged.assign(params.size(), 0.f);
      return staged.data();
    }
  }
  std::vector<float> host_copy(const array<float>& a) const {
    std::vector<float> h(a.size());
    be_.download(h.data(), a.data(), a.size());
    return h;
  }
  // A micro-batch's host ints in the backend's memory (the host array itself where it may).
  const int* staged(array<int>& dst, const int* host) const {
    if constexpr (Ops::host_memory) return host;
    else {
      be_.upload(dst.data(), host, dst.size());
      return dst.data();
    }
  }
  // Host room for a small backend array's values, not copied: the array itself, or `mirror`
  // sized for it (the caller fills it and, off the host, uploads it).
  float* host_room(array<float>& a, std::vector<float>& mirror) const {
    if constexpr (Ops::host_memory) return a.data();
    else {
      mirror.resize(a.size());
      return mirror.data();
    }
  }
  // A small backend array on the host: the array itself, or its copy in `mirror`.
  float* on_host(array<float>& a, std::vector<float>& mirror) const {
    if constexpr (Ops::host_memory) return a.data();
    else {
      mirror.resize(a.size());
      be_.download(mirror.data(), a.data(), a.size());
      return mirror.data();
    }
  }
  void to_storage(float* x) const {
    if (cfg_.bf16) be_.round_bf16(x, N_ * C_);
  }
  // --precision bf16: attention's matrix products take bfloat16 operands (tensor cores), so
  // q, k and v (after rotary) and the gradient of its output are rounded once, here, for the
  // attention that needs them so: the cpu backend's, and a block_ops hook's (sparse
  // attention). The portable backend's kernels round them as they read them (the same bits,
  // without a pass over the activations).
  void attention_operands(float* x, std::int64_t width) const {
    if (cfg_.bf16 && (ops_ || !Ops::attention_rounds_operands)) be_.round_bf16(x, N_ * width);
  }

  int local_layer_tensor(int l) const { return (first_ ? embed_tensor_count(cfg_) : 0) + (l - l0_) * params_per_layer; }
  int head_tensor() const { return local_layer_tensor(l1_); }
  float* p_wte() { return params.data() + tensors_[0].offset; }
  float* g_wte() { return grads.data() + tensors_[0].offset; }
  float* p_wpe() { return params.data() + tensors_[1].offset; }
  float* g_wpe() { return grads.data() + tensors_[1].offset; }
  float* p_lnf_w() { return params.data() + tensors_[head_tensor()].offset; }
  float* p_lnf_b() { return params.data() + tensors_[head_tensor() + 1].offset; }
  float* g_lnf_w() { return grads.data() + tensors_[head_tensor()].offset; }
  float* g_lnf_b() { return grads.data() + tensors_[head_tensor() + 1].offset; }
  // the output layer: neox's own lm_w; else wte, or its synchronised copy after the head tensors
  int lm_tensor() const {
    if (!cfg_.tied()) return head_tensor() + 2;
    return first_ ? 0 : head_tensor() + head_tensor_count(cfg_);
  }
  float* p_at(int i) { return params.data() + tensors_[i].offset; }
  float* g_at(int i) { return grads.data() + tensors_[i].offset; }
  // BERT's mlm_w, then mlm_b mlm_ln_w mlm_ln_b mlm_bias (after lnf_w lnf_b when pre-LN)
  int mlm_tensor() const { return head_tensor() + (cfg_.post_ln ? 0 : 2); }
  float* p_lm() { return params.data() + tensors_[lm_tensor()].offset; }
  float* g_lm() { return grads.data() + tensors_[lm_tensor()].offset; }

  layer_a acts_of(int mb, int l) {
    float* p = acts_.data() + act_stride_ * mb + N_ * C_;
    p += per_layer_ * (l - l0_);
    layer_a a{};
    a.ln1 = p; p += N_ * C_;
    a.mean1 = p; p += N_;
    a.rstd1 = p; p += N_;
    a.qkv = p; p += N_ * 3 * Cl_;
    a.att = p; p += att_numel_;
    a.atty = p; p += N_ * Cl_;
    a.r1 = p; p += N_ * C_;
    a.ln2 = p; p += N_ * C_;
    a.mean2 = p; p += N_;
    a.rstd2 = p; p += N_;
    a.h = p; p += N_ * Hl_;
    a.g = p; p += N_ * Hl_;
    a.out = p;
    return a;
  }
  head_a head_of(int mb) {
    float* p = acts_of(mb, l1_ - 1).out + N_ * C_;
    head_a h{};
    if (!cfg_.bert_post_ln()) {
      h.lnf = p; p += N_ * C_;
      h.meanf = p; p += N_;
      h.rstdf = p; p += N_;
    }
    if (cfg_.is_bert()) {
      h.mh = p; p += N_ * C_;
      h.mg = p; p += N_ * C_;
      h.mln = p; p += N_ * C_;
      h.meanm = p; p += N_;
      h.rstdm = p;
    }
    return h;
  }
  embed_a embed_of(int mb) {
    float* p = acts_.data() + act_stride_ * (mb + 1) - embed_numel_;
    return {p, p + N_ * C_, p + N_ * C_ + N_};
  }
  const float* layer_input(int mb, int l) { return l == l0_ ? input(mb) : acts_of(mb, l - 1).out; }

  // x[N,C] = wte[token] (vocab-parallel: rows outside this shard give 0, then allreduce) + wpe[t]
  // (BERT post-LN: then x = emb_ln(x))
  template <class Tp>
  void embed_forward(int mb, float* out, const int* tokens, Tp& tp) {
    const std::int64_t v0 = static_cast<std::int64_t>(place_.tp_rank) * Vl_;
    const embed_a e = embed_of(mb);
    float* x = cfg_.bert_post_ln() ? e.sum : out;
    be_.embed_tokens(x, tokens, p_wte(), N_, C_, v0, Vl_);
    tp.allreduce(std::span<float>(x, static_cast<std::size_t>(N_ * C_)));
    if (cfg_.arch != arch_kind::neox) be_.add_positions(x, p_wpe(), N_, T_, C_);
    if (cfg_.bert_post_ln()) be_.layernorm_forward(out, e.mean, e.rstd, e.sum, p_at(2), p_at(3), N_, C_);
  }
  void embed_backward(int mb, const int* tokens) {
    const std::int64_t v0 = static_cast<std::int64_t>(place_.tp_rank) * Vl_;
    const float* d = dres_.data();
    if (cfg_.bert_post_ln()) {  // d sum = emb_ln'(d x)
      const embed_a e = embed_of(mb);
      zero(dln_a_);
      be_.layernorm_backward(dln_a_.data(), g_at(2), g_at(3), dres_.data(), e.sum, p_at(2), e.mean, e.rstd, N_, C_);
      d = dln_a_.data();
    }
    be_.embed_tokens_backward(g_wte(), d, tokens, N_, C_, v0, Vl_);
    if (cfg_.arch != arch_kind::neox) be_.add_positions_backward(g_wpe(), d, N_, T_, C_);
  }

  // --precision bf16: a block linear layer's input x as its forward GEMM converted it to
  // bfloat16 (`at`), kept for the backward's weight gradient, which then converts only the
  // output gradient (gemm_reuse.hpp); `ok` says the forward wrote it (not when a hook ran the
  // layer). Null when fp32.
  struct kept_input {
    hcomm::bf16* at = nullptr;
    unsigned char* ok = nullptr;
    const hcomm::bf16* valid() const { return ok && *ok ? at : nullptr; }
  };
  kept_input kept_of(int mb, int l, int which) {
    if (kept_ok_.empty()) return {};
    const std::int64_t slot = static_cast<std::int64_t>(mb) * (l1_ - l0_) + (l - l0_);
    return {keep_.data() + slot * keep_per_layer_ + keep_at_[which], &kept_ok_[z(slot * 4 + which)]};
  }

  // The block's linear layers: through the hook when it takes them (sparse weights), else
  // sgemm. Same bias arithmetic either way, so without a hook nothing changes.
  void lin_forward(int mb, int l, int which, float* out, const float* x, const float* W, const float* b, std::int64_t N,
                   std::int64_t K, std::int64_t O) {
    const kept_input k = kept_of(mb, l, which);
    if (!hook_forward(k, l, which, out, x, b, N, O)) be_.matmul_forward(out, x, W, b, N, K, O, k.at);
  }
  // The hook's forward, when it takes the layer (then the backward converts x afresh: no kept
  // copy was written); else marks the kept copy as written by the GEMM that follows.
  bool hook_forward(const kept_input& k, int l, int which, float* out, const float* x, const float* b, std::int64_t N,
                    std::int64_t O) {
    const bool hooked = ops_ && ops_->linear_forward(l, which, out, x, N);
    if (k.ok) *k.ok = hooked ? 0 : 1;
    if (hooked && b) be_.add_bias_rows(out, b, N, O);
    return hooked;
  }
  void lin_backward(int mb, int l, int which, float* dx, float* dW, float* db, const float* dout, const float* x,
                    const float* W, std::int64_t N, std::int64_t K, std::int64_t O) {
    if (ops_ && ops_->linear_backward(l, which, dx, dout, x, N, false)) {
      if (db) be_.column_sums_add(db, dout, N, O);
      return;
    }
    be_.matmul_backward(dx, dW, db, dout, x, W, N, K, O, false, kept_of(mb, l, which).valid());
  }

  // The MLP's first layer and its gelu (h kept for backward), and the second layer's backward
  // into that gelu: one fused GEMM each where the backend can (ops_portable.hpp on cuBLASLt).
  void lin_gelu_forward(int mb, int l, int which, float* h, float* g, const float* x, const float* W, const float* b,
                        std::int64_t N, std::int64_t K, std::int64_t O) {
    const kept_input k = kept_of(mb, l, which);
    if (hook_forward(k, l, which, h, x, b, N, O)) be_.gelu_forward(g, h, N * O);
    else be_.matmul_gelu_forward(h, g, x, W, b, N, K, O, k.at);
  }
  void lin_gelu_backward(int mb, int l, int which, float* dh, float* dW, float* db, const float* dout, const float* g,
                         const float* h, const float* W, std::int64_t N, std::int64_t K, std::int64_t O) {
    if (ops_ && ops_->linear_backward(l, which, dh, dout, g, N, false)) {
      if (db) be_.column_sums_add(db, dout, N, O);
      be_.gelu_backward(dh, h, dh, N * K);
      return;
    }
    be_.matmul_gelu_backward(dh, dW, db, dout, g, h, W, N, K, O, kept_of(mb, l, which).valid());
  }

  template <class Tp>
  void layer_forward(int l, int mb, const float* x, Tp& tp) {
    if (cfg_.bert_post_ln()) return post_ln_layer_forward(l, mb, x, tp);
    const layer_a a = acts_of(mb, l);
    const layer_p p = layer_params(l, params.data());
    const std::int64_t N = N_, C = C_, Cl = Cl_, H = Hl_;
    // attention branch: ln1 -> qkv (column-parallel) -> rotary -> attention -> proj (row-parallel)
    be_.layernorm_forward(a.ln1, a.mean1, a.rstd1, x, p.ln1_w, p.ln1_b, N, C);      // [N,C]
    lin_forward(mb, l, 0, a.qkv, a.ln1, p.qkv_w, p.qkv_b, N, C, 3 * Cl);                // [N,3C/tp]
    be_.rotary_apply(a.qkv, cos_.data(), sin_.data(), N, T_, nh_, hd_, rot_, false);
    attention_operands(a.qkv, 3 * Cl);
    if (!ops_ || !ops_->attention_forward(a.atty, a.att, a.qkv, S_, T_, nh_, hd_))
      be_.attention_forward(a.atty, a.att, a.qkv, S_, T_, nh_, hd_, causal_);         // [N,C/tp]
    float* attn_out = a.out;  // borrow the output buffer for the attention branch [N,C]
    lin_forward(mb, l, 1, attn_out, a.atty, p.proj_w, nullptr, N, Cl, C);               // partial [N,C]
    tp.allreduce(std::span<float>(attn_out, static_cast<std::size_t>(N * C)));
    be_.add_bias_rows(attn_out, p.proj_b, N, C);
    // gpt2, pre-LN bert: r1 = x + attn; mlp reads ln2(r1). neox (parallel residual): mlp reads ln2(x).
    const float* mlp_in = x;
    if (cfg_.arch != arch_kind::neox) {
      be_.residual_forward(a.r1, x, attn_out, N * C);
      mlp_in = a.r1;
    } else {
      be_.residual_forward(a.r1, x, attn_out, N * C);  // x + attn, the mlp output is added below
    }
    be_.layernorm_forward(a.ln2, a.mean2, a.rstd2, mlp_in, p.ln2_w, p.ln2_b, N, C);  // [N,C]
    lin_gelu_forward(mb, l, 2, a.h, a.g, a.ln2, p.fc_w, p.fc_b, N, C, H);               // [N,4C/tp]
    lin_forward(mb, l, 3, a.out, a.g, p.fcp_w, nullptr, N, H, C);                       // partial [N,C]
    tp.allreduce(std::span<float>(a.out, static_cast<std::size_t>(N * C)));
    be_.add_bias_rows(a.out, p.fcp_b, N, C);
    be_.add_inplace(a.out, a.r1, N * C);  // out = r1 + mlp  (gpt2: x+attn+mlp sequentially; neox: in parallel)
  }

  // dres_ holds d loss / d out on entry and d loss / d x on exit.
  template <class Tp>
  void layer_backward(int l, int mb, Tp& tp) {
    if (cfg_.bert_post_ln()) return post_ln_layer_backward(l, mb, tp);
    const layer_a a = acts_of(mb, l);
    const float* x = layer_input(mb, l);
    const layer_p p = layer_params(l, params.data());
    const layer_p g = layer_params(l, grads.data());
    const std::int64_t N = N_, C = C_, Cl = Cl_, H = Hl_;
    float* d = dres_.data();
    const bool gpt2 = cfg_.arch != arch_kind::neox;  // sequential residual (gpt2, pre-LN bert)
    const float* mlp_in = gpt2 ? a.r1 : x;
    // mlp branch: d out -> fcp (row-parallel: local input grad, no comm) -> gelu -> fc
    // (column-parallel: the input gradient is a partial sum -> allreduce)
    lin_gelu_backward(mb, l, 3, dhid_.data(), g.fcp_w, g.fcp_b, d, a.g, a.h, p.fcp_w, N, H, C);  // d h [N,4C/tp]
    lin_backward(mb, l, 2, dln_b_.data(), g.fc_w, g.fc_b, dhid_.data(), a.ln2, p.fc_w, N, C, H);
    tp.allreduce(sp(dln_b_));                                                 // d ln2 [N,C]
    if (gpt2) {
      // d r1 = d out + ln2'(d ln2); the attention branch then sees d r1
      be_.layernorm_backward(d, g.ln2_w, g.ln2_b, dln_b_.data(), mlp_in, p.ln2_w, a.mean2, a.rstd2, N, C);
    }
    // attention branch with d attn = d (gpt2: d r1, neox: d out)
    lin_backward(mb, l, 1, datty_.data(), g.proj_w, g.proj_b, d, a.atty, p.proj_w, N, Cl, C);  // [N,C/tp]
    attention_operands(datty_.data(), Cl);
    if (!ops_ || !ops_->attention_backward(dqkv_.data(), datty_.data(), a.qkv, a.att, a.atty, S_, T_, nh_, hd_))
      be_.attention_backward(dqkv_.data(), dP_.data(), datty_.data(), a.qkv, a.att, a.atty, S_, T_, nh_, hd_, causal_);
    be_.rotary_apply(dqkv_.data(), cos_.data(), sin_.data(), N, T_, nh_, hd_, rot_, true);
    lin_backward(mb, l, 0, dln_a_.data(), g.qkv_w, g.qkv_b, dqkv_.data(), a.ln1, p.qkv_w, N, C, 3 * Cl);
    tp.allreduce(sp(dln_a_));                                                 // d ln1 [N,C]
    if (!gpt2) be_.layernorm_backward(d, g.ln2_w, g.ln2_b, dln_b_.data(), x, p.ln2_w, a.mean2, a.rstd2, N, C);
    be_.layernorm_backward(d, g.ln1_w, g.ln1_b, dln_a_.data(), x, p.ln1_w, a.mean1, a.rstd1, N, C);  // d x
  }

  // BERT's post-LN block: r1 = x + attn(x), y1 = ln1(r1), r2 = y1 + mlp(y1), out = ln2(r2).
  // Buffers: ln1 holds y1, r1 holds r1, ln2 holds r2 (the inputs of the two LayerNorms).
  template <class Tp>
  void post_ln_layer_forward(int l, int mb, const float* x, Tp& tp) {
    const layer_a a = acts_of(mb, l);
    const layer_p p = layer_params(l, params.data());
    const std::int64_t N = N_, C = C_, Cl = Cl_, H = Hl_;
    lin_forward(mb, l, 0, a.qkv, x, p.qkv_w, p.qkv_b, N, C, 3 * Cl);                   // [N,3C/tp]
    attention_operands(a.qkv, 3 * Cl);
    if (!ops_ || !ops_->attention_forward(a.atty, a.att, a.qkv, S_, T_, nh_, hd_))
      be_.attention_forward(a.atty, a.att, a.qkv, S_, T_, nh_, hd_, causal_);        // [N,C/tp]
    float* attn_out = a.out;  // borrowed until ln2 writes the block's output
    lin_forward(mb, l, 1, attn_out, a.atty, p.proj_w, nullptr, N, Cl, C);              // partial [N,C]
    tp.allreduce(std::span<float>(attn_out, static_cast<std::size_t>(N * C)));
    be_.add_bias_rows(attn_out, p.proj_b, N, C);
    be_.residual_forward(a.r1, x, attn_out, N * C);
    be_.layernorm_forward(a.ln1, a.mean1, a.rstd1, a.r1, p.ln1_w, p.ln1_b, N, C);  // y1 [N,C]
    lin_gelu_forward(mb, l, 2, a.h, a.g, a.ln1, p.fc_w, p.fc_b, N, C, H);              // [N,4C/tp]
    lin_forward(mb, l, 3, a.ln2, a.g, p.fcp_w, nullptr, N, H, C);                      // partial [N,C]
    tp.allreduce(std::span<float>(a.ln2, static_cast<std::size_t>(N * C)));
    be_.add_bias_rows(a.ln2, p.fcp_b, N, C);
    be_.add_inplace(a.ln2, a.ln1, N * C);                                           // r2 = y1 + mlp
    be_.layernorm_forward(a.out, a.mean2, a.rstd2, a.ln2, p.ln2_w, p.ln2_b, N, C);
  }
  // dres_ holds d loss / d out on entry and d loss / d x on exit.
  template <class Tp>
  void post_ln_layer_backward(int l, int mb, Tp& tp) {
    const layer_a a = acts_of(mb, l);
    const float* x = layer_input(mb, l);
    const layer_p p = layer_params(l, params.data());
    const layer_p g = layer_params(l, grads.data());
    const std::int64_t N = N_, C = C_, Cl = Cl_, H = Hl_;
    float* d = dres_.data();
    zero(dln_b_);
    be_.layernorm_backward(dln_b_.data(), g.ln2_w, g.ln2_b, d, a.ln2, p.ln2_w, a.mean2, a.rstd2, N, C);  // d r2
    lin_gelu_backward(mb, l, 3, dhid_.data(), g.fcp_w, g.fcp_b, dln_b_.data(), a.g, a.h, p.fcp_w, N, H, C);
    lin_backward(mb, l, 2, dln_a_.data(), g.fc_w, g.fc_b, dhid_.data(), a.ln1, p.fc_w, N, C, H);
    tp.allreduce(sp(dln_a_));
    be_.add_inplace(dln_a_.data(), dln_b_.data(), N * C);                                                  // d y1
    zero(dres_);
    be_.layernorm_backward(d, g.ln1_w, g.ln1_b, dln_a_.data(), a.r1, p.ln1_w, a.mean1, a.rstd1, N, C);  // d r1
    lin_backward(mb, l, 1, datty_.data(), g.proj_w, g.proj_b, d, a.atty, p.proj_w, N, Cl, C);
    attention_operands(datty_.data(), Cl);
    if (!ops_ || !ops_->attention_backward(dqkv_.data(), datty_.data(), a.qkv, a.att, a.atty, S_, T_, nh_, hd_))
      be_.attention_backward(dqkv_.data(), dP_.data(), datty_.data(), a.qkv, a.att, a.atty, S_, T_, nh_, hd_, causal_);
    lin_backward(mb, l, 0, dln_a_.data(), g.qkv_w, g.qkv_b, dqkv_.data(), x, p.qkv_w, N, C, 3 * Cl);
    tp.allreduce(sp(dln_a_));
    be_.add_inplace(d, dln_a_.data(), N * C);                                                              // d x
  }

  // BERT's MLM head, on every position (the loss keeps the masked ones):
  // x[N,C] (-> lnf, pre-LN) -> mh = x mlm_w^T + mlm_b -> mg = gelu(mh) -> mln = mlm_ln(mg)
  // -> logits[N, V/tp] = mln wte^T + mlm_bias (vocab-parallel, as GPT-2's tied lm head).
  void mlm_head_forward(const head_a& h, const float* x) {
    const int m = mlm_tensor();
    if (!cfg_.post_ln) {
      be_.layernorm_forward(h.lnf, h.meanf, h.rstdf, x, p_lnf_w(), p_lnf_b(), N_, C_);
      x = h.lnf;
    }
    be_.matmul_gelu_forward(h.mh, h.mg, x, p_at(m), p_at(m + 1), N_, C_, C_);
    be_.layernorm_forward(h.mln, h.meanm, h.rstdm, h.mg, p_at(m + 2), p_at(m + 3), N_, C_);
    be_.matmul_forward(logits_.data(), h.mln, p_lm(), p_at(m + 4), N_, C_, Vl_);
  }
  // logits_ holds d loss / d logits; leaves d loss / d x in dres_.
  template <class Tp>
  void mlm_head_backward(const head_a& h, const float* x, Tp& tp) {
    const int m = mlm_tensor();
    be_.matmul_backward(dln_a_.data(), g_lm(), g_at(m + 4), logits_.data(), h.mln, p_lm(), N_, C_, Vl_, false);
    tp.allreduce(sp(dln_a_));  // partial sums over the vocabulary shards
    zero(dln_b_);
    be_.layernorm_backward(dln_b_.data(), g_at(m + 2), g_at(m + 3), dln_a_.data(), h.mg, p_at(m + 2), h.meanm, h.rstdm,
                          N_, C_);
    be_.gelu_backward(dln_b_.data(), h.mh, dln_b_.data(), N_ * C_);
    if (cfg_.post_ln) {
      be_.matmul_backward(dres_.data(), g_at(m), g_at(m + 1), dln_b_.data(), x, p_at(m), N_, C_, C_, false);
      return;
    }
    be_.matmul_backward(dln_a_.data(), g_at(m), g_at(m + 1), dln_b_.data(), h.lnf, p_at(m), N_, C_, C_, false);
    zero(dres_);
    be_.layernorm_backward(dres_.data(), g_lnf_w(), g_lnf_b(), dln_a_.data(), x, p_lnf_w(), h.meanf, h.rstdf, N_, C_);
  }

  // Vocab-parallel cross-entropy over logits_[N, V/tp]: the global row max comes from an
  // allgather of local maxima, the sum of exponentials and the target logit from one
  // allreduce; the backward needs no communication.
  // targets: the host array (the loss is summed on the host from the per-row sums).
  template <class Tp>
  double cross_entropy(const int* targets, Tp& tp, float loss_scale, bool want_grad) {
    const std::int64_t N = N_, V = Vl_, v0 = static_cast<std::int64_t>(place_.tp_rank) * Vl_;
    float* zl = logits_.data();
    const int* tg = staged(targets_, targets);
    be_.ce_row_max(ce_max_.data(), zl, N, V);
    float* mx = nullptr;
    if (place_.tp > 1) {
      exact_allgather(tp, std::span<const float>(ce_max_.data(), ce_max_.size()), sp(ce_gather_));
      const float* gathered = on_host(ce_gather_, ce_gather_host_);
      mx = host_room(ce_max_, ce_max_host_);  // overwritten with the global maxima below
      for (std::int64_t n = 0; n < N; ++n) {
        float m = gathered[n];
        for (int r = 1; r < place_.tp; ++r) m = gathered[r * N + n] > m ? gathered[r * N + n] : m;
        mx[n] = m;
      }
      if constexpr (!Ops::host_memory) be_.upload(ce_max_.data(), mx, z(N));
    } else {
      mx = on_host(ce_max_, ce_max_host_);
    }
    be_.ce_sums(ce_sums_.data(), zl, ce_max_.data(), tg, N, V, v0);
    exact_allreduce(tp, sp(ce_sums_));
    const float* sums = on_host(ce_sums_, ce_sums_host_);
    double loss = 0.0;
    correct_ = 0;
    for (std::int64_t n = 0; n < N; ++n)
      if (targets[n] >= 0) {
        loss += static_cast<double>(std::log(sums[n]) + mx[n] - sums[N + n]);
        correct_ += sums[N + n] >= mx[n];  // the target's logit is the global maximum
      }
    if (want_grad) be_.ce_grad(zl, ce_max_.data(), ce_sums_.data(), tg, N, V, v0, loss_scale);
    return loss;
  }

  config cfg_;
  stage_place place_;
  int S_, M_;
  std::vector<param_spec> specs_;
  std::vector<local_tensor> tensors_;
  bool first_ = true, last_ = true, causal_ = true;
  int l0_ = 0, l1_ = 0;
  int T_ = 0, C_ = 0, nh_ = 0, hd_ = 0, Cl_ = 0, Hl_ = 0, Vl_ = 0, rot_ = 0;
  std::int64_t N_ = 0, act_stride_ = 0, per_layer_ = 0, att_numel_ = 0, head_numel_ = 0, embed_numel_ = 0, correct_ = 0;
  array<float> acts_, dres_, dln_a_, dln_b_, dhid_, dqkv_, datty_, dP_, logits_, ce_max_, ce_gather_, ce_sums_;
  array<float> cos_, sin_;
  array<hcomm::bf16> keep_;  // bf16: the linear layers' inputs (kept_of)
  std::int64_t keep_per_layer_ = 0, keep_at_[4] = {};
  std::vector<unsigned char> kept_ok_;
  array<int> tokens_, targets_;  // staged micro-batch (backends without host memory)
  // host copies of the loss's small arrays and of the logits (backends without host memory)
  mutable std::vector<float> ce_max_host_, ce_gather_host_, ce_sums_host_, logits_host_;
  block_ops* ops_ = nullptr;  // not owned; null: dense kernels only
  Ops be_;                    // the backend that runs the layers

 public:
  array<float> params, grads;  // one allocation each, carved by tensors()
};

using stage_model = basic_stage_model<cpu_ops>;

}  // namespace gpt
