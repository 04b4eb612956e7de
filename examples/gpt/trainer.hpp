// examples/gpt/trainer.hpp: the 3-D parallel training driver on an hcomm::grid, templated
// over the communication bundle (hcomm::bundle<Scheme>, or gpt::plain_bundle: plain MPI) and
// the model's backend (Ops: cpu_ops; portable_ops on a host executor for --device host and
// host-check, on Kokkos for --device kokkos, on CUDA for --device cuda). Every buffer of the
// model reaches the bundle's communicators as comm_buffer.hpp makes it: std::span for host
// bundles, hcomm::device_span for hcomm::device_bundle (host-check over staged MPI runs its
// device code paths on the CPU; a backend whose memory is not the host's,
// Ops::host_accessible false, needs it). The tied-embedding exchange (plain MPI) stages
// through the host on backends with their own memory (Ops::host_memory false). With
// --overlap on, a device bundle's DP communicator may run on a communication stream of its
// own, ordered with the compute by events. Sparse layers and dumps read the model's memory
// from the host: host bundles only.
//
//   hcomm::grid g(dp, pp, tp);
//   hcomm::bundle<hcomm::scheme::zhybrid<16, 8>> b(g);
//   auto t = gpt::trainer<decltype(b)>::make(cfg, opts, g, b);   // collective
//   gpt::run_result r = t->run();           // r.losses: the loss curve (losses.hpp)
//
// train_step() is one optimizer step, as in llm.c: this DP rank's share of the global batch;
// forward and backward of every micro-batch through the pipeline (1F1B, TP collectives inside
// the layers), the finished gradient handed to the DP reducer (dp_reduce.hpp); the tied
// embedding gradient summed between first and last stage; the global norm clipped; AdamW.
// run() keeps the bookkeeping around it: timing, metrics (metrics.hpp), evaluation,
// checkpoints (checkpoint.hpp), --dump-tensors (dump.hpp: at its step, the sends to the DP,
// PP and TP communicators are recorded where they are made). Scalars (loss, norm) go over
// plain MPI on the world communicator: they are not the traffic the schemes compress.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <tuple>
#include <utility>
#include <vector>

#include "checkpoint.hpp"
#include "collective.hpp"
#include "comm_buffer.hpp"
#include "config.hpp"
#include "data.hpp"
#include "dp_reduce.hpp"
#include "dump.hpp"
#include "faults.hpp"
#include "hcomm/topology/grid.hpp"
#include "kernel_clock.hpp"
#include "losses.hpp"
#include "metrics.hpp"
#include "mfu.hpp"
#include "mlm.hpp"
#include "model.hpp"
#include "optim.hpp"
#include "options.hpp"
#include "overlap.hpp"
#include "sparsity.hpp"
#include "text.hpp"
#include "watchdog.hpp"
#include "wire.hpp"
#include "zero.hpp"

namespace gpt {

struct run_result {
  int rc = 0;         // 1 when an end-of-run check failed (tied copies, sparsity invariants)
  loss_curve losses;  // this run's steps
};

template <class Bundle, class Ops = cpu_ops>
class trainer {
  using dp_comm_t = std::remove_reference_t<decltype(std::declval<Bundle&>().dp())>;
  using pp_comm_t = std::remove_reference_t<decltype(std::declval<Bundle&>().pp())>;
  using tp_comm_t = std::remove_reference_t<decltype(std::declval<Bundle&>().tp())>;
  // A device bundle (its communicators take device_span): the model's memory goes to them as is.
  static constexpr bool device_comm = takes_device_span<dp_comm_t>;
  using pp_request = decltype(std::declval<pp_comm_t&>().isend(comm_buffer<pp_comm_t>(static_cast<const float*>(nullptr), 0), 0, 0));
  static_assert(Ops::host_accessible || device_comm,
                "trainer: a backend whose memory the host cannot read needs a device bundle (hcomm::device_bundle)");
  using model_type = basic_stage_model<Ops>;
  using adam_type = basic_adamw<Ops>;
  using sparse_type = basic_sparse_trainer<model_type, adam_type>;

 public:
  // Collective. The model and the optimizer state are allocated first, before any collective:
  // memory (a GPU's above all) can run out on some ranks only. make() agrees on it: a rank
  // whose allocation failed says why in the agreement that the constructor's body starts
  // with on the others, and every rank throws gpt::stopped (exit 2) with that reason.
  template <class... A>
  static std::unique_ptr<trainer> make(A&&... a) {
    allocating() = true;
    try {
      return std::make_unique<trainer>(std::forward<A>(a)...);
    } catch (const std::exception& e) {
      if (!allocating()) throw;  // after the agreement: the body's own errors
      allocating() = false;
      const verdict v = agree(false, reason_of(e));
      throw stopped{2, allocation_failure(v)};
    }
  }

