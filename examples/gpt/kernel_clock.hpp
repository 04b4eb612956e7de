// examples/gpt/kernel_clock.hpp: where a step's time goes, kernel by kernel (--kernel-times).
// The model's backends (ops_cpu.hpp, ops_portable.hpp) open a scope around each kernel and
// GEMM they launch; the trainer collects the scopes after each step and prints the totals at
// the end of the run.
//
//   gpt::host_kernel_clock k;
//   { auto t = k.time("gemm_fwd"); sgemm(...); }   // the scope ends: the call's time is added
//   k.collect(true);                               // this step's scopes into the totals
//   for (const gpt::kernel_total& t : k.totals()) ... // {name, calls, ms}, in order of first use
//
// host_kernel_clock reads the wall clock around the call, after `fence` (the executor's
// synchronize: host executors that return before their work is done are waited for).
// kernel_clock_cuda.hpp's clock records CUDA events on the stream and reads them in
// collect(), where the trainer waits for the step anyway, so timing adds no synchronisation
// inside a step. Names are string literals: a clock keeps the pointers.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpt {

struct kernel_total {
  const char* name = "";
  std::int64_t calls = 0;
  double ms = 0;
};

// The totals by name, shared by the clocks.
class kernel_totals {
 public:
  const std::vector<kernel_total>& totals() const { return totals_; }

 protected:
  int index(const char* name) {
    for (std::size_t i = 0; i < totals_.size(); ++i)
      if (totals_[i].name == name || std::string_view(totals_[i].name) == name) return static_cast<int>(i);
    totals_.push_back({name, 0, 0});
    return static_cast<int>(totals_.size()) - 1;
  }
  void add(int id, double ms) {
    totals_[static_cast<std::size_t>(id)].calls += 1;
    totals_[static_cast<std::size_t>(id)].ms += ms;
  }

 private:
  std::vector<kernel_total> totals_;
};

class host_kernel_clock : public kernel_totals {
  using clock = std::chrono::steady_clock;

 public:
  static constexpr const char* source = "wall clock around each call";
  explicit host_kernel_clock(std::function<void()> fence = {}) : fence_(std::move(fence)) {}

  // The time from construction to destruction goes to `name` (nothing when default-made).
  class scope {
   public:
    scope() = default;
    scope(host_kernel_clock* c, int id) : c_(c), id_(id), t0_(clock::now()) {}
    scope(scope&& o) noexcept : c_(std::exchange(o.c_, nullptr)), id_(o.id_), t0_(o.t0_) {}
    scope& operator=(scope&&) = delete;
    ~scope() {
      if (!c_) return;
      try {
        if (c_->fence_) c_->fence_();
        c_->pending_.emplace_back(id_, std::chrono::duration<double, std::milli>(clock::now() - t0_).count());
      } catch (...) {  // a destructor does not throw (an error unwinding the step may be passing):
      }                // the executor's failure shows at its next call, a lost time is only a time
    }

   private:
    host_kernel_clock* c_ = nullptr;
    int id_ = 0;
    clock::time_point t0_{};
  };

  scope time(const char* name) {
    if (fence_) fence_();  // what was queued before is not this call's
    return scope(this, index(name));
  }
  // The scopes ended since the last collect go to the totals (count) or are dropped.
  void collect(bool count) {
    if (count)
      for (const auto& [id, ms] : pending_) add(id, ms);
    pending_.clear();
  }

 private:
  std::function<void()> fence_;
  std::vector<std::pair<int, double>> pending_;
};

// A backend's clock, shared by the backend's copies (AdamW's copy times its kernels too):
// empty until --kernel-times starts one; tick(name) opens a scope, a no-op while empty.
template <class Clock>
class kernel_clock_slot {
 public:
  void start(std::unique_ptr<Clock> c) const { slot_->c = std::move(c); }
  Clock* get() const { return slot_->c.get(); }
  typename Clock::scope tick(const char* name) const {
    if (!slot_->c) return {};
    return slot_->c->time(name);
  }

 private:
  struct slot {
    std::unique_ptr<Clock> c;
  };
  std::shared_ptr<slot> slot_ = std::make_shared<slot>();
};

// The run's kernel times as rank 0 prints them: per step over `steps` steps of `step_ms` in
// all (their wall times), largest first, then what the kernels leave of the step.
inline void print_kernel_times(const std::vector<kernel_total>& totals, const char* source, int steps, double step_ms,
                               const std::string& where) {
  if (steps <= 0) {
    std::printf("kernel times: no step was timed (the first step of a run is its warm-up)\n");
    return;
  }
  std::vector<kernel_total> t = totals;
  std::stable_sort(t.begin(), t.end(), [](const kernel_total& a, const kernel_total& b) { return a.ms > b.ms; });
  double sum = 0;
  for (const kernel_total& k : t) sum += k.ms;
  const double per = 1.0 / steps, step = step_ms * per;
  auto share = [&](double ms) { return step > 0 ? 100.0 * ms / step : 0.0; };
  std::printf("kernel times, %s, per step over %d step(s) (%s):\n", where.c_str(), steps, source);
  std::printf("  %-22s %10s %12s %8s\n", "kernel", "calls", "ms", "of step");
  for (const kernel_total& k : t)
    std::printf("  %-22s %10.1f %12.3f %7.1f%%\n", k.name, static_cast<double>(k.calls) * per, k.ms * per,
                share(k.ms * per));
  std::printf("  %-22s %10s %12.3f %7.1f%%\n", "all kernels", "", sum * per, share(sum * per));
  std::printf("  %-22s %10s %12.3f %7.1f%%\n", "rest (comm, host, gaps)", "", step - sum * per,
              share(step - sum * per));
  std::printf("  %-22s %10s %12.3f %7.1f%%\n", "step", "", step, 100.0);
}

}  // namespace gpt
