// examples/gpt/watchdog.hpp: --comm-timeout, a thread that ends a job stuck in communication.
//
//   gpt::watchdog dog(seconds);                // 0: off (no thread)
//   { auto w = dog.watch("DP gradient allreduce", step); comm.dp().allreduce(g); }
#pragma once
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace gpt {

// --comm-timeout S: a thread that ends the job when this rank stays longer than S seconds in
// one watched phase (a collective, a pipeline exchange, a checkpoint), printing the rank, the
// phase and the step. A phase that computes as well as communicates (the 1F1B pipeline, the
// evaluation) counts its compute time too, so S must exceed the longest such phase.
class watchdog {
 public:
  explicit watchdog(double seconds) : limit_(seconds) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    if (limit_ > 0) thread_ = std::thread([this] { loop(); });
  }
  ~watchdog() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> l(mu_);
        quit_ = true;
      }
      cv_.notify_all();
      thread_.join();
    }
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

  class guard {
   public:
    guard(watchdog* w, const char* phase, long long step)
        : w_(w), prev_(w->phase_.load(std::memory_order_relaxed)), prev_step_(w->step_.load(std::memory_order_relaxed)) {
      w_->enter(phase, step);
    }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    ~guard() { w_->enter(prev_, prev_step_); }

   private:
    watchdog* w_;
    const char* prev_;
    long long prev_step_;
  };
  // Marks this rank as inside `phase` at `step` until the guard goes out of scope (phases nest).
  [[nodiscard]] guard watch(const char* phase, long long step) { return guard(this, phase, step); }

 private:
  void enter(const char* phase, long long step) {
    step_.store(step, std::memory_order_relaxed);
    since_.store(now(), std::memory_order_relaxed);
    phase_.store(phase, std::memory_order_release);
  }
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  void loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!cv_.wait_for(l, std::chrono::milliseconds(100), [this] { return quit_; })) {
      const char* p = phase_.load(std::memory_order_acquire);
      if (!p) continue;
      const double waited = now() - since_.load(std::memory_order_relaxed);
      if (waited <= limit_) continue;
      std::fprintf(stderr,
                   "train_gpt (rank %d): stuck for %.0f s in %s at step %lld (--comm-timeout %g); ending the job\n",
                   rank_, waited, p, step_.load(std::memory_order_relaxed) + 1, limit_);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 5);
      std::_Exit(5);
    }
  }

  double limit_;
  int rank_ = 0;
  std::atomic<const char*> phase_{nullptr};
  std::atomic<long long> step_{0};
  std::atomic<double> since_{0};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool quit_ = false;
};

}  // namespace gpt