  trainer(const config& c, const run_options& o, const hcomm::grid& g, Bundle& b, Ops ops = {})
      : cfg_(c), opt_(o), grid_(g), comm_(b),
        model_(c, {g.pp_size(), g.pp_rank(), g.tp_size(), g.tp_rank()}, c.micro_for(g.dp_size(), g.pp_size()),
               c.batch / g.dp_size() / c.micro_for(g.dp_size(), g.pp_size()), device_only_checked(g, o, std::move(ops))),
        adam_(o.zero == 1 ? 0 : model_.params.size(), model_.ops()),
        zero_(o.zero == 1 ? std::make_unique<zero_shard<Ops>>(model_, g.dp_size(), g.dp_rank(), o.bucket_mb) : nullptr),
        dog_(o.comm_timeout), dp_(b.dp(), g, o.sparsity.packed_dp), ckpt_(c, o, g, dog_) {
    allocating() = false;
    if (const verdict v = agree(true, ""); !v.ok) throw stopped{2, allocation_failure(v)};
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
    agreed(
        [&] {
          data_ = text_data::load(o.data, c.val_frac, c.block);
          if (c.is_bert()) mlm_ = mlm_data(&data_, c);
        },
        2, "cannot load --data " + o.data + ": ");
    const int M = model_.n_micro();
    const std::size_t N = static_cast<std::size_t>(model_.rows());
    tokens_.assign(M, std::vector<int>(N));
    targets_.assign(M, std::vector<int>(N));
    model_.init_params();
    sp_.setup(c, o.sparsity, model_, adam_, {g.dp_size(), g.dp_rank(), g.pp_rank(), g.tp_size(), g.tp_rank()});
    // bf16: fp32 master weights, the model computes with their rounding (--zero 1: this
    // replica's block of them)
    if (zero_) zero_->adopt(model_);
    else adam_.adopt_master(model_);
    if (sp_.active()) model_.set_block_ops(&sp_);
    // DP buckets (overlap.hpp): dense runs without error feedback (--zero 1: ZeRO's, the same
    // ranges less the tied copy, zero.hpp); else one, through reduce().
    bucketed_ = !sp_.active() && !dp_reducer<dp_comm_t>::error_feedback;
    if (zero_)
      for (const auto& b : zero_->buckets()) buckets_.push_back({b.begin, b.end});
    else
      buckets_ = plan_buckets(model_.tensors(), bucketed_ ? o.bucket_mb : 0.0);
    // --precision bf16: 16-bit values on the wire (wire.hpp) on the axes of several ranks
    // whose communicator takes them and (--wire auto) whose codec they shrink; DP of
    // error-feedback schemes keeps its float residual.
    if (c.bf16 && o.wire != "fp32" && scheme_takes_16bit(o.scheme)) {
      const bool forced = o.wire == "bf16";
      if constexpr (sums_bf16<tp_comm_t>)
        if (g.tp_size() > 1 && (forced || wire_saves_bytes<tp_comm_t>())) wire_tp_ = make_wire(comm_.tp());
      if constexpr (sends_bf16<pp_comm_t>)
        if (g.pp_size() > 1 && (forced || wire_saves_bytes<pp_comm_t>())) wire_pp_ = make_wire(comm_.pp());
      if constexpr (sums_bf16<dp_comm_t>)
        if (g.dp_size() > 1 && !dp_reducer<dp_comm_t>::error_feedback && (forced || wire_saves_bytes<dp_comm_t>()))
          wire_dp_ = make_wire(comm_.dp());
      dp_.use_wire(wire_dp_.get());
      // their staging now, at its largest, agreed: memory can run out on some ranks only
      agreed([&] { reserve_wires(o.overlap); }, 2, "cannot allocate the 16-bit wire's staging: ");
    }
    // Uncompressed DP (none: hcomm calls MPI_Allreduce; plain): the buckets go through
    // MPI_Iallreduce (--zero 1: MPI_Ireduce_scatter_block, and MPI_Iallreduce for the rest)
    // on the DP group, with and without overlap (the same reduction both ways);
    // overlapped, the communication thread starts each one and tests it until it is done
    // (MPI moves a non-blocking collective only while it is called).
    // Compressed schemes: hcomm's all-reduce, on the communication thread when overlapped.
    // (One bucket keeps hcomm's call: the default runs of the small models are unchanged.)
    // (Device bundles: hcomm's all-reduce, which stages what MPI cannot read.)
    // (--zero 1: more than one bucket before the tied copy is cut out.)
    const std::size_t planned = zero_ ? plan_buckets(model_.tensors(), o.bucket_mb).size() : buckets_.size();
    native_ = !device_comm && bucketed_ && planned > 1 && (o.scheme == "none" || o.scheme == "plain") && !wire_dp_;
    overlap_ = o.overlap;
    if (o.overlap) {
      if (!bucketed_)
        hcomm::fail(hcomm::errc::unsupported, "--overlap on: sparse runs and error-feedback schemes reduce one bucket after backward");
      worker_ = std::make_unique<comm_worker>();
      // its first task: the DP stream's GPU as the thread's current device (CUDA's is per
      // thread; the main thread's cudaSetDevice does not reach it)
      if constexpr (requires { comm_.dp().executor().make_current(); })
        worker_->submit([ex = comm_.dp().executor()] { ex.make_current(); });
    }
  }

  // The backend, after checking what a device bundle cannot do yet (before anything is
  // allocated on it).
  static Ops device_only_checked(const hcomm::grid& g, const run_options& o, Ops ops) {
    if (faults::alloc().at(g.world_rank(), -1)) throw std::bad_alloc();
    if constexpr (device_comm) {
      if (o.sparsity.sparse() || !o.dump_tensors.empty())
        hcomm::fail(hcomm::errc::unsupported, "--device " + o.device + ": no --sparsity or --dump-tensors (they read "
                                              "the model's memory from the host)");
    }
    return ops;
  }

  // make()'s state: true from its start until the constructor's agreement (per thread: ranks
  // may be threads of one process in tests).
  static bool& allocating() {
    static thread_local bool a = false;
    return a;
  }
  static std::string allocation_failure(const verdict& v) {
    return "cannot allocate the model and optimizer state: rank " + std::to_string(v.first_bad) + ": " + v.what;
  }

  // Trains from step 0 or the --resume set to --steps (or --stop-at), reporting every step.
  run_result run() {
    if (!opt_.resume.empty()) resume();
    const int end = opt_.stop_at >= 0 && opt_.stop_at < cfg_.steps ? opt_.stop_at : cfg_.steps;
    if (!opt_.dump_tensors.empty()) prepare_dump(end);
    const bool root = world_rank_ == 0;
    if (root && !opt_.quiet) banner();
    metrics_log log;
    agreed([&] { if (root && !opt_.metrics.empty()) log.open(opt_.metrics, step_ > 0); }, 2, "cannot open --metrics: ");
    const double tokens_per_step = static_cast<double>(cfg_.batch) * cfg_.block;
    run_totals totals;
    run_result result;
    if (opt_.kernel_times) model_.ops().time_kernels();
    auto* clock = model_.ops().kernel_clock();  // --kernel-times; else null
    const std::int64_t first_step = step_;      // its kernel times are the warm-up's: not counted
    int timed_steps = 0;
    double timed_ms = 0;
    for (; step_ < end; ++step_) {
      const std::int64_t step = step_;
      if (clock) clock->collect(false);  // what ran since the last step (evaluation, a save) is not a step's
      start_step(step);
      const bool dump_step = dump_ && dump_->step() == step;
      dumping_ = dump_step ? dump_.get() : nullptr;  // the taps record this step's tensors
      const double t0 = MPI_Wtime();
      const float lr = lr_at(cfg_, static_cast<int>(step));
      const double loss = step_or_fail(step, lr);
      dumping_ = nullptr;
      step_metrics m = measure(step, loss, lr, (MPI_Wtime() - t0) * 1e3);
      if (clock) {
        clock->collect(step > first_step);
        if (step > first_step) ++timed_steps, timed_ms += m.ms;
      }
      if (eval_due(step)) std::tie(m.val_loss, m.val_acc) = evaluate(step);
      result.losses[step] = loss;
      if (root && !opt_.quiet) print_step(m);
      if (root) log.write(m);
      if (dump_step) write_dump(step);
      totals.add(m, tokens_per_step);
      if (opt_.save_every > 0 && (step + 1) % opt_.save_every == 0 && !opt_.save.empty()) save(step + 1);
    }
    log.close();
    if (!opt_.save.empty()) save(step_);
    auto w = dog_.watch("the end of the run (sampling, tied-copy check)", step_);
    if (root && !opt_.quiet && totals.seconds > 0)
      print_summary(totals, tied_bytes_ > 0, flops_of(sp_.total_flops()), opt_.sparsity.method, sp_.density(),
                    mfu(totals.flops, totals.seconds, opt_.peak_tflops, ranks()));
    if (root && clock)
      print_kernel_times(clock->totals(), std::remove_pointer_t<decltype(clock)>::source, timed_steps, timed_ms,
                         "rank 0 of " + std::to_string(ranks()) +
                             (grid_.pp_size() > 1 ? " (the first pipeline stage)" : ""));
    if (step_ == cfg_.steps && opt_.sample > 0 && !cfg_.is_bert()) sample_text();  // BERT does not generate
    const int tied_rc = check_tied_copies();
    const int sparse_rc = sp_.failures() > 0 ? 1 : 0;  // sparsity invariants (sparsity.hpp), printed where they failed
    result.rc = std::max(tied_rc, sparse_rc);
    return result;
  }

