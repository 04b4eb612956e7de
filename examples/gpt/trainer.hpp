// examples/gpt/trainer.hpp: the 3-D parallel training driver, templated over a process grid
// and a communication bundle (hcomm::bundle<Scheme>, or gpt::plain::bundle for plain MPI).
//
//   gpt::plain::grid g(dp, pp, tp);
//   gpt::plain::bundle b(g);
//   gpt::trainer<gpt::plain::grid, gpt::plain::bundle> t(cfg, opts, g, b);
//   t.run();
//
// Per step: every DP rank takes its B/DP sequences of the global batch, split into micro-
// batches that run through the pipeline stages with a 1F1B schedule (TP collectives inside
// the layers), then gradients are summed over DP in one allreduce of the stage's single
// gradient allocation, the tied embedding gradient is summed between first and last stage,
// the global norm is clipped, and AdamW steps. Scalars (loss, norm) use plain MPI on the
// world communicator: they are not the traffic the schemes compress.
#pragma once
#include <mpi.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <thread>
#include <concepts>
#include <type_traits>
#include <utility>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint.hpp"
#include "collective.hpp"
#include "config.hpp"
#include "data.hpp"
#include "faults.hpp"
#include "watchdog.hpp"
#include "model.hpp"
#include "optim.hpp"
#include "sparsity.hpp"
#include "text.hpp"

namespace gpt {

struct run_options {
  std::string data = "data/kjv.txt";
  std::string scheme = "none";
  std::string metrics;        // JSON lines file (rank 0)
  std::string losses_out;     // "step loss" lines, %.17g (rank 0)
  std::string expect_losses;  // compare with such a file at the end; non-zero exit on mismatch
  double expect_rtol = 1e-5;
  std::string save, resume;   // checkpoint prefixes
  long long compress_min_bytes = -1;  // hcomm: messages below this go uncompressed (-1: hcomm's default)
  int idle_sleep_us = -1;              // hcomm: comm_options::idle_sleep_us (-1: auto, 0: MPI_Wait)
  int save_every = 0;         // also save every k steps (0: only at the end / stop)
  int stop_at = -1;           // stop (and save) before this step, as if interrupted
  int keep = 1;               // complete checkpoint sets kept in the --save directory
  std::string on_save_error = "stop";  // a failed save: stop | continue (training goes on)
  double comm_timeout = 0;    // watchdog seconds (0: off)
  bool skip_nonfinite = false;  // NaN/Inf loss or gradient norm: skip the update (else stop)
  bool reshard = false;       // --resume a set of another grid, re-cut for this one
  bool reshard_reset_residuals = false;  // ... and drop its error-feedback residuals
  int sample = 64;            // bytes of text to sample at the end (0: none)
  std::string prompt = "And God said";
  bool quiet = false;
  sparsity_config sparsity;   // --sparsity and its schedule options (sparsity.hpp)
};

// One axis' bytes this step: (raw, sent) summed over all ranks.
struct axis_bytes {
  double raw = 0, sent = 0;
};

// Communicators with error feedback (hcomm's ErrorFeedback policy) keep a residual that is
// part of the training state: it goes into checkpoints.
template <class C>
concept has_residual = requires(C& c, std::span<const float> r) {
  { c.template residual<float>() } -> std::convertible_to<std::span<const float>>;
  c.template load_residual<float>(r);
};

template <class Grid, class Bundle>
class trainer {
  using dp_comm_t = std::remove_reference_t<decltype(std::declval<Bundle&>().dp())>;

 public:
  trainer(const config& c, const run_options& o, Grid& g, Bundle& b)
      : cfg_(c), opt_(o), grid_(g), comm_(b),
        model_(c, {g.pp_size(), g.pp_rank(), g.tp_size(), g.tp_rank()}, c.micro_for(g.dp_size(), g.pp_size()),
               c.batch / g.dp_size() / c.micro_for(g.dp_size(), g.pp_size())),
        adam_(model_.params.size()), dog_(o.comm_timeout) {
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
    agreed([&] { data_ = text_data::load(o.data, c.val_frac, c.block); }, 2, "cannot load --data " + o.data + ": ");
    const int M = model_.n_micro();
    const std::size_t N = static_cast<std::size_t>(model_.rows());
    tokens_.assign(M, std::vector<int>(N));
    targets_.assign(M, std::vector<int>(N));
    model_.init_params();
    sp_.setup(c, o.sparsity, model_, adam_, {g.dp_size(), g.dp_rank(), g.pp_rank(), g.tp_size(), g.tp_rank()});
    if (sp_.active()) model_.set_block_ops(&sp_);
  }

