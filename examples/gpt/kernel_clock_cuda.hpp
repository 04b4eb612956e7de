// examples/gpt/kernel_clock_cuda.hpp: kernel_clock.hpp's clock for a CUDA stream. A scope
// records an event on the stream where it opens and one where it closes (kernels and cuBLAS
// calls between them are the scope's); collect() waits for the last event and adds each
// pair's elapsed time. The events are reused from step to step.
//
//   gpt::cuda_kernel_clock k(stream);
//   { auto t = k.time("attention_fwd"); launch(...); }
//   k.collect(true);   // waits for the stream up to the last scope
//
// An event pair's time includes the gaps between the kernels inside the scope (launch
// latency where the GPU runs ahead of the host: none), so the sum over scopes is at most the
// stream's busy time plus those gaps.
#pragma once
#include <cuda_runtime.h>

#include <utility>
#include <vector>

#include "hcomm/exec/cuda.hpp"
#include "kernel_clock.hpp"

namespace gpt {

class cuda_kernel_clock : public kernel_totals {
 public:
  static constexpr const char* source = "CUDA events on the compute stream";
  explicit cuda_kernel_clock(cudaStream_t s) : s_(s) {}
  cuda_kernel_clock(const cuda_kernel_clock&) = delete;
  cuda_kernel_clock& operator=(const cuda_kernel_clock&) = delete;
  ~cuda_kernel_clock() {
    for (cudaEvent_t e : all_) (void)cudaEventDestroy(e);
  }

  class scope {
   public:
    scope() = default;
    scope(cuda_kernel_clock* c, int id, cudaEvent_t start, cudaEvent_t stop)
        : c_(c), id_(id), start_(start), stop_(stop) {}
    scope(scope&& o) noexcept : c_(std::exchange(o.c_, nullptr)), id_(o.id_), start_(o.start_), stop_(o.stop_) {}
    scope& operator=(scope&&) = delete;
    ~scope() {
      if (!c_) return;
      (void)cudaEventRecord(stop_, c_->s_);  // a destructor does not throw: a failure shows in collect()
      try {
        c_->pending_.push_back({id_, start_, stop_});
      } catch (...) {  // no room to note it: this call's time is lost, its events stay in the pool's list
      }
    }

   private:
    cuda_kernel_clock* c_ = nullptr;
    int id_ = 0;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
  };

  scope time(const char* name) {
    cudaEvent_t start = take(), stop = take();
    HCOMM_CUDA_CHECK(cudaEventRecord(start, s_));
    return scope(this, index(name), start, stop);
  }
  void collect(bool count) {
    if (!pending_.empty()) HCOMM_CUDA_CHECK(cudaEventSynchronize(pending_.back().stop));
    for (const mark& m : pending_) {
      if (count) {
        float ms = 0;
        HCOMM_CUDA_CHECK(cudaEventElapsedTime(&ms, m.start, m.stop));
        add(m.id, ms);
      }
      free_.push_back(m.start);
      free_.push_back(m.stop);
    }
    pending_.clear();
  }

 private:
  struct mark {
    int id;
    cudaEvent_t start, stop;
  };
  cudaStream_t s_;
  std::vector<mark> pending_;
  std::vector<cudaEvent_t> free_, all_;

  cudaEvent_t take() {
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    HCOMM_CUDA_CHECK(cudaEventCreate(&e));  // timing on
    all_.push_back(e);
    return e;
  }
};

}  // namespace gpt