 private:
  // ---- one optimizer step ------------------------------------------------------------------
  // train_step, with an error of this rank alone (memory running out inside the step, a
  // device failure) named by its step: train_gpt.cpp prints it and ends the job, which
  // leaves the last complete checkpoint set as it was.
  double step_or_fail(std::int64_t step, float lr) {
    try {
      return train_step(step, lr);
    } catch (const stopped&) {
      throw;  // agreed by every rank: its own message
    } catch (const std::bad_alloc&) {
      throw std::runtime_error("step " + std::to_string(step + 1) + ": out of memory (std::bad_alloc)");
    } catch (const std::exception& e) {
      throw std::runtime_error("step " + std::to_string(step + 1) + ": " + e.what());
    }
  }
  // Returns the mean token loss of the global batch (NaN or Inf: the update was skipped).
  double train_step(std::int64_t step, float lr) {
    next_batch(step);
    model_.zero_grads();
    sp_.begin_step(step);
    const double loss_sum = forward_backward(step);  // ends with the gradients summed over DP
    if (faults::alloc_step().at(world_rank_, step + 1)) throw std::bad_alloc();  // (tests: OOM mid-step)
    sync_tied_embedding(step);  // after DP: both copies then add the same two (possibly lossily reduced) terms
    if (zero_) zero_->collect(model_);  // --zero 1: the replicated ranges' sums beside this replica's block
    double loss = 0, norm = 0;
    {
      auto w = dog_.watch("MPI_Allreduce (loss, gradient norm)", step);
      loss = global_loss(loss_sum);
      norm = global_grad_norm();
    }
    if (update_allowed(step, loss, norm)) {
      clip_grad_norm(norm);
      if (zero_) {
        zero_->step(model_, lr, static_cast<int>(step) + 1);
        auto w = dog_.watch("the ZeRO weight all-gather", step);
        gather_weights();
      } else {
        adam_.step(model_, lr, static_cast<int>(step) + 1);
      }
    }
    {
      auto w = dog_.watch("the sparsity update (topology, checks)", step);
      sp_.end_step(step);  // FLOPs of this step; topology update on update steps
    }
    cursor_ += static_cast<std::uint64_t>(cfg_.batch) * cfg_.block;
    return loss;
  }

  // This DP rank's sequences [d*B/D, (d+1)*B/D) of the global batch at the data cursor, cut
  // into micro-batches. BERT: every rank masks the whole global batch (a few bytes per
  // position) to know the number of predicted positions, the loss's denominator.
  void next_batch(std::int64_t step) {
    const int M = model_.n_micro(), S = model_.micro(), T = cfg_.block;
    const int per_dp = cfg_.batch / grid_.dp_size();
    if (cfg_.is_bert()) {
      std::vector<int> tok(static_cast<std::size_t>(T)), tgt(tok.size());
      const int mine = grid_.dp_rank() * per_dp;
      double predicted = 0;
      for (int g = 0; g < cfg_.batch; ++g) {
        predicted += mlm_.train_sequence(cursor_, g, tok.data(), tgt.data());
        if (g < mine || g >= mine + per_dp) continue;
        const int mb = (g - mine) / S, s = (g - mine) % S;
        std::copy(tok.begin(), tok.end(), tokens_[mb].begin() + s * T);
        std::copy(tgt.begin(), tgt.end(), targets_[mb].begin() + s * T);
      }
      if (predicted == 0)  // every rank masked the same global batch: all stop here
        throw stopped{4, "step " + std::to_string(step + 1) +
                             ": the global batch has no byte to mask (its windows are whitespace only)"};
      loss_count_ = predicted;
      return;
    }
    for (int mb = 0; mb < M; ++mb)
      for (int s = 0; s < S; ++s) {
        const int g = grid_.dp_rank() * per_dp + mb * S + s;
        data_.train_sequence(cursor_, g, T, tokens_[mb].data() + s * T, targets_[mb].data() + s * T);
      }
    loss_count_ = static_cast<double>(cfg_.batch) * cfg_.block;
  }
  // 1 / (the global batch's predicted positions): GPT every token, BERT the masked ones.
  float loss_scale() const {
    if (cfg_.is_bert()) return 1.f / static_cast<float>(loss_count_);
    return 1.f / (static_cast<float>(cfg_.batch) * static_cast<float>(cfg_.block));
  }