  // Returns the process exit code (0, or 1 when --expect-losses does not match).
  int run() {
    if (!opt_.resume.empty()) resume();
    const bool root = world_rank_ == 0;
    if (root && !opt_.quiet) banner();
    std::FILE* metrics = nullptr;
    agreed(
        [&] {
          if (!root || opt_.metrics.empty()) return;
          metrics = std::fopen(opt_.metrics.c_str(), step_ > 0 ? "a" : "w");
          if (!metrics) hcomm::fail(hcomm::errc::io_failure, opt_.metrics + ": " + std::strerror(errno));
        },
        2, "cannot open --metrics: ");
    const int end = opt_.stop_at >= 0 && opt_.stop_at < cfg_.steps ? opt_.stop_at : cfg_.steps;
    const double tokens_per_step = static_cast<double>(cfg_.batch) * cfg_.block;
    double total_s = 0, total_tokens = 0;
    for (; step_ < end; ++step_) {
      reset_stats();
      if (faults::hang().at(world_rank_, step_ + 1)) hang_forever();
      {
        auto w = dog_.watch("MPI_Barrier (start of the step)", step_);
        MPI_Barrier(MPI_COMM_WORLD);  // time the step, not the previous step's stragglers
      }
      const double t0 = MPI_Wtime();
      const float lr = lr_at(cfg_, static_cast<int>(step_));
      const double loss = train_step(lr);
      const double ms = (MPI_Wtime() - t0) * 1e3;
      total_s += ms / 1e3;
      total_tokens += tokens_per_step;
      std::array<axis_bytes, 3> bytes;
      double sparse_saved = sp_.saved_bytes();  // sparsity-aware DP: bytes not sent, all ranks
      {
        auto w = dog_.watch("MPI_Allreduce (byte counts)", step_);
        bytes = gather_stats();
        MPI_Allreduce(MPI_IN_PLACE, &sparse_saved, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      }
      total_sparse_saved_ += sparse_saved;
      double val = -1;
      const bool eval_now = (cfg_.eval_every > 0 && (step_ + 1) % cfg_.eval_every == 0) || step_ + 1 == cfg_.steps;
      if (eval_now) val = evaluate();
      losses_[step_] = loss;
      if (root) {
        const double tps = tokens_per_step / (ms / 1e3);
        if (!opt_.quiet) {
          std::printf("step %4lld/%d | loss %.6f | lr %.3e | %8.0f tok/s | %8.2f ms | MB raw->sent dp %.3f->%.3f pp %.3f->%.3f tp %.3f->%.3f",
                      static_cast<long long>(step_ + 1), cfg_.steps, loss, lr, tps, ms, bytes[0].raw / 1e6,
                      bytes[0].sent / 1e6, bytes[1].raw / 1e6, bytes[1].sent / 1e6, bytes[2].raw / 1e6,
                      bytes[2].sent / 1e6);
          if (sp_.active())
            std::printf(" | %s density %.4f | GFLOP %.3f/%.3f | dp packed saved %.3f MB%s", sp_.phase(step_), sp_.density(),
                        sp_.step_flops().actual.total() / 1e9, sp_.step_flops().dense.total() / 1e9, sparse_saved / 1e6,
                        sp_.updated() ? " | topology updated" : "");
          if (sp_.active() && sp_.updated()) std::printf(" | masks %016llx", static_cast<unsigned long long>(sp_.checksum()));
          if (val >= 0) std::printf(" | val %.6f", val);
          std::printf("\n");
          std::fflush(stdout);
        }
        if (metrics) {
          // key order as written (ordered_json); scripts/plot_metrics.py and bench/model read these keys
          nlohmann::ordered_json j;
          j["step"] = step_ + 1;
          j["loss"] = loss;
          j["lr"] = lr;
          j["tokens_per_s"] = tps;
          j["ms"] = ms;
          j["flops"] = flops_object(sp_.total_flops());
          j["flops_step"] = flops_object(sp_.step_flops());
          j["density"] = sp_.density();
          j["target_density"] = sp_.target_density(step_);
          j["attention_density"] = sp_.attention_density(step_);
          j["phase"] = sp_.phase(step_);
          j["dp_sparse_saved"] = sparse_saved;
          const char* axes[3] = {"dp", "pp", "tp"};
          for (int a = 0; a < 3; ++a) j["comm"][axes[a]] = {{"raw", bytes[a].raw}, {"sent", bytes[a].sent}};
          if (val >= 0) j["val_loss"] = val;
          // NaN (a step skipped by --skip-nonfinite) is not JSON: written as null
          const std::string line = j.dump() + "\n";
          std::fputs(line.c_str(), metrics);
          std::fflush(metrics);
        }
      }
      for (int a = 0; a < 3; ++a) {
        total_bytes_[a].raw += bytes[a].raw;
        total_bytes_[a].sent += bytes[a].sent;
      }
      last_val_ = val >= 0 ? val : last_val_;
      if (opt_.save_every > 0 && (step_ + 1) % opt_.save_every == 0 && !opt_.save.empty()) {
        ++step_;
        save();
        --step_;
      }
    }
    if (metrics) std::fclose(metrics);
    if (!opt_.save.empty()) save();
    auto w = dog_.watch("the end of the run (sampling, tied-copy check)", step_);
    if (root && !opt_.quiet && total_s > 0) summary(total_tokens / total_s);
    if (step_ == cfg_.steps && opt_.sample > 0) sample_text();
    const int tied_rc = check_tied_copies();
    const int sparse_rc = sp_.failures() > 0 ? 1 : 0;  // sparsity invariants (sparsity.hpp), printed where they failed
    return std::max({tied_rc, sparse_rc, finish_losses()});
  }

 private:
  // ---- one optimizer step ------------------------------------------------------------------
  double train_step(float lr) {
    const int M = model_.n_micro(), S = model_.micro(), T = cfg_.block;
    const int per_dp = cfg_.batch / grid_.dp_size();
    for (int mb = 0; mb < M; ++mb)
      for (int s = 0; s < S; ++s) {
        const int g = grid_.dp_rank() * per_dp + mb * S + s;
        data_.train_sequence(cursor_, g, T, tokens_[mb].data() + s * T, targets_[mb].data() + s * T);
      }
    model_.zero_grads();
    sp_.begin_step(step_);
    double local_loss = 0;
    {
      auto w = dog_.watch("the 1F1B pipeline (PP send/recv, TP collectives)", step_);
      local_loss = pipeline_1f1b();
    }
    if (faults::nan_grad().at(world_rank_, step_ + 1)) model_.grads[0] = std::numeric_limits<float>::quiet_NaN();
    {
      // sparse layers' gradients go as packed active values (not with error feedback: its
      // residual is shaped like the dense gradient)
      auto w = dog_.watch("the DP gradient allreduce", step_);
      sp_.allreduce_grads(comm_.dp(), model_.grads, !has_residual<dp_comm_t>);
    }
    {
      // after DP: both copies then add the same two (possibly lossily reduced) terms
      auto w = dog_.watch("the tied-embedding exchange (MPI_Sendrecv)", step_);
      sync_tied_embedding();
    }
    auto w = dog_.watch("MPI_Allreduce (loss, gradient norm)", step_);
    // loss: sum of token losses from the last stage's tp-rank-0 of every DP replica
    double loss = (model_.is_last() && grid_.tp_rank() == 0) ? local_loss : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    loss /= static_cast<double>(cfg_.batch) * T;
    // global gradient norm: every DP replica holds the same summed gradients, count one
    double sq = grid_.dp_rank() == 0 ? model_.local_grad_sq() : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, &sq, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const double norm = std::sqrt(sq);
    // loss and norm are all-reduced, so every rank takes the same branch here
    if (!std::isfinite(loss) || !std::isfinite(norm)) {
      if (!opt_.skip_nonfinite)
        throw stopped{4, "step " + std::to_string(step_ + 1) + ": " + (std::isfinite(loss) ? "gradient norm" : "loss") +
                             " is " + std::to_string(std::isfinite(loss) ? norm : loss) +
                             " (non-finite); stopping (--skip-nonfinite skips such updates)"};
      if (world_rank_ == 0)
        std::fprintf(stderr, "train_gpt: step %lld: loss %g, gradient norm %g (non-finite): update skipped\n",
                     static_cast<long long>(step_ + 1), loss, norm);
      ++skipped_;
    } else {
      if (cfg_.grad_clip > 0 && norm > cfg_.grad_clip) model_.scale_grads(static_cast<float>(cfg_.grad_clip / (norm + 1e-6)));
      adam_.step(model_, lr, static_cast<int>(step_) + 1);
    }
    sp_.end_step(step_);  // FLOPs of this step; topology update on update steps
    cursor_ += static_cast<std::uint64_t>(cfg_.batch) * T;
    return loss;
  }

  // 1F1B over M micro-batches: warm-up of (stages after this one) forwards, then one forward
  // one backward, then the remaining backwards. Blocking send/recv pairs are ordered so that
  // on every stage boundary both sides see the same sequence of messages (the lower stage
  // sends before it receives, the upper one receives before it sends): no deadlock even
  // when sends wait for their receivers.
  double pipeline_1f1b() {
    const int M = model_.n_micro(), P = grid_.pp_size(), s = grid_.pp_rank();
    const int warm = std::min(P - s - 1, M), steady = M - warm;
    const float scale = 1.f / (static_cast<float>(cfg_.batch) * static_cast<float>(cfg_.block));
    double loss = 0;
    auto F = [&](int mb) { loss += model_.forward(mb, tokens_[mb].data(), targets_[mb].data(), comm_.tp(), scale, true); };
    auto B = [&](int mb) { model_.backward(mb, tokens_[mb].data(), comm_.tp()); };
    for (int i = 0; i < warm; ++i) {
      recv_forward(i);
      F(i);
      send_forward(i);
    }
    if (steady > 0) recv_forward(warm);
    for (int i = 0; i < steady; ++i) {
      F(warm + i);
      send_forward(warm + i);
      recv_backward(i);
      B(i);
      if (i + 1 < steady) recv_forward(warm + i + 1);
      send_backward(i);
    }
    for (int i = steady; i < M; ++i) {
      recv_backward(i);
      B(i);
      send_backward(i);
    }
    return loss;
  }
  std::span<float> act_span(float* p) { return {p, static_cast<std::size_t>(model_.act_numel())}; }
  void recv_forward(int mb) {
    if (!model_.is_first()) comm_.pp().recv(act_span(model_.input(mb)), grid_.prev_stage(), 2 * mb);
  }
  void send_forward(int mb) {
    if (!model_.is_last())
      comm_.pp().send(std::span<const float>(model_.output(mb), static_cast<std::size_t>(model_.act_numel())),
                      grid_.next_stage(), 2 * mb);
  }
  void recv_backward(int mb) {
    if (!model_.is_last()) comm_.pp().recv(act_span(model_.dres()), grid_.next_stage(), 2 * mb + 1);
  }
  void send_backward(int mb) {
    if (!model_.is_first())
      comm_.pp().send(std::span<const float>(model_.dres(), static_cast<std::size_t>(model_.act_numel())),
                      grid_.prev_stage(), 2 * mb + 1);
  }

  // GPT-2 ties wte to the lm head. With several stages the first and the last stage each
  // hold a copy; both add the two stages' gradients (a + b == b + a, bitwise), after the DP
  // allreduce, so the copies stay equal whatever DP compression did. The exchange uses
  // plain MPI, not the pipeline communicator: through a lossy codec each side would add a
  // differently decoded term and the copies would drift apart (Megatron, too, reduces the
  // embedding in its own group rather than on the activation channel).
  void sync_tied_embedding() {
    if (cfg_.arch != arch_kind::gpt2 || grid_.pp_size() == 1) return;
    if (!model_.is_first() && !model_.is_last()) return;
    const local_tensor* t = nullptr;
    for (const auto& x : model_.tensors())
      if (x.global == 0) t = &x;
    float* mine = model_.grads.data() + t->offset;
    const int n = static_cast<int>(t->numel);
    tied_buf_.resize(static_cast<std::size_t>(n));
    const int peer = grid_.world_rank_of(grid_.dp_rank(), model_.is_first() ? grid_.pp_size() - 1 : 0, grid_.tp_rank());
    constexpr int tag = 30000;  // above any micro-batch tag, below the MPI minimum tag bound 32767
    MPI_Sendrecv(mine, n, MPI_FLOAT, peer, tag, tied_buf_.data(), n, MPI_FLOAT, peer, tag, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 0; i < n; ++i) mine[i] += tied_buf_[static_cast<std::size_t>(i)];
    tied_bytes_ += static_cast<double>(n) * sizeof(float);
  }

  // The first and last stage's copies of the tied embedding must still be bitwise equal
  // (checked with plain MPI: the check must not go through a lossy codec). Returns 1 if not.
  int check_tied_copies() {
    if (cfg_.arch != arch_kind::gpt2 || grid_.pp_size() == 1) return 0;
    int bad = 0;
    if (model_.is_first() || model_.is_last()) {
      const local_tensor* t = nullptr;
      for (const auto& x : model_.tensors())
        if (x.global == 0) t = &x;
      const float* mine = model_.params.data() + t->offset;
      const int n = static_cast<int>(t->numel);
      const int peer = grid_.world_rank_of(grid_.dp_rank(), model_.is_first() ? grid_.pp_size() - 1 : 0, grid_.tp_rank());
      if (model_.is_first()) {
        MPI_Send(mine, n, MPI_FLOAT, peer, 30002, MPI_COMM_WORLD);
      } else {
        tied_buf_.resize(static_cast<std::size_t>(n));
        MPI_Recv(tied_buf_.data(), n, MPI_FLOAT, peer, 30002, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad = std::memcmp(mine, tied_buf_.data(), sizeof(float) * static_cast<std::size_t>(n)) != 0;
        if (bad) std::fprintf(stderr, "train_gpt (rank %d): the tied embedding copies of the first and last stage differ\n", world_rank_);
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return bad;
  }

  // GPT_FAULT_HANG (faults.hpp): this rank stops taking part, as a stuck peer would.
  [[noreturn]] void hang_forever() {
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  }

  // ---- evaluation and sampling ------------------------------------------------------------
  double evaluate() {
    auto w = dog_.watch("evaluation (pipeline forward, MPI_Allreduce)", step_);
    const int M = model_.n_micro(), S = model_.micro(), T = cfg_.block;
    const int per_dp = cfg_.batch / grid_.dp_size();
    double sum = 0;
    for (int v = 0; v < cfg_.eval_batches; ++v) {
      for (int mb = 0; mb < M; ++mb) {
        for (int s = 0; s < S; ++s)
          data_.val_sequence(v, cfg_.batch, grid_.dp_rank() * per_dp + mb * S + s, T, tokens_[mb].data() + s * T,
                             targets_[mb].data() + s * T);
        recv_forward(mb);
        sum += model_.forward(mb, tokens_[mb].data(), targets_[mb].data(), comm_.tp(), 0.f, false);
        send_forward(mb);
      }
    }
    double loss = (model_.is_last() && grid_.tp_rank() == 0) ? sum : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return loss / (static_cast<double>(cfg_.eval_batches) * cfg_.batch * T);
  }

  // Samples opt_.sample bytes after the prompt (temperature 1, top-k 0, seeded): every DP
  // replica computes the same thing; the last stage's tp-rank-0 of DP replica 0 picks each
  // byte and broadcasts it to the world. The context is the last T bytes.
  void sample_text() {
    const int T = cfg_.block;
    const int sampler = grid_.world_rank_of(0, grid_.pp_size() - 1, 0);
    std::string text = opt_.prompt.empty() ? std::string("\n") : opt_.prompt;
    std::vector<float> row(static_cast<std::size_t>(cfg_.vocab)), part(static_cast<std::size_t>(model_.local_vocab()));
    rng r{rng_state_};
    for (int i = 0; i < opt_.sample; ++i) {
      const int len = std::min<int>(static_cast<int>(text.size()), T);
      const std::string ctx = text.substr(text.size() - len);
      auto& tok = tokens_[0];
      std::fill(tok.begin(), tok.end(), 0);
      for (int t = 0; t < len; ++t) tok[t] = static_cast<unsigned char>(ctx[t]);
      recv_forward(0);
      model_.forward(0, tok.data(), targets_[0].data(), comm_.tp(), 0.f, false);
      send_forward(0);
      int next = 0;
      if (model_.is_last()) {
        const float* z = model_.logits() + static_cast<std::size_t>(len - 1) * model_.local_vocab();
        std::copy(z, z + model_.local_vocab(), part.begin());
        if (grid_.tp_size() > 1) comm_.tp().allgather(std::span<const float>(part), std::span<float>(row));
        else row = part;
        float mx = row[0];
        for (float x : row) mx = std::max(mx, x);
        double total = 0;
        for (float& x : row) total += (x = std::exp(x - mx));
        double u = r.uniform() * total;
        for (int v = 0; v < cfg_.vocab; ++v) {
          u -= row[v];
          if (u <= 0) { next = v; break; }
          next = v;
        }
      }
      MPI_Bcast(&next, 1, MPI_INT, sampler, MPI_COMM_WORLD);
      text.push_back(static_cast<char>(next));
    }
    if (world_rank_ == 0 && !opt_.quiet)
      std::printf("---- sample ----\n%s\n----------------\n", printable_text(text).c_str());
  }

  // ---- reporting ---------------------------------------------------------------------------
  void reset_stats() {
    comm_.dp().reset_stats();
    comm_.pp().reset_stats();
    comm_.tp().reset_stats();
  }
  // This step's bytes per axis, summed over all ranks (each rank counts what it sent).
  std::array<axis_bytes, 3> gather_stats() {
    double v[6];
    const auto d = comm_.dp().stats(), p = comm_.pp().stats(), t = comm_.tp().stats();
    v[0] = static_cast<double>(d.raw_bytes); v[1] = static_cast<double>(d.wire_bytes);
    v[2] = static_cast<double>(p.raw_bytes); v[3] = static_cast<double>(p.wire_bytes);
    v[4] = static_cast<double>(t.raw_bytes); v[5] = static_cast<double>(t.wire_bytes);
    MPI_Allreduce(MPI_IN_PLACE, v, 6, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return {axis_bytes{v[0], v[1]}, axis_bytes{v[2], v[3]}, axis_bytes{v[4], v[5]}};
  }
  static nlohmann::ordered_json flops_object(const msparse::step_flops& f) {
    return {{"dense", f.dense.total()}, {"actual", f.actual.total()}};
  }
  double n_params() const {
    double n = 0;
    for (const auto& s : model_.specs()) n += static_cast<double>(s.numel());
    return n;
  }
  // Training FLOPs per token: 6 per parameter (forward + backward) plus attention scores.
  double flops_per_token() const {
    return 6.0 * n_params() + 12.0 * cfg_.layers * static_cast<double>(cfg_.channels) * cfg_.block;
  }
  void banner() const {
    std::printf("train_gpt: arch %s, %d layers, C %d, %d heads, T %d, %.3fM params | batch %d = dp %d x %d micro-batches x %d | grid dp %d pp %d tp %d | scheme %s\n",
                to_string(cfg_.arch), cfg_.layers, cfg_.channels, cfg_.heads, cfg_.block, n_params() / 1e6,
                cfg_.batch, grid_.dp_size(), model_.n_micro(), model_.micro(), grid_.dp_size(), grid_.pp_size(),
                grid_.tp_size(), opt_.scheme.c_str());
    if (sp_.active()) std::printf("%s\n", sp_.describe().c_str());
    if (step_ > 0) std::printf("resumed at step %lld\n", static_cast<long long>(step_));
    std::fflush(stdout);
  }
  void summary(double tps) const {
    auto last = losses_.rbegin();
    std::printf("summary: final train loss %.6f", last != losses_.rend() ? last->second : 0.0);
    if (last_val_ >= 0) std::printf(", val loss %.6f", last_val_);
    std::printf(", %.0f tokens/s", tps);
    const char* names[3] = {"dp", "pp", "tp"};
    for (int a = 0; a < 3; ++a) {
      const double saved = total_bytes_[a].raw - total_bytes_[a].sent;
      std::printf(", %s %.2f MB saved of %.2f MB", names[a], saved / 1e6, total_bytes_[a].raw / 1e6);
    }
    if (tied_bytes_ > 0) std::printf(" (+ tied embedding exchange, plain MPI, on the first/last stage)");
    std::printf("\n");
    const auto& F = sp_.total_flops();
    std::printf("summary: training FLOPs actual %.4g dense %.4g (%.2fx fewer), sparsity %s, final density %.4f, dp packed saved %.2f MB\n",
                F.actual.total(), F.dense.total(), F.reduction(), opt_.sparsity.method.c_str(), sp_.density(),
                total_sparse_saved_ / 1e6);
    std::fflush(stdout);
  }

  // ---- checkpoints -------------------------------------------------------------------------
  checkpoint_meta meta() const {
    checkpoint_meta m;
    m.fingerprint = cfg_.fingerprint() + " scheme " + opt_.scheme;
    if (opt_.sparsity.sparse()) m.fingerprint += " " + opt_.sparsity.describe(cfg_.steps);
    m.dp = grid_.dp_size(); m.pp = grid_.pp_size(); m.tp = grid_.tp_size(); m.rank = world_rank_;
    m.step = step_; m.cursor = cursor_; m.rng = rng_state_;
    return m;
  }
  // DP error-feedback residual (zeros when the scheme has none, or before the first step).
  std::vector<float> residual() {
    std::vector<float> r(model_.grads.size(), 0.f);
    if constexpr (has_residual<dp_comm_t>) {
      const auto cur = comm_.dp().template residual<float>();
      if (!cur.empty()) {
        if (cur.size() != r.size())
          hcomm::fail(hcomm::errc::mismatch, "error-feedback residual has " + std::to_string(cur.size()) +
                                                 " values, the gradients " + std::to_string(r.size()));
        std::copy(cur.begin(), cur.end(), r.begin());
      }
    }
    return r;
  }
  // The checkpoint set of this step (checkpoint.hpp: every rank writes, all agree, rank 0's
  // manifest makes it current). A failure is known to every rank at once: the run stops with
  // the reason or, with --on-save-error continue, goes on with the previous set current.
  void save() {
    if (step_ == last_saved_) return;  // --save-every already saved this step
    auto w = dog_.watch("checkpoint save", step_);
    const std::vector<float> res = residual();
    const std::string r = std::to_string(world_rank_);
    std::vector<set_file> files;
    files.push_back({"rank" + r + ".ckpt",
                     encode_checkpoint(meta(), {std::span<const float>(model_.params), std::span<const float>(adam_.m),
                                                std::span<const float>(adam_.v), std::span<const float>(res)})});
    if (sp_.active()) files.push_back({"rank" + r + ".sparse", sp_.to_bytes()});
    const save_verdict v = save_set(opt_.save, set_meta(), files, opt_.keep, last_saved_ < 0);
    if (!v.ok && v.fatal) throw stopped{3, v.message + "; stopping"};
    if (!v.ok && opt_.on_save_error == "stop") throw stopped{3, v.message + "; stopping (--on-save-error continue trains on)"};
    if (!v.ok) {
      if (world_rank_ == 0) std::fprintf(stderr, "train_gpt: %s; training goes on (--on-save-error continue)\n", v.message.c_str());
      return;
    }
    last_saved_ = step_;
    if (world_rank_ == 0 && !opt_.quiet)
      std::printf("saved checkpoint set %s at step %lld\n", set_dir(opt_.save, step_).c_str(), static_cast<long long>(step_));
  }
  set_info set_meta() const {
    set_info i;
    i.fingerprint = meta().fingerprint;
    i.dp = grid_.dp_size(); i.pp = grid_.pp_size(); i.tp = grid_.tp_size();
    i.step = step_;
    return i;
  }
  // The newest complete set of --resume DIR, verified on every rank before anything changes
  // (open_newest_set throws the same gpt::stopped on all ranks otherwise). With --reshard and
  // a set of another grid, every rank reads the files of the old grid's DP replica 0 (its
  // stages and TP shards hold the whole model) and re-cuts them for its own place.
  void resume() {
    auto w = dog_.watch("checkpoint resume", step_);
    const int D = grid_.dp_size(), P = grid_.pp_size(), T = grid_.tp_size();
    bool recut = false;
    auto names_of = [&](int dp, int pp, int tp) {
      std::vector<std::string> n;
      recut = dp != D || pp != P || tp != T;
      if (!recut) {
        n.push_back("rank" + std::to_string(world_rank_) + ".ckpt");
        if (sp_.active()) n.push_back("rank" + std::to_string(world_rank_) + ".sparse");
        return n;
      }
      // masks under TP are evolved per shard (per-shard targets, top-k and RNG keys): a set of
      // another TP holds masks that no run on this TP would have, so only DP and PP may change
      if (sp_.active() && tp != T)
        hcomm::fail(hcomm::errc::unsupported, "resharding a sparse set (--sparsity) to another TP size is not supported: "
                                              "its masks were evolved per TP shard (per-shard targets, top-k and RNG), so "
                                              "no re-cut gives the masks of a tp" + std::to_string(T) + " run; resume it "
                                              "with --tp " + std::to_string(tp) + " (DP and PP may change)");
      if (has_residual<dp_comm_t> && !opt_.reshard_reset_residuals)
        hcomm::fail(hcomm::errc::unsupported, "the set holds error-feedback residuals, which belong to one rank's ring chunks "
                                              "and cannot be re-cut to another grid (--reshard-reset-residuals resumes with "
                                              "them reset to zero)");
      for (int s = 0; s < pp; ++s)
        for (int t = 0; t < tp; ++t) n.push_back("rank" + std::to_string(t + tp * dp * s) + ".ckpt");
      // sparse (same TP): the sparsity files of this TP shard on every old stage
      if (sp_.active())
        for (int s = 0; s < pp; ++s) n.push_back("rank" + std::to_string(grid_.tp_rank() + tp * dp * s) + ".sparse");
      return n;
    };
    // header check: a file of another save names its step (a mixed set), else its other reason
    auto check = [&](const std::string& path, const std::vector<char>& bytes, std::int64_t set_step) {
      if (path.ends_with(".sparse")) return;
      const checkpoint_meta m = decode_checkpoint_meta(bytes, path);
      if (m.step != set_step)
        hcomm::fail(hcomm::errc::mismatch, path + " holds step " + std::to_string(m.step) + ", the set is step " +
                                               std::to_string(set_step) + " (a mixed set: files of different saves)");
      if (!path.ends_with("/rank" + std::to_string(m.rank) + ".ckpt"))
        hcomm::fail(hcomm::errc::mismatch, path + " is rank " + std::to_string(m.rank) + "'s file (a mixed set)");
    };
    opened_set set = open_newest_set(opt_.resume, set_meta(), opt_.reshard, names_of, check);
    // Decode into scratch first so that a refusal leaves every rank untouched.
    std::vector<float> p(model_.params.size()), m(p.size()), v(p.size()), res(p.size());
    checkpoint_meta got;
    agreed(
        [&] {
          if (recut) {
            got = recut_from(set, p, m, v);
            if (sp_.active()) {  // masks of each layer from the old stage that held it
              const std::size_t k = static_cast<std::size_t>(set.pp * set.tp);
              std::vector<const std::vector<char>*> files;
              std::vector<std::string> paths;
              for (std::size_t i = k; i < set.files.size(); ++i) {
                files.push_back(&set.files[i]);
                paths.push_back(set.dir + "/" + set.names[i]);
              }
              sp_.load_resharded(files, paths);
            }
            return;
          }
          got = decode_checkpoint(set.files[0], set.dir + "/" + set.names[0], meta(),
                                  {std::span<float>(p), std::span<float>(m), std::span<float>(v), std::span<float>(res)});
          if (sp_.active()) sp_.load_bytes(set.files[1], set.dir + "/" + set.names[1]);
        },
        2, "refusing checkpoint set " + set.dir + ": ");
    model_.params = std::move(p);
    adam_.m = std::move(m);
    adam_.v = std::move(v);
    if constexpr (has_residual<dp_comm_t>) {
      if (!recut) comm_.dp().template load_residual<float>(std::span<const float>(res));
    }
    step_ = got.step;
    cursor_ = got.cursor;
    rng_state_ = got.rng;
    last_saved_ = recut ? -1 : step_;
    sp_.commit_loaded(step_);
    if (recut && world_rank_ == 0 && !opt_.quiet)
      std::printf("resharded checkpoint set %s from grid dp%d pp%d tp%d\n", set.dir.c_str(), set.dp, set.pp, set.tp);
  }
  // --reshard: the old grid's DP-replica-0 files (stage s, shard t in set.files[s * tp + t])
  // decoded, each tensor assembled whole from its old shards and cut for this rank's place.
  // Step, data cursor and RNG are global; parameters and Adam moments are per element.
  checkpoint_meta recut_from(const opened_set& set, std::vector<float>& p, std::vector<float>& m, std::vector<float>& v) {
    const auto& specs = model_.specs();
    std::vector<std::vector<float>> gp(specs.size()), gm(specs.size()), gv(specs.size());
    std::vector<char> have(specs.size(), 0);
    checkpoint_meta got;
    for (int s = 0; s < set.pp; ++s)
      for (int t = 0; t < set.tp; ++t) {
        const std::size_t i = static_cast<std::size_t>(s * set.tp + t);
        const auto layout = stage_tensors(cfg_, {set.pp, s, set.tp, t});
        const std::size_t n = layout.empty() ? 0 : static_cast<std::size_t>(layout.back().offset + layout.back().numel);
        std::vector<float> op(n), om(n), ov(n), ores(n);
        checkpoint_meta want = meta();
        want.dp = set.dp; want.pp = set.pp; want.tp = set.tp;
        want.rank = t + set.tp * set.dp * s;
        got = decode_checkpoint(set.files[i], set.dir + "/" + set.names[i], want,
                                {std::span<float>(op), std::span<float>(om), std::span<float>(ov), std::span<float>(ores)});
        for (const auto& lt : layout) {
          if (lt.tied_copy) continue;  // the first stage's wte is the same tensor
          const auto& sp = specs[lt.global];
          for (auto* g : {&gp[lt.global], &gm[lt.global], &gv[lt.global]}) g->resize(static_cast<std::size_t>(sp.numel()));
          insert_shard(sp, op.data() + lt.offset, set.tp, t, gp[lt.global].data());
          insert_shard(sp, om.data() + lt.offset, set.tp, t, gm[lt.global].data());
          insert_shard(sp, ov.data() + lt.offset, set.tp, t, gv[lt.global].data());
          have[lt.global] = 1;
        }
      }
    for (const auto& lt : model_.tensors()) {
      if (!have[lt.global]) hcomm::fail(hcomm::errc::mismatch, "tensor " + specs[lt.global].name + " is in no file of the set");
      const auto& sp = specs[lt.global];
      extract_shard(sp, gp[lt.global].data(), grid_.tp_size(), grid_.tp_rank(), p.data() + lt.offset);
      extract_shard(sp, gm[lt.global].data(), grid_.tp_size(), grid_.tp_rank(), m.data() + lt.offset);
      extract_shard(sp, gv[lt.global].data(), grid_.tp_size(), grid_.tp_rank(), v.data() + lt.offset);
    }
    return got;
  }

  int finish_losses() {
    if (world_rank_ != 0) return 0;
    if (!opt_.losses_out.empty()) {
      std::ofstream f(opt_.losses_out + ".tmp");
      char line[64];
      for (const auto& [s, l] : losses_) {
        std::snprintf(line, sizeof line, "%lld %.17g\n", static_cast<long long>(s), l);
        f << line;
      }
      f.close();
      std::rename((opt_.losses_out + ".tmp").c_str(), opt_.losses_out.c_str());
    }
    if (opt_.expect_losses.empty()) return 0;
    std::ifstream f(opt_.expect_losses);
    if (!f) {
      std::fprintf(stderr, "train_gpt: cannot read --expect-losses %s\n", opt_.expect_losses.c_str());
      return 1;
    }
    std::map<long long, double> want;
    long long s;
    double l;
    while (f >> s >> l) want[s] = l;
    int checked = 0, bad = 0;
    double worst = 0;
    for (const auto& [st, got] : losses_) {
      auto it = want.find(st);
      if (it == want.end()) continue;
      ++checked;
      const double rel = std::fabs(got - it->second) / std::max(1e-30, std::fabs(it->second));
      worst = std::max(worst, rel);
      const bool ok = opt_.expect_rtol == 0 ? got == it->second : rel <= opt_.expect_rtol;
      if (!ok) {
        ++bad;
        std::fprintf(stderr, "step %lld: loss %.17g, expected %.17g (rel %.3e)\n", static_cast<long long>(st), got, it->second, rel);
      }
    }
    if (checked == 0) {
      std::fprintf(stderr, "train_gpt: --expect-losses %s has none of this run's steps\n", opt_.expect_losses.c_str());
      return 1;
    }
    std::printf("expect-losses: %d steps compared, worst relative difference %.3e (tolerance %s)\n", checked, worst,
                opt_.expect_rtol == 0 ? "bitwise" : std::to_string(opt_.expect_rtol).c_str());
    if (bad) std::fprintf(stderr, "expect-losses: %d of %d steps differ\n", bad, checked);
    return bad ? 1 : 0;
  }

  config cfg_;
  run_options opt_;
  Grid& grid_;
  Bundle& comm_;
  stage_model model_;
  adamw adam_;
  text_data data_;
  int world_rank_ = 0;
  std::int64_t step_ = 0;
  std::uint64_t cursor_ = 0;
  std::uint64_t rng_state_ = 0x5eed;
  std::vector<std::vector<int>> tokens_, targets_;
  std::vector<float> tied_buf_;
  double tied_bytes_ = 0;  // uncompressed tied-embedding exchange (not in the axis stats)
  std::map<std::int64_t, double> losses_;
  std::array<axis_bytes, 3> total_bytes_{};
  double last_val_ = -1;
  sparse_trainer sp_;  // --sparsity (dense: only counts FLOPs)
  watchdog dog_;       // --comm-timeout
  std::int64_t last_saved_ = -1;  // step of the last set saved or resumed (-1: none yet)
  long long skipped_ = 0;  // updates skipped by --skip-nonfinite
  double total_sparse_saved_ = 0;
};

}  // namespace gpt