  // Forward and backward of every micro-batch (1F1B), then the DP reduction of the gradient
  // buckets (overlap.hpp), waited for before returning: with --overlap on the last
  // micro-batch's backward has started most of them already. Returns this rank's sum of
  // token losses (the last stage's; 0 elsewhere).
  double forward_backward(std::int64_t step) {
    double loss_sum = 0;
    {
      auto w = dog_.watch("the 1F1B pipeline (PP send/recv, TP collectives)", step);
      const double t0 = MPI_Wtime();
      loss_sum = pipeline_1f1b();
      phase_ms_[0] = (MPI_Wtime() - t0) * 1e3;
    }
    const double t1 = MPI_Wtime();
    if (faults::nan_grad().at(world_rank_, step + 1)) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      model_.ops().upload(model_.grads.data(), &nan, 1);
    }
    auto w = dog_.watch(zero_ && overlap_ ? "the DP gradient reduce-scatter (--zero 1, overlapped buckets)"
                        : zero_           ? "the DP gradient reduce-scatter (--zero 1)"
                        : overlap_        ? "the DP gradient allreduce (overlapped buckets)"
                                          : "the DP gradient allreduce",
                        step);
    if (!bucketed_) {
      const std::span<float> all(model_.grads.data(), model_.grads.size());
      to_wire(all);
      if (dumping_) dumping_->record_grad(0, all);
      dp_after_compute();
      dp_.reduce({all, sp_.packed_grads(), sp_.growth_grads()});
      compute_after_dp();
      phase_ms_[1] = (MPI_Wtime() - t1) * 1e3;
      return loss_sum;
    }
    reduce_final_from(0);  // the buckets backward did not start (all of them without --overlap)
    if (worker_) worker_->flush();
    compute_after_dp();
    next_bucket_ = 0;
    phase_ms_[1] = (MPI_Wtime() - t1) * 1e3;
    return loss_sum;
  }
  // Device bundles, whose DP communicator may run on its own executor (a communication
  // stream, --overlap on): DP starts a bucket after the compute that wrote it, and compute
  // reads the sums only after DP (events; ordered already on one stream and on the host).
  void dp_after_compute() {
    if constexpr (device_comm) comm_.dp().executor().wait(model_.ops().ex.record());
  }
  void compute_after_dp() {
    if constexpr (device_comm) model_.ops().ex.wait(comm_.dp().executor().record());
  }
  // --zero 1: every replica's updated blocks into the model's weights (exact), bucket by
  // bucket, and the replicated ranges' new weights.
  void gather_weights() {
    dp_after_compute();
    for (const auto& b : zero_->buckets()) {
      if (b.m == 0) continue;
      const std::span<const float> mine = zero_->block_weights(b);
      const std::span<float> all = zero_->sharded(model_.params, b);
      bool done = false;
      if constexpr (sums_bf16<dp_comm_t>) {
        if (wire_dp_) {  // the weights are bf16 roundings: exact in 16 bits
          const auto w = wire_dp_->pack(mine.data(), mine.size(), 1);
          const auto out = wire_dp_->area(all.size(), 2);
          comm_.dp().allgather_exact(comm_buffer<dp_comm_t>(std::span<const hcomm::bf16>(w)),
                                     comm_buffer<dp_comm_t>(out));
          wire_dp_->unpack(out, all.data());
          done = true;
        }
      }
      if (!done) comm_.dp().allgather_exact(comm_buffer<dp_comm_t>(mine), comm_buffer<dp_comm_t>(all));
    }
    compute_after_dp();
    zero_->spread(model_);
  }
  // --zero 1: a bucket's sharded range reduce-scattered into this replica's block (bf16
  // copies with a wire).
  void reduce_scatter_block(const typename zero_shard<Ops>::bucket& bk) {
    const std::span<float> in = zero_->sharded(model_.grads, bk);
    const std::span<float> out = zero_->block_grads(bk);
    if constexpr (sums_bf16<dp_comm_t>) {
      if (wire_dp_) {
        const auto w = wire_dp_->pack(in.data(), in.size(), 1);
        const auto b = wire_dp_->area(out.size(), 2);
        comm_.dp().reduce_scatter(comm_buffer<dp_comm_t>(std::span<const hcomm::bf16>(w)), comm_buffer<dp_comm_t>(b));
        wire_dp_->unpack(b, out.data());
        return;
      }
    }
    comm_.dp().reduce_scatter(comm_buffer<dp_comm_t>(std::span<const float>(in)), comm_buffer<dp_comm_t>(out));
  }
  // --precision bf16: the gradients (accumulated in fp32 over the micro-batches) go to the DP
  // reduction as their bfloat16 rounding.
  void to_wire(std::span<float> g) const {
    if (cfg_.bf16) model_.ops().round_bf16(g.data(), static_cast<std::int64_t>(g.size()));
  }
  // Bucket k's DP reduction (g: its gradients): the all-reduce, or with --zero 1 the
  // reduce-scatter of its sharded range into this replica's block and the all-reduce of its
  // rest (zero.hpp). Uncompressed DP (native_) calls MPI's non-blocking collectives and waits
  // for them, on the communication thread (`yield`) yielding the core between tests (a
  // blocking wait would spin on a core the ranks' compute needs; a sleep would add its
  // length to every message's latency).
  void reduce_bucket_now(std::size_t k, std::span<float> g, bool yield) {
    if (native_) {
      if (!zero_) {
        native_call(MPI_Iallreduce, yield, MPI_IN_PLACE, g.data(), static_cast<int>(g.size()));
        return;
      }
      const auto& b = zero_->buckets()[k];
      if (b.m > 0) {
        const std::span<float> in = zero_->sharded(model_.grads, b), out = zero_->block_grads(b);
        native_call(MPI_Ireduce_scatter_block, yield, in.data(), out.data(), static_cast<int>(out.size()));
      }
      if (const std::span<float> r = zero_->rest(model_.grads, b); !r.empty())
        native_call(MPI_Iallreduce, yield, MPI_IN_PLACE, r.data(), static_cast<int>(r.size()));
      return;
    }
    if (!zero_) {
      dp_.reduce_bucket(g);
      return;
    }
    const auto& b = zero_->buckets()[k];
    if (b.m > 0) reduce_scatter_block(b);
    if (const std::span<float> r = zero_->rest(model_.grads, b); !r.empty()) dp_.reduce_bucket(r);
  }
  // An MPI_Iallreduce or MPI_Ireduce_scatter_block of floats summed over the DP group, waited for.
  template <class Start>
  void native_call(Start start, bool yield, const void* in, float* out, int count) {
    MPI_Request r = MPI_REQUEST_NULL;
    if (start(in, out, count, MPI_FLOAT, MPI_SUM, grid_.comm(hcomm::axis_id::dp), &r) != MPI_SUCCESS ||
        (yield ? hcomm::mpi::wait(&r, MPI_STATUS_IGNORE, hcomm::mpi::yield_between_tests)
               : MPI_Wait(&r, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
      hcomm::fail(hcomm::errc::mpi_failure, "MPI's reduction of a DP gradient bucket failed");
  }
  // Bytes a native bucket sends per rank (ring estimates): 2(D-1)/D of an all-reduce's,
  // (D-1)/D of a reduce-scatter's.
  double native_bytes_of(std::size_t k, std::span<const float> g) const {
    const double D = grid_.dp_size(), f = (D - 1) / D;
    if (!zero_) return static_cast<double>(g.size_bytes()) * 2 * f;
    const auto& b = zero_->buckets()[k];
    const double rest = static_cast<double>(b.end - b.begin - grid_.dp_size() * b.m);
    return (static_cast<double>(grid_.dp_size() * b.m) * f + rest * 2 * f) * sizeof(float);
  }
  // Starts the DP reduction of the buckets not started yet whose gradients are all final
  // (offsets >= off), in backward order: on the communication thread with --overlap on
  // (called from backward too), else here. Buckets at offset 0 start only from
  // forward_backward, after the NaN fault (GPT_FAULT_NAN) had its chance.
  void reduce_final_from(std::int64_t off) {
    for (; next_bucket_ < buckets_.size() && buckets_[next_bucket_].begin >= off; ++next_bucket_) {
      const std::size_t k = next_bucket_;
      const bucket_range b = buckets_[k];
      std::span<float> g(model_.grads.data() + b.begin, static_cast<std::size_t>(b.end - b.begin));
      to_wire(g);
      if (dumping_) dumping_->record_grad(b.begin, g);
      if (native_) {  // overlapped: the communication thread starts it and tests it until done
        if (grid_.dp_size() == 1 && !zero_) continue;
        native_bytes_ += native_bytes_of(k, g);
        if (worker_) worker_->submit([this, k, g] { reduce_bucket_now(k, g, true); });
        else reduce_bucket_now(k, g, false);
      } else if (worker_) {
        if constexpr (device_comm) {  // the communication stream starts where compute wrote the bucket
          const auto written = model_.ops().ex.record();
          worker_->submit([this, k, g, written] {
            comm_.dp().executor().wait(written);
            reduce_bucket_now(k, g, false);
          });
        } else {
          worker_->submit([this, k, g] { reduce_bucket_now(k, g, false); });
        }
      } else {
        dp_after_compute();
        reduce_bucket_now(k, g, false);
      }
    }
  }

  // The sum of token losses from the last stage's tp-rank-0 of every DP replica, over the
  // predicted positions (GPT: B*T).
  double global_loss(double loss_sum) const {
    double loss = (model_.is_last() && grid_.tp_rank() == 0) ? loss_sum : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return loss / loss_count_;
  }
  // Every DP replica holds the same summed gradients: count one.
  // (--zero 1: each replica counts its block, replica 0 the replicated ranges.)
  double global_grad_norm() const {
    double sq = zero_ ? zero_->grad_sq(model_, grid_.dp_rank() == 0)
                : grid_.dp_rank() == 0 ? model_.local_grad_sq() : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, &sq, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return std::sqrt(sq);
  }
  // A NaN or Inf loss or norm stops the run, or with --skip-nonfinite skips the update. Both
  // are all-reduced, so every rank takes the same branch.
  bool update_allowed(std::int64_t step, double loss, double norm) {
    if (std::isfinite(loss) && std::isfinite(norm)) return true;
    if (!opt_.skip_nonfinite)
      throw stopped{4, "step " + std::to_string(step + 1) + ": " + (std::isfinite(loss) ? "gradient norm" : "loss") +
                           " is " + std::to_string(std::isfinite(loss) ? norm : loss) +
                           " (non-finite); stopping (--skip-nonfinite skips such updates)"};
    if (world_rank_ == 0)
      std::fprintf(stderr, "train_gpt: step %lld: loss %g, gradient norm %g (non-finite): update skipped\n",
                   static_cast<long long>(step + 1), loss, norm);
    ++skipped_;
    return false;
  }
  void clip_grad_norm(double norm) {
    if (cfg_.grad_clip <= 0 || norm <= cfg_.grad_clip) return;
    const auto f = static_cast<float>(cfg_.grad_clip / (norm + 1e-6));
    if (zero_) zero_->scale(f);
    else model_.scale_grads(f);
  }

  // 1F1B over M micro-batches: warm-up of (stages after this one) forwards, then one forward
  // one backward, then the remaining backwards. Blocking send/recv pairs are ordered so that
  // on every stage boundary both sides see the same sequence of messages (the lower stage
  // sends before it receives, the upper one receives before it sends): no deadlock even
  // when sends wait for their receivers.
  //
  // With --overlap on the sends are non-blocking: an activation's isend completes at the end
  // of the pipeline (its buffer is the micro-batch's own), a gradient's before the shared
  // dres() buffer is written again (the next recv_backward or backward); the steady phase's
  // next activation is received (irecv) while the backward runs. The messages and their
  // order are the same, so are the numbers.
  double pipeline_1f1b() {
    const int M = model_.n_micro(), P = grid_.pp_size(), s = grid_.pp_rank();
    const bool nb = overlap_;
    const int warm = std::min(P - s - 1, M), steady = M - warm;
    const float scale = loss_scale();
    double loss = 0;
    // The TP communicator of each micro-batch records its all-reduce inputs at the dump step.
    auto F = [&](int mb) {
      tp_tap tp{comm_.tp(), tp_dump(dump_kind::tp_partial_fwd, mb), wire_tp_.get()};
      loss += model_.forward(mb, tokens_[mb].data(), targets_[mb].data(), tp, scale, true);
    };
    // --overlap on: the last micro-batch's backward hands finished buckets to the DP thread.
    auto B = [&](int mb) {
      tp_tap tp{comm_.tp(), tp_dump(dump_kind::tp_partial_bwd, mb), wire_tp_.get()};
      if (overlap_ && mb == M - 1)
        model_.backward(mb, tokens_[mb].data(), tp, [this](std::int64_t off) { reduce_final_from(off); });
      else
        model_.backward(mb, tokens_[mb].data(), tp);
    };
    if (!nb) {
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
    fwd_sends_.resize(static_cast<std::size_t>(M));
    auto isend_fwd = [&](int mb) {
      if (!model_.is_last()) fwd_sends_[mb] = pp_isend(sent_forward(mb), grid_.next_stage(), 2 * mb, pp_slot_fwd + mb);
    };
    auto isend_bwd = [&](int mb) {
      if (!model_.is_first()) bwd_send_ = pp_isend(sent_backward(mb), grid_.prev_stage(), 2 * mb + 1, pp_slot_bwd);
    };
    auto recv_bwd = [&](int mb) {
      bwd_send_.wait();  // dres() is about to be written
      recv_backward(mb);
    };
    auto Bnb = [&](int mb) {
      bwd_send_.wait();
      B(mb);
    };
    for (int i = 0; i < warm; ++i) {
      recv_forward(i);
      F(i);
      isend_fwd(i);
    }
    if (steady > 0) recv_forward(warm);
    for (int i = 0; i < steady; ++i) {
      F(warm + i);
      isend_fwd(warm + i);
      recv_bwd(i);
      pp_request next;
      const bool receiving = i + 1 < steady && !model_.is_first();
      if (receiving) next = pp_irecv(model_.input(warm + i + 1), grid_.prev_stage(), 2 * (warm + i + 1));
      Bnb(i);
      next.wait();
      if (receiving) pp_irecv_done(model_.input(warm + i + 1));
      isend_bwd(i);
    }
    for (int i = steady; i < M; ++i) {
      recv_bwd(i);
      Bnb(i);
      isend_bwd(i);
    }
    bwd_send_.wait();
    for (auto& r : fwd_sends_) r.wait();
    return loss;
  }
  std::span<float> act_span(float* p) { return {p, static_cast<std::size_t>(model_.act_numel())}; }
  template <class T>
  static auto pp_buffer(std::span<T> s) { return comm_buffer<pp_comm_t>(s); }
  void recv_forward(int mb) {
    if (!model_.is_first()) pp_recv(model_.input(mb), grid_.prev_stage(), 2 * mb);
  }
  void send_forward(int mb) {
    if (!model_.is_last()) pp_send(sent_forward(mb), grid_.next_stage(), 2 * mb);
  }
  void recv_backward(int mb) {
    if (!model_.is_last()) pp_recv(model_.dres(), grid_.next_stage(), 2 * mb + 1);
  }
  void send_backward(int mb) {
    if (!model_.is_first()) pp_send(sent_backward(mb), grid_.prev_stage(), 2 * mb + 1);
  }
  // One activation (or its gradient) between stages: act_numel floats, or with a wire
  // (--precision bf16) their bfloat16 copies in a staging area: area 0 for the blocking calls,
  // pp_slot_next for the steady phase's receive, pp_slot_bwd for the outstanding gradient
  // send, pp_slot_fwd + mb for micro-batch mb's outstanding activation send.
  static constexpr std::size_t pp_slot_next = 1, pp_slot_bwd = 2, pp_slot_fwd = 3;
  void pp_recv(float* p, int peer, int tag) {
    if constexpr (sends_bf16<pp_comm_t>) {
      if (wire_pp_) {
        const auto w = wire_pp_->area(static_cast<std::size_t>(model_.act_numel()));
        comm_.pp().recv(pp_buffer(w), peer, tag);
        wire_pp_->unpack(w, p);
        return;
      }
    }
    comm_.pp().recv(pp_buffer(act_span(p)), peer, tag);
  }
  void pp_send(std::span<const float> x, int peer, int tag) {
    if constexpr (sends_bf16<pp_comm_t>) {
      if (wire_pp_) {
        comm_.pp().send(pp_buffer(std::span<const hcomm::bf16>(wire_pp_->pack(x.data(), x.size()))), peer, tag);
        return;
      }
    }
    comm_.pp().send(pp_buffer(x), peer, tag);
  }
  pp_request pp_isend(std::span<const float> x, int peer, int tag, std::size_t slot) {
    if constexpr (sends_bf16<pp_comm_t>) {
      if (wire_pp_)
        return comm_.pp().isend(pp_buffer(std::span<const hcomm::bf16>(wire_pp_->pack(x.data(), x.size(), slot))), peer, tag);
    }
    return comm_.pp().isend(pp_buffer(x), peer, tag);
  }
  // A receive into p that completes later; pp_irecv_done(p) after its wait.
  pp_request pp_irecv(float* p, int peer, int tag) {
    if constexpr (sends_bf16<pp_comm_t>) {
      if (wire_pp_)
        return comm_.pp().irecv(pp_buffer(wire_pp_->area(static_cast<std::size_t>(model_.act_numel()), pp_slot_next)),
                                peer, tag);
    }
    return comm_.pp().irecv(pp_buffer(act_span(p)), peer, tag);
  }
  void pp_irecv_done(float* p) {
    if (wire_pp_) wire_pp_->unpack(wire_pp_->area(static_cast<std::size_t>(model_.act_numel()), pp_slot_next), p);
  }
  // What a stage sends: micro-batch mb's output forward, the gradient of its input backward
  // (in dres() after backward); recorded at the dump step.
  std::span<const float> sent_forward(int mb) {
    const std::span<const float> a(model_.output(mb), static_cast<std::size_t>(model_.act_numel()));
    if (dumping_) dumping_->record(dump_kind::pp_act_fwd, mb, a);
    return a;
  }
  std::span<const float> sent_backward(int mb) {
    const std::span<const float> d(model_.dres(), static_cast<std::size_t>(model_.act_numel()));
    if (dumping_) dumping_->record(dump_kind::pp_grad_bwd, mb, d);
    return d;
  }
  // Where micro-batch mb's TP all-reduce inputs are recorded: null but at the dump step.
  std::vector<float>* tp_dump(dump_kind k, int mb) { return dumping_ ? dumping_->tp_buffer(k, mb) : nullptr; }

  // ---- --dump-tensors (dump.hpp) ------------------------------------------------------------
  // Before training (after --resume): the step, one of this run's (--dump-step 0: its
  // first), and DIR, usable (agreed); else every rank stops with exit 2.
  void prepare_dump(std::int64_t end) {
    const std::int64_t s = opt_.dump_step > 0 ? opt_.dump_step - 1 : step_;
    if (s < step_ || s >= end)
      throw stopped{2, "--dump-step " + std::to_string(s + 1) + " is not among the steps this run trains (" +
                           std::to_string(step_ + 1) + ".." + std::to_string(end) + ")"};
    dump_ = std::make_unique<tensor_dump>(opt_.dump_tensors, s, grid_, model_.grads.size());
    dump_->prepare();
  }
  // After the dump step: every rank's files, then rank 0's manifest (collective; exit 2 on failure).
  void write_dump(std::int64_t step) {
    {
      auto w = dog_.watch("writing --dump-tensors", step);
      dump_->write();
    }
    if (world_rank_ == 0 && !opt_.quiet)
      std::printf("dumped step %lld's communicated tensors to %s (%s)\n", static_cast<long long>(step + 1),
                  dump_->dir().c_str(), tensor_dump::manifest_name);
  }

  // GPT-2 ties wte to the lm head. With several stages the first and the last stage each
  // hold a copy; both add the two stages' gradients (a + b == b + a, bitwise), after the DP
  // allreduce, so the copies stay equal whatever DP compression did. The exchange uses
  // plain MPI, not the pipeline communicator: through a lossy codec each side would add a
  // differently decoded term and the copies would drift apart (Megatron, too, reduces the
  // embedding in its own group rather than on the activation channel).
  void sync_tied_embedding(std::int64_t step) {
    if (!cfg_.tied() || grid_.pp_size() == 1) return;
    if (!model_.is_first() && !model_.is_last()) return;
    auto w = dog_.watch("the tied-embedding exchange (MPI_Sendrecv)", step);
    const local_tensor* t = nullptr;
    for (const auto& x : model_.tensors())
      if (x.global == 0) t = &x;
    const int n = static_cast<int>(t->numel);
    float* mine = on_host(model_.grads.data() + t->offset, n, tied_mine_);
    tied_buf_.resize(static_cast<std::size_t>(n));
    const int peer = grid_.world_rank_of(grid_.dp_rank(), model_.is_first() ? grid_.pp_size() - 1 : 0, grid_.tp_rank());
    constexpr int tag = 30000;  // above any micro-batch tag, below the MPI minimum tag bound 32767
    MPI_Sendrecv(mine, n, MPI_FLOAT, peer, tag, tied_buf_.data(), n, MPI_FLOAT, peer, tag, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 0; i < n; ++i) mine[i] += tied_buf_[static_cast<std::size_t>(i)];
    if constexpr (!Ops::host_memory) model_.ops().upload(model_.grads.data() + t->offset, mine, tied_mine_.size());
    tied_bytes_ += static_cast<double>(n) * sizeof(float);
  }
  // n values of the model's memory at p where the host reads them: p itself (host memory),
  // else their copy in `copy`.
  float* on_host(float* p, int n, std::vector<float>& copy) const {
    if constexpr (Ops::host_memory) return p;
    copy.resize(static_cast<std::size_t>(n));
    model_.ops().download(copy.data(), p, copy.size());
    return copy.data();
  }

  // The first and last stage's copies of the tied embedding must still be bitwise equal
  // (checked with plain MPI: the check must not go through a lossy codec). Returns 1 if not.
  int check_tied_copies() {
    if (!cfg_.tied() || grid_.pp_size() == 1) return 0;
    int bad = 0;
    if (model_.is_first() || model_.is_last()) {
      const local_tensor* t = nullptr;
      for (const auto& x : model_.tensors())
        if (x.global == 0) t = &x;
      const int n = static_cast<int>(t->numel);
      const float* mine = on_host(model_.params.data() + t->offset, n, tied_mine_);
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

  // ---- evaluation and sampling ------------------------------------------------------------
  // Validation loss per predicted token and, for BERT, the masked-token accuracy (-1 for GPT).
  std::pair<double, double> evaluate(std::int64_t step) {
    auto w = dog_.watch("evaluation (pipeline forward, MPI_Allreduce)", step);
    const int M = model_.n_micro(), S = model_.micro(), T = cfg_.block;
    const int per_dp = cfg_.batch / grid_.dp_size();
    double sum = 0, predicted = 0, correct = 0;
    std::vector<int> tok(static_cast<std::size_t>(T)), tgt(tok.size());
    for (int v = 0; v < cfg_.eval_batches; ++v) {
      if (cfg_.is_bert())  // the predicted positions of the whole batch, as in next_batch()
        for (int g = 0; g < cfg_.batch; ++g) predicted += mlm_.val_sequence(v, cfg_.batch, g, tok.data(), tgt.data());
      for (int mb = 0; mb < M; ++mb) {
        for (int s = 0; s < S; ++s) {
          const int g = grid_.dp_rank() * per_dp + mb * S + s;
          if (cfg_.is_bert())
            mlm_.val_sequence(v, cfg_.batch, g, tokens_[mb].data() + s * T, targets_[mb].data() + s * T);
          else
            data_.val_sequence(v, cfg_.batch, g, T, tokens_[mb].data() + s * T, targets_[mb].data() + s * T);
        }
        recv_forward(mb);
        tp_tap tp{comm_.tp(), nullptr, wire_tp_.get()};
        sum += model_.forward(mb, tokens_[mb].data(), targets_[mb].data(), tp, 0.f, false);
        correct += static_cast<double>(model_.correct());
        send_forward(mb);
      }
    }
    const bool counts = model_.is_last() && grid_.tp_rank() == 0;
    double loss_hits[2] = {counts ? sum : 0.0, counts ? correct : 0.0};
    MPI_Allreduce(MPI_IN_PLACE, loss_hits, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (cfg_.is_bert()) return {loss_hits[0] / predicted, loss_hits[1] / predicted};
    return {loss_hits[0] / (static_cast<double>(cfg_.eval_batches) * cfg_.batch * T), -1.0};
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
      tp_tap tp{comm_.tp(), nullptr, wire_tp_.get()};
      model_.forward(0, tok.data(), targets_[0].data(), tp, 0.f, false);
      send_forward(0);
      int next = 0;
      if (model_.is_last()) {
        const float* z = model_.logits() + static_cast<std::size_t>(len - 1) * model_.local_vocab();
        std::copy(z, z + model_.local_vocab(), part.begin());
        // host vectors: plain MPI on the TP group (exact, as the bundle's exact gather)
        if (grid_.tp_size() > 1)
          MPI_Allgather(part.data(), static_cast<int>(part.size()), MPI_FLOAT, row.data(), static_cast<int>(part.size()),
                        MPI_FLOAT, grid_.comm(hcomm::axis_id::tp));
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

  // ---- the bookkeeping of a step -----------------------------------------------------------
  // Byte counts start from zero; GPT_FAULT_HANG (faults.hpp) stops this rank here, as a stuck
  // peer would; the barrier times the step, not the previous step's stragglers.
  void start_step(std::int64_t step) {
    comm_.dp().reset_stats();
    native_bytes_ = 0;
    comm_.pp().reset_stats();
    comm_.tp().reset_stats();
    if (faults::hang().at(world_rank_, step + 1))
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
    auto w = dog_.watch("MPI_Barrier (start of the step)", step);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // The step's report: bytes per axis and sparse-DP savings summed over all ranks (each rank
  // counts what it sent), the sparsity state after the step.
  step_metrics measure(std::int64_t step, double loss, float lr, double ms) {
    step_metrics m;
    m.step = step + 1;
    m.steps = cfg_.steps;
    m.loss = loss;
    m.lr = lr;
    m.ms = ms;
    m.tokens_per_s = static_cast<double>(cfg_.batch) * cfg_.block / (ms / 1e3);
    m.dp_sparse_saved = dp_.saved_bytes();
    {
      auto w = dog_.watch("MPI_Allreduce (byte counts)", step);
      double v[7];
      const auto d = comm_.dp().stats(), p = comm_.pp().stats(), t = comm_.tp().stats();
      v[0] = static_cast<double>(d.raw_bytes) + native_bytes_; v[1] = static_cast<double>(d.wire_bytes) + native_bytes_;
      v[2] = static_cast<double>(p.raw_bytes); v[3] = static_cast<double>(p.wire_bytes);
      v[4] = static_cast<double>(t.raw_bytes); v[5] = static_cast<double>(t.wire_bytes);
      v[6] = m.dp_sparse_saved;
      MPI_Allreduce(MPI_IN_PLACE, v, 7, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      m.comm = {axis_bytes{v[0], v[1]}, axis_bytes{v[2], v[3]}, axis_bytes{v[4], v[5]}};
      m.dp_sparse_saved = v[6];
      // the slowest rank's: the two phases, then each axis' codec time (dp, pp, tp)
      double slowest[5] = {phase_ms_[0], phase_ms_[1], d.compress_seconds * 1e3, p.compress_seconds * 1e3,
                           t.compress_seconds * 1e3};
      MPI_Allreduce(MPI_IN_PLACE, slowest, 5, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      m.pipeline_ms = slowest[0];
      m.dp_wait_ms = slowest[1];
      for (int a = 0; a < 3; ++a) m.comm[a].codec_ms = slowest[2 + a];
    }
    m.sparse = sp_.active();
    m.flops = flops_of(sp_.total_flops());
    m.flops_step = flops_of(sp_.step_flops());
    m.mfu = mfu(m.flops_step.actual, ms / 1e3, opt_.peak_tflops, ranks());
    m.density = sp_.density();
    m.target_density = sp_.target_density(step);
    m.attention_density = sp_.attention_density(step);
    m.phase = sp_.phase(step);
    m.topology_updated = sp_.updated();
    m.mask_checksum = sp_.checksum();
    return m;
  }
  bool eval_due(std::int64_t step) const {
    return (cfg_.eval_every > 0 && (step + 1) % cfg_.eval_every == 0) || step + 1 == cfg_.steps;
  }
  static flop_totals flops_of(const msparse::step_flops& f) { return {f.dense.total(), f.actual.total()}; }
  int ranks() const { return grid_.dp_size() * grid_.pp_size() * grid_.tp_size(); }
  double n_params() const {
    double n = 0;
    for (const auto& s : model_.specs()) n += static_cast<double>(s.numel());
    return n;
  }
  std::string arch_label() const {
    if (!cfg_.is_bert()) return to_string(cfg_.arch);
    char b[96];
    std::snprintf(b, sizeof b, "bert (%s, %s MLM at %g)", cfg_.post_ln ? "post-LN" : "pre-LN",
                  cfg_.mask_words ? "whole-word" : "byte-level", cfg_.mask_rate);
    return b;
  }
  void banner() const {
    std::printf("train_gpt: arch %s, %d layers, C %d, %d heads, T %d, %.3fM params | batch %d = dp %d x %d micro-batches x %d | grid dp %d pp %d tp %d | scheme %s\n",
                arch_label().c_str(), cfg_.layers, cfg_.channels, cfg_.heads, cfg_.block, n_params() / 1e6,
                cfg_.batch, grid_.dp_size(), model_.n_micro(), model_.micro(), grid_.dp_size(), grid_.pp_size(),
                grid_.tp_size(), opt_.scheme.c_str());
    if (sp_.active()) std::printf("%s\n", sp_.describe().c_str());
    if (cfg_.bf16)
      std::printf("precision bf16: weights, activations and DP gradients rounded to bfloat16; fp32 master weights, "
                  "AdamW state and accumulation; %s\n",
                  wire_label().c_str());
    if (zero_)
      std::printf("zero 1: AdamW's moments and master weights sharded over %d DP replicas, %lld of %zu values on "
                  "this replica; gradients reduce-scattered (scheme %s), weights all-gathered exactly\n",
                  grid_.dp_size(), static_cast<long long>(zero_->local_size()), model_.params.size(), opt_.scheme.c_str());
    if (buckets_.size() > 1 || overlap_)
      std::printf("dp gradient: %zu buckets (--bucket-mb %g)%s, overlap %s\n", buckets_.size(), opt_.bucket_mb,
                  !native_ ? "" : zero_ ? " by MPI_Ireduce_scatter_block" : " by MPI_Iallreduce",
                  !overlap_ ? "off" : worker_ ? "on (communication thread)" : "on (tested during backward)");
    if (step_ > 0) std::printf("resumed at step %lld\n", static_cast<long long>(step_));
    std::fflush(stdout);
  }

  // Every staging area the wires will use, at its largest: TP's all-reduces and PP's messages
  // are activations (act_numel values); DP's buckets, or ZeRO's sharded range, block and
  // replicated ranges.
  void reserve_wires(bool overlap) {
    if (faults::alloc_wire().at(world_rank_, -1)) throw std::bad_alloc();
    const auto act = static_cast<std::size_t>(model_.act_numel());
    if (wire_tp_) wire_tp_->area(act);
    if (wire_pp_) {
      wire_pp_->area(act);
      if (overlap)
        for (std::size_t slot = pp_slot_next; slot < pp_slot_fwd + static_cast<std::size_t>(model_.n_micro()); ++slot)
          wire_pp_->area(act, slot);
    }
    if (!wire_dp_) return;
    std::size_t bucket = 0;
    if (zero_) {
      for (const auto& r : zero_->replicated()) bucket = std::max(bucket, static_cast<std::size_t>(r.len));
      wire_dp_->area(zero_->max_sharded(), 1);
      wire_dp_->area(zero_->max_sharded(), 2);
    } else {
      for (const auto& b : buckets_) bucket = std::max(bucket, static_cast<std::size_t>(b.end - b.begin));
    }
    wire_dp_->area(bucket);
  }
  // --precision bf16: what each axis carries, and why float32 where it does.
  std::string wire_label() const {
    if (ranks() == 1) return "one rank, nothing on the wire";
    if (opt_.scheme == "bf16") return "16 bits per value on the wire (--scheme bf16)";
    std::string out;
    auto axis = [&](const char* name, int size, bool wired, const char* why) {
      if (size <= 1) return;
      out += std::string(out.empty() ? "" : ", ") + name + (wired ? " bfloat16" : std::string(" float32 (") + why + ")");
    };
    const char* why = opt_.wire == "fp32"                ? "--wire fp32"
                      : !scheme_takes_16bit(opt_.scheme) ? "the scheme's codecs take float32"
                                                         : "ZFP codes R bits a value either way";
    axis("dp", grid_.dp_size(), wire_dp_ != nullptr, dp_reducer<dp_comm_t>::error_feedback ? "the error-feedback residual" : why);
    axis("pp", grid_.pp_size(), wire_pp_ != nullptr, why);
    axis("tp", grid_.tp_size(), wire_tp_ != nullptr, why);
    return "on the wire: " + out;
  }

  // ---- checkpoints (checkpoint.hpp) --------------------------------------------------------
  basic_train_state<model_type, adam_type, sparse_type> state() { return {model_, adam_, sp_, cursor_, rng_state_}; }
  // --zero 1: the sets hold whole arrays, gathered from the replicas' blocks at save and cut
  // into this replica's block at resume. Their memory (the stage's size again) is agreed: a
  // rank without it fails the save on every rank (--on-save-error decides) or the resume.
  void save(std::int64_t steps_done) {
    const std::vector<float> residual = dp_.residual(model_.grads.size());
    if (!zero_) {
      ckpt_.save(steps_done, state(), residual);
      return;
    }
    if (ckpt_.saved(steps_done)) return;
    adam_type whole;
    {
      auto w = dog_.watch("checkpoint save (ZeRO's all-gather of the optimizer state)", steps_done);
      if (!allocated(
              [&] {
                if (faults::alloc_save().at(world_rank_, steps_done)) throw std::bad_alloc();
                whole = zero_->whole(model_);
              },
              "cannot save checkpoint set at step " +
                                                             std::to_string(steps_done) + ": its whole optimizer state: "))
        return;
      dp_after_compute();
      zero_->gather(whole, [this](std::span<const float> in, std::span<float> out) {
        comm_.dp().allgather_exact(comm_buffer<dp_comm_t>(in), comm_buffer<dp_comm_t>(out));
      });
      compute_after_dp();
    }
    ckpt_.save(steps_done, basic_train_state<model_type, adam_type, sparse_type>{model_, whole, sp_, cursor_, rng_state_},
               residual);
  }
  // Runs an allocation on every rank and agrees on it; false (after saying why on rank 0)
  // when a rank failed and --on-save-error continue goes on; throws gpt::stopped (exit 3)
  // otherwise.
  template <class F>
  bool allocated(F&& f, const std::string& what) {
    const verdict v = agree_on(std::forward<F>(f));
    if (v.ok) return true;
    const std::string m = what + "rank " + std::to_string(v.first_bad) + ": " + v.what;
    if (opt_.on_save_error == "stop") throw stopped{3, m + "; stopping (--on-save-error continue trains on)"};
    if (world_rank_ == 0) std::fprintf(stderr, "train_gpt: %s; training goes on (--on-save-error continue)\n", m.c_str());
    return false;
  }
  void resume() {
    adam_type whole;
    if (zero_) agreed([&] { whole = zero_->whole(model_); }, 2, "cannot allocate the whole optimizer state for --resume: ");
    basic_train_state<model_type, adam_type, sparse_type> s{model_, zero_ ? whole : adam_, sp_, cursor_, rng_state_};
    const resumed r = ckpt_.resume(s, dp_reducer<dp_comm_t>::error_feedback);
    if (zero_) zero_->adopt_full(model_, whole);
    if (!r.residual.empty()) dp_.load_residual(r.residual);
    step_ = r.step;
  }

  config cfg_;
  run_options opt_;
  const hcomm::grid& grid_;
  Bundle& comm_;
  model_type model_;
  adam_type adam_;                      // --zero 1: empty (zero_ holds this replica's block)
  std::unique_ptr<zero_shard<Ops>> zero_;  // --zero 1 (zero.hpp)
  // --precision bf16: each axis's 16-bit staging (wire.hpp; null: float32 on that axis)
  std::unique_ptr<wire16<wire_exec_t<dp_comm_t>>> wire_dp_;
  std::unique_ptr<wire16<wire_exec_t<pp_comm_t>>> wire_pp_;
  std::unique_ptr<wire16<wire_exec_t<tp_comm_t>>> wire_tp_;
  text_data data_;
  mlm_data mlm_;            // BERT's masked-LM view of data_
  double loss_count_ = 0;   // predicted positions of this step's global batch
  int world_rank_ = 0;
  std::int64_t step_ = 0;          // steps done
  std::uint64_t cursor_ = 0;       // data position
  std::uint64_t rng_state_ = 0x5eed;  // sampling RNG
  std::vector<std::vector<int>> tokens_, targets_;
  std::vector<float> tied_buf_, tied_mine_;  // the peer's copy; ours, staged (Ops::host_memory false)
  double tied_bytes_ = 0;  // uncompressed tied-embedding exchange (not in the axis stats)
  sparse_type sp_;         // --sparsity (dense: only counts FLOPs)
  watchdog dog_;           // --comm-timeout
  dp_reducer<dp_comm_t> dp_;
  bool bucketed_ = false;               // dense, no error feedback: buckets_ via reduce_bucket()
  // This step's ms in the 1F1B pipeline, and then waiting for the DP reduction (its exposed
  // part: what the pipeline did not hide), on this rank; the metrics report the ranks' maxima.
  double phase_ms_[2] = {0, 0};
  std::vector<bucket_range> buckets_;   // backward order (overlap.hpp)
  std::size_t next_bucket_ = 0;         // this step's first bucket not started yet
  bool native_ = false;                 // uncompressed DP: buckets by MPI_Iallreduce (--zero 1: and
                                        // MPI_Ireduce_scatter_block)
  bool overlap_ = false;                // --overlap on
  double native_bytes_ = 0;             // their bytes this step (as a ring sends them)
  std::unique_ptr<comm_worker> worker_;  // --overlap on, compressed DP: the communication thread
  std::vector<pp_request> fwd_sends_;    // --overlap on: the pipeline's pending sends
  pp_request bwd_send_;
  checkpointer ckpt_;
  std::unique_ptr<tensor_dump> dump_;  // --dump-tensors
  tensor_dump* dumping_ = nullptr;     // dump_ during its step (the taps record), else null
  long long skipped_ = 0;  // updates skipped by --skip-nonfinite
};

}  // namespace gpt
